// SPDX-License-Identifier: GPL-2.0

//! Module-wide event counters, read with
//! `cat /sys/module/tcp_hpcc/parameters/stats` (one `name value` per line).
//!
//! Every probe, response and telemetry sample ends in exactly one counter,
//! so hostile or garbage input is always visible.

// The C-visible static keeps the lower-case name rust/helpers.c uses.
#![allow(non_upper_case_globals)]

use crate::bindings;
use core::ffi::{c_char, c_int};
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::error::code::EPERM;

macro_rules! counters {
    ($($variant:ident => $name:literal,)*) => {
        /// One counter.
        #[derive(Clone, Copy, Debug)]
        #[repr(usize)]
        pub(crate) enum Counter { $($variant,)* }

        const NAMES: &[&str] = &[$($name,)*];
    };
}

counters! {
    ProbesSent => "probes_sent",
    ProbeSendErrors => "probe_send_errors",
    ProbesIpsec => "probes_ipsec",
    ProbesReceived => "probes_received",
    ProbesNoSocket => "probes_no_socket",
    ResponsesSent => "responses_sent",
    ResponseSendErrors => "response_send_errors",
    ResponsesIpsec => "responses_ipsec",
    ResponsesReceived => "responses_received",
    ResponsesAccepted => "responses_accepted",
    ResponsesNoFlow => "responses_no_flow",
    ResponsesBadNonce => "responses_bad_nonce",
    ResponsesLate => "responses_late",
    ResponsesBadInt => "responses_bad_int",
    ResponsesTooManyHops => "responses_too_many_hops",
    ResponsesMailboxBusy => "responses_mailbox_busy",
    MalformedTruncated => "malformed_truncated",
    MalformedHeader => "malformed_header",
    MalformedMagic => "malformed_magic",
    MalformedVersionTypeLen => "malformed_version_type_len",
    SamplesApplied => "samples_applied",
    SamplesRecorded => "samples_recorded",
    SamplesPathChanged => "samples_path_changed",
    SamplesStale => "samples_stale",
    FlowsHpcc => "flows_started",
    FlowsNoState => "flows_without_state",
    FlowsReplaced => "flows_replaced",
    FallbackAcks => "fallback_acks",
    HpccAcks => "hpcc_acks",
    CappedByReduction => "telemetry_capped_by_reduction",
    CappedByDelivery => "telemetry_capped_by_delivery",
}

const N: usize = NAMES.len();

static COUNTS: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];

/// Adds one to `c`.
#[inline]
pub(crate) fn inc(c: Counter) {
    if let Some(a) = COUNTS.get(c as usize) {
        a.fetch_add(1, Relaxed);
    }
}

/// A `fmt::Write` into a fixed buffer that stops (without error) when full.
struct PageWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Write for PageWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.buf.len().saturating_sub(self.len);
        let n = s.len().min(room);
        if let (Some(dst), Some(src)) = (self.buf.get_mut(self.len..self.len + n), s.as_bytes().get(..n)) {
            dst.copy_from_slice(src);
            self.len += n;
        }
        Ok(())
    }
}

/// sysfs gives `get` one page.
const PAGE: usize = 4096;

/// `kernel_param_ops.get` of the read-only `stats` parameter.
unsafe extern "C" fn hpcc_stats_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    if buffer.is_null() {
        return 0;
    }
    // SAFETY: the parameter core passes a buffer of PAGE_SIZE (>= 4096)
    // bytes that nothing else touches during this call.
    let page = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), PAGE) };
    let mut w = PageWriter { buf: page, len: 0 };
    for (name, count) in NAMES.iter().zip(COUNTS.iter()) {
        let _ = writeln!(w, "{} {}", name, count.load(Relaxed));
    }
    w.len as c_int
}

