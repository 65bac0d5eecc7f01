// SPDX-License-Identifier: GPL-2.0

//! The `hpcc` entry in TCP's congestion-control table and its hooks.
//!
//! Glue only: each hook wraps its socket once in [`TcpSock`], reads what
//! the connection shows into a [`Conn`] (plus the ACK's rate sample, the
//! flow's newest validated response and its SFC cell), asks the pure
//! controller (`hpcc_core::control`) and applies the decision: cwnd,
//! pacing rate, a probe, an SFC pause, a trace sample, counters. Every
//! rule (when to probe, when telemetry is fresh, the bounds on the window,
//! the fallback) is the controller's and is tested on the host.
//!
//! The glue's own jobs are the kernel's: the flow's telemetry state
//! ([`FlowObj`], allocated when the controller asks for it), the nonce of
//! each probe, and the probe packet itself.

use crate::bindings;
use crate::flow::{FlowObj, Mail, NoState};
use crate::hpcc_core::control::{
    ctl_rec as cr, AckDecision, Conn, FlowCtl, GsoCap, Note, RateSample, Response, SfcState, SockCtl, TraceSample,
};
use crate::hpcc_core::knobs::Knobs;
use crate::params;
use crate::probe_tx::{self, now_ns};
use crate::sock::{CaPriv, TcpSock};
use crate::stats::{inc, Counter};
use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering::{Acquire, Relaxed}};
use kernel::prelude::*;
use kernel::error::{to_result, Result};

/// The algorithm name users select with sysctl or `TCP_CONGESTION`.
pub(crate) const NAME: &str = "hpcc";

/// Per-socket state in `icsk_ca_priv`.
#[derive(Default)]
struct CaState {
    /// The controller's per-connection state.
    ctl: SockCtl,
    /// The flow's [`FlowObj`], as an address (0: none).
    flow: usize,
    /// Our cap on `sk_gso_max_segs` and the route's own limit.
    gso: GsoCap,
}

// SAFETY: `CaState` is integers only (`SockCtl` is `repr(C)` integers, `flow`
// a usize, `GsoCap` two u16s): valid for every bit pattern, no drop glue. Its
// size and alignment fit `icsk_ca_priv` (asserted below and again where
// `TcpSock::ca` borrows it). `flow` is only turned into a pointer after `init`
// stored 0 and `ensure_flow` a real one.
unsafe impl CaPriv for CaState {}

const _: () = {
    assert!(core::mem::size_of::<CaState>() <= bindings::HPCC_ICSK_CA_PRIV_SIZE as usize);
    assert!(core::mem::align_of::<CaState>() <= 8);
};

/// Runs `f` on the socket a hook received; `default` if the pointer is null.
#[inline]
fn with_sock<R>(sk: *mut bindings::sock, default: R, f: impl FnOnce(&mut TcpSock<'_>) -> R) -> R {
    // SAFETY: every caller is one of our tcp_congestion_ops hooks passing the
    // socket TCP gave it, and the wrapper does not escape this call.
    match unsafe { TcpSock::from_hook(sk) } {
        Some(mut tp) => f(&mut tp),
        None => default,
    }
}

/// What the connection shows now, for the controller.
fn conn(tp: &TcpSock<'_>, now_ns: u64) -> Conn {
    Conn {
        now_ns,
        mss: tp.mss(),
        cwnd: tp.cwnd(),
        ssthresh: tp.ssthresh(),
        srtt_us: tp.srtt_us(),
        min_rtt_us: tp.min_rtt_us(),
        packets_out: tp.packets_out(),
        in_flight: tp.in_flight(),
        snd_nxt: tp.snd_nxt(),
        in_reduction: tp.in_cwnd_reduction(),
        cwnd_limited: tp.is_cwnd_limited(),
        max_pacing_rate: tp.max_pacing_rate(),
    }
}

/// The flow's out-of-line state, if it has one.
#[inline]
fn flow_of<'a>(tp: &mut TcpSock<'a>) -> Option<&'a FlowObj> {
    let sk = tp.as_sock();
    let addr = tp.ca::<CaState>().flow;
    // SAFETY: `init` zeroes `flow` (TCP also zeroes the private area
    // before init, and `init` warns if it ever finds otherwise); a
    // non-zero value was stored by `ensure_flow` from FlowObj::create and
    // is freed only by `release`, which TCP never runs concurrently with
    // another hook of this socket; the reference does not outlive the hook.
    let flow = (addr != 0).then(|| unsafe { &*(addr as *const FlowObj) })?;
    flow.owned_by(sk).then_some(flow)
}

