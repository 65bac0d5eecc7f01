//! SFC in the core against f64 references and under random input:
//!
//! * the window cut ([`WindowCut::on_signal`]) equals
//!   `max(min, min(W, W_ref · eta · B·T / (B·T + q), eta · B·T / n)))`
//!   (the last term only when the receiver's flow count `n` is known)
//!   computed in f64,
//!   within 2 bytes (two floors), over random rates, RTTs, queues and
//!   signal times, and a round of signals never cuts below the deepest
//!   single cut from the round's reference (no compounding);
//! * the token bucket admits exactly what an f64 bucket admits, ±1;
//! * the parser and the access list take random and mutated bytes without
//!   panicking, and whatever parses re-encodes to the same bytes (except
//!   the reserved word, which is never read);
//! * the egress hook's parser takes random bytes and truncations without
//!   panicking, and the pause table agrees with a model that keeps every
//!   pause (a map from flow to deadline) whenever the model has room.

use hpcc_core::sfc::{self, Acl, FlowKey, PauseTable, Signal, TokenBucket, WindowCut};
use std::collections::HashMap;
use hpcc_ref::gen::Rng;

#[allow(clippy::too_many_arguments)]
fn reference(w_ref: f64, w: f64, q: f64, rate_bps: f64, t_ns: f64, eta: f64, min_w: f64, n: f64, floor: f64) -> f64 {
    let bdp = (rate_bps / 8.0 * t_ns / 1e9).floor().min((1u64 << 43) as f64);
    let q = if bdp > 0.0 { q.min(bdp * sfc::MAX_QUEUE_BDPS as f64) } else { q };
    let mut cut = if bdp + q > 0.0 { w_ref * eta * bdp / (bdp + q) } else { 0.0 };
    cut = cut.max(floor);
    if n > 0.0 {
        cut = cut.min(eta * bdp / n);
    }
    cut.min(u32::MAX as f64).max(min_w).min(w)
}

#[test]
fn window_cut_matches_f64_reference() {
    let mut rng = Rng::new(0x5fc);
    let rates = [100e6, 200e6, 1e9, 10e9, 25e9, 100e9, 400e9, 800e9];
    let mut worst = 0f64;
    for case in 0..2000 {
        let rate = rates[rng.range(0, rates.len() as u64 - 1) as usize];
        let t = rng.log_uniform(1e3, 1e8) as u64;
        let eta = rng.range(500_000, 1_000_000) as u32;
        let min_w = rng.range(0, 3000) as u32;
        let mut w = rng.log_uniform(1e3, 1e9) as u32;
        let mut c = WindowCut::default();
        let mut now = rng.range(0, 1 << 40);
        let (mut round_ref, mut round_end, mut hold_end, mut renew, mut quiet_ns) = (0u32, 0u64, 0u64, false, 0u64);
        let (mut anchor, mut confirmed, mut rounds) = (0u32, false, 0u8);
        for _ in 0..50 {
            now += rng.range(0, 2 * t);
            if rng.chance(0.5) {
                // A response in between, at or above eta or not.
                let congested = rng.chance(0.5);
                c.on_sample(congested);
                renew |= congested;
                confirmed |= congested;
            }
            let q = rng.log_uniform(1.0, 4e9) as u32;
            let n = if rng.chance(0.5) { 0 } else { rng.range(1, 2000) as u16 };
            // The signals' silence before this one (0: not measured).
            let gap = if rng.chance(0.3) { 0 } else { rng.log_uniform(1.0, 4.0 * t as f64) as u64 };
            // Signals alone: no deeper than 1/MAX_UNCONFIRMED_CUT of the
            // largest window since telemetry last confirmed congestion, in
            // at most MAX_UNCONFIRMED_ROUNDS rounds.
            if confirmed || anchor == 0 {
                (anchor, confirmed, rounds) = (w, false, 0);
            } else {
                anchor = anchor.max(w);
            }
            let quiet = gap == 0 || gap >= quiet_ns;
            if round_ref == 0
                || (rounds < sfc::MAX_UNCONFIRMED_ROUNDS && ((now >= hold_end && quiet) || (now >= round_end && renew)))
            {
                round_ref = w;
                round_end = now + t;
                renew = false;
                rounds += 1;
            }
            let bdp = (rate / 8.0 * t as f64 / 1e9).floor() as u64;
            let q_eff = if bdp == 0 { q } else { u64::from(q).min(bdp * sfc::MAX_QUEUE_BDPS).min(u64::from(u32::MAX)) as u32 };
            let drain = sfc::drain_ns(q_eff, rate as u64).min(u64::from(sfc::MAX_PAUSE_US) * 1000);
            hold_end = hold_end.max(now + drain + t);
            quiet_ns = drain + t;
            let got = c.on_signal(w, q, rate as u64, t, eta, min_w, now, n, gap);
            let floor = f64::from(anchor / sfc::MAX_UNCONFIRMED_CUT);
            let want = reference(round_ref as f64, w as f64, q as f64, rate, t as f64, eta as f64 / 1e6, min_w as f64, n as f64, floor);
            let err = (got as f64 - want).abs();
            assert!(err <= 2.0 + want * 1e-12, "case {case}: got {got}, want {want}");
            worst = worst.max(err);
            assert!(got <= w);
            w = got.max(1);
            // Grow between rounds as a flow would.
            if rng.chance(0.3) {
                w = w.saturating_mul(2);
            }
        }
    }
    eprintln!("window cut: worst error {worst:.3} bytes");
}

