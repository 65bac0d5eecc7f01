//! The HPCC++ control law (draft-miao-rtgwg-hpccplus-00 sections 4.2 and
//! 6.3.2, draft-pan-tsvwg-hpccplus-02 sections 4.2 and 6.2) on one flow.
//!
//! [`HpccFlow`] holds a flow's state; [`HpccFlow::on_sample`] runs one
//! event on full-width telemetry ([`Sample`]), [`HpccFlow::on_int`] first
//! decodes a Figure-4 INT stack (see [`super::wire`]) against the flow's
//! records. Both return an [`Outcome`]: the window `W` in bytes, the pacing
//! rate `R = W/T` in bytes per second, and what happened.
//!
//! # The law, as implemented
//!
//! * **MeasureInflight.** For each hop, `txRate = Δtx/Δts` and
//!   `u' = min(qlen, qlen_prev)/(B·T) + txRate/B` (the current `qlen`
//!   instead of the min when `qlen_min_filter` is off; the drafts: on).
//!   The chosen hop is the first hop with the largest `u'` (so a path
//!   whose hops all report `u' = 0` chooses hop 0 and `U` decays toward 0;
//!   the ns-3 reference instead leaves `U` unchanged then). `tau = min(Δts, T)` of the chosen
//!   hop, scaled by `u_weight_pct`/100 (100: the drafts), and
//!   `U = (1 − tau/T)·U + (tau/T)·u'`.
//! * **ComputeWind.** If `U ≥ eta` or `incStage ≥ maxStage`:
//!   `W = Wc·eta/U + W_ai` (with `U = 0` giving `max_window`), and when
//!   committing `incStage = 0`. Otherwise `W = Wc + W_ai`, and when
//!   committing `incStage += 1`. `W` is clamped to `[min_window,
//!   min(max_window, cap)]`, then committed to `Wc` when `updateWc` is set.
//! * **Window validation** ([`HpccFlow::set_used_window`]; off unless the
//!   caller reports use, as in the drafts, which assume every flow uses its
//!   window). With the bytes the flow actually had in flight since the
//!   last update, `used`, an update may not raise `W` above
//!   `max(USED_WINDOW_GAIN·(used + min_window), Wc)`: a flow held back by
//!   something other
//!   than its window (its application, its host, its receiver, a pacing
//!   cap) sees `U < eta` whatever `W` is, and would otherwise grow `W` by
//!   eta/U every round until it floods the bottleneck once released.
//!   Decreases are never affected, and a flow that uses its window can
//!   still double it per update.
//! * **Bounded increase** (`max_increase_pct`, off in the drafts'
//!   defaults): an update may not raise `W` above `Wc·pct/100`, so flows
//!   that all read the same `U` a little below eta (noise in the probes'
//!   snapshots, or a short host stall) cannot together overshoot the link
//!   by more than that factor in one round. A low `U`, at most `low_u_pct`
//!   percent of eta (75 in the module), is a peer that left, not noise:
//!   the update is then multiplicative whatever `incStage`, and its bound
//!   is at least ×2 ([`LOW_U_INCREASE_PCT`]), which the law's own step
//!   eta/U stays within down to `U = eta/2`. A flow whose peer left takes
//!   the port back in one or two updates instead of by one segment per two
//!   (the fluid model's
//!   `the_remaining_flow_takes_the_port_back_within_five_rtts`), and a flow
//!   alone on a link that has emptied (after a burst drove it to its
//!   minimum window) doubles per update. `low_u_pct` 0 keeps the rule
//!   before it: the ×2 bound alone, at `U ≤ eta/2`.
//! * **Path BDP cap** (`path_cap_pct`, off in the drafts' defaults). `cap =
//!   path_cap_pct% · min_j(B_j)·T`, the slowest hop's bandwidth-delay
//!   product. A flow alone on the path reaches `U = 1` at `W = B·T`, so a
//!   larger window is never needed; but a flow held back by something other
//!   than its window (the application, the host's CPU, the receiver, a
//!   pacing cap) sees `U < eta` whatever `W` is, and without the bound the
//!   law keeps growing `W` (×eta/U per round) until the flow is released
//!   and floods the bottleneck. The drafts' NIC implementation has the same
//!   bound implicitly: a flow's rate never exceeds its line rate. Every
//!   event that accepts hops (records, path changes, updates) bounds `W`
//!   and `Wc` by the cap of the sample's path (never below `min_window`).
//! * **NewAck (sender mode).** `updateWc` is set when `ack_seq` is after
//!   `lastUpdateSeq` (wrap-safe 32-bit comparison), and then
//!   `lastUpdateSeq = snd_nxt`. The first update of a flow commits.
//! * **Probe mode** (sender-based on per-probe telemetry). As sender mode,
//!   but `updateWc` is set when the ack_seq of the sample the records came
//!   from (the start of this sample's measured interval) is at or after
//!   `lastUpdateSeq`: the next probe leaves on the ACK that committed,
//!   with the commit's `snd_nxt`, and what it measures was all sent after
//!   the commit. With a probe per RTT that is a commit every other sample.
//! * **Pre-commit reference** (`precommit_ref`, probe mode; off in the
//!   drafts). An update that does not commit measured an interval that
//!   began before the last commit: with a probe per RTT, data sent under
//!   the window in force before the commit, which met the queue the commit
//!   answered. A decrease it calls for is taken from that window,
//!   `W_pre·eta/U + W_ai`, kept within `[Wc·eta/U + W_ai, Wc]`: the same
//!   queue read twice is cut once, and a queue that grew since still cuts
//!   further. `W_pre` is `W` just before the last commit.
//! * **NewINT (receiver mode).** `updateWc` is set when
//!   `now > lastUpdateTime + T`, and then `lastUpdateTime = now`. The first
//!   update of a flow commits.
//! * **Records.** Every accepted event stores the hops as the flow's link
//!   records (`L = ack.L`).
//!
//! # Edge cases
//!
//! * The first event of a flow only records (`Event::Recorded`).
//! * A changed `path_id` or hop count drops the records and only records the
//!   new ones (`Event::PathChanged`); `U`, `W`, `Wc` and `incStage` persist.
//! * **Stale** events change nothing and return the current window
//!   (`Event::Stale`): a hop whose `Δts` is 0 (its `txRate` is 0/0 or ∞ and it
//!   would be the chosen hop), a hop whose ts or txBytes went backwards
//!   (the wrap-safe difference of the full-width counters is negative, as
//!   for a reordered older sample), a sample with no hops, more than
//!   `MAX_HOPS` hops, or a hop rate of 0 or above `MAX_RATE_BPS`.
//! * `U` starts at 1.0, `incStage` at 0, `W = Wc = init_window`.
//!
//! # Units
//!
//! Rates are bits per second, times nanoseconds, lengths bytes. Pacing is
//! bytes per second (what the kernel's `sk_pacing_rate` holds);
//! [`Outcome::pacing_bps`] gives bits per second.
//!
//! # State size
//!
//! [`HpccFlow`] holds a record per possible hop ([`wire::MAX_HOPS`]) and
//! the scalars (`tests/law.rs` pins its size); it does not fit
//! `ICSK_CA_PRIV_SIZE` and is meant to live in a separately allocated
//! per-socket object.

