// SPDX-License-Identifier: GPL-2.0

//! Module parameters (`/sys/module/tcp_hpcc/parameters/*`).
//!
//! Storage and validation live here; `rust/helpers.c` only registers each
//! knob with `module_param_cb()` (a macro) pointing at our storage and at
//! [`hpcc_param_ops`]. A write is parsed, applied to a copy of the current
//! parameter set, and stored only if the whole set still validates, so a
//! bad value is refused with `-EINVAL` and a `pr_warn`.

// The C-visible statics keep the lower-case names rust/helpers.c uses.
#![allow(non_upper_case_globals)]

use crate::bindings;
use crate::hpcc_core::fallback::FallbackParams;
use core::ffi::{c_char, c_int, c_uint};
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use kernel::error::code::EINVAL;
use kernel::prelude::*;

const D: FallbackParams = FallbackParams::DEFAULT;

// The exported names are the C symbols `rust/helpers.c` registers.
#[no_mangle]
static hpcc_param_init_window_bytes: AtomicU32 = AtomicU32::new(D.init_bytes);
#[no_mangle]
static hpcc_param_fallback_ai_segs: AtomicU32 = AtomicU32::new(D.ai_segs);
#[no_mangle]
static hpcc_param_fallback_beta: AtomicU32 = AtomicU32::new(D.beta);
#[no_mangle]
static hpcc_param_min_cwnd_segs: AtomicU32 = AtomicU32::new(D.min_segs);
#[no_mangle]
static hpcc_param_max_cwnd_segs: AtomicU32 = AtomicU32::new(D.max_segs);

/// One knob: its storage, name and the field it sets.
struct Knob {
    cell: &'static AtomicU32,
    name: &'static str,
    apply: fn(&mut FallbackParams, u32),
}

static KNOBS: [Knob; 5] = [
    Knob {
        cell: &hpcc_param_init_window_bytes,
        name: "init_window_bytes",
        apply: |p, v| p.init_bytes = v,
    },
    Knob {
        cell: &hpcc_param_fallback_ai_segs,
        name: "fallback_ai_segs",
        apply: |p, v| p.ai_segs = v,
    },
    Knob {
        cell: &hpcc_param_fallback_beta,
        name: "fallback_beta",
        apply: |p, v| p.beta = v,
    },
    Knob {
        cell: &hpcc_param_min_cwnd_segs,
        name: "min_cwnd_segs",
        apply: |p, v| p.min_segs = v,
    },
    Knob {
        cell: &hpcc_param_max_cwnd_segs,
        name: "max_cwnd_segs",
        apply: |p, v| p.max_segs = v,
    },
];

/// The current fallback parameters. Each knob is read atomically; a reader
/// racing a writer may see a mix of old and new values of different knobs,
/// which the core tolerates (its clamps accept crossed bounds).
#[inline]
pub(crate) fn fallback() -> FallbackParams {
    FallbackParams {
        init_bytes: hpcc_param_init_window_bytes.load(Relaxed),
        ai_segs: hpcc_param_fallback_ai_segs.load(Relaxed),
        beta: hpcc_param_fallback_beta.load(Relaxed),
        min_segs: hpcc_param_min_cwnd_segs.load(Relaxed),
        max_segs: hpcc_param_max_cwnd_segs.load(Relaxed),
    }
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
    let mut next = fallback();
    (knob.apply)(&mut next, v);
    if let Err(e) = next.validate() {
        pr_warn!("rejected {}={}: {:?}\n", knob.name, v, e);
        return EINVAL.to_errno();
    }
    // Writers are serialised by the parameter core's kernel_param_lock().
    knob.cell.store(v, Relaxed);
    0
}

/// The ops behind every knob: our validating `set`, the stock `get`.
#[no_mangle]
static hpcc_param_ops: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_param_set),
    get: Some(bindings::param_get_uint),
    free: None,
};
