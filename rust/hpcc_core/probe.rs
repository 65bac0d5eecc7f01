//! Probe and response packets for TCP (draft section 7.2), as laid out in
//! `include/hpcc_probe.h`: an IPv4 header (no options) or an IPv6 header (no
//! extension headers), a 20-byte TCP header with the flow's ports, then
//!
//! ```text
//! magic:32 | version:8 | type:8 | len:16 | nonce:32 | snd_nxt:32 | INT stack (68 bytes)
//! ```
//!
//! The sender reserves the whole INT stack (`HPCC_INT_MAX_HOPS` records) so
//! switches stamp in place. A response has the reversed addresses and ports,
//! the response DSCP, and the probe's nonce, `snd_nxt` and INT stack.
//!
//! Both carry a TCP checksum that is the correct one plus one
//! ([`tcp_checksum`]): never valid, whatever the addresses, ports and
//! payload, so a host without the module drops them as checksum errors
//! and they can never reach TCP's sequence space. (A checksum of 0 would be
//! valid for about one packet in 65,536.)
//!
//! This module is pure byte work on slices: [`classify`] never panics and
//! rejects anything malformed with a [`ProbeError`] the caller counts.

use crate::hpcc_core::wire;

/// `"HPCC"`.
pub const MAGIC: u32 = 0x4850_4343;
/// Format version.
pub const VERSION: u8 = 1;
/// `type` of a probe.
pub const TYPE_PROBE: u8 = 1;
/// `type` of a response.
pub const TYPE_RESPONSE: u8 = 2;
/// Default probe DSCP (RFC 2474 pool 2, experimental or local use).
pub const DSCP_PROBE_DEFAULT: u8 = 0x0b;
/// Default response DSCP (RFC 2474 pool 2, experimental or local use).
pub const DSCP_RESPONSE_DEFAULT: u8 = 0x0f;
/// Bytes of the probe header before the INT stack.
pub const HDR_LEN: usize = 16;
/// Offset of the INT stack in the TCP payload.
pub const INT_OFF: usize = HDR_LEN;
/// Bytes reserved for the INT stack.
pub const INT_LEN: usize = wire::encoded_len(wire::MAX_HOPS);
/// TCP payload of every probe and response.
pub const PAYLOAD_LEN: usize = HDR_LEN + INT_LEN;
/// The TCP header of probes and responses (no options).
pub const TCP_HDR_LEN: usize = 20;
/// The IPv4 header of probes and responses the module builds (no options).
pub const IPV4_HDR_LEN: usize = 20;
/// The IPv6 header of probes and responses (no extension headers).
pub const IPV6_HDR_LEN: usize = 40;
/// A whole IPv4 probe or response as the module builds it.
pub const PACKET_LEN: usize = IPV4_HDR_LEN + TCP_HDR_LEN + PAYLOAD_LEN;
/// A whole IPv6 probe or response.
pub const PACKET6_LEN: usize = IPV6_HDR_LEN + TCP_HDR_LEN + PAYLOAD_LEN;
/// The largest packet [`build_probe`] and [`build_response`] write.
pub const MAX_PACKET_LEN: usize = PACKET6_LEN;
/// Bytes of a packet [`is_candidate`] needs (the IPv4 header without
/// options; its first 8 bytes for IPv6).
pub const CANDIDATE_LEN: usize = IPV4_HDR_LEN;

const IPPROTO_TCP: u8 = 6;

/// The longest interval between a flow's probes. Consecutive samples must
/// reach the flow less than [`wire::MAX_GAP_NS`] (16.8 ms) apart for the
/// INT timestamps to unwrap; half of that leaves as much again for delay
/// variation between two responses. Responses may take any RTT: samples
/// are unwrapped against each other, not against the probe's send time.
pub const MAX_INTERVAL_NS: u64 = wire::MAX_GAP_NS / 2;

/// The probe interval: `knob_us` if set, else one smoothed RTT (at least
/// `base_rtt_ns`); at least `floor_us` (`probe_min_interval_us`, which
/// bounds one flow's probes at a tiny RTT), and never more than
/// [`MAX_INTERVAL_NS`].
pub fn interval_ns(knob_us: u32, floor_us: u32, srtt_us: u32, base_rtt_ns: u64) -> u64 {
    let ns = if knob_us != 0 {
        u64::from(knob_us).saturating_mul(1000)
    } else {
        u64::from(srtt_us).saturating_mul(1000).max(base_rtt_ns)
    };
    ns.max(u64::from(floor_us).saturating_mul(1000)).min(MAX_INTERVAL_NS)
}

/// Probe or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sender to receiver, stamped by switches.
    Probe,
    /// Receiver to sender, carrying the stamps back.
    Response,
}

