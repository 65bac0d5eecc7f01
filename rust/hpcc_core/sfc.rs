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
//! 2. [`Rules::check_source`]: SFC enabled (off by default), TTL / hop
//!    limit 255, source in the access list, per-netns [`TokenBucket`];
//! 3. [`parse`]: the whole header is valid;
//! 4. the glue finds the flow by the signal's tuple ([`Reject::NoFlow`]);
//! 5. [`Rules::check_flow`]: the data packet's sequence number lies in
//!    the flow's window; the pause is clamped to the maximum.
//!
//! [`WindowCut`] then brings an hpcc flow's window down to what the
//! bottleneck can carry given the reported queue, once per RTT.

use super::fixed::{div_wide, mul_wide, ETA_SCALE};
use super::wire;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
    /// TTL / hop limit below [`TTL`]: not from the adjacent domain.
    Ttl,
    /// Source address not in the access list.
    Acl,
    /// The per-netns token bucket is empty.
    RateLimited,
    /// Shorter than [`LEN`].
    Truncated,
    /// Version, length, family, protocol, speed or padding wrong.
    BadHeader,
    /// No flow with the signal's tuple (or not one SFC may pause).
    NoFlow,
    /// The sequence number is not in the flow's `[snd_una, snd_nxt)`.
    SeqOutOfWindow,
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
    /// TTL (IPv4) or hop limit (IPv6).
    pub ttl: u8,
    /// The IP source: the switch.
    pub src: IpAddr,
    /// The UDP payload (what [`recognize`] and [`parse`] read).
    pub payload: &'a [u8],
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

/// The datagram in `pkt` (from the IP header) if it is an unfragmented
/// UDP datagram to `port` over IPv4 or IPv6 without extension headers;
/// `None` otherwise (not ours). The payload is bounded by the UDP length.
pub fn incoming(pkt: &[u8], port: u16) -> Option<Incoming<'_>> {
    let (ttl, src, l4) = match pkt.first()? >> 4 {
        4 => {
            let ihl = usize::from(pkt.first()? & 0xf) * 4;
            let frag = be16(pkt, 6)? & 0x3fff;
            if ihl < IPV4_LEN || *pkt.get(9)? != IPPROTO_UDP || frag != 0 {
                return None;
            }
            let a: [u8; 4] = pkt.get(12..16)?.try_into().ok()?;
            (*pkt.get(8)?, IpAddr::V4(Ipv4Addr::from(a)), ihl)
        }
        6 => {
            if *pkt.get(6)? != IPPROTO_UDP {
                return None;
            }
            (*pkt.get(7)?, IpAddr::V6(Ipv6Addr::from(addr16(pkt, 8)?)), IPV6_LEN)
        }
        _ => return None,
    };
    if be16(pkt, l4 + 2)? != port {
        return None;
    }
    let ulen = usize::from(be16(pkt, l4 + 4)?);
    let end = l4.checked_add(ulen)?.min(pkt.len());
    let payload = pkt.get(l4 + UDP_LEN..end.max(l4 + UDP_LEN))?;
    Some(Incoming { ttl, src, payload })
}

/// Prefixes an access list holds at most.
pub const ACL_MAX: usize = 16;

