// SPDX-License-Identifier: GPL-2.0

//! The `hpcc` entry in TCP's congestion-control table and its hooks.
//!
//! Each hook wraps its socket once in [`TcpSock`] and hands plain integers
//! to the pure core. `cong_control` (called on every ACK, instead of TCP's
//! own cwnd and pacing updates, as for BBR) does three things:
//!
//! 1. applies the newest validated probe response, if one arrived, to the
//!    flow's HPCC++ law (MeasureInflight / ComputeWind / NewAck, with the
//!    probe's `snd_nxt` as the ACKed sequence);
//! 2. sends a probe if data is in flight and the last probe is at least one
//!    probe interval (default: one RTT) old;
//! 3. sets cwnd = ⌈W / mss⌉ and the pacing rate W / T (capped at the
//!    path's slowest link, from the INT rate codes) while telemetry is
//!    fresh, within TCP's own loss response and the delivered-BDP bound
//!    (`hpcc_core::guard`), or otherwise runs the no-telemetry fallback ([`Fallback`]):
//!    additive increase while cwnd-limited, an immediate cut to `ssthresh`
//!    in CWR/Recovery (`ssthresh` is the fallback's multiplicative
//!    decrease), and TCP's usual pacing at 1.2 (or 2 below ssthresh/2)
//!    times cwnd / srtt.

use crate::bindings;
use crate::flow::{FlowObj, NoState, Owned};
use crate::hpcc_core::sfc::WindowCut;
use crate::hpcc_core::fallback::Fallback;
use crate::hpcc_core::guard::{init_cwnd, telemetry_cwnd, Capped, DeliveryBound};
use crate::hpcc_core::probe;
use crate::hpcc_core::law::{srtt_pacing_cap, Event, HpccFlow};
use crate::hpcc_core::wire;
use crate::params::{self, Knobs};
use crate::probe_tx::{self, now_ns};
use crate::sock::{CaPriv, TcpSock};
use crate::stats::Counter;
use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int};
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering::{Acquire, Relaxed}};
use kernel::prelude::*;
use kernel::error::{to_result, Result};

/// The algorithm name users select with sysctl or `TCP_CONGESTION`.
pub(crate) const NAME: &str = "hpcc";

/// T used until the flow has an RTT sample, when `base_rtt_us` is 0.
const DEFAULT_BASE_RTT_NS: u64 = 1_000_000;

/// Telemetry is fresh for this many probe intervals after an update.
const FRESH_INTERVALS: u64 = 8;

/// After a flow could not get telemetry state (netns limit, churn bound,
/// no memory), it runs the fallback and tries again after this long.
const STATE_RETRY_NS: u64 = 100_000_000;

/// Per-socket state in `icsk_ca_priv`.
#[derive(Default)]
struct CaState {
    /// The fallback law's state.
    fallback: Fallback,
    /// cwnd before the last reduction, for `undo_cwnd`.
    prior_cwnd: u32,
    /// The flow's [`FlowObj`], as an address (0: none).
    flow: usize,
    /// The delivered-BDP bound on what telemetry may set.
    delivery: DeliveryBound,
    /// The cwnd `init` set (the bound's floor).
    init_segs: u32,
    /// No attempt to create the flow state before this time, ns.
    retry_ns: u64,
}

// SAFETY: `CaState` is integers only (Fallback holds one `u32`,
// DeliveryBound two `u32` and a `u64`): valid for every bit pattern, 48
// bytes, 8-byte aligned, no drop glue. `flow` is only turned into a
// pointer after `init` stored 0 and `ensure_flow` a real one.
unsafe impl CaPriv for CaState {}

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

