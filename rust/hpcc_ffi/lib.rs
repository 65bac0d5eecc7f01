// SPDX-License-Identifier: GPL-2.0

//! The HPCC++ core behind a C ABI (`include/hpcc_ffi.h`), for a host other
//! than the kernel, such as an ns-3 TCP: one function for each entry point
//! of the core that the kernel glue calls, and nothing else. Like the glue,
//! it converts and applies; every decision is the core's.
//!
//! * the knob profile: [`hpcc_knobs_new`], [`hpcc_knobs_set`],
//!   [`hpcc_knobs_validate`], [`hpcc_knobs_free`];
//! * the connection's controller (`SockCtl`): [`hpcc_sock_init`],
//!   [`hpcc_sock_wants_flow_on_ack`], [`hpcc_sock_wants_flow_on_tx_start`],
//!   [`hpcc_sock_flow_refused`], [`hpcc_sock_ssthresh`],
//!   [`hpcc_sock_undo_cwnd`], [`hpcc_sock_on_ack`];
//! * the flow's (`FlowCtl`): [`hpcc_flow_new`], [`hpcc_flow_probe_at_tx_start`],
//!   [`hpcc_flow_probe_due`], [`hpcc_flow_admit_probe`], [`hpcc_flow_probe_held`],
//!   [`hpcc_flow_probe_sent`], [`hpcc_flow_pacing_rate`], [`hpcc_flow_free`];
//! * the host's probe budget: [`hpcc_budget_new`],
//!   [`hpcc_budget_take_response`], [`hpcc_budget_free`];
//! * which responses the sender accepts: [`hpcc_nonces_new`],
//!   [`hpcc_nonces_record`], [`hpcc_nonces_accept`], [`hpcc_nonces_free`]
//!   (a flow's outstanding probes) and [`hpcc_admit_int`];
//! * Source Flow Control: the signal's bytes ([`hpcc_sfc_encode`], what a
//!   switch sends), the host's rules that need no device
//!   ([`hpcc_sfc_accept`], [`hpcc_sfc_check_flow`]), and the flow's cell
//!   that the signal path writes and the next ACK reads
//!   ([`hpcc_sfc_mail_new`], [`hpcc_sfc_mail_put`], [`hpcc_sfc_mail_state`]:
//!   the [`SfcState`] argument of [`hpcc_sock_on_ack`],
//!   [`hpcc_sfc_mail_take_pause`], [`hpcc_sfc_mail_free`]);
//! * the receiver's side: the flow count ([`hpcc_rcvcount_new`],
//!   [`hpcc_rcvcount_insert`], [`hpcc_rcvcount_count_with`]) and the
//!   packets ([`hpcc_build_probe`], [`hpcc_classify`],
//!   [`hpcc_build_response`]).
//!
//! The core's own records are the ABI's where they are plain data
//! (`Conn`, `RateSample`, `SfcState`, `InitDecision`, `Tuple`,
//! `TraceSample`: `repr(C)`); the others have a C form here.
//!
//! Handles (`hpcc_knobs`, `hpcc_flow`, `hpcc_budget`, `hpcc_rcvcount`) are boxed by this
//! library and freed by it; `SockCtl` is plain data the caller keeps in an
//! [`HpccSock`] of its own, as the kernel keeps it in `icsk_ca_priv`. Every
//! pointer argument is checked for null; a null handle or record makes the
//! call a no-op returning 0 (or an error code where the function has one).

#![deny(unsafe_op_in_unsafe_fn)]

use core::ffi::{c_char, c_int, CStr};
use hpcc_core::budget::{Admit, Budget};
use hpcc_core::control::{self, AckDecision, Conn, FlowCtl, InitDecision, RateSample, Response, SfcState, SockCtl};
use hpcc_core::knobs::Knobs;
use hpcc_core::nonce::{NonceRing, Verdict};
use hpcc_core::probe::{self, Kind, Tuple};
use hpcc_core::rcvcount::FlowCount;
use hpcc_core::sfc::{self, Mail as SfcMail, Outcome, Signal};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `-EINVAL`.
const EINVAL: c_int = -22;

/// The longest probe or response, bytes (`HPCC_FFI_MAX_PACKET_LEN`).
pub const MAX_PACKET_LEN: usize = probe::MAX_PACKET_LEN;
/// The INT stack area of a probe, bytes (`HPCC_FFI_INT_LEN`).
pub const INT_LEN: usize = probe::INT_LEN;

/// `struct hpcc_response`: [`Response`], the flow's newest response whose
/// nonce the caller checked; `int_stack` holds `int_len` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HpccResponse {
    pub rx_ns: u64,
    pub int_stack: *const u8,
    pub int_len: usize,
    pub snd_nxt: u32,
}

