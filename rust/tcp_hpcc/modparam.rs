// SPDX-License-Identifier: GPL-2.0

//! Module parameters (`/sys/module/tcp_hpcc/parameters/*`).
//!
//! The knobs are declared once, in the core's table
//! (`hpcc_core::knobs::knob_table!`); from it this file makes each knob's
//! cell, its `__param` entry and its `.modinfo` description (what C's
//! `module_param_cb()` and `MODULE_PARM_DESC()` emit), all pointing at
//! [`PARAM_OPS`]. A write is parsed, applied to a snapshot of all knobs,
//! and stored only if the whole set still validates
//! ([`Knobs::validate`]), so a bad value is refused with `-EINVAL` and a
//! `pr_warn`. Flows read the knobs when they start (and the fallback on
//! every ACK); a change applies to flows that start afterwards.
//!
//! Readers never see a torn set and never wait: the whole validated set
//! (and, apart, the SFC access and interface lists) is published as one
//! value in an [`RcuCell`], which readers copy (or look into) under
//! `rcu_read_lock()` and writers, serialised by the parameter core's
//! `kernel_param_lock()`, replace whole.

use crate::bindings;
use crate::hpcc_core::knobs::{Knobs, ACL_KNOB, IFACES_KNOB};
use crate::hpcc_core::sfc;
use core::ffi::{c_char, c_int, c_uint, CStr};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering::{Acquire, Relaxed, Release}};
use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::types::Opaque;

// `__this_module`, which modpost defines for every module (declared as
// bytes: only its address is used).
extern "C" {
    static __this_module: Opaque<u8>;
}

/// One `__param` entry, what `module_param_cb()` emits in C.
#[repr(transparent)]
struct Param(bindings::kernel_param);

// SAFETY: the entry is written once, by the compiler; the kernel's module
// loader and parameter code only read it.
unsafe impl Sync for Param {}

