//! The controller: every decision `hpcc` makes for a connection, as a pure
//! function of what the connection shows.
//!
//! The kernel glue (`rust/tcp_hpcc/hpcc.rs`) reads a [`Conn`] (and the ACK's
//! [`RateSample`], the flow's newest validated [`Response`] and its
//! [`SfcState`]) out of the socket, calls one method here, and applies the
//! decision it gets back: cwnd, pacing rate, whether to probe, whether to
//! take a pending SFC pause, a trace sample and the counters to bump. It
//! decides nothing itself. Knobs reach the algorithm only as a
//! [`Knobs`] snapshot.
//!
//! State lives in two places, as in the kernel:
//!
//! * [`SockCtl`], integers in the socket's `icsk_ca_priv`: the
//!   fallback law, `undo` state, the delivered-BDP bound, the window the
//!   connection started with, and when to retry allocating telemetry state;
//! * [`FlowCtl`], in the flow's out-of-line object, allocated the first
//!   time the connection sends data ([`SockCtl::wants_flow`]): the HPCC++
//!   law, its parameters and T, the probe clock, the path rate, window
//!   validation and SFC bookkeeping.
//!
//! # On every ACK ([`SockCtl::on_ack`])
//!
//! 1. The rate sample feeds the delivered-BDP bound ([`DeliveryBound`]);
//!    within the longest pause and two smoothed RTTs of an SFC pause it
//!    counts as application-limited (it measures the pause).
//! 2. With telemetry state: T follows the flow's minimum RTT when
//!    `base_rtt_us` is 0 (re-validated on a change of more than 1/8); a new
//!    SFC signal asks the glue to take its pending pause and, with
//!    `sfc_window_cut`, cuts W to what the bottleneck carries
//!    ([`WindowCut`], from W before this ACK's response, so that the two
//!    cuts for one queue do not compound); the newest response, if any, is
//!    applied to the law (MeasureInflight / ComputeWind / NewAck with the
//!    probe's `snd_nxt` as the ACKed sequence) after window validation's
//!    bound is set, never below an SFC cut until the queue it answered has
//!    drained ([`WindowCut::floor`]), and yields a trace sample; a probe
//!    is due when data is in flight and the last probe is a probe interval
//!    old.
//! 3. While telemetry is fresh (an update within [`FRESH_INTERVALS`] probe
//!    intervals): cwnd = ⌈W / mss⌉ within TCP's loss response and the
//!    delivered-BDP bound ([`telemetry_cwnd`]) and the cwnd bounds; pacing
//!    R = W/T, at most the path's slowest link (`pace_at_link_rate`) and
//!    `pace_srtt_cap_pct`% of W per smoothed RTT.
//! 4. Otherwise the fallback ([`Fallback`]): additive increase while
//!    cwnd-limited, `min(cwnd, ssthresh)` in CWR/Recovery, and TCP's usual
//!    pacing at 1.2 (or 2 below ssthresh/2) times cwnd per smoothed RTT.

use super::fallback::Fallback;
use super::guard::{init_cwnd, telemetry_cwnd, Capped, DeliveryBound};
use super::knobs::Knobs;
use super::law::{srtt_pacing_cap, Event, HpccFlow};
use super::params::HpccParams;
use super::{budget, probe};
use super::sfc::{self, WindowCut};
use super::wire;

/// T used until the flow has an RTT sample, when `base_rtt_us` is 0.
pub const DEFAULT_BASE_RTT_NS: u64 = 1_000_000;

/// Telemetry is fresh for this many probe intervals after an update.
pub const FRESH_INTERVALS: u64 = 8;

/// After a flow could not get telemetry state (netns limit, churn bound,
/// no memory), it runs the fallback and tries again after this long.
pub const STATE_RETRY_NS: u64 = 100_000_000;

/// What the connection shows at a hook (the `tcp_sock` fields, as TCP
/// keeps them; RTTs 0 or `u32::MAX` when unknown). `repr(C)`: also
/// `struct hpcc_conn` of the C ABI (include/hpcc_ffi.h, checked by
/// rust/hpcc_ffi's tests), as are the records below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Conn {
    /// Host clock, ns.
    pub now_ns: u64,
    /// `mss_cache`, bytes.
    pub mss: u32,
    /// `snd_cwnd`, segments.
    pub cwnd: u32,
    /// `snd_ssthresh`, segments.
    pub ssthresh: u32,
    /// `srtt_us >> 3`, µs.
    pub srtt_us: u32,
    /// `tcp_min_rtt()`, µs.
    pub min_rtt_us: u32,
    /// `packets_out`, segments.
    pub packets_out: u32,
    /// `tcp_packets_in_flight()`, segments.
    pub in_flight: u32,
    /// `snd_nxt`.
    pub snd_nxt: u32,
    /// `tcp_in_cwnd_reduction()`: CWR or Recovery.
    pub in_reduction: bool,
    /// `tcp_is_cwnd_limited()`.
    pub cwnd_limited: bool,
    /// `sk_max_pacing_rate` (`SO_MAX_PACING_RATE`), bytes/s: the kernel
    /// paces at most at this, whatever rate is set; `u64::MAX` without it.
    pub max_pacing_rate: u64,
}

impl Default for Conn {
    fn default() -> Self {
        Self {
            now_ns: 0,
            mss: 0,
            cwnd: 0,
            ssthresh: 0,
            srtt_us: 0,
            min_rtt_us: 0,
            packets_out: 0,
            in_flight: 0,
            snd_nxt: 0,
            in_reduction: false,
            cwnd_limited: false,
            max_pacing_rate: u64::MAX,
        }
    }
}

impl Conn {
    /// How long an SFC pause or cut taken now may still show in what the
    /// connection sees (rate samples, losses): [`sfc::cut_reach_until`]
    /// with the longest pause and the smoothed RTT.
    fn sfc_reach_until(&self, k: &Knobs) -> u64 {
        sfc::cut_reach_until(self.now_ns, k.sfc_max_pause_us, u64::from(self.srtt_us).saturating_mul(1000))
    }
}

