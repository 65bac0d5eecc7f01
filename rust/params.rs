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
use crate::hpcc_core::fallback::FallbackParams;
use crate::hpcc_core::params::{HpccConfig, HpccParams, Mode, ParamError};
use crate::hpcc_core::{probe, sfc, wire};
use core::ffi::{c_char, c_int, c_uint, CStr};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};
use kernel::error::code::EINVAL;
use kernel::prelude::*;

const F: FallbackParams = FallbackParams::DEFAULT;
const H: HpccConfig = HpccConfig::DEFAULT;

/// maxStage for TCP: the drafts' 5 assumes an update per ACK; with one
/// probe sample per RTT, five additive stages take five RTTs and noisy
/// samples then keep the window low (measured: 73% of B with 5, 86% with 1
/// on the emulated 100 Mbit/s bottleneck, same median queue).
const DEFAULT_MAX_STAGE: u32 = 1;

/// MSS used to check window bounds when a knob is written.
const REFERENCE_MSS: u32 = 1448;

/// Declares the knobs: C symbol, sysfs name, default, and the field of
/// [`Knobs`] it sets.
macro_rules! knobs {
    ($($sym:ident, $name:literal, $default:expr, $field:ident;)*) => {
        $(
            #[no_mangle]
            static $sym: AtomicU32 = AtomicU32::new($default);
        )*

        /// A snapshot of every knob.
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct Knobs {
            $(pub(crate) $field: u32,)*
        }

        /// Reads every knob (each atomically; a reader racing a writer may
        /// see old and new values of different knobs, which every consumer
        /// tolerates: clamps accept crossed bounds, flows validate).
        #[inline]
        pub(crate) fn knobs() -> Knobs {
            Knobs { $($field: $sym.load(Relaxed),)* }
        }

        static KNOBS: &[Knob] = &[
            $(Knob { cell: &$sym, name: $name, apply: |k, v| k.$field = v },)*
        ];
    };
}

knobs! {
    hpcc_param_init_window_bytes, "init_window_bytes", F.init_bytes, init_window_bytes;
    hpcc_param_fallback_ai_segs, "fallback_ai_segs", F.ai_segs, fallback_ai_segs;
    hpcc_param_fallback_beta, "fallback_beta", F.beta, fallback_beta;
    hpcc_param_min_cwnd_segs, "min_cwnd_segs", F.min_segs, min_cwnd_segs;
    hpcc_param_max_cwnd_segs, "max_cwnd_segs", F.max_segs, max_cwnd_segs;
    hpcc_param_eta_ppm, "eta_ppm", H.eta_ppm, eta_ppm;
    hpcc_param_max_stage, "max_stage", DEFAULT_MAX_STAGE, max_stage;
    hpcc_param_wai_bytes, "wai_bytes", H.wai_bytes, wai_bytes;
    hpcc_param_expected_flows, "expected_flows", H.expected_flows, expected_flows;
    hpcc_param_base_rtt_us, "base_rtt_us", 0, base_rtt_us;
    hpcc_param_probe_interval_us, "probe_interval_us", 0, probe_interval_us;
    hpcc_param_probe_dscp, "probe_dscp", probe::DSCP_PROBE_DEFAULT as u32, probe_dscp;
    hpcc_param_response_dscp, "response_dscp", probe::DSCP_RESPONSE_DEFAULT as u32, response_dscp;
    hpcc_param_max_hops, "max_hops", wire::MAX_HOPS as u32, max_hops;
    hpcc_param_telemetry, "telemetry", 1, telemetry;
    hpcc_param_pacing_shift, "pacing_shift", 11, pacing_shift;
    hpcc_param_pace_at_link_rate, "pace_at_link_rate", 1, pace_at_link_rate;
    hpcc_param_pace_srtt_cap_pct, "pace_srtt_cap_pct", 150, pace_srtt_cap_pct;
    hpcc_param_path_cap_pct, "path_cap_pct", 0, path_cap_pct;
    hpcc_param_window_validation, "window_validation", 1, window_validation;
    hpcc_param_probe_commit, "probe_commit", 1, probe_commit;
    hpcc_param_u_weight_pct, "u_weight_pct", 100, u_weight_pct;
    hpcc_param_max_increase_pct, "max_increase_pct", 110, max_increase_pct;
    hpcc_param_qlen_min_filter, "qlen_min_filter", 0, qlen_min_filter;
    hpcc_param_max_flows_per_netns, "max_flows_per_netns", 0, max_flows_per_netns;
    hpcc_param_sfc_enable, "sfc_enable", 0, sfc_enable;
    hpcc_param_sfc_port, "sfc_port", sfc::PORT_DEFAULT as u32, sfc_port;
    hpcc_param_sfc_rate, "sfc_rate", SFC_RATE_DEFAULT, sfc_rate;
    hpcc_param_sfc_burst, "sfc_burst", SFC_BURST_DEFAULT, sfc_burst;
    hpcc_param_sfc_max_pause_us, "sfc_max_pause_us", SFC_MAX_PAUSE_US_DEFAULT, sfc_max_pause_us;
    hpcc_param_sfc_window_cut, "sfc_window_cut", 1, sfc_window_cut;
    hpcc_param_sfc_scope, "sfc_scope", 0, sfc_scope;
}

