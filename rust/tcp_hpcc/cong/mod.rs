// SPDX-License-Identifier: GPL-2.0

//! Pluggable TCP congestion control, safely: an algorithm implements
//! [`Algorithm`], and [`Registration`] puts it in TCP's table.
//!
//! The shape is the Rust-for-Linux proposal's (`rust/kernel/net/tcp/cong.rs`,
//! PR #1062): a `#[vtable]` trait of hooks over a typed socket
//! ([`Sock`]), an adapter that writes each `extern "C"` callback once
//! ([`Adapter`]), and a registration that owns the C object. It adds what
//! a rate-based algorithm needs and the proposal lacks: `cong_control`
//! with the ACK's [`RateSample`], `min_tso_segs`, and the pacing setters
//! (on [`TcpSock`]). Everything `unsafe` about a hook lives in this
//! folder; an algorithm is safe code.
//!
//! Context: TCP runs every hook of a socket with the socket owned (its
//! lock held by a process, or in the softirq that holds its spin lock),
//! so the hooks of one socket never run concurrently. Hooks of different
//! sockets do.

use crate::bindings;
use crate::sock::TcpSock;
use core::ffi::{c_char, c_int};
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::error::{to_result, Result, VTABLE_DEFAULT_ERROR};
use kernel::init::Zeroable;
use kernel::prelude::*;
use kernel::types::Opaque;

/// A congestion-control algorithm: TCP calls these hooks on each socket
/// that uses it. Unimplemented optional hooks are left out of the ops, as
/// in C.
#[vtable]
pub(crate) trait Algorithm {
    /// The per-socket state, in `icsk_ca_priv`. TCP zeroes the area when
    /// a socket takes the algorithm, and some hooks (`ssthresh` on a SYN's
    /// timeout, `release` of a socket that never connected) can run before
    /// `init`: so all-zero must be a valid value (`Zeroable`). `init`
    /// starts from `Default`. `Copy`: the area is dropped without drop
    /// glue.
    type Data: Zeroable + Default + Copy;

    /// The name users select (`net.ipv4.tcp_congestion_control`,
    /// `TCP_CONGESTION`), shorter than `TCP_CA_NAME_MAX`.
    const NAME: &'static CStr;

    /// Whether any user may select it. `false` keeps it restricted, as
    /// dctcp: only `CAP_NET_ADMIN`, or an admin's entry in
    /// `net.ipv4.tcp_allowed_congestion_control`, lets a socket or a netns
    /// choose it.
    const NON_RESTRICTED: bool = false;