/// The flow's telemetry state; created if it has none and the controller
/// wants it (`sending`: the connection is sending data). Also returns
/// what happened, as `hpcc_ctl_rec` flags.
fn ensure_flow<'a>(tp: &mut TcpSock<'a>, k: &Knobs, c: &Conn, sending: bool) -> (Option<&'a FlowObj>, u16) {
    if let Some(flow) = flow_of(tp) {
        return (Some(flow), cr::HAS_FLOW);
    }
    if !tp.ca::<CaState>().ctl.wants_flow(k, c.now_ns, sending) {
        return (None, 0);
    }
    match create_flow(tp, k, c) {
        Ok(p) => {
            tp.count(Counter::FlowsStarted);
            tp.ca::<CaState>().flow = p.as_ptr() as usize;
            (flow_of(tp), cr::HAS_FLOW | cr::FLOW_CREATED)
        }
        Err(why) => {
            tp.count(match why {
                NoState::OverLimit => Counter::FlowsLimited,
                NoState::Churn => Counter::FlowsChurn,
                NoState::NoMemory => Counter::FlowsNoState,
            });
            tp.ca::<CaState>().ctl.flow_refused(c.now_ns);
            (None, cr::FLOW_REFUSED)
        }
    }
}

// The record's hooks and flags are the controller's (`ctl_rec`), and the
// C header's for the tracepoint: the same values.
const _: () = {
    use bindings as b;
    let same = [
        (cr::HOOK_INIT as u32, b::hpcc_ctl_hook_HPCC_CTL_INIT),
        (cr::HOOK_ACK as u32, b::hpcc_ctl_hook_HPCC_CTL_ACK),
        (cr::HOOK_TX_START as u32, b::hpcc_ctl_hook_HPCC_CTL_TX_START),
        (cr::HOOK_SSTHRESH as u32, b::hpcc_ctl_hook_HPCC_CTL_SSTHRESH),
        (cr::IN_REDUCTION as u32, b::HPCC_CTL_IN_REDUCTION),
        (cr::CWND_LIMITED as u32, b::HPCC_CTL_CWND_LIMITED),
        (cr::HAS_RS as u32, b::HPCC_CTL_HAS_RS),
        (cr::RS_APP_LIMITED as u32, b::HPCC_CTL_RS_APP_LIMITED),
        (cr::HAS_FLOW as u32, b::HPCC_CTL_HAS_FLOW),
        (cr::FLOW_CREATED as u32, b::HPCC_CTL_FLOW_CREATED),
        (cr::FLOW_REFUSED as u32, b::HPCC_CTL_FLOW_REFUSED),
        (cr::HAS_RESPONSE as u32, b::HPCC_CTL_HAS_RESPONSE),
        (cr::PROBED as u32, b::HPCC_CTL_PROBED),
        (cr::TAKE_PAUSE as u32, b::HPCC_CTL_TAKE_PAUSE),
        (cr::HAS_SENT_DATA as u32, b::HPCC_CTL_HAS_SENT_DATA),
    ];
    let mut i = 0;
    while i < same.len() {
        assert!(same[i].0 == same[i].1);
        i += 1;
    }
};

/// Whether the `tcp_hpcc:hpcc_ctl` tracepoint is on (a static key).
#[inline]
fn ctl_tracing() -> bool {
    // SAFETY: the helper only reads the tracepoint's static key.
    unsafe { bindings::hpcc_trace_ctl_enabled() }
}

