//! Deterministic, structure-aware fuzzing of wire decode + update.
//!
//! cargo-fuzz needs a nightly toolchain, which this project does not use,
//! so this is the equivalent run inside `cargo test` (debug build, so every
//! arithmetic overflow would panic too). Each execution is one event fed to
//! a flow: a random byte buffer, a mutated valid INT stack (bit flips, hop
//! count, path ID, reserved rate codes, truncation), or a full-width sample
//! with extreme values; flows run under random and extreme parameters.
//! After each execution the invariants are checked: no panic, the window
//! stays in [min, max], stale events and decode errors change nothing, the
//! pacing rate is W/T.
//!
//! Default: 2,000,000 executions. More: `HPCC_FUZZ_EXECS=50000000 cargo test
//! --release -p hpcc-core --test fuzz -- --ignored --nocapture`.

use hpcc_core::fixed::U_MAX;
use hpcc_core::law::{Event, HopSample, HpccFlow, Sample};
use hpcc_core::params::{HpccConfig, HpccParams, Mode};
use hpcc_core::wire::{self, IntStack, RawHop, MAX_HOPS};
use hpcc_ref::gen::Rng;

fn pick(rng: &mut Rng, choices: &[u64]) -> u64 {
    choices[rng.range(0, choices.len() as u64 - 1) as usize]
}

fn extreme(rng: &mut Rng) -> u64 {
    match rng.range(0, 5) {
        0 => pick(rng, &[0, 1, 2, u64::MAX, u64::MAX - 1, i64::MAX as u64, 1 << 63, 1 << 32, 1 << 48]),
        1 => rng.next_u64(),
        2 => rng.next_u64() >> rng.range(0, 63),
        _ => rng.range(0, 1 << 20),
    }
}

fn random_params(rng: &mut Rng) -> HpccParams {
    loop {
        let init = pick(rng, &[1, 2, 1500, 65_536, 1 << 20, 1 << 31]) as u32;
        let t_any = rng.range(1, 1_000_000_000);
        let eta_any = rng.range(1, 1_000_000);
        let c = HpccConfig {
            base_rtt_ns: pick(rng, &[1, 1_000, 5_000, 10_000_000, 1_000_000_000, t_any]),
            eta_ppm: pick(rng, &[1, 500_000, 950_000, 999_999, 1_000_000, eta_any]) as u32,
            max_stage: pick(rng, &[0, 1, 5, u32::MAX as u64]) as u32,
            wai_bytes: pick(rng, &[0, 1, 1000, 1 << 31]) as u32,
            expected_flows: pick(rng, &[1, 16, u32::MAX as u64]) as u32,
            init_window_bytes: init,
            min_window_bytes: (init >> rng.range(0, 31)).max(1),
            max_window_bytes: init.saturating_mul(1 << rng.range(0, 8)).min(1 << 31),
            mode: [Mode::Sender, Mode::Receiver, Mode::Probe][rng.range(0, 2) as usize],
            path_cap_pct: pick(rng, &[0, 1, 100, 1000]) as u32,
            u_weight_pct: pick(rng, &[0, 1, 50, 100, 101]) as u32,
            max_increase_pct: pick(rng, &[0, 100, 101, 125, 1000, 1001]) as u32,
            low_u_pct: pick(rng, &[0, 1, 50, 75, 100, 101]) as u32,
            qlen_min_filter: rng.range(0, 1) == 1,
            precommit_ref: rng.range(0, 1) == 1,
        };
        if let Ok(p) = c.validate() {
            return p;
        }
    }
}

struct Fuzzer {
    rng: Rng,
    last_stack: IntStack,
    execs: u64,
    stale: u64,
    errors: u64,
    updates: u64,
}

impl Fuzzer {
    fn wire_buf(&mut self) -> Vec<u8> {
        let rng = &mut self.rng;
        match rng.range(0, 9) {
            0 => {
                // Random bytes.
                let mut b = vec![0u8; rng.range(0, 80) as usize];
                rng.fill(&mut b);
                b
            }
            1..=3 => {
                // A fresh plausible stack on one of few paths.
                let n = rng.range(0, MAX_HOPS as u64) as usize;
                let mut s = IntStack { n_hops: n as u8, path_id: rng.range(0, 3) as u16, ..Default::default() };
                for h in s.hops.iter_mut().take(n) {
                    *h = RawHop::from_word(rng.next_u64());
                    h.rate = rng.range(1, 11) as u8;
                }
                self.last_stack = s;
                let mut b = vec![0u8; wire::encoded_len(n)];
                wire::encode(&s, &mut b).unwrap();
                b
            }
            _ => {
                // Evolve the previous stack: small counter steps, wraps,
                // occasional corruption.
                let mut s = self.last_stack;
                for h in s.hops.iter_mut().take(usize::from(s.n_hops)) {
                    let (a, b) = (rng.range(0, 24), rng.range(0, 20));
                    h.ts = h.ts.wrapping_add(rng.range(0, 1 << a) as u32) & 0xffffff;
                    h.tx = h.tx.wrapping_add(rng.range(0, 1 << b) as u32) & 0xfffff;
                    h.qlen = rng.next_u64() as u16 >> rng.range(0, 15);
                }
                self.last_stack = s;
                let mut b = vec![0u8; wire::encoded_len(usize::from(s.n_hops)) + rng.range(0, 4) as usize];
                wire::encode(&s, &mut b).unwrap();
                if rng.chance(0.05) && !b.is_empty() {
                    let i = rng.range(0, b.len() as u64 - 1) as usize;
                    b[i] ^= 1 << rng.range(0, 7);
                }
                if rng.chance(0.02) {
                    b.truncate(rng.range(0, b.len() as u64) as usize);
                }
                b
            }
        }
    }

