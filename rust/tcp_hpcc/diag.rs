// SPDX-License-Identifier: GPL-2.0

//! `/proc/net/hpcc_flows`: every flow of the reader's network namespace
//! that has telemetry state, one line each, like `/proc/net/tcp`. Mode
//! 0400 (the netns's root only); a netns sees its own flows only.
//!
//! The values are the flow's [`FlowView`](crate::flow::FlowView): cwnd and
//! pacing rate as the last ACK set them, and of the last telemetry sample
//! U, W, Wc, T, incStage, the hops of the path and the most loaded one
//! (the same values as that sample's `tcp_hpcc:hpcc_sample` tracepoint
//! record), its age, and what is left of an SFC pause. Columns:
//!
//! ```text
//! local remote u_ppm w wc t_us stage cwnd pacing_Bps age_us hops hop pause_us
//! ```
//!
//! Addresses print as `a.b.c.d:port` or `[v6]:port`; `age_us` is `-` before
//! the first sample. The seq_file walks the netns's own list of flows
//! (`NetState::flow_list`), one line per step, and resumes a read by
//! position: no read touches another netns's flows.

use crate::bindings;
use crate::flow::FlowObj;
use crate::hpcc_core::probe::Tuple;
use crate::probe_tx::now_ns;
use core::ffi::c_void;
use core::fmt;
use core::net::Ipv6Addr;
use core::sync::atomic::Ordering::Relaxed;

/// Name of the listing in `/proc/net`.
pub(crate) const PROC_NAME: &core::ffi::CStr = c"hpcc_flows";

/// The seq_file of one `show` call.
struct Seq(*mut bindings::seq_file);

impl Seq {
    /// Appends formatted text (`%pA`: the kernel formats Rust's
    /// `fmt::Arguments`, as `pr_info!` does).
    fn print(&self, args: fmt::Arguments<'_>) {
        // SAFETY: `self.0` is the live seq_file of the current `show` call
        // (the only constructor is `show`); `%pA` takes a pointer to a
        // `fmt::Arguments`, which lives across the call.
        unsafe {
            bindings::seq_printf(self.0, c"%pA".as_ptr(), core::ptr::from_ref(&args).cast::<c_void>());
        }
    }
}

/// `addr:port`, IPv4-mapped addresses as IPv4.
struct Endpoint<'a>(&'a [u8; 16], u16);

impl fmt::Display for Endpoint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = Ipv6Addr::from(*self.0);
        match v6.to_ipv4_mapped() {
            Some(v4) => write!(f, "{}:{}", v4, self.1),
            None => write!(f, "[{}]:{}", v6, self.1),
        }
    }
}

/// One flow's line.
fn line(seq: &Seq, flow: &FlowObj, t: &Tuple, now: u64) {
    let v = &flow.view;
    let s = v.sample();
    let sample = v.sample_ns.load(Relaxed);
    let pause_us = v.pause_until_ns.load(Relaxed).saturating_sub(now) / 1000;
    let (local, remote) = (Endpoint(&t.saddr, t.sport), Endpoint(&t.daddr, t.dport));
    seq.print(format_args!(
        "{} {} {} {} {} {} {} {} {} ",
        local,
        remote,
        s.u_ppm,
        s.window,
        s.wc,
        s.base_rtt_us,
        s.inc_stage,
        v.cwnd.load(Relaxed),
        v.pacing_rate.load(Relaxed),
    ));
    if sample == 0 {
        seq.print(format_args!("- "));
    } else {
        seq.print(format_args!("{} ", now.saturating_sub(sample) / 1000));
    }
    seq.print(format_args!("{} {} {}\n", s.n_hops, s.hop, pause_us));
}

/// The `show` of `/proc/net/hpcc_flows`' seq_file (`hpcc_proc_create_flows`
/// in the shim walks the netns's own list): the header line for a null
/// `h`, else the line of the flow `h` heads.
///
/// # Safety
///
/// `m` is the live seq_file of the current `show` call; `h` is null or the
/// header of a FlowObj on a netns's list, read under the walk's
/// rcu_read_lock().
#[no_mangle]
unsafe extern "C" fn hpcc_flow_show(m: *mut bindings::seq_file, h: *const bindings::hpcc_flow_hdr) {
    let seq = Seq(m);
    // SAFETY: a header on a netns's list starts a published FlowObj
    // (repr(C), header first), live until an RCU grace period after its
    // removal, and the walk holds rcu_read_lock(); fields written after
    // publication are atomics, UnsafeCells or in the Opaque header (see
    // `table::with_flow`).
    let Some(flow) = (unsafe { h.cast::<FlowObj>().as_ref() }) else {
        seq.print(format_args!("local remote u_ppm w wc t_us stage cwnd pacing_Bps age_us hops hop pause_us\n"));
        return;
    };
    let t = flow.tuple();
    line(&seq, flow, &t, now_ns());
}
