//! The signal on the wire (`include/hpcc_sfc.h`): its constants, parsing
//! and encoding, and the UDP/IP framing it arrives in (checksum, length,
//! a unicast source).

use super::*;

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

pub(super) fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

pub(super) fn be32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes([*b.get(off)?, *b.get(off + 1)?, *b.get(off + 2)?, *b.get(off + 3)?]))
}

pub(super) fn addr16(b: &[u8], off: usize) -> Option<[u8; 16]> {
    b.get(off..off + 16)?.try_into().ok()
}

/// Whether a UDP payload addressed to the SFC port claims to be a signal
/// (its magic). Anything else there is not ours.
pub fn recognize(payload: &[u8]) -> bool {
    be32(payload, 0) == Some(MAGIC)
}

pub(super) fn addr_of(family: u8, a: [u8; 16]) -> Option<IpAddr> {
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
pub(super) const IPV4_LEN: usize = 20;
pub(super) const IPV6_LEN: usize = 40;
pub(super) const UDP_LEN: usize = 8;
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
pub(super) fn ones_sum(b: &[u8], mut acc: u64) -> u64 {
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
