//! hpcc's window cut on a signal ([`WindowCut`]), bounded by the flow's
//! own telemetry, and the arithmetic it uses.

use super::*;

/// hpcc's window reaction to a signal. A pause alone gives stop-and-go:
/// while the flow waits the switch drains at full rate, so the next INT
/// sample shows `U ≈ 1` and HPCC++ cuts only a little. The signal's queue
/// `q` at a port of rate `B` says the senders together have
/// `B·T + q` in flight where `B·T` fits: each cuts `W` by
/// `eta · B·T / (B·T + q)`, so that together they carry `eta·B·T`, as the
/// law's multiplicative step would with `U = (B·T + q) / (B·T)`.
///
/// That step assumes the senders' windows add up to `B·T + q`. In an
/// incast they add up to far more: the excess was dropped at the full
/// buffer or waits in the senders' own queues while they pause, and the
/// queue, bounded by the buffer, no longer shows it. With `n` flows at
/// the receiver (its count, draft-miao-rtgwg-hpccplus section 6.3.2,
/// carried by every response) the cut is also at most the flow's share,
/// `eta·B·T / n`: without it the paused senders resume together with
/// windows that add up to several buffers, and the queue overflows again.
///
/// Several signals within one RTT (one per suppression window, or from
/// several switches) do not compound: a cut within `T` of the previous
/// one applies to the window the previous cut started from, and only if
/// it is deeper.
///
/// The first signals of an incast come before the flow's first response,
/// so before it knows the count: [`WindowCut::await_count`] keeps the
/// port's rate for a while, and the count that then arrives cuts W to the
/// share once ([`WindowCut::on_count`]).
///
/// Nor does the law's own reaction compound with a cut: the responses
/// whose probes crossed the port before the signalled queue drained
/// report that queue again, and the law would cut for it a second time,
/// leaving the port underused for many RTTs (docs/results.md#measurements-behind-the-controllers-rules). Until the reported queue has
/// drained at the port's rate, plus T, W stays at least at the cut
/// ([`WindowCut::floor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowCut {
    /// A response since the round began showed the port at or above
    /// eta: the next signal past the round may cut again.
    renew: bool,
    /// The window the law keeps until `hold_until_ns` (0: none).
    hold_w: u32,
    /// End of the hold, ns.
    hold_until_ns: u64,
    /// The silence of the signals that ends an episode: the last signal's
    /// drain time plus T, ns.
    quiet_ns: u64,
    /// The window the current round of cuts started from (0: none yet).
    ref_w: u32,
    /// End of the current round, ns.
    until_ns: u64,
    /// A cut without the count: the signalling port's rate, bit/s.
    uncounted_rate_bps: u64,
    /// Until when a count that arrives still applies to it, ns (0: none).
    uncounted_until_ns: u64,
    /// The largest window since the flow's telemetry last showed the port
    /// at or above eta (0: none yet): signals alone never cut below
    /// `anchor_w / MAX_UNCONFIRMED_CUT`.
    anchor_w: u32,
    /// A response showed the port at or above eta since the anchor was set.
    confirmed: bool,
    /// Rounds begun since the anchor was set.
    rounds: u8,
}

/// Signals alone (without a response since that showed the port at or
/// above eta) cut a window to no less than this fraction of the largest
/// window since: a switch in the access list that signals a flow whose
/// telemetry sees no congestion can slow it down by this much, not stop
/// it.
pub const MAX_UNCONFIRMED_CUT: u32 = 8;
/// Rounds of cuts signals alone may begin ([`MAX_UNCONFIRMED_CUT`]).
pub const MAX_UNCONFIRMED_ROUNDS: u8 = 3;
/// The largest queue a signal may claim, in B·T of its port: deeper
/// claims are capped (a switch's buffer is a few BDPs; 16 covers a 2 MB
/// buffer at 100 Gbit/s and 10 us).
pub const MAX_QUEUE_BDPS: u64 = 16;

