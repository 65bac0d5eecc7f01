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
//!    `sfc_ifaces`, TTL / hop limit 255, the source in the access list of
//!    its own family); the datagram's UDP length and checksum; a source
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

use super::fixed::{div_wide, mul_wide, ETA_SCALE};
use super::wire;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};

/// `"HSFC"`.
pub const MAGIC: u32 = 0x4853_4643;
/// Wire version.
pub const VERSION: u8 = 1;
/// Default UDP port of signals (no IANA assignment; a parameter).
pub const PORT_DEFAULT: u16 = 6535;
/// The only TTL / hop limit a host accepts (GTSM).
pub const TTL: u8 = 255;
/// Bytes of a signal's UDP payload.
pub const LEN: usize = 68;
/// Byte offsets in the header.
pub const OFF_VERSION: usize = 4;
#[allow(missing_docs)]
pub const OFF_FAMILY: usize = 5;
#[allow(missing_docs)]
pub const OFF_L4PROTO: usize = 6;
#[allow(missing_docs)]
pub const OFF_SPEED: usize = 7;
/// Never read: checksum offload of a cloned TCP packet may write here.
pub const OFF_RESERVED: usize = 8;
#[allow(missing_docs)]
pub const OFF_LEN: usize = 10;
#[allow(missing_docs)]
pub const OFF_PAUSE: usize = 12;
#[allow(missing_docs)]
pub const OFF_QLEN: usize = 16;
#[allow(missing_docs)]
pub const OFF_SWITCH: usize = 20;
#[allow(missing_docs)]
pub const OFF_PORT: usize = 24;
#[allow(missing_docs)]
pub const OFF_SPORT: usize = 26;
#[allow(missing_docs)]
pub const OFF_DPORT: usize = 28;
#[allow(missing_docs)]
pub const OFF_SEQ: usize = 32;
#[allow(missing_docs)]
pub const OFF_SADDR: usize = 36;
#[allow(missing_docs)]
pub const OFF_DADDR: usize = 52;

/// IP protocol numbers a signal may name.
pub const IPPROTO_TCP: u8 = 6;
#[allow(missing_docs)]
pub const IPPROTO_UDP: u8 = 17;

/// A parsed signal (host byte order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal {
    /// The data packet's source address (the flow's local address).
    pub saddr: IpAddr,
    /// The data packet's destination address (the flow's peer).
    pub daddr: IpAddr,
    /// [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub l4proto: u8,
    /// The data packet's L4 source port (the flow's local port).
    pub sport: u16,
    /// The data packet's L4 destination port.
    pub dport: u16,
    /// The congested port's rate, a code of [`wire::RATES`].
    pub speed: u8,
    /// Requested pause, ns.
    pub pause_ns: u32,
    /// Bytes queued at the port.
    pub qlen: u32,
    /// Congestion locator.
    pub switch_id: u32,
    #[allow(missing_docs)]
    pub port_id: u16,
    /// The data packet's TCP sequence number (0 for UDP).
    pub seq: u32,
}

/// Why a host refused a signal (one counter each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// SFC is disabled (the default).
    Disabled,
    /// The UDP length disagrees with the datagram's, or the UDP checksum
    /// is missing (0) or wrong.
    BadUdp,
    /// The source is not a unicast address of the outer IP version
    /// (IPv4-mapped, IPv4-compatible, unspecified, multicast, loopback or
    /// broadcast).
    BadSource,
    /// It came in on the loopback device: sent by this host.
    Loopback,
    /// It came out of a tunnel (its TTL is whatever the tunnel's remote
    /// end chose).
    Tunnel,
    /// The device it came in on is not in `sfc_ifaces`.
    Iface,
    /// TTL / hop limit below [`TTL`]: not from the adjacent domain.
    Ttl,
    /// Source address not in the access list.
    Acl,
    /// The source is one of this host's own addresses (a local process).
    LocalSource,
    /// The source's token bucket is empty.
    RateLimited,
    /// Shorter than [`LEN`].
    Truncated,
    /// Version, length, family, protocol, speed or padding wrong.
    BadHeader,
    /// No flow with the signal's tuple (or not one SFC may pause).
    NoFlow,
    /// The sequence number is not in the flow's `[snd_una, snd_nxt)`.
    SeqOutOfWindow,
    /// The flow has taken this signal (switch, port, sequence number)
    /// already: a replay.
    Duplicate,
    /// `sfc_scope` 1: no free slot for the flow in the netns's pause table.
    TableFull,
    /// `sfc_scope` 1: the source holds its share of the pause table already.
    SourceQuota,
}

/// What became of an accepted signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// An hpcc flow's departure clock moved.
    Applied,
    /// An hpcc flow's socket was owned by a process: at its next ACK.
    Deferred,
    /// Another flow, held at egress (`sfc_scope` 1).
    Egress,
}

/// Declares [`Outcome`] from its table: variant, the C enumerator
/// (`enum hpcc_sfc_outcome`, include/hpcc_shim.h, in the same order: a
/// variant's discriminant is its code in the tracepoint), the
/// tracepoint's name for it (include/hpcc_trace.h) and its counter in
/// `/proc/net/hpcc_stat`. `tests/outcomes.rs` checks both headers
/// against this table.
macro_rules! outcome_table {
    ($($variant:ident = $c:ident, $trace:literal, $counter:literal;)*) => {
        /// Every end of a received SFC signal: taken, or refused for one
        /// [`Reject`]. Each has a counter and a tracepoint code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Outcome {
            $(#[doc = concat!("`", stringify!($c), "`, counted as `", $counter, "`.")] $variant,)*
        }

        impl Outcome {
            /// Every outcome, in code order.
            pub const ALL: [Self; [$(stringify!($variant),)*].len()] = [$(Self::$variant,)*];
            /// How many there are.
            pub const COUNT: usize = Self::ALL.len();

            /// Its C enumerator's name.
            pub const fn c_name(self) -> &'static str {
                match self { $(Self::$variant => stringify!($c),)* }
            }

            /// Its name in the tracepoint's output.
            pub const fn trace_name(self) -> &'static str {
                match self { $(Self::$variant => $trace,)* }
            }

            /// Its counter's name in `/proc/net/hpcc_stat`.
            pub const fn counter_name(self) -> &'static core::ffi::CStr {
                let s: &'static str = match self { $(Self::$variant => concat!($counter, "\0"),)* };
                match core::ffi::CStr::from_bytes_with_nul(s.as_bytes()) {
                    Ok(c) => c,
                    // Unreachable: one NUL, at the end (a literal above).
                    Err(_) => c"sfc_unnamed",
                }
            }
        }
    };
}

outcome_table! {
    Applied = HPCC_SFC_APPLIED, "applied", "sfc_applied";
    Deferred = HPCC_SFC_DEFERRED, "deferred", "sfc_deferred";
    Disabled = HPCC_SFC_DISABLED, "disabled", "sfc_disabled";
    Ttl = HPCC_SFC_BAD_TTL, "bad_ttl", "sfc_bad_ttl";
    Acl = HPCC_SFC_NOT_IN_ACL, "not_in_acl", "sfc_not_in_acl";
    RateLimited = HPCC_SFC_RATE_LIMITED, "rate_limited", "sfc_rate_limited";
    Truncated = HPCC_SFC_TRUNCATED, "truncated", "sfc_truncated";
    BadHeader = HPCC_SFC_BAD_HEADER, "bad_header", "sfc_bad_header";
    NoFlow = HPCC_SFC_NO_FLOW, "no_flow", "sfc_no_flow";
    SeqOutOfWindow = HPCC_SFC_SEQ_OUT_OF_WINDOW, "seq_out_of_window", "sfc_seq_out_of_window";
    AppliedEgress = HPCC_SFC_APPLIED_EGRESS, "applied_egress", "sfc_applied_egress";
    TableFull = HPCC_SFC_PAUSE_TABLE_FULL, "pause_table_full", "sfc_pause_table_full";
    BadUdp = HPCC_SFC_BAD_UDP, "bad_udp", "sfc_bad_udp";
    BadSource = HPCC_SFC_BAD_SOURCE, "bad_source", "sfc_bad_source";
    Loopback = HPCC_SFC_LOOPBACK, "loopback", "sfc_loopback";
    Tunnel = HPCC_SFC_TUNNEL, "tunnel", "sfc_tunnel";
    Iface = HPCC_SFC_IFACE, "iface", "sfc_not_on_iface";
    LocalSource = HPCC_SFC_LOCAL_SOURCE, "local_source", "sfc_local_source";
    Duplicate = HPCC_SFC_DUPLICATE, "duplicate", "sfc_duplicate";
    SourceQuota = HPCC_SFC_SOURCE_QUOTA, "source_quota", "sfc_source_quota";
}

impl From<Reject> for Outcome {
    fn from(r: Reject) -> Self {
        match r {
            Reject::Disabled => Self::Disabled,
            Reject::BadUdp => Self::BadUdp,
            Reject::BadSource => Self::BadSource,
            Reject::Loopback => Self::Loopback,
            Reject::Tunnel => Self::Tunnel,
            Reject::Iface => Self::Iface,
            Reject::Ttl => Self::Ttl,
            Reject::Acl => Self::Acl,
            Reject::LocalSource => Self::LocalSource,
            Reject::RateLimited => Self::RateLimited,
            Reject::Truncated => Self::Truncated,
            Reject::BadHeader => Self::BadHeader,
            Reject::NoFlow => Self::NoFlow,
            Reject::SeqOutOfWindow => Self::SeqOutOfWindow,
            Reject::Duplicate => Self::Duplicate,
            Reject::TableFull => Self::TableFull,
            Reject::SourceQuota => Self::SourceQuota,
        }
    }
}

impl From<Taken> for Outcome {
    fn from(t: Taken) -> Self {
        match t {
            Taken::Applied => Self::Applied,
            Taken::Deferred => Self::Deferred,
            Taken::Egress => Self::AppliedEgress,
        }
    }
}

impl From<Result<Taken, Reject>> for Outcome {
    fn from(r: Result<Taken, Reject>) -> Self {
        match r {
            Ok(t) => t.into(),
            Err(r) => r.into(),
        }
    }
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

fn be32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes([*b.get(off)?, *b.get(off + 1)?, *b.get(off + 2)?, *b.get(off + 3)?]))
}

fn addr16(b: &[u8], off: usize) -> Option<[u8; 16]> {
    b.get(off..off + 16)?.try_into().ok()
}

/// Whether a UDP payload addressed to the SFC port claims to be a signal
/// (its magic). Anything else there is not ours.
pub fn recognize(payload: &[u8]) -> bool {
    be32(payload, 0) == Some(MAGIC)
}

fn addr_of(family: u8, a: [u8; 16]) -> Option<IpAddr> {
    match family {
        4 => {
            if a[4..].iter().any(|&x| x != 0) {
                return None;
            }
            Some(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])))
        }
        6 => Some(IpAddr::V6(Ipv6Addr::from(a))),
        _ => None,
    }
}

/// Parses a signal's UDP payload (any bytes after [`LEN`] are refused too:
/// the length field must say [`LEN`] and the datagram must be that long).
pub fn parse(p: &[u8]) -> Result<Signal, Reject> {
    if p.len() < LEN {
        return Err(Reject::Truncated);
    }
    let bad = Reject::BadHeader;
    let u8_at = |o: usize| p.get(o).copied().ok_or(bad);
    let (be16_at, be32_at) = (|o| be16(p, o).ok_or(bad), |o| be32(p, o).ok_or(bad));
    if be32_at(0)? != MAGIC || u8_at(OFF_VERSION)? != VERSION || p.len() != LEN {
        return Err(bad);
    }
    if usize::from(be16_at(OFF_LEN)?) != LEN || be16_at(OFF_DPORT + 2)? != 0 {
        return Err(bad);
    }
    let family = u8_at(OFF_FAMILY)?;
    let l4proto = u8_at(OFF_L4PROTO)?;
    let speed = u8_at(OFF_SPEED)?;
    if !matches!(l4proto, IPPROTO_TCP | IPPROTO_UDP) || wire::rate_info(speed).is_none() {
        return Err(bad);
    }
    let saddr = addr_of(family, addr16(p, OFF_SADDR).ok_or(bad)?).ok_or(bad)?;
    let daddr = addr_of(family, addr16(p, OFF_DADDR).ok_or(bad)?).ok_or(bad)?;
    let seq = be32_at(OFF_SEQ)?;
    if l4proto != IPPROTO_TCP && seq != 0 {
        return Err(bad);
    }
    Ok(Signal {
        saddr,
        daddr,
        l4proto,
        sport: be16_at(OFF_SPORT)?,
        dport: be16_at(OFF_DPORT)?,
        speed,
        pause_ns: be32_at(OFF_PAUSE)?,
        qlen: be32_at(OFF_QLEN)?,
        switch_id: be32_at(OFF_SWITCH)?,
        port_id: be16_at(OFF_PORT)?,
        seq,
    })
}

