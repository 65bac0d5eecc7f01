//! The HPCC++ core: pure, `no_std`, allocation-free, float-free.
//!
//! The kernel module compiles this directory as its `hpcc_core` module and
//! the host crate `hpcc-core` (rust/host) compiles the same files for tests.
//! Nothing here may depend on the kernel, allocate, use floating point, or
//! panic on any input: arithmetic is checked, saturating or explicitly
//! wrapping, and slices are read with `get`.

pub mod fallback;