/// One prefix, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`, length + 96).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Prefix {
    addr: u128,
    len: u8,
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
    /// Parses `ADDR/LEN` prefixes separated by commas (spaces and a
    /// trailing newline allowed), e.g. `10.0.0.0/8,fd00::/8`; a bare
    /// address is a host prefix (`/32`, `/128`). An empty string is the
    /// empty list.
    pub fn parse(s: &str) -> Result<Self, AclError> {
        let mut acl = Acl::default();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let (a, l) = match item.split_once('/') {
                Some((a, l)) => (a.trim(), Some(l.trim())),
                None => (item, None),
            };
            let addr: IpAddr = a.parse().map_err(|_| AclError::Syntax)?;
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
        *self.p.get_mut(self.n).ok_or(AclError::TooMany)? = Prefix { addr, len };
        self.n = self.n.saturating_add(1);
        Ok(())
    }

    /// Whether `a` is in one of the prefixes.
    pub fn contains(&self, a: IpAddr) -> bool {
        let v = mapped(a);
        self.p.get(..self.n).unwrap_or(&[]).iter().any(|p| v & mask(p.len) == p.addr)
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
    /// Signals per second a netns accepts, and the burst.
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

impl Rules {
    /// Step 2: SFC enabled, `ttl` is [`TTL`], `src` in the access list and
    /// the netns's `bucket` has a token (taken only when the rest holds,
    /// so refused sources never drain it).
    pub fn check_source(&self, ttl: u8, src: IpAddr, bucket: &mut TokenBucket, now_ns: u64) -> Result<(), Reject> {
        self.check_sender(ttl, src)?;
        if bucket.admit(now_ns, self.rate, self.burst) {
            Ok(())
        } else {
            Err(Reject::RateLimited)
        }
    }

    /// Step 2 without the bucket (for a caller that must lock the bucket):
    /// SFC enabled, `ttl` is [`TTL`] and `src` in the access list.
    pub fn check_sender(&self, ttl: u8, src: IpAddr) -> Result<(), Reject> {
        if !self.enabled {
            Err(Reject::Disabled)
        } else if ttl != TTL {
            Err(Reject::Ttl)
        } else if !self.acl.contains(src) {
            Err(Reject::Acl)
        } else {
            Ok(())
        }
    }

    /// Step 5, for the flow the signal names: a TCP signal's `seq` must lie
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

    /// Step 5 for a flow hpcc does not control (`tcp_window` the TCP
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
/// report that queue again, and the law would cut for it a second time
/// (measured: a 4:1 incast's flows cut to the share, then to 0.6 of it,
/// ran the port at U 0.55-0.75 for 40 ms). Until the reported queue has
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
}

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
        let new_round = self.ref_w == 0
            || (now_ns >= self.hold_until_ns && quiet)
            || (now_ns >= self.until_ns && self.renew);
        let reference = if new_round {
            self.ref_w = w;
            self.until_ns = now_ns.saturating_add(base_rtt_ns);
            self.renew = false;
            w
        } else {
            self.ref_w
        };
        // u128 products, 64-bit-only divisions: W_ref·B·T/(B·T + q) is
        // exact to the byte (floor).
        let bdp = bdp_bytes(rate_bps, base_rtt_ns);
        let carried = div_wide(mul_wide(u64::from(reference), bdp), bdp.saturating_add(u64::from(qlen)).max(1))
            .unwrap_or(0);
        // carried ≤ reference < 2^32 and eta ≤ 10^6 < 2^20: no overflow.
        let eta = u64::from(eta_ppm.min(ETA_SCALE));
        let mut cut = carried.saturating_mul(eta) / u64::from(ETA_SCALE);
        if let Some(share) = share_bytes(rate_bps, base_rtt_ns, eta_ppm, flows) {
            cut = cut.min(share);
        }
        let cut = u32::try_from(cut).unwrap_or(u32::MAX).max(min_w).min(w);
        // A queue no pause could drain (at most MAX_PAUSE_US) is no
        // reason to hold longer.
        let drain = drain_ns(qlen, rate_bps).min(u64::from(MAX_PAUSE_US) * 1000);
        self.quiet_ns = drain.saturating_add(base_rtt_ns);
        let drained = now_ns.saturating_add(self.quiet_ns);
        self.hold_w = cut;
        self.hold_until_ns = self.hold_until_ns.max(drained);
        cut
    }

    /// A response was applied; `congested`: it showed the port at or
    /// above eta. Signals alone (a storm from an allowed source, or a
    /// switch that disagrees with the telemetry) then cut once per
    /// episode rather than once per T: measured, a 2 s storm otherwise
    /// left the flow at the minimum window.
    pub fn on_sample(&mut self, congested: bool) {
        self.renew |= congested;
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

/// Flows a netns holds paused at egress at once ([`PauseTable`]).
pub const PAUSE_SLOTS: usize = 64;

/// Pauses of flows the module does not control (`sfc_scope` all: other
/// congestion controls, UDP), held at egress: the hook stamps a departure
/// time no earlier than the deadline on each of their packets, and sch_fq
/// holds them until then. A fixed table of [`PAUSE_SLOTS`] flows; an
/// entry lives until its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseTable {
    e: [(FlowKey, u64); PAUSE_SLOTS],
    latest: u64,
}