    /// The connection starts using the algorithm; its state was just set
    /// to `Default`.
    fn init(_sk: &mut Sock<'_, Self>) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The connection stops using it (closed, or another algorithm).
    fn release(_sk: &mut Sock<'_, Self>) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Loss or ECN: the new slow-start threshold, segments.
    fn ssthresh(sk: &mut Sock<'_, Self>) -> u32;

    /// A reduction turned out spurious: the cwnd to return to, segments.
    fn undo_cwnd(sk: &mut Sock<'_, Self>) -> u32;

    /// Every ACK: sets cwnd and pacing itself (TCP computes neither for an
    /// algorithm with this hook). `rs` is the ACK's rate sample.
    fn cong_control(_sk: &mut Sock<'_, Self>, _ack: u32, _flag: i32, _rs: Option<&RateSample<'_>>) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// One of the events of [`Event`].
    fn cwnd_event(_sk: &mut Sock<'_, Self>, _ev: Event) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The fewest segments TCP puts in one TSO skb.
    fn min_tso_segs(_sk: &mut Sock<'_, Self>) -> u32 {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A socket inside one of `T`'s hooks: the TCP fields ([`TcpSock`], by
/// `Deref`) and `T`'s per-socket state.
///
/// # Invariants
///
/// `data` points to the `icsk_ca_priv` area of the socket `tcp` wraps,
/// which uses `T`; it holds a valid `T::Data` (zeroed by TCP or written by
/// [`Adapter`]'s `init`). Only `T`'s hooks touch it, one at a time, and
/// `TcpSock` never does, so `&mut self` gives exclusive access to it.
pub(crate) struct Sock<'a, T: Algorithm + ?Sized> {
    tcp: TcpSock<'a>,
    data: NonNull<T::Data>,
    _algo: PhantomData<&'a mut T::Data>,
}

impl<'a, T: Algorithm + ?Sized> Sock<'a, T> {
    /// Wraps the socket of a hook of `T`.
    ///
    /// # Safety
    ///
    /// `sk` is the socket TCP passed to a hook of `T`'s registered ops,
    /// and the result does not outlive that call.
    unsafe fn from_raw(sk: NonNull<bindings::sock>) -> Self {
        const {
            assert!(core::mem::size_of::<T::Data>() <= bindings::HPCC_ICSK_CA_PRIV_SIZE as usize);
            assert!(core::mem::align_of::<T::Data>() <= 8);
        }
        // SAFETY: `sk` is a live TCP socket for the hook (caller contract).
        let tcp = unsafe { TcpSock::from_raw(sk) };
        // INVARIANT: the socket uses `T` (caller contract), so its private
        // area is `T`'s; it is 8-byte aligned and large enough (asserted
        // above), and holds a valid `T::Data`: zeroed by TCP when the socket
        // took `T` (`Zeroable`), or written by `init_cb`.
        let data = tcp.ca_priv().cast::<T::Data>();
        Self { tcp, data, _algo: PhantomData }
    }

    /// `T`'s state of this socket.
    pub(crate) fn data(&mut self) -> &mut T::Data {
        // SAFETY: valid and exclusively ours for as long as `&mut self`
        // (type invariant).
        unsafe { self.data.as_mut() }
    }

    /// The TCP fields and `T`'s state at once (the state is not among the
    /// fields `TcpSock` touches).
    pub(crate) fn split(&mut self) -> (&mut TcpSock<'a>, &mut T::Data) {
        // SAFETY: as in `data`; `TcpSock` never accesses `icsk_ca_priv`
        // (type invariant), so the two borrows do not overlap.
        (&mut self.tcp, unsafe { self.data.as_mut() })
    }
}

impl<'a, T: Algorithm + ?Sized> core::ops::Deref for Sock<'a, T> {
    type Target = TcpSock<'a>;

    fn deref(&self) -> &TcpSock<'a> {
        &self.tcp
    }
}

impl<'a, T: Algorithm + ?Sized> core::ops::DerefMut for Sock<'a, T> {
    fn deref_mut(&mut self) -> &mut TcpSock<'a> {
        &mut self.tcp
    }
}

/// The ACK's rate sample (`struct rate_sample`), read-only.
///
/// # Invariants
///
/// `rs` is the sample TCP passed to `cong_control`, valid for `'a`.
pub(crate) struct RateSample<'a> {
    rs: &'a bindings::rate_sample,
}

impl RateSample<'_> {
    /// Packets delivered over the sample's interval (negative: invalid).
    pub(crate) fn delivered(&self) -> i32 {
        self.rs.delivered
    }

    /// The sample's interval, µs (negative: invalid).
    pub(crate) fn interval_us(&self) -> i64 {
        self.rs.interval_us
    }

    /// Packets in flight before this ACK.
    pub(crate) fn prior_in_flight(&self) -> u32 {
        self.rs.prior_in_flight
    }

    /// Packets ACKed or SACKed by this ACK.
    pub(crate) fn acked_sacked(&self) -> u32 {
        self.rs.acked_sacked
    }

    /// Whether the sample is from an application-limited period.
    pub(crate) fn is_app_limited(&self) -> bool {
        self.rs.is_app_limited
    }
}

/// The events `cwnd_event` reports (`enum tcp_ca_event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// First transmit when nothing is in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of a congestion window reduction.
    CompleteCwr,
    /// Retransmission timeout.
    Loss,
    /// ECT set, but not CE marked.
    EcnNoCe,
    /// CE marked.
    EcnIsCe,
}

impl Event {
    fn from_raw(ev: bindings::tcp_ca_event) -> Option<Self> {
        use bindings as b;
        Some(match ev {
            b::tcp_ca_event_CA_EVENT_TX_START => Self::TxStart,
            b::tcp_ca_event_CA_EVENT_CWND_RESTART => Self::CwndRestart,
            b::tcp_ca_event_CA_EVENT_COMPLETE_CWR => Self::CompleteCwr,
            b::tcp_ca_event_CA_EVENT_LOSS => Self::Loss,
            b::tcp_ca_event_CA_EVENT_ECN_NO_CE => Self::EcnNoCe,
            b::tcp_ca_event_CA_EVENT_ECN_IS_CE => Self::EcnIsCe,
            _ => return None,
        })
    }
}

/// Writes `T`'s `extern "C"` callbacks, each of which wraps its socket
/// once and calls the hook.
struct Adapter<T: Algorithm + ?Sized>(PhantomData<T>);

impl<T: Algorithm + ?Sized> Adapter<T> {
    /// Runs `f` on the hook's socket; `default` for a null pointer.
    ///
    /// # Safety
    ///
    /// `sk` is the socket TCP passed to one of `T`'s callbacks, for this call.
    unsafe fn with<R>(sk: *mut bindings::sock, default: R, f: impl FnOnce(&mut Sock<'_, T>) -> R) -> R {
        match NonNull::new(sk) {
            // SAFETY: caller contract; the `Sock` lives only during `f`.
            Some(sk) => f(&mut unsafe { Sock::from_raw(sk) }),
            None => default,
        }
    }

    /// `init`: starts `T::Data` at `Default`, then `T::init`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn init_cb(sk: *mut bindings::sock) {
        // SAFETY: TCP passes the socket of this callback.
        unsafe {
            Self::with(sk, (), |s| {
                *s.data() = T::Data::default();
                if T::HAS_INIT {
                    T::init(s)
                }
            })
        }
    }

    /// `release`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn release_cb(sk: *mut bindings::sock) {
        if !T::HAS_RELEASE {
            // `T::Data: Copy`: nothing to drop.
            return;
        }
        // SAFETY: TCP passes the socket of this callback.
        unsafe { Self::with(sk, (), |s| T::release(s)) }
    }

    /// `ssthresh`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn ssthresh_cb(sk: *mut bindings::sock) -> u32 {
        // SAFETY: TCP passes the socket of this callback. 2 for a null
        // socket: TCP's own floor.
        unsafe { Self::with(sk, 2, |s| T::ssthresh(s)) }
    }

