//! Probe and response packets for TCP (draft section 7.2), as laid out in
//! `include/hpcc_probe.h`: an IPv4 header, a 20-byte TCP header with the
//! flow's ports, then
//!
//! ```text
//! magic:32 | version:8 | type:8 | len:16 | nonce:32 | snd_nxt:32 | INT stack (68 bytes)
//! ```
//!
//! The sender reserves the whole INT stack (`HPCC_INT_MAX_HOPS` records) so
//! switches stamp in place. A response has the reversed addresses and ports,
//! the response DSCP, and the probe's nonce, `snd_nxt` and INT stack.
//!
//! Both carry TCP checksum 0: they are never valid TCP segments, so a host
//! without the module drops them as checksum errors and they can never
//! reach TCP's sequence space.
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
/// A whole probe or response as the module builds it.
pub const PACKET_LEN: usize = IPV4_HDR_LEN + TCP_HDR_LEN + PAYLOAD_LEN;

const IPPROTO_TCP: u8 = 6;

/// Probe or response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sender to receiver, stamped by switches.
    Probe,
    /// Receiver to sender, carrying the stamps back.
    Response,
}

/// An IPv4 TCP 4-tuple as it appears on the wire (addresses as their four
/// bytes, ports in host order), oriented source to destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tuple {
    /// Source address.
    pub saddr: [u8; 4],
    /// Destination address.
    pub daddr: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

impl Tuple {
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
    /// Shorter than its headers and payload, or than its IPv4 total length says.
    Truncated,
    /// An IPv4 fragment.
    Fragment,
    /// IPv4 or TCP header length field out of range.
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

fn addr(b: &[u8], off: usize) -> Option<[u8; 4]> {
    b.get(off..off.checked_add(4)?)?.try_into().ok()
}

/// Whether an IPv4 header (at least its first 10 bytes) announces a TCP
/// packet with the probe or response DSCP: the cheap test before
/// [`classify`].
pub fn is_candidate(hdr: &[u8], probe_dscp: u8, response_dscp: u8) -> bool {
    match (hdr.first(), hdr.get(1), hdr.get(9)) {
        (Some(&vihl), Some(&tos), Some(&proto)) => {
            vihl >> 4 == 4 && proto == IPPROTO_TCP && (tos >> 2 == probe_dscp || tos >> 2 == response_dscp)
        }
        _ => false,
    }
}

/// Classifies an IPv4 packet (`buf` starts at the IPv4 header).
///
/// `Ok(None)`: not a TCP packet with the probe or response DSCP, so not
/// ours. `Ok(Some(p))`: a well-formed probe or response. `Err(e)`: it has
/// our DSCP and TCP but is malformed; the caller counts and drops it.
pub fn classify(buf: &[u8], probe_dscp: u8, response_dscp: u8) -> Result<Option<Packet<'_>>, ProbeError> {
    let (Some(&vihl), Some(&tos), Some(&proto)) = (buf.first(), buf.get(1), buf.get(9)) else {
        return Ok(None);
    };
    if vihl >> 4 != 4 || proto != IPPROTO_TCP {
        return Ok(None);
    }
    let dscp = tos >> 2;
    let kind = if dscp == probe_dscp {
        Kind::Probe
    } else if dscp == response_dscp {
        Kind::Response
    } else {
        return Ok(None);
    };
    let ihl = usize::from(vihl & 0xf) * 4;
    if ihl < IPV4_HDR_LEN {
        return Err(ProbeError::BadHeader);
    }
    let tot_len = usize::from(be16(buf, 2).ok_or(ProbeError::Truncated)?);
    let frag = be16(buf, 6).ok_or(ProbeError::Truncated)?;
    if frag & 0x3fff != 0 {
        return Err(ProbeError::Fragment);
    }
    let pkt = buf.get(..tot_len).ok_or(ProbeError::Truncated)?;
    let doff = usize::from(pkt.get(ihl + 12).ok_or(ProbeError::Truncated)? >> 4) * 4;
    if doff < TCP_HDR_LEN {
        return Err(ProbeError::BadHeader);
    }
    let off = ihl + doff;
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
        saddr: addr(pkt, 12).ok_or(ProbeError::Truncated)?,
        daddr: addr(pkt, 16).ok_or(ProbeError::Truncated)?,
        sport: be16(pkt, ihl).ok_or(ProbeError::Truncated)?,
        dport: be16(pkt, ihl + 2).ok_or(ProbeError::Truncated)?,
    };
    Ok(Some(Packet {
        kind,
        tuple,
        nonce: be32(payload, 8).ok_or(ProbeError::Truncated)?,
        snd_nxt: be32(payload, 12).ok_or(ProbeError::Truncated)?,
        int: payload.get(INT_OFF..PAYLOAD_LEN).ok_or(ProbeError::Truncated)?,
    }))
}

