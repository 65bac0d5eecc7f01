// SPDX-License-Identifier: GPL-2.0

//! The one safe view of a TCP socket inside a congestion-control hook.
//!
//! Every raw `struct sock *` the module receives is wrapped here, once, at
//! the top of a hook; the rest of the module only sees [`TcpSock`].

use crate::bindings;
use crate::hpcc_core::control::{GsoCap, SockCtl};
use kernel::init::Zeroable;
use core::sync::atomic::{AtomicU32, Ordering::SeqCst};
use core::{marker::PhantomData, ptr::NonNull};

// SAFETY: `SockCtl` is `repr(C)` and made of integers only (its parts,
// `Fallback` and `DeliveryBound`, too): all-zero is a valid value, which is
// what a socket's `icsk_ca_priv` holds before `init`.
unsafe impl Zeroable for SockCtl {}

// SAFETY: two `u16`s; all-zero means "nothing applied yet".
unsafe impl Zeroable for GsoCap {}

/// A TCP socket handed to one of our `tcp_congestion_ops` hooks.
///
/// # Invariants
///
/// `tp` points to a live `struct tcp_sock` for `'a`, and the TCP stack
/// serialises our hooks on it (they run with the socket owned, under the
/// socket lock or in the softirq that holds it). Fields are read and
/// written through raw field pointers, never through a reference to the
/// whole socket, because other kernel paths may touch other fields at the
/// same time. No method reads or writes `icsk_ca_priv`, the algorithm's
/// own state (`cong::Sock` owns that); [`TcpSock::ca_priv`] only computes
/// its address.
pub(crate) struct TcpSock<'a> {
    tp: NonNull<bindings::tcp_sock>,
    _hook: PhantomData<&'a mut bindings::tcp_sock>,
}

/// Reads a field of the wrapped `tcp_sock`.
macro_rules! get {
    ($s:expr, $($f:tt)+) => {
        // SAFETY: by the type invariant `tp` is a live tcp_sock whose CC
        // fields only our (serialised) hooks and TCP's own locked paths touch.
        unsafe { core::ptr::addr_of!((*$s.tp.as_ptr()).$($f)+).read() }
    };
}

/// Writes a field of the wrapped `tcp_sock`.
macro_rules! set {
    ($s:expr, $v:expr, $($f:tt)+) => {
        // SAFETY: as in `get!`; the hook owns the socket, so the write cannot
        // race with another writer of this field.
        unsafe { core::ptr::addr_of_mut!((*$s.tp.as_ptr()).$($f)+).write($v) }
    };
}

impl<'a> TcpSock<'a> {
    /// Wraps the socket a hook received.
    ///
    /// # Safety
    ///
    /// `sk` must be the socket pointer TCP passed to one of our
    /// `tcp_congestion_ops` hooks (so it is a `struct tcp_sock`, which starts
    /// with its `struct sock`), and the result must not outlive that call.
    #[inline]
    pub(crate) unsafe fn from_raw(sk: NonNull<bindings::sock>) -> Self {
        // INVARIANT: a live tcp_sock for the hook's duration (caller contract).
        Self { tp: sk.cast(), _hook: PhantomData }
    }

    /// The address of `icsk_ca_priv`, the congestion-control private area
    /// (8-byte aligned, `HPCC_ICSK_CA_PRIV_SIZE` bytes).
    #[inline]
    pub(crate) fn ca_priv(&self) -> NonNull<u64> {
        // SAFETY: `tp` is a live tcp_sock (type invariant); only the field's
        // address is computed, nothing is read.
        let p = unsafe { core::ptr::addr_of_mut!((*self.tp.as_ptr()).inet_conn.icsk_ca_priv) };
        // A field of a non-null object is not null.
        NonNull::new(p.cast::<u64>()).unwrap_or(NonNull::dangling())
    }