/// Writes `s` as a signal's UDP payload into `out[..LEN]`; `None` if `out`
/// is too short or the two addresses are of different families. (The
/// switch emulator builds signals in eBPF; this is for tests and tools.)
pub fn encode(s: &Signal, out: &mut [u8]) -> Option<usize> {
    let o = out.get_mut(..LEN)?;
    let (family, sa, da) = match (s.saddr, s.daddr) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
            x[..4].copy_from_slice(&a.octets());
            y[..4].copy_from_slice(&b.octets());
            (4, x, y)
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => (6, a.octets(), b.octets()),
        _ => return None,
    };
    o.fill(0);
    o[..4].copy_from_slice(&MAGIC.to_be_bytes());
    o[OFF_VERSION] = VERSION;
    o[OFF_FAMILY] = family;
    o[OFF_L4PROTO] = s.l4proto;
    o[OFF_SPEED] = s.speed;
    o[OFF_LEN..OFF_LEN + 2].copy_from_slice(&(LEN as u16).to_be_bytes());
    o[OFF_PAUSE..OFF_PAUSE + 4].copy_from_slice(&s.pause_ns.to_be_bytes());
    o[OFF_QLEN..OFF_QLEN + 4].copy_from_slice(&s.qlen.to_be_bytes());
    o[OFF_SWITCH..OFF_SWITCH + 4].copy_from_slice(&s.switch_id.to_be_bytes());
    o[OFF_PORT..OFF_PORT + 2].copy_from_slice(&s.port_id.to_be_bytes());
    o[OFF_SPORT..OFF_SPORT + 2].copy_from_slice(&s.sport.to_be_bytes());
    o[OFF_DPORT..OFF_DPORT + 2].copy_from_slice(&s.dport.to_be_bytes());
    o[OFF_SEQ..OFF_SEQ + 4].copy_from_slice(&s.seq.to_be_bytes());
    o[OFF_SADDR..OFF_SADDR + 16].copy_from_slice(&sa);
    o[OFF_DADDR..OFF_DADDR + 16].copy_from_slice(&da);
    Some(LEN)
}

/// A UDP datagram to the SFC port, from its IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming<'a> {
    /// The outer IP version, 4 or 6.
    pub version: u8,
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u8,
    /// The IP source: the switch.
    pub src: IpAddr,
    /// The IP destination: this host.
    pub dst: IpAddr,
    /// The UDP payload (what [`recognize`] and [`parse`] read).
    pub payload: &'a [u8],
    /// The datagram is whole (IPv4 without options), its IP and UDP
    /// lengths agree with the packet's, and its UDP checksum is present
    /// and valid (a signal carries one in both families).
    pub udp_ok: bool,
}

/// Bytes of the IP header a hook must look at to tell whether a packet
/// may be a signal ([`is_candidate`]).
pub const CANDIDATE_LEN: usize = 10;
/// IPv4 and IPv6 header lengths, UDP header length.
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
/// Bytes from the IP header that hold a whole signal (IPv6, no options).
pub const MAX_SIGNAL_PACKET: usize = IPV6_LEN + UDP_LEN + LEN;

/// The cheap first test on the first [`CANDIDATE_LEN`] bytes of an IP
/// header: UDP over IPv4 or IPv6 (no extension header).
pub fn is_candidate(hdr: &[u8]) -> bool {
    match hdr.first().map(|b| b >> 4) {
        Some(4) => hdr.get(9) == Some(&IPPROTO_UDP),
        Some(6) => hdr.get(6) == Some(&IPPROTO_UDP),
        _ => false,
    }
}

/// The one's-complement sum of `b` as 16-bit big-endian words (an odd
/// last byte padded with zero), added to `acc`, unfolded.
fn ones_sum(b: &[u8], mut acc: u64) -> u64 {
    let mut it = b.chunks_exact(2);
    // At most 2^16 words of 2^16 each (a datagram's length fits 16 bits):
    // far below 2^64, so wrapping never wraps.
    for w in &mut it {
        acc = acc.wrapping_add(u64::from(u16::from_be_bytes([w[0], w[1]])));
    }
    if let [x] = it.remainder() {
        acc = acc.wrapping_add(u64::from(*x) << 8);
    }
    acc
}

/// Whether `udp` (header and payload) carries a valid UDP checksum for a
/// datagram from `src` to `dst` (RFC 768, RFC 8200 8.1). A checksum of 0
/// ("none", allowed for IPv4 by RFC 768) is refused in both families: a
/// signal has authority over a flow and must carry its integrity check.
pub fn udp_checksum_ok(src: IpAddr, dst: IpAddr, udp: &[u8]) -> bool {
    if udp.len() < UDP_LEN || be16(udp, 6) == Some(0) {
        return false;
    }
    let Ok(len) = u16::try_from(udp.len()) else { return false };
    let mut acc = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => ones_sum(&d.octets(), ones_sum(&s.octets(), 0)),
        (IpAddr::V6(s), IpAddr::V6(d)) => ones_sum(&d.octets(), ones_sum(&s.octets(), 0)),
        _ => return false,
    };
    acc = acc.wrapping_add(u64::from(IPPROTO_UDP)).wrapping_add(u64::from(len));
    acc = ones_sum(udp, acc);
    while acc > 0xffff {
        acc = (acc & 0xffff).wrapping_add(acc >> 16);
    }
    acc == 0xffff
}

/// The datagram in `pkt` (from the IP header; `pkt_len` the whole
/// packet's length, of which `pkt` may hold only the first bytes) if it
/// is an unfragmented UDP datagram to `port` over IPv4 or IPv6 without
/// extension headers; `None` otherwise (not ours). The payload is bounded
/// by the UDP length; [`Incoming::udp_ok`] says whether the datagram is
/// whole and consistent.
pub fn incoming(pkt: &[u8], pkt_len: usize, port: u16) -> Option<Incoming<'_>> {
    let (version, ttl, src, dst, l4, ip_len) = match pkt.first()? >> 4 {
        4 => {
            let ihl = usize::from(pkt.first()? & 0xf) * 4;
            let frag = be16(pkt, 6)? & 0x3fff;
            if ihl < IPV4_LEN || *pkt.get(9)? != IPPROTO_UDP || frag != 0 {
                return None;
            }
            let s: [u8; 4] = pkt.get(12..16)?.try_into().ok()?;
            let d: [u8; 4] = pkt.get(16..20)?.try_into().ok()?;
            // A switch's signal has no options; one with options is
            // refused (udp_ok), not parsed past them.
            let len = if ihl == IPV4_LEN { usize::from(be16(pkt, 2)?) } else { 0 };
            (4, *pkt.get(8)?, IpAddr::V4(s.into()), IpAddr::V4(d.into()), ihl, len)
        }
        6 => {
            if *pkt.get(6)? != IPPROTO_UDP {
                return None;
            }
            let len = usize::from(be16(pkt, 4)?) + IPV6_LEN;
            let s = IpAddr::V6(Ipv6Addr::from(addr16(pkt, 8)?));
            (6, *pkt.get(7)?, s, IpAddr::V6(Ipv6Addr::from(addr16(pkt, 24)?)), IPV6_LEN, len)
        }
        _ => return None,
    };
    if be16(pkt, l4 + 2)? != port {
        return None;
    }
    let ulen = usize::from(be16(pkt, l4 + 4)?);
    let end = l4.checked_add(ulen)?.min(pkt.len());
    let payload = pkt.get(l4 + UDP_LEN..end.max(l4 + UDP_LEN))?;
    // Whole: the IP length is the packet's, the UDP length the rest of
    // it, and all of it is in `pkt` (the checksum covers every byte).
    let whole = ip_len == pkt_len && pkt.len() == pkt_len && l4.checked_add(ulen) == Some(pkt_len);
    let udp_ok = whole && pkt.get(l4..).is_some_and(|udp| udp_checksum_ok(src, dst, udp));
    Some(Incoming { version, ttl, src, dst, payload, udp_ok })
}

/// Whether `a` may be a switch's own address: a unicast address of its
/// family, not IPv4-mapped or IPv4-compatible (an IPv6 packet from
/// `::ffff:10.9.0.2` is no IPv4 switch), unspecified, multicast, loopback
/// or (IPv4) broadcast.
pub fn unicast_source(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_multicast() || v4.is_loopback() || v4.is_broadcast()),
        IpAddr::V6(v6) => {
            let compat = v6.segments()[..6].iter().all(|&x| x == 0);
            !(v6.is_unspecified() || v6.is_multicast() || v6.is_loopback() || v6.to_ipv4_mapped().is_some() || compat)
        }
    }
}

/// Longest device name (`IFNAMSIZ` - 1).
pub const IFNAME_MAX: usize = 15;
/// Devices an interface list holds at most.
pub const IFACES_MAX: usize = 8;

/// What the kernel knows of a signal's arrival that its bytes do not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    /// The device it came in on is the loopback device: this host sent it.
    pub loopback: bool,
    /// It came out of a tunnel: decapsulated (IPIP, GRE, VXLAN, ...) or
    /// the inner packet of an IPsec tunnel.
    pub tunneled: bool,
    /// The name of the device it came in on (NUL-padded).
    pub ifname: [u8; IFNAME_MAX + 1],
}

/// The devices a host accepts signals on (`sfc_ifaces`): the
/// fabric-facing ports. Empty (the default) accepts none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IfaceList {
    n: usize,
    names: [[u8; IFNAME_MAX + 1]; IFACES_MAX],
}

/// Why an interface list was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfaceError {
    /// More than [`IFACES_MAX`] names.
    TooMany,
    /// Not a device name the kernel would accept (`dev_valid_name`).
    BadName,
}

impl IfaceList {
    /// The empty list (accepts nothing).
    pub const EMPTY: IfaceList = IfaceList { n: 0, names: [[0; IFNAME_MAX + 1]; IFACES_MAX] };

    /// Parses device names separated by commas (spaces and a trailing
    /// newline allowed), e.g. `eth0,eth1`. An empty string is the empty
    /// list.
    pub fn parse(s: &str) -> Result<Self, IfaceError> {
        let mut l = IfaceList::default();
        for name in s.split(|c: char| c == ',').map(str::trim).filter(|x| !x.is_empty()) {
            let b = name.as_bytes();
            let valid = b.len() <= IFNAME_MAX
                && name != "."
                && name != ".."
                && b.iter().all(|&c| c.is_ascii_graphic() && c != b'/' && c != b':');
            if !valid {
                return Err(IfaceError::BadName);
            }
            let slot = l.names.get_mut(l.n).ok_or(IfaceError::TooMany)?;
            if let Some(d) = slot.get_mut(..b.len()) {
                d.copy_from_slice(b);
            }
            l.n = l.n.saturating_add(1);
        }
        Ok(l)
    }

    /// Whether the list is empty (accepts nothing).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The names, as bytes.
    pub fn names(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.names.get(..self.n).unwrap_or(&[]).iter().map(|n| {
            let len = n.iter().position(|&c| c == 0).unwrap_or(n.len());
            n.get(..len).unwrap_or(&[])
        })
    }

    /// Whether `ifname` (NUL-padded, as [`Arrival::ifname`]) is listed.
    pub fn contains(&self, ifname: &[u8; IFNAME_MAX + 1]) -> bool {
        let len = ifname.iter().position(|&c| c == 0).unwrap_or(ifname.len());
        let name = ifname.get(..len).unwrap_or(&[]);
        !name.is_empty() && self.names().any(|n| n == name)
    }
}

/// Prefixes an access list holds at most.
pub const ACL_MAX: usize = 16;

/// One prefix, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`, length + 96).
/// An IPv6 prefix never has an IPv4-mapped address ([`Acl::push`]), so
/// the two families never overlap: an IPv4 prefix matches IPv4 sources
/// only, an IPv6 prefix (`::/0` too) IPv6 sources only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Prefix {
    addr: u128,
    len: u8,
}

