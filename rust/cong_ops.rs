// SPDX-License-Identifier: GPL-2.0

//! The `hpcc` entry in TCP's congestion-control table and its hooks.
//!
//! Each hook wraps its socket once in [`TcpSock`] and hands plain integers
//! to the pure core. Until telemetry drives a flow, it runs the core's
//! no-telemetry fallback ([`Fallback`]): start at the configured window,
//! additive increase while cwnd-limited, multiplicative decrease on loss or
//! ECN, always within `[min_cwnd_segs, max_cwnd_segs]`.

use crate::bindings;
use crate::hpcc_core::fallback::Fallback;
use crate::params;
use crate::sock::{CaPriv, TcpSock};
use core::cell::UnsafeCell;
use core::ffi::c_char;
use core::mem::MaybeUninit;
use kernel::error::{to_result, Result};

/// The algorithm name users select with sysctl or `TCP_CONGESTION`.
pub(crate) const NAME: &str = "hpcc";

/// Per-socket state in `icsk_ca_priv`.
#[derive(Default)]
struct CaState {
    /// The fallback law's state.
    fallback: Fallback,
    /// cwnd before the last reduction, for `undo_cwnd`.
    prior_cwnd: u32,
}

// SAFETY: `CaState` is two `u32`s (Fallback holds one `u32`): valid for every
// bit pattern, 8 bytes, 4-byte aligned, no drop glue.
unsafe impl CaPriv for CaState {}

/// Runs `f` on the socket a hook received; `default` if the pointer is null.
#[inline]
fn with_sock<R>(sk: *mut bindings::sock, default: R, f: impl FnOnce(&mut TcpSock<'_>) -> R) -> R {
    // SAFETY: every caller is one of our tcp_congestion_ops hooks passing the
    // socket TCP gave it, and the wrapper does not escape this call.
    match unsafe { TcpSock::from_hook(sk) } {
        Some(mut tp) => f(&mut tp),
        None => default,
    }
}

unsafe extern "C" fn hpcc_init(sk: *mut bindings::sock) {
    with_sock(sk, (), |tp| {
        let p = params::fallback();
        let cwnd = p.initial_segs(tp.mss());
        *tp.ca::<CaState>() = CaState {
            fallback: Fallback::new(),
            prior_cwnd: cwnd,
        };
        tp.set_cwnd(cwnd);
        // No exponential probe from a small window: additive increase from
        // the configured (about line-rate) window.
        tp.set_ssthresh(cwnd);
        // Pace, so a line-rate initial window is not one burst into a
        // shallow switch buffer (TCP paces at 1.2 * cwnd / srtt by default).
        tp.request_pacing();
    })
}

unsafe extern "C" fn hpcc_ssthresh(sk: *mut bindings::sock) -> u32 {
    with_sock(sk, 2, |tp| {
        let p = params::fallback();
        let cwnd = tp.cwnd();
        let st = tp.ca::<CaState>();
        st.prior_cwnd = cwnd;
        st.fallback.on_congestion(&p, cwnd)
    })
}

unsafe extern "C" fn hpcc_cong_avoid(sk: *mut bindings::sock, _ack: u32, acked: u32) {
    with_sock(sk, (), |tp| {
        if !tp.is_cwnd_limited() {
            return;
        }
        let p = params::fallback();
        let (cwnd, ssthresh) = (tp.cwnd(), tp.ssthresh());
        let next = tp.ca::<CaState>().fallback.on_ack(&p, cwnd, ssthresh, acked);
        tp.set_cwnd(next);
    })
}

unsafe extern "C" fn hpcc_undo_cwnd(sk: *mut bindings::sock) -> u32 {
    with_sock(sk, 2, |tp| {
        let cwnd = tp.cwnd();
        cwnd.max(tp.ca::<CaState>().prior_cwnd)
    })
}

/// `name` as the C `char[TCP_CA_NAME_MAX]` TCP expects, NUL-padded.
const fn ca_name() -> [c_char; bindings::TCP_CA_NAME_MAX as usize] {
    let mut out = [0 as c_char; bindings::TCP_CA_NAME_MAX as usize];
    let src = NAME.as_bytes();
    assert!(src.len() < out.len());
    let mut i = 0;
    while i < src.len() {
        out[i] = src[i] as c_char;
        i += 1;
    }
    out
}

/// All-zero ops: every hook `None`, null list and owner, zero flags.
// SAFETY: tcp_congestion_ops is plain C data (function-pointer options,
// raw pointers, integers, a char array); all-zero is valid for each field.
const ZEROED_OPS: bindings::tcp_congestion_ops = unsafe { MaybeUninit::zeroed().assume_init() };

/// The ops TCP links into its list; written once before registration.
struct OpsCell(UnsafeCell<bindings::tcp_congestion_ops>);

// SAFETY: we write the cell only in `Registration::register`, before TCP can
// see it; afterwards only TCP touches it, under its own list lock and RCU.
unsafe impl Sync for OpsCell {}

static OPS: OpsCell = OpsCell(UnsafeCell::new(bindings::tcp_congestion_ops {
    init: Some(hpcc_init),
    ssthresh: Some(hpcc_ssthresh),
    cong_avoid: Some(hpcc_cong_avoid),
    undo_cwnd: Some(hpcc_undo_cwnd),
    name: ca_name(),
    flags: bindings::TCP_CONG_NON_RESTRICTED,
    ..ZEROED_OPS
}));

/// Proof that `hpcc` is registered; dropping it unregisters.
pub(crate) struct Registration(());

impl Registration {
    /// Registers `hpcc` with TCP.
    pub(crate) fn register() -> Result<Self> {
        let ops = OPS.0.get();
        // SAFETY: module init runs once, before registration, so nothing else
        // accesses OPS yet. `owner` makes TCP hold a module reference per
        // socket using hpcc, so rmmod is refused while one exists.
        unsafe { (*ops).owner = bindings::hpcc_this_module() };
        // SAFETY: `ops` is a 'static, fully initialised tcp_congestion_ops
        // with the required hooks (ssthresh, cong_avoid, undo_cwnd) set.
        to_result(unsafe { bindings::tcp_register_congestion_control(ops) })?;
        Ok(Self(()))
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: `OPS` was registered by `register` (the only constructor);
        // unregistering waits for RCU readers, and no socket can still use it
        // because each holds a module reference that blocks module exit.
        unsafe { bindings::tcp_unregister_congestion_control(OPS.0.get()) };
    }
}
