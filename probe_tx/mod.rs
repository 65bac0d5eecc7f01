// SPDX-License-Identifier: GPL-2.0

//! The module's packet I/O (draft section 7.2): it sends and receives
//! probes and responses, receives the switches' SFC signals, and holds
//! paused flows at egress.
//!
//! * **Sender**: [`send_probe`] emits a small probe for a flow (its own
//!   4-tuple, the probe DSCP, a nonce and `snd_nxt`, an INT stack empty
//!   but for the flow's probe spacing in its header's padding)
//!   as its own skb, outside TCP: no TSO, no sequence space.
//! * **Receiver**: a netfilter `LOCAL_IN` hook (IPv4 and IPv6), registered
//!   in every network namespace, consumes probes before TCP sees them and
//!   answers each one for an established connection with a response (reverse 4-tuple,
//!   response DSCP, the echoed nonce, `snd_nxt` and INT stack).
//! * **Sender again**: the same hook consumes responses, validates them
//!   (length, header, INT stack, `nHop <= max_hops`, the flow, the nonce and
//!   its age) and deposits the newest in the flow's mailbox for the next
//!   ACK (see `flow`).
//! * **Everything else passes untouched**: a packet is taken only if it
//!   parses completely as a probe or response (DSCP, TCP, magic, version,
//!   type, length). Another packet with one of our DSCPs (a peer's marked
//!   traffic, a re-marking network) is counted by why it is not ours and
//!   accepted.
//! * **Source Flow Control**: the `LOCAL_IN` hook hands switches' signals
//!   to `sfc_rx`; a `POST_ROUTING` hook holds the packets of flows paused
//!   at egress (`sfc_scope` 1) and touches nothing else.
//! * Probes and responses are routed as their connection's data (see
//!   `hpcc_sk_send` in `probe_tx/io.c`): same path, same flow label, and
//!   never in clear where the connection is protected by IPsec.
//!
//! Packet bytes are built and parsed by the pure `hpcc_core::probe`; this
//! file only moves them in and out of skbs, and `io.c` holds the part of
//! the packet I/O Rust cannot call (route and socket lookups, output).

use crate::bindings;
use crate::flow::{table, FlowObj, Mail};
use crate::hpcc_core::nonce;
use crate::netns::NetRef;
use crate::hpcc_core::probe::{self, Kind, Packet, ProbeError, Tuple, CANDIDATE_LEN, MAX_PACKET_LEN};
use crate::hpcc_core::sfc;
use crate::sfc_rx;
use crate::modparam;
use crate::sock::TcpSock;
use crate::stats::{inc, Counter};
use core::cell::UnsafeCell;
use core::ffi::{c_int, c_uint, c_void};
use core::mem::MaybeUninit;
use core::ptr::NonNull;

/// A random nonce for a probe.
#[inline]
pub(crate) fn random_u32() -> u32 {
    // SAFETY: get_random_u32() has no preconditions.
    unsafe { bindings::get_random_u32() }
}

/// Host clock in ns (CLOCK_MONOTONIC, as TCP's and eBPF's).
#[inline]
pub(crate) fn now_ns() -> u64 {
    // SAFETY: ktime_get() has no preconditions; it never returns a negative time.
    let t = unsafe { bindings::ktime_get() };
    u64::try_from(t).unwrap_or(0)
}

/// Why a packet was not sent.
enum TxError {
    /// The connection's route is an IPsec bundle or blocked by policy:
    /// nothing leaves in clear.
    Protected,
    /// The receiver has no established connection for the probe.
    NoSocket,
    /// No memory, no route, or the device dropped it.
    Failed,
}

/// Copies a packet built by `hpcc_core::probe` into a fresh skb and hands
/// it to `xmit` (one of the shim's senders, which consumes it).
fn send(bytes: &[u8], xmit: impl FnOnce(*mut bindings::sk_buff) -> c_int) -> Result<(), TxError> {
    let len = bytes.len();
    // SAFETY: no preconditions; GFP_ATOMIC inside, so any context is fine.
    let skb = unsafe { bindings::hpcc_skb_alloc_ip(len as c_uint) };
    if skb.is_null() {
        return Err(TxError::Failed);
    }
    // SAFETY: `skb` is our fresh skb with `len` bytes of tailroom, so
    // skb_put returns `len` writable bytes that nothing else aliases, and
    // `bytes` has exactly `len` readable bytes.
    unsafe {
        let dst = bindings::skb_put(skb, len as c_uint).cast::<u8>();
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len);
    }
    match xmit(skb) {
        0 => Ok(()),
        r if r == bindings::HPCC_TX_PROTECTED as c_int => Err(TxError::Protected),
        r if r == bindings::HPCC_TX_NO_SOCKET as c_int => Err(TxError::NoSocket),
        _ => Err(TxError::Failed),
    }
}