impl Prefix {
    fn is_v4(&self) -> bool {
        is_mapped(self.addr) && self.len >= 96
    }
}

/// Whether `a` lies in `::ffff:0:0/96`.
fn is_mapped(a: u128) -> bool {
    a >> 32 == 0xffff
}

fn mapped(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn mask(len: u8) -> u128 {
    128u32.checked_sub(u32::from(len)).and_then(|s| u128::MAX.checked_shl(s)).unwrap_or(0)
}

/// The switches a host accepts signals from: up to [`ACL_MAX`] IPv4 and
/// IPv6 prefixes. Empty (the default) accepts none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acl {
    n: usize,
    p: [Prefix; ACL_MAX],
}

/// Why an access list was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclError {
    /// More than [`ACL_MAX`] prefixes.
    TooMany,
    /// Not `ADDR/LEN` with a valid address and length.
    Syntax,
    /// Bits set beyond the prefix length (`10.1.2.3/8`).
    HostBits,
}

impl Acl {
    /// The empty list (accepts nothing).
    pub const EMPTY: Acl = Acl { n: 0, p: [Prefix { addr: 0, len: 0 }; ACL_MAX] };

    /// Parses `ADDR/LEN` prefixes separated by commas (spaces and a
    /// trailing newline allowed), e.g. `10.0.0.0/8,fd00::/8`; a bare
    /// address is a host prefix (`/32`, `/128`). An empty string is the
    /// empty list.
    pub fn parse(s: &str) -> Result<Self, AclError> {
        let mut acl = Acl::default();
        for item in s.split(|c: char| c == ',').map(str::trim).filter(|x| !x.is_empty()) {
            let (a, l) = match item.split_once('/') {
                Some((a, l)) => (a.trim(), Some(l.trim())),
                None => (item, None),
            };
            let addr: IpAddr = a.parse().map_err(|_| AclError::Syntax)?;
            if let IpAddr::V6(v6) = addr {
                if v6.to_ipv4_mapped().is_some() {
                    // An IPv4 prefix is written as IPv4.
                    return Err(AclError::Syntax);
                }
            }
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len: u8 = match l {
                Some(l) if !l.is_empty() && l.bytes().all(|c| c.is_ascii_digit()) => {
                    l.parse().map_err(|_| AclError::Syntax)?
                }
                Some(_) => return Err(AclError::Syntax),
                None => max,
            };
            if len > max {
                return Err(AclError::Syntax);
            }
            let len = if addr.is_ipv4() { len.saturating_add(96) } else { len };
            let v = mapped(addr);
            acl.push(v, len)?;
        }
        Ok(acl)
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the list is empty (accepts nothing).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The prefixes as `(IPv6 or IPv4-mapped address, length)`.
    pub fn entries(&self) -> impl Iterator<Item = (u128, u8)> + '_ {
        self.p.get(..self.n).unwrap_or(&[]).iter().map(|p| (p.addr, p.len))
    }

    /// Adds a prefix given as [`Acl::entries`] yields it (for a copy
    /// kept in atomics): refused like [`Acl::parse`] refuses its text.
    pub fn push(&mut self, addr: u128, len: u8) -> Result<(), AclError> {
        if len > 128 {
            return Err(AclError::Syntax);
        }
        if addr & !mask(len) != 0 {
            return Err(AclError::HostBits);
        }
        if is_mapped(addr) && len < 96 {
            // An IPv6 prefix with an IPv4-mapped address: ambiguous.
            return Err(AclError::Syntax);
        }
        *self.p.get_mut(self.n).ok_or(AclError::TooMany)? = Prefix { addr, len };
        self.n = self.n.saturating_add(1);
        Ok(())
    }

    /// Whether `a` is in one of the prefixes of its own family (an
    /// IPv4-mapped IPv6 address is in none).
    pub fn contains(&self, a: IpAddr) -> bool {
        let (v, v4) = match a {
            IpAddr::V4(_) => (mapped(a), true),
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => return false,
            IpAddr::V6(v6) => (u128::from(v6), false),
        };
        self.p.get(..self.n).unwrap_or(&[]).iter().any(|p| p.is_v4() == v4 && v & mask(p.len) == p.addr)
    }
}

/// The list as `sfc_acl` reads back: `ADDR/LEN` prefixes, comma-separated
/// (what [`Acl::parse`] takes).
impl core::fmt::Display for Acl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, p) in self.p.get(..self.n).unwrap_or(&[]).iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let v6 = Ipv6Addr::from(p.addr);
            match v6.to_ipv4_mapped() {
                Some(v4) if p.is_v4() => write!(f, "{sep}{v4}/{}", p.len.saturating_sub(96))?,
                _ => write!(f, "{sep}{v6}/{}", p.len)?,
            }
        }
        Ok(())
    }
}

/// The list as `sfc_ifaces` reads back: names, comma-separated (what
/// [`IfaceList::parse`] takes).
impl core::fmt::Display for IfaceList {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, name) in self.names().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}", core::str::from_utf8(name).unwrap_or("?"))?;
        }
        Ok(())
    }
}

/// A token bucket: `rate` tokens per second, at most `burst` saved.
/// Integer arithmetic in token-nanoseconds (1 token = 10^9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenBucket {
    tokens: u64,
    last_ns: u64,
}

/// Largest accepted bucket rate, tokens per second.
pub const MAX_RATE: u32 = 10_000_000;
/// Largest accepted burst, tokens.
pub const MAX_BURST: u32 = 1_000_000;
const TOKEN: u64 = 1_000_000_000;

impl TokenBucket {
    /// A full bucket at `now_ns`.
    pub fn new(now_ns: u64, burst: u32) -> Self {
        TokenBucket { tokens: u64::from(burst.min(MAX_BURST)) * TOKEN, last_ns: now_ns }
    }

    /// Takes one token at `now_ns` if there is one. `rate` and `burst` are
    /// read on each call (parameters may change); both are clamped to
    /// [`MAX_RATE`] and [`MAX_BURST`]. Time going backwards adds nothing.
    pub fn admit(&mut self, now_ns: u64, rate: u32, burst: u32) -> bool {
        let cap = u64::from(burst.min(MAX_BURST)) * TOKEN;
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let add = dt.saturating_mul(u64::from(rate.min(MAX_RATE)));
        self.tokens = self.tokens.saturating_add(add).min(cap);
        if self.tokens >= TOKEN {
            self.tokens -= TOKEN;
            true
        } else {
            false
        }
    }
}

/// Token buckets per signal source: a source's keyed hash (the glue's
/// SipHash under a secret drawn at load, so no sender can choose its
/// collisions) picks one of [`SOURCE_BUCKETS`], so one switch, or one
/// forger that passed every other check, drains its own bucket and not
/// the others'. Sources that collide share a bucket. All-zero is the
/// initial state (each bucket fills on first use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceBuckets {
    b: [TokenBucket; SOURCE_BUCKETS],
}

/// Buckets per netns ([`SourceBuckets`]).
pub const SOURCE_BUCKETS: usize = 64;

impl Default for SourceBuckets {
    fn default() -> Self {
        Self { b: [TokenBucket::default(); SOURCE_BUCKETS] }
    }
}

impl SourceBuckets {
    /// Takes one token of the bucket of the source whose hash is `key`
    /// ([`TokenBucket::admit`]).
    pub fn admit(&mut self, key: u64, now_ns: u64, rate: u32, burst: u32) -> bool {
        let i = (key % SOURCE_BUCKETS as u64) as usize;
        self.b.get_mut(i).is_some_and(|b| b.admit(now_ns, rate, burst))
    }
}

/// Signals a flow remembers to refuse replays ([`ReplayFilter`]).
pub const REPLAY_SLOTS: usize = 8;

/// The last [`REPLAY_SLOTS`] signals a TCP flow took, by (switch, port,
/// sequence number): a switch signals a data packet once, so the same
/// three again are a replay ([`Reject::Duplicate`]). UDP signals carry no
/// sequence number and are not filtered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayFilter {
    seen: [(u32, u16, u32); REPLAY_SLOTS],
    n: u8,
    next: u8,
}

impl ReplayFilter {
    /// Records `s`; false if the flow took it already.
    pub fn first_time(&mut self, s: &Signal) -> bool {
        if s.l4proto != IPPROTO_TCP {
            return true;
        }
        let id = (s.switch_id, s.port_id, s.seq);
        if self.seen.get(..usize::from(self.n)).unwrap_or(&[]).contains(&id) {
            return false;
        }
        if let Some(slot) = self.seen.get_mut(usize::from(self.next)) {
            *slot = id;
        }
        self.next = self.next.wrapping_add(1) % REPLAY_SLOTS as u8;
        self.n = self.n.saturating_add(1).min(REPLAY_SLOTS as u8);
        true
    }
}

/// Whether `seq` lies in `[snd_una, snd_nxt)`, modulo 2^32 (TCP's
/// `between(seq, snd_una, snd_nxt - 1)`): a segment the flow sent and that
/// is not yet acknowledged.
pub fn seq_in_window(seq: u32, snd_una: u32, snd_nxt: u32) -> bool {
    seq.wrapping_sub(snd_una) < snd_nxt.wrapping_sub(snd_una)
}

/// Largest accepted `max_pause_us`.
pub const MAX_PAUSE_US: u32 = 1_000_000;

/// A host's SFC settings (module parameters), as validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Off by default.
    pub enabled: bool,
    /// Sources accepted.
    pub acl: Acl,
    /// Devices signals are accepted on (`sfc_ifaces`).
    pub ifaces: IfaceList,
    /// Signals per second one source may send, and the burst.
    pub rate: u32,
    #[allow(missing_docs)]
    pub burst: u32,
    /// Longest pause applied, µs (`1..=MAX_PAUSE_US`).
    pub max_pause_us: u32,
    /// Signals for flows other than hpcc's (TCP flows of other congestion
    /// controls, UDP flows) are acted on too (`sfc_scope` 1), held at
    /// egress ([`PauseTable`]); else refused as [`Reject::NoFlow`].
    pub scope_all: bool,
}

/// The IP version of a signal's family.
fn version_of(s: &Signal) -> u8 {
    if s.saddr.is_ipv4() {
        4
    } else {
        6
    }
}

impl Rules {
    /// Step 2, everything a signal must pass before the glue looks for its
    /// flow, in order: SFC enabled, where it came from
    /// ([`Rules::check_sender`]; first, so that a host's own datagram, whose
    /// checksum loopback may leave unfinished, counts as what it is), the
    /// datagram's UDP length and checksum, a source
    /// that is not one of the host's own addresses (`is_local`, asked
    /// only of a signal that passed the rest: the kernel's look-up costs
    /// more), a token of the source's bucket (`take_token`, so refused
    /// senders never spend one), the whole header, of the outer IP
    /// version's family.
    pub fn admit(
        &self,
        i: &Incoming<'_>,
        arrival: &Arrival,
        is_local: impl FnOnce(IpAddr) -> bool,
        take_token: impl FnOnce(IpAddr) -> bool,
    ) -> Result<Signal, Reject> {
        if !self.enabled {
            return Err(Reject::Disabled);
        }
        self.check_sender(i, arrival)?;
        if !i.udp_ok {
            return Err(Reject::BadUdp);
        }
        if is_local(i.src) {
            return Err(Reject::LocalSource);
        }
        if !take_token(i.src) {
            return Err(Reject::RateLimited);
        }
        let s = parse(i.payload)?;
        if version_of(&s) != i.version {
            return Err(Reject::BadHeader);
        }
        Ok(s)
    }

    /// Where a signal came from: a unicast source of its IP version, not
    /// the loopback device (this host), not out of a tunnel (the remote
    /// end chose the TTL), a device in `sfc_ifaces` (the fabric), TTL /
    /// hop limit [`TTL`] (the adjacent switch), the source in the access
    /// list of its own family.
    pub fn check_sender(&self, i: &Incoming<'_>, a: &Arrival) -> Result<(), Reject> {
        if !unicast_source(i.src) || (i.src.is_ipv4() != (i.version == 4)) {
            Err(Reject::BadSource)
        } else if a.loopback {
            Err(Reject::Loopback)
        } else if a.tunneled {
            Err(Reject::Tunnel)
        } else if !self.ifaces.contains(&a.ifname) {
            Err(Reject::Iface)
        } else if i.ttl != TTL {
            Err(Reject::Ttl)
        } else if !self.acl.contains(i.src) {
            Err(Reject::Acl)
        } else {
            Ok(())
        }
    }

