//! Figure-4 parsing/encoding and the unwrapping of narrow wire counters.

use hpcc_core::law::{Event, HopSample, HpccFlow, Sample, StaleReason};
use hpcc_core::params::{HpccConfig, Mode};
use hpcc_core::wire::{self, IntStack, RawHop, WireError, MAX_GAP_NS, MAX_HOPS, RATES, TS_SPAN_NS};
use hpcc_ref::gen::Rng;

fn stack(path_id: u16, hops: &[RawHop]) -> IntStack {
    let mut s = IntStack { n_hops: hops.len() as u8, path_id, ..Default::default() };
    s.hops[..hops.len()].copy_from_slice(hops);
    s
}

fn bytes(s: &IntStack) -> Vec<u8> {
    let mut b = vec![0u8; wire::encoded_len(usize::from(s.n_hops))];
    assert_eq!(wire::encode(s, &mut b), Ok(b.len()));
    b
}

#[test]
fn known_vector() {
    // Same bytes as hpcc_int_hop_pack(8, 0xabcdef, 0x12345, 0xfedc) in C.
    let buf1 = [0x1a, 0xbc, 0, 0, 0x8a, 0xbc, 0xde, 0xf1, 0x23, 0x45, 0xfe, 0xdc, 0xff];
    let s = wire::parse(&buf1).unwrap(); // trailing bytes are ignored
    assert_eq!((s.n_hops, s.path_id), (1, 0xabc));
    assert_eq!(s.hops(), &[RawHop { rate: 8, ts: 0xabcdef, tx: 0x12345, qlen: 0xfedc }]);
    assert_eq!(bytes(&s), buf1[..12].to_vec());
}

#[test]
fn malformed_buffers_are_rejected() {
    let good = bytes(&stack(5, &[RawHop { rate: 1, ..Default::default() }; 2]));
    assert_eq!(wire::parse(&[]), Err(WireError::Truncated));
    assert_eq!(wire::parse(&[0x10]), Err(WireError::Truncated));
    assert_eq!(wire::parse(&good[..3]), Err(WireError::Truncated));
    assert_eq!(wire::parse(&good[..19]), Err(WireError::Truncated));
    assert!(wire::parse(&good).is_ok());
    let mut nine = vec![0u8; 4 + 9 * 8];
    nine[0] = 0x90;
    assert_eq!(wire::parse(&nine), Err(WireError::TooManyHops));
    // Rate code 0 is reserved (1-15 are all in the table).
    let mut b = good.clone();
    b[12] &= 0x0f;
    assert_eq!(wire::parse(&b), Err(WireError::BadRate { hop: 1 }));
    // Zero hops is a valid (empty) stack.
    assert_eq!(wire::parse(&[0, 0, 0, 0]).unwrap().n_hops, 0);
    // Encoding refuses short buffers and too many hops.
    let s = stack(1, &[RawHop { rate: 1, ..Default::default() }]);
    assert_eq!(wire::encode(&s, &mut [0u8; 11]), Err(WireError::Truncated));
    let s = IntStack { n_hops: 9, ..Default::default() };
    assert_eq!(wire::encode(&s, &mut [0u8; 100]), Err(WireError::TooManyHops));
}

#[test]
fn encode_parse_round_trip() {
    let mut rng = Rng::new(3);
    for _ in 0..20_000 {
        let n = rng.range(0, MAX_HOPS as u64) as usize;
        let hops: Vec<RawHop> = (0..n)
            .map(|_| {
                let w = rng.next_u64();
                RawHop { rate: rng.range(1, 11) as u8, ..RawHop::from_word(w) }
            })
            .collect();
        let s = stack(rng.range(0, 0xfff) as u16, &hops);
        assert_eq!(wire::parse(&bytes(&s)), Ok(s));
        for h in &hops {
            assert_eq!(RawHop::from_word(h.to_word()), *h);
        }
    }
}

