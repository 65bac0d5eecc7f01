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

use crate::bindings;
use crate::hpcc_core::knobs::{Knobs, ACL_KNOB};
use crate::hpcc_core::sfc;
use core::ffi::{c_char, c_int, c_uint, CStr};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};
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
/// 0644, `arg`) and its `.modinfo` description, "DESC (RANGE)"
/// (`MODULE_PARM_DESC()`).
macro_rules! register_param {
    ($name:expr, $ops:expr, $arg:expr, $desc:expr, $range:expr) => {
        #[link_section = "__param"]
        #[used]
        static PARAM: Param = Param(bindings::kernel_param {
            name: concat!($name, "\0").as_ptr().cast(),
            // SAFETY: modpost defines `__this_module`; only its address
            // is taken.
            mod_: unsafe { __this_module.get() }.cast(),
            ops: $ops,
            perm: 0o644,
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
    ($($field:ident: $default:expr, $range:literal, $desc:literal;)*) => {
        $(
            mod $field {
                use super::*;

                /// The knob's value.
                pub(super) static CELL: AtomicU32 = AtomicU32::new(Knobs::DEFAULT.$field);

                register_param!(
                    stringify!($field),
                    &PARAM_OPS,
                    core::ptr::addr_of!(CELL).cast_mut().cast(),
                    $desc,
                    $range
                );
            }
        )*

        /// Reads every knob (each atomically; a reader racing a writer may
        /// see old and new values of different knobs, which every consumer
        /// tolerates: clamps accept crossed bounds, flows validate).
        #[inline]
        pub(crate) fn knobs() -> Knobs {
            Knobs { $($field: $field::CELL.load(Relaxed),)* }
        }

        static KNOBS: &[Knob] = &[
            $(Knob { cell: &$field::CELL, name: stringify!($field) },)*
        ];
    };
}

crate::hpcc_core::knobs::knob_table!(kernel_knobs);

/// `sfc_acl`: text, its own ops; no cell (the list lives in [`SFC_ACL`]).
mod sfc_acl_param {
    use super::*;

    register_param!("sfc_acl", &ACL_PARAM_OPS, core::ptr::null_mut(), ACL_KNOB.desc, ACL_KNOB.range);
}

/// The probe and response DSCPs (read for every received IPv4 packet, so
/// only these two knobs are loaded).
#[inline]
pub(crate) fn dscps() -> (u8, u8) {
    let d = |a: &AtomicU32| u8::try_from(a.load(Relaxed)).unwrap_or(u8::MAX);
    (d(&probe_dscp::CELL), d(&response_dscp::CELL))
}

/// The SFC port (read for every received UDP packet, so only this knob).
#[inline]
pub(crate) fn sfc_port() -> u16 {
    u16::try_from(sfc_port::CELL.load(Relaxed)).unwrap_or(sfc::PORT_DEFAULT)
}

/// One knob: its storage and name (the [`Knobs`] field).
struct Knob {
    cell: &'static AtomicU32,
    name: &'static str,
}

/// `kernel_param_ops.set` for every knob.
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
    let mut next = knobs();
    next.set(knob.name, v);
    if let Err(e) = next.validate() {
        pr_warn!("rejected {}={}: {}\n", knob.name, v, e.describe());
        return EINVAL.to_errno();
    }
    // Writers are serialised by the parameter core's kernel_param_lock().
    knob.cell.store(v, Relaxed);
    0
}

/// The ops behind every knob: our validating `set`, the stock `get`.
static PARAM_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_param_set),
    get: Some(bindings::param_get_uint),
    free: None,
};

/// The SFC access list (`sfc_acl`), kept in atomics under a sequence
/// count so the netfilter hook reads it without a lock: the parameter
/// core serialises writers (kernel_param_lock); a reader retries while a
/// write is in progress or happened during its copy.
struct AclCell {
    seq: AtomicU32,
    n: AtomicU32,
    /// Per prefix: address high and low 64 bits, length.
    words: [AtomicU64; sfc::ACL_MAX * 3],
}

