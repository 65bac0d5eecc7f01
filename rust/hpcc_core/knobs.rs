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

use core::fmt;

use super::fallback::{
    FallbackParamError, FallbackParams, BETA_SCALE, INIT_BYTES_DATACENTER, INIT_BYTES_LINE_RATE, MAX_SEGS_CEIL, MIN_SEGS_FLOOR,
};
use super::fixed::ETA_SCALE;
use super::params::{
    HpccConfig, HpccParams, Mode, ParamError, MAX_MAX_INCREASE_PCT, MAX_PATH_CAP_PCT, MAX_U_WEIGHT_PCT,
    MAX_WINDOW_BYTES, MIN_MAX_INCREASE_PCT,
};
use super::{probe, sfc, wire};

/// Largest `base_rtt_us` and `probe_interval_us`.
pub const MAX_US: u32 = 1_000_000;

/// MSS of the representative flow a knob set is validated for.
pub const REFERENCE_MSS: u32 = 1448;

/// Largest DSCP (a 6-bit field).
pub const MAX_DSCP: u32 = 63;

/// A knob's accepted values: `lo ..= hi`, 0 as well if `zero`, and at
/// most one rule relative to another knob. [`Knobs::validate`] checks it,
/// [`KnobError`] names it, and its text ([`Range::text`], built at compile
/// time) is the range the module's `.modinfo` and the README show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// 0 is accepted too (it means off, none, or taken from elsewhere).
    pub zero: bool,
    /// Smallest accepted value besides 0.
    pub lo: u32,
    /// Largest accepted value.
    pub hi: u32,
    /// A rule relative to another knob.
    pub rel: Rel,
}