/// The `tcp_hpcc:hpcc_ctl` record of a hook with what the connection
/// showed (`c`) and `flags`; the caller adds the rest.
fn ctl_rec(hook: u8, c: &Conn, flags: u16) -> bindings::hpcc_ctl_rec {
    // SAFETY: a plain C struct of integers and byte arrays: all zeroes is valid.
    let mut r: bindings::hpcc_ctl_rec = unsafe { core::mem::zeroed() };
    let shown = [(c.in_reduction, cr::IN_REDUCTION), (c.cwnd_limited, cr::CWND_LIMITED)];
    let flags = shown.iter().filter(|(on, _)| *on).fold(flags, |f, (_, bit)| f | bit);
    r.hook = hook;
    r.flags = flags;
    r.now_ns = c.now_ns;
    r.mss = c.mss;
    r.cwnd = c.cwnd;
    r.ssthresh = c.ssthresh;
    r.srtt_us = c.srtt_us;
    r.min_rtt_us = c.min_rtt_us;
    r.packets_out = c.packets_out;
    r.in_flight = c.in_flight;
    r.snd_nxt = c.snd_nxt;
    r.max_pacing_rate = c.max_pacing_rate;
    r
}

/// Allocates and publishes the flow's telemetry state.
fn create_flow(tp: &mut TcpSock<'_>, k: &Knobs, c: &Conn) -> Result<NonNull<FlowObj>, NoState> {
    let (Some((net, tuple)), Some(ctl)) = (tp.tuple(), FlowCtl::new(k, c)) else {
        return Err(NoState::NoMemory);
    };
    FlowObj::create(tp.as_sock(), net, &tuple, ctl, k.max_flows_per_netns)
}

/// Warns (once per load) if `init` ever finds a socket's private area not
/// zeroed: `flow_of` relies on it.
static DIRTY_PRIV_WARNED: AtomicBool = AtomicBool::new(false);

unsafe extern "C" fn hpcc_init(sk: *mut bindings::sock) {
    with_sock(sk, (), |tp| {
        if tp.ca::<CaState>().flow != 0 && !DIRTY_PRIV_WARNED.swap(true, Relaxed) {
            pr_warn!("init found a non-zero flow pointer in icsk_ca_priv; ignored\n");
        }
        let k = params::knobs();
        let (c, sent) = (conn(tp, now_ns()), tp.data_segs_out() > 0);
        let (ctl, d) = SockCtl::init(&k, &c, sent);
        if ctl_tracing() {
            let flag = if sent { cr::HAS_SENT_DATA } else { 0 };
            let mut r = ctl_rec(cr::HOOK_INIT, &c, flag);
            (r.out_cwnd, r.out_ssthresh, r.out_pacing) = (d.cwnd, d.ssthresh, d.pacing_rate);
            r.out_pacing_shift = d.pacing_shift;
            tp.trace_ctl(&r);
        }
        *tp.ca::<CaState>() = CaState { ctl, flow: 0, gso: GsoCap::default() };
        tp.set_cwnd(d.cwnd);
        tp.set_ssthresh(d.ssthresh);
        // Pace (sch_fq, or TCP's internal pacing) at the rate we set, in
        // small bursts: a burst is a queue at the bottleneck, and HPCC++
        // reads queues as load.
        tp.request_pacing();
        tp.set_pacing_shift(d.pacing_shift);
        tp.set_pacing_rate(d.pacing_rate);
    })
}

/// Caps the segments per TSO skb at `segs` (within the route's limit;
/// 0: the route's limit).
fn cap_tso(tp: &mut TcpSock<'_>, segs: u16) {
    let (current, gso) = (tp.gso_max_segs(), tp.can_gso());
    let v = tp.ca::<CaState>().gso.apply(current, segs, gso);
    if v != current {
        tp.set_gso_max_segs(v);
    }
}

unsafe extern "C" fn hpcc_release(sk: *mut bindings::sock) {
    with_sock(sk, (), |tp| {
        let (current, gso) = (tp.gso_max_segs(), tp.can_gso());
        if let Some(route) = tp.ca::<CaState>().gso.restore(current, gso) {
            tp.set_gso_max_segs(route);
        }
        let owner = flow_of(tp).is_some();
        let addr = core::mem::take(&mut tp.ca::<CaState>().flow);
        if let (true, Some(p)) = (owner, NonNull::new(addr as *mut FlowObj)) {
            // SAFETY: `addr` came from FlowObj::create in `ensure_flow` for
            // this socket; taking it out of the socket makes this the only
            // release.
            unsafe { FlowObj::release(p) };
        }
    })
}