/// Sends a probe for the flow `t` (local to remote) of the socket `tp`,
/// routed as its data, saying the flow's probe spacing `spacing_us` (0:
/// none). Counts the outcome.
pub(crate) fn send_probe(tp: &TcpSock<'_>, t: &Tuple, nonce: u32, snd_nxt: u32, spacing_us: u16) {
    let dscp = modparam::dscps().0;
    let mut bytes = [0u8; MAX_PACKET_LEN];
    let len = probe::build_probe(&mut bytes, t, dscp, nonce, snd_nxt, spacing_us);
    // SAFETY: `send` passes a fresh skb it owns, holding the probe.
    let sent = send(bytes.get(..len).unwrap_or(&[]), |skb| unsafe { tp.send_skb(skb, dscp << 2) });
    tp.count(match sent {
        Ok(()) => Counter::ProbesSent,
        Err(TxError::Protected) => Counter::ProbesIpsec,
        Err(_) => Counter::ProbeSendErrors,
    });
}

/// A received skb inside our hook.
struct RxSkb(NonNull<bindings::sk_buff>);

impl RxSkb {
    /// The packet's length (from its IP header at the hooks we use).
    fn len(&self) -> usize {
        // SAFETY: the skb is live for the hook call; `len` is a plain field.
        unsafe { core::ptr::addr_of!((*self.0.as_ptr()).len).read() as usize }
    }

    /// The skb's linear head: the `skb_headlen` bytes at `skb->data`,
    /// where the IP header starts at the hooks we use (`ip_rcv_core` and
    /// `ipv6_rcv` pulled it there; at POST_ROUTING the stack built it
    /// there).
    fn head(&self) -> &[u8] {
        let skb = self.0.as_ptr();
        // SAFETY: the skb is live for the hook call (netfilter holds it
        // until the verdict, and `self` does not outlive the hook); `len`,
        // `data_len` and `data` are plain fields.
        let (len, data_len, data) = unsafe {
            (
                core::ptr::addr_of!((*skb).len).read(),
                core::ptr::addr_of!((*skb).data_len).read(),
                core::ptr::addr_of!((*skb).data).read(),
            )
        };
        if data.is_null() {
            return &[];
        }
        // SAFETY: `data` points at `len - data_len` (skb_headlen) bytes of
        // the skb's linear buffer, which stays allocated while the hook
        // holds the skb and which nothing writes during the hook (a clone
        // shares it read-only); the slice lives no longer than `&self`.
        unsafe { core::slice::from_raw_parts(data, len.saturating_sub(data_len) as usize) }
    }

    /// Copies up to `out.len()` bytes from the start of the packet (the
    /// IP header in LOCAL_IN) and returns how many.
    fn copy_prefix(&self, out: &mut [u8]) -> usize {
        let n = self.len().min(out.len());
        // SAFETY: `n` <= skb->len and <= out.len(); skb_copy_bits handles
        // non-linear data and writes exactly `n` bytes into `out`.
        let ret = unsafe { bindings::skb_copy_bits(self.0.as_ptr(), 0, out.as_mut_ptr().cast(), n as c_int) };
        if ret == 0 {
            n
        } else {
            0
        }
    }
}

/// Counts a malformed probe or response.
fn count_malformed(net: NetRef<'_>, e: ProbeError) {
    inc(net, match e {
        ProbeError::Truncated => Counter::MalformedTruncated,
        ProbeError::Fragment | ProbeError::BadHeader => Counter::MalformedHeader,
        ProbeError::BadMagic => Counter::MalformedMagic,
        ProbeError::BadVersion | ProbeError::BadType | ProbeError::BadLength => Counter::MalformedVersionTypeLen,
    });
}

