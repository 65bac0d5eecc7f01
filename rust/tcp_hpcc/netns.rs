// SPDX-License-Identifier: GPL-2.0

//! Per-network-namespace state.
//!
//! Each netns gets, from the netns core (`pernet_operations` with `id` and
//! `size`), a [`NetState`]: its event counters (per CPU, summed on read),
//! the number of flow objects it holds and how many of those wait for their
//! RCU free. On creation of a netns the module also registers its
//! netfilter hook there (`probe_tx`) and creates `/proc/net/hpcc_stat` and
//! `/proc/net/hpcc_flows` (mode 0400: the netns's root only; each netns
//! sees its own counters and flows).

use crate::bindings;
use crate::hpcc_core::budget::Budget;
use crate::hpcc_core::rcvcount::FlowCount;
use crate::hpcc_core::sfc::{PauseTable, SourceBuckets};
use crate::{diag, stats};
use core::cell::UnsafeCell;
use core::ffi::{c_int, c_uint};
use core::mem::MaybeUninit;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering::*};
use kernel::types::Opaque;
use kernel::error::{code::ENOMEM, to_result, Result};

/// A network namespace, live for `'a`: passed back to the kernel,
/// compared, or asked for its [`NetState`].
///
/// # Invariants
///
/// `net` points to a netns that stays alive for `'a`, and our pernet ops
/// were registered before it was created or are registered in it, so
/// `net_generic()` holds our [`NetState`].
#[derive(Clone, Copy)]
pub(crate) struct NetRef<'a> {
    net: NonNull<bindings::net>,
    _live: PhantomData<&'a bindings::net>,
}

impl<'a> NetRef<'a> {
    /// Wraps a netns pointer the kernel gave us; `None` for null.
    ///
    /// # Safety
    ///
    /// `net` is null, or a netns that stays alive for `'a` (a hook's for
    /// the hook's duration, a socket's for as long as the socket is held,
    /// a proc file's while it is open) in which our pernet ops run.
    pub(crate) unsafe fn from_raw(net: *mut bindings::net) -> Option<Self> {
        // INVARIANT: the caller's contract.
        NonNull::new(net).map(|net| Self { net, _live: PhantomData })
    }

    /// The identity used as the flow table's key.
    pub(crate) fn key(self) -> u64 {
        self.net.as_ptr() as u64
    }

    /// The raw pointer, for the kernel.
    pub(crate) fn as_ptr(self) -> *mut bindings::net {
        self.net.as_ptr()
    }

    /// The pointer, to be kept by an object that pins the netns.
    pub(crate) fn as_non_null(self) -> NonNull<bindings::net> {
        self.net
    }

    /// This netns's [`NetState`], for as long as the netns lives.
    pub(crate) fn state(self) -> &'a NetState {
        // SAFETY: a live netns with our pernet ops (type invariant), so
        // net_generic() returns our zero-initialised, suitably aligned
        // `size_of::<NetState>()` bytes, which live as long as the netns.
        // Its fields are atomics, or in an UnsafeCell used under a lock, so
        // shared references are sound.
        unsafe { &*bindings::hpcc_net_generic(self.net.as_ptr()).cast::<NetState>() }
    }
}

/// What the module keeps per netns. All-zero is its initial state (the
/// netns core zero-fills it; an all-zero token bucket fills on first use),
/// but for the SFC lock, which `pernet_init` initialises.
pub(crate) struct NetState {
    /// Flow objects allocated for sockets of this netns and not yet freed
    /// (the per-netns limit counts these).
    pub(crate) flows: AtomicU32,
    /// Of those, the ones released and waiting for their RCU grace period.
    pub(crate) pending_free: AtomicU32,
    /// `pernet_exit` has begun: a flow released from now on (a kernel
    /// socket of a subsystem whose exit runs after ours) is detached from
    /// this state (`flow::FlowObj::release`).
    pub(crate) exited: AtomicBool,
    /// The event counters: `stats::N` u64 per CPU (null until init).
    counters: AtomicPtr<u64>,
    /// The SFC lock: initialised by `pernet_init` before the hooks are
    /// registered; guards `sfc_buckets` and serialises the writers of
    /// `sfc_pauses` ([`NetState::sfc_locked`]).
    sfc_lock: Opaque<bindings::spinlock_t>,
    /// SFC signals accepted per source (`sfc_rx`).
    // INVARIANT: only accessed under `sfc_lock`.
    sfc_buckets: UnsafeCell<SourceBuckets>,
    /// Flows of other congestion controls and UDP paused at egress
    /// (`sfc_scope` 1): read lock-free by the egress hook, written under
    /// `sfc_lock`.
    pub(crate) sfc_pauses: PauseTable,
    /// The netns's flow objects, for `/proc/net/hpcc_flows` (initialised
    /// by `pernet_init`; the shim's lock and RCU list).
    pub(crate) flow_list: Opaque<bindings::hpcc_flow_list>,
    /// The hpcc flows whose probes this netns answered recently (the
    /// receiver's N in each response; atomics, all-zero is empty).
    pub(crate) rcv_flows: FlowCount,
    /// The netns's probe and response budgets (`probe_budget`, `response_budget`; atomics,
    /// all-zero is a new one).
    pub(crate) budget: Budget,
}