/// The ACK's `struct rate_sample`, where TCP gave one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RateSample {
    /// Segments delivered over the interval (negative values as 0).
    pub delivered: u32,
    /// The interval, µs (0: invalid).
    pub interval_us: u64,
    /// Segments in flight before this ACK.
    pub prior_in_flight: u32,
    /// Segments this ACK acknowledged or SACKed.
    pub acked_sacked: u32,
    /// Whether the sample was application-limited.
    pub app_limited: bool,
}

/// The flow's newest validated probe response (nonce already checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// Host clock when it arrived, ns.
    pub rx_ns: u64,
    /// The `snd_nxt` its probe was sent at.
    pub snd_nxt: u32,
    /// The INT stack it carried (Figure 4).
    pub int: &'a [u8],
}

/// The flow's SFC signal cell as the receive hook last wrote it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SfcState {
    /// Bumped by every accepted signal.
    pub gen: u32,
    /// The signal's queue length, bytes.
    pub qlen: u32,
    /// The signalling port's speed code (`wire::RATES`).
    pub speed: u8,
    /// The longest silence before a signal the receive hook accepted since
    /// the ACK path last took the cell, ns (measured from the signal
    /// before it, whether or not an ACK took that one; the first signal of
    /// a flow counts as after a long silence). 0: not measured.
    pub gap_ns: u64,
}

/// Something a hook did that the module counts (one per counter of
/// `/proc/net/hpcc_stat` the controller drives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Note {
    /// cwnd and pacing came from telemetry.
    HpccAck,
    /// cwnd and pacing came from the fallback.
    FallbackAck,
    /// TCP's reduction lowered what telemetry asked for.
    CappedByReduction,
    /// The delivered-BDP bound lowered what telemetry asked for.
    CappedByDelivery,
    /// The response's INT stack did not parse.
    ResponseBadInt,
    /// The flow's first response.
    FirstTelemetry,
    /// A sample updated W.
    SampleApplied,
    /// A sample only recorded the path.
    SampleRecorded,
    /// A sample found a new path.
    SamplePathChanged,
    /// A stale sample changed nothing.
    SampleStale,
    /// An SFC signal cut W.
    SfcWindowCut,
}

/// A set of [`Note`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notes(u16);

impl Notes {
    /// Adds `n`.
    pub fn add(&mut self, n: Note) {
        self.0 |= 1 << (n as u8);
    }

    /// The set as bits: `1 << n` for each [`Note`] `n` in it.
    pub fn bits(self) -> u16 {
        self.0
    }

    /// Whether `n` is in the set.
    pub fn has(&self, n: Note) -> bool {
        self.0 & (1 << (n as u8)) != 0
    }

    /// The notes in the set.
    pub fn iter(self) -> impl Iterator<Item = Note> {
        const ALL: [Note; 11] = [
            Note::HpccAck,
            Note::FallbackAck,
            Note::CappedByReduction,
            Note::CappedByDelivery,
            Note::ResponseBadInt,
            Note::FirstTelemetry,
            Note::SampleApplied,
            Note::SampleRecorded,
            Note::SamplePathChanged,
            Note::SampleStale,
            Note::SfcWindowCut,
        ];
        ALL.into_iter().filter(move |n| self.has(*n))
    }
}

/// The field list of [`TraceSample`], its one declaration: name, type and
/// meaning, in the order of `struct hpcc_trace_rec` (include/hpcc_shim.h)
/// and the `tcp_hpcc:hpcc_sample` tracepoint's entry. `trace_sample_fields!(m)`
/// calls `m! { field: type, "doc"; ... }`: this file builds the struct, the
/// kernel glue the C record and its layout assertions, and a host test
/// (`tests/trace_fields.rs`) checks the C header and the tracepoint.
macro_rules! trace_sample_fields {
    ($m:ident) => {
        $m! {
            event: u8, "0 recorded, 1 path changed, 2 updated, 3 committed, 4 stale.";
            hop: u8, "Index of the most loaded hop.";
            n_hops: u8, "Hops in the response.";
            inc_stage: u8, "incStage after the sample.";
            u_ppm: u32, "U after the sample, ppm.";
            sample_u_ppm: u32, "The chosen hop's u', ppm.";
            qlen: u32, "The chosen hop's queue, bytes.";
            window: u32, "W after the sample (and an SFC floor or count cut), bytes.";
            wc: u32, "Wc, bytes.";
            cwnd: u32, "The cwnd before this ACK, segments.";
            inflight: u32, "Segments in flight.";
            srtt_us: u32, "Smoothed RTT, µs.";
            base_rtt_us: u32, "T, µs.";
            pacing_rate: u64, "The law's pacing rate after the sample, bytes/s.";
            path_rate: u64, "Slowest INT link of the path, bytes/s.";
        }
    };
}
#[allow(unused_imports)] // used by the kernel crate (rust/tcp_hpcc/hpcc.rs)
pub(crate) use trace_sample_fields;

