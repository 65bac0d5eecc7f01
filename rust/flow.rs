// SPDX-License-Identifier: GPL-2.0

//! Per-flow telemetry state and its hand-off between two contexts.
//!
//! A flow's HPCC++ state (a few hundred bytes) does not fit in
//! `icsk_ca_priv` (104 bytes), so `init` allocates a [`FlowObj`] and keeps
//! its pointer in the private area. Two contexts touch it:
//!
//! * the **congestion-control hooks**, which TCP serialises per socket
//!   (socket lock or the softirq owning it): they own [`Owned`] (the
//!   control law, the probe clock) and consume the mailbox;
//! * the **netfilter hook** that receives responses, on any CPU, without
//!   the socket lock: it finds the flow in the global [`registry`] by
//!   (netns, 4-tuple), checks the nonce against the flow's outstanding
//!   probes and deposits the newest sample in the [`Mailbox`].
//!
//! The netfilter hook never reads the socket's private area, so a socket
//! switching algorithms cannot hand it garbage. A flow is removed from the
//! registry in `release` and freed with `call_rcu()`: the netfilter hook
//! runs under `rcu_read_lock()`, so an object it found stays valid until it
//! returns. Module exit waits for pending frees with `rcu_barrier()`.

use crate::bindings;
use crate::hpcc_core::law::HpccFlow;
use crate::hpcc_core::params::HpccParams;
use crate::hpcc_core::probe::{Tuple, INT_LEN};
use core::cell::UnsafeCell;
use core::ptr::{self, null_mut};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering::*};
use crate::stats::{inc, Counter};
use kernel::alloc::{flags::GFP_ATOMIC, KBox};

/// Outstanding probes a flow remembers (an older nonce is unknown). With
/// probes at most `probe::MAX_INTERVAL_NS` (8.4 ms) apart, a response is
/// matched for RTTs up to 16 of those: 134 ms.
pub(crate) const NONCE_RING: usize = 16;

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

/// The outstanding probes: `(nonce << 32 | snd_nxt)` and send time. A slot
/// is consumed (zeroed) by the first response that matches it, so a
/// replayed response is rejected.
pub(crate) struct NonceRing {
    key: [AtomicU64; NONCE_RING],
    sent_ns: [AtomicU64; NONCE_RING],
}

/// What a response's nonce says.
pub(crate) enum NonceCheck {
    /// It matches an outstanding probe sent this long ago.
    Fresh { age_ns: u64 },
    /// It matches no outstanding probe (spoofed, replayed or too old).
    Unknown,
}

impl NonceRing {
    const fn new() -> Self {
        Self {
            key: [const { AtomicU64::new(0) }; NONCE_RING],
            sent_ns: [const { AtomicU64::new(0) }; NONCE_RING],
        }
    }

    fn key(nonce: u32, snd_nxt: u32) -> u64 {
        (u64::from(nonce) << 32) | u64::from(snd_nxt)
    }

    /// Records a probe in slot `slot % NONCE_RING` (owner context only).
    pub(crate) fn record(&self, slot: usize, nonce: u32, snd_nxt: u32, now_ns: u64) {
        let i = slot % NONCE_RING;
        if let (Some(k), Some(t)) = (self.key.get(i), self.sent_ns.get(i)) {
            // Invalidate, then publish the time, then the key.
            k.store(0, Release);
            t.store(now_ns, Release);
            k.store(Self::key(nonce, snd_nxt), Release);
        }
    }

    /// Consumes the slot matching a response, if any (any context).
    pub(crate) fn check(&self, nonce: u32, snd_nxt: u32, now_ns: u64) -> NonceCheck {
        let want = Self::key(nonce, snd_nxt);
        if want == 0 {
            return NonceCheck::Unknown;
        }
        for (k, t) in self.key.iter().zip(self.sent_ns.iter()) {
            if k.load(Acquire) == want && k.compare_exchange(want, 0, AcqRel, Relaxed).is_ok() {
                return NonceCheck::Fresh {
                    age_ns: now_ns.saturating_sub(t.load(Acquire)),
                };
            }
        }
        NonceCheck::Unknown
    }
}