impl WindowCut {
    /// The window after a signal at `now_ns` reporting `qlen` bytes at a
    /// port of `rate_bps`, for a flow at window `w` with base RTT
    /// `base_rtt_ns` and target utilization `eta_ppm`, one of `flows` at
    /// its receiver (0: unknown), never below `min_w` nor above `w`.
    /// Bytes throughout. `gap_ns`: the signals' longest silence before this
    /// one ([`crate::control::SfcState::gap_ns`]; 0: not measured, and the
    /// hold's end alone ends an episode).
    #[allow(clippy::too_many_arguments)]
    pub fn on_signal(
        &mut self,
        w: u32,
        qlen: u32,
        rate_bps: u64,
        base_rtt_ns: u64,
        eta_ppm: u32,
        min_w: u32,
        now_ns: u64,
        flows: u16,
        gap_ns: u64,
    ) -> u32 {
        // A new round: the first signal, one after the last round's
        // queue has drained (the hold is over and, where the receive hook
        // measured it, the signals fell silent for as long: a flow takes
        // signals only on its ACKs, and ACKs far apart do not end a storm),
        // or one past the round's T that the flow's telemetry has since
        // confirmed.
        let quiet = gap_ns == 0 || gap_ns >= self.quiet_ns;
        // What the flow's own telemetry allows signals alone to do: the
        // anchor is the largest window since a response last showed the
        // port at or above eta.
        if self.confirmed || self.anchor_w == 0 {
            self.anchor_w = w;
            self.confirmed = false;
            self.rounds = 0;
        } else {
            self.anchor_w = self.anchor_w.max(w);
        }
        let new_round = self.ref_w == 0
            || (self.rounds < MAX_UNCONFIRMED_ROUNDS
                && ((now_ns >= self.hold_until_ns && quiet) || (now_ns >= self.until_ns && self.renew)));
        let reference = if new_round {
            self.ref_w = w;
            self.until_ns = now_ns.saturating_add(base_rtt_ns);
            self.renew = false;
            self.rounds = self.rounds.saturating_add(1);
            w
        } else {
            self.ref_w
        };
        // u128 products, 64-bit-only divisions: W_ref·B·T/(B·T + q) is
        // exact to the byte (floor).
        let bdp = bdp_bytes(rate_bps, base_rtt_ns);
        let q = if bdp == 0 { u64::from(qlen) } else { u64::from(qlen).min(bdp.saturating_mul(MAX_QUEUE_BDPS)) };
        let carried = div_wide(mul_wide(u64::from(reference), bdp), bdp.saturating_add(q).max(1)).unwrap_or(0);
        // carried ≤ reference < 2^32 and eta ≤ 10^6 < 2^20: no overflow.
        let eta = u64::from(eta_ppm.min(ETA_SCALE));
        let mut cut = carried.saturating_mul(eta) / u64::from(ETA_SCALE);
        cut = cut.max(u64::from(self.anchor_w / MAX_UNCONFIRMED_CUT));
        // The share comes from the receiver's count, which the flow's
        // telemetry carries: not bounded by the anchor.
        if let Some(share) = share_bytes(rate_bps, base_rtt_ns, eta_ppm, flows) {
            cut = cut.min(share);
        }
        let cut = u32::try_from(cut).unwrap_or(u32::MAX).max(min_w).min(w);
        // A queue no pause could drain (at most MAX_PAUSE_US) is no
        // reason to hold longer.
        let q = u32::try_from(q).unwrap_or(u32::MAX);
        let drain = drain_ns(q, rate_bps).min(u64::from(MAX_PAUSE_US) * 1000);
        self.quiet_ns = drain.saturating_add(base_rtt_ns);
        let drained = now_ns.saturating_add(self.quiet_ns);
        self.hold_w = cut;
        self.hold_until_ns = self.hold_until_ns.max(drained);
        cut
    }