/// A TCP 4-tuple as it appears on the wire (addresses as their bytes in
/// network order, ports in host order), oriented source to destination.
///
/// Addresses are IPv6; an IPv4 address is stored IPv4-mapped
/// (`::ffff:a.b.c.d`, RFC 4291 2.5.5.2), as the kernel's dual-stack sockets
/// keep it. A tuple whose two addresses are both mapped is an IPv4 flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(C)] // also the C ABI's `struct hpcc_tuple` (include/hpcc_ffi.h)
pub struct Tuple {
    /// Source address.
    pub saddr: [u8; 16],
    /// Destination address.
    pub daddr: [u8; 16],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// `a` as an IPv4-mapped IPv6 address.
pub const fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3]]
}

/// The IPv4 address of an IPv4-mapped IPv6 address, `None` for others.
pub fn v4_unmapped(a: &[u8; 16]) -> Option<[u8; 4]> {
    match a {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, b0, b1, b2, b3] => Some([*b0, *b1, *b2, *b3]),
        _ => None,
    }
}

impl Tuple {
    /// An IPv4 flow.
    pub const fn v4(saddr: [u8; 4], daddr: [u8; 4], sport: u16, dport: u16) -> Self {
        Self {
            saddr: v4_mapped(saddr),
            daddr: v4_mapped(daddr),
            sport,
            dport,
        }
    }

    /// Both IPv4 addresses if this is an IPv4 flow (both addresses mapped).
    pub fn v4_addrs(&self) -> Option<([u8; 4], [u8; 4])> {
        Some((v4_unmapped(&self.saddr)?, v4_unmapped(&self.daddr)?))
    }

    /// The length of this flow's probes and responses: [`PACKET_LEN`] for
    /// IPv4, [`PACKET6_LEN`] for IPv6.
    pub fn packet_len(&self) -> usize {
        if self.v4_addrs().is_some() {
            PACKET_LEN
        } else {
            PACKET6_LEN
        }
    }

    /// The same flow seen from the other end.
    pub const fn reversed(&self) -> Self {
        Self {
            saddr: self.daddr,
            daddr: self.saddr,
            sport: self.dport,
            dport: self.sport,
        }
    }
}

/// A validated probe or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Probe or response (agrees with the DSCP it came with).
    pub kind: Kind,
    /// Addresses and ports as on the wire.
    pub tuple: Tuple,
    /// The per-probe nonce.
    pub nonce: u32,
    /// The sender's `snd_nxt` when it sent the probe.
    pub snd_nxt: u32,
    /// The INT stack area ([`INT_LEN`] bytes), to be parsed with [`wire::parse`].
    pub int: &'a [u8],
}

/// Why a packet with a probe or response DSCP was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeError {
    /// Shorter than its headers and payload, or than its IPv4 total length
    /// or IPv6 payload length says.
    Truncated,
    /// An IPv4 fragment.
    Fragment,
    /// IPv4 or TCP header length field out of range, or IPv4-mapped
    /// addresses in an IPv6 header.
    BadHeader,
    /// The payload does not start with [`MAGIC`].
    BadMagic,
    /// Unknown [`VERSION`].
    BadVersion,
    /// `type` does not match the DSCP.
    BadType,
    /// `len` is not [`PAYLOAD_LEN`].
    BadLength,
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    let s: [u8; 2] = b.get(off..off.checked_add(2)?)?.try_into().ok()?;
    Some(u16::from_be_bytes(s))
}

fn be32(b: &[u8], off: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(s))
}

fn addr4(b: &[u8], off: usize) -> Option<[u8; 16]> {
    Some(v4_mapped(b.get(off..off.checked_add(4)?)?.try_into().ok()?))
}

fn addr6(b: &[u8], off: usize) -> Option<[u8; 16]> {
    b.get(off..off.checked_add(16)?)?.try_into().ok()
}

/// IP version, traffic class (IPv4 TOS) and transport protocol of the
/// header at the start of `hdr`, if it is long enough to tell (10 bytes
/// for IPv4, 8 for IPv6). For IPv6 the protocol is the first next header:
/// probes carry no extension headers.
fn ip_head(hdr: &[u8]) -> Option<(u8, u8, u8)> {
    let b0 = *hdr.first()?;
    let b1 = *hdr.get(1)?;
    match b0 >> 4 {
        4 => Some((4, b1, *hdr.get(9)?)),
        6 => Some((6, ((b0 & 0xf) << 4) | (b1 >> 4), *hdr.get(6)?)),
        _ => None,
    }
}

/// Whether an IP header (at least its first [`CANDIDATE_LEN`] bytes)
/// announces a TCP packet with the probe or response DSCP: the cheap test
/// before [`classify`].
pub fn is_candidate(hdr: &[u8], probe_dscp: u8, response_dscp: u8) -> bool {
    match ip_head(hdr) {
        Some((_, tc, proto)) => proto == IPPROTO_TCP && (tc >> 2 == probe_dscp || tc >> 2 == response_dscp),
        None => false,
    }
}