    /// `undo_cwnd`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn undo_cwnd_cb(sk: *mut bindings::sock) -> u32 {
        // SAFETY: as in `ssthresh_cb`.
        unsafe { Self::with(sk, 2, |s| T::undo_cwnd(s)) }
    }

    /// `cong_control`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn cong_control_cb(
        sk: *mut bindings::sock,
        ack: u32,
        flag: c_int,
        rs: *const bindings::rate_sample,
    ) {
        // SAFETY: TCP passes the ACK's rate sample (or null), valid for
        // this call only.
        let rs = unsafe { rs.as_ref() }.map(|rs| RateSample { rs });
        // SAFETY: TCP passes the socket of this callback.
        unsafe {
            Self::with(sk, (), |s| {
                if T::HAS_CONG_CONTROL {
                    T::cong_control(s, ack, flag, rs.as_ref())
                }
            })
        }
    }

    /// `cwnd_event`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn cwnd_event_cb(sk: *mut bindings::sock, ev: bindings::tcp_ca_event) {
        // An event this abstraction does not know (a newer kernel's) is
        // not the algorithm's.
        let (true, Some(ev)) = (T::HAS_CWND_EVENT, Event::from_raw(ev)) else { return };
        // SAFETY: TCP passes the socket of this callback.
        unsafe { Self::with(sk, (), |s| T::cwnd_event(s, ev)) }
    }

    /// `min_tso_segs`.
    ///
    /// # Safety
    ///
    /// Called by TCP only, through `T`'s registered ops, with the socket
    /// (and arguments) of this call.
    unsafe extern "C" fn min_tso_segs_cb(sk: *mut bindings::sock) -> u32 {
        // SAFETY: TCP passes the socket of this callback. 2 for a null
        // socket: TCP's own default.
        unsafe { Self::with(sk, 2, |s| if T::HAS_MIN_TSO_SEGS { T::min_tso_segs(s) } else { 2 }) }
    }

    /// `T::NAME` as TCP's `char[TCP_CA_NAME_MAX]`, NUL-padded.
    const fn name() -> [c_char; bindings::TCP_CA_NAME_MAX as usize] {
        let mut out = [0 as c_char; bindings::TCP_CA_NAME_MAX as usize];
        let src = T::NAME.as_bytes_with_nul();
        assert!(src.len() <= out.len());
        let mut i = 0;
        while i < src.len() {
            out[i] = src[i] as c_char;
            i += 1;
        }
        out
    }

    /// `T`'s ops: `init` and `release` always (the adapter starts the
    /// state), the required hooks, and each optional hook `T` has. The
    /// owner is set at registration.
    const OPS: bindings::tcp_congestion_ops = {
        // SAFETY: tcp_congestion_ops is plain C data (function-pointer
        // options, raw pointers, integers, a char array); all-zero is valid
        // for each field: no hook, null list and owner, zero flags.
        let zeroed: bindings::tcp_congestion_ops = unsafe { core::mem::MaybeUninit::zeroed().assume_init() };
        assert!(T::HAS_CONG_CONTROL, "an algorithm sets cwnd in cong_control (cong_avoid is not wrapped)");
        bindings::tcp_congestion_ops {
            init: Some(Self::init_cb),
            release: Some(Self::release_cb),
            ssthresh: Some(Self::ssthresh_cb),
            undo_cwnd: Some(Self::undo_cwnd_cb),
            cong_control: Some(Self::cong_control_cb),
            cwnd_event: if T::HAS_CWND_EVENT { Some(Self::cwnd_event_cb) } else { None },
            min_tso_segs: if T::HAS_MIN_TSO_SEGS { Some(Self::min_tso_segs_cb) } else { None },
            name: Self::name(),
            flags: if T::NON_RESTRICTED { bindings::TCP_CONG_NON_RESTRICTED } else { 0 },
            ..zeroed
        }
    };
}