/// Builds [`TraceSample`] from [`trace_sample_fields!`].
macro_rules! trace_sample_struct {
    ($($field:ident: $ty:ty, $doc:literal;)*) => {
        /// One applied response, for the `tcp_hpcc:hpcc_sample` tracepoint
        /// (`struct hpcc_trace_rec`, field for field).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        #[repr(C)]
        pub struct TraceSample {
            $(#[doc = $doc] pub $field: $ty,)*
        }

        impl TraceSample {
            /// Each field's name and Rust type, in order.
            pub const FIELDS: &[(&str, &str)] = &[$((stringify!($field), stringify!($ty)),)*];

            /// How many fields there are.
            pub const N_FIELDS: usize = [$(stringify!($field),)*].len();

            /// Each field widened to a `u64`, in order: a copy that
            /// atomics can hold (the flow listing's).
            pub fn to_words(&self) -> [u64; Self::N_FIELDS] {
                [$(u64::from(self.$field),)*]
            }

            /// The sample back from [`TraceSample::to_words`]'s words (a
            /// word too wide for its field reads as 0).
            pub fn from_words(w: &[u64; Self::N_FIELDS]) -> Self {
                let mut it = w.iter().copied();
                Self { $($field: <$ty>::try_from(it.next().unwrap_or(0)).unwrap_or(0),)* }
            }
        }
    };
}

trace_sample_fields!(trace_sample_struct);

/// The `tcp_hpcc:hpcc_ctl` record's hook and flags (`enum hpcc_ctl_hook`
/// and `HPCC_CTL_*` of include/hpcc_shim.h; the kernel glue asserts at
/// build time that they agree): each hook's inputs and decision, for
/// `hpcc-replay --ctl`.
pub mod ctl_rec {
    /// `init`.
    pub const HOOK_INIT: u8 = 0;
    /// `cong_control`.
    pub const HOOK_ACK: u8 = 1;
    /// `cwnd_event(CA_EVENT_TX_START)`.
    pub const HOOK_TX_START: u8 = 2;
    /// `ssthresh`.
    pub const HOOK_SSTHRESH: u8 = 3;
    /// [`super::Conn::in_reduction`].
    pub const IN_REDUCTION: u16 = 0x0001;
    /// [`super::Conn::cwnd_limited`].
    pub const CWND_LIMITED: u16 = 0x0002;
    /// The ACK had a rate sample.
    pub const HAS_RS: u16 = 0x0004;
    /// [`super::RateSample::app_limited`].
    pub const RS_APP_LIMITED: u16 = 0x0008;
    /// The flow had telemetry state ([`super::FlowCtl`]).
    pub const HAS_FLOW: u16 = 0x0010;
    /// ... created by this hook.
    pub const FLOW_CREATED: u16 = 0x0020;
    /// Creating it failed ([`super::SockCtl::flow_refused`]).
    pub const FLOW_REFUSED: u16 = 0x0040;
    /// A new response was taken from the mailbox.
    pub const HAS_RESPONSE: u16 = 0x0080;
    /// A probe was sent ([`super::FlowCtl::probe_sent`]).
    pub const PROBED: u16 = 0x0100;
    /// [`super::AckDecision::take_pause`].
    pub const TAKE_PAUSE: u16 = 0x0200;
    /// `init`: the socket had sent data before.
    pub const HAS_SENT_DATA: u16 = 0x0400;
    /// A probe was due but the namespace's probe budget held it back
    /// ([`super::FlowCtl::admit_probe`]).
    pub const PROBE_HELD: u16 = 0x0800;
}

/// What an ACK decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckDecision {
    /// cwnd to set, segments.
    pub cwnd: u32,
    /// Pacing rate to set, bytes/s.
    pub pacing_rate: u64,
    /// `sk_pacing_shift` to set ([`pacing_shift`]): the knob, or with 0
    /// from the flow's T (from the minimum RTT without flow state). Set on
    /// every ACK: a knob changed at runtime reaches the socket, and
    /// [`AckDecision::tso_segs`] is computed with the shift in force.
    pub pacing_shift: u8,
    /// The most segments one TSO skb may carry ([`tso_segs`]) while
    /// telemetry sets the window, to apply through [`GsoCap`]; 0 without
    /// it: the route's own limit.
    pub tso_segs: u16,
    /// Send a probe now (then call [`FlowCtl::probe_sent`]).
    pub probe: bool,
    /// A new SFC signal: take the flow's pending pause and apply it.
    pub take_pause: bool,
    /// A response was applied: fire the tracepoint with this.
    pub trace: Option<TraceSample>,
    /// Counters to bump.
    pub notes: Notes,
}

/// What `init` decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct InitDecision {
    /// cwnd and ssthresh to set, segments (no exponential probe from a
    /// small window: additive increase from about line rate).
    pub cwnd: u32,
    /// ssthresh to set, segments.
    pub ssthresh: u32,
    /// `sk_pacing_shift` to set ([`pacing_shift`]).
    pub pacing_shift: u8,
    /// Pacing rate to set, bytes/s.
    pub pacing_rate: u64,
}

/// T for a flow: the `base_rtt_us` knob, or the flow's minimum RTT.
pub fn base_rtt_ns(k: &Knobs, min_rtt_us: u32) -> u64 {
    if k.base_rtt_us != 0 {
        return u64::from(k.base_rtt_us) * 1000;
    }
    match min_rtt_us {
        0 | u32::MAX => DEFAULT_BASE_RTT_NS,
        us => u64::from(us) * 1000,
    }
}

/// `sk_pacing_shift` for a flow whose T is `base_rtt_ns`: the
/// `pacing_shift` knob, or with 0 the smallest shift in 8..=16 whose bursts
/// (2^-shift s of the pacing rate) last at most T/16, so that a burst adds
/// at most 1/16 of a BDP to the bottleneck's queue:
/// `ceil(log2(16 s / T))` (13 for T = 2 ms, 16 below 244 µs).
pub fn pacing_shift(k: &Knobs, base_rtt_ns: u64) -> u8 {
    if let Ok(s) = u8::try_from(k.pacing_shift) {
        if s != 0 {
            return s;
        }
    }
    let per_burst_ns = base_rtt_ns / 16;
    (8u8..=16).find(|&s| 1_000_000_000u64 >> s <= per_burst_ns).unwrap_or(16)
}

/// The most segments one TSO skb may carry at `pacing_rate` (bytes/s):
/// the burst `pacing_shift` stands for, `pacing_rate >> shift` bytes, in
/// whole segments of `mss`, at least one.
///
/// TCP sizes TSO skbs itself (`tcp_tso_autosize`) as that burst plus
/// `gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`: 8 KB more at a 2 ms
/// minimum RTT and the whole 64 KB below 512 µs, whatever the shift. A
/// flow's probe leaves ahead of its own burst, so it never sees that burst
/// queued, while every other flow's probes do: the flow with the largest
/// bursts reads the smallest queue and keeps growing, and fairness after
/// a join suffers. With TSO skbs of this size every flow's probes see the
/// same queue (docs/results.md#measurements-behind-the-controllers-rules).
///
/// Only while telemetry sets the window: `sk_gso_max_segs` also sizes the
/// skbs `sendmsg` builds, and a connection's first writes, before its
/// first response, would otherwise be built of one-segment skbs, which
/// costs a sender's CPU the time it needs to start.
pub fn tso_segs(pacing_rate: u64, shift: u8, mss: u32) -> u16 {
    let bytes = pacing_rate.checked_shr(u32::from(shift)).unwrap_or(0);
    u16::try_from(bytes / u64::from(mss.max(1))).unwrap_or(u16::MAX).max(1)
}