    /// A response was applied; `congested`: it showed the port at or
    /// above eta. Signals alone (a storm from an allowed source, or a
    /// switch that disagrees with the telemetry) then cut once per
    /// episode rather than once per T, or a long storm would hold the flow
    /// at the minimum window.
    pub fn on_sample(&mut self, congested: bool) {
        self.renew |= congested;
        self.confirmed |= congested;
    }

    /// The window the flow keeps after the cut is `w` (lower than the cut
    /// if the law had already cut deeper): the floor is never above it.
    pub fn settle(&mut self, w: u32) {
        self.hold_w = self.hold_w.min(w);
    }

    /// The window the law must not go below at `now_ns` (a sample of the
    /// queue the last cut answered); `None` once that queue has drained.
    pub fn floor(&self, now_ns: u64) -> Option<u32> {
        (now_ns < self.hold_until_ns).then_some(self.hold_w)
    }

    /// The last cut did not know the receiver's flow count: a count that
    /// arrives before `until_ns` cuts W to the share of a port of
    /// `rate_bps`.
    pub fn await_count(&mut self, rate_bps: u64, until_ns: u64) {
        self.uncounted_rate_bps = rate_bps;
        self.uncounted_until_ns = until_ns;
    }

    /// The receiver's count `flows` arrived at `now_ns`: the window for a
    /// flow at `w` if a cut awaited it (once), never below `min_w` nor
    /// above `w`; `None` if none did, or too long ago.
    pub fn on_count(&mut self, w: u32, flows: u16, base_rtt_ns: u64, eta_ppm: u32, min_w: u32, now_ns: u64) -> Option<u32> {
        if flows == 0 || self.uncounted_until_ns == 0 {
            return None;
        }
        let until = core::mem::take(&mut self.uncounted_until_ns);
        if now_ns >= until {
            return None;
        }
        let share = share_bytes(self.uncounted_rate_bps, base_rtt_ns, eta_ppm, flows)?;
        let cut = u32::try_from(share).unwrap_or(u32::MAX).max(min_w).min(w);
        self.hold_w = self.hold_w.min(cut);
        Some(cut)
    }
}

/// How long after an SFC window cut at `now_ns` the congestion it
/// answered may still show: the longest pause (`max_pause_us`) and two
/// RTTs (`rtt_ns`).
pub fn cut_reach_until(now_ns: u64, max_pause_us: u32, rtt_ns: u64) -> u64 {
    now_ns.saturating_add(u64::from(max_pause_us).saturating_mul(1000).saturating_add(rtt_ns.saturating_mul(2)))
}

/// How long a queue of `qlen` bytes takes to drain at `rate_bps`, ns (0
/// for an unknown rate, saturating).
pub fn drain_ns(qlen: u32, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    // qlen·8·10^9 < 2^66: u128, then a 64-bit divisor.
    div_wide(mul_wide(u64::from(qlen).saturating_mul(8), 1_000_000_000), rate_bps).unwrap_or(u64::MAX)
}

/// B·T in bytes, capped at 2^43 (8 TB).
pub(super) fn bdp_bytes(rate_bps: u64, base_rtt_ns: u64) -> u64 {
    div_wide(mul_wide(rate_bps / 8, base_rtt_ns), 1_000_000_000).unwrap_or(u64::MAX).min(1 << 43)
}

/// One of `flows` flows' share of a port of `rate_bps` that the senders
/// keep at `eta_ppm` of B·T: `eta·B·T / flows` bytes; `None` while the
/// count is unknown (0).
pub fn share_bytes(rate_bps: u64, base_rtt_ns: u64, eta_ppm: u32, flows: u16) -> Option<u64> {
    // B·T < 2^43 and eta ≤ 10^6 < 2^20: no overflow.
    let eta = u64::from(eta_ppm.min(ETA_SCALE));
    (bdp_bytes(rate_bps, base_rtt_ns).saturating_mul(eta) / u64::from(ETA_SCALE)).checked_div(u64::from(flows))
}