impl Default for PauseTable {
    fn default() -> Self {
        Self { e: [(FlowKey::default(), 0); PAUSE_SLOTS], latest: 0 }
    }
}

impl PauseTable {
    /// Holds flow `k` until `until` (ns; a later deadline of the same flow
    /// extends it). False if every slot holds another flow still paused
    /// at `now`: the signal is refused, no pause is shortened.
    pub fn insert(&mut self, k: FlowKey, until: u64, now: u64) -> bool {
        let slot = match self.e.iter().position(|(f, u)| *u > now && *f == k) {
            Some(i) => Some(i),
            None => self.e.iter().position(|(_, u)| *u <= now),
        };
        let Some((f, u)) = slot.and_then(|i| self.e.get_mut(i)) else { return false };
        if *f != k || *u <= now {
            *f = k;
            *u = 0;
        }
        *u = (*u).max(until);
        self.latest = self.latest.max(until);
        true
    }

    /// The deadline of `k` if it is paused at `now`.
    pub fn until(&self, k: &FlowKey, now: u64) -> Option<u64> {
        if self.latest <= now {
            return None;
        }
        self.e.iter().find(|(f, u)| *u > now && f == k).map(|(_, u)| *u)
    }

    /// The latest deadline held: nothing is paused at or after it (the
    /// hook's check before it reads the table).
    pub fn latest(&self) -> u64 {
        self.latest
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

    fn ip4_udp(dport: u16, payload: &[u8]) -> [u8; 200] {
        let mut p = [0u8; 200];
        p[0] = 0x45;
        p[8] = 255;
        p[9] = IPPROTO_UDP;
        p[12..16].copy_from_slice(&[10, 255, 0, 1]);
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p[28..28 + payload.len()].copy_from_slice(payload);
        p
    }

    #[test]
    fn incoming_finds_udp_to_the_port_only() {
        let mut sig = [0u8; LEN];
        encode(&sig4(), &mut sig).unwrap();
        let p = ip4_udp(PORT_DEFAULT, &sig);
        assert!(is_candidate(&p[..CANDIDATE_LEN]));
        let i = incoming(&p, PORT_DEFAULT).unwrap();
        assert_eq!((i.ttl, i.src, i.payload.len()), (255, "10.255.0.1".parse().unwrap(), LEN));
        assert_eq!(parse(i.payload), Ok(sig4()));
        assert_eq!(incoming(&p, 1), None, "another port");
        let mut tcp = p;
        tcp[9] = IPPROTO_TCP;
        assert!(!is_candidate(&tcp) && incoming(&tcp, PORT_DEFAULT).is_none());
        let mut frag = p;
        frag[7] = 1;
        assert_eq!(incoming(&frag, PORT_DEFAULT), None, "a fragment");
        // Truncated anywhere: no panic; a short payload parses as truncated.
        for n in 0..p.len() {
            if let Some(i) = incoming(&p[..n], PORT_DEFAULT) {
                assert!(i.payload.len() < LEN || n >= 28 + LEN);
            }
        }
        // IPv6.
        let mut q = [0u8; 48 + LEN];
        q[0] = 0x60;
        q[6] = IPPROTO_UDP;
        q[7] = 254;
        q[8] = 0xfd;
        q[42..44].copy_from_slice(&PORT_DEFAULT.to_be_bytes());
        q[44..46].copy_from_slice(&((8 + LEN) as u16).to_be_bytes());
        q[48..].copy_from_slice(&sig);
        assert!(is_candidate(&q[..CANDIDATE_LEN]));
        let i = incoming(&q, PORT_DEFAULT).unwrap();
        assert_eq!((i.ttl, i.src, i.payload), (254, "fd00::".parse().unwrap(), &sig[..]));
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
            ("::ffff:10.1.1.1", true), // IPv4-mapped is the IPv4 address
            ("::a01:101", false),      // IPv4-compatible is not
        ] {
            assert_eq!(acl.contains(a.parse().unwrap()), want, "{a}");
        }
        assert!(Acl::parse("").unwrap().is_empty());
        assert!(!Acl::parse("").unwrap().contains("10.0.0.1".parse().unwrap()));
        let all = Acl::parse("0.0.0.0/0,::/0").unwrap();
        assert!(all.contains("1.2.3.4".parse().unwrap()) && all.contains("2001::1".parse().unwrap()));
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
            acl: Acl::parse("10.9.0.0/16").unwrap(),
            rate: 1000,
            burst: 2,
            max_pause_us: 1000,
            scope_all: false,
        }
    }

    #[test]
    fn source_checks_in_order_and_refusals_keep_tokens() {
        let r = rules();
        let sw: IpAddr = "10.9.0.2".parse().unwrap();
        let mut b = TokenBucket::new(0, r.burst);
        assert_eq!(Rules { enabled: false, ..r }.check_source(255, sw, &mut b, 0), Err(Reject::Disabled));
        assert_eq!(r.check_source(254, sw, &mut b, 0), Err(Reject::Ttl));
        assert_eq!(r.check_source(255, "10.8.0.2".parse().unwrap(), &mut b, 0), Err(Reject::Acl));
        assert_eq!(r.check_source(255, sw, &mut b, 0), Ok(()));
        assert_eq!(r.check_source(255, sw, &mut b, 0), Ok(()));
        assert_eq!(r.check_source(255, sw, &mut b, 0), Err(Reject::RateLimited));
        assert_eq!(r.check_source(255, sw, &mut b, 1_000_000), Ok(()), "one token per ms");
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

    #[test]
    fn pause_table_holds_extends_expires_and_refuses_when_full() {
        let mut t = PauseTable::default();
        assert_eq!(t.until(&key(1), 0), None);
        assert!(t.insert(key(1), 100, 0));
        assert_eq!(t.until(&key(1), 50), Some(100));
        assert_eq!(t.until(&key(2), 50), None, "another flow");
        assert!(t.insert(key(1), 80, 10));
        assert_eq!(t.until(&key(1), 50), Some(100), "a shorter pause does not shorten it");
        assert!(t.insert(key(1), 150, 60));
        assert_eq!(t.until(&key(1), 120), Some(150), "extended");
        assert_eq!(t.until(&key(1), 150), None, "over at its deadline");
        assert_eq!(t.latest(), 150);
        // Full of live pauses: refused; an expired slot is reused.
        let mut t = PauseTable::default();
        for i in 0..PAUSE_SLOTS {
            assert!(t.insert(key(i as u16), 1000 + i as u64, 0));
        }
        assert!(!t.insert(key(999), 5000, 10));
        assert_eq!(t.until(&key(0), 10), Some(1000), "no live pause lost");
        assert!(t.insert(key(999), 5000, 1000), "key(0)'s slot expired at 1000");
        assert_eq!(t.until(&key(999), 1001), Some(5000));
        // An expired entry of the same flow starts afresh.
        assert!(t.insert(key(1), 1500, 1200));
        assert_eq!(t.until(&key(1), 1300), Some(1500));
    }
}