/// `struct hpcc_ack_decision`: [`AckDecision`]. `notes` has bit `1 << n`
/// for each `control::Note` `n` (in declaration order); `has_trace` says
/// whether `trace` holds an applied response's sample.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HpccAckDecision {
    pub pacing_rate: u64,
    pub cwnd: u32,
    pub tso_segs: u16,
    pub notes: u16,
    pub pacing_shift: u8,
    pub probe: u8,
    pub take_pause: u8,
    pub has_trace: u8,
    pub trace: control::TraceSample,
}

impl From<AckDecision> for HpccAckDecision {
    fn from(d: AckDecision) -> Self {
        HpccAckDecision {
            pacing_rate: d.pacing_rate,
            cwnd: d.cwnd,
            tso_segs: d.tso_segs,
            notes: d.notes.bits(),
            pacing_shift: d.pacing_shift,
            probe: u8::from(d.probe),
            take_pause: u8::from(d.take_pause),
            has_trace: u8::from(d.trace.is_some()),
            trace: d.trace.unwrap_or_default(),
        }
    }
}

/// `struct hpcc_sock`: a connection's [`SockCtl`], kept by the caller
/// (plain data: any bit pattern this library wrote is valid; zeroed before
/// [`hpcc_sock_init`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HpccSock {
    pub ctl: SockCtl,
}

/// `struct hpcc_packet`: a classified probe or response
/// ([`hpcc_classify`]); `kind` 0 probe, 1 response; `int_stack` the INT
/// area the packet carries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HpccPacket {
    pub tuple: Tuple,
    pub nonce: u32,
    pub snd_nxt: u32,
    pub kind: u8,
    pub int_stack: [u8; INT_LEN],
}

/// `*p`, or `None` for a null pointer.
///
/// # Safety
///
/// `p` is null or points to a valid `T` that lives for `'a` and that no
/// one writes meanwhile.
unsafe fn get<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: caller contract.
    unsafe { p.as_ref() }
}

/// `*p` mutably, or `None` for a null pointer.
///
/// # Safety
///
/// `p` is null or points to a valid `T` that lives for `'a`, accessed
/// through nothing else meanwhile.
unsafe fn get_mut<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: caller contract.
    unsafe { p.as_mut() }
}

/// Frees a handle this library boxed (null: nothing).
///
/// # Safety
///
/// `p` is null or from `Box::into_raw` here, and not used afterwards.
unsafe fn free<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: caller contract: a box of ours, freed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

// ---- knobs --------------------------------------------------------------

/// A knob profile: `"module"` (what the module ships), `"datacenter"` or
/// `"drafts"` ([`Knobs::profile`]); NULL `profile` for the module's.
/// Returns NULL for an unknown name.
///
/// # Safety
///
/// `profile` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hpcc_knobs_new(profile: *const c_char) -> *mut Knobs {
    let k = if profile.is_null() {
        Some(Knobs::DEFAULT)
    } else {
        // SAFETY: caller contract, checked non-null.
        unsafe { CStr::from_ptr(profile) }.to_str().ok().and_then(Knobs::profile)
    };
    k.map_or(core::ptr::null_mut(), |k| Box::into_raw(Box::new(k)))
}

/// Sets knob `name` (a module parameter's name) to `value`: 0, or
/// `-EINVAL` for an unknown name. [`hpcc_knobs_validate`] checks the set.
///
/// # Safety
///
/// `k` is null or from [`hpcc_knobs_new`]; `name` null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn hpcc_knobs_set(k: *mut Knobs, name: *const c_char, value: u32) -> c_int {
    // SAFETY: caller contract.
    let (Some(k), false) = (unsafe { get_mut(k) }, name.is_null()) else { return EINVAL };
    // SAFETY: caller contract, checked non-null.
    let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("");
    if k.set(name, value) {
        0
    } else {
        EINVAL
    }
}

/// Reads knob `name` into `*out`: 0, or `-EINVAL` for an unknown name
/// (then `*out` is untouched).
///
/// # Safety
///
/// `k` is null or from [`hpcc_knobs_new`]; `name` null or NUL-terminated;
/// `out` null or writable.
#[no_mangle]
pub unsafe extern "C" fn hpcc_knobs_get(k: *const Knobs, name: *const c_char, out: *mut u32) -> c_int {
    // SAFETY: caller contract.
    let (Some(k), Some(out), false) = (unsafe { get(k) }, unsafe { get_mut(out) }, name.is_null()) else {
        return EINVAL;
    };
    // SAFETY: caller contract, checked non-null.
    let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("");
    match k.get(name) {
        Some(v) => {
            *out = v;
            0
        }
        None => EINVAL,
    }
}