#[test]
fn quantize_truncates_and_saturates() {
    let h = RawHop::quantize(8, (1 << 25) + 7, (3 << 29) + 1000, 1 << 40).unwrap();
    // 100G: unit 512 B. ts: 2 ns units, wraps at 2^25 ns.
    assert_eq!(h, RawHop { rate: 8, ts: 3, tx: ((3u64 << 29) + 1000) as u32 >> 9 & 0xfffff, qlen: 0xffff });
    assert_eq!(RawHop::quantize(0, 0, 0, 0), None);
    assert_eq!(RawHop::quantize(16, 0, 0, 0), None);
}

/// A switch port: full-width counters, quantized onto the wire.
#[derive(Clone)]
struct Port {
    rate: u8,
    ts: u64,
    tx: u64,
    q: u64,
}

impl Port {
    fn raw(&self) -> RawHop {
        RawHop::quantize(self.rate, self.ts, self.tx, self.q).unwrap()
    }
    /// What the wire can express, as full-width values.
    fn quantized(&self) -> HopSample {
        let info = wire::rate_info(self.rate).unwrap();
        let s = info.unit_shift;
        HopSample {
            rate_bps: info.bps(),
            ts_ns: self.ts >> 1 << 1,
            tx_bytes: self.tx >> s << s,
            qlen_bytes: (self.q >> s).min(0xffff) << s,
        }
    }
}

/// Over long runs at every speed, with ts and txBytes wrapping many times,
/// a flow fed Figure-4 stacks behaves exactly like a flow fed the same
/// (quantized) values at full width.
#[test]
fn unwrapped_wire_samples_match_full_width_samples() {
    let mut rng = Rng::new(11);
    let mut wraps = 0u64;
    for case in 0..60 {
        let mode = [Mode::Sender, Mode::Receiver, Mode::Probe][case as usize % 3];
        let t = rng.log_uniform(2_000.0, 10_000_000.0) as u64;
        let n = rng.range(1, 5) as usize;
        let mut ports: Vec<Port> = (0..n)
            .map(|_| Port { rate: rng.range(1, 11) as u8, ts: rng.next_u64() >> 1, tx: rng.next_u64() >> 1, q: 0 })
            .collect();
        let min_rate = ports.iter().map(|p| wire::rate_info(p.rate).unwrap().bps()).min().unwrap();
        let bdp = (min_rate as f64 * t as f64 / 8e9) as u32;
        let cfg = HpccConfig {
            base_rtt_ns: t,
            init_window_bytes: bdp.clamp(2, 1 << 31),
            min_window_bytes: 1,
            max_window_bytes: 1 << 31,
            wai_bytes: (bdp / 100).max(1),
            mode,
            ..HpccConfig::DEFAULT
        };
        let p = cfg.validate().unwrap();
        let (mut a, mut b) = (HpccFlow::new(&p), HpccFlow::new(&p));
        let mut now = rng.next_u64() >> 2;
        let mut seq = rng.next_u64() as u32;
        for i in 0..2_000 {
            // Up to 16 ms between samples (just under MAX_GAP_NS with jitter).
            let dt = rng.log_uniform(t as f64 / 16.0, 16_000_000.0) as u64;
            now += dt + rng.range(0, 500_000);
            for port in ports.iter_mut() {
                let info = wire::rate_info(port.rate).unwrap();
                let util = rng.unit() * 1.0;
                let before = port.tx >> info.unit_shift >> 20;
                port.ts += dt;
                port.tx += (info.bps() as f64 / 8e9 * dt as f64 * util) as u64;
                if port.tx >> info.unit_shift >> 20 != before {
                    wraps += 1;
                }
                port.q = if rng.chance(0.5) { 0 } else { rng.range(0, 3 * bdp as u64) };
            }
            seq = seq.wrapping_add(rng.range(0, bdp as u64 * 2) as u32);
            let ack = seq.wrapping_sub(rng.range(0, bdp as u64) as u32);
            let raw: Vec<RawHop> = ports.iter().map(Port::raw).collect();
            let full: Vec<HopSample> = ports.iter().map(Port::quantized).collect();
            let oa = a.on_int(&p, &bytes(&stack(42, &raw)), now, ack, seq).unwrap();
            let ob = b.on_sample(&p, &Sample { now_ns: now, ack_seq: ack, snd_nxt: seq, path_id: 42, hops: &full });
            assert_eq!(oa, ob, "case {case} event {i}");
            assert_eq!(a.u_q40(), b.u_q40());
            assert_eq!(a.wc_q16(), b.wc_q16());
            if i > 0 {
                assert!(!oa.is_stale() && oa.event != Event::Recorded, "case {case} event {i}: {oa:?}");
            }
        }
    }
    // The test is only meaningful if the narrow counters wrapped a lot.
    assert!(wraps > 5_000, "txBytes wrapped only {wraps} times");
}