    /// Step 4, for the flow the signal names: a TCP signal's `seq` must lie
    /// in `[snd_una, snd_nxt)` (a UDP flow has no window: `tcp_window`
    /// `None`). Returns the pause to apply, ns, clamped to `max_pause_us`.
    pub fn check_flow(&self, s: &Signal, tcp_window: Option<(u32, u32)>) -> Result<u64, Reject> {
        match (s.l4proto, tcp_window) {
            (IPPROTO_TCP, Some((una, nxt))) if seq_in_window(s.seq, una, nxt) => {}
            (IPPROTO_TCP, _) => return Err(Reject::SeqOutOfWindow),
            _ => {}
        }
        Ok(u64::from(s.pause_ns).min(u64::from(self.max_pause_us.min(MAX_PAUSE_US)) * 1000))
    }

    /// Step 4 for a flow hpcc does not control (`tcp_window` the TCP
    /// socket's, `None` for UDP): refused unless [`Rules::scope_all`], else
    /// as [`Rules::check_flow`].
    pub fn check_other_flow(&self, s: &Signal, tcp_window: Option<(u32, u32)>) -> Result<u64, Reject> {
        if !self.scope_all {
            return Err(Reject::NoFlow);
        }
        self.check_flow(s, tcp_window)
    }
}

/// hpcc's window reaction to a signal. A pause alone gives stop-and-go:
/// while the flow waits the switch drains at full rate, so the next INT
/// sample shows `U ≈ 1` and HPCC++ cuts only a little. The signal's queue
/// `q` at a port of rate `B` says the senders together have
/// `B·T + q` in flight where `B·T` fits: each cuts `W` by
/// `eta · B·T / (B·T + q)`, so that together they carry `eta·B·T`, as the
/// law's multiplicative step would with `U = (B·T + q) / (B·T)`.
///
/// That step assumes the senders' windows add up to `B·T + q`. In an
/// incast they add up to far more: the excess was dropped at the full
/// buffer or waits in the senders' own queues while they pause, and the
/// queue, bounded by the buffer, no longer shows it. With `n` flows at
/// the receiver (its count, draft-miao-rtgwg-hpccplus section 6.3.2,
/// carried by every response) the cut is also at most the flow's share,
/// `eta·B·T / n`: without it the paused senders resume together with
/// windows that add up to several buffers, and the queue overflows again.
///
/// Several signals within one RTT (one per suppression window, or from
/// several switches) do not compound: a cut within `T` of the previous
/// one applies to the window the previous cut started from, and only if
/// it is deeper.
///
/// The first signals of an incast come before the flow's first response,
/// so before it knows the count: [`WindowCut::await_count`] keeps the
/// port's rate for a while, and the count that then arrives cuts W to the
/// share once ([`WindowCut::on_count`]).
///
/// Nor does the law's own reaction compound with a cut: the responses
/// whose probes crossed the port before the signalled queue drained
/// report that queue again, and the law would cut for it a second time,
/// leaving the port underused for many RTTs (docs/results.md#measurements-behind-the-controllers-rules). Until the reported queue has
/// drained at the port's rate, plus T, W stays at least at the cut
/// ([`WindowCut::floor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowCut {
    /// A response since the round began showed the port at or above
    /// eta: the next signal past the round may cut again.
    renew: bool,
    /// The window the law keeps until `hold_until_ns` (0: none).
    hold_w: u32,
    /// End of the hold, ns.
    hold_until_ns: u64,
    /// The silence of the signals that ends an episode: the last signal's
    /// drain time plus T, ns.
    quiet_ns: u64,
    /// The window the current round of cuts started from (0: none yet).
    ref_w: u32,
    /// End of the current round, ns.
    until_ns: u64,
    /// A cut without the count: the signalling port's rate, bit/s.
    uncounted_rate_bps: u64,
    /// Until when a count that arrives still applies to it, ns (0: none).
    uncounted_until_ns: u64,
    /// The largest window since the flow's telemetry last showed the port
    /// at or above eta (0: none yet): signals alone never cut below
    /// `anchor_w / MAX_UNCONFIRMED_CUT`.
    anchor_w: u32,
    /// A response showed the port at or above eta since the anchor was set.
    confirmed: bool,
    /// Rounds begun since the anchor was set.
    rounds: u8,
}

/// Signals alone (without a response since that showed the port at or
/// above eta) cut a window to no less than this fraction of the largest
/// window since: a switch in the access list that signals a flow whose
/// telemetry sees no congestion can slow it down by this much, not stop
/// it.
pub const MAX_UNCONFIRMED_CUT: u32 = 8;
/// Rounds of cuts signals alone may begin ([`MAX_UNCONFIRMED_CUT`]).
pub const MAX_UNCONFIRMED_ROUNDS: u8 = 3;
/// The largest queue a signal may claim, in B·T of its port: deeper
/// claims are capped (a switch's buffer is a few BDPs; 16 covers a 2 MB
/// buffer at 100 Gbit/s and 10 us).
pub const MAX_QUEUE_BDPS: u64 = 16;

impl WindowCut {
    /// The window after a signal at `now_ns` reporting `qlen` bytes at a
    /// port of `rate_bps`, for a flow at window `w` with base RTT
    /// `base_rtt_ns` and target utilization `eta_ppm`, one of `flows` at
    /// its receiver (0: unknown), never below `min_w` nor above `w`.
    /// Bytes throughout. `gap_ns`: the signals' longest silence before this
    /// one ([`crate::control::SfcState::gap_ns`]; 0: not measured, and the
    /// hold's end alone ends an episode).
    #[allow(clippy::too_many_arguments)]
    pub fn on_signal(
        &mut self,
        w: u32,
        qlen: u32,
        rate_bps: u64,
        base_rtt_ns: u64,
        eta_ppm: u32,
        min_w: u32,
        now_ns: u64,
        flows: u16,
        gap_ns: u64,
    ) -> u32 {
        // A new round: the first signal, one after the last round's
        // queue has drained (the hold is over and, where the receive hook
        // measured it, the signals fell silent for as long: a flow takes
        // signals only on its ACKs, and ACKs far apart do not end a storm),
        // or one past the round's T that the flow's telemetry has since
        // confirmed.
        let quiet = gap_ns == 0 || gap_ns >= self.quiet_ns;
        // What the flow's own telemetry allows signals alone to do: the
        // anchor is the largest window since a response last showed the
        // port at or above eta.
        if self.confirmed || self.anchor_w == 0 {
            self.anchor_w = w;
            self.confirmed = false;
            self.rounds = 0;
        } else {
            self.anchor_w = self.anchor_w.max(w);
        }
        let new_round = self.ref_w == 0
            || (self.rounds < MAX_UNCONFIRMED_ROUNDS
                && ((now_ns >= self.hold_until_ns && quiet) || (now_ns >= self.until_ns && self.renew)));
        let reference = if new_round {
            self.ref_w = w;
            self.until_ns = now_ns.saturating_add(base_rtt_ns);
            self.renew = false;
            self.rounds = self.rounds.saturating_add(1);
            w
        } else {
            self.ref_w
        };
        // u128 products, 64-bit-only divisions: W_ref·B·T/(B·T + q) is
        // exact to the byte (floor).
        let bdp = bdp_bytes(rate_bps, base_rtt_ns);
        let q = if bdp == 0 { u64::from(qlen) } else { u64::from(qlen).min(bdp.saturating_mul(MAX_QUEUE_BDPS)) };
        let carried = div_wide(mul_wide(u64::from(reference), bdp), bdp.saturating_add(q).max(1)).unwrap_or(0);
        // carried ≤ reference < 2^32 and eta ≤ 10^6 < 2^20: no overflow.
        let eta = u64::from(eta_ppm.min(ETA_SCALE));
        let mut cut = carried.saturating_mul(eta) / u64::from(ETA_SCALE);
        cut = cut.max(u64::from(self.anchor_w / MAX_UNCONFIRMED_CUT));
        // The share comes from the receiver's count, which the flow's
        // telemetry carries: not bounded by the anchor.
        if let Some(share) = share_bytes(rate_bps, base_rtt_ns, eta_ppm, flows) {
            cut = cut.min(share);
        }
        let cut = u32::try_from(cut).unwrap_or(u32::MAX).max(min_w).min(w);
        // A queue no pause could drain (at most MAX_PAUSE_US) is no
        // reason to hold longer.
        let q = u32::try_from(q).unwrap_or(u32::MAX);
        let drain = drain_ns(q, rate_bps).min(u64::from(MAX_PAUSE_US) * 1000);
        self.quiet_ns = drain.saturating_add(base_rtt_ns);
        let drained = now_ns.saturating_add(self.quiet_ns);
        self.hold_w = cut;
        self.hold_until_ns = self.hold_until_ns.max(drained);
        cut
    }

    /// A response was applied; `congested`: it showed the port at or
    /// above eta. Signals alone (a storm from an allowed source, or a
    /// switch that disagrees with the telemetry) then cut once per
    /// episode rather than once per T, or a long storm would hold the flow
    /// at the minimum window.
    pub fn on_sample(&mut self, congested: bool) {
        self.renew |= congested;
        self.confirmed |= congested;
    }

    /// The window the flow keeps after the cut is `w` (lower than the cut
    /// if the law had already cut deeper): the floor is never above it.
    pub fn settle(&mut self, w: u32) {
        self.hold_w = self.hold_w.min(w);
    }

    /// The window the law must not go below at `now_ns` (a sample of the
    /// queue the last cut answered); `None` once that queue has drained.
    pub fn floor(&self, now_ns: u64) -> Option<u32> {
        (now_ns < self.hold_until_ns).then_some(self.hold_w)
    }

    /// The last cut did not know the receiver's flow count: a count that
    /// arrives before `until_ns` cuts W to the share of a port of
    /// `rate_bps`.
    pub fn await_count(&mut self, rate_bps: u64, until_ns: u64) {
        self.uncounted_rate_bps = rate_bps;
        self.uncounted_until_ns = until_ns;
    }

    /// The receiver's count `flows` arrived at `now_ns`: the window for a
    /// flow at `w` if a cut awaited it (once), never below `min_w` nor
    /// above `w`; `None` if none did, or too long ago.
    pub fn on_count(&mut self, w: u32, flows: u16, base_rtt_ns: u64, eta_ppm: u32, min_w: u32, now_ns: u64) -> Option<u32> {
        if flows == 0 || self.uncounted_until_ns == 0 {
            return None;
        }
        let until = core::mem::take(&mut self.uncounted_until_ns);
        if now_ns >= until {
            return None;
        }
        let share = share_bytes(self.uncounted_rate_bps, base_rtt_ns, eta_ppm, flows)?;
        let cut = u32::try_from(share).unwrap_or(u32::MAX).max(min_w).min(w);
        self.hold_w = self.hold_w.min(cut);
        Some(cut)
    }
}

/// How long after an SFC window cut at `now_ns` the congestion it
/// answered may still show: the longest pause (`max_pause_us`) and two
/// RTTs (`rtt_ns`).
pub fn cut_reach_until(now_ns: u64, max_pause_us: u32, rtt_ns: u64) -> u64 {
    now_ns.saturating_add(u64::from(max_pause_us).saturating_mul(1000).saturating_add(rtt_ns.saturating_mul(2)))
}

/// How long a queue of `qlen` bytes takes to drain at `rate_bps`, ns (0
/// for an unknown rate, saturating).
pub fn drain_ns(qlen: u32, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    // qlen·8·10^9 < 2^66: u128, then a 64-bit divisor.
    div_wide(mul_wide(u64::from(qlen).saturating_mul(8), 1_000_000_000), rate_bps).unwrap_or(u64::MAX)
}

/// B·T in bytes, capped at 2^43 (8 TB).
fn bdp_bytes(rate_bps: u64, base_rtt_ns: u64) -> u64 {
    div_wide(mul_wide(rate_bps / 8, base_rtt_ns), 1_000_000_000).unwrap_or(u64::MAX).min(1 << 43)
}

/// One of `flows` flows' share of a port of `rate_bps` that the senders
/// keep at `eta_ppm` of B·T: `eta·B·T / flows` bytes; `None` while the
/// count is unknown (0).
pub fn share_bytes(rate_bps: u64, base_rtt_ns: u64, eta_ppm: u32, flows: u16) -> Option<u64> {
    // B·T < 2^43 and eta ≤ 10^6 < 2^20: no overflow.
    let eta = u64::from(eta_ppm.min(ETA_SCALE));
    (bdp_bytes(rate_bps, base_rtt_ns).saturating_mul(eta) / u64::from(ETA_SCALE)).checked_div(u64::from(flows))
}