/// Classifies an IPv4 or IPv6 packet (`buf` starts at the IP header).
///
/// `Ok(None)`: not a TCP packet with the probe or response DSCP, so not
/// ours. `Ok(Some(p))`: a well-formed probe or response. `Err(e)`: it has
/// our DSCP and TCP but is malformed; the caller counts and drops it.
pub fn classify(buf: &[u8], probe_dscp: u8, response_dscp: u8) -> Result<Option<Packet<'_>>, ProbeError> {
    let Some((version, tc, proto)) = ip_head(buf) else {
        return Ok(None);
    };
    if proto != IPPROTO_TCP {
        return Ok(None);
    }
    let dscp = tc >> 2;
    let kind = if dscp == probe_dscp {
        Kind::Probe
    } else if dscp == response_dscp {
        Kind::Response
    } else {
        return Ok(None);
    };
    let IpBody { pkt, l4, saddr, daddr } = if version == 4 {
        ipv4_body(buf)?
    } else {
        ipv6_body(buf)?
    };
    let doff = usize::from(pkt.get(l4 + 12).ok_or(ProbeError::Truncated)? >> 4) * 4;
    if doff < TCP_HDR_LEN {
        return Err(ProbeError::BadHeader);
    }
    let off = l4 + doff;
    let payload = pkt.get(off..).ok_or(ProbeError::Truncated)?;
    if payload.len() < PAYLOAD_LEN {
        return Err(ProbeError::Truncated);
    }
    if be32(payload, 0) != Some(MAGIC) {
        return Err(ProbeError::BadMagic);
    }
    if payload.get(4) != Some(&VERSION) {
        return Err(ProbeError::BadVersion);
    }
    let want = match kind {
        Kind::Probe => TYPE_PROBE,
        Kind::Response => TYPE_RESPONSE,
    };
    if payload.get(5) != Some(&want) {
        return Err(ProbeError::BadType);
    }
    if be16(payload, 6).map(usize::from) != Some(PAYLOAD_LEN) {
        return Err(ProbeError::BadLength);
    }
    let tuple = Tuple {
        saddr,
        daddr,
        sport: be16(pkt, l4).ok_or(ProbeError::Truncated)?,
        dport: be16(pkt, l4 + 2).ok_or(ProbeError::Truncated)?,
    };
    Ok(Some(Packet {
        kind,
        tuple,
        nonce: be32(payload, 8).ok_or(ProbeError::Truncated)?,
        snd_nxt: be32(payload, 12).ok_or(ProbeError::Truncated)?,
        int: payload.get(INT_OFF..PAYLOAD_LEN).ok_or(ProbeError::Truncated)?,
    }))
}

/// An IP packet cut to the length its header gives, where its transport
/// header starts, and its addresses (IPv4 ones mapped).
struct IpBody<'a> {
    pkt: &'a [u8],
    l4: usize,
    saddr: [u8; 16],
    daddr: [u8; 16],
}

/// An IPv4 packet, without fragments.
fn ipv4_body(buf: &[u8]) -> Result<IpBody<'_>, ProbeError> {
    let ihl = usize::from(buf.first().ok_or(ProbeError::Truncated)? & 0xf) * 4;
    if ihl < IPV4_HDR_LEN {
        return Err(ProbeError::BadHeader);
    }
    let tot_len = usize::from(be16(buf, 2).ok_or(ProbeError::Truncated)?);
    let frag = be16(buf, 6).ok_or(ProbeError::Truncated)?;
    if frag & 0x3fff != 0 {
        return Err(ProbeError::Fragment);
    }
    let pkt = buf.get(..tot_len).ok_or(ProbeError::Truncated)?;
    let saddr = addr4(pkt, 12).ok_or(ProbeError::Truncated)?;
    let daddr = addr4(pkt, 16).ok_or(ProbeError::Truncated)?;
    Ok(IpBody { pkt, l4: ihl, saddr, daddr })
}

/// An IPv6 packet without extension headers: as [`ipv4_body`]. IPv4-mapped
/// addresses never appear on an IPv6 wire (RFC 4038 4.2), and here they
/// would make an IPv6 packet pass for an IPv4 flow's.
fn ipv6_body(buf: &[u8]) -> Result<IpBody<'_>, ProbeError> {
    let plen = usize::from(be16(buf, 4).ok_or(ProbeError::Truncated)?);
    let pkt = buf.get(..IPV6_HDR_LEN + plen).ok_or(ProbeError::Truncated)?;
    let saddr = addr6(pkt, 8).ok_or(ProbeError::Truncated)?;
    let daddr = addr6(pkt, 24).ok_or(ProbeError::Truncated)?;
    if v4_unmapped(&saddr).is_some() || v4_unmapped(&daddr).is_some() {
        return Err(ProbeError::BadHeader);
    }
    Ok(IpBody {
        pkt,
        l4: IPV6_HDR_LEN,
        saddr,
        daddr,
    })
}

