//! The no-telemetry fallback: a bounded AIMD law on the congestion window.
//!
//! HPCC++ computes its window from in-band telemetry. A path that carries no
//! INT (no probe responses yet, or never) still needs a safe, stable law.
//! This is it, in TCP segments so it maps 1:1 onto `snd_cwnd`:
//!
//! * **Start** at the configured initial window (`init_bytes / mss`), by
//!   default TCP's (RFC 6928: 10 segments of a 1500-byte MTU). The drafts
//!   start flows at line rate, about one bandwidth-delay product; before
//!   the first telemetry no sender knows the bottleneck's, and many
//!   senders starting at once fill a switch buffer with their first windows
//!   before any signal can reach them. The initial slow-start threshold
//!   equals the initial window: there is no exponential probe from a tiny
//!   window.
//! * **Grow additively** by `ai_segs` segments per window of ACKed data,
//!   only while the window is what limits the sender (the caller checks
//!   `tcp_is_cwnd_limited`). Below the slow-start threshold (only after a
//!   retransmission timeout collapsed the window) it grows by the ACKed
//!   segments, back up to the threshold, as every TCP does.
//! * **Decrease multiplicatively** on loss or an ECN echo: the new window is
//!   `beta / BETA_SCALE` of the old one. TCP's recovery and CWR machinery asks
//!   for this once per congestion event.
//! * **Stay bounded**: every result lies in `[min_segs, max_segs]`, so the
//!   window never collapses to zero and never grows without bound.

/// Scale of [`FallbackParams::beta`]: `beta = 717` means 717/1024 ≈ 0.7.
pub const BETA_SCALE: u32 = 1024;

/// TCP's initial window in bytes (RFC 6928, Linux's `TCP_INIT_CWND`: 10
/// segments of 1460 bytes).
pub const INIT_BYTES_TCP: u32 = 10 * 1460;

/// The drafts' initial window for the module's link class: line rate times
/// the base RTT, about 64 KiB at 25 Gbit/s and 20 us.
pub const INIT_BYTES_LINE_RATE: u32 = 64 * 1024;

/// A datacenter host's line-rate start: one BDP of a 100 Gbit/s path with
/// a 10 us base RTT (12.5 bytes/ns x 10,000 ns).
pub const INIT_BYTES_DATACENTER: u32 = 125_000;

/// Smallest window the law ever returns, in segments.
pub const MIN_SEGS_FLOOR: u32 = 2;

/// Largest window the law ever returns, in segments (the kernel's
/// `snd_cwnd_clamp` default is 65535 for a 32-bit counter).
pub const MAX_SEGS_CEIL: u32 = 65_535;

/// Why a fallback parameter set was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackParamError {
    /// `init_bytes` is zero or above 2^31.
    InitWindow,
    /// `ai_segs` is zero or above 64.
    AdditiveIncrease,
    /// `beta` is not in `[BETA_SCALE/2, BETA_SCALE)`.
    Beta,
    /// `min_segs`/`max_segs` are outside `[MIN_SEGS_FLOOR, MAX_SEGS_CEIL]` or crossed.
    Bounds,
}

/// Parameters of the fallback law.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackParams {
    /// Initial window in bytes (converted to segments with the flow's MSS).
    pub init_bytes: u32,
    /// Additive increase per window of ACKed data, in segments.
    pub ai_segs: u32,
    /// Multiplicative decrease factor, in units of 1/[`BETA_SCALE`].
    pub beta: u32,
    /// Lower bound of the window in segments.
    pub min_segs: u32,
    /// Upper bound of the window in segments.
    pub max_segs: u32,
}

impl FallbackParams {
    /// Defaults: TCP's initial window (14600 bytes, 10 segments of a
    /// 1500-byte MTU), +1 segment per RTT, beta 0.7, window in
    /// `[2, 65535]` segments.
    pub const DEFAULT: Self = Self {
        init_bytes: INIT_BYTES_TCP,
        ai_segs: 1,
        beta: 717,
        min_segs: MIN_SEGS_FLOOR,
        max_segs: MAX_SEGS_CEIL,
    };

