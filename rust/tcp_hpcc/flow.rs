// SPDX-License-Identifier: GPL-2.0

//! Per-flow telemetry state and its hand-off between two contexts.
//!
//! A flow's HPCC++ state (a few hundred bytes) does not fit in
//! `icsk_ca_priv` (104 bytes), so it lives in a [`FlowObj`] from the
//! `hpcc_flow` slab cache, allocated the first time the flow sends data
//! (a socket that only receives never has one) and kept in the socket's
//! private area. Two contexts touch it:
//!
//! * the **congestion-control hooks**, which TCP serialises per socket
//!   (socket lock or the softirq owning it): they own [`Owned`] (the
//!   control law, the probe clock) and consume the mailbox;
//! * the **netfilter hook** that receives responses, on any CPU, without
//!   the socket lock: it finds the flow in the flow [`table`] by (netns,
//!   4-tuple), checks the nonce against the flow's outstanding probes and
//!   deposits the newest sample in the [`Mailbox`].
//!
//! The table is the kernel's `rhashtable` (resizable, lock-free lookups
//! under RCU), hashed with SipHash-2-4 under a secret drawn at module load
//! (`hpcc_core::flowhash`). The netfilter hook never reads the socket's
//! private area, so a socket switching algorithms cannot hand it garbage.
//! A flow is removed from the table in `release` and freed with
//! `call_rcu()`: the netfilter hook runs under `rcu_read_lock()`, so an
//! object it found stays valid until it returns. Each netns counts its
//! objects and the ones waiting for their free (`netns::NetState`);
//! `hpcc_core::guard::admit_flow` refuses new ones over the netns limit
//! or when too many wait, so switching congestion control in a loop cannot
//! queue unbounded frees.

use crate::bindings;
use crate::hpcc_core::flowhash;
use crate::hpcc_core::guard::{admit_flow, Admit};
use crate::hpcc_core::nonce::NonceRing;
use crate::hpcc_core::control::{FlowCtl, TraceSample};
use crate::hpcc_core::probe::{Tuple, INT_LEN};
use crate::hpcc_core::sfc::{Mail as SfcMail, ReplayFilter, Signal};
use crate::netns::NetRef;
use crate::sock::TcpSock;
use crate::stats::{inc, Counter};
use core::cell::UnsafeCell;
use core::ffi::{c_uint, c_void};
use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use kernel::error::{to_result, Result};
use kernel::types::Opaque;

/// The newest validated response, waiting for the next ACK.
#[derive(Clone, Copy)]
pub(crate) struct Mail {
    /// Host clock (ns) when the response arrived.
    pub(crate) rx_ns: u64,
    /// The `snd_nxt` the probe was sent at.
    pub(crate) snd_nxt: u32,
    /// The INT stack as the response carried it.
    pub(crate) int: [u8; INT_LEN],
}

/// A one-slot mailbox guarded by a try-lock: a writer or reader that finds
/// it busy gives up (the sample is superseded by the next one anyway), so
/// neither side ever spins in softirq context.
pub(crate) struct Mailbox {
    busy: AtomicBool,
    fresh: AtomicBool,
    mail: UnsafeCell<Mail>,
}

impl Mailbox {
    const fn new() -> Self {
        Self {
            busy: AtomicBool::new(false),
            fresh: AtomicBool::new(false),
            mail: UnsafeCell::new(Mail {
                rx_ns: 0,
                snd_nxt: 0,
                int: [0; INT_LEN],
            }),
        }
    }

    fn lock(&self) -> bool {
        self.busy.compare_exchange(false, true, Acquire, Relaxed).is_ok()
    }

    fn unlock(&self) {
        self.busy.store(false, Release);
    }

    /// Deposits `m`, replacing any unread mail. `false` if busy.
    pub(crate) fn put(&self, m: &Mail) -> bool {
        if !self.lock() {
            return false;
        }
        // SAFETY: `busy` is held, so no other context accesses `mail`.
        unsafe { *self.mail.get() = *m };
        self.fresh.store(true, Relaxed);
        self.unlock();
        true
    }