/// Applies [`AckDecision::tso_segs`] to the socket's `sk_gso_max_segs`
/// (`tcp_tso_segs` takes the smaller of its own size and that field)
/// without losing the route's limit, which `sk_setup_caps` keeps in the
/// same field, and gives that limit back when the socket leaves hpcc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct GsoCap {
    /// The route's limit, as last found in the field.
    route: u16,
    /// What [`GsoCap::apply`] wrote last (0: nothing yet).
    set: u16,
}

impl GsoCap {
    /// The field holds `current`; returns what to write so that a TSO skb
    /// carries at most `want` segments (0: no cap) and never more than
    /// the route allows. A value other than the last one written is the
    /// route's (a new route since): it becomes the limit. `can_gso`
    /// false (`sk_can_gso`: a route without GSO, or a socket with GSO
    /// disabled, as for TCP-MD5 keys): the limit is one segment, as
    /// `sk_setup_caps` would write, even when it wrote the value we had
    /// written ourselves.
    pub fn apply(&mut self, current: u16, want: u16, can_gso: bool) -> u16 {
        if self.set == 0 || current != self.set {
            self.route = current;
        }
        if !can_gso {
            self.route = 1;
        }
        let route = self.route.max(1);
        self.set = if want == 0 { route } else { want.clamp(1, route) };
        self.set
    }

    /// The socket leaves hpcc with `current` in the field: the route's
    /// limit to write back (one segment without GSO), unless the field is
    /// not ours any more.
    pub fn restore(&self, current: u16, can_gso: bool) -> Option<u16> {
        let route = if can_gso { self.route } else { 1 };
        (self.set != 0 && current == self.set && route != self.set).then_some(route)
    }
}

/// TCP's default pacing: 200% of cwnd·mss per smoothed RTT below
/// ssthresh/2, else 120% (`tcp_update_pacing_rate`); unlimited without
/// an RTT sample.
pub fn default_pacing(cwnd: u32, ssthresh: u32, packets_out: u32, mss: u32, srtt_us: u32) -> u64 {
    let segs = cwnd.max(packets_out);
    let ratio: u64 = if cwnd < ssthresh / 2 { 200 } else { 120 };
    let bytes = u64::from(mss).saturating_mul(u64::from(segs)).saturating_mul(ratio) / 100;
    match srtt_us {
        0 => u64::MAX,
        us => bytes.saturating_mul(1_000_000) / u64::from(us),
    }
}

/// W_ai from the path (`wai_path` 1 with `wai_bytes` 0): the drafts'
/// W_init·(1−η)/N with W_init the window the path holds, and N the
/// receiver's flow count (`rcv_flows`, section 6.3.2) or else
/// `expected_flows`, halved: N flows then add (1−η)/2 of that window per
/// update together, so U settles at η + (1−η)/2 rather than at 1. `None`
/// while the path is unknown (`path_rate` 0) or the knobs fix W_ai.
///
/// The window the path holds is min(B_j)·RTT. The drafts take RTT = T, the
/// base RTT; with `wai_fair` 2 (the default) it is max(T, srtt), the
/// flow's smoothed RTT (`srtt_us`), at most N path caps (`path_cap_pct`%
/// of B·T, the most the law lets one window hold), and each flow's W_ai is then scaled by
/// the square of its fair share of that window, B·RTT/N, over its
/// reference window `wc_bytes` ([`fair_wai_bytes`]). With `wai_fair` 1 both
/// use T; with 0, T and no scaling.
///
/// Why srtt: a window carries W/srtt, not W/T. Where host delay makes
/// srtt a multiple of T, the windows that fill the path are that multiple
/// of B·T/N. Against B·T/N every flow then sits above its share. At
/// srtt = 1.9 T (the VM at 200 Mbit/s), (F/Wc)² is about 0.3 for every
/// flow, so all are held at the floor of W_ai/2 and the scaling no longer
/// pulls them together; and the additive step, the same bytes against
/// windows 1.9 times larger, pulls 1.9 times more weakly. In the fluid
/// model with 0.9 T of host delay (`hpcc_sim`'s
/// `a_late_joiner_shares_within_ten_percent_despite_host_delay`), the
/// late joiner's flows stayed up to 16% from the mean with T. With srtt
/// they stayed within 5%, and utilization went from 0.90 to 0.94, where it
/// is without host delay.
pub fn path_wai_bytes(k: &Knobs, path_rate: u64, base_rtt_ns: u64, srtt_us: u32, rcv_flows: u16, wc_bytes: u32) -> Option<u32> {
    if k.wai_path != 1 || k.wai_bytes != 0 || path_rate == 0 {
        return None;
    }
    let n = match rcv_flows {
        0 => u64::from(k.expected_flows.max(1)),
        n => u64::from(n),
    };
    // B·T: bytes/s (below 2^37 for 800 Gb/s) times µs (at most 10^6).
    let t_us = base_rtt_ns / 1000;
    let bdp = path_rate.saturating_mul(t_us) / 1_000_000;
    let held = match k.wai_fair {
        // B·srtt saturates only for an srtt above 10^5 s. No flow's
        // window exceeds the path cap, path_cap_pct% of B·T: N flows hold
        // at most N of it (one flow alone, whose srtt is longer than T,
        // gets the W_ai of a window at the cap).
        2 => {
            let at_srtt = path_rate.saturating_mul(t_us.max(u64::from(srtt_us))) / 1_000_000;
            match k.path_cap_pct {
                0 => at_srtt,
                pct => at_srtt.min((bdp.saturating_mul(u64::from(pct)) / 100).saturating_mul(n)),
            }
        }
        _ => bdp,
    };
    let spare = u64::from(1_000_000u32.saturating_sub(k.eta_ppm));
    let w = (held.saturating_mul(spare) / 1_000_000).checked_div(n.saturating_mul(2)).unwrap_or(0);
    let w = u32::try_from(w).unwrap_or(u32::MAX).max(1);
    Some(match k.wai_fair {
        0 => w,
        _ => fair_wai_bytes(w, held.checked_div(n).unwrap_or(0), wc_bytes),
    })
}