#[test]
fn a_round_of_signals_cuts_no_deeper_than_its_deepest_signal() {
    let mut rng = Rng::new(7);
    for _ in 0..1000 {
        let (rate, t, w0) = (1e9 as u64, 100_000u64, rng.range(10_000, 10_000_000) as u32);
        let mut c = WindowCut::default();
        let mut w = w0;
        let mut deepest = w0;
        for i in 0..rng.range(1, 20) {
            let q = rng.range(0, 1_000_000) as u32;
            let mut single = WindowCut::default();
            deepest = deepest.min(single.on_signal(w0, q, rate, t, 950_000, 1448, 0, 4, 0));
            w = c.on_signal(w, q, rate, t, 950_000, 1448, i * (t / 20), 4, 0);
        }
        assert_eq!(w, deepest);
    }
}

#[test]
fn token_bucket_matches_f64_bucket() {
    let mut rng = Rng::new(11);
    for _ in 0..200 {
        let rate = rng.range(1, 100_000) as u32;
        let burst = rng.range(1, 1000) as u32;
        let mut b = TokenBucket::new(0, burst);
        let (mut tokens, mut last, mut now) = (burst as f64, 0u64, 0u64);
        let (mut got, mut want) = (0u64, 0u64);
        for _ in 0..20_000 {
            now += rng.range(0, 2_000_000_000 / rate as u64);
            tokens = (tokens + (now - last) as f64 * 1e-9 * rate as f64).min(burst as f64);
            last = now;
            if tokens >= 1.0 {
                tokens -= 1.0;
                want += 1;
            }
            got += u64::from(b.admit(now, rate, burst));
        }
        assert!(got.abs_diff(want) <= 1, "rate {rate} burst {burst}: {got} vs {want}");
    }
}

#[test]
fn parser_and_acl_take_random_bytes() {
    let mut rng = Rng::new(0xf022);
    let mut good = [0u8; sfc::LEN];
    let s = Signal {
        saddr: "10.1.1.1".parse().unwrap(),
        daddr: "10.0.2.1".parse().unwrap(),
        l4proto: sfc::IPPROTO_TCP,
        sport: 1,
        dport: 2,
        speed: 1,
        pause_ns: 3,
        qlen: 4,
        switch_id: 5,
        port_id: 6,
        seq: 7,
    };
    sfc::encode(&s, &mut good).unwrap();
    let mut parsed = 0;
    for i in 0..300_000u32 {
        let mut b = vec![0u8; if i % 2 == 0 { sfc::LEN } else { rng.range(0, 100) as usize }];
        if i % 3 == 0 {
            rng.fill(&mut b);
        } else {
            let n = b.len().min(sfc::LEN);
            b[..n].copy_from_slice(&good[..n]);
            for _ in 0..rng.range(1, 3) {
                if !b.is_empty() {
                    let k = rng.range(0, b.len() as u64 - 1) as usize;
                    b[k] ^= 1 << rng.range(0, 7);
                }
            }
        }
        if let Ok(p) = sfc::parse(&b) {
            parsed += 1;
            let mut back = [0u8; sfc::LEN];
            sfc::encode(&p, &mut back).unwrap();
            back[sfc::OFF_RESERVED..sfc::OFF_RESERVED + 2].copy_from_slice(&b[sfc::OFF_RESERVED..sfc::OFF_RESERVED + 2]);
            assert_eq!(back.as_slice(), b.as_slice());
        }
        let text: String = b.iter().map(|&x| b"0123456789abcdef.:/, "[x as usize % 21] as char).collect();
        let _ = Acl::parse(&text);
    }
    assert!(parsed > 1000, "mutations that keep a valid signal: {parsed}");
}

