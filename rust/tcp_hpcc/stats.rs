// SPDX-License-Identifier: GPL-2.0

//! Event counters, per network namespace and per CPU (`netns`), read as
//! `/proc/net/hpcc_stat` by the netns's root: one `name value` per line.
//!
//! Every probe, response, telemetry sample and SFC signal ends in exactly
//! one counter (signals: `sfc_received` and then one outcome), so hostile
//! or garbage input is always visible. Two gauges follow the
//! counters: `flows` (flow objects alive in this netns) and
//! `flows_pending_free` (released, waiting for their RCU grace period).

use crate::bindings;
use crate::netns::NetRef;
use core::ffi::{c_int, c_void, CStr};

macro_rules! counters {
    ($($variant:ident => $name:literal,)*) => {
        /// One counter.
        #[derive(Clone, Copy, Debug)]
        #[repr(usize)]
        pub(crate) enum Counter { $($variant,)* }

        const NAMES: &[&CStr] = &[$($name,)*];
    };
}

counters! {
    ProbesSent => c"probes_sent",
    ProbeSendErrors => c"probe_send_errors",
    ProbesIpsec => c"probes_ipsec",
    ProbesReceived => c"probes_received",
    ProbesNoSocket => c"probes_no_socket",
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
    FlowsHpcc => c"flows_started",
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
    SfcDisabled => c"sfc_disabled",
    SfcBadUdp => c"sfc_bad_udp",
    SfcBadSource => c"sfc_bad_source",
    SfcLoopback => c"sfc_loopback",
    SfcTunnel => c"sfc_tunnel",
    SfcIface => c"sfc_not_on_iface",
    SfcTtl => c"sfc_bad_ttl",
    SfcAcl => c"sfc_not_in_acl",
    SfcLocalSource => c"sfc_local_source",
    SfcRateLimited => c"sfc_rate_limited",
    SfcTruncated => c"sfc_truncated",
    SfcBadHeader => c"sfc_bad_header",
    SfcNoFlow => c"sfc_no_flow",
    SfcSeq => c"sfc_seq_out_of_window",
    SfcDuplicate => c"sfc_duplicate",
    SfcApplied => c"sfc_applied",
    SfcDeferred => c"sfc_deferred",
    SfcWindowCuts => c"sfc_window_cuts",
    SfcAppliedEgress => c"sfc_applied_egress",
    SfcTableFull => c"sfc_pause_table_full",
    SfcSourceQuota => c"sfc_source_quota",
    SfcEgressHeld => c"sfc_egress_held",
    SfcNoEdtQdisc => c"sfc_egress_no_edt_qdisc",
}

/// Number of counters.
pub(crate) const N: usize = NAMES.len();

/// Adds one to `c` in `net`.
#[inline]
pub(crate) fn inc(net: NetRef, c: Counter) {
    net.state().inc(c as usize);
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
pub(crate) unsafe extern "C" fn show(m: *mut bindings::seq_file, _v: *mut c_void) -> c_int {
    // SAFETY: the proc core calls us with the file's live seq_file, whose
    // netns it holds for as long as the file is open.
    let Some(net) = NetRef::new(unsafe { bindings::hpcc_seq_net(m) }) else { return 0 };
    let st = net.state();
    for (i, name) in NAMES.iter().enumerate() {
        // SAFETY: `m` is this call's seq_file.
        unsafe { put(m, name, st.sum(i)) };
    }
    use core::sync::atomic::Ordering::Relaxed;
    // SAFETY: as above.
    unsafe {
        put(m, c"flows", u64::from(st.flows.load(Relaxed)));
        put(m, c"flows_pending_free", u64::from(st.pending_free.load(Relaxed)));
    }
    0
}