/// 0 if the knobs are a valid set (each in its range, the relations and
/// the law's own checks, as the module accepts them), else `-EINVAL`.
///
/// # Safety
///
/// `k` is null or from [`hpcc_knobs_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_knobs_validate(k: *const Knobs) -> c_int {
    // SAFETY: caller contract.
    match unsafe { get(k) }.map(Knobs::validate) {
        Some(Ok(())) => 0,
        _ => EINVAL,
    }
}

/// Frees knobs from [`hpcc_knobs_new`] (NULL: nothing).
///
/// # Safety
///
/// `k` is null or from [`hpcc_knobs_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_knobs_free(k: *mut Knobs) {
    // SAFETY: caller contract.
    unsafe { free(k) }
}

// ---- the connection's controller ----------------------------------------

/// `init`: a connection starts hpcc. Writes its state to `*s` and what to
/// set to `*out`.
///
/// # Safety
///
/// `k` null or from [`hpcc_knobs_new`]; `c`, `s`, `out` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_init(
    k: *const Knobs,
    c: *const Conn,
    has_sent_data: c_int,
    s: *mut HpccSock,
    out: *mut InitDecision,
) {
    // SAFETY: caller contract.
    let (Some(k), Some(c), Some(s), Some(out)) = (unsafe { get(k) }, unsafe { get(c) }, unsafe { get_mut(s) }, unsafe {
        get_mut(out)
    }) else {
        return;
    };
    let (ctl, d) = SockCtl::init(k, c, has_sent_data != 0);
    s.ctl = ctl;
    *out = d;
}

/// On an ACK of a connection without flow state: whether to create it now
/// ([`hpcc_flow_new`]).
///
/// # Safety
///
/// As [`hpcc_sock_init`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_wants_flow_on_ack(s: *const HpccSock, k: *const Knobs, c: *const Conn) -> c_int {
    // SAFETY: caller contract.
    let (Some(s), Some(k), Some(c)) = (unsafe { get(s) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    c_int::from(s.ctl.wants_flow_on_ack(k, c))
}

/// At a transmit start of a connection without flow state: whether to
/// create it now.
///
/// # Safety
///
/// As [`hpcc_sock_init`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_wants_flow_on_tx_start(s: *const HpccSock, k: *const Knobs, c: *const Conn) -> c_int {
    // SAFETY: caller contract.
    let (Some(s), Some(k), Some(c)) = (unsafe { get(s) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    c_int::from(s.ctl.wants_flow_on_tx_start(k, c))
}

/// Creating the flow's state failed at `now_ns` (the fallback runs).
///
/// # Safety
///
/// `s` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_flow_refused(s: *mut HpccSock, now_ns: u64) {
    // SAFETY: caller contract.
    if let Some(s) = unsafe { get_mut(s) } {
        s.ctl.flow_refused(now_ns);
    }
}

/// `ssthresh` (loss or ECN): the new ssthresh, segments.
///
/// # Safety
///
/// As [`hpcc_sock_init`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_ssthresh(s: *mut HpccSock, k: *const Knobs, c: *const Conn) -> u32 {
    // SAFETY: caller contract.
    let (Some(s), Some(k), Some(c)) = (unsafe { get_mut(s) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    s.ctl.ssthresh(k, c)
}

/// `undo_cwnd`: the window to restore, segments.
///
/// # Safety
///
/// `s` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_undo_cwnd(s: *const HpccSock, cwnd: u32) -> u32 {
    // SAFETY: caller contract.
    unsafe { get(s) }.map_or(cwnd, |s| s.ctl.undo_cwnd(cwnd))
}

/// An ACK (`cong_control`): `rs` the rate sample (NULL: none); `f` the
/// flow's state (NULL: none), with its newest response `r` (NULL: none)
/// and SFC cell `sfc` (NULL: an empty one). Writes the decision to `*out`.
///
/// # Safety
///
/// `s`, `c`, `rs`, `r`, `sfc`, `out` null or valid; `k` null or from
/// [`hpcc_knobs_new`]; `f` null or from [`hpcc_flow_new`]; `r->int_stack`
/// points to `r->int_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sock_on_ack(
    s: *mut HpccSock,
    k: *const Knobs,
    c: *const Conn,
    rs: *const RateSample,
    f: *mut FlowCtl,
    r: *const HpccResponse,
    sfc: *const SfcState,
    out: *mut HpccAckDecision,
) {
    // SAFETY: caller contract.
    let (Some(s), Some(k), Some(c), Some(out)) = (unsafe { get_mut(s) }, unsafe { get(k) }, unsafe { get(c) }, unsafe {
        get_mut(out)
    }) else {
        return;
    };
    // SAFETY: caller contract.
    let rs = unsafe { get(rs) };
    // SAFETY: caller contract.
    let sfc = unsafe { get(sfc) }.copied().unwrap_or_default();
    // SAFETY: caller contract.
    let resp = unsafe { get(r) }.map(|r| {
        let int = if r.int_stack.is_null() {
            &[][..]
        } else {
            // SAFETY: caller contract: `int_stack` holds `int_len` readable bytes.
            unsafe { core::slice::from_raw_parts(r.int_stack, r.int_len) }
        };
        Response { rx_ns: r.rx_ns, snd_nxt: r.snd_nxt, int }
    });
    // SAFETY: caller contract.
    let flow = unsafe { get_mut(f) }.map(|f| (f, resp.as_ref(), &sfc));
    *out = s.ctl.on_ack(k, c, rs, flow).into();
}