unsafe extern "C" fn hpcc_ssthresh(sk: *mut bindings::sock) -> u32 {
    with_sock(sk, 2, |tp| {
        let (k, c) = (params::knobs(), conn(tp, now_ns()));
        let ssthresh = tp.ca::<CaState>().ctl.ssthresh(&k, &c);
        if ctl_tracing() {
            let mut r = ctl_rec(cr::HOOK_SSTHRESH, &c, 0);
            r.out_ssthresh = ssthresh;
            tp.trace_ctl(&r);
        }
        ssthresh
    })
}

/// One-segment TSO minimum: with `pacing_shift`, TCP then sends bursts of
/// about `2^-shift` s of the pacing rate instead of at least two segments.
unsafe extern "C" fn hpcc_min_tso_segs(_sk: *mut bindings::sock) -> u32 {
    1
}

unsafe extern "C" fn hpcc_undo_cwnd(sk: *mut bindings::sock) -> u32 {
    with_sock(sk, 2, |tp| {
        let cwnd = tp.cwnd();
        tp.ca::<CaState>().ctl.undo_cwnd(cwnd)
    })
}

/// Sends a probe carrying `snd_nxt` and remembers its nonce; `false` if
/// the socket has no IPv4/IPv6 4-tuple (then the controller's probe clock
/// does not move).
fn send_probe(tp: &TcpSock<'_>, flow: &FlowObj, ctl: &mut FlowCtl, now: u64) -> bool {
    let Some((_, tuple)) = tp.tuple() else { return false };
    // SAFETY: get_random_u32() has no preconditions.
    let nonce = unsafe { bindings::get_random_u32() };
    let snd_nxt = tp.snd_nxt();
    let slot = ctl.probe_sent(now);
    flow.nonces.record(slot as usize, nonce, snd_nxt, now);
    probe_tx::send_probe(tp, &tuple, nonce, snd_nxt);
    true
}

/// Data is about to leave with nothing in flight: the connection's first
/// data, or a restart after idle. The ACK path probes only with data in
/// flight, so its first probe leaves one RTT after the data and the first
/// update (two samples) comes three RTTs in. A probe ahead of the data
/// records the path now: the first update comes one RTT earlier.
unsafe extern "C" fn hpcc_cwnd_event(sk: *mut bindings::sock, ev: bindings::tcp_ca_event) {
    if ev != bindings::tcp_ca_event_CA_EVENT_TX_START {
        return;
    }
    with_sock(sk, (), |tp| {
        let k = params::knobs();
        let c = conn(tp, now_ns());
        let (flow, mut flags) = ensure_flow(tp, &k, &c, true);
        if let Some(flow) = flow {
            // SAFETY: we are a congestion-control hook of this socket.
            let ctl = unsafe { flow.owned() };
            if ctl.probe_due(&k, &c) && send_probe(tp, flow, ctl, c.now_ns) {
                flags |= cr::PROBED;
            }
        }
        if ctl_tracing() {
            tp.trace_ctl(&ctl_rec(cr::HOOK_TX_START, &c, flags));
        }
    })
}

/// The `/proc/net/hpcc_stat` counter of each controller note.
fn counter(n: Note) -> Counter {
    match n {
        Note::HpccAck => Counter::HpccAcks,
        Note::FallbackAck => Counter::FallbackAcks,
        Note::CappedByReduction => Counter::CappedByReduction,
        Note::CappedByDelivery => Counter::CappedByDelivery,
        Note::ResponseBadInt => Counter::ResponsesBadInt,
        Note::FirstTelemetry => Counter::FlowsWithTelemetry,
        Note::SampleApplied => Counter::SamplesApplied,
        Note::SampleRecorded => Counter::SamplesRecorded,
        Note::SamplePathChanged => Counter::SamplesPathChanged,
        Note::SampleStale => Counter::SamplesStale,
        Note::SfcWindowCut => Counter::SfcWindowCuts,
    }
}

/// The tracepoint's record of a sample, field for field from the core's
/// one list (`trace_sample_fields!`), which must also be the C record's
/// layout: asserted at build time, offset by offset.
macro_rules! trace_record {
    ($($field:ident: $ty:ty, $doc:literal;)*) => {
        fn trace_rec(t: &TraceSample) -> bindings::hpcc_trace_rec {
            bindings::hpcc_trace_rec { $($field: t.$field,)* }
        }

        const _: () = {
            use core::mem::{offset_of, size_of};
            assert!(size_of::<TraceSample>() == size_of::<bindings::hpcc_trace_rec>());
            $(assert!(offset_of!(TraceSample, $field) == offset_of!(bindings::hpcc_trace_rec, $field));)*
        };
    };
}
crate::hpcc_core::control::trace_sample_fields!(trace_record);

