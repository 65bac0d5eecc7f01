//! The module's knobs: one snapshot type, its defaults and its validation.
//!
//! Every knob the module exposes in `/sys/module/tcp_hpcc/parameters`
//! reaches the algorithm through a [`Knobs`] snapshot and nothing else:
//! the kernel glue reads its parameter cells into one (`params::knobs()`)
//! and hands it to the [`super::control`] controller, which derives the
//! law's parameters ([`Knobs::hpcc_params`]) and the fallback's
//! ([`Knobs::fallback`]) from it. [`Knobs::DEFAULT`] is the module's
//! default set; a write is stored only if the whole set still passes
//! [`Knobs::validate`].

use super::fallback::{FallbackParamError, FallbackParams, INIT_BYTES_LINE_RATE};
use super::params::{HpccConfig, HpccParams, Mode, ParamError, MAX_WINDOW_BYTES};
use super::{probe, sfc, wire};

/// Largest `base_rtt_us` and `probe_interval_us`.
pub const MAX_US: u32 = 1_000_000;

/// MSS of the representative flow a knob set is validated for.
pub const REFERENCE_MSS: u32 = 1448;

/// The knob table, the one place each knob is declared: field (its
/// sysfs name), default, range and description. `knob_table!(m)` calls
/// `m! { field: default, "range", "description"; ... }`: this file builds
/// [`Knobs`] and [`TABLE`] from it, the kernel glue (`rust/tcp_hpcc/params.rs`) the
/// parameter cells, their `__param` entries and `.modinfo` descriptions,
/// and a host test checks the README's parameter table against [`TABLE`].
macro_rules! knob_table {
    ($m:ident) => {
        $m! {
            init_window_bytes: FB.init_bytes, "1 .. 2^31",
                "initial window in bytes until the first telemetry (TCP's 10 segments; the drafts: one BDP at line rate)";
            fallback_ai_segs: FB.ai_segs, "1 .. 64",
                "no-telemetry fallback: additive increase, segments per RTT";
            fallback_beta: FB.beta, "512 .. 1023",
                "no-telemetry fallback: multiplicative decrease, in 1/1024";
            min_cwnd_segs: FB.min_segs, "2 .. max_cwnd_segs",
                "lower bound of the congestion window, segments";
            max_cwnd_segs: FB.max_segs, "min_cwnd_segs .. 65535",
                "upper bound of the congestion window, segments";
            eta_ppm: H.eta_ppm, "1 .. 10^6",
                "HPCC++ target utilization eta, parts per million";
            max_stage: 1, "≥ 0",
                "HPCC++ additive-increase stages before a multiplicative step (the drafts' 5 assume an update per ACK; 1 suits one probe sample per RTT)";
            wai_bytes: H.wai_bytes, "0 .. 2^31",
                "HPCC++ additive increase W_ai in bytes; 0 = W_init*(1-eta)/expected_flows";
            expected_flows: H.expected_flows, "≥ 1",
                "HPCC++ N of the W_ai rule of thumb";
            wai_path: 1, "0, 1",
                "with wai_bytes 0, 1: W_ai = min(B_j)*T*(1-eta)/(2N) once telemetry shows the path, N the receiver's flow count a response carries (else expected_flows); 0: W_init*(1-eta)/expected_flows";
            rcv_count_us: 100_000, "0, 100 .. 10^6",
                "a receiver counts the hpcc flows whose probes it answered within the last 1-2 windows of this many us (longer than the senders' smoothed RTT: a flow that probes less often is missed) and reports the count in responses; 0 = no count";
            base_rtt_us: 0, "0 .. 10^6",
                "HPCC++ base RTT T in us; 0 = the flow's minimum RTT";
            probe_interval_us: 0, "0 .. 10^6",
                "probe interval in us; 0 = one per smoothed RTT";
            probe_dscp: probe::DSCP_PROBE_DEFAULT as u32, "1 .. 63",
                "DSCP of probes (RFC 2474 pool 2); the fabric reserves it for probes";
            response_dscp: probe::DSCP_RESPONSE_DEFAULT as u32, "1 .. 63, not probe_dscp",
                "DSCP of responses (RFC 2474 pool 2); the fabric reserves it for responses";
            max_hops: wire::MAX_HOPS as u32, "1 .. 8",
                "largest INT hop count accepted in a response";
            telemetry: 1, "0, 1",
                "1: send probes and use telemetry; 0: the fallback law only";
            pacing_shift: 0, "0, 8 .. 16",
                "TSO bursts of 2^-shift s of the pacing rate (sk_pacing_shift); 0 = from T: bursts of at most T/16, shift ceil(log2(16 s/T)) within 8 .. 16";
            pace_at_link_rate: 1, "0, 1",
                "1: pace at most at the path's slowest INT link rate; 0: at W/T only";
            pace_srtt_cap_pct: 150, "0, 100 .. 1000",
                "pace at most this percent of W per smoothed RTT (bursts near what W really delivers when the RTT is inflated); 0 = W/T only, the drafts";
            path_cap_pct: 100, "0 .. 1000",
                "bound W by this percent of the path's BDP min(B_j)*T; 0 = none, the drafts";
            window_validation: 1, "0, 1",
                "1: an update does not raise W above twice the most bytes in flight since the last sample (plus the minimum window), or Wc; decreases unaffected; 0: the drafts";
            probe_commit: 1, "0, 1",
                "1: commit Wc only on a probe interval sent entirely after the last commit; 0: the drafts' NewAck rule on the probe's snd_nxt";
            u_weight_pct: 100, "1 .. 100",
                "HPCC++ weight of one sample in the EWMA of U, percent of the drafts' tau/T";
            max_increase_pct: 110, "0, 101 .. 1000",
                "largest growth of W over Wc in one update, percent (at least 200 while U <= eta/2); 0 = none, the drafts";
            qlen_min_filter: 0, "0, 1",
                "1: queue term min(qlen, previous qlen), the drafts (with one probe per RTT it reacts an RTT late); 0: the current qlen";
            max_flows_per_netns: 0, "0 .. 2^31",
                "most flows with telemetry state per network namespace (further flows run the fallback and retry every 100 ms); 0 = no limit";
            sfc_enable: 0, "0, 1",
                "1: act on Source Flow Control signals from switches in sfc_acl on devices in sfc_ifaces; 0: count them as disabled and pass them on";
            sfc_port: sfc::PORT_DEFAULT as u32, "1 .. 65535",
                "UDP port of SFC signals";
            sfc_rate: 10_000, "1 .. 10^7",
                "SFC signals a network namespace accepts per second from one source (each source has its own token bucket, of 64 per namespace)";
            sfc_burst: 100, "1 .. 10^6",
                "SFC signals a network namespace accepts in a burst from one source";
            sfc_max_pause_us: 10_000, "1 .. 10^6",
                "longest pause an SFC signal may set, in us";
            sfc_window_cut: 1, "0, 1",
                "1: an SFC signal also cuts an hpcc flow's window to what the bottleneck carries; 0: pause only";
            sfc_scope: 0, "0, 1",
                "0: SFC signals pause hpcc flows only; 1: also TCP flows of other congestion controls and UDP flows, held at egress (needs sch_fq on the device)";
        }
    };
}
#[allow(unused_imports)] // used by the kernel crate (rust/tcp_hpcc/params.rs)
pub(crate) use knob_table;

