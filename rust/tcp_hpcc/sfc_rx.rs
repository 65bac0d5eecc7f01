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
//! * Enabled: it is consumed; the core's rules ([`sfc::Rules::admit`])
//!   decide from the datagram and from what the kernel knows of its
//!   arrival (device, loopback, tunnel, whether the source is a local
//!   address), and the first failed rule is counted and changes nothing.
//!   The signal must then name a local socket's tuple: an hpcc flow, or
//!   with `sfc_scope` 1 another TCP socket (its sequence number checked
//!   against that socket's window) or a UDP socket. An hpcc flow's
//!   departure clock moves to now + pause (clamped; now read under the
//!   socket's lock), at once when no process owns the socket, or at its
//!   next ACK; and the next ACK cuts the window (`sfc_window_cut`).
//!   Another flow is put in the netns's pause table; the egress hook
//!   (`probe_tx`) then gives each packet that a socket of this netns sends
//!   on it a departure time no earlier than the deadline, which sch_fq
//!   honours.
//! * Every signal fires the `tcp_hpcc:hpcc_sfc` tracepoint with its
//!   outcome.
//!
//! Context: the LOCAL_IN hook runs in softirq, or in the process context
//! of an NFQUEUE verdict with bottom halves on. So every lock here is
//! taken with bottom halves off: the netns's SFC lock (`spin_lock_bh`)
//! and the socket's (`LockedSock`: `local_bh_disable()` then
//! `bh_lock_sock()`). Readers of the knobs and lists never wait
//! (`modparam`), and the egress hook reads the pause table lock-free.
//!
//! The hook holds `rcu_read_lock()`; the flow is found in the flow table,
//! its socket through TCP's own lookup, and the socket is touched only
//! under `bh_lock_sock()` (`sock::LockedSock`), as TCP's ICMP error path
//! does.

use crate::bindings;
use crate::flow::table;
use crate::hpcc_core::probe::{v4_mapped, Tuple};
use crate::hpcc_core::sfc::{self, FlowKey, Outcome, Reject, Taken};
use crate::netns::NetRef;
use crate::modparam;
use crate::probe_tx::now_ns;
use crate::sock::LockedSock;
use crate::stats::{inc, inc_outcome, Counter};
use core::net::IpAddr;

/// What the hook does with the packet.
pub(crate) enum Verdict {
    /// Not a signal, or SFC disabled: pass it on.
    Pass,
    /// A signal, acted on or refused: consume it.
    Consume,
}

fn bytes16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4_mapped(v4.octets()),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The keyed hash of a signal's source (its bucket, its pause quota).
fn source_key(src: IpAddr) -> u64 {
    table::keyed_hash(&bytes16(src))
}

/// What the kernel knows of `rx`'s arrival, as the core reads it.
///
/// # Safety
///
/// `rx` is the live skb of the calling hook in `net`, under its RCU read
/// lock.
unsafe fn arrival(net: NetRef<'_>, rx: *const bindings::sk_buff) -> sfc::Arrival {
    // SAFETY: a plain C struct of integers and bytes: all zeroes is valid.
    let mut a: bindings::hpcc_sfc_arrival = unsafe { core::mem::zeroed() };
    // SAFETY: caller contract; `a` is a valid, writable struct.
    unsafe { bindings::hpcc_sfc_arrival(net.as_ptr(), rx, &mut a) };
    let mut ifname = [0u8; sfc::IFNAME_MAX + 1];
    for (d, s) in ifname.iter_mut().zip(a.ifname.iter()) {
        *d = *s as u8;
    }
    sfc::Arrival { loopback: a.loopback != 0, tunneled: a.tunneled != 0, ifname }
}

/// Handles a packet whose IP header passed `sfc::is_candidate`: `pkt` is
/// its first bytes (at least `sfc::MAX_SIGNAL_PACKET` if it is that long),
/// `pkt_len` its whole length, `rx` the hook's skb.
///
/// # Safety
///
/// Called from the netfilter hook of `net` with its live skb `rx`, under
/// the hook's `rcu_read_lock()`.
pub(crate) unsafe fn on_udp(net: NetRef<'_>, rx: *const bindings::sk_buff, pkt: &[u8], pkt_len: usize, now: u64) -> Verdict {
    // Foreign UDP traffic pays for one knob and a header compare only.
    let Some(i) = sfc::incoming(pkt, pkt_len, modparam::sfc_port()) else { return Verdict::Pass };
    if !sfc::recognize(i.payload) {
        return Verdict::Pass;
    }
    inc(net, Counter::SfcReceived);
    // SAFETY: a plain C struct of integers and byte arrays: all zeroes is valid.
    let mut rec: bindings::hpcc_sfc_trace_rec = unsafe { core::mem::zeroed() };
    rec.src = bytes16(i.src);
    let rules = modparam::sfc_rules(&modparam::knobs());
    let arrived = if rules.enabled {
        // SAFETY: caller contract (hook, RCU read lock, live skb).
        unsafe { arrival(net, rx) }
    } else {
        sfc::Arrival::default()
    };
    let is_local = |src: IpAddr| {
        let a = bytes16(src);
        // SAFETY: caller contract; `a` is a 16-byte array the shim only reads.
        unsafe { bindings::hpcc_addr_is_local(net.as_ptr(), rx, a.as_ptr()) }
    };
    let st = net.state();
    // The source's keyed hash: its bucket, and its share of the pause table.
    let src_key = if rules.enabled { source_key(i.src) } else { 0 };
    let take_token = |_: IpAddr| st.sfc_locked(|buckets, _| buckets.admit(src_key, now, rules.rate, rules.burst));
    let outcome = rules.admit(&i, &arrived, is_local, take_token).and_then(|s| {
        rec.laddr = bytes16(s.saddr);
        rec.raddr = bytes16(s.daddr);
        rec.lport = s.sport;
        rec.rport = s.dport;
        copy_fields!(rec, s; switch_id, port_id, qlen, pause_ns);
        // SAFETY: caller contract (hook, RCU read lock, live skb).
        let (t, applied, at) = unsafe { apply(net, rx, &rules, &s, src_key, now) }?;
        rec.applied_ns = applied;
        rec.at_ns = at;
        Ok(t)
    });
    let o = Outcome::from(outcome);
    inc_outcome(net, o);
    rec.outcome = o as u8;
    // SAFETY: `rec` is a valid record the tracepoint only reads during the call.
    unsafe { bindings::hpcc_trace_sfc(&rec) };
    if matches!(outcome, Err(Reject::Disabled)) {
        Verdict::Pass
    } else {
        Verdict::Consume
    }
}