/// A flow as the egress hook sees an outgoing packet: L4 protocol,
/// addresses (IPv4 as IPv4-mapped) and ports, local end first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowKey {
    /// [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub proto: u8,
    /// Local address.
    pub saddr: [u8; 16],
    /// Peer address.
    pub daddr: [u8; 16],
    /// Local port.
    pub sport: u16,
    /// Peer port.
    pub dport: u16,
}

fn mapped16(a: IpAddr) -> [u8; 16] {
    mapped(a).to_be_bytes()
}

impl FlowKey {
    /// The flow a signal names (its data packet's 5-tuple).
    pub fn of_signal(s: &Signal) -> Self {
        Self { proto: s.l4proto, saddr: mapped16(s.saddr), daddr: mapped16(s.daddr), sport: s.sport, dport: s.dport }
    }
}

/// Bytes of an outgoing packet [`egress_key`] reads: the IPv6 header (or
/// an IPv4 one with the longest options) and the L4 ports.
pub const EGRESS_KEY_LEN: usize = 64;

/// The flow of an outgoing packet `pkt` (from its IP header): TCP or UDP
/// over IPv4 (the first fragment, or none) or IPv6 without extension
/// headers; `None` for anything else.
pub fn egress_key(pkt: &[u8]) -> Option<FlowKey> {
    let (proto, saddr, daddr, l4) = match pkt.first()? >> 4 {
        4 => {
            let ihl = usize::from(pkt.first()? & 0xf) * 4;
            // A later fragment has no ports.
            if ihl < IPV4_LEN || be16(pkt, 6)? & 0x1fff != 0 {
                return None;
            }
            let s: [u8; 4] = pkt.get(12..16)?.try_into().ok()?;
            let d: [u8; 4] = pkt.get(16..20)?.try_into().ok()?;
            (*pkt.get(9)?, mapped16(IpAddr::V4(s.into())), mapped16(IpAddr::V4(d.into())), ihl)
        }
        6 => (*pkt.get(6)?, addr16(pkt, 8)?, addr16(pkt, 24)?, IPV6_LEN),
        _ => return None,
    };
    if proto != IPPROTO_TCP && proto != IPPROTO_UDP {
        return None;
    }
    Some(FlowKey { proto, saddr, daddr, sport: be16(pkt, l4)?, dport: be16(pkt, l4 + 2)? })
}

impl FlowKey {
    /// The key as bytes, for a keyed hash ([`PauseTable`]).
    pub fn bytes(&self) -> [u8; 37] {
        let mut b = [0u8; 37];
        b[0] = self.proto;
        b[1..17].copy_from_slice(&self.saddr);
        b[17..33].copy_from_slice(&self.daddr);
        b[33..35].copy_from_slice(&self.sport.to_be_bytes());
        b[35..37].copy_from_slice(&self.dport.to_be_bytes());
        b
    }

    fn words(&self) -> [u64; KEY_WORDS] {
        let w = |a: &[u8; 16], hi: bool| {
            let x = u128::from_be_bytes(*a);
            if hi {
                (x >> 64) as u64
            } else {
                x as u64
            }
        };
        let ports = (u64::from(self.proto) << 32) | (u64::from(self.sport) << 16) | u64::from(self.dport);
        // Bit 63 marks a used slot: an all-zero key never matches one.
        [ports | 1 << 63, w(&self.saddr, true), w(&self.saddr, false), w(&self.daddr, true), w(&self.daddr, false)]
    }
}

/// Flows a netns holds paused at egress at once ([`PauseTable`]).
pub const PAUSE_SLOTS: usize = 64;
/// Slots a flow's key may occupy, from its hash on.
pub const PAUSE_PROBE: usize = 8;
/// Live pauses one source may hold in a netns's table.
pub const PAUSES_PER_SOURCE: usize = PAUSE_SLOTS / 4;
const KEY_WORDS: usize = 5;

/// One slot of a [`PauseTable`]: a sequence count (odd while a writer
/// changes the slot), the key, the deadline, and what only writers read.
#[derive(Debug, Default)]
struct PauseSlot {
    seq: AtomicU32,
    key: [AtomicU64; KEY_WORDS],
    until: AtomicU64,
    /// The hash of the source that set the pause (the per-source quota).
    source: AtomicU64,
    /// The last TCP signal taken: switch << 16 | port, and its sequence
    /// number + 1 (0: none) ([`Reject::Duplicate`]).
    last_switch_port: AtomicU64,
    last_seq: AtomicU64,
}

/// Pauses of flows the module does not control (`sfc_scope` 1: other
/// congestion controls, UDP), held at egress: the hook stamps a departure
/// time no earlier than the deadline on each of their packets, and sch_fq
/// holds them until then. [`PAUSE_SLOTS`] slots; a flow's key lives in one
/// of [`PAUSE_PROBE`] slots from its keyed hash (which no sender can
/// choose), until its deadline.
///
/// # Concurrency
///
/// Readers ([`PauseTable::until`], the egress hook, any context) take no
/// lock and never wait: each slot has a sequence count, odd while a writer
/// changes it, and a reader that sees a slot change under it tries once
/// more and then treats the slot as not paused (the packet leaves
/// unheld). Writers ([`PauseTable::insert`]) must be serialised by the
/// caller, with bottom halves off (a reader in softirq on the writer's
/// CPU then never interrupts a write in progress). All fields are
/// atomics, so a broken caller can confuse the table but never cause
/// undefined behaviour.
#[derive(Debug)]
pub struct PauseTable {
    e: [PauseSlot; PAUSE_SLOTS],
    latest: AtomicU64,
}

impl Default for PauseTable {
    fn default() -> Self {
        Self { e: core::array::from_fn(|_| PauseSlot::default()), latest: AtomicU64::new(0) }
    }
}

impl PauseTable {
    fn slots(&self, hash: u64) -> impl Iterator<Item = &PauseSlot> {
        let start = (hash % PAUSE_SLOTS as u64) as usize;
        (0..PAUSE_PROBE).filter_map(move |j| self.e.get(start.wrapping_add(j) % PAUSE_SLOTS))
    }

    /// Holds flow `k` (keyed hash `hash`) until `until` (ns; a later
    /// deadline of the same flow extends it), for the signal `s` from the
    /// source whose hash is `source`. Refused: a TCP signal the flow took
    /// already ([`Reject::Duplicate`]), a source that holds
    /// [`PAUSES_PER_SOURCE`] live pauses already ([`Reject::SourceQuota`]),
    /// no free slot among the key's ([`Reject::TableFull`]); no pause is
    /// ever shortened. Writers must be serialised (see the type).
    pub fn insert(&self, k: &FlowKey, hash: u64, until: u64, now: u64, source: u64, s: &Signal) -> Result<(), Reject> {
        let words = k.words();
        let live_same = self.slots(hash).find(|e| e.until.load(Relaxed) > now && Self::key_of(e) == words);
        let slot = match live_same {
            Some(e) => {
                let sp = (u64::from(s.switch_id) << 16) | u64::from(s.port_id);
                let dup = s.l4proto == IPPROTO_TCP
                    && e.last_switch_port.load(Relaxed) == sp
                    && e.last_seq.load(Relaxed) == u64::from(s.seq).wrapping_add(1);
                if dup {
                    return Err(Reject::Duplicate);
                }
                e
            }
            None => {
                let held = self
                    .e
                    .iter()
                    .filter(|e| e.until.load(Relaxed) > now && e.source.load(Relaxed) == source)
                    .fold(0usize, |n, _| n.saturating_add(1));
                if held >= PAUSES_PER_SOURCE {
                    return Err(Reject::SourceQuota);
                }
                self.slots(hash).find(|e| e.until.load(Relaxed) <= now).ok_or(Reject::TableFull)?
            }
        };
        let fresh = live_same.is_none();
        let seq = slot.seq.load(Relaxed);
        slot.seq.store(seq.wrapping_add(1), Relaxed);
        fence(Release);
        if fresh {
            for (d, w) in slot.key.iter().zip(words) {
                d.store(w, Relaxed);
            }
            slot.until.store(until, Relaxed);
            slot.source.store(source, Relaxed);
        } else {
            slot.until.fetch_max(until, Relaxed);
        }
        if s.l4proto == IPPROTO_TCP {
            slot.last_switch_port.store((u64::from(s.switch_id) << 16) | u64::from(s.port_id), Relaxed);
            slot.last_seq.store(u64::from(s.seq).wrapping_add(1), Relaxed);
        } else {
            slot.last_seq.store(0, Relaxed);
        }
        slot.seq.store(seq.wrapping_add(2), Release);
        self.latest.fetch_max(until, Release);
        Ok(())
    }

    fn key_of(e: &PauseSlot) -> [u64; KEY_WORDS] {
        core::array::from_fn(|i| e.key.get(i).map_or(0, |w| w.load(Relaxed)))
    }

    /// The deadline of `k` (keyed hash `hash`) if it is paused at `now`.
    /// Lock-free and bounded: see the type.
    pub fn until(&self, k: &FlowKey, hash: u64, now: u64) -> Option<u64> {
        let latest = self.latest.load(Acquire);
        if latest <= now {
            // All over: back to the fast path, unless a new pause came in
            // meanwhile (it stored a later deadline).
            if latest != 0 {
                let _ = self.latest.compare_exchange(latest, 0, Relaxed, Relaxed);
            }
            return None;
        }
        let words = k.words();
        for e in self.slots(hash) {
            for _ in 0..2 {
                let s1 = e.seq.load(Acquire);
                if s1 & 1 == 1 {
                    core::hint::spin_loop();
                    continue;
                }
                let key = Self::key_of(e);
                let until = e.until.load(Relaxed);
                fence(Acquire);
                if e.seq.load(Relaxed) != s1 {
                    continue;
                }
                if key == words && until > now {
                    return Some(until);
                }
                break;
            }
        }
        None
    }

    /// The latest deadline held: nothing is paused at or after it (the
    /// hook's check before it reads the table; 0: never anything).
    pub fn latest(&self) -> u64 {
        self.latest.load(Acquire)
    }