/// The `tcp_congestion_ops` of algorithm `T`, built at compile time, in
/// static storage that TCP links into its list.
///
/// # Invariants
///
/// Written only by [`Registration::register`] while unregistered (the
/// owner), and by TCP under its list lock while registered.
pub(crate) struct Ops<T: Algorithm + ?Sized>(Opaque<bindings::tcp_congestion_ops>, PhantomData<T>);

// SAFETY: shared references only reach the C object through `get()`, and
// its writers are serialised (type invariant): registration before TCP
// sees it, TCP under its own lock after.
unsafe impl<T: Algorithm + ?Sized> Sync for Ops<T> {}

impl<T: Algorithm + ?Sized> Ops<T> {
    /// `T`'s ops, unregistered.
    pub(crate) const fn new() -> Self {
        Self(Opaque::new(Adapter::<T>::OPS), PhantomData)
    }

    /// What `register` will hand TCP, but the owner: for build-time
    /// checks of the hooks and flags.
    pub(crate) const TEMPLATE: bindings::tcp_congestion_ops = Adapter::<T>::OPS;
}

/// `T` registered with TCP; dropping it unregisters.
///
/// # Invariants
///
/// `ops` was registered successfully by `register` and not unregistered.
pub(crate) struct Registration<T: Algorithm + ?Sized + 'static> {
    ops: &'static Ops<T>,
}

impl<T: Algorithm + ?Sized + 'static> Registration<T> {
    /// Registers `ops` with TCP, owned by `module`: TCP then holds a
    /// module reference per socket that uses `T`, so the module cannot be
    /// unloaded while one exists.
    pub(crate) fn register(ops: &'static Ops<T>, module: &'static ThisModule) -> Result<Self> {
        let raw = ops.0.get();
        // SAFETY: module init, before registration: nothing else accesses
        // the ops yet (type invariant of `Ops`); a field write through the
        // raw pointer. The module pointer is the kernel's `struct module`,
        // which our bindings declare again.
        unsafe { (*raw).owner = module.as_ptr().cast() };
        // SAFETY: `raw` is a 'static, fully initialised tcp_congestion_ops
        // with the required hooks (ssthresh, cong_control, undo_cwnd) set.
        to_result(unsafe { bindings::tcp_register_congestion_control(raw) })?;
        // INVARIANT: registered just now.
        Ok(Self { ops })
    }
}

impl<T: Algorithm + ?Sized + 'static> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); unregistering waits for RCU
        // readers, and no socket can still use it, since each holds a
        // module reference that blocks module exit.
        unsafe { bindings::tcp_unregister_congestion_control(self.ops.0.get()) };
    }
}