/// A range's rule relative to another knob, named by its sysfs name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rel {
    /// None.
    None,
    /// At most the other knob's value.
    AtMost(&'static str),
    /// At least the other knob's value.
    AtLeast(&'static str),
    /// Not equal to the other knob's value.
    Differs(&'static str),
}

impl Range {
    /// Every value.
    pub const ANY: Self = Self::span(0, u32::MAX);
    /// 0 or 1.
    pub const FLAG: Self = Self::span(0, 1);

    /// `lo ..= hi`.
    pub const fn span(lo: u32, hi: u32) -> Self {
        Self { zero: false, lo, hi, rel: Rel::None }
    }

    /// 0, or `lo ..= hi`.
    pub const fn zero_or(lo: u32, hi: u32) -> Self {
        Self { zero: true, lo, hi, rel: Rel::None }
    }

    /// And at most the knob `other`.
    pub const fn at_most(self, other: &'static str) -> Self {
        Self { rel: Rel::AtMost(other), ..self }
    }

    /// And at least the knob `other`.
    pub const fn at_least(self, other: &'static str) -> Self {
        Self { rel: Rel::AtLeast(other), ..self }
    }

    /// And not equal to the knob `other`.
    pub const fn differs(self, other: &'static str) -> Self {
        Self { rel: Rel::Differs(other), ..self }
    }

    /// Whether `v` is in the range itself, relations aside.
    pub fn contains(&self, v: u32) -> bool {
        (self.zero && v == 0) || (self.lo..=self.hi).contains(&v)
    }

    /// Whether `v` keeps the relation, the other knobs' values read from
    /// `all`. A relation to a knob that does not exist holds.
    pub fn relation_holds(&self, v: u32, all: &Knobs) -> bool {
        match self.rel {
            Rel::None => true,
            Rel::AtMost(k) => all.get(k).map_or(true, |o| v <= o),
            Rel::AtLeast(k) => all.get(k).map_or(true, |o| v >= o),
            Rel::Differs(k) => !all.get(k).is_some_and(|o| v == o),
        }
    }

    /// The range as text ("1 .. 63, not probe_dscp"), built in a `const`.
    pub const fn text(&self) -> RangeText {
        let mut t = RangeText { buf: [0; RangeText::CAP], len: 0 };
        if self.zero {
            t = t.push("0, ");
        }
        if self.zero && self.lo == 1 && self.hi == 1 {
            return t.push("1");
        }
        if self.lo == 0 && self.hi == 1 && !self.zero {
            return t.push("0, 1");
        }
        if self.hi == u32::MAX {
            return t.push("≥ ").num(self.lo);
        }
        t = match self.rel {
            Rel::AtLeast(k) => t.push(k),
            _ => t.num(self.lo),
        };
        t = t.push(" .. ");
        t = match self.rel {
            Rel::AtMost(k) => t.push(k),
            _ => t.num(self.hi),
        };
        if let Rel::Differs(k) = self.rel {
            t = t.push(", not ").push(k);
        }
        t
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// A [`Range`]'s text in a fixed buffer, so a `const` can hold it.
#[derive(Debug, Clone, Copy)]
pub struct RangeText {
    buf: [u8; Self::CAP],
    len: usize,
}

impl RangeText {
    /// Longest text: two knob names and the words between them.
    const CAP: usize = 80;

    /// Appends `s`, or as much of it as fits (the table's texts fit:
    /// a host test renders them all).
    const fn push(mut self, s: &str) -> Self {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() && self.len < Self::CAP {
            self.buf[self.len] = b[i];
            self.len = self.len.wrapping_add(1);
            i = i.wrapping_add(1);
        }
        self
    }

    /// Appends `v`: as 2^k from 2^16, as 10^k from 10^6, else in decimal.
    const fn num(self, v: u32) -> Self {
        if v >= 1 << 16 && v.is_power_of_two() {
            return self.push("2^").num(v.trailing_zeros());
        }
        let mut k = 0u32;
        let mut p = 1u32;
        while p < v && k < 9 {
            p = p.wrapping_mul(10);
            k = k.wrapping_add(1);
        }
        if k >= 6 && p == v {
            return self.push("10^").num(k);
        }
        let mut digits = [0u8; 10];
        let mut n = 0;
        let mut x = v;
        loop {
            digits[n] = b'0'.wrapping_add((x % 10) as u8);
            n = n.wrapping_add(1);
            x /= 10;
            if x == 0 || n == digits.len() {
                break;
            }
        }
        let mut t = self;
        while n > 0 && t.len < Self::CAP {
            n = n.wrapping_sub(1);
            t.buf[t.len] = digits[n];
            t.len = t.len.wrapping_add(1);
        }
        t
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        let (head, _) = self.buf.split_at(if self.len < Self::CAP { self.len } else { Self::CAP });
        // Only whole `&str`s are pushed, and the digits are ASCII; a
        // cut at CAP could split a character, which the host test rules
        // out for every row (and would show as an empty text, not UB).
        match core::str::from_utf8(head) {
            Ok(s) => s,
            Err(_) => "",
        }
    }
}

/// The knob table, the one place each knob is declared: field (its
/// sysfs name), default, range and description. `knob_table!(m)` calls
/// `m! { field: default, "range", "description"; ... }`: this file builds
/// [`Knobs`] and [`TABLE`] from it, the kernel glue (`rust/tcp_hpcc/modparam.rs`) the
/// parameter cells, their `__param` entries and `.modinfo` descriptions,
/// and a host test checks the README's parameter table against [`TABLE`].
macro_rules! knob_table {
    ($m:ident) => {
        $m! {
            init_window_bytes: FB.init_bytes, Range::span(1, FallbackParams::MAX_INIT_BYTES),
                "initial window in bytes until the first telemetry (TCP's 10 segments; the drafts: one BDP at line rate)";
            fallback_ai_segs: FB.ai_segs, Range::span(1, FallbackParams::MAX_AI_SEGS),
                "no-telemetry fallback: additive increase, segments per RTT";
            fallback_beta: FB.beta, Range::span(BETA_SCALE / 2, BETA_SCALE - 1),
                "no-telemetry fallback: multiplicative decrease, in 1/1024";
            min_cwnd_segs: FB.min_segs, Range::span(MIN_SEGS_FLOOR, MAX_SEGS_CEIL).at_most("max_cwnd_segs"),
                "lower bound of the congestion window, segments";
            max_cwnd_segs: FB.max_segs, Range::span(MIN_SEGS_FLOOR, MAX_SEGS_CEIL).at_least("min_cwnd_segs"),
                "upper bound of the congestion window, segments";
            eta_ppm: H.eta_ppm, Range::span(1, ETA_SCALE),
                "HPCC++ target utilization eta, parts per million";
            max_stage: 1, Range::ANY,
                "HPCC++ additive-increase stages before a multiplicative step (the drafts' 5 assume an update per ACK; 1 suits one probe sample per RTT)";
            wai_bytes: H.wai_bytes, Range::span(0, MAX_WINDOW_BYTES),
                "HPCC++ additive increase W_ai in bytes; 0 = W_init*(1-eta)/expected_flows";
            expected_flows: H.expected_flows, Range::span(1, u32::MAX),
                "HPCC++ N of the W_ai rule of thumb";
            wai_path: 1, Range::FLAG,
                "with wai_bytes 0, 1: W_ai = min(B_j)*T*(1-eta)/(2N) (T: max(T, srtt) with wai_fair 2) once telemetry shows the path, N the receiver's flow count a response carries (else expected_flows); 0: W_init*(1-eta)/expected_flows";
            wai_fair: 2, Range::span(0, 2),
                "with wai_path 1, 2: a flow's W_ai is scaled by (F/Wc)^2, F its fair share of the window the path holds at its smoothed RTT, min(B_j)*max(T,srtt)/N, within 1/2 and 2, so that per-probe noise in U cannot hold windows apart; 1: the same at T, min(B_j)*T/N; 0: the same W_ai for every flow";
            rcv_count_us: 100_000, Range::zero_or(100, MAX_US),
                "a receiver counts the hpcc flows whose probes it answered within the last 1-2 windows of this many us (longer than the senders' smoothed RTT: a flow that probes less often is missed), or of shorter ones (rcv_count_scaled), and reports the count in responses; 0 = no count";
            rcv_count_scaled: 1, Range::FLAG,
                "sender: 1: probes say the flow's probe spacing, and a receiver counts for each over the shortest of rcv_count_us/8^k (k < 4, at least 10 us) that spans two of it and of the longest it answered within rcv_count_us, so that flows that left are forgotten within a few RTTs; 0: probes say none, and are counted over rcv_count_us";
            base_rtt_us: 0, Range::span(0, MAX_US),
                "HPCC++ base RTT T in us; 0 = the flow's minimum RTT";
            probe_interval_us: 0, Range::span(0, MAX_US),
                "probe interval in us; 0 = one per smoothed RTT";
            probe_min_interval_us: 5, Range::span(0, MAX_US),
                "floor of each flow's probe interval in us (a flow at a 5 us RTT probes at most 200,000 times a second); 0 = none";
            probe_budget: 1_000_000, Range::zero_or(100, 100_000_000),
                "probes a network namespace sends per second (bursts of 32); when its flows want more, each gets the same fraction of the probes it wants (in pairs when they are more than 8 ms apart); 0 = no limit";
            response_budget: 4_000_000, Range::zero_or(100, 100_000_000),
                "responses a network namespace sends per second (bursts of 32): the probes it answers, from all its peers (an incast's senders each probe within their own budget); 0 = no limit";
            probe_dscp: probe::DSCP_PROBE_DEFAULT as u32, Range::span(1, MAX_DSCP),
                "DSCP of probes (RFC 2474 pool 2); the fabric reserves it for probes";
            response_dscp: probe::DSCP_RESPONSE_DEFAULT as u32, Range::span(1, MAX_DSCP).differs("probe_dscp"),
                "DSCP of responses (RFC 2474 pool 2); the fabric reserves it for responses";
            max_hops: wire::MAX_HOPS as u32, Range::span(1, wire::MAX_HOPS as u32),
                "largest INT hop count accepted in a response";
            telemetry: 1, Range::FLAG,
                "1: send probes and use telemetry; 0: the fallback law only";
            pacing_shift: 0, Range::zero_or(8, 16),
                "TSO bursts of 2^-shift s of the pacing rate (sk_pacing_shift); 0 = from T: bursts of at most T/16, shift ceil(log2(16 s/T)) within 8 .. 16";
            pace_at_link_rate: 1, Range::FLAG,
                "1: pace at most at the path's slowest INT link rate; 0: at W/T only";
            pace_srtt_cap_pct: 110, Range::zero_or(100, 1000),
                "pace at most this percent of W per smoothed RTT (bursts near what W really delivers when the RTT is inflated); 0 = W/T only, the drafts";
            path_cap_pct: 100, Range::span(0, MAX_PATH_CAP_PCT),
                "bound W by this percent of the path's BDP min(B_j)*T; 0 = none, the drafts";
            window_validation: 1, Range::FLAG,
                "1: an update does not raise W above twice the most bytes in flight since the last sample (plus the minimum window), or Wc; decreases unaffected; 0: the drafts";
            probe_commit: 1, Range::FLAG,
                "1: commit Wc only on a probe interval sent entirely after the last commit; 0: the drafts' NewAck rule on the probe's snd_nxt";
            u_weight_pct: 100, Range::span(1, MAX_U_WEIGHT_PCT),
                "HPCC++ weight of one sample in the EWMA of U, percent of the drafts' tau/T";
            max_increase_pct: 110, Range::zero_or(MIN_MAX_INCREASE_PCT, MAX_MAX_INCREASE_PCT),
                "largest growth of W over Wc in one update, percent (at least 200 at a low U, see low_u_pct); 0 = none, the drafts";
            low_u_pct: 75, Range::span(0, 100),
                "with max_increase_pct set, a U at or below this percent of eta is a peer that left: the update is multiplicative whatever the additive stage, and may grow W to 200% of Wc (the law's eta/U down to eta/2); 0 = the x2 bound only, at U <= eta/2";
            qlen_min_filter: 1, Range::FLAG,
                "1: queue term min(qlen, previous qlen), the drafts (with one probe per RTT it reacts an RTT late); 0: the current qlen";
            precommit_ref: 1, Range::FLAG,
                "with probe_commit 1, 1: an update on a probe interval that began before the last commit (data sent before the commit's cut) takes a decrease from W before that commit, never above Wc, so that one queue is not cut twice; 0: from Wc, the drafts";
            max_flows_per_netns: 0, Range::span(0, 1 << 31),
                "most flows with telemetry state per network namespace (further flows run the fallback and retry every 100 ms); 0 = no limit";
            sfc_enable: 0, Range::FLAG,
                "1: act on Source Flow Control signals from switches in sfc_acl on devices in sfc_ifaces; 0: count them as disabled and pass them on";
            sfc_port: sfc::PORT_DEFAULT as u32, Range::span(1, u16::MAX as u32),
                "UDP port of SFC signals";
            sfc_rate: 10_000, Range::span(1, sfc::MAX_RATE),
                "SFC signals a network namespace accepts per second from one source (each source has its own token bucket, of 64 per namespace)";
            sfc_burst: 100, Range::span(1, sfc::MAX_BURST),
                "SFC signals a network namespace accepts in a burst from one source";
            sfc_max_pause_us: 10_000, Range::span(1, sfc::MAX_PAUSE_US),
                "longest pause an SFC signal may set, in us";
            sfc_window_cut: 1, Range::FLAG,
                "1: an SFC signal also cuts an hpcc flow's window to what the bottleneck carries; 0: pause only";
            sfc_scope: 0, Range::FLAG,
                "0: SFC signals pause hpcc flows only; 1: also TCP flows of other congestion controls and UDP flows, held at egress (needs sch_fq on the device)";
            sfc_max_hops: 0, Range::span(0, sfc::MAX_HOPS),
                "routers an SFC signal may cross from the switch that sent it: TTL / hop limit at least 255 minus this; 0: the adjacent switch only (2 in a leaf-spine, 4 in a 3-tier fat tree)";
        }
    };
}
#[allow(unused_imports)] // used by the kernel crate (rust/tcp_hpcc/modparam.rs)
pub(crate) use knob_table;

/// The knob that is text, not a number: the SFC access list (its own
/// parser, `sfc::Acl`).
pub const ACL_KNOB: KnobInfo = KnobInfo {
    name: "sfc_acl",
    range: "up to 16 prefixes",
    desc: "switches whose SFC signals are accepted: IPv4/IPv6 prefixes ADDR/LEN, comma-separated (each matches sources of its own family)",
    default: None,
    limits: None,
};

/// The other text knob: the devices SFC signals are accepted on (its own
/// parser, `sfc::IfaceList`).
pub const IFACES_KNOB: KnobInfo = KnobInfo {
    name: "sfc_ifaces",
    range: "up to 8 device names",
    desc: "devices SFC signals are accepted on (the fabric-facing ports), comma-separated; a signal from anywhere else \
           (loopback, a tunnel, a container's veth) is refused",
    default: None,
    limits: None,
};

/// One row of the knob table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnobInfo {
    /// The parameter's name.
    pub name: &'static str,
    /// Its accepted values, as `.modinfo` and the README show them (a
    /// numeric knob's is its [`Range::text`]).
    pub range: &'static str,
    /// What it does.
    pub desc: &'static str,
    /// Its default (`None`: text, empty).
    pub default: Option<u32>,
    /// Its accepted values (`None`: text, its own parser).
    pub limits: Option<Range>,
}

/// Builds [`Knobs`], [`TABLE`] and [`range_text`] from [`knob_table!`].
macro_rules! knobs_struct {
    ($($field:ident: $default:expr, $range:expr, $desc:literal;)*) => {
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

            /// The knob called `name`, if there is one.
            pub fn get(&self, name: &str) -> Option<u32> {
                match name {
                    $(stringify!($field) => Some(self.$field),)*
                    _ => None,
                }
            }

            /// How many knobs there are.
            pub const COUNT: usize = [$(stringify!($field),)*].len();
        }

        /// Each numeric knob's range as text, a `const` per knob (the
        /// kernel glue's `.modinfo` entries take theirs from here).
        #[allow(non_upper_case_globals)]
        pub mod range_text {
            use super::*;
            $(
                #[doc = concat!("`", stringify!($field), "`'s range.")]
                pub const $field: &str = {
                    const T: &RangeText = &$range.text();
                    T.as_str()
                };
            )*
        }

        /// The numeric knobs, in table order.
        pub const TABLE: [KnobInfo; Knobs::COUNT] = [
            $(KnobInfo {
                name: stringify!($field),
                range: range_text::$field,
                desc: $desc,
                default: Some(Knobs::DEFAULT.$field),
                limits: Some($range),
            },)*
        ];
    };
}

/// Every knob's default, one `name=value` line each in table order (a
/// text knob's value empty), after a comment line: what the tests read
/// instead of literals (`selftests/lib/knob_defaults`, checked against this by
/// `tests/knobs_table.rs`) and what `hpcc-replay --knobs` prints.
pub struct Defaults;

impl fmt::Display for Defaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# tcp_hpcc's parameters and their defaults, from rust/hpcc_core/knobs.rs (hpcc-replay --knobs)")?;
        for k in TABLE.iter().chain([&ACL_KNOB, &IFACES_KNOB]) {
            match k.default {
                Some(v) => writeln!(f, "{}={v}", k.name)?,
                None => writeln!(f, "{}=", k.name)?,
            }
        }
        Ok(())
    }
}