/// The knob that is text, not a number: the SFC access list (its own
/// parser, `sfc::Acl`). Name, range, description, default.
pub const ACL_KNOB: KnobInfo = KnobInfo {
    name: "sfc_acl",
    range: "up to 16 prefixes",
    desc: "switches whose SFC signals are accepted: IPv4/IPv6 prefixes ADDR/LEN, comma-separated (each matches sources of its own family)",
    default: None,
};

/// The other text knob: the devices SFC signals are accepted on (its own
/// parser, `sfc::IfaceList`).
pub const IFACES_KNOB: KnobInfo = KnobInfo {
    name: "sfc_ifaces",
    range: "up to 8 device names",
    desc: "devices SFC signals are accepted on (the fabric-facing ports), comma-separated; a signal from anywhere else \
           (loopback, a tunnel, a container's veth) is refused",
    default: None,
};

/// One row of the knob table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnobInfo {
    /// The parameter's name.
    pub name: &'static str,
    /// Its accepted values, as the README shows them.
    pub range: &'static str,
    /// What it does.
    pub desc: &'static str,
    /// Its default (`None`: text, empty).
    pub default: Option<u32>,
}

/// Builds [`Knobs`] and [`TABLE`] from [`knob_table!`].
macro_rules! knobs_struct {
    ($($field:ident: $default:expr, $range:literal, $desc:literal;)*) => {
        /// A snapshot of every knob (all `u32`, as the parameter cells).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Knobs {
            $(#[doc = $desc] pub $field: u32,)*
        }

        impl Knobs {
            /// The module's defaults.
            pub const DEFAULT: Self = Self { $($field: $default,)* };

            /// Every knob's name (its sysfs file) and value, in table order.
            pub fn entries(&self) -> [(&'static str, u32); Self::COUNT] {
                [$((stringify!($field), self.$field),)*]
            }

            /// Sets the knob called `name`; `false` if there is none.
            pub fn set(&mut self, name: &str, value: u32) -> bool {
                match name {
                    $(stringify!($field) => self.$field = value,)*
                    _ => return false,
                }
                true
            }

            /// How many knobs there are.
            pub const COUNT: usize = [$(stringify!($field),)*].len();
        }

        /// The numeric knobs, in table order.
        pub const TABLE: [KnobInfo; Knobs::COUNT] = [
            $(KnobInfo { name: stringify!($field), range: $range, desc: $desc, default: Some(Knobs::DEFAULT.$field) },)*
        ];
    };
}

const FB: FallbackParams = FallbackParams::DEFAULT;
const H: HpccConfig = HpccConfig::DEFAULT;

knob_table!(knobs_struct);

/// Why a knob set was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobError {
    /// The fallback parameters are invalid.
    Fallback(FallbackParamError),
    /// The HPCC++ parameters are invalid.
    Hpcc(ParamError),
    /// A DSCP is 0 or above 63, or the two DSCPs are equal.
    Dscp,
    /// `max_hops` is not in `1..=wire::MAX_HOPS`.
    MaxHops,
    /// `telemetry`, `wai_path`, `pace_at_link_rate`, `window_validation`,
    /// `probe_commit` or `qlen_min_filter` is not 0 or 1.
    Telemetry,
    /// `pacing_shift` is not 0 or in 8..=16.
    PacingShift,
    /// `base_rtt_us` or `probe_interval_us` is above one second.
    Time,
    /// `pace_srtt_cap_pct` is not 0 or in 100..=1000.
    PaceCap,
    /// `max_flows_per_netns` is above 2^31.
    FlowLimit,
    /// `rcv_count_us` is not 0 or in 100..=10^6.
    RcvCount,
    /// An SFC knob is out of its range.
    Sfc,
}

