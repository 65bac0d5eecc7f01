//! Parameters of the HPCC++ law and their validation.
//!
//! [`HpccConfig`] is what an operator sets (module parameters, replay
//! flags). [`HpccConfig::validate`] checks it once and precomputes the
//! fixed-point constants the per-sample path needs, returning
//! [`HpccParams`]. The per-sample path only ever sees validated parameters.

use super::fixed::{mul_wide, ETA_SCALE, U_SHIFT, WIN_SHIFT};

/// Where the law runs (draft section 4.2 `NewAck` or section 6.3.2 `NewINT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sender-based: `Wc` is committed when an ACK passes `lastUpdateSeq`.
    Sender,
    /// Receiver-based: `Wc` is committed when `now > lastUpdateTime + T`.
    Receiver,
    /// Sender-based on per-probe telemetry (draft-miao section 7.2 probes):
    /// `Wc` is committed when the *previous* sample's `ack_seq` is after
    /// `lastUpdateSeq`. A probe's `u'` is measured over the interval since
    /// the previous probe, so this commits only on an interval that was
    /// sent entirely with the last committed `Wc`, which is what the
    /// drafts' per-packet rule achieves when ACKs are close together.
    Probe,
}

/// Largest accepted base RTT `T`, in ns (1 s).
pub const MAX_BASE_RTT_NS: u64 = 1_000_000_000;

/// Largest accepted window (and `W_ai`), in bytes.
pub const MAX_WINDOW_BYTES: u32 = 1 << 31;

/// Unvalidated parameters, as an operator gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpccConfig {
    /// `T`, the known base RTT, in ns: `1..=MAX_BASE_RTT_NS`.
    pub base_rtt_ns: u64,
    /// `eta`, the target utilization, in parts per million: `1..=1_000_000`.
    pub eta_ppm: u32,
    /// `maxStage`: additive-increase rounds before a multiplicative step.
    pub max_stage: u32,
    /// `W_ai` in bytes, `1..=2^31`; 0 selects the drafts' rule of thumb
    /// `W_init·(1 − eta)/N` with `N = expected_flows`.
    pub wai_bytes: u32,
    /// `N`, the expected maximum number of concurrent flows on a link; only
    /// used (and then required ≥ 1) when `wai_bytes` is 0.
    pub expected_flows: u32,
    /// Initial window `W = Wc` in bytes (about one BDP: flows start at line rate).
    pub init_window_bytes: u32,
    /// Lower bound of the window, bytes, ≥ 1.
    pub min_window_bytes: u32,
    /// Upper bound of the window, bytes, ≤ 2^31.
    pub max_window_bytes: u32,
    /// Sender- or receiver-based update.
    pub mode: Mode,
    /// Upper bound of `W` as a percentage of the path's bandwidth-delay
    /// product `min_j(B_j)·T` (the slowest INT link times T): `0` (no bound,
    /// the drafts' law) or `1..=MAX_PATH_CAP_PCT`. See [`crate::law`].
    pub path_cap_pct: u32,
    /// Weight of one sample in the EWMA of `U`, in percent of the drafts'
    /// `tau/T` (`1..=100`; 100 is the drafts' law). With one probe per RTT,
    /// `tau = T` and the drafts' EWMA keeps nothing of the previous `U`;
    /// 50 averages each probe with the history.
    pub u_weight_pct: u32,
    /// Largest growth of `W` over `Wc` in one update, in percent of `Wc`:
    /// `0` (no bound, the drafts' law) or `101..=1000`.
    pub max_increase_pct: u32,
    /// A low `U`, in percent of eta (`0..=100`), with `max_increase_pct`
    /// set: an update at or below it is multiplicative whatever `incStage`
    /// and may grow `W` to at least twice `Wc`, the law's own step down to
    /// eta/2 (a peer left: noise near eta does not read this low). `0`: the
    /// rule before this field, the ×2 bound only, at `U ≤ eta/2`.
    pub low_u_pct: u32,
    /// The queue term of `u'`: `true` uses `min(qlen, previous qlen)` of
    /// the hop, the drafts' filter against noise in qlen; `false` uses the
    /// current qlen. With per-packet INT the previous record is one packet
    /// old; with one probe per RTT it is an RTT old, and the filter then
    /// delays the reaction to a queue by an RTT.
    pub qlen_min_filter: bool,
    /// [`Mode::Probe`] only: an update that does not commit measured a
    /// probe interval that began before the last commit, so its data was
    /// sent under the window in force before that commit, and the queue it
    /// met is the one the commit answered. With `true` a decrease it
    /// calls for is taken from that earlier window (never below the law's
    /// from `Wc`, never above `Wc`): one queue is not cut twice, and a
    /// queue that grew since still cuts further. `false`: from `Wc`, the
    /// drafts.
    pub precommit_ref: bool,
}

