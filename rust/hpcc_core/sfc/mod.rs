//! Source Flow Control: the switch-originated pause signal, the host's
//! rules for accepting one, and hpcc's window reaction to it.
//!
//! `include/hpcc_sfc.h` defines the same wire layout for C and eBPF and
//! documents every field; a host test parses that header and checks every
//! constant against this file.
//!
//! Everything a host decides about a signal is here, as pure functions the
//! kernel glue calls in this order, counting the first [`Reject`]:
//!
//! 1. [`recognize`]: a UDP payload to the SFC port is a signal at all
//!    (magic), else it is not ours and passes untouched;
//! 2. [`Rules::admit`]: SFC enabled (off by default); where it came from
//!    ([`Rules::check_sender`]: a unicast source of the outer IP version,
//!    not the loopback device, not out of a tunnel, a device in
//!    `sfc_ifaces`, TTL / hop limit 255 (less `sfc_max_hops`), the source
//!    in the access list of its own family); the datagram's UDP length and checksum; a source
//!    that is not one of the host's own addresses; the source's
//!    [`TokenBucket`]; the whole header ([`parse`]), of the outer IP
//!    version's family;
//! 3. the glue finds the flow by the signal's tuple, which must be a
//!    local socket's ([`Reject::NoFlow`]);
//! 4. [`Rules::check_flow`]: the data packet's sequence number lies in
//!    the flow's window; the pause is clamped to the maximum; a signal
//!    the flow has taken already is a [`Reject::Duplicate`]
//!    ([`ReplayFilter`]).
//!
//! [`WindowCut`] then brings an hpcc flow's window down to what the
//! bottleneck can carry given the reported queue, once per RTT, and never
//! further than the flow's own telemetry supports.

mod acl;
mod admit;
mod cut;
mod egress;
mod mail;
mod signal;
#[cfg(test)]
mod tests;

pub use acl::*;
pub use admit::*;
pub use cut::*;
pub use egress::*;
pub use mail::Mail;
pub use signal::*;

use super::fixed::{div_wide, mul_wide, ETA_SCALE};
use super::wire;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};