/// Creates the flow's telemetry state if it has none, telemetry is on and
/// no recent attempt failed: the first time the flow sends data.
fn ensure_flow<'a>(tp: &mut TcpSock<'a>, k: &Knobs, now: u64) -> Option<&'a FlowObj> {
    if let Some(flow) = flow_of(tp) {
        return Some(flow);
    }
    if k.telemetry != 1 || now < tp.ca::<CaState>().retry_ns {
        return None;
    }
    match create_flow(tp, k) {
        Ok(p) => {
            tp.count(Counter::FlowsHpcc);
            tp.ca::<CaState>().flow = p.as_ptr() as usize;
            flow_of(tp)
        }
        Err(why) => {
            tp.count(match why {
                NoState::OverLimit => Counter::FlowsLimited,
                NoState::Churn => Counter::FlowsChurn,
                NoState::NoMemory => Counter::FlowsNoState,
            });
            tp.ca::<CaState>().retry_ns = now.saturating_add(STATE_RETRY_NS);
            None
        }
    }
}

/// Warns (once per load) if `init` ever finds a socket's private area not
/// zeroed: `flow_of` relies on it.
static DIRTY_PRIV_WARNED: AtomicBool = AtomicBool::new(false);

/// T for a flow: the `base_rtt_us` knob, or the flow's minimum RTT.
fn base_rtt_ns(k: &Knobs, tp: &TcpSock<'_>) -> u64 {
    if k.base_rtt_us != 0 {
        return u64::from(k.base_rtt_us) * 1000;
    }
    match tp.min_rtt_us() {
        0 | u32::MAX => DEFAULT_BASE_RTT_NS,
        us => u64::from(us) * 1000,
    }
}

unsafe extern "C" fn hpcc_init(sk: *mut bindings::sock) {
    with_sock(sk, (), |tp| {
        if tp.ca::<CaState>().flow != 0 && !DIRTY_PRIV_WARNED.swap(true, Relaxed) {
            pr_warn!("init found a non-zero flow pointer in icsk_ca_priv; ignored\n");
        }
        let k = params::knobs();
        let p = k.fallback();
        // A connection that switches to hpcc after sending keeps its
        // (possibly reduced) window rather than taking the initial one.
        let cwnd = init_cwnd(p.initial_segs(tp.mss()), tp.cwnd(), tp.data_segs_out() > 0);
        *tp.ca::<CaState>() = CaState {
            fallback: Fallback::new(),
            prior_cwnd: cwnd,
            flow: 0,
            delivery: DeliveryBound::default(),
            init_segs: cwnd,
            retry_ns: 0,
        };
        tp.set_cwnd(cwnd);
        // No exponential probe from a small window: additive increase from
        // the configured (about line-rate) window.
        tp.set_ssthresh(cwnd);
        // Pace (sch_fq, or TCP's internal pacing), at the rate we set, in
        // small bursts: a burst is a queue at the bottleneck, and HPCC++
        // reads queues as load.
        tp.request_pacing();
        if let Ok(shift) = u8::try_from(k.pacing_shift) {
            if shift != 0 {
                tp.set_pacing_shift(shift);
            }
        }
        // TCP computes no pacing rate for a module with `cong_control`. Until
        // our first ACK a passively opened socket would keep sk_pacing_rate
        // ~0 (unlimited) and send the initial window as one line-rate burst
        // into the bottleneck, and an actively opened one the rate our
        // fallback set for IW10 on the SYN-ACK, before this init. Pace the
        // initial window from the start, as tcp_bbr's init does: R = W/T of
        // a new HPCC++ flow (its state is allocated when it first sends),
        // TCP's default ratio for the fallback.
        let rate = match (k.telemetry, new_owned(tp, &k)) {
            (1, Some(own)) => hpcc_rate(&k, &own, tp.srtt_us()),
            _ => default_pacing(tp),
        };
        tp.set_pacing_rate(rate);
    })
}

/// A new flow's HPCC++ state, `None` if the parameters are invalid for
/// this MSS.
fn new_owned(tp: &TcpSock<'_>, k: &Knobs) -> Option<Owned> {
    let t = base_rtt_ns(k, tp);
    let params = k.hpcc_params(tp.mss(), t).ok()?;
    Some(Owned {
        law: HpccFlow::new(&params),
        params,
        base_rtt_ns: t,
        last_probe_ns: 0,
        last_update_ns: 0,
        probes: 0,
        path_rate: 0,
        max_in_flight: 0,
        had_response: false,
        sfc_gen: 0,
        sfc_cut: WindowCut::default(),
    })
}