    /// The congestion window in segments (`snd_cwnd`).
    #[inline]
    pub(crate) fn cwnd(&self) -> u32 {
        get!(self, snd_cwnd)
    }

    /// Sets `snd_cwnd`, kept within `[1, snd_cwnd_clamp]` as TCP requires;
    /// returns the value set.
    #[inline]
    pub(crate) fn set_cwnd(&mut self, segs: u32) -> u32 {
        let clamp = get!(self, snd_cwnd_clamp).max(1);
        let cwnd = segs.clamp(1, clamp);
        set!(self, cwnd, snd_cwnd);
        cwnd
    }

    /// The slow-start threshold in segments.
    #[inline]
    pub(crate) fn ssthresh(&self) -> u32 {
        get!(self, snd_ssthresh)
    }

    /// Sets the slow-start threshold (at least 2 segments).
    #[inline]
    pub(crate) fn set_ssthresh(&mut self, segs: u32) {
        set!(self, segs.max(2), snd_ssthresh);
    }

    /// The current sending MSS in bytes.
    #[inline]
    pub(crate) fn mss(&self) -> u32 {
        get!(self, mss_cache)
    }

    /// Whether the congestion window is what limits the sender.
    #[inline]
    pub(crate) fn is_cwnd_limited(&self) -> bool {
        // SAFETY: `tp` is a live tcp_sock (type invariant) and a tcp_sock
        // starts with its `struct sock`, which is what the helper expects.
        unsafe { bindings::hpcc_tcp_is_cwnd_limited(self.tp.as_ptr().cast()) }
    }

    /// Segments in flight as TCP counts them (`tcp_packets_in_flight()`:
    /// sent and not ACKed, SACKed or marked lost, plus retransmissions).
    #[inline]
    pub(crate) fn in_flight(&self) -> u32 {
        // SAFETY: `tp` is a live tcp_sock (type invariant), starting with its
        // sock; the helper reads four counters our hook's caller holds still.
        unsafe { bindings::hpcc_tcp_packets_in_flight(self.tp.as_ptr().cast()) }
    }

    /// `snd_nxt`: the next sequence number to send.
    #[inline]
    pub(crate) fn snd_nxt(&self) -> u32 {
        get!(self, snd_nxt)
    }

    /// Segments sent and not yet ACKed or SACKed.
    #[inline]
    pub(crate) fn packets_out(&self) -> u32 {
        get!(self, packets_out)
    }

    /// Smoothed RTT in µs (0 before the first sample).
    #[inline]
    pub(crate) fn srtt_us(&self) -> u32 {
        get!(self, srtt_us) >> 3
    }

    /// Windowed minimum RTT in µs (`tcp_min_rtt()`; `~0` before a sample).
    #[inline]
    pub(crate) fn min_rtt_us(&self) -> u32 {
        get!(self, rtt_min.s[0].v)
    }

    /// Whether TCP is reducing cwnd (CWR or Recovery).
    #[inline]
    pub(crate) fn in_cwnd_reduction(&self) -> bool {
        // SAFETY: `tp` is a live tcp_sock (type invariant), starting with its sock.
        unsafe { bindings::hpcc_tcp_in_cwnd_reduction(self.tp.as_ptr().cast()) }
    }

    /// `sk_max_pacing_rate` (`SO_MAX_PACING_RATE`), bytes/s.
    #[inline]
    #[allow(clippy::useless_conversion)] // `unsigned long`: u64 on 64-bit only.
    pub(crate) fn max_pacing_rate(&self) -> u64 {
        let sk = self.tp.as_ptr().cast::<bindings::sock>();
        // SAFETY: a naturally aligned `unsigned long` of the live socket
        // (type invariant), which `setsockopt` writes with WRITE_ONCE();
        // a volatile read matches READ_ONCE().
        u64::from(unsafe { core::ptr::addr_of!((*sk).sk_max_pacing_rate).read_volatile() })
    }