use super::fixed::{
    div_wide, mul_wide, ratio_shl, ETA_SCALE, MAX_RATE_BPS, U_MAX, U_ONE, U_SHIFT, WIN_SHIFT,
};

/// Extra scaling of the `Wc·eta` numerator: with `U` in Q40 the quotient
/// comes out in Q24, 8 bits finer than the window format.
const ETA_NUM_SHIFT: u32 = 48;
use super::params::{HpccParams, Mode};
use super::wire::{self, IntStack, WireError, MAX_GAP_NS, MAX_HOPS, TS_MASK, TS_SPAN_NS, TS_UNIT_SHIFT, TXB_MASK};

/// Telemetry of one hop, full width (counters already unwrapped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HopSample {
    /// Link rate `B` in bits per second, `1..=MAX_RATE_BPS`.
    pub rate_bps: u64,
    /// Egress timestamp in ns (switch clock; only differences matter).
    pub ts_ns: u64,
    /// Total bytes the port has transmitted (only differences matter).
    pub tx_bytes: u64,
    /// Queue length in bytes.
    pub qlen_bytes: u64,
}

/// One telemetry event of a flow: an ACK or probe response (sender mode)
/// or an INT-carrying packet (receiver mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Host clock in ns when the event was received.
    pub now_ns: u64,
    /// Cumulative ACK sequence number carried by the event (sender mode).
    pub ack_seq: u32,
    /// The sender's `snd_nxt` when the event is processed (sender mode).
    pub snd_nxt: u32,
    /// Path identifier (12-bit XOR of switch IDs on the wire).
    pub path_id: u16,
    /// Per-hop telemetry in path order.
    pub hops: &'a [HopSample],
}

/// Why an event was stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleReason {
    /// The sample has no hops.
    NoHops,
    /// The sample has more than `MAX_HOPS` hops.
    TooManyHops,
    /// A hop's rate is 0 or above `MAX_RATE_BPS`.
    BadRate,
    /// A hop's timestamp did not advance.
    ZeroDts,
    /// A hop's timestamp or txBytes went backwards.
    Backwards,
}