    /// Whether anything may be paused: one atomic load (the egress hook's
    /// fast path, before it reads the clock or the packet); false again
    /// once [`PauseTable::until`] has seen the last pause end.
    pub fn marked(&self) -> bool {
        self.latest.load(Acquire) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_time_of_a_queue() {
        // 12.5 kB at 100 Mbit/s: 1 ms; an unknown rate drains nothing; a
        // 4 GB queue at 1 bit/s saturates.
        assert_eq!(drain_ns(12_500, 100_000_000), 1_000_000);
        assert_eq!(drain_ns(12_500, 0), 0);
        assert_eq!(drain_ns(u32::MAX, 1), u64::MAX);
    }

    #[test]
    fn a_cut_holds_until_its_queue_has_drained_plus_t() {
        let mut c = WindowCut::default();
        assert_eq!(c.floor(0), None);
        // One BDP (12.5 kB at 100 Mbit/s, T = 1 ms) at t = 5 ms: held
        // until 5 + 1 + 1 ms, at the cut, or lower if the flow settled
        // lower.
        let w = c.on_signal(100_000, 12_500, 100_000_000, 1_000_000, 1_000_000, 1448, 5_000_000, 0, 0);
        assert_eq!(c.floor(6_999_999), Some(w));
        assert_eq!(c.floor(7_000_000), None);
        c.settle(w - 1);
        assert_eq!(c.floor(5_000_000), Some(w - 1));
        c.settle(w);
        assert_eq!(c.floor(5_000_000), Some(w - 1));
    }

    fn sig4() -> Signal {
        Signal {
            saddr: "10.1.1.1".parse().unwrap(),
            daddr: "10.0.2.1".parse().unwrap(),
            l4proto: IPPROTO_TCP,
            sport: 40000,
            dport: 5201,
            speed: 12,
            pause_ns: 1_500_000,
            qlen: 90_000,
            switch_id: 0x102,
            port_id: 3,
            seq: 0xfffff000,
        }
    }

    #[test]
    fn encode_parse_round_trip_v4_and_v6() {
        let mut b = [0u8; LEN];
        for s in [
            sig4(),
            Signal {
                saddr: "fd00::1:1".parse().unwrap(),
                daddr: "fd00::2:1".parse().unwrap(),
                l4proto: IPPROTO_UDP,
                seq: 0,
                ..sig4()
            },
        ] {
            assert_eq!(encode(&s, &mut b), Some(LEN));
            assert!(recognize(&b));
            assert_eq!(parse(&b), Ok(s));
        }
    }

    #[test]
    fn the_reserved_word_is_never_read() {
        let mut b = [0u8; LEN];
        encode(&sig4(), &mut b).unwrap();
        b[OFF_RESERVED] = 0xab;
        b[OFF_RESERVED + 1] = 0xcd;
        assert_eq!(parse(&b), Ok(sig4()));
    }

    #[test]
    fn every_malformed_variant_is_refused() {
        let mut good = [0u8; LEN];
        encode(&sig4(), &mut good).unwrap();
        for n in 0..LEN {
            assert_eq!(parse(&good[..n]), Err(Reject::Truncated), "{n} bytes");
        }
        let mut long = [0u8; LEN + 1];
        long[..LEN].copy_from_slice(&good);
        assert_eq!(parse(&long), Err(Reject::BadHeader));
        let cases: &[(usize, u8)] = &[
            (0, b'X'),            // magic
            (OFF_VERSION, 2),     // version
            (OFF_FAMILY, 5),      // family
            (OFF_L4PROTO, 1),     // ICMP
            (OFF_SPEED, 0),       // reserved speed code
            (OFF_SPEED, 14),      // reserved speed code
            (OFF_LEN + 1, 69),    // length field
            (OFF_DPORT + 2, 1),   // reserved2
            (OFF_SADDR + 4, 1),   // IPv4 address with bytes beyond 4
            (OFF_DADDR + 15, 1),  // same for the destination
        ];
        for &(off, v) in cases {
            let mut b = good;
            b[off] = v;
            assert_eq!(parse(&b), Err(Reject::BadHeader), "byte {off} = {v}");
        }
        let mut udp = good;
        udp[OFF_L4PROTO] = IPPROTO_UDP;
        assert_eq!(parse(&udp), Err(Reject::BadHeader), "UDP with a sequence number");
    }

    /// A whole IPv4 datagram (valid UDP checksum) to `dport`, in a
    /// 200-byte buffer, and its length.
    fn ip4_udp(dport: u16, payload: &[u8]) -> ([u8; 200], usize) {
        let mut p = [0u8; 200];
        let n = 28 + payload.len();
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(n as u16).to_be_bytes());
        p[8] = 255;
        p[9] = IPPROTO_UDP;
        p[12..16].copy_from_slice(&[10, 255, 0, 1]);
        p[16..20].copy_from_slice(&[10, 1, 1, 1]);
        p[20..22].copy_from_slice(&dport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p[28..n].copy_from_slice(payload);
        set_udp_csum(&mut p[..n], 20);
        (p, n)
    }

    /// Writes the valid UDP checksum of the datagram in `p` (IP header
    /// first, UDP at `l4`).
    fn set_udp_csum(p: &mut [u8], l4: usize) {
        p[l4 + 6..l4 + 8].copy_from_slice(&[0, 0]);
        let (src, dst): (IpAddr, IpAddr) = if p[0] >> 4 == 4 {
            let s: [u8; 4] = p[12..16].try_into().unwrap();
            let d: [u8; 4] = p[16..20].try_into().unwrap();
            (s.into(), d.into())
        } else {
            let s: [u8; 16] = p[8..24].try_into().unwrap();
            let d: [u8; 16] = p[24..40].try_into().unwrap();
            (s.into(), d.into())
        };
        let mut acc = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => ones_sum(&d.octets(), ones_sum(&s.octets(), 0)),
            (IpAddr::V6(s), IpAddr::V6(d)) => ones_sum(&d.octets(), ones_sum(&s.octets(), 0)),
            _ => unreachable!(),
        };
        acc += 17 + (p.len() - l4) as u64;
        acc = ones_sum(&p[l4..], acc);
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        let c = match !(acc as u16) {
            0 => 0xffff,
            c => c,
        };
        p[l4 + 6..l4 + 8].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn incoming_finds_udp_to_the_port_only() {
        let mut sig = [0u8; LEN];
        encode(&sig4(), &mut sig).unwrap();
        let (p, n) = ip4_udp(PORT_DEFAULT, &sig);
        assert!(is_candidate(&p[..CANDIDATE_LEN]));
        let i = incoming(&p[..n], n, PORT_DEFAULT).unwrap();
        assert_eq!((i.version, i.ttl, i.src, i.payload.len()), (4, 255, "10.255.0.1".parse().unwrap(), LEN));
        assert!(i.udp_ok);
        assert_eq!(parse(i.payload), Ok(sig4()));
        assert_eq!(incoming(&p[..n], n, 1), None, "another port");
        let mut tcp = p;
        tcp[9] = IPPROTO_TCP;
        assert!(!is_candidate(&tcp) && incoming(&tcp[..n], n, PORT_DEFAULT).is_none());
        let mut frag = p;
        frag[7] = 1;
        assert_eq!(incoming(&frag[..n], n, PORT_DEFAULT), None, "a fragment");
        // Truncated anywhere: no panic, never whole.
        for k in 0..n {
            if let Some(i) = incoming(&p[..k], n, PORT_DEFAULT) {
                assert!(!i.udp_ok, "{k} of {n} bytes");
            }
        }
        // IPv6.
        let mut q = [0u8; 48 + LEN];
        q[0] = 0x60;
        q[4..6].copy_from_slice(&((8 + LEN) as u16).to_be_bytes());
        q[6] = IPPROTO_UDP;
        q[7] = 254;
        q[8] = 0xfd;
        q[23] = 1;
        q[24] = 0xfd;
        q[39] = 2;
        q[42..44].copy_from_slice(&PORT_DEFAULT.to_be_bytes());
        q[44..46].copy_from_slice(&((8 + LEN) as u16).to_be_bytes());
        q[48..].copy_from_slice(&sig);
        set_udp_csum(&mut q, 40);
        assert!(is_candidate(&q[..CANDIDATE_LEN]));
        let i = incoming(&q, q.len(), PORT_DEFAULT).unwrap();
        assert_eq!((i.version, i.ttl, i.src, i.payload), (6, 254, "fd00::1".parse().unwrap(), &sig[..]));
        assert!(i.udp_ok);
    }

    #[test]
    fn udp_length_and_checksum_must_agree_with_the_datagram() {
        let mut sig = [0u8; LEN];
        encode(&sig4(), &mut sig).unwrap();
        let (p, n) = ip4_udp(PORT_DEFAULT, &sig);
        let ok = |b: &[u8], len: usize| incoming(b, len, PORT_DEFAULT).unwrap().udp_ok;
        assert!(ok(&p[..n], n));
        // A UDP length of 4000 on a 96-byte packet.
        let mut big = p;
        big[24..26].copy_from_slice(&4000u16.to_be_bytes());
        assert!(!ok(&big[..n], n), "UDP length beyond the datagram");
        // The IP length disagrees with the packet's.
        assert!(!ok(&p[..n], n + 4), "trailing bytes");
        // The checksum: one bit off, or 0 (none), in either family.
        let mut bad = p;
        bad[30] ^= 1;
        assert!(!ok(&bad[..n], n), "payload changed");
        let mut none = p;
        none[26..28].copy_from_slice(&[0, 0]);
        assert!(!ok(&none[..n], n), "IPv4 checksum 0");
        // IPv4 options: refused, not parsed past.
        let mut opt = [0u8; 200];
        opt[..4].copy_from_slice(&p[..4]);
        opt[0] = 0x46;
        opt[4..20].copy_from_slice(&p[4..20]);
        opt[24..n + 4].copy_from_slice(&p[20..n]);
        opt[2..4].copy_from_slice(&((n + 4) as u16).to_be_bytes());
        let i = incoming(&opt[..n + 4], n + 4, PORT_DEFAULT).unwrap();
        assert!(!i.udp_ok);
        // A checksum computed to 0 is sent as 0xffff (RFC 768) and valid.
        assert!(udp_checksum_ok("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), &{
            let mut u = [0u8; 8];
            u[4..6].copy_from_slice(&8u16.to_be_bytes());
            // pseudo 10.0.0.1 + 10.0.0.2 + 17 + 8, header 8: sum 0x1420 + 0x0019 + 0x0008
            let sum: u32 = 0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 17 + 8 + 8;
            u[6..8].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            u
        }));
    }

    #[test]
    fn only_unicast_sources_of_their_own_family() {
        for (a, ok) in [
            ("10.9.0.2", true),
            ("0.0.0.0", false),
            ("224.0.0.1", false),
            ("127.0.0.1", false),
            ("255.255.255.255", false),
            ("fd00:ff::1", true),
            ("::", false),
            ("::1", false),
            ("ff02::1", false),
            ("::ffff:10.9.0.2", false), // IPv4-mapped
            ("::10.9.0.2", false),      // IPv4-compatible
        ] {
            assert_eq!(unicast_source(a.parse().unwrap()), ok, "{a}");
        }
    }

    #[test]
    fn interface_list_parses_and_matches_names() {
        let l = IfaceList::parse(" eth0, bond0.100\n").unwrap();
        let name = |s: &str| {
            let mut n = [0u8; IFNAME_MAX + 1];
            n[..s.len()].copy_from_slice(s.as_bytes());
            n
        };
        assert!(l.contains(&name("eth0")) && l.contains(&name("bond0.100")));
        assert!(!l.contains(&name("eth1")) && !l.contains(&name("eth")) && !l.contains(&name("")));
        assert!(IfaceList::parse("").unwrap().is_empty());
        assert!(!IfaceList::parse("").unwrap().contains(&name("eth0")), "empty accepts none");
        for bad in ["a/b", "a:b", ".", "..", "sixteen-chars-xx", "a b"] {
            assert_eq!(IfaceList::parse(bad), Err(IfaceError::BadName), "{bad}");
        }
        assert_eq!(IfaceList::parse("a,b,c,d,e,f,g,h,i"), Err(IfaceError::TooMany));
        let mut names = l.names();
        assert_eq!((names.next(), names.next(), names.next()), (Some(&b"eth0"[..]), Some(&b"bond0.100"[..]), None));
    }

    #[test]
    fn acl_parses_and_matches_prefixes() {
        let acl = Acl::parse(" 10.0.0.0/8, fd00:1::/32,192.168.1.7\n").unwrap();
        assert_eq!(acl.len(), 3);
        for (a, want) in [
            ("10.2.3.4", true),
            ("11.0.0.1", false),
            ("192.168.1.7", true),
            ("192.168.1.8", false),
            ("fd00:1:ffff::1", true),
            ("fd00:2::1", false),
            ("::ffff:10.1.1.1", false), // IPv4-mapped: no IPv4 entry matches it
            ("::a01:101", false),       // nor IPv4-compatible
        ] {
            assert_eq!(acl.contains(a.parse().unwrap()), want, "{a}");
        }
        assert!(Acl::parse("").unwrap().is_empty());
        assert!(!Acl::parse("").unwrap().contains("10.0.0.1".parse().unwrap()));
        let all = Acl::parse("0.0.0.0/0,::/0").unwrap();
        assert!(all.contains("1.2.3.4".parse().unwrap()) && all.contains("2001::1".parse().unwrap()));
        // Each family matches its own entries only.
        let v6 = Acl::parse("::/0").unwrap();
        assert!(!v6.contains("10.9.0.2".parse().unwrap()), "::/0 admits no IPv4 source");
        assert!(!v6.contains("::ffff:10.9.0.2".parse().unwrap()), "nor an IPv4-mapped one");
        let v4 = Acl::parse("0.0.0.0/0").unwrap();
        assert!(!v4.contains("::ffff:10.9.0.2".parse().unwrap()) && !v4.contains("fd00::1".parse().unwrap()));
        assert_eq!(Acl::parse("::ffff:10.0.0.0/104"), Err(AclError::Syntax), "IPv4 is written as IPv4");
        assert_eq!(Acl::parse("10.1.2.3/8"), Err(AclError::HostBits));
        for bad in ["10.0.0.0/33", "fd00::/129", "10.0.0/8", "10.0.0.0/", "10.0.0.0/+8", "x", "10.0.0.0/8/8"] {
            assert_eq!(Acl::parse(bad), Err(AclError::Syntax), "{bad}");
        }
        let many: [&str; ACL_MAX + 1] = core::array::from_fn(|_| "10.0.0.0/8");
        let mut s = [0u8; 11 * (ACL_MAX + 1)];
        let mut n = 0;
        for p in many {
            s[n..n + p.len()].copy_from_slice(p.as_bytes());
            s[n + p.len()] = b',';
            n += p.len() + 1;
        }
        let s = core::str::from_utf8(&s[..n]).unwrap();
        assert_eq!(Acl::parse(s), Err(AclError::TooMany));
        // A copy through entries/push is the same list.
        let mut copy = Acl::default();
        for (a, l) in acl.entries() {
            copy.push(a, l).unwrap();
        }
        assert_eq!(copy, acl);
        assert_eq!(copy.push(1, 127), Err(AclError::HostBits));
        assert_eq!(copy.push(0, 129), Err(AclError::Syntax));
    }