/// The ACK's rate sample as plain integers.
fn rate_sample(rs: &bindings::rate_sample) -> RateSample {
    RateSample {
        delivered: u32::try_from(rs.delivered).unwrap_or(0),
        interval_us: u64::try_from(rs.interval_us).unwrap_or(0),
        prior_in_flight: rs.prior_in_flight,
        acked_sacked: rs.acked_sacked,
        app_limited: rs.is_app_limited,
    }
}

/// The `tcp_hpcc:hpcc_ctl` record of an ACK: what the connection showed,
/// the rate sample, the response and SFC cell the controller saw, and its
/// decision.
fn ack_rec(
    c: &Conn,
    flags: u16,
    rs: Option<&RateSample>,
    mail: Option<&Mail>,
    sfc: &SfcState,
    d: &AckDecision,
) -> bindings::hpcc_ctl_rec {
    let mut r = ctl_rec(cr::HOOK_ACK, c, flags);
    if let Some(rs) = rs {
        r.flags |= cr::HAS_RS;
        if rs.app_limited {
            r.flags |= cr::RS_APP_LIMITED;
        }
        r.rs_delivered = rs.delivered;
        r.rs_interval_us = rs.interval_us;
        r.rs_prior_in_flight = rs.prior_in_flight;
        r.rs_acked_sacked = rs.acked_sacked;
    }
    if let Some(m) = mail {
        r.flags |= cr::HAS_RESPONSE;
        r.resp_rx_ns = m.rx_ns;
        r.resp_snd_nxt = m.snd_nxt;
        // Both are HPCC_INT_MAX_LEN bytes (a type error otherwise).
        r.int_stack = m.int;
        r.int_len = m.int.len() as u8;
    }
    if d.take_pause {
        r.flags |= cr::TAKE_PAUSE;
    }
    (r.sfc_gen, r.sfc_qlen, r.sfc_speed, r.sfc_gap_ns) = (sfc.gen, sfc.qlen, sfc.speed, sfc.gap_ns);
    (r.out_cwnd, r.out_pacing) = (d.cwnd, d.pacing_rate);
    r.out_pacing_shift = d.pacing_shift;
    r.out_tso_segs = d.tso_segs;
    r
}

unsafe extern "C" fn hpcc_cong_control(
    sk: *mut bindings::sock,
    _ack: u32,
    _flag: c_int,
    rs: *const bindings::rate_sample,
) {
    // SAFETY: TCP passes the ACK's rate sample (or null) for this call only.
    let rs = unsafe { rs.as_ref() }.map(rate_sample);
    with_sock(sk, (), |tp| {
        let k = params::knobs();
        let c = conn(tp, now_ns());
        let (flow, mut flags) = ensure_flow(tp, &k, &c, c.packets_out > 0);
        let mut mail: Option<Mail> = None;
        let mut sfc = SfcState::default();
        let d: AckDecision = match flow {
            Some(flow) => {
                // SAFETY: we are a congestion-control hook of this socket.
                let ctl = unsafe { flow.owned() };
                mail = flow.mailbox.take();
                let response = mail.as_ref().map(|m| Response { rx_ns: m.rx_ns, snd_nxt: m.snd_nxt, int: &m.int });
                sfc = SfcState {
                    gen: flow.sfc.gen.load(Acquire),
                    qlen: flow.sfc.qlen.load(Relaxed),
                    speed: u8::try_from(flow.sfc.speed.load(Relaxed)).unwrap_or(0),
                    gap_ns: flow.sfc.take_gap(),
                };
                let d = tp.ca::<CaState>().ctl.on_ack(&k, &c, rs.as_ref(), Some((&mut *ctl, response.as_ref(), &sfc)));
                if d.take_pause {
                    let until = flow.sfc.pause_until_ns.swap(0, Relaxed);
                    if until != 0 {
                        tp.pause_until(until);
                        flow.view.set_pause(until);
                    }
                }
                if let Some(t) = &d.trace {
                    tp.trace_sample(&trace_rec(t));
                    flow.view.set_sample(t, mail.as_ref().map_or(c.now_ns, |m| m.rx_ns));
                }
                if d.probe && send_probe(tp, flow, ctl, c.now_ns) {
                    flags |= cr::PROBED;
                }
                d
            }
            None => tp.ca::<CaState>().ctl.on_ack(&k, &c, rs.as_ref(), None),
        };
        if ctl_tracing() {
            tp.trace_ctl(&ack_rec(&c, flags, rs.as_ref(), mail.as_ref(), &sfc, &d));
        }
        let cwnd = tp.set_cwnd(d.cwnd);
        let rate = tp.set_pacing_rate(d.pacing_rate);
        tp.set_pacing_shift(d.pacing_shift);
        cap_tso(tp, d.tso_segs);
        if let Some(flow) = flow {
            flow.view.set_applied(cwnd, rate);
        }
        if let Some(net) = tp.net() {
            for n in d.notes.iter() {
                inc(net, counter(n));
            }
        }
    })
}