impl NetState {
    /// Runs `f` with the netns's SFC lock held (bottom halves off): the
    /// per-source token buckets, and the right to write the pause table.
    pub(crate) fn sfc_locked<R>(&self, f: impl FnOnce(&mut SourceBuckets, &PauseTable) -> R) -> R {
        // SAFETY: `sfc_lock` was initialised by `pernet_init` before any
        // path that reaches a NetState could run (the hooks are registered
        // after it). Paired with the unlock below; `f` does not unwind
        // (the kernel aborts on panic).
        unsafe { bindings::hpcc_sfc_lock(self.sfc_lock.get()) };
        // SAFETY: `sfc_buckets` is only accessed here, under the lock just
        // taken (field invariant), so this is the only reference.
        let r = f(unsafe { &mut *self.sfc_buckets.get() }, &self.sfc_pauses);
        // SAFETY: taken above.
        unsafe { bindings::hpcc_sfc_unlock(self.sfc_lock.get()) };
        r
    }

    /// Adds one to counter `i`.
    #[inline]
    pub(crate) fn inc(&self, i: usize) {
        if i < stats::N {
            // SAFETY: the slot holds null or the per-CPU array of
            // stats::N u64 that init allocated; the shim loads it under
            // rcu_read_lock(), and exit frees it only a grace period after
            // clearing the slot (a socket of a subsystem whose exit runs
            // after ours may still count); `i` is in range.
            unsafe { bindings::hpcc_pcpu_inc_rcu(self.counters.as_ptr().cast(), i as c_uint) };
        }
    }

    /// Counter `i`, summed over CPUs.
    pub(crate) fn sum(&self, i: usize) -> u64 {
        let p = self.counters.load(Relaxed);
        if p.is_null() || i >= stats::N {
            return 0;
        }
        // SAFETY: as in `inc`; reading may race increments (relaxed sums).
        unsafe { bindings::hpcc_pcpu_sum(p, i as c_uint) }
    }
}

/// `net`'s flow list, for the shim's `/proc/net/hpcc_flows` walk.
///
/// # Safety
///
/// `net` is a live netns in which `pernet_init` ran (the proc file the
/// walk serves exists only then).
#[no_mangle]
unsafe extern "C" fn hpcc_net_flow_list(net: *const bindings::net) -> *mut bindings::hpcc_flow_list {
    // SAFETY: a live netns with our state (caller contract), for this call.
    unsafe { NetRef::from_raw(net.cast_mut()) }.map_or(core::ptr::null_mut(), |n| n.state().flow_list.get())
}

/// Name of the counters file in `/proc/net`.
const PROC_NAME: &core::ffi::CStr = c"hpcc_stat";

/// `pernet_operations.init`.
///
/// # Safety
///
/// Called by the netns core with a live `net` being set up.
unsafe extern "C" fn pernet_init(net: *mut bindings::net) -> c_int {
    // SAFETY: the netns core calls us with a live netns, whose generic
    // area for our ops it just allocated, for the duration of the call.
    let Some(n) = (unsafe { NetRef::from_raw(net) }) else { return ENOMEM.to_errno() };
    let st = n.state();
    // SAFETY: the netns core gave us zeroed, unshared state; the lock is
    // initialised once, before the hooks that take it are registered.
    unsafe {
        bindings::hpcc_sfc_lock_init(st.sfc_lock.get());
        bindings::hpcc_flow_list_init(st.flow_list.get());
    }
    // SAFETY: no preconditions (GFP_KERNEL: pernet init may sleep).
    let counters = unsafe { bindings::hpcc_pcpu_alloc(stats::N as c_uint) };
    if counters.is_null() {
        return ENOMEM.to_errno();
    }
    st.counters.store(counters, Relaxed);
    // SAFETY: `net` is being initialised; the name is a 'static C string
    // and the show function lives as long as the module (the entry is
    // removed in exit, before the module can go).
    let mut err = unsafe { bindings::hpcc_proc_create(net, PROC_NAME.as_ptr(), Some(stats::show)) };
    if err == 0 {
        // SAFETY: as above, for the flow listing.
        err = unsafe { bindings::hpcc_proc_create_flows(net, diag::PROC_NAME.as_ptr()) };
        if err != 0 {
            // SAFETY: created just above.
            unsafe { bindings::hpcc_proc_remove(net, PROC_NAME.as_ptr()) };
        }
    }
    if err != 0 {
        st.counters.store(core::ptr::null_mut(), Relaxed);
        // SAFETY: allocated above and never shared.
        unsafe { bindings::hpcc_pcpu_free(counters) };
        return err;
    }
    // SAFETY: see `crate::probe_tx::register_hooks`.
    let err = unsafe { crate::probe_tx::register_hooks(net) };
    if err != 0 {
        // SAFETY: both created above.
        unsafe {
            bindings::hpcc_proc_remove(net, diag::PROC_NAME.as_ptr());
            bindings::hpcc_proc_remove(net, PROC_NAME.as_ptr());
        }
        st.counters.store(core::ptr::null_mut(), Relaxed);
        // SAFETY: allocated above; the proc file that read it is gone.
        unsafe { bindings::hpcc_pcpu_free(counters) };
    }
    err
}