// ---- the flow's controller ----------------------------------------------

/// A flow's telemetry state, or NULL when the knobs give no valid law for
/// this MSS and T (then [`hpcc_sock_flow_refused`]).
///
/// # Safety
///
/// `k` null or from [`hpcc_knobs_new`]; `c` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_new(k: *const Knobs, c: *const Conn) -> *mut FlowCtl {
    // SAFETY: caller contract.
    let (Some(k), Some(c)) = (unsafe { get(k) }, unsafe { get(c) }) else { return core::ptr::null_mut() };
    FlowCtl::new(k, c).map_or(core::ptr::null_mut(), |f| Box::into_raw(Box::new(f)))
}

/// At a transmit start: whether to send a probe ahead of the data.
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`]; `k` null or from
/// [`hpcc_knobs_new`]; `c` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_probe_at_tx_start(f: *const FlowCtl, k: *const Knobs, c: *const Conn) -> c_int {
    // SAFETY: caller contract.
    let (Some(f), Some(k), Some(c)) = (unsafe { get(f) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    c_int::from(f.probe_at_tx_start(k, c))
}

/// Whether a probe is due now.
///
/// # Safety
///
/// As [`hpcc_flow_probe_at_tx_start`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_probe_due(f: *const FlowCtl, k: *const Knobs, c: *const Conn) -> c_int {
    // SAFETY: caller contract.
    let (Some(f), Some(k), Some(c)) = (unsafe { get(f) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    c_int::from(f.probe_due(k, c))
}

/// The probe spacing a probe sent now carries, us (0: none); call it
/// before [`hpcc_flow_probe_sent`].
///
/// # Safety
///
/// As [`hpcc_flow_probe_at_tx_start`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_probe_spacing_us(f: *const FlowCtl, k: *const Knobs, c: *const Conn) -> u16 {
    // SAFETY: caller contract.
    let (Some(f), Some(k), Some(c)) = (unsafe { get(f) }, unsafe { get(k) }, unsafe { get(c) }) else { return 0 };
    f.probe_spacing_us(k, c)
}

/// A probe left at `now_ns`: its sequence number (the nonce slot).
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_probe_sent(f: *mut FlowCtl, now_ns: u64) -> u32 {
    // SAFETY: caller contract.
    unsafe { get_mut(f) }.map_or(0, |f| f.probe_sent(now_ns))
}

/// The flow's pacing rate, bytes/s.
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`]; `k` null or from [`hpcc_knobs_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_pacing_rate(f: *const FlowCtl, k: *const Knobs, srtt_us: u32) -> u64 {
    // SAFETY: caller contract.
    let (Some(f), Some(k)) = (unsafe { get(f) }, unsafe { get(k) }) else { return 0 };
    f.pacing_rate(k, srtt_us)
}

/// Whether the namespace's probe budget `b` lets flow `f`'s due probe
/// leave now (`c`, as at the hook that found it due): `HPCC_FFI_ADMIT_SEND` (then call
/// [`hpcc_flow_probe_sent`]), `HPCC_FFI_ADMIT_WAIT` (the flow's share has
/// not passed) or `HPCC_FFI_ADMIT_OVER_BUDGET`; -EINVAL for a null
/// argument.
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`]; `k` null or from
/// [`hpcc_knobs_new`]; `b` null or from [`hpcc_budget_new`]; `c` null or
/// a valid record.
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_admit_probe(
    f: *mut FlowCtl,
    k: *const Knobs,
    b: *const Budget,
    c: *const Conn,
) -> c_int {
    // SAFETY: caller contract.
    let (Some(f), Some(k), Some(b), Some(c)) = (unsafe { get_mut(f) }, unsafe { get(k) }, unsafe { get(b) }, unsafe { get(c) })
    else {
        return EINVAL;
    };
    match f.admit_probe(k, b, c) {
        Admit::Send => ADMIT_SEND,
        Admit::Wait => ADMIT_WAIT,
        Admit::OverBudget => ADMIT_OVER_BUDGET,
    }
}