/// `name` as the C `char[TCP_CA_NAME_MAX]` TCP expects, NUL-padded.
const fn ca_name() -> [c_char; bindings::TCP_CA_NAME_MAX as usize] {
    let mut out = [0 as c_char; bindings::TCP_CA_NAME_MAX as usize];
    let src = NAME.as_bytes();
    assert!(src.len() < out.len());
    let mut i = 0;
    while i < src.len() {
        out[i] = src[i] as c_char;
        i += 1;
    }
    out
}

/// All-zero ops: every hook `None`, null list and owner, zero flags.
// SAFETY: tcp_congestion_ops is plain C data (function-pointer options,
// raw pointers, integers, a char array); all-zero is valid for each field.
const ZEROED_OPS: bindings::tcp_congestion_ops = unsafe { MaybeUninit::zeroed().assume_init() };

/// The ops TCP links into its list; written once before registration.
struct OpsCell(UnsafeCell<bindings::tcp_congestion_ops>);

// SAFETY: we write the cell only in `Registration::register`, before TCP can
// see it; afterwards only TCP touches it, under its own list lock and RCU.
unsafe impl Sync for OpsCell {}

static OPS: OpsCell = OpsCell(UnsafeCell::new(bindings::tcp_congestion_ops {
    init: Some(hpcc_init),
    release: Some(hpcc_release),
    ssthresh: Some(hpcc_ssthresh),
    cong_control: Some(hpcc_cong_control),
    undo_cwnd: Some(hpcc_undo_cwnd),
    cwnd_event: Some(hpcc_cwnd_event),
    min_tso_segs: Some(hpcc_min_tso_segs),
    name: ca_name(),
    // Restricted, like dctcp: hpcc sends probes and needs the fabric's
    // support, so only CAP_NET_ADMIN or an admin's entry in
    // net.ipv4.tcp_allowed_congestion_control (which sets
    // TCP_CONG_NON_RESTRICTED here) lets a socket or a netns choose it.
    flags: 0,
    ..ZEROED_OPS
}));

/// Proof that `hpcc` is registered; dropping it unregisters.
pub(crate) struct Registration(());

impl Registration {
    /// Registers `hpcc` with TCP.
    pub(crate) fn register() -> Result<Self> {
        let ops = OPS.0.get();
        // SAFETY: module init runs once, before registration, so nothing else
        // accesses OPS yet. `owner` makes TCP hold a module reference per
        // socket using hpcc, so rmmod is refused while one exists.
        unsafe { (*ops).owner = bindings::hpcc_this_module() };
        // SAFETY: `ops` is a 'static, fully initialised tcp_congestion_ops
        // with the required hooks (ssthresh, cong_control, undo_cwnd) set.
        to_result(unsafe { bindings::tcp_register_congestion_control(ops) })?;
        Ok(Self(()))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: `OPS` was registered by `register` (the only constructor);
        // unregistering waits for RCU readers, and no socket can still use it
        // because each holds a module reference that blocks module exit.
        unsafe { bindings::tcp_unregister_congestion_control(OPS.0.get()) };
    }
}