/// What an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Only recorded the link state (first event, or re-recording after a
    /// gap too long to unwrap the wire counters).
    Recorded,
    /// The path changed: dropped the old records and recorded the new ones.
    PathChanged,
    /// Updated `U` and `W` without committing `Wc`.
    Updated,
    /// Updated `U` and `W` and committed `Wc = W` (in receiver mode: time to
    /// send `W` to the sender).
    Committed,
    /// Changed nothing.
    Stale(StaleReason),
}

/// The result of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// What happened.
    pub event: Event,
    /// The window `W` in bytes (unchanged unless `Updated`/`Committed`).
    pub window_bytes: u32,
    /// Pacing rate `R = W/T` in bytes per second.
    pub pacing_rate: u64,
    /// The chosen hop's normalized in-flight sample `u'` in Q23.40 (0 unless
    /// `Updated`/`Committed`): what MeasureInflight folded into `U`.
    pub sample_u_q40: u64,
    /// Index of the chosen (most loaded) hop (0 unless `Updated`/`Committed`).
    pub hop: u8,
}

impl Outcome {
    /// Whether the event was stale.
    pub fn is_stale(&self) -> bool {
        matches!(self.event, Event::Stale(_))
    }

    /// Pacing rate in bits per second (saturating).
    pub fn pacing_bps(&self) -> u64 {
        self.pacing_rate.saturating_mul(8)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct HopRecord {
    ts_ns: u64,
    tx_bytes: u64,
    qlen_bytes: u64,
}

const F_RECORDS: u8 = 1;
const F_SEQ: u8 = 2;
const F_TIME: u8 = 4;
/// The bounded increase at a low `U` (`low_u_pct`): at least ×2 per
/// update (module docs).
pub const LOW_U_INCREASE_PCT: u32 = 200;
/// With `low_u_pct` 0, the ×2 bound alone applies at or below this percent
/// of eta.
pub const LOW_U_BOUND_ONLY_PCT: u32 = 50;
/// Window validation: `W ≤ max(USED_WINDOW_GAIN · (used + min_window), Wc)`
/// (module docs).
pub const USED_WINDOW_GAIN: u64 = 2;

/// The pacing cap for a window and the flow's smoothed RTT: `pct`% of
/// `window_bytes` per `srtt_us`, in bytes per second; `u64::MAX` (no cap)
/// when `pct` or `srtt_us` is 0.
///
/// The drafts pace at `W/T`, T the base RTT, which is the rate the window
/// sustains when the RTT is T. When host or queueing delay makes the
/// smoothed RTT several T, `W/T` is several times what `W` delivers per
/// RTT: a flow then sends its window in bursts at that rate, and after a
/// host stall every flow does so at once, pacing well above B in total
/// (docs/results.md#measurements-behind-the-controllers-rules). A cap at a small multiple of
/// `W/srtt` keeps a flow's bursts near its real rate; with srtt ≈ T it is
/// above `W/T` and changes nothing.
pub fn srtt_pacing_cap(window_bytes: u32, pct: u32, srtt_us: u32) -> u64 {
    if pct == 0 || srtt_us == 0 {
        return u64::MAX;
    }
    // No 128-bit division in the kernel. W·pct·10^4 fits in u64 for any
    // pct up to 4·10^5 (the module allows 1000); past that, W·10^6 < 2^52
    // is divided first (to within 1 B/s per pct), and a result past u64
    // means no cap.
    let (w, pct, srtt) = (u64::from(window_bytes), u64::from(pct), u64::from(srtt_us));
    match w.checked_mul(pct).and_then(|x| x.checked_mul(10_000)) {
        Some(n) => n / srtt,
        None => {
            // At 100%, then ·pct/100 in two parts so that only a result
            // past u64 overflows (the remainder's part is < 100·2^32).
            let at_100 = w * 1_000_000 / srtt;
            (at_100 / 100)
                .checked_mul(pct)
                .and_then(|x| x.checked_add(at_100 % 100 * pct / 100))
                .unwrap_or(u64::MAX)
        }
    }
}

/// `u' = BITS_NS · num / den` (bits/s · ns scale: 8 bits per byte, 10^9 ns per s).
const BITS_NS: u64 = 8_000_000_000;

/// A hop's `u'` as an unevaluated fraction `u'/8e9 = n/d · 2^e`, with `n`
/// and `d` the top 64 bits of the exact 128-bit numerator and denominator
/// (so at least 63 significant bits each, ≤ 2^-62 relative error), so
/// hops compare without division.
#[derive(Clone, Copy)]
struct Candidate {
    n: u64,
    d: u64,
    e: i32,
    dts: u64,
}

/// Bit length of a `u128`.
#[inline]
fn bits(x: u128) -> u32 {
    128 - x.leading_zeros()
}

/// The top 64 bits of `x` and how far they were shifted down.
#[inline]
fn top64(x: u128) -> (u64, u32) {
    let s = bits(x).saturating_sub(64);
    ((x >> s) as u64, s)
}

impl Candidate {
    /// `self > best`, exactly on the represented values.
    fn beats(&self, best: &Candidate) -> bool {
        // n_c·d_b·2^e_c vs n_b·d_c·2^e_b.
        let p = mul_wide(self.n, best.d);
        let q = mul_wide(best.n, self.d);
        if p == 0 {
            return false;
        }
        if q == 0 {
            return true;
        }
        // Compare magnitudes first; |e| ≤ 64 and bits ≤ 128, so the
        // wrapping operations below never wrap.
        let lp = (bits(p) as i32).wrapping_add(self.e);
        let lq = (bits(q) as i32).wrapping_add(best.e);
        if lp != lq {
            return lp > lq;
        }
        // Same magnitude: align exponents; the shifted side then has the
        // other's bit length, so it cannot overflow.
        let diff = self.e.wrapping_sub(best.e);
        if diff >= 0 {
            p.checked_shl(diff as u32).unwrap_or(u128::MAX) > q
        } else {
            p > q.checked_shl(diff.unsigned_abs()).unwrap_or(u128::MAX)
        }
    }

    /// `u' = 8e9 · n/d · 2^e` in Q23.40, saturating at `U_MAX`.
    fn u_q40(&self) -> u64 {
        // n < 2^64, so n · 8e9 < 2^97.
        let x = mul_wide(self.n, BITS_NS);
        let k = self.e.wrapping_add(U_SHIFT as i32);
        if k >= 0 {
            ratio_shl(x, self.d, k as u32, U_MAX)
        } else {
            let x = x.checked_shr(k.unsigned_abs()).unwrap_or(0);
            div_wide(x, self.d).unwrap_or(U_MAX).min(U_MAX)
        }
    }
}

/// `u'` of one hop against its record, or why the event is stale.
#[inline]
fn candidate(h: &HopSample, r: &HopRecord, t: u64, min_filter: bool) -> Result<Candidate, StaleReason> {
    let dts = h.ts_ns.wrapping_sub(r.ts_ns);
    if dts == 0 {
        return Err(StaleReason::ZeroDts);
    }
    let dtx = h.tx_bytes.wrapping_sub(r.tx_bytes);
    if dts > i64::MAX as u64 || dtx > i64::MAX as u64 {
        return Err(StaleReason::Backwards);
    }
    let qmin = if min_filter { h.qlen_bytes.min(r.qlen_bytes) } else { h.qlen_bytes };
    // Keep Δts below 2^40 (18 minutes); the rate term keeps its ratio.
    let k = 24u32.saturating_sub(dts.leading_zeros());
    let (d_ts, d_tx) = (dts >> k, dtx >> k);
    // u'/8e9 = (qmin·Δts + Δtx·T) / (B·T·Δts).
    // qmin·Δts < 2^104, Δtx·T < 2^93: the sum fits.
    let num = mul_wide(qmin, d_ts).saturating_add(mul_wide(d_tx, t));
    // B ≤ 2^48, T ≤ 2^30, Δts < 2^40: the product is below 2^118, and > 0.
    let den = mul_wide(h.rate_bps, t).wrapping_mul(u128::from(d_ts));
    let (n, sn) = top64(num);
    let (d, sd) = top64(den);
    Ok(Candidate {
        n,
        d,
        // sn, sd ≤ 64: no wrap.
        e: (sn as i32).wrapping_sub(sd as i32),
        dts,
    })
}

/// The path BDP cap `path_cap_pct% · min_j(B_j)·T` in Q47.16 bytes
/// (`u64::MAX` when off or when there are no hops). Rates are already
/// validated (`0 < B ≤ MAX_RATE_BPS < 2^48`), `T ≤ 2^30`, `pct ≤ 1000`: the
/// numerator `B·T·pct·2^16` is below 2^104.
fn path_cap_q(p: &HpccParams, hops: &[HopSample]) -> u64 {
    let pct = p.config().path_cap_pct;
    let Some(b) = hops.iter().map(|h| h.rate_bps).min() else {
        return u64::MAX;
    };
    if pct == 0 {
        return u64::MAX;
    }
    let num = mul_wide(b, p.base_rtt_ns()).saturating_mul(u128::from(pct)) << WIN_SHIFT;
    // bits·ns → bytes: / (8 · 10^9); percent: / 100.
    div_wide(num, 800_000_000_000).unwrap_or(u64::MAX)
}

/// `Wc·eta/U` in Q47.16 bytes, `u64::MAX` when `U = 0` or on overflow.
///
/// Computed as `Wc_q16 · eta_ppm · 2^48 / (U_q40 · 10^6)`, which is Q24:
/// the numerator is below 2^115; the denominator is below 2^64 (and the
/// result is exact up to the final floor) whenever `U < 16`, and is
/// otherwise shifted down together with the numerator (≤ 2^-63 relative).
#[inline]
fn wc_eta_over_u(wc_q16: u64, eta_ppm: u32, u_q40: u64) -> u64 {
    let num = mul_wide(wc_q16, u64::from(eta_ppm)) << ETA_NUM_SHIFT;
    let den = mul_wide(u_q40, u64::from(ETA_SCALE));
    let s = (128 - den.leading_zeros()).saturating_sub(64);
    match div_wide(num >> s, (den >> s) as u64) {
        // Q16 · 2^48 / Q40 = Q24; drop 8 bits to Q16.
        Some(q24) => q24 >> (WIN_SHIFT + ETA_NUM_SHIFT - U_SHIFT - WIN_SHIFT),
        None => u64::MAX,
    }
}

/// Wrap-safe "a is after b" on 32-bit TCP sequence numbers.
#[inline]
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Per-flow HPCC++ state. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HpccFlow {
    rec: [HopRecord; MAX_HOPS],
    /// `U`, Q23.40.
    u: u64,
    /// `Wc`, Q47.16 bytes.
    wc: u64,
    /// `W`, Q47.16 bytes.
    w: u64,
    /// `W` just before the last commit, Q47.16 bytes.
    w_pre: u64,
    last_update_time: u64,
    last_record_ns: u64,
    last_update_seq: u32,
    /// `ack_seq` of the sample the records came from (the start of the
    /// next sample's measured interval; [`Mode::Probe`]).
    rec_seq: u32,
    /// Window validation: bytes in flight reported for the next update
    /// (`u32::MAX`: none).
    used: u32,
    inc_stage: u32,
    path_id: u16,
    n_hops: u8,
    flags: u8,
    /// Wire rate code of each record (0: recorded from full-width samples).
    rate_tag: [u8; MAX_HOPS],
}

impl HpccFlow {
    /// A new flow: `U = 1`, `incStage = 0`, `W = Wc = init_window`, no records.
    pub fn new(p: &HpccParams) -> Self {
        Self {
            rec: [HopRecord::default(); MAX_HOPS],
            u: U_ONE,
            wc: p.init_q,
            w: p.init_q,
            w_pre: p.init_q,
            last_update_time: 0,
            last_record_ns: 0,
            last_update_seq: 0,
            rec_seq: 0,
            used: u32::MAX,
            inc_stage: 0,
            path_id: 0,
            n_hops: 0,
            flags: 0,
            rate_tag: [0; MAX_HOPS],
        }
    }

    /// `U` in Q23.40 (`U_ONE` = 1.0).
    pub fn u_q40(&self) -> u64 {
        self.u
    }

    /// The current window `W` in bytes.
    pub fn window_bytes(&self) -> u32 {
        u32::try_from(self.w >> WIN_SHIFT).unwrap_or(u32::MAX)
    }

    /// The current window `W` in Q47.16 bytes.
    pub fn window_q16(&self) -> u64 {
        self.w
    }

    /// The reference window `Wc` in Q47.16 bytes.
    pub fn wc_q16(&self) -> u64 {
        self.wc
    }

    /// The reference window `Wc` in bytes.
    pub fn wc_bytes(&self) -> u32 {
        u32::try_from(self.wc >> WIN_SHIFT).unwrap_or(u32::MAX)
    }

    /// The additive-increase stage counter.
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }

    /// Pacing rate `W/T` for the current window, bytes per second.
    pub fn pacing_rate(&self, p: &HpccParams) -> u64 {
        // W < 2^32, pace_mul < 2^62: the product fits, and so does >> 32.
        (mul_wide(u64::from(self.window_bytes()), p.pace_mul) >> 32) as u64
    }

    /// Window validation: the most bytes the flow had in flight since the
    /// last update (`None`: not reported, the drafts' law). The next update
    /// may not raise `W` above `max(USED_WINDOW_GAIN · used, Wc)`.
    pub fn set_used_window(&mut self, used_bytes: Option<u32>) {
        self.used = used_bytes.unwrap_or(u32::MAX);
    }

    /// An external cut (an SFC signal, [`crate::sfc::WindowCut`]): `W` and
    /// `Wc` drop to `window_bytes` if that is lower (never below the
    /// minimum window), and `incStage` restarts as after a multiplicative
    /// step. Returns the new window in bytes.
    pub fn cut(&mut self, p: &HpccParams, window_bytes: u32) -> u32 {
        let w = (u64::from(window_bytes) << WIN_SHIFT).max(p.min_q);
        if w < self.w {
            self.w = w;
            self.wc = self.wc.min(w);
            self.inc_stage = 0;
        }
        self.window_bytes()
    }

    /// An external cut's floor ([`crate::sfc::WindowCut::floor`]): `W`
    /// and `Wc` rise to `window_bytes` if they are lower (a sample of the
    /// congestion the cut answered does not cut again).
    pub fn hold(&mut self, window_bytes: u32) {
        let w = u64::from(window_bytes) << WIN_SHIFT;
        self.w = self.w.max(w);
        self.wc = self.wc.max(w);
    }

    /// Forgets the link records (e.g. after a route change the caller
    /// detected itself); the next event only records.
    pub fn drop_records(&mut self) {
        self.flags &= !F_RECORDS;
        self.n_hops = 0;
    }

    /// Runs one event on full-width telemetry.
    pub fn on_sample(&mut self, p: &HpccParams, s: &Sample<'_>) -> Outcome {
        self.update(p, s, false, None)
    }

    /// Parses a Figure-4 INT stack from `buf`, unwraps it against this
    /// flow's records ([`HpccFlow::widen`]) and runs one event on it. A
    /// malformed buffer is an error and changes nothing.
    pub fn on_int(
        &mut self,
        p: &HpccParams,
        buf: &[u8],
        now_ns: u64,
        ack_seq: u32,
        snd_nxt: u32,
    ) -> Result<Outcome, WireError> {
        let stack = wire::parse(buf)?;
        Ok(self.on_stack(p, &stack, now_ns, ack_seq, snd_nxt))
    }

    /// Like [`HpccFlow::on_int`] on an already parsed stack.
    pub fn on_stack(
        &mut self,
        p: &HpccParams,
        stack: &IntStack,
        now_ns: u64,
        ack_seq: u32,
        snd_nxt: u32,
    ) -> Outcome {
        let mut hops = [HopSample::default(); MAX_HOPS];
        let resync = self.widen(stack, now_ns, &mut hops);
        let n = usize::from(stack.n_hops);
        let s = Sample {
            now_ns,
            ack_seq,
            snd_nxt,
            path_id: stack.path_id,
            hops: hops.get(..n).unwrap_or(&[]),
        };
        let mut tags = [0u8; MAX_HOPS];
        for (t, h) in tags.iter_mut().zip(stack.hops()) {
            *t = h.rate;
        }
        self.update(p, &s, resync, Some(&tags))
    }

    /// Turns the narrow wire fields of `stack` into full-width samples in
    /// `out`, continuing this flow's records: ts (24 bits of 2 ns) and
    /// txBytes (20 bits of the rate's unit) advance by their wrap-safe
    /// difference from the recorded values, qlen is scaled to bytes.
    ///
    /// ts is unwrapped to the value nearest the host-clock elapsed time
    /// since the last record, so a reordered older sample comes out as
    /// going backwards (and is then stale). Returns `true` when the records
    /// cannot be continued and the event must only record: no records, a
    /// different path, hop count or rate code, or more than
    /// [`wire::MAX_GAP_NS`] since the last record. The values written then
    /// are the wire values scaled to bytes and ns.
    pub fn widen(&self, stack: &IntStack, now_ns: u64, out: &mut [HopSample; MAX_HOPS]) -> bool {
        let gap = now_ns.saturating_sub(self.last_record_ns);
        let mut resync = self.flags & F_RECORDS == 0
            || self.path_id != stack.path_id
            || self.n_hops != stack.n_hops
            || gap >= MAX_GAP_NS;
        for (raw, tag) in stack.hops().iter().zip(self.rate_tag.iter()) {
            resync |= raw.rate != *tag;
        }
        for ((raw, rec), o) in stack.hops().iter().zip(self.rec.iter()).zip(out.iter_mut()) {
            // unit_shift ≤ 12 (table), so the wrapping shifts below never wrap.
            let (bps, shift) = match wire::rate_info(raw.rate) {
                Some(info) => (info.bps(), info.unit_shift),
                // Unreachable after `parse`; a zero rate makes the event stale.
                None => (0, 0),
            };
            let ts_raw = u64::from(raw.ts);
            let tx_raw = u64::from(raw.tx);
            if resync {
                o.ts_ns = ts_raw << TS_UNIT_SHIFT;
                o.tx_bytes = tx_raw.wrapping_shl(shift);
            } else {
                let prev_ts = (rec.ts_ns >> TS_UNIT_SHIFT) & TS_MASK;
                let d_ns = (ts_raw.wrapping_sub(prev_ts) & TS_MASK) << TS_UNIT_SHIFT;
                // Nearest candidate to the host-clock gap (< MAX_GAP_NS here).
                o.ts_ns = if d_ns > gap.saturating_add(MAX_GAP_NS) {
                    rec.ts_ns.wrapping_add(d_ns).wrapping_sub(TS_SPAN_NS)
                } else {
                    rec.ts_ns.wrapping_add(d_ns)
                };
                let prev_tx = rec.tx_bytes.wrapping_shr(shift) & TXB_MASK;
                let d_tx = (tx_raw.wrapping_sub(prev_tx) & TXB_MASK).wrapping_shl(shift);
                o.tx_bytes = rec.tx_bytes.wrapping_add(d_tx);
            }
            o.qlen_bytes = u64::from(raw.qlen).wrapping_shl(shift);
            o.rate_bps = bps;
        }
        resync
    }

    fn outcome(&self, p: &HpccParams, event: Event) -> Outcome {
        Outcome {
            event,
            window_bytes: self.window_bytes(),
            pacing_rate: self.pacing_rate(p),
            sample_u_q40: 0,
            hop: 0,
        }
    }

    fn record(&mut self, s: &Sample<'_>, tags: Option<&[u8; MAX_HOPS]>) {
        self.rec_seq = s.ack_seq;
        for (r, h) in self.rec.iter_mut().zip(s.hops.iter()) {
            *r = HopRecord {
                ts_ns: h.ts_ns,
                tx_bytes: h.tx_bytes,
                qlen_bytes: h.qlen_bytes,
            };
        }
        self.rate_tag = match tags {
            Some(t) => *t,
            None => [0; MAX_HOPS],
        };
        // s.hops.len() ≤ MAX_HOPS was checked by the caller.
        self.n_hops = s.hops.len() as u8;
        self.path_id = s.path_id;
        self.last_record_ns = s.now_ns;
        self.flags |= F_RECORDS;
    }

    fn update(
        &mut self,
        p: &HpccParams,
        s: &Sample<'_>,
        resync: bool,
        tags: Option<&[u8; MAX_HOPS]>,
    ) -> Outcome {
        let n = s.hops.len();
        if n == 0 {
            return self.outcome(p, Event::Stale(StaleReason::NoHops));
        }
        if n > MAX_HOPS {
            return self.outcome(p, Event::Stale(StaleReason::TooManyHops));
        }
        if s.hops.iter().any(|h| h.rate_bps == 0 || h.rate_bps > MAX_RATE_BPS) {
            return self.outcome(p, Event::Stale(StaleReason::BadRate));
        }
        let cap = path_cap_q(p, s.hops);
        let first = self.flags & F_RECORDS == 0;
        let event = if first {
            Some(Event::Recorded)
        } else if self.path_id != s.path_id || usize::from(self.n_hops) != n {
            Some(Event::PathChanged)
        } else if resync {
            Some(Event::Recorded)
        } else {
            None
        };
        if let Some(event) = event {
            self.record(s, tags);
            self.bound(p, cap);
            return self.outcome(p, event);
        }

        // MeasureInflight: pick the first hop with the largest u'.
        let t = p.base_rtt_ns();
        let min_filter = p.config().qlen_min_filter;
        let mut best: Option<(Candidate, u8)> = None;
        // Hop index (≤ MAX_HOPS; wrapping_add keeps overflow checks out).
        let mut i: u8 = 0;
        for (h, r) in s.hops.iter().zip(self.rec.iter()) {
            let c = match candidate(h, r, t, min_filter) {
                Ok(c) => c,
                Err(why) => return self.outcome(p, Event::Stale(why)),
            };
            best = match best {
                Some(b) if !c.beats(&b.0) => Some(b),
                _ => Some((c, i)),
            };
            i = i.wrapping_add(1);
        }
        let Some((best, hop)) = best else {
            return self.outcome(p, Event::Stale(StaleReason::NoHops));
        };
        let u = best.u_q40();
        // With weight w = u_weight_pct/100 (exact, in hundredths):
        // U = ((100T − 100w·tau)·U + 100w·tau·u) / 100T. tau ≤ T ≤ 2^30 and
        // pct ≤ 100, so both weights are below 2^37, both terms below 2^101,
        // and the quotient is at most max(U, u).
        let tau = best.dts.min(t);
        let t100 = t.saturating_mul(100);
        let wtau = tau.saturating_mul(u64::from(p.config().u_weight_pct));
        let num = mul_wide(self.u, t100.saturating_sub(wtau)).saturating_add(mul_wide(u, wtau));
        self.u = div_wide(num, t100).unwrap_or(U_MAX);

        let update_wc = match p.mode() {
            mode @ (Mode::Sender | Mode::Probe) => {
                // Sender: the ACKed sequence; Probe: where the measured
                // interval began (the previous sample's ack_seq).
                // A probe interval that began with the commit's own snd_nxt
                // (the glue sends the next probe on the ACK that applied
                // the last response, before any new data) lies entirely
                // after it: probe mode commits at or after lastUpdateSeq.
                let go = self.flags & F_SEQ == 0
                    || match mode {
                        Mode::Sender => seq_after(s.ack_seq, self.last_update_seq),
                        _ => !seq_after(self.last_update_seq, self.rec_seq),
                    };
                if go {
                    self.last_update_seq = s.snd_nxt;
                    self.flags |= F_SEQ;
                }
                go
            }
            Mode::Receiver => {
                let go = self.flags & F_TIME == 0
                    || s.now_ns > self.last_update_time.saturating_add(t);
                if go {
                    self.last_update_time = s.now_ns;
                    self.flags |= F_TIME;
                }
                go
            }
        };
        self.compute_wind(p, update_wc, cap);
        self.record(s, tags);
        Outcome {
            sample_u_q40: u,
            hop,
            ..self.outcome(p, if update_wc { Event::Committed } else { Event::Updated })
        }
    }

    /// Bounds `W` and `Wc` by `cap` (Q47.16 bytes), never below `min_window`.
    fn bound(&mut self, p: &HpccParams, cap: u64) {
        self.w = self.w.min(cap).max(p.min_q);
        self.wc = self.wc.min(cap).max(p.min_q);
    }

    /// ComputeWind(U, updateWc), with `W ≤ cap` (Q47.16 bytes).
    fn compute_wind(&mut self, p: &HpccParams, update_wc: bool, cap: u64) {
        let mut inc = p.config().max_increase_pct;
        // A low U: a peer left (module docs); low_u_pct 0, the rule before
        // it: the ×2 bound at U ≤ eta/2, and the stage as it is.
        let low_pct = match p.config().low_u_pct {
            0 => LOW_U_BOUND_ONLY_PCT,
            pct => pct,
        };
        let low_u = inc != 0 && self.u.saturating_mul(100) <= p.eta_thresh.saturating_mul(u64::from(low_pct));
        let skip_stage = low_u && p.config().low_u_pct != 0;
        let multiplicative = self.u >= p.eta_thresh || self.inc_stage >= p.config().max_stage || skip_stage;
        let base = if multiplicative {
            wc_eta_over_u(self.wc, p.config().eta_ppm, self.u)
        } else {
            self.wc
        };
        let mut w = base.saturating_add(p.wai_q).min(p.max_q).min(cap);
        if inc != 0 {
            // At a low U the law's step, eta/U, up to ×LOW_U_INCREASE_PCT/100.
            if low_u {
                inc = inc.max(LOW_U_INCREASE_PCT);
            }
            // Wc < 2^48 (Q16 of ≤ 2^32 bytes), inc ≤ 1000: no overflow.
            w = w.min(self.wc.saturating_mul(u64::from(inc)) / 100);
        }
        if self.used != u32::MAX {
            // `used` plus one minimum window: what a caller sees in flight
            // can be short of what the flow sent by the segments just
            // ACKed, and at the minimum window twice that can be the window
            // itself, which would hold W at the floor for good.
            let used = (u64::from(self.used) << WIN_SHIFT).saturating_add(p.min_q);
            let bound = used.saturating_mul(USED_WINDOW_GAIN);
            w = w.min(bound.max(self.wc));
        }
        let mut w = w.max(p.min_q);
        // Pre-commit reference (module docs): a stale decrease from W_pre.
        if !update_wc && multiplicative && w < self.wc && p.config().precommit_ref && matches!(p.mode(), Mode::Probe) {
            let pre = wc_eta_over_u(self.w_pre, p.config().eta_ppm, self.u).saturating_add(p.wai_q);
            w = w.max(pre.min(self.wc));
        }
        let before = core::mem::replace(&mut self.w, w);
        if update_wc {
            self.w_pre = before;
            self.wc = w;
            self.inc_stage = if multiplicative {
                0
            } else {
                self.inc_stage.saturating_add(1)
            };
        }
    }
}