/// The budget held flow `f`'s due probe back (what
/// [`hpcc_flow_admit_probe`] records itself; for a replay of a trace).
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_probe_held(f: *mut FlowCtl) {
    // SAFETY: caller contract.
    if let Some(f) = unsafe { get_mut(f) } {
        f.probe_held();
    }
}

/// [`hpcc_flow_admit_probe`]: send the probe (`HPCC_FFI_ADMIT_SEND`).
pub const ADMIT_SEND: c_int = 0;
/// ... the flow's fair share has not passed (`HPCC_FFI_ADMIT_WAIT`).
pub const ADMIT_WAIT: c_int = 1;
/// ... the namespace's budget is spent (`HPCC_FFI_ADMIT_OVER_BUDGET`).
pub const ADMIT_OVER_BUDGET: c_int = 2;

/// Frees a flow's state (NULL: nothing).
///
/// # Safety
///
/// `f` null or from [`hpcc_flow_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_flow_free(f: *mut FlowCtl) {
    // SAFETY: caller contract.
    unsafe { free(f) }
}

// ---- the probe budget (one per host, as one per netns in the module) ----

/// A host's probe and response budget (`probe_budget`).
#[no_mangle]
pub extern "C" fn hpcc_budget_new() -> *mut Budget {
    Box::into_raw(Box::new(Budget::new()))
}

/// Whether the host may answer a probe at `now_ns` (1) or not (0: count
/// it and drop the probe): `response_budget`.
///
/// # Safety
///
/// `b` null or from [`hpcc_budget_new`]; `k` null or from [`hpcc_knobs_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_budget_take_response(b: *const Budget, k: *const Knobs, now_ns: u64) -> c_int {
    // SAFETY: caller contract.
    let (Some(b), Some(k)) = (unsafe { get(b) }, unsafe { get(k) }) else { return 0 };
    c_int::from(b.take_response(now_ns, k.response_budget))
}

/// Frees a budget (NULL: nothing).
///
/// # Safety
///
/// `b` null or from [`hpcc_budget_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_budget_free(b: *mut Budget) {
    // SAFETY: caller contract.
    unsafe { free(b) }
}

// ---- the receiver -------------------------------------------------------

/// A receiver's flow count (one per receiving host, as one per netns in
/// the module).
#[no_mangle]
pub extern "C" fn hpcc_rcvcount_new() -> *mut FlowCount {
    Box::into_raw(Box::new(FlowCount::new()))
}

/// Records an answered probe of the flow whose tuple hashes to `hash`,
/// which said `spacing_us` ([`hpcc_packet_spacing_us`]; 0: none), at
/// `now_ns`, with windows of `window_ns` (the `rcv_count_us` knob).
///
/// # Safety
///
/// `r` null or from [`hpcc_rcvcount_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_rcvcount_insert(r: *const FlowCount, now_ns: u64, window_ns: u64, spacing_us: u16, hash: u32) {
    // SAFETY: caller contract.
    if let Some(r) = unsafe { get(r) } {
        r.insert(now_ns, window_ns, spacing_us, hash);
    }
}

/// The flows counted at `now_ns` with the flow of `hash` among them, for
/// a probe that says its sender probes every `spacing_us`
/// ([`hpcc_packet_spacing_us`]; 0: not said): over the shortest window of
/// two of it and of the longest spacing recorded in the last one to two
/// `window_ns` (`hpcc_core::rcvcount::FlowCount::count_with`).
///
/// # Safety
///
/// `r` null or from [`hpcc_rcvcount_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_rcvcount_count_with(
    r: *const FlowCount,
    now_ns: u64,
    window_ns: u64,
    spacing_us: u16,
    hash: u32,
) -> u16 {
    // SAFETY: caller contract.
    unsafe { get(r) }.map_or(0, |r| r.count_with(now_ns, window_ns, spacing_us, hash))
}

/// Frees a flow count (NULL: nothing).
///
/// # Safety
///
/// `r` null or from [`hpcc_rcvcount_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_rcvcount_free(r: *mut FlowCount) {
    // SAFETY: caller contract.
    unsafe { free(r) }
}

/// Builds a probe of flow `t` into `out` (`HPCC_FFI_MAX_PACKET_LEN`
/// bytes): IP header on, the bytes the module sends. Returns its length (0
/// for a null argument).
///
/// # Safety
///
/// `out` null or `HPCC_FFI_MAX_PACKET_LEN` writable bytes; `t` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_build_probe(
    out: *mut u8,
    t: *const Tuple,
    dscp: u8,
    nonce: u32,
    snd_nxt: u32,
    spacing_us: u16,
) -> usize {
    // SAFETY: caller contract.
    let (Some(out), Some(t)) = (unsafe { get_mut(out.cast::<[u8; MAX_PACKET_LEN]>()) }, unsafe { get(t) }) else {
        return 0;
    };
    probe::build_probe(out, t, dscp, nonce, snd_nxt, spacing_us)
}

