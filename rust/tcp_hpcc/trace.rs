// SPDX-License-Identifier: GPL-2.0

//! The `tcp_hpcc:hpcc_ctl` tracepoint's switch and record (the
//! tracepoints themselves fire through [`crate::sock::TcpSock`]).

use crate::bindings;

/// Whether the `tcp_hpcc:hpcc_ctl` tracepoint is on (a static key).
#[inline]
pub(crate) fn ctl_enabled() -> bool {
    // SAFETY: the helper only reads the tracepoint's static key.
    unsafe { bindings::hpcc_trace_ctl_enabled() }
}

/// An empty `hpcc_ctl_rec`.
#[inline]
pub(crate) fn ctl_rec() -> bindings::hpcc_ctl_rec {
    // SAFETY: a plain C struct of integers and byte arrays: all zeroes is
    // valid.
    unsafe { core::mem::zeroed() }
}