    fn check(&self, p: &HpccParams, f: &HpccFlow, before: &HpccFlow, event: Option<Event>, w: u32, pace: u64) {
        let c = p.config();
        assert!(f.window_bytes() >= c.min_window_bytes.min(c.init_window_bytes));
        assert!(f.window_bytes() <= c.max_window_bytes);
        assert!(f.u_q40() <= U_MAX);
        match event {
            None | Some(Event::Stale(_)) => assert_eq!(f, before, "stale or error changed the state"),
            Some(_) => {}
        }
        assert_eq!(w, f.window_bytes());
        assert_eq!(pace, f.pacing_rate(p));
    }

    fn run(&mut self, execs: u64) {
        while self.execs < execs {
            let p = random_params(&mut self.rng);
            let mut f = HpccFlow::new(&p);
            let mut now = extreme(&mut self.rng);
            let events = self.rng.range(1, 200);
            for _ in 0..events {
                let before = f.clone();
                now = if self.rng.chance(0.95) {
                    let k = self.rng.range(0, 26);
                    now.wrapping_add(self.rng.range(0, 1 << k))
                } else {
                    extreme(&mut self.rng)
                };
                let ack = self.rng.next_u64() as u32;
                let nxt = self.rng.next_u64() as u32;
                if self.rng.chance(0.7) {
                    let b = self.wire_buf();
                    match f.on_int(&p, &b, now, ack, nxt) {
                        Ok(o) => {
                            self.count(&o.event);
                            self.check(&p, &f, &before, Some(o.event), o.window_bytes, o.pacing_rate);
                        }
                        Err(_) => {
                            self.errors += 1;
                            self.check(&p, &f, &before, None, f.window_bytes(), f.pacing_rate(&p));
                        }
                    }
                } else {
                    let n = if self.rng.chance(0.02) { MAX_HOPS + 1 } else { self.rng.range(0, MAX_HOPS as u64) as usize };
                    let hops: Vec<HopSample> = (0..n)
                        .map(|_| HopSample {
                            rate_bps: extreme(&mut self.rng),
                            ts_ns: extreme(&mut self.rng),
                            tx_bytes: extreme(&mut self.rng),
                            qlen_bytes: extreme(&mut self.rng),
                        })
                        .collect();
                    let s = Sample { now_ns: now, ack_seq: ack, snd_nxt: nxt, path_id: self.rng.range(0, 2) as u16, hops: &hops };
                    let o = f.on_sample(&p, &s);
                    self.count(&o.event);
                    self.check(&p, &f, &before, Some(o.event), o.window_bytes, o.pacing_rate);
                }
                self.execs += 1;
            }
        }
    }

    fn count(&mut self, e: &Event) {
        match e {
            Event::Stale(_) => self.stale += 1,
            Event::Updated | Event::Committed => self.updates += 1,
            _ => {}
        }
    }
}

fn fuzz(seed: u64, execs: u64) -> Fuzzer {
    let mut fz = Fuzzer { rng: Rng::new(seed), last_stack: IntStack::default(), execs: 0, stale: 0, errors: 0, updates: 0 };
    fz.run(execs);
    println!(
        "fuzz: {} executions (seed {seed}): {} updates, {} stale, {} decode errors, 0 panics",
        fz.execs, fz.updates, fz.stale, fz.errors
    );
    fz
}

#[test]
fn fuzz_wire_decode_and_update_never_panics() {
    let fz = fuzz(0x5eed, 2_000_000);
    // Every path must be reached often, or the run proves little.
    assert!(fz.updates > 250_000 && fz.stale > 100_000 && fz.errors > 50_000);
}

#[test]
#[ignore]
fn fuzz_long() {
    let execs = std::env::var("HPCC_FUZZ_EXECS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000_000);
    let seed = std::env::var("HPCC_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    fuzz(seed, execs);
}