/// The probe spacing a classified probe says, us (0: not said, or not a
/// probe).
///
/// # Safety
///
/// `p` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_packet_spacing_us(p: *const HpccPacket) -> u16 {
    // SAFETY: caller contract.
    match unsafe { get(p) } {
        Some(p) if p.kind == 0 => hpcc_core::wire::probe_spacing_us(&p.int_stack),
        _ => 0,
    }
}

/// Classifies the `len` bytes at `buf` (from the IP header on) as the
/// module's receive hook does: 1 and `*out` for a valid probe or
/// response, 0 for a packet not of that DSCP, a negative number for one
/// with the DSCP but not exactly the format (the module counts and passes
/// it).
///
/// # Safety
///
/// `buf` null or `len` readable bytes; `out` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_classify(
    buf: *const u8,
    len: usize,
    probe_dscp: u8,
    response_dscp: u8,
    out: *mut HpccPacket,
) -> c_int {
    // SAFETY: caller contract.
    let Some(out) = (unsafe { get_mut(out) }) else { return EINVAL };
    if buf.is_null() {
        return EINVAL;
    }
    // SAFETY: caller contract: `len` readable bytes.
    let bytes = unsafe { core::slice::from_raw_parts(buf, len) };
    match probe::classify(bytes, probe_dscp, response_dscp) {
        Ok(None) => 0,
        Err(_) => EINVAL,
        Ok(Some(p)) => {
            let mut int = [0u8; INT_LEN];
            int.iter_mut().zip(p.int).for_each(|(d, s)| *d = *s);
            *out = HpccPacket {
                tuple: p.tuple,
                nonce: p.nonce,
                snd_nxt: p.snd_nxt,
                kind: u8::from(p.kind == Kind::Response),
                int_stack: int,
            };
            1
        }
    }
}

/// The response to probe `p` (from [`hpcc_classify`]) into `out`
/// (`HPCC_FFI_MAX_PACKET_LEN` bytes), with the receiver's flow count
/// `rcv_flows`. Returns its length (0 for a null argument or a `p` that is
/// not a probe).
///
/// # Safety
///
/// `out` null or `HPCC_FFI_MAX_PACKET_LEN` writable bytes; `p` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_build_response(out: *mut u8, p: *const HpccPacket, dscp: u8, rcv_flows: u16) -> usize {
    // SAFETY: caller contract.
    let (Some(out), Some(p)) = (unsafe { get_mut(out.cast::<[u8; MAX_PACKET_LEN]>()) }, unsafe { get(p) }) else {
        return 0;
    };
    if p.kind != 0 {
        return 0;
    }
    let pkt = probe::Packet {
        kind: Kind::Probe,
        tuple: p.tuple,
        nonce: p.nonce,
        snd_nxt: p.snd_nxt,
        int: &p.int_stack,
    };
    probe::build_response(out, &pkt, dscp, rcv_flows)
}

// ---- which responses the sender accepts ---------------------------------

/// `hpcc_nonces_accept`: apply the response.
pub const NONCE_ACCEPTED: c_int = 0;
/// `hpcc_nonces_accept`: it answers no outstanding probe of the flow.
pub const NONCE_BAD: c_int = 1;
/// `hpcc_nonces_accept`: it answers a probe sent too long ago.
pub const NONCE_LATE: c_int = 2;

/// A flow's outstanding probes (one per flow, beside its `hpcc_flow`).
#[no_mangle]
pub extern "C" fn hpcc_nonces_new() -> *mut NonceRing {
    Box::into_raw(Box::new(NonceRing::new()))
}

/// Records the probe `hpcc_flow_probe_sent` numbered `slot`, sent at
/// `now_ns` with `nonce` and `snd_nxt`.
///
/// # Safety
///
/// `r` null or from [`hpcc_nonces_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_nonces_record(r: *const NonceRing, slot: u32, nonce: u32, snd_nxt: u32, now_ns: u64) {
    // SAFETY: caller contract.
    if let Some(r) = unsafe { get(r) } {
        r.record(slot as usize, nonce, snd_nxt, now_ns);
    }
}

/// Whether a response with `nonce` and `snd_nxt` arriving at `now_ns` is
/// applied: `HPCC_FFI_NONCE_ACCEPTED` (the probe's slot is consumed),
/// `_BAD` or `_LATE` (`_BAD` for a null `r`).
///
/// # Safety
///
/// `r` null or from [`hpcc_nonces_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_nonces_accept(r: *const NonceRing, nonce: u32, snd_nxt: u32, now_ns: u64) -> c_int {
    // SAFETY: caller contract.
    match unsafe { get(r) }.map(|r| r.accept(nonce, snd_nxt, now_ns)) {
        Some(Verdict::Accepted) => NONCE_ACCEPTED,
        Some(Verdict::Late) => NONCE_LATE,
        Some(Verdict::BadNonce) | None => NONCE_BAD,
    }
}