/// State only the socket's congestion-control hooks touch.
pub(crate) struct Owned {
    /// The HPCC++ control law.
    pub(crate) law: HpccFlow,
    /// Its parameters (T is per flow when `base_rtt_us` is 0).
    pub(crate) params: HpccParams,
    /// The T the parameters were built with, ns.
    pub(crate) base_rtt_ns: u64,
    /// When the last probe left, ns.
    pub(crate) last_probe_ns: u64,
    /// When the last sample updated the window, ns (0: never).
    pub(crate) last_update_ns: u64,
    /// Probes sent (selects the nonce slot).
    pub(crate) probes: usize,
    /// The slowest link of the path as the last response reported it,
    /// bytes/s (0: unknown).
    pub(crate) path_rate: u64,
    /// Most segments in flight since the last applied sample (window
    /// validation).
    pub(crate) max_in_flight: u32,
}

/// A flow's out-of-line state.
#[repr(C)]
pub(crate) struct FlowObj {
    /// For `call_rcu()`.
    rcu: bindings::callback_head,
    /// Identity for the response path: netns (compared, never dereferenced)
    /// and the 4-tuple as the sender sees it (local to remote).
    net: usize,
    tuple: Tuple,
    /// Registry slot, for removal.
    slot: usize,
    pub(crate) nonces: NonceRing,
    pub(crate) mailbox: Mailbox,
    owned: UnsafeCell<Owned>,
}

impl FlowObj {
    /// Allocates a flow (atomic context) and publishes it in the registry.
    /// `None` if memory or registry slots ran out.
    pub(crate) fn create(net: usize, tuple: Tuple, owned: Owned) -> Option<*mut FlowObj> {
        let obj = KBox::new(
            FlowObj {
                // SAFETY: callback_head is two plain pointers; zero is its
                // documented initial state before call_rcu().
                rcu: unsafe { core::mem::zeroed() },
                net,
                tuple,
                slot: 0,
                nonces: NonceRing::new(),
                mailbox: Mailbox::new(),
                owned: UnsafeCell::new(owned),
            },
            GFP_ATOMIC,
        )
        .ok()?;
        let raw = KBox::into_raw(obj);
        match registry::insert(raw) {
            Some(slot) => {
                // SAFETY: `raw` is our fresh allocation; readers in other
                // contexts never read `slot`.
                unsafe { (*raw).slot = slot };
                Some(raw)
            }
            None => {
                // SAFETY: `raw` came from KBox::into_raw and was never shared.
                drop(unsafe { KBox::from_raw(raw) });
                None
            }
        }
    }

    /// The hook-owned part.
    ///
    /// # Safety
    ///
    /// Only the socket's congestion-control hooks may call this (TCP
    /// serialises them), and the result must not outlive the hook call.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn owned(&self) -> &mut Owned {
        // SAFETY: the caller guarantees exclusive, serialised access.
        unsafe { &mut *self.owned.get() }
    }

    /// Unpublishes the flow and frees it after an RCU grace period.
    ///
    /// # Safety
    ///
    /// `obj` came from [`FlowObj::create`], is released exactly once, and
    /// the caller drops every reference to it.
    pub(crate) unsafe fn release(obj: *mut FlowObj) {
        // SAFETY: `obj` is live until the RCU callback runs (caller contract).
        let slot = unsafe { (*obj).slot };
        registry::remove(slot, obj);
        // SAFETY: `rcu` is inside the live object and not queued yet; the
        // callback frees the object once every RCU reader is done with it.
        unsafe { bindings::call_rcu(ptr::addr_of_mut!((*obj).rcu), Some(free_rcu)) };
    }
}

/// RCU callback: frees a released [`FlowObj`].
unsafe extern "C" fn free_rcu(head: *mut bindings::callback_head) {
    let off = core::mem::offset_of!(FlowObj, rcu);
    // SAFETY: `head` is the `rcu` field of a FlowObj queued by `release`, so
    // stepping back by its offset yields the KBox allocation, which no RCU
    // reader can still see.
    drop(unsafe { KBox::from_raw(head.cast::<u8>().sub(off).cast::<FlowObj>()) });
}

/// An RCU read-side critical section, for as long as it lives.
struct RcuReadGuard(());

impl RcuReadGuard {
    fn new() -> Self {
        // SAFETY: no preconditions; paired with the unlock in `drop`.
        unsafe { bindings::hpcc_rcu_read_lock() };
        Self(())
    }
}