/// W_ai scaled by the square of a flow's fair share over its reference
/// window: `wai·(fair/wc)²`, within `wai/2` and `2·wai` (`wai` itself
/// while `wc` or `fair` is 0).
///
/// Why: the law's multiplicative step scales every window by the same
/// eta/U and keeps their ratios; only the additive step, the same bytes
/// for every flow, pulls them together, by (U − eta)/U of the difference
/// per multiplicative step (1.5–2.5% where U settles). Each flow reads U
/// from its own probe, one snapshot of a bursty queue per RTT, so every
/// flow's U carries its own noise, and that weak pull left windows 1.2–1.4
/// times apart for seconds (the fluid model with the probes' backlog the
/// VM measured, `hpcc_sim::module`, and the VM's late joiner). Scaled by
/// (fair/wc)², the additive step pulls three times as hard near the fair
/// share (W_ai/W goes as W^-3 instead of W^-1), and the flows together
/// still add about the same bytes, so U settles where it did. The square
/// against the plain ratio, in the fluid model with 1,000 to 2,000 B of
/// backlog per probe: every 1-second window after the join within 5–7%
/// of the mean against 7–15% (docs/results.md). N is the receiver's
/// count: if it is wrong, the bounds keep each flow's W_ai within a
/// factor of two of the unscaled one.
pub fn fair_wai_bytes(wai: u32, fair: u64, wc: u32) -> u32 {
    if wc == 0 || fair == 0 {
        return wai;
    }
    // Exact wide products, divided without u128 division (the kernel has
    // none); a quotient of 2^64 or more is above the bound anyway, and a
    // first quotient above the bound stays there.
    let hi = u64::from(wai).saturating_mul(2);
    let wide = |x: u64| super::fixed::div_wide(super::fixed::mul_wide(x, fair), u64::from(wc)).unwrap_or(u64::MAX);
    let scaled = wide(wide(u64::from(wai)).min(hi.saturating_mul(2)));
    // max then min, not clamp: clamp asserts min <= max, a panic path.
    u32::try_from(scaled.max(u64::from(wai / 2).max(1)).min(hi)).unwrap_or(u32::MAX)
}

/// A Q23.40 fraction in parts per million, saturating.
pub fn q40_to_ppm(q: u64) -> u32 {
    u32::try_from(u128::from(q).saturating_mul(1_000_000) >> 40).unwrap_or(u32::MAX)
}

/// A flow's HPCC++ state: the law, its parameters, the probe clock.
#[derive(Debug, Clone)]
pub struct FlowCtl {
    law: HpccFlow,
    params: HpccParams,
    /// The T the parameters were built with, ns.
    base_rtt_ns: u64,
    /// When the last probe left, ns.
    last_probe_ns: u64,
    /// When the last sample updated the window, ns (0: never).
    last_update_ns: u64,
    /// Probes sent (selects the nonce slot).
    probes: u32,
    /// The slowest link of the path as the last response reported it,
    /// bytes/s (0: unknown).
    path_rate: u64,
    /// Most segments in flight since the last applied sample (window
    /// validation).
    max_in_flight: u32,
    /// The receiver's flow count the last response carried (0: none).
    rcv_flows: u16,
    /// Whether a response was applied yet.
    had_response: bool,
    /// The SFC signal generation last acted on.
    sfc_gen: u32,
    /// SFC window cuts (no compounding within an RTT).
    sfc_cut: WindowCut,
    /// Until when rate samples may measure an SFC pause, not the path,
    /// ns (0: none).
    sfc_held_until_ns: u64,
    /// The flow's side of its namespace's probe budget.
    budget: budget::FlowState,
    /// The budget held a due probe since the last one left.
    held: bool,
    /// When [`FlowCtl::admit_probe`] last held one back, ns (0: never).
    held_at_ns: u64,
    /// When the budget held the last probe back: the time between it and
    /// the one before, at most [`probe::MAX_INTERVAL_NS`] (0: not held).
    /// Telemetry stays fresh for [`FRESH_INTERVALS`] of these, as it does
    /// for [`FRESH_INTERVALS`] probe intervals.
    held_gap_ns: u64,
}

impl FlowCtl {
    /// A new flow's state; `None` if the knobs give no valid parameters
    /// for this MSS and T.
    pub fn new(k: &Knobs, c: &Conn) -> Option<Self> {
        let t = base_rtt_ns(k, c.min_rtt_us);
        let params = k.hpcc_params(c.mss, t).ok()?;
        Some(Self {
            law: HpccFlow::new(&params),
            params,
            base_rtt_ns: t,
            last_probe_ns: 0,
            last_update_ns: 0,
            probes: 0,
            path_rate: 0,
            max_in_flight: 0,
            rcv_flows: 0,
            had_response: false,
            sfc_gen: 0,
            sfc_cut: WindowCut::default(),
            sfc_held_until_ns: 0,
            budget: budget::FlowState::default(),
            held: false,
            held_at_ns: 0,
            held_gap_ns: 0,
        })
    }

    /// The law's state.
    pub fn law(&self) -> &HpccFlow {
        &self.law
    }

    /// T, ns.
    pub fn base_rtt_ns(&self) -> u64 {
        self.base_rtt_ns
    }

    /// The slowest link of the path, bytes/s (0: unknown).
    pub fn path_rate(&self) -> u64 {
        self.path_rate
    }

    /// When the last sample updated W, ns (0: never).
    pub fn last_update_ns(&self) -> u64 {
        self.last_update_ns
    }

    /// The probe interval ([`probe::interval_ns`]).
    fn probe_interval_ns(&self, k: &Knobs, srtt_us: u32) -> u64 {
        probe::interval_ns(k.probe_interval_us, k.probe_min_interval_us, srtt_us, self.base_rtt_ns)
    }

    /// At a transmit start: whether to send a probe now, ahead of the
    /// data. The ACK path probes only with data in flight, so its first
    /// probe would leave one RTT after the data and the first update (two
    /// samples) come three RTTs in; a probe ahead of the data records the
    /// path now, and the first update comes one RTT earlier. A probe is
    /// sent only when one is due ([`FlowCtl::probe_due`]).
    pub fn probe_at_tx_start(&self, k: &Knobs, c: &Conn) -> bool {
        self.probe_due(k, c)
    }

    /// Whether a probe is due now: telemetry on and a probe interval since
    /// the last one. (The ACK path also wants data in flight; at
    /// `CA_EVENT_TX_START` the data is about to leave.)
    pub fn probe_due(&self, k: &Knobs, c: &Conn) -> bool {
        k.telemetry == 1 && c.now_ns.saturating_sub(self.last_probe_ns) >= self.probe_interval_ns(k, c.srtt_us)
    }