/// Adds 16-bit big-endian words of `b` to a ones'-complement sum (an odd
/// last byte is padded with zero).
fn sum16(mut sum: u32, b: &[u8]) -> u32 {
    for pair in b.chunks(2) {
        let hi = u32::from(pair.first().copied().unwrap_or(0));
        let lo = u32::from(pair.get(1).copied().unwrap_or(0));
        sum = sum.wrapping_add((hi << 8) | lo);
        sum = (sum & 0xffff).wrapping_add(sum >> 16);
    }
    sum
}

/// The IPv4 header checksum of `hdr` (checksum field included as is).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    !(sum16(0, hdr) as u16)
}

/// The valid TCP checksum (RFC 793, with the RFC 8200 pseudo-header for
/// IPv6) of the segment `seg` (TCP header with its checksum field zero,
/// and payload) between `saddr` and `daddr`, as a flow's [`Tuple`] holds
/// them (IPv4 addresses mapped).
pub fn tcp_checksum(saddr: &[u8; 16], daddr: &[u8; 16], seg: &[u8]) -> u16 {
    let len = seg.len() as u32;
    let mut sum = match (v4_unmapped(saddr), v4_unmapped(daddr)) {
        (Some(s), Some(d)) => sum16(sum16(0, &s), &d),
        _ => sum16(sum16(0, saddr), daddr),
    };
    sum = sum16(sum, &len.to_be_bytes());
    sum = sum16(sum, &[0, IPPROTO_TCP]);
    sum = sum16(sum, seg);
    !(sum as u16)
}

/// What probes and responses carry in the TCP checksum field: the valid
/// checksum plus one. The valid one is never 0xffff (the sum covers the
/// non-zero protocol number), so the result is never the valid value nor,
/// in ones' complement, its other zero: no TCP stack accepts it.
pub fn invalid_tcp_checksum(valid: u16) -> u16 {
    valid.wrapping_add(1)
}

/// Whether the checksum in a segment's TCP header is valid.
pub fn tcp_checksum_ok(saddr: &[u8; 16], daddr: &[u8; 16], seg: &[u8]) -> bool {
    let mut zeroed = [0u8; TCP_HDR_LEN + PAYLOAD_LEN];
    let Some(z) = zeroed.get_mut(..seg.len()) else { return false };
    z.copy_from_slice(seg);
    let Some(field) = z.get_mut(16..18) else { return false };
    let got = u16::from_be_bytes([field[0], field[1]]);
    field.copy_from_slice(&[0, 0]);
    let want = tcp_checksum(saddr, daddr, z);
    got == want || (want == 0 && got == 0xffff)
}

fn put(out: &mut [u8], off: usize, bytes: &[u8]) {
    if let Some(d) = out.get_mut(off..off.saturating_add(bytes.len())) {
        d.copy_from_slice(bytes);
    }
}

/// Writes a complete probe or response for `t` at the start of `out`:
/// [`PACKET_LEN`] bytes for an IPv4 flow, [`PACKET6_LEN`] for IPv6. Returns
/// the length; the rest of `out` is zero.
fn build(out: &mut [u8; MAX_PACKET_LEN], kind: Kind, t: &Tuple, dscp: u8, nonce: u32, snd_nxt: u32, int: &[u8]) -> usize {
    *out = [0; MAX_PACKET_LEN];
    let tc = (dscp & 0x3f) << 2;
    let (len, tcp) = match t.v4_addrs() {
        Some((sa, da)) => {
            // IPv4: no options, DF, TTL 64, Not-ECT.
            put(out, 0, &[0x45, tc]);
            put(out, 2, &(PACKET_LEN as u16).to_be_bytes());
            put(out, 6, &0x4000u16.to_be_bytes());
            put(out, 8, &[64, IPPROTO_TCP]);
            put(out, 12, &sa);
            put(out, 16, &da);
            let csum = ipv4_checksum(out.get(..IPV4_HDR_LEN).unwrap_or(&[]));
            put(out, 10, &csum.to_be_bytes());
            (PACKET_LEN, IPV4_HDR_LEN)
        }
        None => {
            // IPv6: traffic class = DSCP, Not-ECT; flow label 0; hop limit 64.
            put(out, 0, &[0x60 | (tc >> 4), (tc & 0xf) << 4]);
            put(out, 4, &((TCP_HDR_LEN + PAYLOAD_LEN) as u16).to_be_bytes());
            put(out, 6, &[IPPROTO_TCP, 64]);
            put(out, 8, &t.saddr);
            put(out, 24, &t.daddr);
            (PACKET6_LEN, IPV6_HDR_LEN)
        }
    };
    // TCP: ports, seq/ack 0, doff 5, ACK, window 0, checksum set below
    // (never valid TCP).
    put(out, tcp, &t.sport.to_be_bytes());
    put(out, tcp + 2, &t.dport.to_be_bytes());
    put(out, tcp + 12, &[(TCP_HDR_LEN as u8 / 4) << 4, 0x10]);
    // Payload.
    let p = tcp + TCP_HDR_LEN;
    put(out, p, &MAGIC.to_be_bytes());
    let ty = match kind {
        Kind::Probe => TYPE_PROBE,
        Kind::Response => TYPE_RESPONSE,
    };
    put(out, p + 4, &[VERSION, ty]);
    put(out, p + 6, &(PAYLOAD_LEN as u16).to_be_bytes());
    put(out, p + 8, &nonce.to_be_bytes());
    put(out, p + 12, &snd_nxt.to_be_bytes());
    put(out, p + INT_OFF, int.get(..INT_LEN).unwrap_or(int));
    let csum = out
        .get(tcp..len)
        .map_or(0, |seg| invalid_tcp_checksum(tcp_checksum(&t.saddr, &t.daddr, seg)));
    put(out, tcp + 16, &csum.to_be_bytes());
    len
}