    /// Takes the unread mail, if any (and if not busy).
    pub(crate) fn take(&self) -> Option<Mail> {
        if !self.fresh.load(Relaxed) || !self.lock() {
            return None;
        }
        let out = if self.fresh.swap(false, Relaxed) {
            // SAFETY: `busy` is held, so no other context accesses `mail`.
            Some(unsafe { *self.mail.get() })
        } else {
            None
        };
        self.unlock();
        out
    }
}

/// What `/proc/net/hpcc_flows` shows of a flow (`diag`): written by the
/// congestion-control hooks (and the SFC hook's pause), read by the
/// listing without the socket lock. Each word is one relaxed atomic, so a
/// line may mix two consecutive ACKs' values, never a torn value.
pub(crate) struct FlowView {
    /// cwnd as set by the last ACK, segments.
    pub(crate) cwnd: AtomicU32,
    /// Pacing rate as set by the last ACK, bytes/s.
    pub(crate) pacing_rate: AtomicU64,
    /// The last telemetry sample, as the tracepoint recorded it
    /// (`TraceSample::to_words`).
    sample: [AtomicU64; TraceSample::N_FIELDS],
    /// Host clock (ns) when the last sample's response arrived (0: none).
    pub(crate) sample_ns: AtomicU64,
    /// Departure clock target of the latest SFC pause, ns (0: none).
    pub(crate) pause_until_ns: AtomicU64,
}

impl FlowView {
    const fn new() -> Self {
        Self {
            cwnd: AtomicU32::new(0),
            pacing_rate: AtomicU64::new(0),
            sample: [const { AtomicU64::new(0) }; TraceSample::N_FIELDS],
            sample_ns: AtomicU64::new(0),
            pause_until_ns: AtomicU64::new(0),
        }
    }

    /// The last telemetry sample (all zero before the first).
    pub(crate) fn sample(&self) -> TraceSample {
        let mut w = [0u64; TraceSample::N_FIELDS];
        for (d, a) in w.iter_mut().zip(self.sample.iter()) {
            *d = a.load(Relaxed);
        }
        TraceSample::from_words(&w)
    }

    /// Records what an ACK set.
    #[inline]
    pub(crate) fn set_applied(&self, cwnd: u32, pacing_rate: u64) {
        self.cwnd.store(cwnd, Relaxed);
        self.pacing_rate.store(pacing_rate, Relaxed);
    }

    /// Records a telemetry sample (the tracepoint's record of it) and when
    /// its response arrived.
    pub(crate) fn set_sample(&self, t: &TraceSample, rx_ns: u64) {
        for (a, w) in self.sample.iter().zip(t.to_words()) {
            a.store(w, Relaxed);
        }
        self.sample_ns.store(rx_ns, Relaxed);
    }

    /// Records a pause applied to the flow's departure clock.
    pub(crate) fn set_pause(&self, until_ns: u64) {
        self.pause_until_ns.fetch_max(until_ns, Relaxed);
    }
}

/// The congestion-control hooks' part: the controller's per-flow state.
pub(crate) type Owned = FlowCtl;

/// Why a flow has no telemetry state.
#[derive(Clone, Copy)]
pub(crate) enum NoState {
    /// The netns holds `max_flows_per_netns` flows.
    OverLimit,
    /// Too many released flows of the netns wait for their RCU free.
    Churn,
    /// No memory (the object, or the table could not grow).
    NoMemory,
}

