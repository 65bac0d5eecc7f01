// SPDX-License-Identifier: GPL-2.0

//! Event counters, per network namespace and per CPU (`netns`), read as
//! `/proc/net/hpcc_stat` by the netns's root: one `name value` per line.
//!
//! Every probe, response, telemetry sample and SFC signal ends in exactly
//! one counter (signals: `sfc_received` and then one outcome's, listed
//! after the others), so hostile
//! or garbage input is always visible. Two gauges follow the
//! counters: `flows` (flow objects alive in this netns) and
//! `flows_pending_free` (released, waiting for their RCU grace period).

use crate::bindings;
use crate::hpcc_core::sfc::Outcome;
use crate::netns::NetRef;
use core::ffi::{c_int, c_void, CStr};

macro_rules! counters {
    ($($variant:ident => $name:literal,)*) => {
        /// One counter besides the SFC outcomes.
        #[derive(Clone, Copy, Debug)]
        #[repr(usize)]
        pub(crate) enum Counter { $($variant,)* }

        const NAMES: &[&CStr] = &[$($name,)*];
    };
}

counters! {
    ProbesSent => c"probes_sent",
    ProbesHeldShare => c"probes_held_share",
    ProbesHeldBudget => c"probes_held_budget",
    ProbeSendErrors => c"probe_send_errors",
    ProbesIpsec => c"probes_ipsec",
    ProbesReceived => c"probes_received",
    ProbesNoSocket => c"probes_no_socket",
    ProbesOverResponseBudget => c"probes_over_response_budget",
    ResponsesSent => c"responses_sent",
    ResponseSendErrors => c"response_send_errors",
    ResponsesIpsec => c"responses_ipsec",
    ResponsesReceived => c"responses_received",
    ResponsesAccepted => c"responses_accepted",
    ResponsesNoFlow => c"responses_no_flow",
    ResponsesBadNonce => c"responses_bad_nonce",
    ResponsesLate => c"responses_late",
    ResponsesBadInt => c"responses_bad_int",
    ResponsesTooManyHops => c"responses_too_many_hops",
    ResponsesMailboxBusy => c"responses_mailbox_busy",
    MalformedTruncated => c"malformed_truncated",
    MalformedHeader => c"malformed_header",
    MalformedMagic => c"malformed_magic",
    MalformedVersionTypeLen => c"malformed_version_type_len",
    SamplesApplied => c"samples_applied",
    SamplesRecorded => c"samples_recorded",
    SamplesPathChanged => c"samples_path_changed",
    SamplesStale => c"samples_stale",
    FlowsStarted => c"flows_started",
    FlowsWithTelemetry => c"flows_with_telemetry",
    FlowsNoState => c"flows_without_state",
    FlowsLimited => c"flows_over_netns_limit",
    FlowsChurn => c"flows_churn_deferred",
    FlowsReplaced => c"flows_replaced",
    FallbackAcks => c"fallback_acks",
    HpccAcks => c"hpcc_acks",
    CappedByReduction => c"telemetry_capped_by_reduction",
    CappedByDelivery => c"telemetry_capped_by_delivery",
    SfcReceived => c"sfc_received",
    SfcWindowCuts => c"sfc_window_cuts",
    SfcEgressHeld => c"sfc_egress_held",
    SfcNoEdtQdisc => c"sfc_egress_no_edt_qdisc",
}

/// Number of counters: [`Counter`]'s, then one per SFC outcome (the
/// core's table, `sfc::Outcome`, names them).
pub(crate) const N: usize = NAMES.len() + Outcome::COUNT;

/// Adds one to `c` in `net`.
#[inline]
pub(crate) fn inc(net: NetRef<'_>, c: Counter) {
    net.state().inc(c as usize);
}

/// Adds one to the counter of the SFC outcome `o` in `net`.
#[inline]
pub(crate) fn inc_outcome(net: NetRef<'_>, o: Outcome) {
    net.state().inc(NAMES.len() + o as usize);
}

/// Counter `i`'s name.
fn name(i: usize) -> &'static CStr {
    match NAMES.get(i) {
        Some(n) => n,
        None => i.checked_sub(NAMES.len()).and_then(|j| Outcome::ALL.get(j)).map_or(c"unnamed", |o| o.counter_name()),
    }
}

/// Writes `name value\n`.
///
/// # Safety
///
/// `m` is the seq_file of the current `show` call.
unsafe fn put(m: *mut bindings::seq_file, name: &CStr, v: u64) {
    // SAFETY: `m` is live for the call (caller); `name` and the delimiter
    // are NUL-terminated strings that outlive it.
    unsafe {
        bindings::__seq_puts(m, name.as_ptr());
        bindings::seq_put_decimal_ull(m, c" ".as_ptr(), v);
        bindings::seq_putc(m, b'\n' as _);
    }
}

/// `show` of `/proc/net/hpcc_stat`.
///
/// # Safety
///
/// Called by the seq_file core with a live `m` whose private data is its netns.
pub(crate) unsafe extern "C" fn show(m: *mut bindings::seq_file, _v: *mut c_void) -> c_int {
    // SAFETY: the proc core calls us with the file's live seq_file, whose
    // netns it holds for as long as the file is open, and in which our
    // pernet init created the file.
    let Some(net) = (unsafe { NetRef::from_raw(bindings::hpcc_seq_net(m)) }) else { return 0 };
    let st = net.state();
    for i in 0..N {
        // SAFETY: `m` is this call's seq_file.
        unsafe { put(m, name(i), st.sum(i)) };
    }
    use core::sync::atomic::Ordering::Relaxed;
    // SAFETY: as above.
    unsafe {
        put(m, c"flows", u64::from(st.flows.load(Relaxed)));
        put(m, c"flows_pending_free", u64::from(st.pending_free.load(Relaxed)));
    }
    0
}