    /// Sets `sk_pacing_rate` (bytes/s), capped by `SO_MAX_PACING_RATE`, as
    /// `tcp_update_pacing_rate()` does; returns the rate set.
    #[inline]
    #[allow(clippy::useless_conversion)] // `unsigned long`: u64 on 64-bit only.
    pub(crate) fn set_pacing_rate(&mut self, bytes_per_sec: u64) -> u64 {
        let sk = self.tp.as_ptr().cast::<bindings::sock>();
        // SAFETY: both fields are naturally aligned `unsigned long`s of the
        // live socket (type invariant); the kernel reads and writes them with
        // READ_ONCE()/WRITE_ONCE(), which volatile accesses match.
        unsafe {
            let max = core::ptr::addr_of!((*sk).sk_max_pacing_rate).read_volatile();
            let rate = bytes_per_sec.min(u64::from(max));
            core::ptr::addr_of_mut!((*sk).sk_pacing_rate).write_volatile(rate as _);
            rate
        }
    }

    /// Fires the `tcp_hpcc:hpcc_sample` tracepoint for this socket.
    #[inline]
    pub(crate) fn trace_sample(&self, rec: &bindings::hpcc_trace_rec) {
        // SAFETY: `tp` is a live socket (type invariant) starting with its
        // `struct sock`; the tracepoint only reads it and `rec` (a valid
        // reference) during the call.
        unsafe { bindings::hpcc_trace_sample(self.tp.as_ptr().cast(), rec) }
    }

    /// Fires the `tcp_hpcc:hpcc_ctl` tracepoint for this socket.
    #[inline]
    pub(crate) fn trace_ctl(&self, rec: &bindings::hpcc_ctl_rec) {
        // SAFETY: as for `trace_sample`: a live socket and a valid record,
        // both only read during the call.
        unsafe { bindings::hpcc_trace_ctl(self.tp.as_ptr().cast(), rec) }
    }

    /// The 4-tuple (local to remote; IPv4 addresses IPv4-mapped) and
    /// netns, `None` for families other than IPv4 and IPv6.
    pub(crate) fn tuple(&self) -> Option<(crate::netns::NetRef<'a>, crate::hpcc_core::probe::Tuple)> {
        let mut net = core::ptr::null_mut();
        let (mut sa, mut da, mut sp, mut dp) = ([0u8; 16], [0u8; 16], 0u16, 0u16);
        // SAFETY: `tp` is a live socket (type invariant); the helper only
        // reads it and writes the out-parameters, all valid locals (the
        // addresses are 16-byte arrays, as the shim's prototype says).
        let ok = unsafe {
            bindings::hpcc_sk_tuple(
                self.tp.as_ptr().cast(),
                &mut net,
                sa.as_mut_ptr(),
                da.as_mut_ptr(),
                &mut sp,
                &mut dp,
            )
        };
        if !ok {
            return None;
        }
        let t = crate::hpcc_core::probe::Tuple {
            saddr: sa,
            daddr: da,
            sport: u16::from_be(sp),
            dport: u16::from_be(dp),
        };
        // SAFETY: the socket's own netns, which the socket holds for as
        // long as it lives, so for `'a` (type invariant).
        Some((unsafe { crate::netns::NetRef::from_raw(net) }?, t))
    }