/// A flow's out-of-line state.
#[repr(C)]
pub(crate) struct FlowObj {
    /// The table's link, the RCU head and the key (immutable once
    /// published). First member: the C side converts between the two.
    hdr: Opaque<bindings::hpcc_flow_hdr>,
    /// The socket that owns this object (compared, never dereferenced).
    owner: usize,
    /// The socket's netns.
    // INVARIANT: alive, with our state, until the object is freed, unless
    // `detached` (`netns::pernet_exit` waits for pending frees; a release
    // after it detaches the object, and then the RCU callback does not
    // touch the netns).
    net: NonNull<bindings::net>,
    pub(crate) nonces: NonceRing,
    pub(crate) mailbox: Mailbox,
    pub(crate) sfc: SfcMail,
    pub(crate) view: FlowView,
    /// The hook-owned part: the flow's controller state.
    // INVARIANT: borrowed only through the owner socket's `FlowSlot::get`.
    owned: UnsafeCell<Owned>,
    /// Released after this netns's pernet exit ran (a kernel socket of a
    /// subsystem whose exit runs after ours): the RCU callback must not
    /// touch the netns's state, which the netns core may free first.
    detached: AtomicBool,
    /// The signals the flow took (replays are refused).
    // INVARIANT: only accessed by [`FlowObj::first_signal`], which runs
    // with the owner socket's spin lock held (`LockedSock`), so accesses
    // never overlap.
    sfc_replay: UnsafeCell<ReplayFilter>,
}

/// The table key of (`net`, `tuple`).
fn key_of(net: NetRef<'_>, t: &Tuple) -> bindings::hpcc_flow_key {
    bindings::hpcc_flow_key {
        net: net.key(),
        saddr: t.saddr,
        daddr: t.daddr,
        sport: t.sport.to_be(),
        dport: t.dport.to_be(),
        pad: 0,
    }
}

impl FlowObj {
    /// Allocates the flow state of socket `sk` in `net` and publishes it
    /// in the table, if the netns admits one more (`limit`:
    /// `max_flows_per_netns`).
    fn create(
        tp: &TcpSock<'_>,
        net: NetRef<'_>,
        tuple: &Tuple,
        owned: Owned,
        limit: u32,
    ) -> Result<NonNull<FlowObj>, NoState> {
        let st = net.state();
        let live = st.flows.fetch_add(1, Relaxed);
        let undo = || {
            st.flows.fetch_sub(1, Relaxed);
        };
        match admit_flow(live, st.pending_free.load(Relaxed), limit) {
            Admit::Yes => {}
            Admit::OverLimit => {
                undo();
                return Err(NoState::OverLimit);
            }
            Admit::Churn => {
                undo();
                return Err(NoState::Churn);
            }
        }
        let sk = tp.as_sock();
        // SAFETY: `sk` is the live socket of the calling hook (`tp`'s
        // invariant); the object comes uninitialised from a cache sized and
        // aligned for FlowObj.
        let Some(raw) = NonNull::new(unsafe { bindings::hpcc_flow_alloc(sk) }.cast::<FlowObj>()) else {
            undo();
            return Err(NoState::NoMemory);
        };
        // SAFETY: rhash_head, callback_head and hlist_node are plain
        // pointers, for which zero is the unlinked state.
        let (node, rcu, net_node) = unsafe {
            (MaybeUninit::zeroed().assume_init(), MaybeUninit::zeroed().assume_init(), MaybeUninit::zeroed().assume_init())
        };
        // SAFETY: `raw` is valid for writes of one FlowObj and unshared.
        unsafe {
            raw.as_ptr().write(FlowObj {
                hdr: Opaque::new(bindings::hpcc_flow_hdr {
                    node,
                    rcu,
                    key: key_of(net, tuple),
                    net_node,
                }),
                owner: sk as usize,
                net: net.as_non_null(),
                nonces: NonceRing::new(),
                mailbox: Mailbox::new(),
                sfc: SfcMail::new(),
                view: FlowView::new(),
                owned: UnsafeCell::new(owned),
                detached: AtomicBool::new(false),
                sfc_replay: UnsafeCell::new(ReplayFilter::default()),
            })
        };
        let listed = || {
            // SAFETY: the netns's list, initialised by its pernet init; the
            // header of our object, published just now and on no list.
            unsafe { bindings::hpcc_flow_list_add(st.flow_list.get(), raw.as_ptr().cast()) };
            Ok(raw)
        };
        // SAFETY: the header of our initialised, not yet shared object.
        match unsafe { bindings::hpcc_flow_insert(raw.as_ptr().cast()) } {
            0 => listed(),
            1 => {
                inc(net, Counter::FlowsReplaced);
                listed()
            }
            _ => {
                // SAFETY: never published; dropped and freed once here.
                unsafe {
                    core::ptr::drop_in_place(raw.as_ptr());
                    bindings::hpcc_flow_free(raw.as_ptr().cast());
                }
                undo();
                Err(NoState::NoMemory)
            }
        }
    }

