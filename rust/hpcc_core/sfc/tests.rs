//! Host tests of the SFC rules.

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
        (OFF_SPEED, 16),      // beyond the speed table
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
        max_hops: 0,
    }
}

/// `sfc_max_hops`: a signal from a switch N routers away arrives with TTL
/// 255 - N; it counts only if N is within the knob (the default: the
/// adjacent switch).
#[test]
fn ttl_within_max_hops() {
    let sw = "10.9.0.1";
    for (hops, ttl, ok) in [(0, 255, true), (0, 254, false), (2, 253, true), (2, 252, false), (4, 251, true), (200, 246, false)] {
        let r = Rules { max_hops: hops, ..rules() };
        let got = r.check_sender(&arrived(sw, ttl), &eth0());
        assert_eq!(got, if ok { Ok(()) } else { Err(Reject::Ttl) }, "max_hops {hops} ttl {ttl}");
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
