// SPDX-License-Identifier: GPL-2.0

//! `hpcc`, the algorithm TCP calls: `impl Algorithm for Hpcc`.
//!
//! Glue only: each hook reads what the connection shows into a [`Conn`]
//! (plus the ACK's rate sample, the flow's newest validated response and
//! its SFC cell), asks the pure controller (`hpcc_core::control`) and
//! applies the decision: cwnd, pacing rate, a probe, an SFC pause, a trace
//! sample, counters. Every rule (when to probe, when telemetry is fresh,
//! the bounds on the window, the fallback) is the controller's and is
//! tested on the host. The socket comes typed from the `cong` abstraction,
//! so this file is safe code.
//!
//! The glue's own jobs are the kernel's: the flow's telemetry state
//! ([`FlowObj`], through the socket's [`FlowSlot`], allocated when the
//! controller asks for it), the nonce of each probe, and the probe packet
//! itself.

use crate::bindings;
use crate::cong::{Algorithm, Event, Ops, RateSample as TcpRateSample, Sock};
use crate::flow::{FlowObj, FlowSlot, Mail, NoState};
use crate::hpcc_core::budget::Admit;
use crate::hpcc_core::control::{
    ctl_rec as cr, AckDecision, Conn, FlowCtl, GsoCap, Note, RateSample, Response, SfcState, SockCtl, TraceSample,
};
use crate::hpcc_core::knobs::Knobs;
use crate::modparam;
use crate::probe_tx::{self, now_ns};
use crate::sock::TcpSock;
use crate::stats::{inc, Counter};
use crate::trace;
use kernel::prelude::*;

/// HPCC++ with INT probes, Source Flow Control and the no-telemetry
/// fallback.
pub(crate) struct Hpcc;

/// `hpcc`'s ops, registered by the module (`cong::Registration`).
pub(crate) static OPS: Ops<Hpcc> = Ops::new();

// Every hook hpcc has (`min_tso_segs` included), and restricted like dctcp.
const _: () = {
    let o = Ops::<Hpcc>::TEMPLATE;
    assert!(o.init.is_some() && o.release.is_some() && o.ssthresh.is_some() && o.undo_cwnd.is_some());
    assert!(o.cong_control.is_some() && o.cwnd_event.is_some() && o.min_tso_segs.is_some());
    assert!(o.cong_avoid.is_none() && o.flags & bindings::TCP_CONG_NON_RESTRICTED == 0);
};

/// Per-socket state in `icsk_ca_priv`.
#[derive(Default, Clone, Copy, Zeroable)]
pub(crate) struct CaState {
    /// The controller's per-connection state.
    ctl: SockCtl,
    /// The flow's telemetry state, if it has one.
    flow: FlowSlot,
    /// Our cap on `sk_gso_max_segs` and the route's own limit.
    gso: GsoCap,
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

/// The flow's telemetry state and its controller state; created if it
/// has none and the controller `wants` it. Also returns what happened, as
/// `hpcc_ctl_rec` flags.
fn ensure_flow<'s>(
    tp: &TcpSock<'_>,
    ctl: &mut SockCtl,
    flow: &'s mut FlowSlot,
    k: &Knobs,
    c: &Conn,
    wants: fn(&SockCtl, &Knobs, &Conn) -> bool,
) -> (Option<(&'s FlowObj, &'s mut FlowCtl)>, u16) {
    let mut flags = 0;
    if flow.get(tp).is_none() && wants(ctl, k, c) {
        match create_flow(tp, flow, k, c) {
            Ok(()) => {
                tp.count(Counter::FlowsStarted);
                flags = cr::FLOW_CREATED;
            }
            Err(why) => {
                tp.count(match why {
                    NoState::OverLimit => Counter::FlowsLimited,
                    NoState::Churn => Counter::FlowsChurn,
                    NoState::NoMemory => Counter::FlowsNoState,
                });
                ctl.flow_refused(c.now_ns);
                flags = cr::FLOW_REFUSED;
            }
        }
    }
    let got = flow.get(tp);
    if got.is_some() {
        flags |= cr::HAS_FLOW;
    }
    (got, flags)
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
        (cr::PROBE_HELD as u32, b::HPCC_CTL_PROBE_HELD),
    ];
    let mut i = 0;
    while i < same.len() {
        assert!(same[i].0 == same[i].1);
        i += 1;
    }
};