impl KnobError {
    /// A short explanation for the kernel log.
    pub fn describe(&self) -> &'static str {
        use FallbackParamError as E;
        match self {
            Self::Fallback(E::InitWindow) => "init_window_bytes must be in 1..2^31",
            Self::Fallback(E::AdditiveIncrease) => "fallback_ai_segs must be in 1..64",
            Self::Fallback(E::Beta) => "fallback_beta must be in 512..1023",
            Self::Fallback(E::Bounds) => "need 2 <= min_cwnd_segs <= max_cwnd_segs <= 65535",
            Self::Hpcc(e) => e.describe(),
            Self::Dscp => "DSCPs must be 1..63 and differ",
            Self::MaxHops => "max_hops must be in 1..8",
            Self::Telemetry => {
                "telemetry, wai_path, pace_at_link_rate, window_validation, probe_commit and qlen_min_filter must be 0 or 1"
            }
            Self::PacingShift => "pacing_shift must be 0 (from T) or 8..16",
            Self::Time => "base_rtt_us and probe_interval_us must be at most 1000000",
            Self::PaceCap => "pace_srtt_cap_pct must be 0 or 100..1000",
            Self::FlowLimit => "max_flows_per_netns must be at most 2^31",
            Self::RcvCount => "rcv_count_us must be 0 or 100..1000000",
            Self::Sfc => {
                "sfc_enable, sfc_window_cut and sfc_scope must be 0 or 1, sfc_port 1..65535, sfc_rate 1..10^7, \
                 sfc_burst 1..10^6, sfc_max_pause_us 1..10^6"
            }
        }
    }
}