    /// The probe spacing a probe sent now carries (`rcv_count_scaled` 1;
    /// else 0, not said): the probe interval, or, if the budget held this
    /// probe back within the last interval, the time since the last one if
    /// longer; in us, 1 to `wire::MAX_PROBE_SPACING_US`. The receiver
    /// counts flows for this probe over windows of at least two of it
    /// (`rcvcount::scale_for`). A flow that was idle says its interval:
    /// its pause says nothing of how often the others probe. Call it
    /// before [`FlowCtl::probe_sent`].
    pub fn probe_spacing_us(&self, k: &Knobs, c: &Conn) -> u16 {
        if k.rcv_count_scaled == 0 {
            return 0;
        }
        let mut ns = self.probe_interval_ns(k, c.srtt_us);
        // Held since the last probe left, and within the last interval.
        let held_now = self.held_at_ns > self.last_probe_ns && c.now_ns.saturating_sub(self.held_at_ns) <= ns;
        if held_now && self.last_probe_ns != 0 {
            ns = ns.max(c.now_ns.saturating_sub(self.last_probe_ns));
        }
        u16::try_from(ns.div_ceil(1000)).unwrap_or(u16::MAX).max(1).min(wire::MAX_PROBE_SPACING_US)
    }

    /// A probe left at `now_ns`; returns its sequence number (the nonce
    /// slot).
    pub fn probe_sent(&mut self, now_ns: u64) -> u32 {
        let slot = self.probes;
        self.probes = self.probes.wrapping_add(1);
        self.budget.sent(self.last_probe_ns, now_ns);
        self.held_gap_ns = match (self.held, self.last_probe_ns) {
            (true, last) if last != 0 => now_ns.saturating_sub(last).min(probe::MAX_INTERVAL_NS),
            _ => 0,
        };
        self.held = false;
        self.last_probe_ns = now_ns;
        slot
    }

    /// Whether the namespace's probe budget `b` lets a due probe leave now
    /// ([`budget::FlowState::admit`]: the flow's fair share,
    /// pairs, the namespace's cap); `probe_budget` 0 always does. Call it
    /// only for a probe that is due, and [`FlowCtl::probe_sent`] after a
    /// [`budget::Admit::Send`].
    pub fn admit_probe(&mut self, k: &Knobs, b: &budget::Budget, c: &Conn) -> budget::Admit {
        let interval = self.probe_interval_ns(k, c.srtt_us);
        let a = self.budget.admit(b, k.probe_budget, interval, self.last_probe_ns, c.now_ns);
        if a != budget::Admit::Send {
            self.probe_held();
            self.held_at_ns = c.now_ns;
        }
        a
    }

    /// The budget held a due probe back ([`FlowCtl::admit_probe`] calls
    /// it; a replay of a trace calls it for each `PROBE_HELD`).
    pub fn probe_held(&mut self) {
        self.held = true;
    }

    /// The pacing rate: R = W/T, at most the path's slowest link (with
    /// `pace_at_link_rate`) and `pace_srtt_cap_pct`% of W per smoothed RTT
    /// ([`srtt_pacing_cap`]).
    pub fn pacing_rate(&self, k: &Knobs, srtt_us: u32) -> u64 {
        let w = self.law.window_bytes();
        let mut rate = self.law.pacing_rate(&self.params);
        if self.path_rate != 0 && k.pace_at_link_rate == 1 {
            rate = rate.min(self.path_rate);
        }
        rate.min(srtt_pacing_cap(w, k.pace_srtt_cap_pct, srtt_us))
    }

    /// Follows the flow's minimum RTT when T is measured.
    fn follow_rtt(&mut self, k: &Knobs, c: &Conn) {
        if k.base_rtt_us != 0 {
            return;
        }
        let t = base_rtt_ns(k, c.min_rtt_us);
        if t.abs_diff(self.base_rtt_ns) > self.base_rtt_ns / 8 {
            if let Ok(p) = k.hpcc_params(c.mss, t) {
                self.params = p;
                self.base_rtt_ns = t;
                self.follow_path(k, c.srtt_us);
            }
        }
    }

    /// W_ai from the path, if the knobs ask for it ([`path_wai_bytes`]).
    fn follow_path(&mut self, k: &Knobs, srtt_us: u32) {
        let wc = self.law.wc_bytes();
        if let Some(w) = path_wai_bytes(k, self.path_rate, self.base_rtt_ns, srtt_us, self.rcv_flows, wc) {
            self.params = self.params.with_wai_bytes(w);
        }
    }

    /// A new SFC signal: `true` if the glue should take the pause.
    /// `w_before`: W before this ACK's response (a cut the law made for
    /// the same queue on this ACK does not compound with the signal's).
    fn on_sfc(&mut self, k: &Knobs, c: &Conn, s: &SfcState, w_before: u32, notes: &mut Notes) -> bool {
        if s.gen == self.sfc_gen {
            return false;
        }
        self.sfc_gen = s.gen;
        self.sfc_held_until_ns = c.sfc_reach_until(k);
        if k.sfc_window_cut == 1 {
            // The signalling port is on the flow's path, so it runs no
            // slower than the slowest link the flow's telemetry shows: a
            // lower speed code contradicts the telemetry and would cut
            // deeper than the port's queue warrants.
            let signalled = wire::rate_info(s.speed).map_or(0, |r| r.bps());
            let rate = signalled.max(self.path_rate.saturating_mul(8));
            let eta = self.params.config().eta_ppm;
            let w = self.law.window_bytes().max(w_before);
            let cut = self.sfc_cut.on_signal(w, s.qlen, rate, self.base_rtt_ns, eta, 0, c.now_ns, self.rcv_flows, s.gap_ns);
            self.law.cut(&self.params, cut);
            self.sfc_cut.settle(self.law.window_bytes());
            if self.rcv_flows == 0 {
                // The count may come with the first response: it still
                // applies within the longest pause and two T after.
                self.sfc_cut.await_count(rate, sfc::cut_reach_until(c.now_ns, k.sfc_max_pause_us, self.base_rtt_ns));
            }
            self.last_update_ns = c.now_ns;
            notes.add(Note::SfcWindowCut);
        }
        true
    }