static SFC_ACL: AclCell = AclCell {
    seq: AtomicU32::new(0),
    n: AtomicU32::new(0),
    words: [const { AtomicU64::new(0) }; sfc::ACL_MAX * 3],
};

/// A consistent copy of the access list.
fn sfc_acl() -> sfc::Acl {
    loop {
        let s1 = SFC_ACL.seq.load(Acquire);
        if s1 & 1 == 0 {
            let mut acl = sfc::Acl::default();
            let n = (SFC_ACL.n.load(Relaxed) as usize).min(sfc::ACL_MAX);
            let mut ok = true;
            for w in SFC_ACL.words.chunks_exact(3).take(n) {
                let addr = (u128::from(w[0].load(Relaxed)) << 64) | u128::from(w[1].load(Relaxed));
                let len = u8::try_from(w[2].load(Relaxed)).unwrap_or(u8::MAX);
                // A torn copy can be refused; the count check retries it.
                ok &= acl.push(addr, len).is_ok();
            }
            fence(Acquire);
            if ok && SFC_ACL.seq.load(Relaxed) == s1 {
                return acl;
            }
        }
        core::hint::spin_loop();
    }
}

/// Stores `acl` (writers are serialised by the parameter core).
fn set_sfc_acl(acl: &sfc::Acl) {
    SFC_ACL.seq.fetch_add(1, Relaxed);
    fence(Release);
    let mut n = 0;
    for ((addr, len), w) in acl.entries().zip(SFC_ACL.words.chunks_exact(3)) {
        w[0].store((addr >> 64) as u64, Relaxed);
        w[1].store(addr as u64, Relaxed);
        w[2].store(u64::from(len), Relaxed);
        n += 1;
    }
    SFC_ACL.n.store(n, Relaxed);
    SFC_ACL.seq.fetch_add(1, Release);
}

/// The host's SFC rules as the knobs set them now.
pub(crate) fn sfc_rules(k: &Knobs) -> sfc::Rules {
    sfc::Rules {
        enabled: k.sfc_enable == 1,
        acl: if k.sfc_enable == 1 { sfc_acl() } else { sfc::Acl::default() },
        rate: k.sfc_rate,
        burst: k.sfc_burst,
        max_pause_us: k.sfc_max_pause_us,
        scope_all: k.sfc_scope == 1,
    }
}

/// `kernel_param_ops.set` of `sfc_acl`: the whole list, replaced.
unsafe extern "C" fn hpcc_acl_set(val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    if val.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the parameter core passes a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(val) };
    let Ok(text) = text.to_str() else { return EINVAL.to_errno() };
    match sfc::Acl::parse(text) {
        Ok(acl) => {
            set_sfc_acl(&acl);
            0
        }
        Err(e) => {
            pr_warn!("rejected sfc_acl: {:?} (up to {} IPv4/IPv6 prefixes ADDR/LEN, comma-separated)\n", e, sfc::ACL_MAX);
            EINVAL.to_errno()
        }
    }
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

/// `kernel_param_ops.get` of `sfc_acl`: the prefixes, comma-separated.
unsafe extern "C" fn hpcc_acl_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    use core::fmt::Write;
    if buffer.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: the parameter core passes a PAGE_SIZE buffer (at least 4 KiB).
    let buf = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), 4096) };
    let mut w = BufWriter { buf, n: 0 };
    for (i, (addr, len)) in sfc_acl().entries().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        let v6 = core::net::Ipv6Addr::from(addr);
        let _ = match v6.to_ipv4_mapped() {
            Some(v4) if len >= 96 => write!(w, "{sep}{v4}/{}", len - 96),
            _ => write!(w, "{sep}{v6}/{len}"),
        };
    }
    let _ = w.write_str("\n");
    c_int::try_from(w.n.min(4095)).unwrap_or(0)
}

/// The ops of `sfc_acl`.
static ACL_PARAM_OPS: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_acl_set),
    get: Some(hpcc_acl_get),
    free: None,
};