    /// Largest accepted `init_bytes` (2^31, the largest window the core handles).
    pub const MAX_INIT_BYTES: u32 = 1 << 31;

    /// Largest accepted `ai_segs`.
    pub const MAX_AI_SEGS: u32 = 64;

    /// Checks every field; a valid set keeps every computation in range.
    pub fn validate(&self) -> Result<(), FallbackParamError> {
        if self.init_bytes == 0 || self.init_bytes > Self::MAX_INIT_BYTES {
            return Err(FallbackParamError::InitWindow);
        }
        if self.ai_segs == 0 || self.ai_segs > Self::MAX_AI_SEGS {
            return Err(FallbackParamError::AdditiveIncrease);
        }
        if self.beta < BETA_SCALE / 2 || self.beta >= BETA_SCALE {
            return Err(FallbackParamError::Beta);
        }
        if self.min_segs < MIN_SEGS_FLOOR
            || self.max_segs > MAX_SEGS_CEIL
            || self.min_segs > self.max_segs
        {
            return Err(FallbackParamError::Bounds);
        }
        Ok(())
    }

    /// Clamps a window to `[min_segs, max_segs]` within
    /// `[MIN_SEGS_FLOOR, MAX_SEGS_CEIL]`, tolerating crossed bounds (a reader
    /// racing a parameter write): the lower bound wins. Written without
    /// `Ord::clamp`, whose `min <= max` assertion is a panic path.
    #[allow(clippy::manual_clamp)]
    pub fn clamp(&self, segs: u32) -> u32 {
        let lo = self.min_segs.max(MIN_SEGS_FLOOR).min(MAX_SEGS_CEIL);
        let hi = self.max_segs.min(MAX_SEGS_CEIL).max(lo);
        segs.max(lo).min(hi)
    }

    /// The initial window in segments for a flow with this MSS.
    pub fn initial_segs(&self, mss: u32) -> u32 {
        self.clamp(self.init_bytes.checked_div(mss).unwrap_or(0))
    }
}

impl Default for FallbackParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Per-flow state of the fallback law: the fractional part of the additive
/// increase, counted in ACKed segments times `ai_segs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fallback {
    credit: u32,
}

impl Fallback {
    /// A fresh flow.
    pub const fn new() -> Self {
        Self { credit: 0 }
    }

    /// The window after `acked` segments were newly ACKed while the window
    /// limited the sender. `ssthresh` is the connection's slow-start threshold.
    pub fn on_ack(&mut self, p: &FallbackParams, cwnd: u32, ssthresh: u32, acked: u32) -> u32 {
        let mut cwnd = p.clamp(cwnd);
        let mut acked = acked;
        if cwnd < ssthresh {
            // Slow start back up to the threshold (only after an RTO).
            let room = ssthresh.saturating_sub(cwnd);
            let step = acked.min(room);
            cwnd = p.clamp(cwnd.saturating_add(step));
            acked = acked.saturating_sub(step);
            if acked == 0 {
                return cwnd;
            }
        }
        // Additive increase: ai_segs segments per cwnd segments ACKed.
        self.credit = self.credit.saturating_add(acked.saturating_mul(p.ai_segs));
        // `cwnd >= MIN_SEGS_FLOOR` after `clamp`, so the division is exact;
        // `checked_div` keeps even an impossible zero from being a panic path.
        let inc = self.credit.checked_div(cwnd).unwrap_or(0);
        if inc > 0 {
            self.credit = self.credit.saturating_sub(inc.saturating_mul(cwnd));
            cwnd = p.clamp(cwnd.saturating_add(inc));
        }
        // Credit never needs to exceed one window; this keeps it bounded.
        self.credit = self.credit.min(cwnd);
        cwnd
    }

