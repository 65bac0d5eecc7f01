// SPDX-License-Identifier: GPL-2.0

//! Module parameters (`/sys/module/tcp_hpcc/parameters/*`).
//!
//! Storage and validation live here; `rust/helpers.c` only registers each
//! knob with `module_param_cb()` (a macro) pointing at our storage and at
//! [`hpcc_param_ops`]. A write is parsed, applied to a snapshot of all
//! knobs, and stored only if the whole set still validates, so a bad value
//! is refused with `-EINVAL` and a `pr_warn`. Flows read the knobs when
//! they start (and the fallback on every ACK); a change applies to flows
//! that start afterwards.

// The C-visible statics keep the lower-case names rust/helpers.c uses.
#![allow(non_upper_case_globals)]

use crate::bindings;
use crate::hpcc_core::knobs::Knobs;
use crate::hpcc_core::sfc;
use core::ffi::{c_char, c_int, c_uint, CStr};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};
use kernel::error::code::EINVAL;
use kernel::prelude::*;

/// Declares the parameter cells: C symbol and the [`Knobs`] field it holds
/// (its sysfs name), initialised to [`Knobs::DEFAULT`].
macro_rules! knobs {
    ($($sym:ident, $field:ident;)*) => {
        $(
            #[no_mangle]
            static $sym: AtomicU32 = AtomicU32::new(Knobs::DEFAULT.$field);
        )*

        /// Reads every knob (each atomically; a reader racing a writer may
        /// see old and new values of different knobs, which every consumer
        /// tolerates: clamps accept crossed bounds, flows validate).
        #[inline]
        pub(crate) fn knobs() -> Knobs {
            Knobs { $($field: $sym.load(Relaxed),)* }
        }

        static KNOBS: &[Knob] = &[
            $(Knob { cell: &$sym, name: stringify!($field) },)*
        ];
    };
}

knobs! {
    hpcc_param_init_window_bytes, init_window_bytes;
    hpcc_param_fallback_ai_segs, fallback_ai_segs;
    hpcc_param_fallback_beta, fallback_beta;
    hpcc_param_min_cwnd_segs, min_cwnd_segs;
    hpcc_param_max_cwnd_segs, max_cwnd_segs;
    hpcc_param_eta_ppm, eta_ppm;
    hpcc_param_max_stage, max_stage;
    hpcc_param_wai_bytes, wai_bytes;
    hpcc_param_expected_flows, expected_flows;
    hpcc_param_base_rtt_us, base_rtt_us;
    hpcc_param_probe_interval_us, probe_interval_us;
    hpcc_param_probe_dscp, probe_dscp;
    hpcc_param_response_dscp, response_dscp;
    hpcc_param_max_hops, max_hops;
    hpcc_param_telemetry, telemetry;
    hpcc_param_pacing_shift, pacing_shift;
    hpcc_param_pace_at_link_rate, pace_at_link_rate;
    hpcc_param_pace_srtt_cap_pct, pace_srtt_cap_pct;
    hpcc_param_path_cap_pct, path_cap_pct;
    hpcc_param_window_validation, window_validation;
    hpcc_param_probe_commit, probe_commit;
    hpcc_param_u_weight_pct, u_weight_pct;
    hpcc_param_max_increase_pct, max_increase_pct;
    hpcc_param_qlen_min_filter, qlen_min_filter;
    hpcc_param_max_flows_per_netns, max_flows_per_netns;
    hpcc_param_sfc_enable, sfc_enable;
    hpcc_param_sfc_port, sfc_port;
    hpcc_param_sfc_rate, sfc_rate;
    hpcc_param_sfc_burst, sfc_burst;
    hpcc_param_sfc_max_pause_us, sfc_max_pause_us;
    hpcc_param_sfc_window_cut, sfc_window_cut;
    hpcc_param_sfc_scope, sfc_scope;
}

// Every knob has a cell: a field added to `Knobs` without one fails here.
const _: () = assert!(Knobs::COUNT == 32);

/// The probe and response DSCPs (read for every received IPv4 packet, so
/// only these two knobs are loaded).
#[inline]
pub(crate) fn dscps() -> (u8, u8) {
    let d = |a: &AtomicU32| u8::try_from(a.load(Relaxed)).unwrap_or(u8::MAX);
    (d(&hpcc_param_probe_dscp), d(&hpcc_param_response_dscp))
}

/// The SFC port (read for every received UDP packet, so only this knob).
#[inline]
pub(crate) fn sfc_port() -> u16 {
    u16::try_from(hpcc_param_sfc_port.load(Relaxed)).unwrap_or(sfc::PORT_DEFAULT)
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
#[no_mangle]
static hpcc_param_ops: bindings::kernel_param_ops = bindings::kernel_param_ops {
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
#[no_mangle]
static hpcc_acl_param_ops: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_acl_set),
    get: Some(hpcc_acl_get),
    free: None,
};
