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
    ProbesReceived => "probes_received",
    ProbesNoSocket => "probes_no_socket",
    ResponsesSent => "responses_sent",
    ResponseSendErrors => "response_send_errors",
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
    FallbackAcks => "fallback_acks",
    HpccAcks => "hpcc_acks",
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
