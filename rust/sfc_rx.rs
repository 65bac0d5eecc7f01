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
//!
//! The hook holds `rcu_read_lock()`; the flow is found in the flow table,
//! its socket through TCP's own lookup, and the socket is touched only
//! under `bh_lock_sock()` (`sock::LockedSock`), as TCP's ICMP error path
//! does.

use crate::bindings;
use crate::flow::table;
use crate::hpcc_core::probe::{v4_mapped, Tuple};
use crate::hpcc_core::sfc::{self, Reject};
use crate::netns::NetRef;
use crate::params;
use crate::sock::LockedSock;
use crate::stats::{inc, Counter};
use core::net::IpAddr;

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

/// The netns's token bucket, under the shim's lock.
fn admit(net: NetRef, rules: &sfc::Rules, ttl: u8, src: IpAddr, now: u64) -> Result<(), Reject> {
    // The other rules first, without the lock: refused senders never take it.
    rules.check_sender(ttl, src)?;
    // SAFETY: no preconditions; paired with the unlock below.
    unsafe { bindings::hpcc_sfc_lock() };
    // SAFETY: the bucket is only touched under hpcc_sfc_lock.
    let ok = unsafe { &mut *net.state().sfc_bucket.get() }.admit(now, rules.rate, rules.burst);
    // SAFETY: taken above.
    unsafe { bindings::hpcc_sfc_unlock() };
    if ok {
        Ok(())
    } else {
        Err(Reject::RateLimited)
    }
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
    let rules = params::sfc_rules(&params::knobs());
    if let Err(r) = admit(net, &rules, i.ttl, i.src, now) {
        inc(net, counter(r));
        return if r == Reject::Disabled { Verdict::Pass } else { Verdict::Consume };
    }
    let outcome = match sfc::parse(i.payload) {
        Err(r) => Err(r),
        // SAFETY: caller contract (hook, RCU read lock, live skb).
        Ok(s) => unsafe { apply(net, rx, &rules, &s, now) },
    };
    inc(net, match outcome {
        Ok(c) => c,
        Err(r) => counter(r),
    });
    Verdict::Consume
}

/// Pauses the hpcc flow a valid signal names.
///
/// # Safety
///
/// As [`on_udp`].
unsafe fn apply(net: NetRef, rx: *const bindings::sk_buff, rules: &sfc::Rules, s: &sfc::Signal, now: u64) -> Result<Counter, Reject> {
    if s.l4proto != sfc::IPPROTO_TCP {
        return Err(Reject::NoFlow);
    }
    // The data packet's source is this host: the flow's local end.
    let t = Tuple { saddr: bytes16(s.saddr), daddr: bytes16(s.daddr), sport: s.sport, dport: s.dport };
    // SAFETY: caller contract: the hook's netns and skb, under RCU.
    let mut sk = unsafe { LockedSock::find(net, rx, &t) }.ok_or(Reject::NoFlow)?;
    // SAFETY: the hook holds rcu_read_lock() for this whole call.
    unsafe {
        table::with_flow(net, &t, |flow| {
            if !flow.owned_by(sk.as_sock()) {
                return Err(Reject::NoFlow);
            }
            let pause = rules.check_flow(s, Some(sk.window()))?;
            let until = now.saturating_add(pause);
            let applied = sk.pause_until(until);
            flow.sfc.put(s.qlen, s.speed, (!applied).then_some(until));
            Ok(if applied { Counter::SfcApplied } else { Counter::SfcDeferred })
        })
    }
    .unwrap_or(Err(Reject::NoFlow))
}