/// Receiver: answers a probe (received as `rx`) of an established
/// connection, routed as that connection's data.
fn on_probe(net: NetRef<'_>, rx: &RxSkb, p: &Packet<'_>, now: u64) {
    inc(net, Counter::ProbesReceived);
    // The netns's response budget (`response_budget` a second): no
    // sender, or set of senders, makes this host build more.
    if !net.state().budget.take_response(now, modparam::knobs().response_budget) {
        return inc(net, Counter::ProbesOverResponseBudget);
    }
    let t = &p.tuple;
    let dscp = modparam::dscps().1;
    // The receiver's flow count (hpcc_core::rcvcount), this flow included,
    // over windows fit to the probe's spacing; the flow is recorded only
    // once its response is sent, so probes nobody answers (no socket) do
    // not count.
    let window_ns = u64::from(modparam::knobs().rcv_count_us) * 1000;
    let hash = if window_ns == 0 { 0 } else { table::hash_of(net, t) };
    let spacing_us = probe::spacing_us(p);
    let rcv_flows = match window_ns {
        0 => 0,
        w => net.state().rcv_flows.count_with(now, w, spacing_us, hash),
    };
    let mut bytes = [0u8; MAX_PACKET_LEN];
    let len = probe::build_response(&mut bytes, p, dscp, rcv_flows);
    let sent = send(bytes.get(..len).unwrap_or(&[]), |skb| {
        // SAFETY: `net` is the live netns of the hook and `rx` its live
        // skb, whose control block the IP layer filled before LOCAL_IN;
        // the addresses are 16-byte arrays the shim only reads; it takes
        // and drops its own socket reference and consumes `skb`.
        unsafe {
            bindings::hpcc_reply(
                net.as_ptr(),
                rx.0.as_ptr(),
                t.daddr.as_ptr(),
                t.dport.to_be(),
                t.saddr.as_ptr(),
                t.sport.to_be(),
                skb,
                dscp << 2,
            )
        }
    });
    if sent.is_ok() && window_ns != 0 {
        net.state().rcv_flows.insert(now, window_ns, spacing_us, hash);
    }
    inc(net, match sent {
        Ok(()) => Counter::ResponsesSent,
        // Not a flow of ours to answer: no reflection for strangers.
        Err(TxError::NoSocket) => Counter::ProbesNoSocket,
        Err(TxError::Protected) => Counter::ResponsesIpsec,
        Err(TxError::Failed) => Counter::ResponseSendErrors,
    });
}

/// Sender: validates a response and hands it to its flow.
fn on_response(net: NetRef<'_>, p: &Packet<'_>, now: u64) {
    inc(net, Counter::ResponsesReceived);
    match probe::admit_int(p.int, modparam::knobs().max_hops) {
        Err(probe::IntReject::TooManyHops) => return inc(net, Counter::ResponsesTooManyHops),
        Err(probe::IntReject::Bad) => return inc(net, Counter::ResponsesBadInt),
        Ok(()) => {}
    }
    let mut mail = Mail {
        rx_ns: now,
        snd_nxt: p.snd_nxt,
        int: [0; probe::INT_LEN],
    };
    for (d, s) in mail.int.iter_mut().zip(p.int) {
        *d = *s;
    }
    // The flow as its sender knows it: local = the response's destination.
    let key = p.tuple.reversed();
    // SAFETY: netfilter runs hooks under rcu_read_lock(), held until we return.
    let found = unsafe {
        table::with_flow(net, &key, |flow: &FlowObj| match flow.nonces.accept(p.nonce, p.snd_nxt, now) {
            nonce::Verdict::BadNonce => inc(net, Counter::ResponsesBadNonce),
            nonce::Verdict::Late => inc(net, Counter::ResponsesLate),
            nonce::Verdict::Accepted => {
                if flow.mailbox.put(&mail) {
                    inc(net, Counter::ResponsesAccepted)
                } else {
                    inc(net, Counter::ResponsesMailboxBusy)
                }
            }
        })
    };
    if found.is_none() {
        inc(net, Counter::ResponsesNoFlow);
    }
}

/// A hook's skb and netns, `None` if netfilter passed a null pointer.
///
/// # Safety
///
/// `state` is null or the hook's valid state, and the result does not
/// outlive the hook (`'a`).
unsafe fn hook_args<'a>(
    skb: *mut bindings::sk_buff,
    state: *const bindings::nf_hook_state,
) -> Option<(NonNull<bindings::sk_buff>, NetRef<'a>)> {
    if state.is_null() {
        return None;
    }
    // SAFETY: netfilter passes a valid state for the duration of the hook
    // (caller contract), checked non-null above; its netns, in which our
    // pernet init registered the hook, lives for the hook's duration ('a).
    Some((NonNull::new(skb)?, unsafe { NetRef::from_raw((*state).net) }?))
}

