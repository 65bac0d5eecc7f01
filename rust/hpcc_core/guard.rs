//! TCP's safety rules around telemetry: what a response may do to a
//! connection's window, whoever sent it.
//!
//! A response is integrity-checked (its nonce), but the nonce travels in
//! clear, so the receiver, or anyone on the path, can answer a probe with
//! telemetry that claims an idle path. HPCC++ would then grow `W` by
//! `eta/U` per update without limit. Two rules keep an `hpcc` flow at least
//! as safe as a standard TCP congestion control, whatever the knobs say:
//!
//! * **TCP's loss and ECN response holds.** In CWR and Recovery
//!   (`tcp_in_cwnd_reduction()`), telemetry may lower the window but never
//!   raise it above TCP's reduced window, `min(cwnd, ssthresh)`.
//! * **Growth is bounded by delivery.** Outside a reduction the window
//!   telemetry sets is at most [`DELIVERY_GAIN`] times the largest
//!   delivery-rate sample of the last [`DELIVERY_WINDOW_RTTS`] round trips
//!   times the flow's minimum RTT (its delivered bandwidth-delay product,
//!   the `2·BtlBw·RTprop` bound of `tcp_bbr`), and never below the
//!   window the connection started with (what TCP would send without
//!   telemetry). A flow that delivers at the bottleneck rate `B` with
//!   minimum RTT `T` can therefore hold at most `2·B·T` in flight: its
//!   standing queue is at most one BDP, whatever the responses claim, and a
//!   flow that uses its window may still double it per round trip, as TCP's
//!   slow start does.
//!
//! Neither rule touches a flow that tells the truth: HPCC++ holds `W` near
//! `eta·B·T`, below both bounds, and lowers it on its own when the
//! telemetry shows a queue.

/// The delivered-BDP bound: `DELIVERY_GAIN ×` the largest delivered BDP.
pub const DELIVERY_GAIN: u32 = 2;
/// The delivery-rate maximum is kept for this many round trips (smoothed
/// RTT, at least the minimum RTT), as `tcp_bbr` keeps its bandwidth filter.
pub const DELIVERY_WINDOW_RTTS: u64 = 10;

/// The largest delivered BDP of the last [`DELIVERY_WINDOW_RTTS`] round
/// trips, in segments. Integers only, for `icsk_ca_priv`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryBound {
    /// The maximum, segments per minimum RTT (0: no sample yet).
    max_segs: u32,
    _pad: u32,
    /// When the maximum was taken, ns.
    since_ns: u64,
}

impl DeliveryBound {
    /// Folds in one rate sample (`struct rate_sample`): `delivered`
    /// segments over `interval_us`, with the flow's minimum and smoothed
    /// RTT. Samples without a valid interval or RTT change nothing; an
    /// application-limited sample only raises the maximum.
    pub fn on_rate_sample(
        &mut self,
        now_ns: u64,
        delivered: u32,
        interval_us: u64,
        min_rtt_us: u32,
        srtt_us: u32,
        app_limited: bool,
    ) {
        if delivered == 0 || interval_us == 0 || min_rtt_us == 0 || min_rtt_us == u32::MAX {
            return;
        }
        // delivered < 2^32, min_rtt < 2^32: the product fits in u64.
        let est = (u64::from(delivered) * u64::from(min_rtt_us)).div_ceil(interval_us);
        let est = u32::try_from(est).unwrap_or(u32::MAX);
        let rtt_ns = u64::from(srtt_us.max(min_rtt_us)).saturating_mul(1000);
        let expired = now_ns.saturating_sub(self.since_ns) > rtt_ns.saturating_mul(DELIVERY_WINDOW_RTTS);
        if est >= self.max_segs || (expired && !app_limited) {
            self.max_segs = est;
            self.since_ns = now_ns;
        }
    }

    /// The largest delivered BDP, segments.
    pub fn max_segs(&self) -> u32 {
        self.max_segs
    }

    /// The most segments telemetry may set outside a reduction:
    /// `max(floor_segs, DELIVERY_GAIN · max_segs)`.
    pub fn bound_segs(&self, floor_segs: u32) -> u32 {
        self.max_segs.saturating_mul(DELIVERY_GAIN).max(floor_segs)
    }
}

/// Which rule, if any, lowered the window telemetry asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capped {
    /// Telemetry's window stands.
    No,
    /// TCP is in CWR or Recovery: at most its reduced window.
    Reduction,
    /// At most the delivered-BDP bound.
    Delivery,
}

/// The cwnd (segments) to apply when telemetry asks for `want_segs`:
/// `want_segs`, at most `bound_segs` (see [`DeliveryBound::bound_segs`]),
/// and in CWR or Recovery at most `min(cwnd, ssthresh)`.
pub fn telemetry_cwnd(want_segs: u32, cwnd: u32, ssthresh: u32, in_reduction: bool, bound_segs: u32) -> (u32, Capped) {
    let (mut segs, mut why) = (want_segs, Capped::No);
    if segs > bound_segs {
        segs = bound_segs;
        why = Capped::Delivery;
    }
    let reduced = cwnd.min(ssthresh);
    if in_reduction && segs > reduced {
        segs = reduced;
        why = Capped::Reduction;
    }
    (segs, why)
}