impl Knobs {
    /// The drafts' law on the module's probes: maxStage 5, no increase
    /// bound, the min(qlen, previous qlen) filter, the NewAck commit rule,
    /// no window validation, pacing at W/T only.
    pub const DRAFTS: Self = Self {
        init_window_bytes: INIT_BYTES_LINE_RATE,
        max_stage: 5,
        max_increase_pct: 0,
        qlen_min_filter: 1,
        probe_commit: 0,
        window_validation: 0,
        pace_at_link_rate: 0,
        pace_srtt_cap_pct: 0,
        ..Self::DEFAULT
    };

    /// A named profile: `module` ([`Knobs::DEFAULT`], what the module
    /// ships) or `drafts` ([`Knobs::DRAFTS`]).
    pub fn profile(name: &str) -> Option<Self> {
        match name {
            "module" => Some(Self::DEFAULT),
            "drafts" => Some(Self::DRAFTS),
            _ => None,
        }
    }
}

impl Default for Knobs {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Knobs {
    /// The no-telemetry fallback's parameters.
    pub fn fallback(&self) -> FallbackParams {
        FallbackParams {
            init_bytes: self.init_window_bytes,
            ai_segs: self.fallback_ai_segs,
            beta: self.fallback_beta,
            min_segs: self.min_cwnd_segs,
            max_segs: self.max_cwnd_segs,
        }
    }

    /// The HPCC++ configuration for a flow with this MSS and base RTT.
    pub fn hpcc(&self, mss: u32, base_rtt_ns: u64) -> HpccConfig {
        let mss = mss.max(1);
        let cap = |segs: u32| segs.saturating_mul(mss).min(MAX_WINDOW_BYTES);
        let min = cap(self.min_cwnd_segs.max(2));
        let max = cap(self.max_cwnd_segs).max(min);
        HpccConfig {
            base_rtt_ns,
            eta_ppm: self.eta_ppm,
            max_stage: self.max_stage,
            wai_bytes: self.wai_bytes,
            expected_flows: self.expected_flows,
            init_window_bytes: self.init_window_bytes.clamp(min, max),
            min_window_bytes: min,
            max_window_bytes: max,
            mode: if self.probe_commit == 1 { Mode::Probe } else { Mode::Sender },
            path_cap_pct: self.path_cap_pct,
            u_weight_pct: self.u_weight_pct,
            max_increase_pct: self.max_increase_pct,
            qlen_min_filter: self.qlen_min_filter == 1,
        }
    }

    /// Validated HPCC++ parameters for a flow, or why not.
    pub fn hpcc_params(&self, mss: u32, base_rtt_ns: u64) -> Result<HpccParams, ParamError> {
        self.hpcc(mss, base_rtt_ns).validate()
    }