    #[test]
    fn lists_read_back_as_they_parse() {
        extern crate std;
        use std::string::ToString;
        let text = "10.0.0.0/8,fd00:1::/32,192.168.1.7/32,0.0.0.0/0,::/0";
        let acl = Acl::parse(text).unwrap();
        assert_eq!(acl.to_string(), text);
        assert_eq!(Acl::parse(&acl.to_string()), Ok(acl));
        assert_eq!(Acl::default().to_string(), "");
        let l = IfaceList::parse("eth0, bond0.100").unwrap();
        assert_eq!(l.to_string(), "eth0,bond0.100");
        assert_eq!(IfaceList::parse(&l.to_string()), Ok(l));
    }

    #[test]
    fn bucket_admits_rate_plus_burst() {
        let mut b = TokenBucket::new(0, 10);
        let mut ok = 0;
        // 100,000 signals/s for 2 s at rate 1000/s, burst 10.
        for i in 0..200_000u64 {
            ok += u32::from(b.admit(i * 10_000, 1000, 10));
        }
        assert!((2000..=2010).contains(&ok), "{ok}");
        // Backwards time adds nothing.
        let mut b = TokenBucket::new(1_000_000_000, 1);
        assert!(b.admit(1_000_000_000, 1, 1));
        assert!(!b.admit(0, 1, 1));
        assert!(!b.admit(1_000_000_000, 1, 1));
        // Huge gaps and knobs saturate.
        let mut b = TokenBucket::new(0, u32::MAX);
        assert!(b.admit(u64::MAX, u32::MAX, u32::MAX));
    }

    #[test]
    fn sequence_window_wraps() {
        assert!(seq_in_window(5, 5, 6));
        assert!(!seq_in_window(6, 5, 6));
        assert!(!seq_in_window(4, 5, 6));
        assert!(!seq_in_window(5, 5, 5), "nothing in flight");
        assert!(seq_in_window(2, u32::MAX - 2, 10));
        assert!(seq_in_window(u32::MAX, u32::MAX - 2, 10));
        assert!(!seq_in_window(10, u32::MAX - 2, 10));
    }

    fn rules() -> Rules {
        Rules {
            enabled: true,
            acl: Acl::parse("10.9.0.0/16,fd00:ff::/64").unwrap(),
            ifaces: IfaceList::parse("eth0").unwrap(),
            rate: 1000,
            burst: 2,
            max_pause_us: 1000,
            scope_all: false,
        }
    }

    fn eth0() -> Arrival {
        let mut a = Arrival::default();
        a.ifname[..4].copy_from_slice(b"eth0");
        a
    }