/// The IPv4 header checksum of `hdr` (checksum field included as is).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in hdr.chunks(2) {
        let hi = u32::from(pair.first().copied().unwrap_or(0));
        let lo = u32::from(pair.get(1).copied().unwrap_or(0));
        sum = sum.wrapping_add((hi << 8) | lo);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn put(out: &mut [u8], off: usize, bytes: &[u8]) {
    if let Some(d) = out.get_mut(off..off.saturating_add(bytes.len())) {
        d.copy_from_slice(bytes);
    }
}

/// Writes a complete probe or response of [`PACKET_LEN`] bytes.
fn build(out: &mut [u8; PACKET_LEN], kind: Kind, t: &Tuple, dscp: u8, nonce: u32, snd_nxt: u32, int: &[u8]) {
    *out = [0; PACKET_LEN];
    // IPv4: no options, DF, TTL 64, Not-ECT.
    put(out, 0, &[0x45, (dscp & 0x3f) << 2]);
    put(out, 2, &(PACKET_LEN as u16).to_be_bytes());
    put(out, 6, &0x4000u16.to_be_bytes());
    put(out, 8, &[64, IPPROTO_TCP]);
    put(out, 12, &t.saddr);
    put(out, 16, &t.daddr);
    let csum = ipv4_checksum(out.get(..IPV4_HDR_LEN).unwrap_or(&[]));
    put(out, 10, &csum.to_be_bytes());
    // TCP: ports, seq/ack 0, doff 5, ACK, window 0, checksum 0 (never valid TCP).
    let tcp = IPV4_HDR_LEN;
    put(out, tcp, &t.sport.to_be_bytes());
    put(out, tcp + 2, &t.dport.to_be_bytes());
    put(out, tcp + 12, &[(TCP_HDR_LEN as u8 / 4) << 4, 0x10]);
    // Payload.
    let p = IPV4_HDR_LEN + TCP_HDR_LEN;
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
}

/// A fresh probe for the flow `t` (sender to receiver) with an empty INT stack.
pub fn build_probe(out: &mut [u8; PACKET_LEN], t: &Tuple, dscp: u8, nonce: u32, snd_nxt: u32) {
    build(out, Kind::Probe, t, dscp, nonce, snd_nxt, &[0; INT_LEN]);
}

/// The response to probe `p`: reversed tuple, response DSCP, the probe's
/// nonce, `snd_nxt` and INT stack.
pub fn build_response(out: &mut [u8; PACKET_LEN], p: &Packet<'_>, dscp: u8) {
    build(out, Kind::Response, &p.tuple.reversed(), dscp, p.nonce, p.snd_nxt, p.int);
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Tuple = Tuple {
        saddr: [10, 0, 1, 1],
        daddr: [10, 0, 2, 1],
        sport: 40000,
        dport: 5201,
    };

    fn probe() -> [u8; PACKET_LEN] {
        let mut b = [0; PACKET_LEN];
        build_probe(&mut b, &T, DSCP_PROBE_DEFAULT, 0xdead_beef, 12345);
        b
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
        // TCP checksum is zero by design.
        assert_eq!(&b[36..38], &[0, 0]);
    }

    #[test]
    fn response_echoes_probe() {
        let mut b = probe();
        // A switch stamps one hop.
        b[40 + INT_OFF] = 0x10 | 0x0a;
        b[40 + INT_OFF + 4] = 0x8f;
        let p = classify(&b, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        let mut r = [0; PACKET_LEN];
        build_response(&mut r, &p, DSCP_RESPONSE_DEFAULT);
        let q = classify(&r, DSCP_PROBE_DEFAULT, DSCP_RESPONSE_DEFAULT).unwrap().unwrap();
        assert_eq!(q.kind, Kind::Response);
        assert_eq!(q.tuple, T.reversed());
        assert_eq!((q.nonce, q.snd_nxt), (p.nonce, p.snd_nxt));
        assert_eq!(q.int, p.int);
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
            // Steer half the inputs into our DSCP/protocol space.
            if i % 2 == 0 {
                buf[0] = 0x45;
                buf[1] = DSCP_RESPONSE_DEFAULT << 2;
                buf[9] = 6;
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
