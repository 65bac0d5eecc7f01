// SPDX-License-Identifier: GPL-2.0

//! Source Flow Control on the host: a switch's pause signal
//! (`include/hpcc_sfc.h`) arrives as a UDP datagram in the netfilter hook
//! (`probe_tx`), is accepted or refused by the core's rules
//! (`hpcc_core::sfc`), and pauses the hpcc flow it names.
//!
//! * Not ours: anything but UDP to `sfc_port` starting with the magic
//!   passes untouched.
//! * With `sfc_enable` 0 (the default) a signal is counted
//!   (`sfc_disabled`) and passed on untouched, as if the module were not
//!   there.
//! * Enabled: it is consumed; the first failed rule is counted (TTL,
//!   access list, the netns's token bucket, header, flow, sequence
//!   window) and changes nothing; else the flow's departure clock moves to
//!   now + pause (clamped), at once when no process owns the socket, or at
//!   its next ACK; and the next ACK cuts the window (`sfc_window_cut`).
//! * With `sfc_scope` 1, a signal for a TCP flow of another congestion
//!   control (its sequence number checked against that socket's window)
//!   or for a UDP flow puts the flow in the netns's pause table; the
//!   egress hook (`probe_tx`) then gives each of its packets a departure
//!   time no earlier than the deadline, which sch_fq honours.
//! * Every signal fires the `tcp_hpcc:hpcc_sfc` tracepoint with its
//!   outcome.
//!
//! The hook holds `rcu_read_lock()`; the flow is found in the flow table,
//! its socket through TCP's own lookup, and the socket is touched only
//! under `bh_lock_sock()` (`sock::LockedSock`), as TCP's ICMP error path
//! does.

use crate::bindings;
use crate::flow::table;
use crate::hpcc_core::probe::{v4_mapped, Tuple};
use crate::hpcc_core::sfc::{self, FlowKey, Reject};
use crate::netns::NetRef;
use crate::params;
use crate::sock::LockedSock;
use crate::stats::{inc, Counter};
use core::net::IpAddr;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// What the hook does with the packet.
pub(crate) enum Verdict {
    /// Not a signal, or SFC disabled: pass it on.
    Pass,
    /// A signal, acted on or refused: consume it.
    Consume,
}

fn counter(r: Reject) -> Counter {
    match r {
        Reject::Disabled => Counter::SfcDisabled,
        Reject::Ttl => Counter::SfcTtl,
        Reject::Acl => Counter::SfcAcl,
        Reject::RateLimited => Counter::SfcRateLimited,
        Reject::Truncated => Counter::SfcTruncated,
        Reject::BadHeader => Counter::SfcBadHeader,
        Reject::NoFlow => Counter::SfcNoFlow,
        Reject::SeqOutOfWindow => Counter::SfcSeq,
    }
}

fn bytes16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4_mapped(v4.octets()),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// Runs `f` under the shim's SFC lock (the netns's token bucket and
/// pause table live under it).
fn locked<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: no preconditions; paired with the unlock below (`f` does not
    // unwind: the kernel aborts on panic).
    unsafe { bindings::hpcc_sfc_lock() };
    let r = f();
    // SAFETY: taken above.
    unsafe { bindings::hpcc_sfc_unlock() };
    r
}

/// The netns's token bucket, under the shim's lock.
fn admit(net: NetRef, rules: &sfc::Rules, ttl: u8, src: IpAddr, now: u64) -> Result<(), Reject> {
    // The other rules first, without the lock: refused senders never take it.
    rules.check_sender(ttl, src)?;
    // SAFETY: the bucket is only touched under the lock `locked` holds.
    let ok = locked(|| unsafe { &mut *net.state().sfc_bucket.get() }.admit(now, rules.rate, rules.burst));
    if ok {
        Ok(())
    } else {
        Err(Reject::RateLimited)
    }
}

/// Holds flow `k` at egress until `until` (`sfc_scope` 1): false if the
/// netns's pause table is full of other live pauses.
fn pause_at_egress(net: NetRef, k: FlowKey, until: u64, now: u64) -> bool {
    let st = net.state();
    locked(|| {
        // SAFETY: the table is only touched under the lock `locked` holds.
        let t = unsafe { &mut *st.sfc_pauses.get() };
        let ok = t.insert(k, until, now);
        st.sfc_pause_latest.store(t.latest(), Release);
        ok
    })
}

/// The egress hook's question: the deadline of the flow `k` of an
/// outgoing packet of `net`, if it is paused at `now`.
pub(crate) fn egress_until(net: NetRef, k: &FlowKey, now: u64) -> Option<u64> {
    let st = net.state();
    let latest = st.sfc_pause_latest.load(Acquire);
    if latest <= now {
        // All over: back to the hook's clock-free fast path, unless a new
        // pause came in meanwhile (it stored a later deadline).
        let _ = st.sfc_pause_latest.compare_exchange(latest, 0, Relaxed, Relaxed);
        return None;
    }
    // SAFETY: the table is only touched under the lock `locked` holds.
    locked(|| unsafe { &*st.sfc_pauses.get() }.until(k, now))
}

/// Whether anything may be paused at egress in `net`: one atomic load,
/// before the hook reads the clock or the packet (false again once the
/// last pause is over and a packet has seen it).
#[inline]
pub(crate) fn egress_active(net: NetRef) -> bool {
    net.state().sfc_pause_latest.load(Acquire) != 0
}

