//! Host build of the HPCC++ core.
//!
//! The sources live in `rust/hpcc_core/`, which the kernel module compiles as
//! its `hpcc_core` module. This crate root only makes the same files a
//! `no_std` library for `cargo test` and the host tools.
#![no_std]

#[path = "../hpcc_core/mod.rs"]
mod hpcc_core;

pub use hpcc_core::*;