    /// The socket's network namespace (always present for a live socket).
    pub(crate) fn net(&self) -> Option<crate::netns::NetRef<'a>> {
        // SAFETY: `tp` is a live socket (type invariant); sock_net() reads
        // one field: the socket's netns, which it holds for `'a`.
        unsafe { crate::netns::NetRef::from_raw(bindings::hpcc_sock_net(self.tp.as_ptr().cast())) }
    }

    /// Adds one to counter `c` of the socket's netns.
    #[inline]
    pub(crate) fn count(&self, c: crate::stats::Counter) {
        if let Some(net) = self.net() {
            crate::stats::inc(net, c);
        }
    }

    /// The socket as the kernel's `struct sock *` (for the shim; also its
    /// identity).
    pub(crate) fn as_sock(&self) -> *const bindings::sock {
        self.tp.as_ptr().cast()
    }

    /// Data segments sent so far (`data_segs_out`).
    #[inline]
    pub(crate) fn data_segs_out(&self) -> u32 {
        get!(self, data_segs_out)
    }

    /// Sends `skb`, a packet of this socket's flow built by the module,
    /// routed as the socket routes its data (`hpcc_sk_send`). Consumes the
    /// skb; returns 0, `HPCC_TX_PROTECTED` or a negative errno.
    ///
    /// # Safety
    ///
    /// `skb` is an skb the caller owns, holding a complete IP packet at
    /// `skb->data` (with tailroom-free headroom for link headers).
    pub(crate) unsafe fn send_skb(&self, skb: *mut bindings::sk_buff, tos: u8) -> core::ffi::c_int {
        // SAFETY: `tp` is a live socket (type invariant) starting with its
        // `struct sock`, owned by this hook; the shim reads its routing
        // fields and consumes `skb` (caller contract) on every path.
        unsafe { bindings::hpcc_sk_send(self.tp.as_ptr().cast(), skb, tos) }
    }

    /// Sets `sk_pacing_shift`: TSO bursts and TSQ budgets are
    /// `sk_pacing_rate >> shift` bytes (the kernel's default 10 is ~1 ms).
    #[inline]
    pub(crate) fn set_pacing_shift(&mut self, shift: u8) {
        // SAFETY: a u8 field of the live socket (type invariant); the kernel
        // writes it with WRITE_ONCE() and reads it with READ_ONCE().
        unsafe {
            core::ptr::addr_of_mut!((*self.tp.as_ptr()).inet_conn.icsk_inet.sk.sk_pacing_shift).write_volatile(shift)
        };
    }

    /// `sk_gso_max_segs`: the most segments TCP puts in one TSO skb.
    #[inline]
    pub(crate) fn gso_max_segs(&self) -> u16 {
        // SAFETY: a u16 field of the live socket (type invariant), written
        // only under the socket's lock (`sk_setup_caps`, our hooks), which
        // our hooks hold.
        unsafe { core::ptr::addr_of!((*self.tp.as_ptr()).inet_conn.icsk_inet.sk.sk_gso_max_segs).read() }
    }

    /// Whether the route and the socket allow GSO (`sk_can_gso`): if not,
    /// `sk_setup_caps` sets `sk_gso_max_segs` to 1.
    #[inline]
    pub(crate) fn can_gso(&self) -> bool {
        // SAFETY: the helper only reads `sk_route_caps` and `sk_gso_type`
        // of the live socket (type invariant), under the socket's lock.
        unsafe { bindings::hpcc_sk_can_gso(self.tp.as_ptr().cast()) }
    }

    /// Sets `sk_gso_max_segs`; `tcp_tso_segs` sizes TSO skbs at most this.
    #[inline]
    pub(crate) fn set_gso_max_segs(&mut self, segs: u16) {
        // SAFETY: as for `gso_max_segs`: a u16 field of the live socket
        // (type invariant), written under the socket's lock, which our
        // hooks hold; TCP reads it under the same lock.
        unsafe { core::ptr::addr_of_mut!((*self.tp.as_ptr()).inet_conn.icsk_inet.sk.sk_gso_max_segs).write(segs) };
    }

    /// Asks TCP to pace this flow itself unless a qdisc (`fq`) already does,
    /// as `tcp_bbr.c` does. TCP then paces at `sk_pacing_rate`.
    #[inline]
    pub(crate) fn request_pacing(&mut self) {
        // SAFETY: the field is a naturally aligned u32 inside the live socket
        // (type invariant); taking its address creates no reference. The
        // kernel itself updates it with cmpxchg() and reads it with
        // smp_load_acquire(), so atomic access is the protocol.
        let status = unsafe {
            AtomicU32::from_ptr(core::ptr::addr_of_mut!(
                (*self.tp.as_ptr()).inet_conn.icsk_inet.sk.sk_pacing_status
            ))
        };
        let _ = status.compare_exchange(
            bindings::sk_pacing_SK_PACING_NONE,
            bindings::sk_pacing_SK_PACING_NEEDED,
            SeqCst,
            SeqCst,
        );
    }

    /// Holds the flow's next packets until `until_ns` (an SFC pause):
    /// moves TCP's departure clock forward, never back.
    #[inline]
    pub(crate) fn pause_until(&mut self, until_ns: u64) {
        // SAFETY: `tp` is a live tcp_sock owned by this hook (type
        // invariant), which is the shim's requirement.
        unsafe { bindings::hpcc_tcp_pause(self.tp.as_ptr().cast(), until_ns) }
    }
}