    /// Checks the whole set.
    pub fn validate(&self) -> Result<(), KnobError> {
        self.fallback().validate().map_err(KnobError::Fallback)?;
        if self.base_rtt_us > MAX_US || self.probe_interval_us > MAX_US {
            return Err(KnobError::Time);
        }
        // A representative flow: the configured T, or 1 ms when measured.
        let t_ns = if self.base_rtt_us == 0 { 1_000_000 } else { u64::from(self.base_rtt_us) * 1000 };
        self.hpcc_params(REFERENCE_MSS, t_ns).map_err(KnobError::Hpcc)?;
        // 0 is every unmarked packet's DSCP; the two must tell probes
        // from responses.
        if !(1..=63).contains(&self.probe_dscp)
            || !(1..=63).contains(&self.response_dscp)
            || self.probe_dscp == self.response_dscp
        {
            return Err(KnobError::Dscp);
        }
        if self.max_hops == 0 || self.max_hops > wire::MAX_HOPS as u32 {
            return Err(KnobError::MaxHops);
        }
        if self.telemetry > 1
            || self.wai_path > 1
            || self.pace_at_link_rate > 1
            || self.window_validation > 1
            || self.probe_commit > 1
            || self.qlen_min_filter > 1
        {
            return Err(KnobError::Telemetry);
        }
        if self.pacing_shift != 0 && !(8..=16).contains(&self.pacing_shift) {
            return Err(KnobError::PacingShift);
        }
        if self.pace_srtt_cap_pct != 0 && !(100..=1000).contains(&self.pace_srtt_cap_pct) {
            return Err(KnobError::PaceCap);
        }
        if self.max_flows_per_netns > 1 << 31 {
            return Err(KnobError::FlowLimit);
        }
        if self.rcv_count_us != 0 && !(100..=MAX_US).contains(&self.rcv_count_us) {
            return Err(KnobError::RcvCount);
        }
        if self.sfc_enable > 1
            || self.sfc_window_cut > 1
            || self.sfc_scope > 1
            || !(1..=65535).contains(&self.sfc_port)
            || !(1..=sfc::MAX_RATE).contains(&self.sfc_rate)
            || !(1..=sfc::MAX_BURST).contains(&self.sfc_burst)
            || !(1..=sfc::MAX_PAUSE_US).contains(&self.sfc_max_pause_us)
        {
            return Err(KnobError::Sfc);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        assert_eq!(Knobs::DEFAULT.validate(), Ok(()));
        assert_eq!(Knobs::DRAFTS.validate(), Ok(()));
        assert_eq!(Knobs::profile("module"), Some(Knobs::DEFAULT));
        assert_eq!(Knobs::profile("drafts"), Some(Knobs::DRAFTS));
        assert_eq!(Knobs::profile("x"), None);
        assert_eq!(Knobs::DEFAULT.entries().len(), Knobs::COUNT);
    }

    #[test]
    fn set_by_name() {
        let mut k = Knobs::DEFAULT;
        for (name, _) in Knobs::DEFAULT.entries() {
            assert!(k.set(name, 7), "{name}");
        }
        assert!(k.entries().iter().all(|&(_, v)| v == 7));
        assert!(!k.set("no_such_knob", 1));
    }

    #[test]
    fn each_range_refused() {
        let bad: &[(&str, u32)] = &[
            ("init_window_bytes", 0),
            ("fallback_ai_segs", 65),
            ("fallback_beta", 1024),
            ("min_cwnd_segs", 1),
            ("eta_ppm", 0),
            ("eta_ppm", 1_000_001),
            ("base_rtt_us", MAX_US + 1),
            ("probe_interval_us", MAX_US + 1),
            ("probe_dscp", 0),
            ("probe_dscp", 64),
            ("response_dscp", probe::DSCP_PROBE_DEFAULT as u32),
            ("max_hops", 0),
            ("max_hops", 9),
            ("telemetry", 2),
            ("window_validation", 2),
            ("pacing_shift", 7),
            ("pacing_shift", 17),
            ("pace_srtt_cap_pct", 99),
            ("pace_srtt_cap_pct", 1001),
            ("max_flows_per_netns", (1 << 31) + 1),
            ("sfc_enable", 2),
            ("sfc_port", 0),
            ("sfc_port", 65536),
            ("sfc_rate", 0),
            ("sfc_burst", 0),
            ("sfc_max_pause_us", 0),
            ("sfc_scope", 2),
        ];
        for &(name, v) in bad {
            let mut k = Knobs::DEFAULT;
            assert!(k.set(name, v));
            assert!(k.validate().is_err(), "{name}={v} accepted");
        }
    }
}
