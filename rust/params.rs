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
use crate::hpcc_core::{probe, wire};
use core::ffi::{c_char, c_int, c_uint};
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
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
}

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