/// Frees a flow's outstanding probes (NULL: nothing).
///
/// # Safety
///
/// `r` null or from [`hpcc_nonces_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_nonces_free(r: *mut NonceRing) {
    // SAFETY: caller contract.
    unsafe { free(r) }
}

/// Whether the sender accepts a response's INT stack (`int_len` bytes):
/// 0, `HPCC_FFI_INT_TOO_MANY_HOPS` (above `max_hops` or the wire's limit)
/// or `HPCC_FFI_INT_BAD`.
///
/// # Safety
///
/// `int_stack` null or `int_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn hpcc_admit_int(int_stack: *const u8, int_len: usize, max_hops: u32) -> c_int {
    if int_stack.is_null() {
        return INT_BAD;
    }
    // SAFETY: caller contract.
    let int = unsafe { core::slice::from_raw_parts(int_stack, int_len) };
    match probe::admit_int(int, max_hops) {
        Ok(()) => 0,
        Err(probe::IntReject::TooManyHops) => INT_TOO_MANY_HOPS,
        Err(probe::IntReject::Bad) => INT_BAD,
    }
}

/// `hpcc_admit_int`: more hops than allowed.
pub const INT_TOO_MANY_HOPS: c_int = 1;
/// `hpcc_admit_int`: the stack does not parse.
pub const INT_BAD: c_int = 2;

// ---- Source Flow Control ----------------------------------------------------

/// The signal's UDP payload, bytes (`HPCC_FFI_SFC_LEN`, include/hpcc_sfc.h's
/// `HPCC_SFC_LEN`).
pub const SFC_LEN: usize = sfc::LEN;

/// `struct hpcc_sfc_signal`: a signal's fields in host byte order; an
/// IPv4 address (`family` 4) in the first 4 bytes of its 16.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HpccSfcSignal {
    pub pause_ns: u32,
    pub qlen: u32,
    pub switch_id: u32,
    pub seq: u32,
    pub port_id: u16,
    pub sport: u16,
    pub dport: u16,
    pub family: u8,
    pub l4proto: u8,
    pub speed: u8,
    pub saddr: [u8; 16],
    pub daddr: [u8; 16],
}

fn addr(family: u8, b: &[u8; 16]) -> Option<IpAddr> {
    match family {
        4 => Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        6 => Some(IpAddr::V6(Ipv6Addr::from(*b))),
        _ => None,
    }
}

fn bytes(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v4.octets());
            b
        }
        IpAddr::V6(v6) => v6.octets(),
    }
}

impl HpccSfcSignal {
    fn from_core(s: &Signal) -> Self {
        Self {
            pause_ns: s.pause_ns,
            qlen: s.qlen,
            switch_id: s.switch_id,
            seq: s.seq,
            port_id: s.port_id,
            sport: s.sport,
            dport: s.dport,
            family: if s.saddr.is_ipv4() { 4 } else { 6 },
            l4proto: s.l4proto,
            speed: s.speed,
            saddr: bytes(s.saddr),
            daddr: bytes(s.daddr),
        }
    }

    fn to_core(self) -> Option<Signal> {
        Some(Signal {
            saddr: addr(self.family, &self.saddr)?,
            daddr: addr(self.family, &self.daddr)?,
            l4proto: self.l4proto,
            sport: self.sport,
            dport: self.dport,
            speed: self.speed,
            pause_ns: self.pause_ns,
            qlen: self.qlen,
            switch_id: self.switch_id,
            port_id: self.port_id,
            seq: self.seq,
        })
    }
}

/// Writes signal `s` as a switch sends it (the UDP payload,
/// `HPCC_FFI_SFC_LEN` bytes, include/hpcc_sfc.h) into `out`. Returns its
/// length, 0 for a null argument or a family other than 4 or 6.
///
/// # Safety
///
/// `s` null or valid; `out` null or `HPCC_FFI_SFC_LEN` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_encode(s: *const HpccSfcSignal, out: *mut u8) -> usize {
    // SAFETY: caller contract.
    let (Some(s), Some(out)) = (unsafe { get(s) }, unsafe { get_mut(out.cast::<[u8; SFC_LEN]>()) }) else {
        return 0;
    };
    s.to_core().and_then(|s| sfc::encode(&s, out)).unwrap_or(0)
}