impl Drop for RcuReadGuard {
    fn drop(&mut self) {
        // SAFETY: the lock `new` took, released once, in the same context.
        unsafe { bindings::hpcc_rcu_read_unlock() };
    }
}

/// The global (netns, 4-tuple) → flow map the netfilter hook reads.
///
/// Open addressing over a fixed array of atomic pointers; a lookup or
/// insert scans at most [`registry::PROBE`] slots from the hash, so no
/// tombstones are needed. A full neighbourhood refuses the flow, which
/// then stays on the fallback law.
pub(crate) mod registry {
    use super::*;

    const SLOTS: usize = 4096;
    /// Slots scanned per operation.
    pub(crate) const PROBE: usize = 16;

    static TABLE: [AtomicPtr<FlowObj>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];

    fn hash(net: usize, t: &Tuple) -> usize {
        let mut h = (net as u64) ^ 0x9e37_79b9_7f4a_7c15;
        let half = |a: &[u8; 16], i: usize| {
            let mut b = [0u8; 8];
            for (d, s) in b.iter_mut().zip(a.iter().skip(i * 8)) {
                *d = *s;
            }
            u64::from_ne_bytes(b)
        };
        for w in [
            half(&t.saddr, 0),
            half(&t.saddr, 1),
            half(&t.daddr, 0),
            half(&t.daddr, 1),
            (u64::from(t.sport) << 16) | u64::from(t.dport),
        ] {
            h = (h ^ w).wrapping_mul(0x100_0000_01b3).rotate_left(23);
        }
        (h as usize) % SLOTS
    }

    /// Publishes `obj` (fully initialised) and returns its slot.
    ///
    /// A flow already registered for the same (netns, 4-tuple) belongs to a
    /// socket that is no longer established (a 4-tuple is unique among
    /// established connections, and `init` runs once the new one is): one
    /// reset and not yet closed by its application. The new connection
    /// takes its slot; the old socket's `release` then finds the slot no
    /// longer its own and leaves it.
    pub(super) fn insert(obj: *mut FlowObj) -> Option<usize> {
        // SAFETY: `obj` is a live, unshared allocation (caller).
        let (net, tuple) = unsafe { ((*obj).net, (*obj).tuple) };
        let h = hash(net, &tuple);
        let _rcu = RcuReadGuard::new();
        for s in (0..PROBE).map(|i| (h + i) % SLOTS) {
            let Some(e) = TABLE.get(s) else { continue };
            let old = e.load(Acquire);
            if old.is_null() {
                continue;
            }
            // SAFETY: a published pointer stays valid for an RCU grace
            // period after its removal, and `_rcu` holds the read lock.
            // `net` and `tuple` are immutable after publication.
            let same = unsafe { (*old).net == net && (*old).tuple == tuple };
            if same && e.compare_exchange(old, obj, Release, Relaxed).is_ok() {
                inc(Counter::FlowsReplaced);
                return Some(s);
            }
        }
        (0..PROBE).map(|i| (h + i) % SLOTS).find(|&s| {
            TABLE
                .get(s)
                .is_some_and(|e| e.compare_exchange(null_mut(), obj, Release, Relaxed).is_ok())
        })
    }

    pub(super) fn remove(slot: usize, obj: *mut FlowObj) {
        if let Some(e) = TABLE.get(slot) {
            let _ = e.compare_exchange(obj, null_mut(), Release, Relaxed);
        }
    }

    /// Runs `f` on the flow of (`net`, `tuple`), if registered.
    ///
    /// # Safety
    ///
    /// The caller holds `rcu_read_lock()` (netfilter hooks do) for the
    /// whole call, so a flow found here is not freed before `f` returns.
    pub(crate) unsafe fn with_flow<R>(net: usize, tuple: &Tuple, f: impl FnOnce(&FlowObj) -> R) -> Option<R> {
        let h = hash(net, tuple);
        for i in 0..PROBE {
            let p = TABLE.get((h + i) % SLOTS)?.load(Acquire);
            if p.is_null() {
                continue;
            }
            // SAFETY: a published pointer is a live FlowObj until an RCU
            // grace period after its removal; the caller holds the RCU read
            // lock. `net` and `tuple` are immutable after publication.
            let obj = unsafe { &*p };
            if obj.net == net && obj.tuple == *tuple {
                return Some(f(obj));
            }
        }
        None
    }
}
