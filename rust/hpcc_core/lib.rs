//! The crate `hpcc-core`: the HPCC++ core as a `no_std` library for `cargo
//! test` and the host tools.
//!
//! The kernel crate (`rust/tcp_hpcc/`) compiles the same files as its
//! module `hpcc_core` (through `mod.rs`); this root only makes them a
//! library.
#![no_std]

#[path = "mod.rs"]
mod hpcc_core;

pub use hpcc_core::*;
