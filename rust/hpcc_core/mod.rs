//! The HPCC++ core: pure, `no_std`, allocation-free, float-free.
//!
//! The kernel crate (`rust/tcp_hpcc/`) compiles this directory as its
//! `hpcc_core` module; `lib.rs` beside this file makes the same files the
//! crate `hpcc-core` for the host tests (`tests/`) and tools
//! (`rust/tools/`).
//! Nothing here may depend on the kernel, allocate, use floating point, or
//! panic on any input: arithmetic is checked, saturating or explicitly
//! wrapping, and slices are read with `get`. There is no `u128` division.
//!
//! # Layout
//!
//! * [`params`]: [`params::HpccConfig`] (what an operator sets) and its
//!   validation into [`params::HpccParams`] (fixed-point constants
//!   precomputed once).
//! * [`law`]: [`law::HpccFlow`], the per-flow state and the
//!   control law: MeasureInflight, ComputeWind, NewAck / NewINT, path
//!   changes, stale samples.
//! * [`wire`]: the Figure-4 INT stack (layout, units, rate codes),
//!   mirrored by `include/hpcc_int.h`.
//! * [`fixed`]: fixed-point formats, documented error bounds, and the
//!   64-bit-only 128/64 division.
//! * [`probe`]: probe and response packets that carry the INT stack.
//! * [`nonce`]: which responses a sender accepts (outstanding probes,
//!   nonce and age).
//! * [`control`]: the controller: every per-ACK decision of a connection
//!   (cwnd, pacing, probes, telemetry freshness, the fallback) from plain
//!   integers; the kernel glue only converts and applies.
//! * [`knobs`]: the module's knobs, their defaults and validation.
//! * [`fallback`]: the no-telemetry AIMD law.
//! * [`guard`]: TCP's loss response and the delivered-BDP bound around
//!   telemetry.
//! * [`flowhash`]: the flow table's keyed hash (SipHash-2-4).
//! * [`sfc`]: Source Flow Control: the switch's pause signal (mirrored by
//!   `include/hpcc_sfc.h`), the host's acceptance rules and hpcc's
//!   window cut.
//!
//! # Use from the kernel glue
//!
//! ```ignore
//! // once (module load / sysctl write):
//! let params = HpccConfig { base_rtt_ns, eta_ppm, .. }.validate()?;
//! // per socket (in a separately allocated object):
//! let mut flow = HpccFlow::new(&params);
//! // per probe response / ACK carrying an INT stack at `buf`:
//! match flow.on_int(&params, buf, now_ns, ack_seq, snd_nxt) {
//!     Ok(o) if !o.is_stale() => { /* cwnd = o.window_bytes / mss; pacing = o.pacing_rate */ }
//!     Ok(_) => { /* stale: count it, keep cwnd */ }
//!     Err(_) => { /* malformed stack: count it */ }
//! }
//! ```
//! Host tools that already have full-width counters call
//! [`law::HpccFlow::on_sample`] with a [`law::Sample`].
//!
//! What one update costs is measured by `rust/tools/bench/cost.sh`
//! (docs/results.md, "Cost of one law update").

#![forbid(unsafe_code)]

pub mod budget;
pub mod control;
pub mod fallback;
pub mod fixed;
pub mod flowhash;
pub mod guard;
pub mod knobs;
pub mod law;
pub mod nonce;
pub mod params;
pub mod probe;
pub mod rcvcount;
pub mod sfc;
pub mod wire;