/// The `tcp_hpcc:hpcc_ctl` record of a hook with what the connection
/// showed (`c`) and `flags`; the caller adds the rest.
fn ctl_rec(hook: u8, c: &Conn, flags: u16) -> bindings::hpcc_ctl_rec {
    let mut r = trace::ctl_rec();
    let shown = [(c.in_reduction, cr::IN_REDUCTION), (c.cwnd_limited, cr::CWND_LIMITED)];
    let flags = shown.iter().filter(|(on, _)| *on).fold(flags, |f, (_, bit)| f | bit);
    r.hook = hook;
    r.flags = flags;
    copy_fields!(r, c; now_ns, mss, cwnd, ssthresh, srtt_us, min_rtt_us, packets_out, in_flight, snd_nxt, max_pacing_rate);
    r
}

/// Allocates and publishes the flow's telemetry state into `slot`.
fn create_flow(tp: &TcpSock<'_>, slot: &mut FlowSlot, k: &Knobs, c: &Conn) -> Result<(), NoState> {
    let (Some((net, tuple)), Some(ctl)) = (tp.tuple(), FlowCtl::new(k, c)) else {
        return Err(NoState::NoMemory);
    };
    slot.create(tp, net, &tuple, ctl, k.max_flows_per_netns)
}

/// Caps the segments per TSO skb at `segs` (within the route's limit;
/// 0: the route's limit).
fn cap_tso(tp: &mut TcpSock<'_>, gso: &mut GsoCap, segs: u16) {
    let (current, can) = (tp.gso_max_segs(), tp.can_gso());
    let v = gso.apply(current, segs, can);
    if v != current {
        tp.set_gso_max_segs(v);
    }
}