/// The tracepoint's outcome code of a counted outcome.
fn outcome_code(c: Counter) -> u8 {
    let o = match c {
        Counter::SfcApplied => bindings::hpcc_sfc_outcome_HPCC_SFC_APPLIED,
        Counter::SfcDeferred => bindings::hpcc_sfc_outcome_HPCC_SFC_DEFERRED,
        Counter::SfcDisabled => bindings::hpcc_sfc_outcome_HPCC_SFC_DISABLED,
        Counter::SfcTtl => bindings::hpcc_sfc_outcome_HPCC_SFC_BAD_TTL,
        Counter::SfcAcl => bindings::hpcc_sfc_outcome_HPCC_SFC_NOT_IN_ACL,
        Counter::SfcRateLimited => bindings::hpcc_sfc_outcome_HPCC_SFC_RATE_LIMITED,
        Counter::SfcTruncated => bindings::hpcc_sfc_outcome_HPCC_SFC_TRUNCATED,
        Counter::SfcBadHeader => bindings::hpcc_sfc_outcome_HPCC_SFC_BAD_HEADER,
        Counter::SfcSeq => bindings::hpcc_sfc_outcome_HPCC_SFC_SEQ_OUT_OF_WINDOW,
        Counter::SfcAppliedEgress => bindings::hpcc_sfc_outcome_HPCC_SFC_APPLIED_EGRESS,
        Counter::SfcTableFull => bindings::hpcc_sfc_outcome_HPCC_SFC_PAUSE_TABLE_FULL,
        _ => bindings::hpcc_sfc_outcome_HPCC_SFC_NO_FLOW,
    };
    o as u8
}

/// Handles a packet whose IP header passed `sfc::is_candidate`: `pkt` is
/// its first bytes (at least `sfc::MAX_SIGNAL_PACKET` if it is that long),
/// `rx` the hook's skb.
///
/// # Safety
///
/// Called from the netfilter hook of `net` with its live skb `rx`, under
/// the hook's `rcu_read_lock()`.
pub(crate) unsafe fn on_udp(net: NetRef, rx: *const bindings::sk_buff, pkt: &[u8], now: u64) -> Verdict {
    // Foreign UDP traffic pays for one knob and a header compare only.
    let Some(i) = sfc::incoming(pkt, params::sfc_port()) else { return Verdict::Pass };
    if !sfc::recognize(i.payload) {
        return Verdict::Pass;
    }
    inc(net, Counter::SfcReceived);
    // SAFETY: a plain C struct of integers and byte arrays: all zeroes is valid.
    let mut rec: bindings::hpcc_sfc_trace_rec = unsafe { core::mem::zeroed() };
    rec.src = bytes16(i.src);
    let rules = params::sfc_rules(&params::knobs());
    let outcome = admit(net, &rules, i.ttl, i.src, now).and_then(|()| {
        let s = sfc::parse(i.payload)?;
        rec.laddr = bytes16(s.saddr);
        rec.raddr = bytes16(s.daddr);
        rec.lport = s.sport;
        rec.rport = s.dport;
        rec.switch_id = s.switch_id;
        rec.port_id = s.port_id;
        rec.qlen = s.qlen;
        rec.pause_ns = s.pause_ns;
        // SAFETY: caller contract (hook, RCU read lock, live skb).
        let (c, applied) = unsafe { apply(net, rx, &rules, &s, now) }?;
        rec.applied_ns = applied;
        Ok(c)
    });
    let c = outcome.unwrap_or_else(counter);
    inc(net, c);
    rec.outcome = outcome_code(c);
    // SAFETY: `rec` is a valid record the tracepoint only reads during the call.
    unsafe { bindings::hpcc_trace_sfc(&rec) };
    if matches!(outcome, Err(Reject::Disabled)) {
        Verdict::Pass
    } else {
        Verdict::Consume
    }
}

/// Pauses the hpcc flow a valid signal names: the counter of the outcome
/// and the pause applied (ns).
///
/// # Safety
///
/// As [`on_udp`].
unsafe fn apply(
    net: NetRef,
    rx: *const bindings::sk_buff,
    rules: &sfc::Rules,
    s: &sfc::Signal,
    now: u64,
) -> Result<(Counter, u64), Reject> {
    let egress = |pause: u64| {
        let until = now.saturating_add(pause);
        if pause_at_egress(net, FlowKey::of_signal(s), until, now) {
            Ok((Counter::SfcAppliedEgress, pause))
        } else {
            Ok((Counter::SfcTableFull, 0))
        }
    };
    if s.l4proto != sfc::IPPROTO_TCP {
        // A UDP flow: never hpcc's; it has no window to check.
        return rules.check_other_flow(s, None).and_then(egress);
    }
    // The data packet's source is this host: the flow's local end.
    let t = Tuple { saddr: bytes16(s.saddr), daddr: bytes16(s.daddr), sport: s.sport, dport: s.dport };
    // SAFETY: caller contract: the hook's netns and skb, under RCU.
    let mut sk = unsafe { LockedSock::find(net, rx, &t) }.ok_or(Reject::NoFlow)?;
    // SAFETY: the hook holds rcu_read_lock() for this whole call.
    let hpcc = unsafe {
        table::with_flow(net, &t, |flow| {
            if !flow.owned_by(sk.as_sock()) {
                return None;
            }
            Some(rules.check_flow(s, Some(sk.window())).map(|pause| {
                let until = now.saturating_add(pause);
                let applied = sk.pause_until(until);
                if applied {
                    flow.view.set_pause(until);
                }
                flow.sfc.put(now, s.qlen, s.speed, (!applied).then_some(until));
                (if applied { Counter::SfcApplied } else { Counter::SfcDeferred }, pause)
            }))
        })
    }
    .flatten();
    if let Some(r) = hpcc {
        return r;
    }
    // A TCP flow of another congestion control.
    let pause = rules.check_other_flow(s, Some(sk.window()));
    drop(sk);
    pause.and_then(egress)
}