/// The host's rules for a signal (the UDP payload `len` bytes at
/// `payload`, arrived with `ttl`) that need no device, address list or
/// bucket: SFC enabled, the TTL within `sfc_max_hops` of 255, the whole
/// header. Returns 0 and the signal in `*out`, or the refusal's code of
/// `enum hpcc_sfc_outcome` (include/hpcc_shim.h; `HPCC_SFC_DISABLED`
/// for a null argument). The module checks the rest too: the device,
/// tunnels, the source's address and bucket (`sfc_acl`, `sfc_ifaces`,
/// `sfc_rate`).
///
/// # Safety
///
/// `k` null or from [`hpcc_knobs_new`]; `payload` null or `len` readable
/// bytes; `out` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_accept(
    k: *const Knobs,
    ttl: u8,
    payload: *const u8,
    len: usize,
    out: *mut HpccSfcSignal,
) -> c_int {
    // SAFETY: caller contract.
    let (Some(k), Some(out)) = (unsafe { get(k) }, unsafe { get_mut(out) }) else {
        return Outcome::Disabled as c_int;
    };
    if payload.is_null() {
        return Outcome::Disabled as c_int;
    }
    // SAFETY: caller contract.
    let p = unsafe { core::slice::from_raw_parts(payload, len) };
    let rules = k.sfc_rules(sfc::Acl::default(), sfc::IfaceList::default());
    let r = if !rules.enabled {
        Err(sfc::Reject::Disabled)
    } else if !rules.ttl_ok(ttl) {
        Err(sfc::Reject::Ttl)
    } else {
        sfc::parse(p)
    };
    match r {
        Ok(s) => {
            *out = HpccSfcSignal::from_core(&s);
            0
        }
        Err(e) => Outcome::from(e) as c_int,
    }
}

/// The rules for the flow a signal names: a TCP signal's `seq` in
/// `[snd_una, snd_nxt)`. Returns 0 and the pause to apply, ns, clamped to
/// `sfc_max_pause_us`, in `*pause_ns`; or the refusal's code of `enum
/// hpcc_sfc_outcome` (`HPCC_SFC_BAD_HEADER` for a null argument).
///
/// # Safety
///
/// `k` null or from [`hpcc_knobs_new`]; `s` and `pause_ns` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_check_flow(
    k: *const Knobs,
    s: *const HpccSfcSignal,
    snd_una: u32,
    snd_nxt: u32,
    pause_ns: *mut u64,
) -> c_int {
    // SAFETY: caller contract.
    let (Some(k), Some(s), Some(pause)) = (unsafe { get(k) }, unsafe { get(s) }, unsafe { get_mut(pause_ns) }) else {
        return Outcome::BadHeader as c_int;
    };
    let Some(s) = s.to_core() else { return Outcome::BadHeader as c_int };
    let rules = k.sfc_rules(sfc::Acl::default(), sfc::IfaceList::default());
    match rules.check_flow(&s, Some((snd_una, snd_nxt))) {
        Ok(p) => {
            *pause = p;
            0
        }
        Err(e) => Outcome::from(e) as c_int,
    }
}

/// A flow's SFC cell (one per flow, as in the module's flow object).
#[no_mangle]
pub extern "C" fn hpcc_sfc_mail_new() -> *mut SfcMail {
    Box::into_raw(Box::new(SfcMail::new()))
}

/// Records a signal accepted at `now_ns` with the bottleneck's queue and
/// speed code; `deferred_until_ns` a pause the next ACK is to take (0:
/// none, the caller applied it).
///
/// # Safety
///
/// `m` null or from [`hpcc_sfc_mail_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_mail_put(m: *const SfcMail, now_ns: u64, qlen: u32, speed: u8, deferred_until_ns: u64) {
    // SAFETY: caller contract.
    if let Some(m) = unsafe { get(m) } {
        m.put(now_ns, qlen, speed, (deferred_until_ns != 0).then_some(deferred_until_ns));
    }
}

/// The cell as the next ACK reads it, into `*out` (for
/// [`hpcc_sock_on_ack`]).
///
/// # Safety
///
/// `m` null or from [`hpcc_sfc_mail_new`]; `out` null or valid.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_mail_state(m: *const SfcMail, out: *mut SfcState) {
    // SAFETY: caller contract.
    if let (Some(m), Some(out)) = (unsafe { get(m) }, unsafe { get_mut(out) }) {
        *out = m.state();
    }
}

/// Takes the deferred pause when the ACK's decision says `take_pause`:
/// its target, ns (0: none).
///
/// # Safety
///
/// `m` null or from [`hpcc_sfc_mail_new`].
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_mail_take_pause(m: *const SfcMail) -> u64 {
    // SAFETY: caller contract.
    unsafe { get(m) }.map_or(0, SfcMail::take_pause)
}

/// Frees a flow's SFC cell (NULL: nothing).
///
/// # Safety
///
/// `m` null or from [`hpcc_sfc_mail_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn hpcc_sfc_mail_free(m: *mut SfcMail) {
    // SAFETY: caller contract.
    unsafe { free(m) }
}