/// A due probe: if the netns's probe budget admits it
/// (`FlowCtl::admit_probe`), sends it carrying `snd_nxt` and remembers its
/// nonce. Returns the trace flag: `PROBED`, `PROBE_HELD` (counted), or 0
/// if the socket has no IPv4/IPv6 4-tuple (then the controller's probe
/// clock does not move).
fn probe(tp: &TcpSock<'_>, flow: &FlowObj, ctl: &mut FlowCtl, k: &Knobs, c: &Conn) -> u16 {
    let (Some((_, tuple)), Some(net)) = (tp.tuple(), tp.net()) else { return 0 };
    let now = c.now_ns;
    match ctl.admit_probe(k, &net.state().budget, c) {
        Admit::Send => {}
        Admit::Wait => {
            inc(net, Counter::ProbesHeldShare);
            return cr::PROBE_HELD;
        }
        Admit::OverBudget => {
            inc(net, Counter::ProbesHeldBudget);
            return cr::PROBE_HELD;
        }
    }
    let nonce = probe_tx::random_u32();
    let snd_nxt = tp.snd_nxt();
    let spacing_us = ctl.probe_spacing_us(k, c);
    let slot = ctl.probe_sent(now);
    flow.nonces.record(slot as usize, nonce, snd_nxt, now);
    probe_tx::send_probe(tp, &tuple, nonce, snd_nxt, spacing_us);
    cr::PROBED
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
fn rate_sample(rs: &TcpRateSample<'_>) -> RateSample {
    RateSample {
        delivered: u32::try_from(rs.delivered()).unwrap_or(0),
        interval_us: u64::try_from(rs.interval_us()).unwrap_or(0),
        prior_in_flight: rs.prior_in_flight(),
        acked_sacked: rs.acked_sacked(),
        app_limited: rs.is_app_limited(),
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

#[vtable]
impl Algorithm for Hpcc {
    type Data = CaState;

    const NAME: &'static CStr = kernel::c_str!("hpcc");

    // Restricted, like dctcp: hpcc sends probes and needs the fabric's
    // support, so only CAP_NET_ADMIN or an admin's entry in
    // net.ipv4.tcp_allowed_congestion_control lets a socket or a netns
    // choose it.
    const NON_RESTRICTED: bool = false;

    fn init(sk: &mut Sock<'_, Self>) {
        let k = modparam::knobs();
        let (c, sent) = (conn(sk, now_ns()), sk.data_segs_out() > 0);
        let (ctl, d) = SockCtl::init(&k, &c, sent);
        if trace::ctl_enabled() {
            let flag = if sent { cr::HAS_SENT_DATA } else { 0 };
            let mut r = ctl_rec(cr::HOOK_INIT, &c, flag);
            (r.out_cwnd, r.out_ssthresh, r.out_pacing) = (d.cwnd, d.ssthresh, d.pacing_rate);
            r.out_pacing_shift = d.pacing_shift;
            sk.trace_ctl(&r);
        }
        sk.data().ctl = ctl;
        sk.set_cwnd(d.cwnd);
        sk.set_ssthresh(d.ssthresh);
        // Pace (sch_fq, or TCP's internal pacing) at the rate we set, in
        // small bursts: a burst is a queue at the bottleneck, and HPCC++
        // reads queues as load.
        sk.request_pacing();
        sk.set_pacing_shift(d.pacing_shift);
        sk.set_pacing_rate(d.pacing_rate);
    }

    fn release(sk: &mut Sock<'_, Self>) {
        let (tp, st) = sk.split();
        let (current, gso) = (tp.gso_max_segs(), tp.can_gso());
        if let Some(route) = st.gso.restore(current, gso) {
            tp.set_gso_max_segs(route);
        }
        st.flow.release(tp);
    }

    fn ssthresh(sk: &mut Sock<'_, Self>) -> u32 {
        let (k, c) = (modparam::knobs(), conn(sk, now_ns()));
        let ssthresh = sk.data().ctl.ssthresh(&k, &c);
        if trace::ctl_enabled() {
            let mut r = ctl_rec(cr::HOOK_SSTHRESH, &c, 0);
            r.out_ssthresh = ssthresh;
            sk.trace_ctl(&r);
        }
        ssthresh
    }

    fn undo_cwnd(sk: &mut Sock<'_, Self>) -> u32 {
        let cwnd = sk.cwnd();
        sk.data().ctl.undo_cwnd(cwnd)
    }

    fn min_tso_segs(_sk: &mut Sock<'_, Self>) -> u32 {
        SockCtl::MIN_TSO_SEGS
    }

    /// Data is about to leave with nothing in flight: the connection's
    /// first data, or a restart after idle. The controller may want a
    /// probe ahead of it (`FlowCtl::probe_at_tx_start`).
    fn cwnd_event(sk: &mut Sock<'_, Self>, ev: Event) {
        if ev != Event::TxStart {
            return;
        }
        let k = modparam::knobs();
        let (tp, st) = sk.split();
        let c = conn(tp, now_ns());
        let (flow, mut flags) = ensure_flow(tp, &mut st.ctl, &mut st.flow, &k, &c, SockCtl::wants_flow_on_tx_start);
        if let Some((flow, ctl)) = flow {
            if ctl.probe_at_tx_start(&k, &c) {
                flags |= probe(tp, flow, ctl, &k, &c);
            }
        }
        if trace::ctl_enabled() {
            tp.trace_ctl(&ctl_rec(cr::HOOK_TX_START, &c, flags));
        }
    }

    fn cong_control(sk: &mut Sock<'_, Self>, _ack: u32, _flag: i32, rs: Option<&TcpRateSample<'_>>) {
        let rs = rs.map(rate_sample);
        let k = modparam::knobs();
        let (tp, CaState { ctl: sock_ctl, flow: slot, gso }) = sk.split();
        let c = conn(tp, now_ns());
        let (flow, mut flags) = ensure_flow(tp, sock_ctl, slot, &k, &c, SockCtl::wants_flow_on_ack);
        let mut mail: Option<Mail> = None;
        let mut sfc = SfcState::default();
        let mut applied_to = None;
        let d: AckDecision = match flow {
            Some((flow, ctl)) => {
                mail = flow.mailbox.take();
                let response = mail.as_ref().map(|m| Response { rx_ns: m.rx_ns, snd_nxt: m.snd_nxt, int: &m.int });
                sfc = flow.sfc.state();
                let d = sock_ctl.on_ack(&k, &c, rs.as_ref(), Some((&mut *ctl, response.as_ref(), &sfc)));
                if d.take_pause {
                    let until = flow.sfc.take_pause();
                    if until != 0 {
                        tp.pause_until(until);
                        flow.view.set_pause(until);
                    }
                }
                if let Some(t) = &d.trace {
                    tp.trace_sample(&trace_rec(t));
                    flow.view.set_sample(t, mail.as_ref().map_or(c.now_ns, |m| m.rx_ns));
                }
                if d.probe {
                    flags |= probe(tp, flow, ctl, &k, &c);
                }
                applied_to = Some(flow);
                d
            }
            None => sock_ctl.on_ack(&k, &c, rs.as_ref(), None),
        };
        if trace::ctl_enabled() {
            tp.trace_ctl(&ack_rec(&c, flags, rs.as_ref(), mail.as_ref(), &sfc, &d));
        }
        let cwnd = tp.set_cwnd(d.cwnd);
        let rate = tp.set_pacing_rate(d.pacing_rate);
        tp.set_pacing_shift(d.pacing_shift);
        cap_tso(tp, gso, d.tso_segs);
        if let Some(flow) = applied_to {
            flow.view.set_applied(cwnd, rate);
        }
        if let Some(net) = tp.net() {
            for n in d.notes.iter() {
                inc(net, counter(n));
            }
        }
    }
}