    fn arrived(src: &str, ttl: u8) -> Incoming<'static> {
        static SIG: [u8; LEN] = {
            let mut b = [0u8; LEN];
            // MAGIC, a wrong version, family 4, TCP, speed 12, len 68
            b[0] = 0x48;
            b[1] = 0x53;
            b[2] = 0x46;
            b[3] = 0x43;
            b[OFF_VERSION] = VERSION + 1; // parses as a bad header
            b[OFF_FAMILY] = 4;
            b[OFF_L4PROTO] = IPPROTO_TCP;
            b[OFF_SPEED] = 12;
            b[OFF_LEN + 1] = LEN as u8;
            b
        };
        let src: IpAddr = src.parse().unwrap();
        let version = if src.is_ipv4() { 4 } else { 6 };
        let dst = if src.is_ipv4() { "10.1.1.1".parse().unwrap() } else { "fd00:1::1".parse().unwrap() };
        Incoming { version, ttl, src, dst, payload: &SIG, udp_ok: true }
    }

    #[test]
    fn senders_are_checked_in_order_and_refusals_keep_tokens() {
        let r = rules();
        let sw = "10.9.0.2";
        let mut b = SourceBuckets::default();
        let admit = |r: &Rules, i: &Incoming<'_>, a: &Arrival, local: bool, b: &mut SourceBuckets, now: u64| {
            let now = now + 1_000_000_000; // a zeroed bucket fills on first use
            r.admit(i, a, |_| local, |src| b.admit(mapped(src) as u64, now, r.rate, r.burst)).map(|_| ())
        };
        let off = Rules { enabled: false, ..r };
        assert_eq!(admit(&off, &arrived(sw, 255), &eth0(), false, &mut b, 0), Err(Reject::Disabled));
        let bad_udp = Incoming { udp_ok: false, ..arrived(sw, 255) };
        assert_eq!(admit(&r, &bad_udp, &eth0(), false, &mut b, 0), Err(Reject::BadUdp));
        assert_eq!(admit(&r, &arrived("::ffff:10.9.0.2", 255), &eth0(), false, &mut b, 0), Err(Reject::BadSource));
        assert_eq!(admit(&r, &arrived("224.0.0.1", 255), &eth0(), false, &mut b, 0), Err(Reject::BadSource));
        let lo = Arrival { loopback: true, ..eth0() };
        assert_eq!(admit(&r, &arrived(sw, 255), &lo, false, &mut b, 0), Err(Reject::Loopback));
        let tun = Arrival { tunneled: true, ..eth0() };
        assert_eq!(admit(&r, &arrived(sw, 255), &tun, false, &mut b, 0), Err(Reject::Tunnel));
        let mut veth = Arrival::default();
        veth.ifname[..5].copy_from_slice(b"veth1");
        assert_eq!(admit(&r, &arrived(sw, 255), &veth, false, &mut b, 0), Err(Reject::Iface));
        assert_eq!(admit(&r, &arrived(sw, 254), &eth0(), false, &mut b, 0), Err(Reject::Ttl));
        assert_eq!(admit(&r, &arrived("10.8.0.2", 255), &eth0(), false, &mut b, 0), Err(Reject::Acl));
        assert_eq!(admit(&r, &arrived(sw, 255), &eth0(), true, &mut b, 0), Err(Reject::LocalSource));
        // Past every check: the bucket (burst 2), then the header.
        assert_eq!(admit(&r, &arrived(sw, 255), &eth0(), false, &mut b, 0), Err(Reject::BadHeader), "refusals kept the tokens");
        assert_eq!(admit(&r, &arrived(sw, 255), &eth0(), false, &mut b, 0), Err(Reject::BadHeader));
        assert_eq!(admit(&r, &arrived(sw, 255), &eth0(), false, &mut b, 0), Err(Reject::RateLimited));
        assert_eq!(admit(&r, &arrived(sw, 255), &eth0(), false, &mut b, 1_000_000), Err(Reject::BadHeader), "one token per ms");
        // Another source has its own bucket (unless its hash collides).
        assert_ne!(mapped("10.9.0.3".parse().unwrap()) % 64, mapped(sw.parse().unwrap()) % 64);
        assert_eq!(admit(&r, &arrived("10.9.0.3", 255), &eth0(), false, &mut b, 1_000_000), Err(Reject::BadHeader));
        // IPv6 switches by IPv6 prefix only.
        assert_eq!(admit(&r, &arrived("fd00:ff::5", 255), &eth0(), false, &mut b, 0), Err(Reject::BadHeader));
        assert_eq!(admit(&r, &arrived("fd00:fe::2", 255), &eth0(), false, &mut b, 0), Err(Reject::Acl));
    }

    #[test]
    fn a_signal_of_the_other_family_than_its_packet_is_refused() {
        let r = rules();
        let mut sig = [0u8; LEN];
        encode(&sig4(), &mut sig).unwrap();
        let i = Incoming { payload: &sig, ..arrived("10.9.0.2", 255) };
        assert_eq!(r.admit(&i, &eth0(), |_| false, |_| true), Ok(sig4()));
        let v6 = Incoming { payload: &sig, ..arrived("fd00:ff::2", 255) };
        assert_eq!(r.admit(&v6, &eth0(), |_| false, |_| true), Err(Reject::BadHeader), "IPv4 signal in IPv6");
    }

    #[test]
    fn one_source_drains_only_its_own_bucket() {
        let mut b = SourceBuckets::default();
        let now = 1_000_000_000;
        let taken = (0..1000).filter(|_| b.admit(7, now, 1000, 100)).count();
        assert_eq!(taken, 100, "the burst");
        assert!(b.admit(8, now, 1000, 100), "another source's bucket is full");
        assert!(!b.admit(7 + SOURCE_BUCKETS as u64, now, 1000, 100), "a colliding hash shares it");
    }

    #[test]
    fn a_replayed_signal_is_refused() {
        let mut f = ReplayFilter::default();
        let s = sig4();
        assert!(f.first_time(&s));
        assert!(!f.first_time(&s), "the same switch, port and sequence number");
        assert!(f.first_time(&Signal { seq: s.seq + 1448, ..s }));
        assert!(f.first_time(&Signal { port_id: 4, ..s }));
        // Older than REPLAY_SLOTS signals: forgotten.
        for i in 0..REPLAY_SLOTS as u32 {
            assert!(f.first_time(&Signal { seq: i, ..s }));
        }
        assert!(f.first_time(&s));
        // UDP signals carry no sequence number: never filtered.
        let udp = Signal { l4proto: IPPROTO_UDP, seq: 0, ..s };
        assert!(f.first_time(&udp) && f.first_time(&udp));
    }

    #[test]
    fn flow_checks_window_and_clamps_the_pause() {
        let r = rules();
        let s = sig4();
        assert_eq!(r.check_flow(&s, Some((0xffff_f000, 0xffff_f001))), Ok(1_000_000), "clamped to 1 ms");
        assert_eq!(r.check_flow(&s, Some((0xffff_f001, 0xffff_f100))), Err(Reject::SeqOutOfWindow));
        assert_eq!(r.check_flow(&s, None), Err(Reject::SeqOutOfWindow));
        let short = Signal { pause_ns: 5000, ..s };
        assert_eq!(r.check_flow(&short, Some((0xffff_0000, 2))), Ok(5000));
        let udp = Signal { l4proto: IPPROTO_UDP, seq: 0, ..s };
        assert_eq!(r.check_flow(&udp, None), Ok(1_000_000));
    }

    // 100 Mb/s, T = 2 ms: B·T = 25,000 B.
    const RATE: u64 = 100_000_000;
    const T: u64 = 2_000_000;

    #[test]
    fn cut_brings_the_window_to_what_the_port_carries() {
        let mut c = WindowCut::default();
        // Queue of 3 BDP: cut to eta/4.
        let w = c.on_signal(100_000, 75_000, RATE, T, 950_000, 1448, 0, 0, 0);
        assert!((23_740..=23_750).contains(&w), "{w}");
        // No queue: only eta.
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(100_000, 0, RATE, T, 950_000, 1448, 0, 0, 0), 95_000);
        // Never below min, never above w.
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(10_000, u32::MAX, RATE, T, 950_000, 1448, 0, 0, 0), 1448);
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(1000, 0, RATE, T, 1_000_000, 1448, 0, 0, 0), 1000);
    }

    #[test]
    fn cut_is_at_most_the_share_of_the_receivers_flows() {
        // 16:1 incast: 64 KiB windows, a full 4-BDP buffer. The queue alone
        // cuts each to 12.4 kB, 16 of which are 8 BDP: they would overflow
        // the buffer again when their pauses end together.
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(65_536, 100_000, RATE, T, 950_000, 1448, 0, 0, 0), 12_451);
        // Knowing the receiver's 17 flows: eta·B·T/17, 1,397 B, so the
        // window's floor.
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(65_536, 100_000, RATE, T, 950_000, 1448, 0, 17, 0), 1448);
        // Two flows: the share, 11,875 B, is below the queue's cut.
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(65_536, 25_000, RATE, T, 950_000, 1448, 0, 2, 0), 11_875);
        // One flow: eta·B·T (23,750 B), below the queue's cut (31,129 B).
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(65_536, 25_000, RATE, T, 950_000, 1448, 0, 0, 0), 31_129);
        let mut c = WindowCut::default();
        assert_eq!(c.on_signal(65_536, 25_000, RATE, T, 950_000, 1448, 0, 1, 0), 23_750);
    }

    #[test]
    fn a_count_after_an_uncounted_cut_applies_once_and_in_reach() {
        let mut c = WindowCut::default();
        assert_eq!(c.on_count(20_000, 4, T, 950_000, 1448, 0), None, "no cut awaited it");
        c.await_count(RATE, 10);
        assert_eq!(c.on_count(20_000, 0, T, 950_000, 1448, 5), None, "no count yet");
        assert_eq!(c.on_count(20_000, 4, T, 950_000, 1448, 5), Some(5937));
        assert_eq!(c.on_count(20_000, 4, T, 950_000, 1448, 6), None, "once");
        c.await_count(RATE, 10);
        assert_eq!(c.on_count(20_000, 4, T, 950_000, 1448, 10), None, "out of reach");
        c.await_count(RATE, 10);
        assert_eq!(c.on_count(3000, 100, T, 950_000, 1448, 0), Some(1448), "floor");
        c.await_count(RATE, 10);
        assert_eq!(c.on_count(3000, 1, T, 950_000, 1448, 0), Some(3000), "never raises W");
    }

    #[test]
    fn signals_within_one_rtt_do_not_compound() {
        let mut c = WindowCut::default();
        let w1 = c.on_signal(100_000, 25_000, RATE, T, 1_000_000, 1448, 0, 0, 0);
        assert_eq!(w1, 50_000);
        // A second, equal signal within T: no further cut.
        assert_eq!(c.on_signal(w1, 25_000, RATE, T, 1_000_000, 1448, T / 2, 0, 0), 50_000);
        // A deeper one within T: cut from the round's reference (100 kB).
        assert_eq!(c.on_signal(w1, 75_000, RATE, T, 1_000_000, 1448, T - 1, 0, 0), 25_000);
        // After T, without telemetry that agrees, the same round.
        assert_eq!(c.on_signal(25_000, 25_000, RATE, T, 1_000_000, 1448, T, 0, 0), 25_000);
        // With it, a new round from the current window.
        c.on_sample(true);
        assert_eq!(c.on_signal(25_000, 25_000, RATE, T, 1_000_000, 1448, T, 0, 0), 12_500);
        // After the last queue has drained plus T, a new episode.
        let later = 5 * T; // the 75 kB signal at T - 1 drains in 3T, plus T
        assert_eq!(c.on_signal(12_500, 25_000, RATE, T, 1_000_000, 1448, later, 0, 0), 6_250);
    }

    #[test]
    fn cut_never_overflows() {
        let mut c = WindowCut::default();
        for &w in &[0, 1, u32::MAX] {
            for &q in &[0, 1, u32::MAX] {
                for &r in &[0, 1, u64::MAX] {
                    for &t in &[0, 1, u64::MAX] {
                        for &n in &[0, 1, u16::MAX] {
                            let x = c.on_signal(w, q, r, t, u32::MAX, 0, u64::MAX, n, u64::MAX);
                            assert!(x <= w);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn other_flows_only_with_scope_all() {
        let r = rules();
        let s = sig4();
        let w = Some((0xffff_f000, 0xffff_f001));
        assert_eq!(r.check_other_flow(&s, w), Err(Reject::NoFlow), "hpcc flows only by default");
        let all = Rules { scope_all: true, ..r };
        assert_eq!(all.check_other_flow(&s, w), Ok(1_000_000));
        assert_eq!(all.check_other_flow(&s, Some((0, 1))), Err(Reject::SeqOutOfWindow));
        let udp = Signal { l4proto: IPPROTO_UDP, seq: 0, ..s };
        assert_eq!(all.check_other_flow(&udp, None), Ok(1_000_000));
    }

    fn ipv4_packet(proto: u8, frag: u16, ihl: u8) -> [u8; 64] {
        let mut p = [0u8; 64];
        p[0] = 0x40 | ihl;
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p[9] = proto;
        p[12..16].copy_from_slice(&[10, 1, 1, 1]);
        p[16..20].copy_from_slice(&[10, 0, 2, 1]);
        let l4 = usize::from(ihl) * 4;
        p[l4..l4 + 2].copy_from_slice(&40000u16.to_be_bytes());
        p[l4 + 2..l4 + 4].copy_from_slice(&5201u16.to_be_bytes());
        p
    }

    #[test]
    fn egress_key_of_tcp_and_udp_over_v4_and_v6() {
        let k = egress_key(&ipv4_packet(IPPROTO_TCP, 0x4000, 5)).unwrap();
        assert_eq!(k, FlowKey::of_signal(&sig4()), "the key a signal for this flow names");
        let k = egress_key(&ipv4_packet(IPPROTO_UDP, 0x2000, 6)).unwrap();
        assert_eq!((k.proto, k.sport, k.dport), (IPPROTO_UDP, 40000, 5201), "options, first fragment");
        assert_eq!(egress_key(&ipv4_packet(IPPROTO_UDP, 0x2001, 5)), None, "a later fragment");
        assert_eq!(egress_key(&ipv4_packet(1, 0, 5)), None, "ICMP");
        assert_eq!(egress_key(&ipv4_packet(IPPROTO_TCP, 0, 4)), None, "bad IHL");
        let mut v6 = [0u8; 64];
        v6[0] = 0x60;
        v6[6] = IPPROTO_TCP;
        v6[8] = 0xfd;
        v6[24] = 0xfe;
        v6[40..44].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
        let k = egress_key(&v6).unwrap();
        assert_eq!((k.saddr[0], k.daddr[0], k.sport, k.dport), (0xfd, 0xfe, 40000, 5201));
        v6[6] = 0; // hop-by-hop options header: not parsed
        assert_eq!(egress_key(&v6), None);
        // Every truncation of a valid packet is refused, never read past.
        let p = ipv4_packet(IPPROTO_TCP, 0, 5);
        for n in 0..24 {
            assert_eq!(egress_key(&p[..n]), None, "{n} bytes");
        }
        assert!(egress_key(&p[..24]).is_some());
    }

    fn key(port: u16) -> FlowKey {
        FlowKey { proto: IPPROTO_UDP, sport: port, ..FlowKey::default() }
    }

    fn udp_sig() -> Signal {
        Signal { l4proto: IPPROTO_UDP, seq: 0, ..sig4() }
    }

    #[test]
    fn pause_table_holds_extends_expires_and_refuses_when_full() {
        let t = PauseTable::default();
        let s = udp_sig();
        let h = |p: u16| u64::from(p) * 7;
        assert!(!t.marked());
        assert_eq!(t.until(&key(1), h(1), 0), None);
        assert_eq!(t.insert(&key(1), h(1), 100, 0, 1, &s), Ok(()));
        assert!(t.marked());
        assert_eq!(t.until(&key(1), h(1), 50), Some(100));
        assert_eq!(t.until(&key(2), h(2), 50), None, "another flow");
        assert_eq!(t.until(&key(1), h(9), 50), None, "looked up elsewhere: not found, never wrong");
        assert_eq!(t.insert(&key(1), h(1), 80, 10, 1, &s), Ok(()));
        assert_eq!(t.until(&key(1), h(1), 50), Some(100), "a shorter pause does not shorten it");
        assert_eq!(t.insert(&key(1), h(1), 150, 60, 1, &s), Ok(()));
        assert_eq!(t.until(&key(1), h(1), 120), Some(150), "extended");
        assert_eq!(t.until(&key(1), h(1), 150), None, "over at its deadline");
        assert!(!t.marked(), "back to the fast path once seen over");
        // Keys that share a hash fill its PAUSE_PROBE slots, then are refused.
        let t = PauseTable::default();
        for i in 0..PAUSE_PROBE as u16 {
            assert_eq!(t.insert(&key(i), 5, 1000 + u64::from(i), 0, u64::from(i), &s), Ok(()));
        }
        assert_eq!(t.insert(&key(999), 5, 5000, 10, 99, &s), Err(Reject::TableFull));
        assert_eq!(t.until(&key(0), 5, 10), Some(1000), "no live pause lost");
        assert_eq!(t.insert(&key(999), 5, 5000, 1000, 99, &s), Ok(()), "key(0)'s slot expired at 1000");
        assert_eq!(t.until(&key(999), 5, 1001), Some(5000));
    }

    #[test]
    fn one_source_holds_at_most_its_share_of_the_pause_table() {
        // 64 bogus tuples from one source: it gets PAUSES_PER_SOURCE, and a
        // pause from another switch still finds room.
        let t = PauseTable::default();
        let s = udp_sig();
        let mut ok = 0;
        for i in 0..PAUSE_SLOTS as u16 {
            match t.insert(&key(i), u64::from(i), 1_000_000, 0, 1, &s) {
                Ok(()) => ok += 1,
                Err(e) => assert_eq!(e, Reject::SourceQuota),
            }
        }
        assert_eq!(ok, PAUSES_PER_SOURCE);
        assert_eq!(t.insert(&key(500), 500, 1_000_000, 0, 2, &s), Ok(()));
        // Its own pauses can still be extended.
        assert_eq!(t.insert(&key(0), 0, 2_000_000, 0, 1, &s), Ok(()));
        // Once they end, the source may pause again.
        assert_eq!(t.insert(&key(600), 600, 3_000_000, 1_000_000, 1, &s), Ok(()));
    }

    #[test]
    fn pause_table_refuses_a_replayed_tcp_signal() {
        let t = PauseTable::default();
        let s = sig4();
        let k = FlowKey::of_signal(&s);
        assert_eq!(t.insert(&k, 3, 1000, 0, 1, &s), Ok(()));
        assert_eq!(t.insert(&k, 3, 1000, 0, 1, &s), Err(Reject::Duplicate));
        assert_eq!(t.insert(&k, 3, 2000, 0, 1, &Signal { seq: s.seq.wrapping_add(1448), ..s }), Ok(()));
        assert_eq!(t.until(&k, 3, 0), Some(2000));
    }

    #[test]
    fn spaced_signals_never_cut_below_the_floor_without_telemetry() {
        // 100 Gbit/s, T = 10 us: B·T = 125 kB; a flow at 475 kB. A switch
        // (or a forger in the access list) signals every 3T + drain with
        // the deepest queue, and speed code 12 (100 Mbit/s) where it can.
        let (rate, t) = (100_000_000_000u64, 10_000u64);
        let w0 = 475_000u32;
        // (The controller never passes a rate below the path's slowest
        // INT link, and a receiver's count comes with that telemetry: a
        // speed code below it comes without a count here.)
        for (speed_bps, n) in [(rate, 1), (rate, 0), (100_000_000, 0)] {
            let mut c = WindowCut::default();
            let (mut w, mut now) = (w0, 0u64);
            for _ in 0..50 {
                let q = u32::MAX;
                w = c.on_signal(w, q, speed_bps, t, 950_000, 1448, now, n, 0).min(w);
                now += 3 * t + drain_ns(q, speed_bps).min(u64::from(MAX_PAUSE_US) * 1000) + 1;
            }
            assert!(w >= w0 / MAX_UNCONFIRMED_CUT, "{speed_bps} bit/s: W {w} below {}", w0 / MAX_UNCONFIRMED_CUT);
        }
        // Telemetry that confirms the congestion lets the cuts go on.
        let mut c = WindowCut::default();
        let (mut w, mut now) = (w0, 0u64);
        for _ in 0..10 {
            c.on_sample(true);
            w = c.on_signal(w, 125_000, rate, t, 950_000, 1448, now, 0, 0);
            now += 100 * t;
        }
        assert!(w < w0 / 100, "{w}");
    }

    #[test]
    fn a_signal_claims_at_most_max_queue_bdps() {
        let (rate, t) = (100_000_000u64, 2_000_000u64); // B·T = 25 kB
        let mut c = WindowCut::default();
        let a = c.on_signal(1_000_000, 16 * 25_000, rate, t, 1_000_000, 1448, 0, 0, 0);
        let mut c = WindowCut::default();
        let b = c.on_signal(1_000_000, u32::MAX, rate, t, 1_000_000, 1448, 0, 0, 0);
        assert_eq!(a, b);
        // 1/17 of W, or the floor of signals alone if that is higher.
        assert_eq!(a, (1_000_000 / 17).max(1_000_000 / MAX_UNCONFIRMED_CUT));
    }
}