    /// Whether the flow takes signal `s` for the first time (recording
    /// it); false for a replay, or if `sk` is not the flow's owner.
    pub(crate) fn first_signal(&self, sk: &crate::sock::LockedSock, s: &Signal) -> bool {
        if !self.owned_by(sk.as_sock()) {
            return false;
        }
        // SAFETY: `sk` is the owner socket with its spin lock held, which
        // every caller of this method holds, so this is the only access
        // (field invariant).
        unsafe { &mut *self.sfc_replay.get() }.first_time(s)
    }

    /// The 4-tuple the object is published under.
    pub(crate) fn tuple(&self) -> Tuple {
        // SAFETY: `key` is written before publication and never after
        // (only `node` and `rcu` are); it is read through the raw pointer,
        // without a reference to the header's mutable members.
        let k = unsafe { core::ptr::addr_of!((*self.hdr.get()).key).read() };
        Tuple { saddr: k.saddr, daddr: k.daddr, sport: u16::from_be(k.sport), dport: u16::from_be(k.dport) }
    }

    /// Whether this object belongs to socket `sk`.
    pub(crate) fn owned_by(&self, sk: *const bindings::sock) -> bool {
        self.owner == sk as usize
    }

    /// Unpublishes the flow and frees it after an RCU grace period.
    ///
    /// # Safety
    ///
    /// `obj` came from [`FlowObj::create`], is released exactly once, and
    /// the caller drops every reference to it.
    unsafe fn release(obj: NonNull<FlowObj>) {
        let hdr = obj.as_ptr().cast::<bindings::hpcc_flow_hdr>();
        // SAFETY: `obj` is live until the RCU callback runs (caller
        // contract); `net` is immutable.
        let net = unsafe { (*obj.as_ptr()).net };
        // SAFETY: not yet detached, so the netns and our state are alive
        // (field invariant) for this call: a socket's release runs before
        // its netns's state is freed (at the latest from a later pernet
        // exit, before the netns core frees the generic area).
        let Some(net) = (unsafe { NetRef::from_raw(net.as_ptr()) }) else { return };
        let st = net.state();
        // With `netns::pernet_exit`, a store-then-load pair on each side
        // (SeqCst): either the exit sees this pending free and waits for
        // its callback, or this release sees the exit and detaches the
        // object from `st`.
        st.pending_free.fetch_add(1, SeqCst);
        if st.exited.load(SeqCst) {
            st.pending_free.fetch_sub(1, SeqCst);
            // SAFETY: `obj` is live (caller contract); an atomic field.
            unsafe { (*obj.as_ptr()).detached.store(true, Relaxed) };
        }
        // SAFETY: `hdr` is the header of a live, published object; removal
        // and call_rcu write only inside the Opaque header, and readers
        // that still hold the object keep it until the callback runs.
        unsafe {
            bindings::hpcc_flow_remove(hdr);
            bindings::hpcc_flow_list_del(st.flow_list.get(), hdr);
            bindings::hpcc_flow_call_rcu(hdr);
        }
    }
}

/// A socket's hold on its [`FlowObj`], kept in the socket's
/// congestion-control state: the one way to reach the object's
/// hook-owned part ([`Owned`]).
///
/// # Invariants
///
/// 0, or the address of a [`FlowObj`] that [`FlowSlot::create`] made for
/// a socket and that has not been released. The slot lives in that
/// socket's `icsk_ca_priv` and only the socket's congestion-control hooks,
/// which TCP serialises, touch it. (A slot copied into another socket, as
/// a clone of a listener would copy it, is never used: [`FlowSlot::get`]
/// compares the owner before it hands anything out, and a listener sends
/// no data, so it never has a flow.)
#[derive(Default, Clone, Copy, kernel::prelude::Zeroable)]
pub(crate) struct FlowSlot {
    addr: usize,
}