/// Holds the flow a signal names at egress until `now + pause`
/// (`sfc_scope` 1).
fn pause_at_egress(net: NetRef<'_>, s: &sfc::Signal, source: u64, pause: u64, now: u64) -> Result<(Taken, u64, u64), Reject> {
    let k = FlowKey::of_signal(s);
    let hash = table::keyed_hash(&k.bytes());
    let until = now.saturating_add(pause);
    net.state().sfc_locked(|_, pauses| pauses.insert(&k, hash, until, now, source, s))?;
    Ok((Taken::Egress, pause, now))
}

/// The egress hook's question: the deadline of the flow `k` of an
/// outgoing packet of `net`, if it is paused at `now` (lock-free).
pub(crate) fn egress_until(net: NetRef<'_>, k: &FlowKey, now: u64) -> Option<u64> {
    net.state().sfc_pauses.until(k, table::keyed_hash(&k.bytes()), now)
}

/// Whether anything may be paused at egress in `net`: one atomic load,
/// before the hook reads the clock or the packet.
#[inline]
pub(crate) fn egress_active(net: NetRef<'_>) -> bool {
    net.state().sfc_pauses.marked()
}

/// Pauses the flow a valid signal names: what became of it, the pause
/// applied (ns) and when it began (`until` is that plus the pause).
///
/// # Safety
///
/// As [`on_udp`].
unsafe fn apply(
    net: NetRef<'_>,
    rx: *const bindings::sk_buff,
    rules: &sfc::Rules,
    s: &sfc::Signal,
    source: u64,
    now: u64,
) -> Result<(Taken, u64, u64), Reject> {
    // The data packet's source is this host: the flow's local end.
    let t = Tuple { saddr: bytes16(s.saddr), daddr: bytes16(s.daddr), sport: s.sport, dport: s.dport };
    if s.l4proto != sfc::IPPROTO_TCP {
        // A UDP flow: never hpcc's; it has no window to check, but it
        // must be a local socket's.
        let pause = rules.check_other_flow(s, None)?;
        // SAFETY: caller contract: the hook's netns and skb, under RCU;
        // the family of `t` is the packet's (`Rules::admit`).
        let exists = unsafe {
            bindings::hpcc_udp_sock_exists(net.as_ptr(), rx, t.saddr.as_ptr(), t.sport.to_be(), t.daddr.as_ptr(), t.dport.to_be())
        };
        return if exists { pause_at_egress(net, s, source, pause, now) } else { Err(Reject::NoFlow) };
    }
    // SAFETY: caller contract: the hook's netns and skb, under RCU.
    let mut sk = unsafe { LockedSock::find(net, rx, &t) }.ok_or(Reject::NoFlow)?;
    // SAFETY: the hook holds rcu_read_lock() for this whole call.
    let hpcc = unsafe {
        table::with_flow(net, &t, |flow| {
            if !flow.owned_by(sk.as_sock()) {
                return None;
            }
            Some(rules.check_flow(s, Some(sk.window())).and_then(|pause| {
                if !flow.first_signal(&sk, s) {
                    return Err(Reject::Duplicate);
                }
                // The pause runs from when the flow's clock moves, read
                // under the socket's lock: the hook may have waited for
                // that lock or been preempted since `now` (an NFQUEUE
                // verdict in process context; a descheduled vCPU), and
                // the flow kept sending meanwhile.
                let at = now_ns().max(now);
                let until = at.saturating_add(pause);
                let applied = sk.pause_until(until);
                if applied {
                    flow.view.set_pause(until);
                }
                flow.sfc.put(at, s.qlen, s.speed, (!applied).then_some(until));
                Ok((if applied { Taken::Applied } else { Taken::Deferred }, pause, at))
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
    pause.and_then(|p| pause_at_egress(net, s, source, p, now))
}