fn one_hop(ts_ns: u64, tx: u64) -> Vec<u8> {
    bytes(&stack(9, &[RawHop::quantize(4, ts_ns, tx, 0).unwrap()]))
}

#[test]
fn reordered_duplicate_gap_and_rate_change_on_the_wire() {
    let p = HpccConfig { base_rtt_ns: 100_000, ..HpccConfig::DEFAULT }.validate().unwrap();
    let mut f = HpccFlow::new(&p);
    let now0 = 1_000_000_000;
    // Records near the ts wrap point.
    let ts0 = TS_SPAN_NS - 1_000;
    assert_eq!(f.on_int(&p, &one_hop(ts0, 0), now0, 0, 0).unwrap().event, Event::Recorded);
    let s1 = one_hop(ts0 + 100_000, 100_000);
    assert_eq!(f.on_int(&p, &s1, now0 + 100_000, 1, 1).unwrap().event, Event::Committed);
    let s2 = one_hop(ts0 + 200_000, 200_000);
    assert_eq!(f.on_int(&p, &s2, now0 + 200_000, 1, 1).unwrap().event, Event::Updated);
    let snapshot = f.clone();
    // A duplicate: Δts = 0.
    let o = f.on_int(&p, &s2, now0 + 200_500, 1, 1).unwrap();
    assert_eq!(o.event, Event::Stale(StaleReason::ZeroDts));
    // The older s1 arriving late: its ts is 100 µs behind, not 33.5 ms ahead.
    let o = f.on_int(&p, &s1, now0 + 201_000, 1, 1).unwrap();
    assert_eq!(o.event, Event::Stale(StaleReason::Backwards));
    assert_eq!(f, snapshot);
    // A malformed buffer changes nothing either.
    assert!(f.on_int(&p, &s1[..7], now0 + 202_000, 1, 1).is_err());
    assert_eq!(f, snapshot);
    // A gap of MAX_GAP_NS or more cannot be unwrapped: re-record.
    let late = now0 + 200_000 + MAX_GAP_NS;
    let o = f.on_int(&p, &one_hop(ts0 + 200_000 + MAX_GAP_NS, 300_000), late, 1, 1).unwrap();
    assert_eq!(o.event, Event::Recorded);
    assert_eq!(o.window_bytes, snapshot.window_bytes());
    let o = f.on_int(&p, &one_hop(ts0 + 300_000 + MAX_GAP_NS, 400_000), late + 100_000, 1, 1).unwrap();
    assert_eq!(o.event, Event::Updated);
    // A hop whose speed code changed (its units changed): re-record.
    let other = bytes(&stack(9, &[RawHop::quantize(5, ts0, 0, 0).unwrap()]));
    assert_eq!(f.on_int(&p, &other, late + 150_000, 1, 1).unwrap().event, Event::Recorded);
    // A different path ID or hop count: path change.
    let moved = bytes(&stack(10, &[RawHop::quantize(5, ts0 + 50_000, 0, 0).unwrap()]));
    assert_eq!(f.on_int(&p, &moved, late + 200_000, 1, 1).unwrap().event, Event::PathChanged);
    let two = bytes(&stack(10, &[RawHop::quantize(5, ts0 + 60_000, 0, 0).unwrap(); 2]));
    assert_eq!(f.on_int(&p, &two, late + 210_000, 1, 1).unwrap().event, Event::PathChanged);
    // An empty stack is stale.
    assert_eq!(f.on_int(&p, &[0, 0, 0, 0], late + 220_000, 1, 1).unwrap().event, Event::Stale(StaleReason::NoHops));
    assert_eq!(RATES.len(), 15);
}