impl FlowSlot {
    /// The flow object of socket `tp`, and its hook-owned part, if it has one.
    pub(crate) fn get(&mut self, tp: &TcpSock<'_>) -> Option<(&FlowObj, &mut Owned)> {
        let p = NonNull::new(self.addr as *mut FlowObj)?;
        // SAFETY: a live FlowObj (type invariant): released only through
        // `release`, which takes `&mut self` and so cannot run while the
        // returned borrows live.
        let obj = unsafe { p.as_ref() };
        if !obj.owned_by(tp.as_sock()) {
            return None;
        }
        // SAFETY: `owned` is reached only through the owner's slot (here),
        // and `&mut self` makes this the only borrow of it.
        let owned = unsafe { &mut *obj.owned.get() };
        Some((obj, owned))
    }

    /// Allocates the flow state of socket `tp` in `net` and publishes it,
    /// if the netns admits one more (`limit`: `max_flows_per_netns`). A
    /// slot that already holds the socket's flow is left as it is.
    pub(crate) fn create(&mut self, tp: &TcpSock<'_>, net: NetRef<'_>, tuple: &Tuple, owned: Owned, limit: u32) -> Result<(), NoState> {
        if self.get(tp).is_some() {
            return Ok(());
        }
        let p = FlowObj::create(tp, net, tuple, owned, limit)?;
        // INVARIANT: made for `tp` just now.
        self.addr = p.as_ptr() as usize;
        Ok(())
    }

    /// Releases the flow state of socket `tp` (freed after an RCU grace
    /// period) and empties the slot.
    pub(crate) fn release(&mut self, tp: &TcpSock<'_>) {
        let owner = self.get(tp).is_some();
        let addr = core::mem::take(&mut self.addr);
        if let (true, Some(p)) = (owner, NonNull::new(addr as *mut FlowObj)) {
            // SAFETY: made by `create` for this socket (type invariant and the
            // owner check); emptying the slot makes this the only release,
            // and no borrow from `get` can be alive (`&mut self`).
            unsafe { FlowObj::release(p) };
        }
    }
}

/// RCU callback: frees a released [`FlowObj`].
///
/// # Safety
///
/// Called by RCU once, with the `rcu` head of a [`FlowObj`] released to it.
#[no_mangle]
unsafe extern "C" fn hpcc_flow_free_rcu(head: *mut bindings::callback_head) {
    let off = core::mem::offset_of!(bindings::hpcc_flow_hdr, rcu);
    // SAFETY: `head` is the `rcu` of the header that starts a FlowObj
    // queued by `release` (repr(C), header first), so stepping back by its
    // offset yields the object, which no RCU reader can still see.
    let obj = unsafe { head.cast::<u8>().sub(off).cast::<FlowObj>() };
    // SAFETY: the object is live until freed below.
    let (net, detached) = unsafe { ((*obj).net, (*obj).detached.load(Relaxed)) };
    // SAFETY: dropped and returned to the cache exactly once.
    unsafe {
        core::ptr::drop_in_place(obj);
        bindings::hpcc_flow_free(obj.cast());
    }
    if detached {
        // Released after the netns's exit: its state may be gone.
        return;
    }
    // The netns's state is live: `netns::pernet_exit` waits until
    // `pending_free` reads 0, which this object's count keeps above 0.
    // SAFETY: not detached: alive with our state until `pending_free`
    // drops to 0 below (field invariant).
    let Some(net) = (unsafe { NetRef::from_raw(net.as_ptr()) }) else { return };
    let st = net.state();
    st.flows.fetch_sub(1, Relaxed);
    // Last touch of `st`: once `pending_free` reads 0, pernet exit may let
    // the netns core free it.
    st.pending_free.fetch_sub(1, SeqCst);
}

/// The flow table (see the module documentation).
pub(crate) mod table {
    use super::*;