/// The length of `parts` joined.
const fn joined_len(parts: &[&str]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` joined as a byte array (a `.modinfo` string).
const fn joined<const N: usize>(parts: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        let b = parts[i].as_bytes();
        let mut j = 0;
        while j < b.len() && n < N {
            out[n] = b[j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Registers one parameter: its `__param` entry (name, this module, ops,
/// `perm`, `arg`) and its `.modinfo` description, "DESC (RANGE)"
/// (`MODULE_PARM_DESC()`).
macro_rules! register_param {
    ($name:expr, $ops:expr, $arg:expr, $perm:expr, $desc:expr, $range:expr) => {
        #[link_section = "__param"]
        #[used]
        static PARAM: Param = Param(bindings::kernel_param {
            name: concat!($name, "\0").as_ptr().cast(),
            // SAFETY: modpost defines `__this_module`; only its address
            // is taken.
            mod_: unsafe { __this_module.get() }.cast(),
            ops: $ops,
            perm: $perm,
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 { arg: $arg },
        });

        const PARTS: &[&str] = &["parm=", $name, ":", $desc, " (", $range, ")\0"];
        #[link_section = ".modinfo"]
        #[used]
        static MODINFO: [u8; joined_len(PARTS)] = joined(PARTS);
    };
}

/// Each knob of the core's table (`hpcc_core::knobs::knob_table!`): its
/// cell, initialised to [`Knobs::DEFAULT`], and its registration.
macro_rules! kernel_knobs {
    ($($field:ident: $default:expr, $range:expr, $desc:literal;)*) => {
        $(
            mod $field {
                use super::*;

                /// The knob's value.
                pub(super) static CELL: AtomicU32 = AtomicU32::new(Knobs::DEFAULT.$field);

                register_param!(
                    stringify!($field),
                    &PARAM_OPS,
                    core::ptr::addr_of!(CELL).cast_mut().cast(),
                    0o644,
                    $desc,
                    crate::hpcc_core::knobs::range_text::$field
                );
            }
        )*

        /// The cells as the parameter core shows them (writers only).
        fn cells() -> Knobs {
            Knobs { $($field: $field::CELL.load(Relaxed),)* }
        }

        static KNOBS: &[Knob] = &[
            $(Knob { cell: &$field::CELL, name: stringify!($field) },)*
        ];
    };
}

crate::hpcc_core::knobs::knob_table!(kernel_knobs);

/// `sfc_acl` and `sfc_ifaces`: text, their own ops, no cell (the lists
/// live in [`SFC_LISTS`]); root only (0600), as is what they guard.
mod sfc_acl_param {
    use super::*;

    register_param!("sfc_acl", &ACL_PARAM_OPS, core::ptr::null_mut(), 0o600, ACL_KNOB.desc, ACL_KNOB.range);
}

mod sfc_ifaces_param {
    use super::*;

    register_param!("sfc_ifaces", &IFACES_PARAM_OPS, core::ptr::null_mut(), 0o600, IFACES_KNOB.desc, IFACES_KNOB.range);
}

/// A value readers take without a lock and writers replace whole, as
/// RCU publishes an object: two slots, one published.
///
/// # Invariants
///
/// * `cur` is 0 or 1: the published slot. Readers read only the slot
///   `cur` named when they loaded it, inside an RCU read-side critical
///   section.
/// * The other slot has no reader: it was never published, or the writer
///   that unpublished it waited for a grace period (`synchronize_rcu()`)
///   before returning, so every reader that could have loaded it has left
///   its critical section.
/// * Writers are serialised (the parameter core's `kernel_param_lock()`),
///   so only one writes the unpublished slot at a time.
struct RcuCell<T: Copy> {
    slots: [UnsafeCell<T>; 2],
    cur: AtomicUsize,
}

// SAFETY: shared access follows the invariants: a slot is written only
// while unpublished and unread, and read only while published; T is Copy
// plain data.
unsafe impl<T: Copy + Send> Sync for RcuCell<T> {}

impl<T: Copy> RcuCell<T> {
    const fn new(v: T) -> Self {
        Self { slots: [UnsafeCell::new(v), UnsafeCell::new(v)], cur: AtomicUsize::new(0) }
    }

    /// Looks into the published value (in any context; never waits).
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        // SAFETY: no preconditions; paired with the unlock below.
        unsafe { bindings::hpcc_rcu_read_lock() };
        let i = self.cur.load(Acquire) & 1;
        // SAFETY: slot `i` is published, so no writer touches it until a
        // grace period after it is unpublished, which cannot end while we
        // are inside this critical section (type invariants).
        let r = f(unsafe { &*self.slots[i].get() });
        // SAFETY: taken above.
        unsafe { bindings::hpcc_rcu_read_unlock() };
        r
    }

    /// Publishes `v`, then waits until no reader can see the old value.
    /// Process context (may sleep); writers serialised by the caller.
    fn write(&self, v: T) {
        let next = (self.cur.load(Relaxed) & 1) ^ 1;
        // SAFETY: slot `next` is unpublished and has no reader (type
        // invariants), and writers are serialised.
        unsafe { *self.slots[next].get() = v };
        self.cur.store(next, Release);
        // INVARIANT: once every reader that loaded the old index has left
        // its critical section, the old slot has no reader.
        // SAFETY: process context: parameter writes come from sysfs or
        // module load, never from atomic context.
        unsafe { bindings::synchronize_rcu() };
    }
}

/// The validated knob set, as readers see it.
static KNOB_SET: RcuCell<Knobs> = RcuCell::new(Knobs::DEFAULT);

/// Every knob, as one consistent snapshot.
#[inline]
pub(crate) fn knobs() -> Knobs {
    KNOB_SET.with(|k| *k)
}

/// The probe and response DSCPs (read for every received IPv4 packet:
/// only these two are copied).
#[inline]
pub(crate) fn dscps() -> (u8, u8) {
    KNOB_SET.with(|k| {
        let d = |v: u32| u8::try_from(v).unwrap_or(u8::MAX);
        (d(k.probe_dscp), d(k.response_dscp))
    })
}

/// The SFC port (read for every received UDP packet, so only this knob).
#[inline]
pub(crate) fn sfc_port() -> u16 {
    KNOB_SET.with(|k| u16::try_from(k.sfc_port).unwrap_or(sfc::PORT_DEFAULT))
}

/// One knob: its storage and name (the [`Knobs`] field).
struct Knob {
    cell: &'static AtomicU32,
    name: &'static str,
}

/// `kernel_param_ops.set` for every knob.
///
/// # Safety
///
/// Called by the parameter core with `val` null or a NUL-terminated string.
unsafe extern "C" fn hpcc_param_set(val: *const c_char, kp: *const bindings::kernel_param) -> c_int {
    if val.is_null() || kp.is_null() {
        return EINVAL.to_errno();
    }
    let mut v: c_uint = 0;
    // SAFETY: the parameter core passes a NUL-terminated string; `v` is a
    // valid, writable c_uint.
    let ret = unsafe { bindings::kstrtouint(val, 0, &mut v) };
    if ret != 0 {
        return ret;
    }
    // SAFETY: `kp` is one of our own `module_param_cb()` descriptors (checked
    // non-null above); its union holds `arg`, the pointer we registered.
    let arg = unsafe { (*kp).__bindgen_anon_1.arg }.cast_const().cast::<AtomicU32>();
    let Some(knob) = KNOBS.iter().find(|k| core::ptr::eq(k.cell, arg)) else {
        return EINVAL.to_errno();
    };
    // Writers are serialised by the parameter core's kernel_param_lock().
    let mut next = cells();
    next.set(knob.name, v);
    if let Err(e) = next.validate() {
        pr_warn!("rejected {}={}: {}\n", knob.name, v, e);
        return EINVAL.to_errno();
    }
    knob.cell.store(v, Relaxed);
    KNOB_SET.write(next);
    0
}

/// The ops behind every knob: our validating `set`, the stock `get`.
static PARAM_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_param_set),
    get: Some(bindings::param_get_uint),
    free: None,
};

/// The SFC access list and interface list (`sfc_acl`, `sfc_ifaces`).
#[derive(Clone, Copy)]
struct SfcLists {
    acl: sfc::Acl,
    ifaces: sfc::IfaceList,
}

/// Both lists, empty by default (SFC accepts nothing until an operator
/// names the switches and the ports they are behind).
static SFC_LISTS: RcuCell<SfcLists> = RcuCell::new(SfcLists { acl: sfc::Acl::EMPTY, ifaces: sfc::IfaceList::EMPTY });

/// The host's SFC rules as the knobs set them now.
pub(crate) fn sfc_rules(k: &Knobs) -> sfc::Rules {
    // The lists are read only when SFC is on.
    let lists = (k.sfc_enable == 1).then(|| SFC_LISTS.with(|l| (l.acl, l.ifaces)));
    let (acl, ifaces) = lists.unwrap_or_default();
    k.sfc_rules(acl, ifaces)
}

/// A text parameter's value (`None`: null or not UTF-8).
///
/// # Safety
///
/// `val` is null or the NUL-terminated string the parameter core passes
/// to `set`, live for the call.
unsafe fn param_text<'a>(val: *const c_char) -> Option<&'a str> {
    // SAFETY: caller contract, checked non-null.
    (!val.is_null()).then(|| unsafe { CStr::from_ptr(val) }.to_str().ok()).flatten()
}

/// Sets one of the SFC lists from a parameter write: parsed whole and
/// stored whole (writers are serialised by the parameter core), or
/// refused with the list's `usage` in the log.
fn set_list<T, E: core::fmt::Debug>(
    name: &str,
    usage: core::fmt::Arguments<'_>,
    text: Option<&str>,
    parse: impl FnOnce(&str) -> Result<T, E>,
    store: impl FnOnce(&mut SfcLists, T),
) -> c_int {
    match text.map(parse) {
        Some(Ok(v)) => {
            let mut l = SFC_LISTS.with(|l| *l);
            store(&mut l, v);
            SFC_LISTS.write(l);
            0
        }
        e => {
            let e = e.and_then(Result::err);
            pr_warn!("rejected {}: {:?} ({})\n", name, e, usage);
            EINVAL.to_errno()
        }
    }
}

/// `kernel_param_ops.set` of `sfc_acl`: the whole list, replaced.
///
/// # Safety
///
/// Called by the parameter core with `val` null or a NUL-terminated string.
unsafe extern "C" fn hpcc_acl_set(val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    let usage = format_args!("up to {} IPv4/IPv6 prefixes ADDR/LEN, comma-separated", sfc::ACL_MAX);
    // SAFETY: the parameter core's `val`.
    set_list("sfc_acl", usage, unsafe { param_text(val) }, sfc::Acl::parse, |l, v| l.acl = v)
}

/// `kernel_param_ops.set` of `sfc_ifaces`: the whole list, replaced.
///
/// # Safety
///
/// Called by the parameter core with `val` null or a NUL-terminated string.
unsafe extern "C" fn hpcc_ifaces_set(val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    let usage = format_args!("up to {} device names, comma-separated", sfc::IFACES_MAX);
    // SAFETY: the parameter core's `val`.
    set_list("sfc_ifaces", usage, unsafe { param_text(val) }, sfc::IfaceList::parse, |l, v| l.ifaces = v)
}

/// Writes into a byte buffer, truncating.
struct BufWriter<'a> {
    buf: &'a mut [u8],
    n: usize,
}

impl core::fmt::Write for BufWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.buf.len().saturating_sub(self.n);
        let k = s.len().min(room);
        if let (Some(d), Some(src)) = (self.buf.get_mut(self.n..self.n + k), s.as_bytes().get(..k)) {
            d.copy_from_slice(src);
        }
        self.n += k;
        Ok(())
    }
}

/// `kernel_param_ops.get` of a list: what `show` prints of the lists, and
/// a newline.
///
/// # Safety
///
/// `buffer` is null or the parameter core's PAGE_SIZE buffer.
unsafe fn show_list(buffer: *mut c_char, show: impl FnOnce(&SfcLists, &mut BufWriter<'_>) -> core::fmt::Result) -> c_int {
    use core::fmt::Write;
    if buffer.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the parameter core passes a PAGE_SIZE buffer (at least 4 KiB).
    let buf = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), 4096) };
    let mut w = BufWriter { buf, n: 0 };
    let lists = SFC_LISTS.with(|l| *l);
    // BufWriter truncates and never fails.
    let _ = show(&lists, &mut w);
    let _ = w.write_str("\n");
    c_int::try_from(w.n.min(4095)).unwrap_or(0)
}

/// `kernel_param_ops.get` of `sfc_acl`: the prefixes, comma-separated.
///
/// # Safety
///
/// Called by the parameter core with a `buffer` of PAGE_SIZE bytes.
unsafe extern "C" fn hpcc_acl_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    use core::fmt::Write;
    // SAFETY: the parameter core's buffer.
    unsafe { show_list(buffer, |l, w| write!(w, "{}", l.acl)) }
}

/// `kernel_param_ops.get` of `sfc_ifaces`: the names, comma-separated.
///
/// # Safety
///
/// Called by the parameter core with a `buffer` of PAGE_SIZE bytes.
unsafe extern "C" fn hpcc_ifaces_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    use core::fmt::Write;
    // SAFETY: the parameter core's buffer.
    unsafe { show_list(buffer, |l, w| write!(w, "{}", l.ifaces)) }
}

/// The ops of `sfc_acl`.
static ACL_PARAM_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_acl_set),
    get: Some(hpcc_acl_get),
    free: None,
};

/// The ops of `sfc_ifaces`.
static IFACES_PARAM_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_ifaces_set),
    get: Some(hpcc_ifaces_get),
    free: None,
};