/// Allocates and publishes the flow's telemetry state.
fn create_flow(tp: &mut TcpSock<'_>, k: &Knobs) -> Result<NonNull<FlowObj>, NoState> {
    let (Some((net, tuple)), Some(owned)) = (tp.tuple(), new_owned(tp, k)) else {
        return Err(NoState::NoMemory);
    };
    FlowObj::create(tp.as_sock(), net, &tuple, owned, k.max_flows_per_netns)
}

unsafe extern "C" fn hpcc_release(sk: *mut bindings::sock) {
    with_sock(sk, (), |tp| {
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
        let p = params::fallback();
        let cwnd = tp.cwnd();
        let st = tp.ca::<CaState>();
        st.prior_cwnd = cwnd;
        st.fallback.on_congestion(&p, cwnd)
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
        cwnd.max(tp.ca::<CaState>().prior_cwnd)
    })
}

/// The probe interval ([`probe::interval_ns`]).
fn probe_interval_ns(k: &Knobs, tp: &TcpSock<'_>, own: &Owned) -> u64 {
    probe::interval_ns(k.probe_interval_us, tp.srtt_us(), own.base_rtt_ns)
}

/// The HPCC++ part of an ACK. Returns the window (bytes) and pacing rate
/// (bytes/s) to apply while telemetry is fresh.
///
/// `prior_in_flight` is what was in flight before this ACK (window
/// validation counts what the flow sent, not what is left after the ACK).
fn hpcc_on_ack(tp: &mut TcpSock<'_>, k: &Knobs, flow: &FlowObj, now: u64, prior_in_flight: u32) -> Option<(u32, u64)> {
    // SAFETY: we are a congestion-control hook of this socket.
    let own = unsafe { flow.owned() };

    // Follow the flow's minimum RTT when T is measured (re-validate on a
    // change of more than 1/8).
    if k.base_rtt_us == 0 {
        let t = base_rtt_ns(k, tp);
        if t.abs_diff(own.base_rtt_ns) > own.base_rtt_ns / 8 {
            if let Ok(p) = k.hpcc_params(tp.mss(), t) {
                own.params = p;
                own.base_rtt_ns = t;
            }
        }
    }

    // An SFC signal since the last ACK (sfc_rx): the pause the hook could
    // not apply while a process owned the socket, and the window cut.
    let gen = flow.sfc.gen.load(Acquire);
    if gen != own.sfc_gen {
        own.sfc_gen = gen;
        let until = flow.sfc.pause_until_ns.swap(0, Relaxed);
        if until != 0 {
            tp.pause_until(until);
        }
        if k.sfc_window_cut == 1 {
            let speed = u8::try_from(flow.sfc.speed.load(Relaxed)).unwrap_or(0);
            let rate = wire::rate_info(speed).map_or(0, |r| r.bps());
            let eta = own.params.config().eta_ppm;
            let w = own.law.window_bytes();
            let cut = own.sfc_cut.on_signal(w, flow.sfc.qlen.load(Relaxed), rate, own.base_rtt_ns, eta, 0, now);
            own.law.cut(&own.params, cut);
            own.last_update_ns = now;
            tp.count(Counter::SfcWindowCuts);
        }
    }

    let in_flight = tp.in_flight();
    own.max_in_flight = own.max_in_flight.max(in_flight).max(prior_in_flight);
    if let Some(mail) = flow.mailbox.take() {
        let Ok(stack) = wire::parse(&mail.int) else {
            tp.count(Counter::ResponsesBadInt);
            return None;
        };
        if !own.had_response {
            own.had_response = true;
            tp.count(Counter::FlowsWithTelemetry);
        }
        own.path_rate = stack
            .hops()
            .iter()
            .filter_map(|h| wire::rate_info(h.rate))
            .map(|r| r.bps() / 8)
            .min()
            .unwrap_or(0);
        // Window validation: the most the flow had in flight since the last
        // sample bounds how far this one can raise W.
        let used = own.max_in_flight.saturating_mul(tp.mss());
        own.law.set_used_window((k.window_validation == 1).then_some(used));
        own.max_in_flight = in_flight;
        let o = own.law.on_stack(&own.params, &stack, mail.rx_ns, mail.snd_nxt, tp.snd_nxt());
        let event = match o.event {
            Event::Recorded => 0,
            Event::PathChanged => 1,
            Event::Updated => 2,
            Event::Committed => 3,
            Event::Stale(_) => 4,
        };
        let qlen = stack.hops().get(usize::from(o.hop)).map_or(0, |h| {
            let shift = wire::rate_info(h.rate).map_or(0, |r| r.unit_shift);
            u64::from(h.qlen).checked_shl(shift).unwrap_or(u64::MAX)
        });
        tp.trace_sample(&bindings::hpcc_trace_rec {
            event,
            hop: o.hop,
            n_hops: stack.n_hops,
            inc_stage: u8::try_from(own.law.inc_stage()).unwrap_or(u8::MAX),
            u_ppm: q40_to_ppm(own.law.u_q40()),
            sample_u_ppm: q40_to_ppm(o.sample_u_q40),
            qlen: u32::try_from(qlen).unwrap_or(u32::MAX),
            window: o.window_bytes,
            wc: u32::try_from(own.law.wc_q16() >> crate::hpcc_core::fixed::WIN_SHIFT).unwrap_or(u32::MAX),
            cwnd: tp.cwnd(),
            inflight: in_flight,
            srtt_us: tp.srtt_us(),
            base_rtt_us: u32::try_from(own.base_rtt_ns / 1000).unwrap_or(u32::MAX),
            pacing_rate: hpcc_rate(k, own, tp.srtt_us()),
            path_rate: own.path_rate,
        });
        {
            match o.event {
                Event::Updated | Event::Committed => {
                    tp.count(Counter::SamplesApplied);
                    own.last_update_ns = now;
                }
                Event::Recorded => tp.count(Counter::SamplesRecorded),
                Event::PathChanged => tp.count(Counter::SamplesPathChanged),
                Event::Stale(_) => tp.count(Counter::SamplesStale),
            }
        }
    }

    let interval = probe_interval_ns(k, tp, own);
    if tp.packets_out() > 0 {
        probe_if_due(tp, k, flow, own, now, interval);
    }

    let fresh = own.last_update_ns != 0
        && now.saturating_sub(own.last_update_ns) <= interval.saturating_mul(FRESH_INTERVALS);
    fresh.then(|| (own.law.window_bytes(), hpcc_rate(k, own, tp.srtt_us())))
}