/// Recent telemetry samples, for `cat .../parameters/trace`: a ring of
/// the last [`TRACE_LEN`] samples applied by any flow (each slot four
/// relaxed atomics, so a reader racing a writer may see a torn line).
const TRACE_LEN: usize = 64;
static TRACE: [[AtomicU64; 4]; TRACE_LEN] = [const { [const { AtomicU64::new(0) }; 4] }; TRACE_LEN];
static TRACE_HEAD: AtomicU64 = AtomicU64::new(0);

/// One traced sample.
pub(crate) struct TraceSample {
    /// Host time, ns.
    pub(crate) now_ns: u64,
    /// `U` in Q23.40.
    pub(crate) u_q40: u64,
    /// `W`, bytes.
    pub(crate) window: u32,
    /// The cwnd set, segments.
    pub(crate) cwnd: u32,
    /// `incStage`.
    pub(crate) inc_stage: u32,
    /// Event code: 0 recorded, 1 path changed, 2 updated, 3 committed, 4 stale.
    pub(crate) event: u32,
    /// Smoothed RTT, µs.
    pub(crate) srtt_us: u32,
    /// T, µs.
    pub(crate) base_rtt_us: u32,
}

/// Records a sample in the trace ring.
pub(crate) fn trace(t: &TraceSample) {
    let i = (TRACE_HEAD.fetch_add(1, Relaxed) as usize) % TRACE_LEN;
    if let Some(slot) = TRACE.get(i) {
        let words = [
            t.now_ns,
            t.u_q40,
            (u64::from(t.window) << 32) | u64::from(t.cwnd),
            (u64::from(t.inc_stage) << 56)
                | (u64::from(t.event & 0xff) << 48)
                | (u64::from(t.srtt_us & 0xff_ffff) << 24)
                | u64::from(t.base_rtt_us & 0xff_ffff),
        ];
        for (a, w) in slot.iter().zip(words) {
            a.store(w, Relaxed);
        }
    }
}

/// `kernel_param_ops.get` of the read-only `trace` parameter.
unsafe extern "C" fn hpcc_trace_get(buffer: *mut c_char, _kp: *const bindings::kernel_param) -> c_int {
    if buffer.is_null() {
        return 0;
    }
    // SAFETY: as in `hpcc_stats_get`: a PAGE_SIZE buffer for this call.
    let page = unsafe { core::slice::from_raw_parts_mut(buffer.cast::<u8>(), PAGE) };
    let mut w = PageWriter { buf: page, len: 0 };
    let _ = writeln!(w, "# t_us u_milli window_bytes cwnd inc_stage event srtt_us base_rtt_us");
    let head = TRACE_HEAD.load(Relaxed) as usize;
    for k in 0..TRACE_LEN {
        let Some(slot) = TRACE.get((head + k) % TRACE_LEN) else { continue };
        let v: [u64; 4] = [0, 1, 2, 3].map(|j| slot.get(j).map_or(0, |a| a.load(Relaxed)));
        if v[0] == 0 {
            continue;
        }
        let _ = writeln!(
            w,
            "{} {} {} {} {} {} {} {}",
            v[0] / 1000,
            (v[1].saturating_mul(1000)) >> 40,
            v[2] >> 32,
            v[2] & 0xffff_ffff,
            v[3] >> 56,
            (v[3] >> 48) & 0xff,
            (v[3] >> 24) & 0xff_ffff,
            v[3] & 0xff_ffff
        );
    }
    w.len as c_int
}

/// The ops of the read-only `trace` parameter.
#[no_mangle]
static hpcc_trace_ops: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_stats_set),
    get: Some(hpcc_trace_get),
    free: None,
};

/// `stats` cannot be written.
unsafe extern "C" fn hpcc_stats_set(_val: *const c_char, _kp: *const bindings::kernel_param) -> c_int {
    EPERM.to_errno()
}

/// The ops of the read-only `stats` parameter.
#[no_mangle]
static hpcc_stats_ops: bindings::kernel_param_ops = bindings::kernel_param_ops {
    flags: 0,
    set: Some(hpcc_stats_set),
    get: Some(hpcc_stats_get),
    free: None,
};