/// Why a sender refuses a response's INT stack (before it looks up the
/// flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntReject {
    /// More hops than the wire carries or than `max_hops` allows.
    TooManyHops,
    /// The stack does not parse.
    Bad,
}

/// A response's INT stack as a sender accepts it: one that parses, with at
/// most `max_hops` hops (the knob; the wire carries at most
/// `wire::MAX_HOPS`).
pub fn admit_int(int: &[u8], max_hops: u32) -> Result<(), IntReject> {
    match wire::parse(int) {
        Err(wire::WireError::TooManyHops) => Err(IntReject::TooManyHops),
        Err(_) => Err(IntReject::Bad),
        Ok(s) if u32::from(s.n_hops) > max_hops => Err(IntReject::TooManyHops),
        Ok(_) => Ok(()),
    }
}

/// A fresh probe for the flow `t` (sender to receiver) with an empty INT
/// stack but for the flow's probe spacing `spacing_us`
/// ([`wire::PROBE_SPACING_OFF`]; 0: not said), at the start of `out`;
/// returns its length.
pub fn build_probe(out: &mut [u8; MAX_PACKET_LEN], t: &Tuple, dscp: u8, nonce: u32, snd_nxt: u32, spacing_us: u16) -> usize {
    let mut int = [0u8; INT_LEN];
    wire::set_probe_spacing_us(&mut int, spacing_us);
    build(out, Kind::Probe, t, dscp, nonce, snd_nxt, &int)
}

/// The probe spacing probe `p` carries, us (0: not said).
pub fn spacing_us(p: &Packet<'_>) -> u16 {
    wire::probe_spacing_us(p.int)
}