    /// The hash secret, drawn once at load, before the table exists.
    static SECRET: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

    /// `rhashtable_params.hashfn`: SipHash-2-4 of the 48-byte key.
    ///
    /// # Safety
    ///
    /// Called by the rhashtable with `data` pointing to `len` readable bytes.
    #[no_mangle]
    unsafe extern "C" fn hpcc_flow_hashfn(data: *const c_void, len: u32, seed: u32) -> u32 {
        let n = (len as usize).min(flowhash::KEY_LEN);
        // SAFETY: rhashtable passes a key of `key_len` (= KEY_LEN) bytes.
        let key = unsafe { core::slice::from_raw_parts(data.cast::<u8>(), n) };
        flowhash::flow_hash([SECRET[0].load(Relaxed), SECRET[1].load(Relaxed)], seed, key)
    }

    /// SipHash-2-4 of `data` under the per-load secret: a key no sender
    /// can choose collisions for (SFC's per-source buckets and pause
    /// table).
    pub(crate) fn keyed_hash(data: &[u8]) -> u64 {
        flowhash::siphash24([SECRET[0].load(Relaxed), SECRET[1].load(Relaxed)], data)
    }

    /// The table's hash of (`net`, `tuple`) (seed 0): a flow's identity
    /// under the per-load secret, for the receiver's flow count.
    pub(crate) fn hash_of(net: NetRef<'_>, t: &Tuple) -> u32 {
        let key = flowhash::key_bytes(net.key(), &t.saddr, &t.daddr, t.sport.to_be(), t.dport.to_be());
        flowhash::flow_hash([SECRET[0].load(Relaxed), SECRET[1].load(Relaxed)], 0, &key)
    }

    /// Runs `f` on the flow of (`net`, `tuple`), if published.
    ///
    /// # Safety
    ///
    /// The caller holds `rcu_read_lock()` (netfilter hooks do) for the
    /// whole call, so a flow found here is not freed before `f` returns.
    pub(crate) unsafe fn with_flow<R>(net: NetRef<'_>, tuple: &Tuple, f: impl FnOnce(&FlowObj) -> R) -> Option<R> {
        let key = key_of(net, tuple);
        // SAFETY: the caller holds the RCU read lock; `key` is a full key.
        let h = unsafe { bindings::hpcc_flow_lookup(&key) };
        // SAFETY: a published header starts a live FlowObj until an RCU
        // grace period after its removal; a shared reference is sound
        // because every field written after publication is atomic, in an
        // UnsafeCell (`owned`, the mailbox) or in the Opaque header.
        NonNull::new(h.cast::<FlowObj>()).map(|p| f(unsafe { p.as_ref() }))
    }

    /// Proof that the table and the slab cache exist; dropping it destroys
    /// them, so it must outlive every flow (drop it after `rcu_barrier()`).
    pub(crate) struct Table(());

    impl Table {
        /// Draws the secret and creates the cache and the table.
        pub(crate) fn new() -> Result<Self> {
            let mut k = [0u8; 16];
            // SAFETY: `k` is 16 writable bytes.
            unsafe { bindings::get_random_bytes(k.as_mut_ptr().cast(), k.len() as _) };
            let word = |i: usize| {
                let mut w = [0u8; 8];
                w.iter_mut().zip(k.iter().skip(i * 8)).for_each(|(d, s)| *d = *s);
                u64::from_ne_bytes(w)
            };
            SECRET[0].store(word(0), Relaxed);
            SECRET[1].store(word(1), Relaxed);
            let (size, align) = (core::mem::size_of::<FlowObj>(), core::mem::align_of::<FlowObj>());
            // SAFETY: called once at module init, before any flow exists.
            to_result(unsafe { bindings::hpcc_flows_init(size as c_uint, align as c_uint) })?;
            Ok(Self(()))
        }
    }

    impl Drop for Table {
        fn drop(&mut self) {
            // SAFETY: module exit, after rcu_barrier(): every flow is freed.
            unsafe { bindings::hpcc_flows_exit() };
        }
    }
}