    /// Applies a response; the trace sample, `None` if its INT stack is
    /// malformed.
    fn on_response(&mut self, k: &Knobs, c: &Conn, r: &Response<'_>, notes: &mut Notes) -> Option<TraceSample> {
        let Ok(stack) = wire::parse(r.int) else {
            notes.add(Note::ResponseBadInt);
            return None;
        };
        if !self.had_response {
            self.had_response = true;
            notes.add(Note::FirstTelemetry);
        }
        self.path_rate = stack
            .hops()
            .iter()
            .filter_map(|h| wire::rate_info(h.rate))
            .map(|r| r.bps() / 8)
            .min()
            .unwrap_or(0);
        self.rcv_flows = wire::rcv_flows(r.int);
        self.follow_path(k, c.srtt_us);
        // Window validation: the most the flow had in flight since the last
        // sample bounds how far this one can raise W.
        let used = self.max_in_flight.saturating_mul(c.mss);
        self.law.set_used_window((k.window_validation == 1).then_some(used));
        self.max_in_flight = c.in_flight;
        let o = self.law.on_stack(&self.params, &stack, r.rx_ns, r.snd_nxt, c.snd_nxt);
        if let Some(w) = self.sfc_cut.floor(c.now_ns) {
            self.law.hold(w);
        }
        let eta = self.params.config().eta_ppm;
        self.sfc_cut.on_sample(q40_to_ppm(self.law.u_q40()) >= eta);
        let event = match o.event {
            Event::Recorded => 0,
            Event::PathChanged => 1,
            Event::Updated => 2,
            Event::Committed => 3,
            Event::Stale(_) => 4,
        };
        notes.add(match o.event {
            Event::Updated | Event::Committed => {
                self.last_update_ns = c.now_ns;
                Note::SampleApplied
            }
            Event::Recorded => Note::SampleRecorded,
            Event::PathChanged => Note::SamplePathChanged,
            Event::Stale(_) => Note::SampleStale,
        });
        if let Some(w) = self.sfc_cut.on_count(self.law.window_bytes(), self.rcv_flows, self.base_rtt_ns, eta, 0, c.now_ns) {
            self.law.cut(&self.params, w);
            self.last_update_ns = c.now_ns;
            notes.add(Note::SfcWindowCut);
        }
        let qlen = stack.hops().get(usize::from(o.hop)).map_or(0, |h| {
            let shift = wire::rate_info(h.rate).map_or(0, |r| r.unit_shift);
            u64::from(h.qlen).checked_shl(shift).unwrap_or(u64::MAX)
        });
        Some(TraceSample {
            event,
            hop: o.hop,
            n_hops: stack.n_hops,
            inc_stage: u8::try_from(self.law.inc_stage()).unwrap_or(u8::MAX),
            u_ppm: q40_to_ppm(self.law.u_q40()),
            sample_u_ppm: q40_to_ppm(o.sample_u_q40),
            qlen: u32::try_from(qlen).unwrap_or(u32::MAX),
            window: self.law.window_bytes(),
            wc: self.law.wc_bytes(),
            cwnd: c.cwnd,
            inflight: c.in_flight,
            srtt_us: c.srtt_us,
            base_rtt_us: u32::try_from(self.base_rtt_ns / 1000).unwrap_or(u32::MAX),
            pacing_rate: self.pacing_rate(k, c.srtt_us),
            path_rate: self.path_rate,
        })
    }

    /// The HPCC++ part of an ACK: `Some((W, R))` while telemetry is fresh.
    fn on_ack(
        &mut self,
        k: &Knobs,
        c: &Conn,
        prior_in_flight: u32,
        response: Option<&Response<'_>>,
        sfc: &SfcState,
        d: &mut AckDecision,
    ) -> Option<(u32, u64)> {
        self.follow_rtt(k, c);
        d.pacing_shift = pacing_shift(k, self.base_rtt_ns);
        self.max_in_flight = self.max_in_flight.max(c.in_flight).max(prior_in_flight);
        // The response first: a signal on the same ACK then knows the
        // receiver's flow count.
        let w_before = self.law.window_bytes();
        if let Some(r) = response {
            d.trace = self.on_response(k, c, r, &mut d.notes);
        }
        d.take_pause = self.on_sfc(k, c, sfc, w_before, &mut d.notes);
        let interval = self.probe_interval_ns(k, c.srtt_us);
        d.probe = c.packets_out > 0 && self.probe_due(k, c);
        // A budget that stretches the probes stretches freshness alike.
        let fresh = self.last_update_ns != 0
            && c.now_ns.saturating_sub(self.last_update_ns) <= interval.max(self.held_gap_ns).saturating_mul(FRESH_INTERVALS);
        fresh.then(|| (self.law.window_bytes(), self.pacing_rate(k, c.srtt_us)))
    }
}

/// A connection's own state (in `icsk_ca_priv`; integers only, so any bit
/// pattern is valid; the kernel glue asserts at build time that it fits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SockCtl {
    /// The fallback law's state.
    fallback: Fallback,
    /// cwnd before the last reduction, for `undo_cwnd`.
    prior_cwnd: u32,
    /// The delivered-BDP bound on what telemetry may set.
    delivery: DeliveryBound,
    /// The cwnd `init` set (the bound's floor).
    init_segs: u32,
    /// No attempt to create telemetry state before this time, ns.
    retry_ns: u64,
    /// Until when a loss belongs to the congestion an SFC window cut
    /// answered, ns (0: none).
    sfc_cut_until_ns: u64,
}

impl SockCtl {
    /// The fewest segments in a TSO skb (`min_tso_segs`): one, so that
    /// with the flow's pacing shift TCP sends bursts of about `2^-shift` s
    /// of the pacing rate instead of at least two segments.
    pub const MIN_TSO_SEGS: u32 = 1;