/// Signals a netns accepts per second, and its burst: an incast of a few
/// hundred senders signalled once per RTT each stays below the rate.
const SFC_RATE_DEFAULT: u32 = 10_000;
const SFC_BURST_DEFAULT: u32 = 100;
/// Longest pause applied: 10 ms, a few base RTTs in a data center.
const SFC_MAX_PAUSE_US_DEFAULT: u32 = 10_000;

/// Why a knob set was refused.
#[derive(Clone, Copy)]
pub(crate) enum KnobError {
    /// The fallback parameters are invalid.
    Fallback(crate::hpcc_core::fallback::FallbackParamError),
    /// The HPCC++ parameters are invalid.
    Hpcc(ParamError),
    /// A DSCP is above 63, or the two DSCPs are equal.
    Dscp,
    /// `max_hops` is not in `1..=HPCC_INT_MAX_HOPS`.
    MaxHops,
    /// `telemetry`, `pace_at_link_rate`, `window_validation`, `probe_commit`
    /// or `qlen_min_filter` is not 0 or 1.
    Telemetry,
    /// `pacing_shift` is not 0 or in 8..=16.
    PacingShift,
    /// `base_rtt_us` or `probe_interval_us` is above one second.
    Time,
    /// `pace_srtt_cap_pct` is not 0 or in 100..=1000.
    PaceCap,
    /// `max_flows_per_netns` is above 2^31.
    FlowLimit,
    /// An SFC knob is out of its range.
    Sfc,
}

impl KnobError {
    /// A short explanation for the kernel log.
    pub(crate) fn describe(&self) -> &'static str {
        use crate::hpcc_core::fallback::FallbackParamError as E;
        match self {
            Self::Fallback(E::InitWindow) => "init_window_bytes must be in 1..2^31",
            Self::Fallback(E::AdditiveIncrease) => "fallback_ai_segs must be in 1..64",
            Self::Fallback(E::Beta) => "fallback_beta must be in 512..1023",
            Self::Fallback(E::Bounds) => "need 2 <= min_cwnd_segs <= max_cwnd_segs <= 65535",
            Self::Hpcc(e) => e.describe(),
            Self::Dscp => "DSCPs must be 0..63 and differ",
            Self::MaxHops => "max_hops must be in 1..8",
            Self::Telemetry => {
                "telemetry, pace_at_link_rate, window_validation, probe_commit and qlen_min_filter must be 0 or 1"
            }
            Self::PacingShift => "pacing_shift must be 0 (kernel default) or 8..16",
            Self::Time => "base_rtt_us and probe_interval_us must be at most 1000000",
            Self::PaceCap => "pace_srtt_cap_pct must be 0 or 100..1000",
            Self::FlowLimit => "max_flows_per_netns must be at most 2^31",
            Self::Sfc => {
                "sfc_enable, sfc_window_cut and sfc_scope must be 0 or 1, sfc_port 1..65535, sfc_rate 1..10^7, \
                 sfc_burst 1..10^6, sfc_max_pause_us 1..10^6"
            }
        }
    }
}

/// Largest `base_rtt_us` and `probe_interval_us`.
const MAX_US: u32 = 1_000_000;

impl Knobs {
    /// The no-telemetry fallback's parameters.
    pub(crate) fn fallback(&self) -> FallbackParams {
        FallbackParams {
            init_bytes: self.init_window_bytes,
            ai_segs: self.fallback_ai_segs,
            beta: self.fallback_beta,
            min_segs: self.min_cwnd_segs,
            max_segs: self.max_cwnd_segs,
        }
    }