/// The law's pacing rate R = W/T, bounded by [`paced_rate`] and by
/// `pace_srtt_cap_pct`% of W per smoothed RTT ([`srtt_pacing_cap`]).
fn hpcc_rate(k: &Knobs, own: &Owned, srtt_us: u32) -> u64 {
    let cap = srtt_pacing_cap(own.law.window_bytes(), k.pace_srtt_cap_pct, srtt_us);
    paced_rate(k, own, own.law.pacing_rate(&own.params)).min(cap)
}

/// Sends a probe, carrying `snd_nxt`, if telemetry is on and `interval`
/// (the probe interval) has passed since the last one; remembers its nonce.
fn probe_if_due(tp: &TcpSock<'_>, k: &Knobs, flow: &FlowObj, own: &mut Owned, now: u64, interval: u64) {
    if k.telemetry != 1 || now.saturating_sub(own.last_probe_ns) < interval {
        return;
    }
    if let Some((_, tuple)) = tp.tuple() {
        // SAFETY: get_random_u32() has no preconditions.
        let nonce = unsafe { bindings::get_random_u32() };
        let snd_nxt = tp.snd_nxt();
        flow.nonces.record(own.probes, nonce, snd_nxt, now);
        own.probes = own.probes.wrapping_add(1);
        own.last_probe_ns = now;
        probe_tx::send_probe(tp, &tuple, nonce, snd_nxt);
    }
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
        let now = now_ns();
        let Some(flow) = ensure_flow(tp, &k, now) else { return };
        // SAFETY: we are a congestion-control hook of this socket.
        let own = unsafe { flow.owned() };
        let interval = probe_interval_ns(&k, tp, own);
        probe_if_due(tp, &k, flow, own, now, interval);
    })
}