const FB: FallbackParams = FallbackParams::DEFAULT;
const H: HpccConfig = HpccConfig::DEFAULT;

knob_table!(knobs_struct);

/// Why a knob set was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobError {
    /// The knob [`TABLE`]`[i]` is outside its [`Range`].
    Range(usize),
    /// The fallback parameters are invalid (not reached with every knob
    /// in its range: kept as the law's own check).
    Fallback(FallbackParamError),
    /// The HPCC++ parameters are invalid (with every knob in range: the
    /// default W_ai, W_init·(1 − eta)/N, is 0).
    Hpcc(ParamError),
}

impl fmt::Display for KnobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Range(i) => match TABLE.get(*i) {
                Some(k) => write!(f, "{} must be {}", k.name, k.range),
                None => f.write_str("a knob is out of its range"),
            },
            Self::Fallback(_) => f.write_str("the fallback's parameters are inconsistent"),
            Self::Hpcc(e) => f.write_str(e.describe()),
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
        precommit_ref: 0,
        window_validation: 0,
        pace_at_link_rate: 0,
        pace_srtt_cap_pct: 0,
        wai_fair: 0,
        ..Self::DEFAULT
    };

    /// The module's defaults with the regrowth of the HPCC authors' runs
    /// and the drafts' line-rate start, for a datacenter host:
    /// - the initial window is one BDP of a 100 Gbit/s path with a 10 us
    ///   base RTT ([`INIT_BYTES_DATACENTER`]) instead of TCP's 10 segments,
    ///   so that a flow of up to a BDP finishes in one RTT and the first
    ///   telemetry, not slow start, sizes a longer one;
    /// - every committed update is multiplicative (`max_stage` 0, the
    ///   authors' maxStage) and unbounded (`max_increase_pct` 0), so that a
    ///   long flow whose peers left regrows to the link in one update. The
    ///   module's 1 and 110 guard against flows that read the same U a
    ///   little below eta (`low_u_pct` lifts both for a U below 3/4 of
    ///   eta), measured on the VM's 100 Mbit/s path; in the 100 Gbit/s
    ///   fabric, before `low_u_pct`, they cost flows over 1 MB a sixth of
    ///   their rate (docs/results.md);
    /// - every flow adds the same W_ai (`wai_fair` 0), the authors' AI:
    ///   the fair-share scaling is measured on the VM's path only;
    /// - the receiver counts over `rcv_count_us` for every probe
    ///   (`rcv_count_scaled` 0): the windows fit to each probe's spacing
    ///   are measured on the VM's path only;
    /// - the queue term is the current qlen (`qlen_min_filter` 0) and the
    ///   pacing cap 150% of W per smoothed RTT (`pace_srtt_cap_pct` 150):
    ///   the module's 1 and 110 hold the VM's queue and link against noisy
    ///   probes and host delay, but in the fabric, where a queue that one
    ///   probe sees is real, each of them cost WebSearch at 50% (measured
    ///   in docs/results.md, "The VM's queue filter in the fabric").
    ///
    /// The kernel loads it as the README's `modprobe` line (a test checks
    /// that line against this).
    pub const DATACENTER: Self = Self {
        init_window_bytes: INIT_BYTES_DATACENTER,
        max_stage: 0,
        max_increase_pct: 0,
        wai_fair: 0,
        rcv_count_scaled: 0,
        qlen_min_filter: 0,
        pace_srtt_cap_pct: 150,
        ..Self::DEFAULT
    };

    /// A named profile: `module` ([`Knobs::DEFAULT`], what the module
    /// ships), `datacenter` ([`Knobs::DATACENTER`]) or `drafts`
    /// ([`Knobs::DRAFTS`]).
    pub fn profile(name: &str) -> Option<Self> {
        match name {
            "module" => Some(Self::DEFAULT),
            "datacenter" => Some(Self::DATACENTER),
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
    /// The host's SFC rules from these knobs and the two text lists (the
    /// access list and the devices; empty ones refuse every signal that
    /// [`sfc::Rules::check_sender`] asks about).
    pub fn sfc_rules(&self, acl: sfc::Acl, ifaces: sfc::IfaceList) -> sfc::Rules {
        let enabled = self.sfc_enable == 1;
        sfc::Rules {
            enabled,
            acl: if enabled { acl } else { sfc::Acl::default() },
            ifaces: if enabled { ifaces } else { sfc::IfaceList::default() },
            rate: self.sfc_rate,
            burst: self.sfc_burst,
            max_pause_us: self.sfc_max_pause_us,
            scope_all: self.sfc_scope == 1,
            max_hops: u8::try_from(self.sfc_max_hops.min(sfc::MAX_HOPS)).unwrap_or(0),
        }
    }

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
            low_u_pct: self.low_u_pct,
            qlen_min_filter: self.qlen_min_filter == 1,
            precommit_ref: self.precommit_ref == 1,
        }
    }

    /// Validated HPCC++ parameters for a flow, or why not.
    pub fn hpcc_params(&self, mss: u32, base_rtt_ns: u64) -> Result<HpccParams, ParamError> {
        self.hpcc(mss, base_rtt_ns).validate()
    }

    /// Checks the whole set: each knob against its own [`Range`], then
    /// the relations between knobs (in table order, the first refusal
    /// reported), then the law's and the fallback's own checks of what
    /// the knobs make.
    pub fn validate(&self) -> Result<(), KnobError> {
        let values = self.entries();
        // Indices from a bounded range, not `enumerate()`: its counter is an
        // add that overflow checks would make a panic path.
        let rows = || (0..Knobs::COUNT).zip(TABLE.iter().zip(values)).filter_map(|(i, (row, (_, v)))| Some((i, row.limits?, v)));
        if let Some((i, _, _)) = rows().find(|(_, r, v)| !r.contains(*v)) {
            return Err(KnobError::Range(i));
        }
        if let Some((i, _, _)) = rows().find(|(_, r, v)| !r.relation_holds(*v, self)) {
            return Err(KnobError::Range(i));
        }
        self.fallback().validate().map_err(KnobError::Fallback)?;
        // A representative flow: the configured T, or 1 ms when measured.
        let t_ns = if self.base_rtt_us == 0 { 1_000_000 } else { u64::from(self.base_rtt_us) * 1000 };
        self.hpcc_params(REFERENCE_MSS, t_ns).map_err(KnobError::Hpcc)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::format;

    #[test]
    fn defaults_validate() {
        assert_eq!(Knobs::DEFAULT.validate(), Ok(()));
        assert_eq!(Knobs::DRAFTS.validate(), Ok(()));
        assert_eq!(Knobs::profile("module"), Some(Knobs::DEFAULT));
        assert_eq!(Knobs::profile("drafts"), Some(Knobs::DRAFTS));
        assert_eq!(Knobs::DATACENTER.validate(), Ok(()));
        assert_eq!(Knobs::profile("datacenter"), Some(Knobs::DATACENTER));
        assert_eq!(Knobs::profile("x"), None);
    }

    /// The datacenter profile is the module's but for a line-rate start
    /// (one BDP of 100 Gbit/s x 10 us), the authors' regrowth and AI, and
    /// the current qlen with the 150% pacing cap: what the kernel takes as
    /// the README's `modprobe` line says.
    #[test]
    fn datacenter_is_module_with_a_line_rate_start_and_the_authors_regrowth() {
        let diff: std::vec::Vec<_> = Knobs::DATACENTER
            .entries()
            .into_iter()
            .zip(Knobs::DEFAULT.entries())
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a)
            .collect();
        assert_eq!(
            diff,
            [
                ("init_window_bytes", 125_000),
                ("max_stage", 0),
                ("wai_fair", 0),
                ("rcv_count_scaled", 0),
                ("pace_srtt_cap_pct", 150),
                ("max_increase_pct", 0),
                ("qlen_min_filter", 0)
            ]
        );
        assert_eq!(u64::from(INIT_BYTES_DATACENTER), 100_000_000_000u64 / 8 * 10 / 1_000_000);
        let args: std::vec::Vec<_> = diff.iter().map(|(k, v)| std::format!("{k}={v}")).collect();
        let line = std::format!("modprobe tcp_hpcc {}", args.join(" "));
        assert!(include_str!("../../README.md").contains(&line), "the README's datacenter line: {line}");
        assert!(include_str!("../../docs/results.md").contains(&line), "results.md's datacenter line: {line}");
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

    /// Each knob's own range, from the table: its ends accepted, the
    /// values just outside refused and named.
    #[test]
    fn each_knob_at_and_beyond_its_range() {
        for (i, row) in TABLE.iter().enumerate() {
            let r = row.limits.expect("numeric knobs have a range");
            let text = r.text();
            assert!(!text.as_str().is_empty() && text.as_str() == row.range, "{}", row.name);
            // A set W_ai: eta 10^6 makes the default W_ai rule's 0 (a
            // refusal of the law's own, `relations_between_knobs`).
            let mut k = Knobs { wai_bytes: 1000, ..Knobs::DEFAULT };
            for v in [r.lo, r.hi].into_iter().chain(r.zero.then_some(0)) {
                assert!(k.set(row.name, v));
                // The defaults of the related knobs are the widest
                // (max_cwnd_segs 65535, min_cwnd_segs 2), except the DSCPs.
                if row.name == "response_dscp" && v == k.probe_dscp {
                    continue;
                }
                assert_eq!(k.validate(), Ok(()), "{}={v}", row.name);
            }
            let below = r.lo.checked_sub(1).filter(|&v| !(r.zero && v == 0));
            let above = r.hi.checked_add(1);
            for v in below.into_iter().chain(above) {
                let mut k = Knobs::DEFAULT;
                assert!(k.set(row.name, v));
                assert_eq!(k.validate(), Err(KnobError::Range(i)), "{}={v}", row.name);
                let msg = format!("{}", KnobError::Range(i));
                assert_eq!(msg, format!("{} must be {}", row.name, row.range));
            }
        }
    }

    #[test]
    fn relations_between_knobs() {
        let idx = |n: &str| TABLE.iter().position(|r| r.name == n).unwrap();
        let k = Knobs { min_cwnd_segs: 100, max_cwnd_segs: 99, ..Knobs::DEFAULT };
        assert_eq!(k.validate(), Err(KnobError::Range(idx("min_cwnd_segs"))));
        let k = Knobs { response_dscp: Knobs::DEFAULT.probe_dscp, ..Knobs::DEFAULT };
        assert_eq!(k.validate(), Err(KnobError::Range(idx("response_dscp"))));
        assert_eq!(format!("{}", KnobError::Range(idx("response_dscp"))), "response_dscp must be 1 .. 63, not probe_dscp");
        // In range, but the default W_ai = W_init (1 - eta) / N is 0.
        let k = Knobs { eta_ppm: 1_000_000, wai_bytes: 0, ..Knobs::DEFAULT };
        assert_eq!(k.validate(), Err(KnobError::Hpcc(ParamError::DefaultWaiZero)));
    }

    #[test]
    fn range_texts() {
        let t = |r: Range| format!("{r}");
        assert_eq!(t(Range::ANY), "≥ 0");
        assert_eq!(t(Range::FLAG), "0, 1");
        assert_eq!(t(Range::zero_or(1, 1)), "0, 1");
        assert_eq!(t(Range::span(1, 1 << 31)), "1 .. 2^31");
        assert_eq!(t(Range::span(0, 65536)), "0 .. 2^16");
        assert_eq!(t(Range::span(0, 65535)), "0 .. 65535");
        assert_eq!(t(Range::span(100_000, 10_000_000)), "100000 .. 10^7");
        assert_eq!(t(Range::zero_or(101, 1000)), "0, 101 .. 1000");
        assert_eq!(t(Range::span(2, 9).at_most("b")), "2 .. b");
        assert_eq!(t(Range::span(2, 9).at_least("a")), "a .. 9");
        assert_eq!(t(Range::span(0, u32::MAX - 1)), "0 .. 4294967294");
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
            ("sfc_max_hops", sfc::MAX_HOPS + 1),
        ];
        for &(name, v) in bad {
            let mut k = Knobs::DEFAULT;
            assert!(k.set(name, v));
            assert!(k.validate().is_err(), "{name}={v} accepted");
        }
    }
}