    /// The HPCC++ configuration for a flow with this MSS and base RTT.
    pub(crate) fn hpcc(&self, mss: u32, base_rtt_ns: u64) -> HpccConfig {
        let mss = mss.max(1);
        let cap = |segs: u32| segs.saturating_mul(mss).min(wire_max_window());
        let min = cap(self.min_cwnd_segs.max(2));
        let max = cap(self.max_cwnd_segs).max(min);
        HpccConfig {
            base_rtt_ns,
            eta_ppm: self.eta_ppm,
            max_stage: self.max_stage,
            wai_bytes: self.wai_bytes,
            expected_flows: self.expected_flows,
            init_window_bytes: self.init_window_bytes.clamp(min, max),
            min_window_bytes: min,
            max_window_bytes: max,
            mode: if self.probe_commit == 1 { Mode::Probe } else { Mode::Sender },
            path_cap_pct: self.path_cap_pct,
            u_weight_pct: self.u_weight_pct,
            max_increase_pct: self.max_increase_pct,
            qlen_min_filter: self.qlen_min_filter == 1,
        }
    }

    /// Validated HPCC++ parameters for a flow, or why not.
    pub(crate) fn hpcc_params(&self, mss: u32, base_rtt_ns: u64) -> Result<HpccParams, ParamError> {
        self.hpcc(mss, base_rtt_ns).validate()
    }

    /// Checks the whole set.
    pub(crate) fn validate(&self) -> Result<(), KnobError> {
        self.fallback().validate().map_err(KnobError::Fallback)?;
        if self.base_rtt_us > MAX_US || self.probe_interval_us > MAX_US {
            return Err(KnobError::Time);
        }
        // A representative flow: the configured T, or 1 ms when measured.
        let t_ns = if self.base_rtt_us == 0 { 1_000_000 } else { u64::from(self.base_rtt_us) * 1000 };
        self.hpcc_params(REFERENCE_MSS, t_ns).map_err(KnobError::Hpcc)?;
        // 0 is every unmarked packet's DSCP; the two must tell probes
        // from responses.
        if !(1..=63).contains(&self.probe_dscp)
            || !(1..=63).contains(&self.response_dscp)
            || self.probe_dscp == self.response_dscp
        {
            return Err(KnobError::Dscp);
        }
        if self.max_hops == 0 || self.max_hops > wire::MAX_HOPS as u32 {
            return Err(KnobError::MaxHops);
        }
        if self.telemetry > 1
            || self.pace_at_link_rate > 1
            || self.window_validation > 1
            || self.probe_commit > 1
            || self.qlen_min_filter > 1
        {
            return Err(KnobError::Telemetry);
        }
        if self.pacing_shift != 0 && !(8..=16).contains(&self.pacing_shift) {
            return Err(KnobError::PacingShift);
        }
        if self.pace_srtt_cap_pct != 0 && !(100..=1000).contains(&self.pace_srtt_cap_pct) {
            return Err(KnobError::PaceCap);
        }
        if self.max_flows_per_netns > 1 << 31 {
            return Err(KnobError::FlowLimit);
        }
        if self.sfc_enable > 1
            || self.sfc_window_cut > 1
            || self.sfc_scope > 1
            || !(1..=65535).contains(&self.sfc_port)
            || !(1..=sfc::MAX_RATE).contains(&self.sfc_rate)
            || !(1..=sfc::MAX_BURST).contains(&self.sfc_burst)
            || !(1..=sfc::MAX_PAUSE_US).contains(&self.sfc_max_pause_us)
        {
            return Err(KnobError::Sfc);
        }
        Ok(())
    }
}

/// The largest window the core accepts, in bytes.
const fn wire_max_window() -> u32 {
    crate::hpcc_core::params::MAX_WINDOW_BYTES
}

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

/// The current fallback parameters (read on every ACK).
#[inline]
pub(crate) fn fallback() -> FallbackParams {
    knobs().fallback()
}

/// One knob: its storage, name and the field it sets.
struct Knob {
    cell: &'static AtomicU32,
    name: &'static str,
    apply: fn(&mut Knobs, u32),
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
    (knob.apply)(&mut next, v);
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