/// R = W/T, but never faster than the slowest link of the path (when
/// `pace_at_link_rate`): a flow paced above it only builds a queue there.
fn paced_rate(k: &Knobs, own: &Owned, rate: u64) -> u64 {
    if own.path_rate != 0 && k.pace_at_link_rate == 1 {
        rate.min(own.path_rate)
    } else {
        rate
    }
}

/// A Q23.40 fraction in parts per million, saturating.
fn q40_to_ppm(q: u64) -> u32 {
    u32::try_from(u128::from(q).saturating_mul(1_000_000) >> 40).unwrap_or(u32::MAX)
}

/// TCP's default pacing: `ratio`% of cwnd·mss per smoothed RTT.
fn default_pacing(tp: &TcpSock<'_>) -> u64 {
    let cwnd = tp.cwnd().max(tp.packets_out());
    let ratio: u64 = if tp.cwnd() < tp.ssthresh() / 2 { 200 } else { 120 };
    let bytes = u64::from(tp.mss()).saturating_mul(u64::from(cwnd)).saturating_mul(ratio) / 100;
    match tp.srtt_us() {
        0 => u64::MAX,
        us => bytes.saturating_mul(1_000_000) / u64::from(us),
    }
}

unsafe extern "C" fn hpcc_cong_control(
    sk: *mut bindings::sock,
    _ack: u32,
    _flag: c_int,
    rs: *const bindings::rate_sample,
) {
    // SAFETY: TCP passes the ACK's rate sample (or null) for this call only.
    let rs = unsafe { rs.as_ref() };
    let acked = rs.map_or(0, |rs| rs.acked_sacked);
    let prior_in_flight = rs.map_or(0, |rs| rs.prior_in_flight);
    with_sock(sk, (), |tp| {
        let k = params::knobs();
        let now = now_ns();
        if let Some(rs) = rs {
            let (min_rtt, srtt) = (tp.min_rtt_us(), tp.srtt_us());
            tp.ca::<CaState>().delivery.on_rate_sample(
                now,
                u32::try_from(rs.delivered).unwrap_or(0),
                u64::try_from(rs.interval_us).unwrap_or(0),
                min_rtt,
                srtt,
                rs.is_app_limited,
            );
        }
        let flow = if tp.packets_out() > 0 { ensure_flow(tp, &k, now) } else { flow_of(tp) };
        let hpcc = flow.and_then(|flow| hpcc_on_ack(tp, &k, flow, now, prior_in_flight));
        if let Some((window, rate)) = hpcc {
            tp.count(Counter::HpccAcks);
            let want = window.div_ceil(tp.mss().max(1));
            let st = tp.ca::<CaState>();
            let bound = st.delivery.bound_segs(st.init_segs);
            let (segs, capped) = telemetry_cwnd(want, tp.cwnd(), tp.ssthresh(), tp.in_cwnd_reduction(), bound);
            match capped {
                Capped::No => {}
                Capped::Reduction => tp.count(Counter::CappedByReduction),
                Capped::Delivery => tp.count(Counter::CappedByDelivery),
            }
            tp.set_cwnd(k.fallback().clamp(segs));
            tp.set_pacing_rate(rate);
            return;
        }
        tp.count(Counter::FallbackAcks);
        let p = k.fallback();
        let (cwnd, ssthresh) = (tp.cwnd(), tp.ssthresh());
        let next = if tp.in_cwnd_reduction() {
            cwnd.min(ssthresh.max(2))
        } else if tp.is_cwnd_limited() {
            tp.ca::<CaState>().fallback.on_ack(&p, cwnd, ssthresh, acked)
        } else {
            cwnd
        };
        tp.set_cwnd(next);
        let rate = default_pacing(tp);
        tp.set_pacing_rate(rate);
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
    flags: bindings::TCP_CONG_NON_RESTRICTED,
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