/// A TCP socket the SFC path found by its 4-tuple from a netfilter hook:
/// referenced and `bh_lock_sock()`ed for the life of this value, which
/// releases both when dropped.
///
/// Invariant: `sk` is a full TCP socket (`struct tcp_sock`) returned by
/// `hpcc_sfc_sock`, not yet passed to `hpcc_sfc_sock_done`.
pub(crate) struct LockedSock(NonNull<bindings::sock>);

impl LockedSock {
    /// The socket of the connection `t` (local to remote) in `net` that
    /// can have data in flight, found as TCP finds it for `rx`.
    ///
    /// # Safety
    ///
    /// `rx` is the live skb of the calling netfilter hook in `net`.
    pub(crate) unsafe fn find(
        net: crate::netns::NetRef<'_>,
        rx: *const bindings::sk_buff,
        t: &crate::hpcc_core::probe::Tuple,
    ) -> Option<Self> {
        // SAFETY: `net` and `rx` are live for the hook (caller contract);
        // the addresses are 16-byte arrays the shim only reads.
        let sk = unsafe {
            bindings::hpcc_sfc_sock(net.as_ptr(), rx, t.saddr.as_ptr(), t.sport.to_be(), t.daddr.as_ptr(), t.dport.to_be())
        };
        NonNull::new(sk).map(Self)
    }

    /// The socket's identity (as `FlowObj::owned_by` compares it).
    pub(crate) fn as_sock(&self) -> *const bindings::sock {
        self.0.as_ptr()
    }

    /// `(snd_una, snd_nxt)`: the sequence space in flight.
    pub(crate) fn window(&self) -> (u32, u32) {
        let tp = self.0.as_ptr().cast::<bindings::tcp_sock>();
        // SAFETY: a live tcp_sock (type invariant); both are aligned u32s
        // the owner may update concurrently (the kernel's own error path
        // reads them with READ_ONCE under bh_lock_sock, as here).
        unsafe {
            (
                core::ptr::addr_of!((*tp).snd_una).read_volatile(),
                core::ptr::addr_of!((*tp).snd_nxt).read_volatile(),
            )
        }
    }

    /// Holds the flow's next packets until `until_ns`, unless a process
    /// owns the socket now; returns whether it did.
    pub(crate) fn pause_until(&mut self, until_ns: u64) -> bool {
        // SAFETY: a live, bh-locked socket (type invariant).
        if unsafe { bindings::hpcc_sock_owned_by_user(self.0.as_ptr()) } {
            return false;
        }
        // SAFETY: bh-locked and not owned by user: nothing else writes its
        // departure clock now (tcp_v4_err's rule for touching a socket).
        unsafe { bindings::hpcc_tcp_pause(self.0.as_ptr(), until_ns) };
        true
    }
}

impl Drop for LockedSock {
    fn drop(&mut self) {
        // SAFETY: found by `find` and released exactly once, here.
        unsafe { bindings::hpcc_sfc_sock_done(self.0.as_ptr()) }
    }
}