/// Defines the `extern "C"` entry of a netfilter hook, which netfilter
/// calls with a valid state and skb (or null ones, passed as
/// `NF_ACCEPT`), and hands `$body` the skb and the hook's netns.
macro_rules! nf_hook {
    ($(#[$meta:meta])* $entry:ident => $body:ident) => {
        $(#[$meta])*
        ///
        /// # Safety
        ///
        /// Called by netfilter with its own arguments.
        unsafe extern "C" fn $entry(
            _priv: *mut c_void,
            skb: *mut bindings::sk_buff,
            state: *const bindings::nf_hook_state,
        ) -> c_uint {
            // SAFETY: netfilter's own arguments, valid for the hook's duration.
            match unsafe { hook_args(skb, state) } {
                // SAFETY: the skb and netns netfilter passed this hook,
                // which is `$body`'s contract.
                Some((skb, net)) => unsafe { $body(skb, net) },
                None => bindings::NF_ACCEPT,
            }
        }
    };
}

nf_hook!(
    /// The netfilter LOCAL_IN hook.
    hpcc_nf_local_in => local_in
);
nf_hook!(
    /// The netfilter POST_ROUTING hook.
    hpcc_nf_post_routing => post_routing
);

/// Probes, responses and SFC signals in; every other packet passes.
///
/// # Safety
///
/// Called from the LOCAL_IN hook with its live skb and netns, under
/// netfilter's RCU read lock.
unsafe fn local_in(skb_nn: NonNull<bindings::sk_buff>, net: NetRef<'_>) -> c_uint {
    let skb = skb_nn.as_ptr();
    let rx = RxSkb(skb_nn);
    // Cheap first look at the IP header, in place in the linear head
    // (copied only if it is not all there): most packets are not ours.
    let mut small = [0u8; CANDIDATE_LEN];
    let linear = rx.head();
    let head = match linear.get(..CANDIDATE_LEN) {
        Some(h) => h,
        None => {
            let n = rx.copy_prefix(&mut small);
            small.get(..n).unwrap_or(&[])
        }
    };
    let (pd, rd) = modparam::dscps();
    let signal = sfc::is_candidate(head);
    if !signal && !probe::is_candidate(head, pd, rd) {
        return bindings::NF_ACCEPT;
    }
    let mut buf = [0u8; MAX_PACKET_LEN + 40];
    if signal {
        let n = rx.copy_prefix(buf.get_mut(..sfc::MAX_SIGNAL_PACKET).unwrap_or(&mut []));
        // SAFETY: this hook's netns and live skb, under netfilter's RCU
        // read lock.
        return match unsafe { sfc_rx::on_udp(net, skb, buf.get(..n).unwrap_or(&[]), rx.len(), now_ns()) } {
            sfc_rx::Verdict::Pass => bindings::NF_ACCEPT,
            sfc_rx::Verdict::Consume => {
                // SAFETY: we own the skb once we return NF_STOLEN; freed
                // exactly once here, as consumed.
                unsafe { bindings::consume_skb(skb) };
                bindings::NF_STOLEN
            }
        };
    }
    // Not SFC's, so a probe or response candidate (above).
    let n = rx.copy_prefix(&mut buf);
    match probe::classify(buf.get(..n).unwrap_or(&[]), pd, rd) {
        Ok(None) => bindings::NF_ACCEPT,
        // Our DSCP but not exactly our format: not ours. Counted, and
        // passed on untouched (TCP, or whoever owns it, decides).
        Err(e) => {
            count_malformed(net, e);
            bindings::NF_ACCEPT
        }
        Ok(Some(p)) => {
            match p.kind {
                Kind::Probe => on_probe(net, &rx, &p, now_ns()),
                Kind::Response => on_response(net, &p, now_ns()),
            }
            // SAFETY: we own the skb once we return NF_STOLEN; it is freed
            // exactly once here, as consumed (not dropped).
            unsafe { bindings::consume_skb(skb) };
            bindings::NF_STOLEN
        }
    }
}

/// Holds packets that sockets of this
/// netns send on flows paused at egress (`sfc_scope` 1, `sfc_rx`). Every
/// other packet costs one atomic load of its netns's state while nothing
/// is paused there, and a socket check, a clock read, a look at its
/// headers and a lock-free probe of the pause table while something may
/// be.
///
/// # Safety
///
/// Called from the POST_ROUTING hook with its live skb and netns, under
/// netfilter's RCU read lock.
unsafe fn post_routing(skb_nn: NonNull<bindings::sk_buff>, net: NetRef<'_>) -> c_uint {
    let skb = skb_nn.as_ptr();
    if !sfc_rx::egress_active(net) {
        return bindings::NF_ACCEPT;
    }
    // Only what a socket of this netns sends: never forwarded or bridged
    // traffic, nor a container's that crossed a veth.
    // SAFETY: the live skb and netns of this hook.
    if !unsafe { bindings::hpcc_skb_is_local_out(skb, net.as_ptr()) } {
        return bindings::NF_ACCEPT;
    }
    let now = now_ns();
    let mut buf = [0u8; sfc::EGRESS_KEY_LEN];
    // At POST_ROUTING the skb's data starts at its IP header.
    let n = RxSkb(skb_nn).copy_prefix(&mut buf);
    let Some(k) = sfc::egress_key(buf.get(..n).unwrap_or(&[])) else {
        return bindings::NF_ACCEPT;
    };
    let Some(until) = sfc_rx::egress_until(net, &k, now) else {
        return bindings::NF_ACCEPT;
    };
    // SAFETY: the live skb of this hook, which netfilter runs under
    // rcu_read_lock(); the shim only sets its departure time.
    match unsafe { bindings::hpcc_skb_hold_until(skb, until) } {
        bindings::hpcc_hold_HPCC_HOLD_EDT => inc(net, Counter::SfcEgressHeld),
        bindings::hpcc_hold_HPCC_HOLD_NO_EDT => inc(net, Counter::SfcNoEdtQdisc),
        _ => {}
    }
    bindings::NF_ACCEPT
}

/// A static the kernel links into its own lists, so it must be mutable
/// from C's point of view; we never touch it after registration.
struct KernelStatic<T>(UnsafeCell<T>);

// SAFETY: written only before registration; afterwards only the kernel
// accesses it, under its own locking.
unsafe impl<T> Sync for KernelStatic<T> {}

impl<T> KernelStatic<T> {
    fn get(&self) -> *mut T {
        self.0.get()
    }
}

// SAFETY: nf_hook_ops is plain C data; all-zero is valid for every field
// (None hook, null pointers, zero integers and bitfield).
const ZEROED_NF: bindings::nf_hook_ops = unsafe { MaybeUninit::zeroed().assume_init() };
/// After the filter table, so administrators can still drop our DSCPs
/// (NF_IP_PRI_FILTER and NF_IP6_PRI_FILTER are both 0).
const HOOK_PRIORITY: c_int = bindings::nf_ip_hook_priorities_NF_IP_PRI_FILTER + 1;

/// The hooks: LOCAL_IN (probes, responses, signals) and POST_ROUTING
/// (flows paused at egress), IPv4 and IPv6, one function each (the
/// parsers tell the families apart by the version nibble).
const N_HOOKS: usize = 4;

static NF_OPS: KernelStatic<[bindings::nf_hook_ops; N_HOOKS]> = KernelStatic(UnsafeCell::new([
    bindings::nf_hook_ops {
        hook: Some(hpcc_nf_local_in),
        pf: bindings::NFPROTO_IPV4 as u8,
        hooknum: bindings::nf_inet_hooks_NF_INET_LOCAL_IN,
        priority: HOOK_PRIORITY,
        ..ZEROED_NF
    },
    bindings::nf_hook_ops {
        hook: Some(hpcc_nf_local_in),
        pf: bindings::NFPROTO_IPV6 as u8,
        hooknum: bindings::nf_inet_hooks_NF_INET_LOCAL_IN,
        priority: HOOK_PRIORITY,
        ..ZEROED_NF
    },
    bindings::nf_hook_ops {
        hook: Some(hpcc_nf_post_routing),
        pf: bindings::NFPROTO_IPV4 as u8,
        hooknum: bindings::nf_inet_hooks_NF_INET_POST_ROUTING,
        priority: HOOK_PRIORITY,
        ..ZEROED_NF
    },
    bindings::nf_hook_ops {
        hook: Some(hpcc_nf_post_routing),
        pf: bindings::NFPROTO_IPV6 as u8,
        hooknum: bindings::nf_inet_hooks_NF_INET_POST_ROUTING,
        priority: HOOK_PRIORITY,
        ..ZEROED_NF
    },
]));

/// Registers the hooks in `net` (from `netns`'s pernet init).
///
/// # Safety
///
/// `net` is a netns being initialised by the netns core; on success the
/// caller unregisters with [`unregister_hooks`] in the pernet exit.
pub(crate) unsafe fn register_hooks(net: *mut bindings::net) -> c_int {
    // SAFETY: NF_OPS is a 'static array of N_HOOKS fully initialised hooks
    // (caller contract for `net`). On failure nf_register_net_hooks
    // unregisters the ones it had registered.
    unsafe { bindings::nf_register_net_hooks(net, NF_OPS.get().cast(), N_HOOKS as c_uint) }
}

/// Unregisters the hooks from `net`.
///
/// # Safety
///
/// [`register_hooks`] succeeded in `net`.
pub(crate) unsafe fn unregister_hooks(net: *mut bindings::net) {
    // SAFETY: the hooks are registered in `net` (caller contract).
    unsafe { bindings::nf_unregister_net_hooks(net, NF_OPS.get().cast(), N_HOOKS as c_uint) }
}