#[test]
fn egress_parser_takes_random_bytes() {
    let mut rng = Rng::new(0xe9e5);
    let mut found = 0;
    for i in 0..300_000u32 {
        let mut b = vec![0u8; rng.range(0, sfc::EGRESS_KEY_LEN as u64) as usize];
        rng.fill(&mut b);
        if let Some(first) = b.first_mut() {
            // Half of them look like IPv4 or IPv6 with TCP or UDP.
            if i % 2 == 0 {
                *first = if i % 4 == 0 { 0x45 } else { 0x60 };
                let proto = if i % 8 < 4 { sfc::IPPROTO_TCP } else { sfc::IPPROTO_UDP };
                for off in [6, 9] {
                    if let Some(x) = b.get_mut(off) {
                        *x = proto;
                    }
                }
            }
        }
        if let Some(k) = sfc::egress_key(&b) {
            found += 1;
            assert!(k.proto == sfc::IPPROTO_TCP || k.proto == sfc::IPPROTO_UDP);
            assert!(b.len() >= 24, "ports read within the packet");
        }
    }
    assert!(found > 10_000, "{found}");
}

#[test]
fn pause_table_matches_a_model() {
    // Every pause the table takes it holds until its deadline, extended
    // never shortened; it refuses one only when the source holds its
    // share, or every slot the key may use is live.
    let mut rng = Rng::new(0x9a5e);
    for _ in 0..200 {
        let t = PauseTable::default();
        let mut model: HashMap<u16, (u64, u64)> = HashMap::new(); // flow -> (deadline, source)
        let mut now = rng.range(0, 1 << 40);
        let flows = rng.range(1, 3 * sfc::PAUSE_SLOTS as u64) as u16;
        let sig = Signal {
            saddr: "10.1.1.1".parse().unwrap(),
            daddr: "10.0.2.1".parse().unwrap(),
            l4proto: sfc::IPPROTO_UDP,
            sport: 1,
            dport: 2,
            speed: 12,
            pause_ns: 0,
            qlen: 0,
            switch_id: 1,
            port_id: 1,
            seq: 0,
        };
        let hash = |f: u16| u64::from(f).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7;
        for _ in 0..2000 {
            now += rng.range(0, 2000);
            let f = rng.range(0, u64::from(flows)) as u16;
            let k = FlowKey { proto: sfc::IPPROTO_UDP, sport: f, ..FlowKey::default() };
            model.retain(|_, (u, _)| *u > now);
            if rng.range(0, 1) == 0 {
                let until = now + rng.range(0, 10_000);
                let src = rng.range(0, 7);
                match t.insert(&k, hash(f), until, now, src, &sig) {
                    Ok(()) => {
                        let e = model.entry(f).or_insert((0, src));
                        e.0 = e.0.max(until);
                    }
                    Err(sfc::Reject::SourceQuota) => {
                        assert!(!model.contains_key(&f));
                        let held = model.values().filter(|(_, s)| *s == src).count();
                        assert_eq!(held, sfc::PAUSES_PER_SOURCE, "quota refused below the share");
                    }
                    Err(sfc::Reject::TableFull) => {
                        assert!(!model.contains_key(&f));
                        assert!(model.len() >= sfc::PAUSE_PROBE, "full with {} live", model.len());
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
            let want = model.get(&f).map(|(u, _)| *u).filter(|&u| u > now);
            assert_eq!(t.until(&k, hash(f), now), want);
            assert!(model.values().all(|&(u, _)| u <= t.latest() || t.latest() == 0 && u <= now));
        }
    }
}