/// The response to probe `p`: reversed tuple, response DSCP, the probe's
/// nonce, `snd_nxt` and INT stack, with the receiver's flow count
/// `rcv_flows` in the stack's header ([`wire::RCV_FLOWS_OFF`]). Returns
/// its length.
pub fn build_response(out: &mut [u8; MAX_PACKET_LEN], p: &Packet<'_>, dscp: u8, rcv_flows: u16) -> usize {
    let mut int = [0u8; INT_LEN];
    int.iter_mut().zip(p.int).for_each(|(d, s)| *d = *s);
    wire::set_rcv_flows(&mut int, rcv_flows);
    build(out, Kind::Response, &p.tuple.reversed(), dscp, p.nonce, p.snd_nxt, &int)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Tuple = Tuple::v4([10, 0, 1, 1], [10, 0, 2, 1], 40000, 5201);

    /// fd00:1::1 to fd00:2::1.
    const T6: Tuple = Tuple {
        saddr: [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        daddr: [0xfd, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        sport: 40000,
        dport: 5201,
    };

    fn probe() -> [u8; PACKET_LEN] {
        let mut b = [0; MAX_PACKET_LEN];
        assert_eq!(build_probe(&mut b, &T, DSCP_PROBE_DEFAULT, 0xdead_beef, 12345, 0), PACKET_LEN);
        assert!(b[PACKET_LEN..].iter().all(|&x| x == 0));
        b[..PACKET_LEN].try_into().unwrap()
    }

    fn probe6() -> [u8; PACKET6_LEN] {
        let mut b = [0; MAX_PACKET_LEN];
        assert_eq!(build_probe(&mut b, &T6, DSCP_PROBE_DEFAULT, 0xdead_beef, 12345, 0), PACKET6_LEN);
        b
    }

    #[test]
    fn a_response_int_stack_is_admitted_by_its_hops() {
        let mut int = [0u8; INT_LEN];
        let mut hops = [wire::RawHop::default(); wire::MAX_HOPS];
        hops[0] = wire::RawHop { rate: 8, ts: 1, tx: 2, qlen: 3 };
        hops[1] = hops[0];
        wire::encode(&wire::IntStack { n_hops: 2, path_id: 5, hops }, &mut int).unwrap();
        assert_eq!(admit_int(&int, 2), Ok(()));
        assert_eq!(admit_int(&int, 1), Err(IntReject::TooManyHops), "above the max_hops knob");
        int[0] = 0xf0; // nHop 15: more than the wire carries
        assert_eq!(admit_int(&int, 8), Err(IntReject::TooManyHops));
        assert_eq!(admit_int(&int[..2], 8), Err(IntReject::Bad), "truncated");
    }

    #[test]
    fn probe_round_trip() {
        let b = probe();
        assert_eq!(ipv4_checksum(&b[..20]), 0, "header checksum verifies");
        let p = classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(p.kind, Kind::Probe);
        assert_eq!(p.tuple, T);
        assert_eq!((p.nonce, p.snd_nxt), (0xdead_beef, 12345));
        assert_eq!(p.int, &[0u8; INT_LEN][..]);
        assert_eq!(spacing_us(&p), 0, "no spacing said");
        // The TCP checksum is never valid.
        assert!(!tcp_checksum_ok(&T.saddr, &T.daddr, &b[20..]));
    }

    #[test]
    fn a_probe_carries_its_spacing_and_its_response_the_count() {
        let mut b = [0; MAX_PACKET_LEN];
        assert_eq!(build_probe(&mut b, &T, DSCP_PROBE_DEFAULT, 7, 8, 2_200), PACKET_LEN);
        let p = classify(&b[..PACKET_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(spacing_us(&p), 2_200);
        // An empty stack otherwise: no hop, path 0.
        assert_eq!(wire::parse(p.int).map(|s| (s.n_hops, s.path_id)), Ok((0, 0)));
        assert!(p.int[..wire::PROBE_SPACING_OFF].iter().chain(&p.int[wire::PROBE_SPACING_OFF + 2..]).all(|&x| x == 0));
        // A receiver that echoes the stack as it came: no count, not 2,200
        // (nor 2,200 | the tag).
        assert_eq!(wire::rcv_flows(p.int), 0);
        assert_eq!(&p.int[wire::PROBE_SPACING_OFF..wire::PROBE_SPACING_OFF + 2], &(0x8000u16 | 2_200).to_be_bytes());
        // The response carries the count in its place, 0 included.
        for n in [3u16, 0] {
            let mut r = [0; MAX_PACKET_LEN];
            build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT, n);
            let q = classify(&r[..PACKET_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
            assert_eq!(wire::rcv_flows(q.int), n);
            assert_eq!(spacing_us(&q), 0, "a response says no spacing");
        }
        // The longest spacing said; a longer one says that.
        for (us, said) in [(1u16, 1u16), (wire::MAX_PROBE_SPACING_US, wire::MAX_PROBE_SPACING_US), (u16::MAX, wire::MAX_PROBE_SPACING_US)] {
            build_probe(&mut b, &T, DSCP_PROBE_DEFAULT, 7, 8, us);
            let p = classify(&b[..PACKET_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
            assert_eq!(spacing_us(&p), said);
        }
    }

    #[test]
    fn response_echoes_probe() {
        let mut b = probe();
        // A switch stamps one hop.
        b[40 + INT_OFF] = 0x10 | 0x0a;
        b[40 + INT_OFF + 4] = 0x8f;
        let p = classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        let mut r = [0; MAX_PACKET_LEN];
        assert_eq!(build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT, 0), PACKET_LEN);
        let q = classify(&r[..PACKET_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(q.kind, Kind::Response);
        assert_eq!(q.tuple, T.reversed());
        assert_eq!((q.nonce, q.snd_nxt), (p.nonce, p.snd_nxt));
        assert_eq!(q.int, p.int);
        // With the receiver's count: the same stack, the count in the
        // header's padding.
        assert_eq!(build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT, 0x1234), PACKET_LEN);
        let q = classify(&r[..PACKET_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(wire::rcv_flows(q.int), 0x1234);
        assert_eq!((&q.int[..2], &q.int[4..]), (&p.int[..2], &p.int[4..]));
        assert_eq!(wire::parse(q.int), wire::parse(p.int));
    }

    #[test]
    fn probe_interval_follows_srtt_up_to_half_the_ts_gap() {
        assert_eq!(interval_ns(0, 0, 2_000, 1_000_000), 2_000_000);
        assert_eq!(interval_ns(0, 0, 500, 1_000_000), 1_000_000, "at least T");
        assert_eq!(interval_ns(300, 0, 2_000, 1_000_000), 300_000, "the knob");
        assert_eq!(interval_ns(0, 5, 3, 2_000), 5_000, "the floor over srtt and T");
        assert_eq!(interval_ns(2, 5, 3, 2_000), 5_000, "the floor over the knob");
        // A 20 ms RTT (or knob) still gives samples that unwrap.
        assert_eq!(interval_ns(0, 0, 20_000, 20_000_000), wire::MAX_GAP_NS / 2);
        assert_eq!(interval_ns(1_000_000, 0, 0, 0), wire::MAX_GAP_NS / 2);
        assert!(interval_ns(0, u32::MAX, u32::MAX, u64::MAX) < wire::MAX_GAP_NS);
    }

    #[test]
    fn tuple_families() {
        assert_eq!(T.v4_addrs(), Some(([10, 0, 1, 1], [10, 0, 2, 1])));
        assert_eq!(T.saddr[..12], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
        assert_eq!((T.packet_len(), T6.packet_len()), (PACKET_LEN, PACKET6_LEN));
        assert_eq!(T6.v4_addrs(), None);
        // One mapped address is not an IPv4 flow.
        let mixed = Tuple { daddr: T6.daddr, ..T };
        assert_eq!(mixed.v4_addrs(), None);
        assert_eq!(v4_unmapped(&v4_mapped([1, 2, 3, 4])), Some([1, 2, 3, 4]));
    }

    #[test]
    fn probe6_round_trip_and_response() {
        let b = probe6();
        // Version 6, traffic class 0x2c (DSCP 11, Not-ECT), flow label 0,
        // payload 104, next header TCP, hop limit 64.
        assert_eq!(&b[..8], &[0x62, 0xc0, 0, 0, 0, 104, 6, 64]);
        assert!(is_candidate(&b[..CANDIDATE_LEN], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT));
        assert!(!is_candidate(&b[..CANDIDATE_LEN], 1, 2));
        let p = classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(p.kind, Kind::Probe);
        assert_eq!(p.tuple, T6);
        assert_eq!((p.nonce, p.snd_nxt), (0xdead_beef, 12345));
        assert!(!tcp_checksum_ok(&T6.saddr, &T6.daddr, &b[40..]), "TCP checksum is never valid");
        let mut s = b;
        s[60 + INT_OFF] = 0x10 | 0x0a;
        let p = classify(&s, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        let mut r = [0; MAX_PACKET_LEN];
        assert_eq!(build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT, 0), PACKET6_LEN);
        let q = classify(&r, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(q.kind, Kind::Response);
        assert_eq!(q.tuple, T6.reversed());
        assert_eq!(q.int, p.int);
        // Trailing bytes beyond the payload length are not part of it.
        let mut long = [0u8; PACKET6_LEN + 8];
        long[..PACKET6_LEN].copy_from_slice(&b);
        assert_eq!(classify(&long, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap().tuple, T6);
    }

    #[test]
    fn malformed6_is_rejected() {
        let d = (DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT);
        let b = probe6();
        for n in 7..PACKET6_LEN {
            assert!(classify(&b[..n], d.0, d.1).is_err(), "truncated to {n}");
        }
        // A payload length that runs past the buffer.
        let mut l = b;
        l[5] = 105;
        assert_eq!(classify(&l, d.0, d.1), Err(ProbeError::Truncated));
        // IPv4-mapped addresses on an IPv6 wire.
        let mut m = b;
        m[8..24].copy_from_slice(&v4_mapped([10, 0, 1, 1]));
        assert_eq!(classify(&m, d.0, d.1), Err(ProbeError::BadHeader));
        // An extension header first (hop-by-hop): not a probe of ours.
        let mut h = b;
        h[6] = 0;
        assert_eq!(classify(&h, d.0, d.1), Ok(None));
        let cases: [(usize, u8, ProbeError); 4] = [
            (60, 0, ProbeError::BadMagic),
            (64, 9, ProbeError::BadVersion),
            (65, TYPE_RESPONSE, ProbeError::BadType),
            (52, 0x40, ProbeError::BadHeader),
        ];
        for (off, v, e) in cases {
            let mut c = b;
            c[off] = v;
            assert_eq!(classify(&c, d.0, d.1), Err(e), "byte {off} = {v}");
        }
    }

    #[test]
    fn other_traffic_is_not_ours() {
        let mut b = probe();
        b[1] = 0; // DSCP 0
        assert_eq!(classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT), Ok(None));
        let mut b = probe();
        b[9] = 17; // UDP
        assert_eq!(classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT), Ok(None));
        assert_eq!(classify(&[], 11, 15), Ok(None));
        assert!(!is_candidate(&[], 11, 15));
        assert!(is_candidate(&probe()[..20], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT));
        assert!(!is_candidate(&probe()[..20], 1, 2));
    }

    #[test]
    fn malformed_is_rejected() {
        let d = (DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT);
        let b = probe();
        for n in 10..PACKET_LEN {
            assert!(classify(&b[..n], d.0, d.1).is_err(), "truncated to {n}");
        }
        let cases: [(usize, u8, ProbeError); 6] = [
            (40, 0, ProbeError::BadMagic),
            (44, 9, ProbeError::BadVersion),
            (45, TYPE_RESPONSE, ProbeError::BadType),
            (47, 83, ProbeError::BadLength),
            (32, 0x40, ProbeError::BadHeader),
            (6, 0x20, ProbeError::Fragment),
        ];
        for (off, v, e) in cases {
            let mut b = probe();
            b[off] = v;
            assert_eq!(classify(&b, d.0, d.1), Err(e), "byte {off} = {v}");
        }
    }

    /// The checksum routine against a segment whose valid checksum is
    /// known (computed independently: RFC 1071 over the pseudo-header).
    #[test]
    fn tcp_checksum_matches_rfc1071() {
        let seg = [0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0, 0xab];
        let (s, d) = (v4_mapped([10, 0, 1, 1]), v4_mapped([10, 0, 2, 1]));
        // Words: 0a00+0101+0a00+0201 + 0006 + 0015 (len 21) + segment.
        let mut sum: u32 = 0x0a00 + 0x0101 + 0x0a00 + 0x0201 + 0x0006 + 21;
        for w in seg.chunks(2) {
            sum += (u32::from(w[0]) << 8) | u32::from(*w.get(1).unwrap_or(&0));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let want = !(sum as u16);
        assert_eq!(tcp_checksum(&s, &d, &seg), want);
        let mut ok = seg;
        ok[16..18].copy_from_slice(&want.to_be_bytes());
        assert!(tcp_checksum_ok(&s, &d, &ok));
    }

    /// Over many flows, nonces and stamped INT stacks: no probe or
    /// response ever carries a valid TCP checksum. With checksum 0 (the
    /// format before) about one in 65,536 did; this finds such packets.
    #[test]
    fn checksum_is_never_valid() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut zero_would_be_valid = 0;
        for i in 0..300_000u32 {
            let r = rnd();
            let t = if i % 2 == 0 {
                Tuple::v4([10, 0, (r >> 8) as u8, r as u8], [10, 0, 2, 1], (r >> 16) as u16, 5201)
            } else {
                Tuple { sport: (r >> 16) as u16, dport: (r >> 32) as u16, ..T6 }
            };
            let mut b = [0; MAX_PACKET_LEN];
            let len = build_probe(&mut b, &t, DSCP_PROBE_DEFAULT, rnd() as u32, rnd() as u32, rnd() as u16);
            let l4 = len - TCP_HDR_LEN - PAYLOAD_LEN;
            assert!(!tcp_checksum_ok(&t.saddr, &t.daddr, &b[l4..len]), "probe {i}");
            let mut z = b;
            z[l4 + 16..l4 + 18].copy_from_slice(&[0, 0]);
            zero_would_be_valid += usize::from(tcp_checksum_ok(&t.saddr, &t.daddr, &z[l4..len]));
            if i % 8 != 0 {
                continue;
            }
            // The response, with a stamped hop.
            let mut s = b;
            s[l4 + TCP_HDR_LEN + INT_OFF..l4 + TCP_HDR_LEN + INT_OFF + 12].copy_from_slice(&rnd().to_be_bytes()[..].repeat(2)[..12]);
            let p = classify(&s[..len], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
            let mut r = [0; MAX_PACKET_LEN];
            let rlen = build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT, 0);
            let rt = t.reversed();
            assert!(!tcp_checksum_ok(&rt.saddr, &rt.daddr, &r[l4..rlen]), "response {i}");
        }
        assert!(zero_would_be_valid > 0, "checksum 0 is valid for some packets");
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x243f_6a88_85a3_08d3;
        let mut buf = [0u8; 160];
        let mut ours = 0;
        for i in 0..200_000 {
            for b in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            // Steer half the inputs into our DSCP/protocol space, IPv4 and IPv6.
            if i % 4 == 0 {
                buf[0] = 0x45;
                buf[1] = DSCP_RESPONSE_DEFAULT << 2;
                buf[9] = 6;
            } else if i % 4 == 2 {
                buf[0] = 0x60 | (DSCP_RESPONSE_DEFAULT >> 2);
                buf[1] = (DSCP_RESPONSE_DEFAULT & 3) << 6;
                buf[6] = 6;
            }
            let n = (x as usize >> 8) % buf.len();
            if let Ok(Some(p)) = classify(&buf[..n], DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT) {
                ours += 1;
                let _ = wire::parse(p.int);
            }
        }
        // Random payloads essentially never carry the magic.
        assert_eq!(ours, 0);
    }
}