/// The cwnd (segments) `init` sets: `initial_segs` for a connection that
/// has sent no data yet; otherwise (the application switched to `hpcc` on
/// a running connection) at most its current cwnd, so switching back and
/// forth cannot reset a congested connection to the initial window.
pub fn init_cwnd(initial_segs: u32, current_segs: u32, has_sent_data: bool) -> u32 {
    if has_sent_data {
        initial_segs.min(current_segs.max(1))
    } else {
        initial_segs
    }
}

/// Flow objects a netns may have waiting for their RCU free before new
/// flows there are refused: a socket switching congestion control in a
/// loop releases one object per switch, and each waits a grace period.
pub const MAX_PENDING_FREE: u32 = 4096;

/// Whether a netns may allocate one more flow object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Yes.
    Yes,
    /// `live` reached the per-netns limit (`limit`, 0: none).
    OverLimit,
    /// [`MAX_PENDING_FREE`] objects already wait for their RCU free.
    Churn,
}

/// [`Admit`] for a netns with `live` objects, `pending_free` of them
/// released, under the per-netns `limit` (0: none).
pub fn admit_flow(live: u32, pending_free: u32, limit: u32) -> Admit {
    if limit != 0 && live >= limit {
        Admit::OverLimit
    } else if pending_free >= MAX_PENDING_FREE {
        Admit::Churn
    } else {
        Admit::Yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_keeps_a_running_connections_window() {
        assert_eq!(init_cwnd(45, 10, false), 45, "a new connection starts at the initial window");
        assert_eq!(init_cwnd(45, 3, true), 3, "a congested one keeps its window");
        assert_eq!(init_cwnd(45, 300, true), 45, "and never gains above the initial one");
        assert_eq!(init_cwnd(45, 0, true), 1);
    }

    #[test]
    fn admission() {
        assert_eq!(admit_flow(0, 0, 0), Admit::Yes);
        assert_eq!(admit_flow(u32::MAX, 0, 0), Admit::Yes, "0: no limit");
        assert_eq!(admit_flow(99, 0, 100), Admit::Yes);
        assert_eq!(admit_flow(100, 0, 100), Admit::OverLimit);
        assert_eq!(admit_flow(10, MAX_PENDING_FREE - 1, 0), Admit::Yes);
        assert_eq!(admit_flow(10, MAX_PENDING_FREE, 0), Admit::Churn);
    }

    #[test]
    fn reduction_never_raised() {
        for want in 0..200 {
            for cwnd in 2..60 {
                let (c, _) = telemetry_cwnd(want, cwnd, cwnd * 7 / 10, true, u32::MAX);
                assert!(c <= cwnd * 7 / 10 && c <= want);
            }
        }
        // Lowering is allowed.
        assert_eq!(telemetry_cwnd(3, 40, 28, true, 100), (3, Capped::No));
        assert_eq!(telemetry_cwnd(50, 40, 28, true, 100), (28, Capped::Reduction));
        assert_eq!(telemetry_cwnd(50, 40, 28, false, 100), (50, Capped::No));
    }

    #[test]
    fn delivery_bound_is_twice_the_delivered_bdp() {
        let mut d = DeliveryBound::default();
        assert_eq!(d.bound_segs(45), 45, "before any sample: the initial window");
        // 17 segments per 2 ms at a 2 ms minimum RTT: one BDP.
        d.on_rate_sample(1_000_000, 17, 2000, 2000, 2500, false);
        assert_eq!(d.max_segs(), 17);
        assert_eq!(d.bound_segs(10), 34);
        // A forged idle path cannot raise it; only delivery can.
        assert_eq!(telemetry_cwnd(10_000, 34, u32::MAX, false, d.bound_segs(10)), (34, Capped::Delivery));
        // A lower sample within the window keeps the max ...
        d.on_rate_sample(5_000_000, 2, 2000, 2000, 2500, false);
        assert_eq!(d.max_segs(), 17);
        // ... and replaces it once the window (10 RTTs) has passed, unless
        // the sample was application-limited.
        d.on_rate_sample(40_000_000, 2, 2000, 2000, 2500, true);
        assert_eq!(d.max_segs(), 17);
        d.on_rate_sample(40_000_000, 2, 2000, 2000, 2500, false);
        assert_eq!(d.max_segs(), 2);
        // Garbage samples change nothing.
        for (del, iv, minr) in [(0, 10, 10), (5, 0, 10), (5, 10, 0), (5, 10, u32::MAX)] {
            let before = d;
            d.on_rate_sample(50_000_000, del, iv, minr, 10, false);
            assert_eq!(d, before);
        }
        // Extremes saturate.
        d.on_rate_sample(60_000_000, u32::MAX, 1, u32::MAX - 1, u32::MAX, false);
        assert_eq!(d.bound_segs(0), u32::MAX);
    }

    #[test]
    fn delivery_bound_lets_a_flow_double_per_round() {
        // A flow that uses its window (delivers cwnd per min RTT) from 2
        // segments reaches 64 in 5 rounds.
        let mut d = DeliveryBound::default();
        let mut cwnd = 2u32;
        for round in 0..5u64 {
            d.on_rate_sample(round * 2_000_000, cwnd, 2000, 2000, 2000, false);
            cwnd = telemetry_cwnd(u32::MAX, cwnd, u32::MAX, false, d.bound_segs(2)).0;
        }
        assert_eq!(cwnd, 64);
    }
}