/// Largest accepted `path_cap_pct`.
pub const MAX_PATH_CAP_PCT: u32 = 1000;

/// Largest `u_weight_pct`: a sample's full weight.
pub const MAX_U_WEIGHT_PCT: u32 = 100;

/// Smallest `max_increase_pct` besides 0 (off): any growth at all.
pub const MIN_MAX_INCREASE_PCT: u32 = 101;

/// Largest `max_increase_pct`.
pub const MAX_MAX_INCREASE_PCT: u32 = 1000;

/// Why a parameter set was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamError {
    /// `base_rtt_ns` is 0 or above [`MAX_BASE_RTT_NS`].
    BaseRtt,
    /// `eta_ppm` is 0 or above 1_000_000 (eta must be in (0, 1]).
    Eta,
    /// `wai_bytes` is above 2^31.
    Wai,
    /// `wai_bytes` is 0 (default requested) but `expected_flows` is 0.
    ExpectedFlows,
    /// The default `W_init·(1 − eta)/N` rounds to 0 bytes (eta = 1 or N
    /// too large): set `wai_bytes` explicitly.
    DefaultWaiZero,
    /// The windows do not satisfy `1 ≤ min ≤ init ≤ max ≤ 2^31`.
    Windows,
    /// `path_cap_pct` is above [`MAX_PATH_CAP_PCT`].
    PathCap,
    /// `u_weight_pct` is 0 or above 100.
    UWeight,
    /// `max_increase_pct` is not 0 or in 101..=1000.
    MaxIncrease,
    /// `low_u_pct` is above 100.
    LowU,
}

impl ParamError {
    /// A one-line explanation, for logs and the replay tool.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::BaseRtt => "base RTT T must be in 1..=1000000000 ns",
            Self::Eta => "eta must be in (0, 1] (1..=1000000 ppm)",
            Self::Wai => "W_ai must be in 1..=2^31 bytes",
            Self::ExpectedFlows => "expected flows N must be >= 1 for the default W_ai",
            Self::DefaultWaiZero => "default W_ai = W_init*(1-eta)/N rounds to 0; set W_ai explicitly",
            Self::Windows => "windows must satisfy 1 <= min <= init <= max <= 2^31 bytes",
            Self::PathCap => "path BDP cap must be 0 (off) or 1..=1000 percent",
            Self::UWeight => "U sample weight must be 1..=100 percent of tau/T",
            Self::MaxIncrease => "max increase must be 0 (off) or 101..=1000 percent of Wc",
            Self::LowU => "low U must be 0..=100 percent of eta",
        }
    }
}

impl HpccConfig {
    /// The drafts' defaults (T = 5 µs, eta = 95%, maxStage = 5), a 64 KiB
    /// initial window, windows in [4 KiB, 64 MiB], N = 16, sender mode, no
    /// path BDP cap.
    pub const DEFAULT: Self = Self {
        base_rtt_ns: 5_000,
        eta_ppm: 950_000,
        max_stage: 5,
        wai_bytes: 0,
        expected_flows: 16,
        init_window_bytes: 64 * 1024,
        min_window_bytes: 4 * 1024,
        max_window_bytes: 64 * 1024 * 1024,
        mode: Mode::Sender,
        path_cap_pct: 0,
        u_weight_pct: 100,
        max_increase_pct: 0,
        low_u_pct: 0,
        qlen_min_filter: true,
        precommit_ref: false,
    };