    /// A connection starts (or switches to) `hpcc`. `has_sent_data`: it
    /// has sent data before (then it keeps its possibly reduced window
    /// rather than taking the initial one).
    pub fn init(k: &Knobs, c: &Conn, has_sent_data: bool) -> (Self, InitDecision) {
        let cwnd = init_cwnd(k.fallback().initial_segs(c.mss), c.cwnd, has_sent_data);
        let st = Self { prior_cwnd: cwnd, init_segs: cwnd, ..Self::default() };
        // Pace the initial window from the start, as tcp_bbr's init does
        // (TCP computes no rate for a module with `cong_control`): R = W/T
        // of a new HPCC++ flow, TCP's default ratio for the fallback.
        let after = Conn { cwnd, ssthresh: cwnd, ..*c };
        let pacing_rate = match (k.telemetry, FlowCtl::new(k, &after)) {
            (1, Some(f)) => f.pacing_rate(k, c.srtt_us),
            _ => default_pacing(cwnd, cwnd, c.packets_out, c.mss, c.srtt_us),
        };
        let pacing_shift = pacing_shift(k, base_rtt_ns(k, c.min_rtt_us));
        (st, InitDecision { cwnd, ssthresh: cwnd, pacing_shift, pacing_rate })
    }

    /// Whether the glue should create the flow's telemetry state now (it
    /// has none): telemetry on, the connection `sending` data, and no
    /// recent attempt failed.
    fn wants_flow(&self, k: &Knobs, now_ns: u64, sending: bool) -> bool {
        sending && k.telemetry == 1 && now_ns >= self.retry_ns
    }

    /// On an ACK: whether to create the flow's telemetry state now (it has
    /// none). Only once the connection has data out: a socket that only
    /// receives never gets any.
    pub fn wants_flow_on_ack(&self, k: &Knobs, c: &Conn) -> bool {
        self.wants_flow(k, c.now_ns, c.packets_out > 0)
    }

    /// At a transmit start (data about to leave with nothing in flight):
    /// whether to create the flow's telemetry state now (it has none), so
    /// that its first probe can lead the data
    /// ([`FlowCtl::probe_at_tx_start`]).
    pub fn wants_flow_on_tx_start(&self, k: &Knobs, c: &Conn) -> bool {
        self.wants_flow(k, c.now_ns, true)
    }

    /// Creating the flow's state failed at `now_ns`: the fallback runs,
    /// and the next attempt waits [`STATE_RETRY_NS`].
    pub fn flow_refused(&mut self, now_ns: u64) {
        self.retry_ns = now_ns.saturating_add(STATE_RETRY_NS);
    }

    /// `ssthresh` (loss or ECN): the fallback's multiplicative decrease,
    /// but for a loss within the longest pause and two smoothed RTTs of an
    /// SFC window cut: its packets left before the cut, which answered the
    /// same congestion, so the cut window stays (TCP too reduces once per
    /// window of data). Halving a window already cut to its share leaves
    /// the flow to recover at the fallback's additive increase (docs/results.md#measurements-behind-the-controllers-rules).
    pub fn ssthresh(&mut self, k: &Knobs, c: &Conn) -> u32 {
        self.prior_cwnd = c.cwnd;
        if c.now_ns < self.sfc_cut_until_ns {
            return k.fallback().clamp(c.cwnd);
        }
        self.fallback.on_congestion(&k.fallback(), c.cwnd)
    }

    /// The delivered-BDP bound.
    pub fn delivery(&self) -> &DeliveryBound {
        &self.delivery
    }

    /// `undo_cwnd`: the window before the reduction TCP undoes.
    pub fn undo_cwnd(&self, cwnd: u32) -> u32 {
        cwnd.max(self.prior_cwnd)
    }

    /// An ACK (`cong_control`). `flow`: the flow's telemetry state, if it
    /// has one, with its newest response and its SFC cell.
    pub fn on_ack(
        &mut self,
        k: &Knobs,
        c: &Conn,
        rs: Option<&RateSample>,
        flow: Option<(&mut FlowCtl, Option<&Response<'_>>, &SfcState)>,
    ) -> AckDecision {
        let mut d = AckDecision::default();
        if let Some(rs) = rs {
            // A sample within the longest pause and two smoothed RTTs of an
            // SFC pause measures the pause, not the path: it only raises
            // the bound, as an application-limited one.
            let held = flow.as_ref().is_some_and(|(f, _, _)| c.now_ns < f.sfc_held_until_ns);
            self.delivery.on_rate_sample(
                c.now_ns,
                rs.delivered,
                rs.interval_us,
                c.min_rtt_us,
                c.srtt_us,
                rs.app_limited || held,
            );
        }
        let prior_in_flight = rs.map_or(0, |rs| rs.prior_in_flight);
        let hpcc = flow.and_then(|(f, resp, sfc)| f.on_ack(k, c, prior_in_flight, resp, sfc, &mut d));
        if d.notes.has(Note::SfcWindowCut) {
            self.sfc_cut_until_ns = c.sfc_reach_until(k);
        }
        if d.pacing_shift == 0 {
            // No flow state: T from the minimum RTT, as a new flow takes it.
            d.pacing_shift = pacing_shift(k, base_rtt_ns(k, c.min_rtt_us));
        }
        let p = k.fallback();
        if let Some((window, rate)) = hpcc {
            d.notes.add(Note::HpccAck);
            let want = window.div_ceil(c.mss.max(1));
            let bound = self.delivery.bound_segs(self.init_segs);
            let (segs, capped) = telemetry_cwnd(want, c.cwnd, c.ssthresh, c.in_reduction, bound);
            match capped {
                Capped::No => {}
                Capped::Reduction => d.notes.add(Note::CappedByReduction),
                Capped::Delivery => d.notes.add(Note::CappedByDelivery),
            }
            d.cwnd = p.clamp(segs);
            d.pacing_rate = rate;
            // The kernel paces at most at SO_MAX_PACING_RATE: a burst of
            // the shift is of that rate.
            d.tso_segs = tso_segs(rate.min(c.max_pacing_rate), d.pacing_shift, c.mss);
            return d;
        }
        d.notes.add(Note::FallbackAck);
        d.cwnd = if c.in_reduction {
            c.cwnd.min(c.ssthresh.max(2))
        } else if c.cwnd_limited {
            self.fallback.on_ack(&p, c.cwnd, c.ssthresh, rs.map_or(0, |rs| rs.acked_sacked))
        } else {
            c.cwnd
        };
        d.pacing_rate = default_pacing(d.cwnd, c.ssthresh, c.packets_out, c.mss, c.srtt_us);
        d
    }
}