/// `pernet_operations.exit`.
///
/// # Safety
///
/// Called by the netns core with a `net` being torn down, after `pernet_init` succeeded for it.
unsafe extern "C" fn pernet_exit(net: *mut bindings::net) {
    // SAFETY: the netns core calls us with a live netns whose generic
    // area it frees only after this exit returns.
    let Some(n) = (unsafe { NetRef::from_raw(net) }) else { return };
    // SAFETY: registered in `net` by `pernet_init`.
    unsafe { crate::probe_tx::unregister_hooks(net) };
    // SAFETY: created by `pernet_init`; removal waits for open readers.
    unsafe {
        bindings::hpcc_proc_remove(net, diag::PROC_NAME.as_ptr());
        bindings::hpcc_proc_remove(net, PROC_NAME.as_ptr());
    }
    let st = n.state();
    // The netns core frees `st` right after the last pernet exit, with no
    // RCU barrier in between, while sockets of subsystems whose exits run
    // after ours may still be released. From here on, a release detaches
    // its object from `st` (`flow::FlowObj::release`); objects released
    // before touch `st` in their RCU callback, so wait for them all. (A
    // release that raced the store below either is seen here as pending
    // and waited for, or saw the store and detached.)
    st.exited.store(true, SeqCst);
    while st.pending_free.load(SeqCst) != 0 {
        // SAFETY: pernet exit runs in process context and may sleep.
        unsafe { bindings::rcu_barrier() };
    }
    let counters = st.counters.swap(core::ptr::null_mut(), SeqCst);
    if !counters.is_null() {
        // Counting (`NetState::inc`) loads the array under
        // rcu_read_lock(): after a grace period nobody holds it.
        // SAFETY: process context; allocated by init, cleared above.
        unsafe {
            bindings::synchronize_rcu();
            bindings::hpcc_pcpu_free(counters);
        }
    }
}

/// The pernet ops, linked into the netns core's list.
struct PernetOps(UnsafeCell<bindings::pernet_operations>);

// SAFETY: written only before registration (`register`); afterwards only
// the netns core accesses it, under its own locking.
unsafe impl Sync for PernetOps {}

// SAFETY: pernet_operations is plain C data; all-zero is valid for every
// field (None callbacks, null pointers, zero sizes).
const ZEROED_PERNET: bindings::pernet_operations = unsafe { MaybeUninit::zeroed().assume_init() };

static PERNET: PernetOps = PernetOps(UnsafeCell::new(bindings::pernet_operations {
    init: Some(pernet_init),
    exit: Some(pernet_exit),
    size: core::mem::size_of::<NetState>(),
    ..ZEROED_PERNET
}));

/// Proof that the per-netns state exists in every netns; dropping it runs
/// `pernet_exit` everywhere.
pub(crate) struct Registration(());

impl Registration {
    /// Sets up every existing and future network namespace.
    pub(crate) fn register() -> Result<Self> {
        let ops = PERNET.0.get();
        // SAFETY: module init runs once, before registration, so nothing
        // else accesses PERNET yet; `hpcc_net_id` is a static C variable
        // the netns core fills in at registration.
        unsafe { (*ops).id = core::ptr::addr_of_mut!(bindings::hpcc_net_id) };
        // SAFETY: PERNET is 'static and fully initialised.
        to_result(unsafe { bindings::register_pernet_subsys(ops) })?;
        Ok(Self(()))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: registered by `register`, the only constructor.
        unsafe { bindings::unregister_pernet_subsys(PERNET.0.get()) };
    }
}