    /// The window (and new slow-start threshold) after a congestion event:
    /// loss or ECN echo.
    pub fn on_congestion(&mut self, p: &FallbackParams, cwnd: u32) -> u32 {
        self.credit = 0;
        let reduced = u64::from(cwnd) * u64::from(p.beta.min(BETA_SCALE)) / u64::from(BETA_SCALE);
        p.clamp(u32::try_from(reduced).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(FallbackParams::DEFAULT.validate(), Ok(()));
        // TCP's 10 segments with timestamps (MSS 1448) and without (1460).
        assert_eq!(FallbackParams::DEFAULT.initial_segs(1448), 10);
        assert_eq!(FallbackParams::DEFAULT.initial_segs(1460), 10);
    }

    #[test]
    fn validation_rejects_each_bad_field() {
        let d = FallbackParams::DEFAULT;
        let bad = [
            (FallbackParams { init_bytes: 0, ..d }, FallbackParamError::InitWindow),
            (FallbackParams { init_bytes: (1 << 31) + 1, ..d }, FallbackParamError::InitWindow),
            (FallbackParams { ai_segs: 0, ..d }, FallbackParamError::AdditiveIncrease),
            (FallbackParams { ai_segs: 65, ..d }, FallbackParamError::AdditiveIncrease),
            (FallbackParams { beta: 511, ..d }, FallbackParamError::Beta),
            (FallbackParams { beta: 1024, ..d }, FallbackParamError::Beta),
            (FallbackParams { min_segs: 1, ..d }, FallbackParamError::Bounds),
            (FallbackParams { max_segs: 65_536, ..d }, FallbackParamError::Bounds),
            (FallbackParams { min_segs: 10, max_segs: 9, ..d }, FallbackParamError::Bounds),
        ];
        for (p, e) in bad {
            assert_eq!(p.validate(), Err(e), "{p:?}");
        }
    }

    #[test]
    fn initial_window_is_clamped() {
        let p = FallbackParams { init_bytes: 100, ..FallbackParams::DEFAULT };
        assert_eq!(p.initial_segs(1448), MIN_SEGS_FLOOR);
        assert_eq!(p.initial_segs(0), MIN_SEGS_FLOOR);
        let p = FallbackParams { init_bytes: 1 << 31, ..FallbackParams::DEFAULT };
        assert_eq!(p.initial_segs(1), MAX_SEGS_CEIL);
    }

    #[test]
    fn additive_increase_is_one_segment_per_window() {
        let p = FallbackParams::DEFAULT;
        let mut f = Fallback::new();
        let mut cwnd = 20;
        // One window of single-segment ACKs grows the window by ai_segs.
        for _ in 0..20 {
            cwnd = f.on_ack(&p, cwnd, 20, 1);
        }
        assert_eq!(cwnd, 21);
        // A stretch ACK of 3 windows grows it by about 3.
        let c = f.on_ack(&p, 21, 20, 63);
        assert_eq!(c, 24);
    }

    #[test]
    fn slow_start_only_below_threshold() {
        let p = FallbackParams::DEFAULT;
        let mut f = Fallback::new();
        assert_eq!(f.on_ack(&p, 2, 40, 5), 7);
        // Crossing the threshold: the rest of the ACK goes to AI.
        assert_eq!(f.on_ack(&p, 38, 40, 4), 40);
    }

    #[test]
    fn decrease_is_multiplicative_and_floored() {
        let p = FallbackParams::DEFAULT;
        let mut f = Fallback::new();
        assert_eq!(f.on_congestion(&p, 100), 70);
        assert_eq!(f.on_congestion(&p, 2), 2);
        assert_eq!(f.on_congestion(&p, 0), 2);
        assert_eq!(f.on_congestion(&p, u32::MAX), MAX_SEGS_CEIL);
    }

    #[test]
    fn never_zero_never_unbounded_under_any_sequence() {
        // A deterministic pseudo-random walk through ACKs and congestion events.
        let p = FallbackParams { max_segs: 500, ..FallbackParams::DEFAULT };
        let mut f = Fallback::new();
        let mut cwnd = p.initial_segs(1448);
        let mut ssthresh = cwnd;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 50 {
                0 => {
                    cwnd = f.on_congestion(&p, cwnd);
                    ssthresh = cwnd;
                }
                1 => cwnd = 1, // RTO: kernel collapses the window, we must recover
                _ => cwnd = f.on_ack(&p, cwnd, ssthresh, (x >> 8) as u32 % 64),
            }
            if cwnd != 1 {
                assert!((2..=500).contains(&cwnd), "cwnd {cwnd}");
            }
        }
    }
}