    /// Checks every field and precomputes the fixed-point constants.
    pub fn validate(&self) -> Result<HpccParams, ParamError> {
        if self.base_rtt_ns == 0 || self.base_rtt_ns > MAX_BASE_RTT_NS {
            return Err(ParamError::BaseRtt);
        }
        if self.eta_ppm == 0 || self.eta_ppm > ETA_SCALE {
            return Err(ParamError::Eta);
        }
        if self.min_window_bytes == 0
            || self.min_window_bytes > self.init_window_bytes
            || self.init_window_bytes > self.max_window_bytes
            || self.max_window_bytes > MAX_WINDOW_BYTES
        {
            return Err(ParamError::Windows);
        }
        if self.path_cap_pct > MAX_PATH_CAP_PCT {
            return Err(ParamError::PathCap);
        }
        if self.u_weight_pct == 0 || self.u_weight_pct > MAX_U_WEIGHT_PCT {
            return Err(ParamError::UWeight);
        }
        if self.max_increase_pct != 0 && !(MIN_MAX_INCREASE_PCT..=MAX_MAX_INCREASE_PCT).contains(&self.max_increase_pct) {
            return Err(ParamError::MaxIncrease);
        }
        if self.low_u_pct > 100 {
            return Err(ParamError::LowU);
        }
        let wai = if self.wai_bytes == 0 {
            if self.expected_flows == 0 {
                return Err(ParamError::ExpectedFlows);
            }
            // W_init·(1 − eta)/N, floored; fits: 2^31 · 10^6 < 2^51.
            let num = u64::from(self.init_window_bytes)
                .saturating_mul(u64::from(ETA_SCALE - self.eta_ppm));
            let den = u64::from(ETA_SCALE).saturating_mul(u64::from(self.expected_flows));
            let w = num.checked_div(den).unwrap_or(0);
            if w == 0 {
                return Err(ParamError::DefaultWaiZero);
            }
            w
        } else if self.wai_bytes > MAX_WINDOW_BYTES {
            return Err(ParamError::Wai);
        } else {
            u64::from(self.wai_bytes)
        };
        let scale = u64::from(ETA_SCALE);
        let ppm = u64::from(self.eta_ppm);
        // Exact threshold: U ≥ eta ⟺ U_q40 ≥ ceil(ppm · 2^40 / 10^6).
        let eta_thresh = div_u128_small(mul_wide(ppm, 1 << U_SHIFT).saturating_add(u128::from(scale - 1)), scale);
        // Pacing reciprocal: 10^9 · 2^32 / T, T ≥ 1 so it fits in 2^62.
        let pace_mul = div_u128_small(mul_wide(1_000_000_000, 1 << 32), self.base_rtt_ns);
        Ok(HpccParams {
            cfg: *self,
            wai_q: wai << WIN_SHIFT,
            eta_thresh,
            pace_mul,
            init_q: u64::from(self.init_window_bytes) << WIN_SHIFT,
            min_q: u64::from(self.min_window_bytes) << WIN_SHIFT,
            max_q: u64::from(self.max_window_bytes) << WIN_SHIFT,
        })
    }
}

impl Default for HpccConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// `n / d` for a `d != 0` and a quotient below 2^64 (validation only);
/// uses the 64-bit-only wide division.
fn div_u128_small(n: u128, d: u64) -> u64 {
    super::fixed::div_wide(n, d).unwrap_or(u64::MAX)
}

/// Validated parameters with the fixed-point constants precomputed.
/// Build with [`HpccConfig::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HpccParams {
    cfg: HpccConfig,
    pub(crate) wai_q: u64,
    pub(crate) eta_thresh: u64,
    pub(crate) pace_mul: u64,
    pub(crate) init_q: u64,
    pub(crate) min_q: u64,
    pub(crate) max_q: u64,
}

impl HpccParams {
    /// The configuration these parameters were validated from.
    pub fn config(&self) -> &HpccConfig {
        &self.cfg
    }

    /// `T` in ns.
    pub fn base_rtt_ns(&self) -> u64 {
        self.cfg.base_rtt_ns
    }

    /// `W_ai` in bytes, after applying the default rule when it was 0.
    pub fn wai_bytes(&self) -> u32 {
        u32::try_from(self.wai_q >> WIN_SHIFT).unwrap_or(u32::MAX)
    }

    /// The same parameters with `W_ai` = `bytes` (at least 1, at most
    /// [`MAX_WINDOW_BYTES`]): the path-derived W_ai of
    /// [`super::control::FlowCtl`].
    pub fn with_wai_bytes(mut self, bytes: u32) -> Self {
        let b = bytes.clamp(1, MAX_WINDOW_BYTES);
        self.cfg.wai_bytes = b;
        self.wai_q = u64::from(b) << WIN_SHIFT;
        self
    }

    /// `ceil(eta · 2^40)`: `U_q40 ≥ eta_threshold_q40()` exactly when `U ≥ eta`.
    pub fn eta_threshold_q40(&self) -> u64 {
        self.eta_thresh
    }

    /// The sender/receiver mode.
    pub fn mode(&self) -> Mode {
        self.cfg.mode
    }
}
