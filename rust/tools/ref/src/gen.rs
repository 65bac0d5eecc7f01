//! Deterministic pseudo-random configurations and telemetry traces.
//!
//! Traces mimic what a sender sees: per-hop switch clocks that advance with
//! jitter and skew, txBytes that grow at a time-varying utilization of each
//! hop's rate, queues that build when a hop is over-subscribed and drain
//! otherwise, ACK sequence numbers that advance about one window per RTT
//! (and wrap), plus rare duplicates, reordered samples, long gaps and path
//! changes. Counters start at random points, some close to `u64` wrap.

use hpcc_core::law::{HopSample, Sample};
use hpcc_core::params::{HpccConfig, Mode};
use hpcc_core::wire::{MAX_HOPS, RATES};

/// SplitMix64: small, fast, good enough for tests; same seed, same stream.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi.wrapping_sub(lo).wrapping_add(1);
        if span == 0 {
            return self.next_u64();
        }
        lo.wrapping_add(self.next_u64() % span)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Log-uniform in `[lo, hi]`.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.unit() * (hi.ln() - lo.ln())).exp()
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            for (d, s) in chunk.iter_mut().zip(r.iter()) {
                *d = *s;
            }
        }
    }
}

/// A random, valid configuration together with the nominal bottleneck
/// rate its windows were sized for.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The configuration (valid: `validate()` succeeds).
    pub cfg: HpccConfig,
    /// Nominal link rate in bits/s (1 Gb/s ..= 800 Gb/s).
    pub rate_bps: u64,
}

/// Random parameters over the supported ranges: T in [1 µs, 10 ms], rates
/// in [1, 800] Gb/s, eta in [0.5, 1], maxStage in 0..=10, windows around
/// one BDP (up to 2^31 bytes), either mode, explicit or default `W_ai`.
pub fn random_setup(rng: &mut Rng) -> Setup {
    loop {
        let t = rng.log_uniform(1_000.0, 10_000_000.0) as u64;
        let rate = rng.log_uniform(1e9, 8e11) as u64;
        let bdp = (rate as f64 * t as f64 / 8e9).max(64.0);
        let init = (bdp * rng.log_uniform(0.5, 2.0)).min((1u64 << 31) as f64) as u32;
        let min = ((f64::from(init) * rng.log_uniform(1e-4, 0.5)) as u32).max(1);
        let max = (f64::from(init) * rng.log_uniform(1.0, 64.0)).min((1u64 << 31) as f64) as u32;
        let eta_ppm = rng.range(500_000, 1_000_000) as u32;
        let (wai, n) = if rng.chance(0.5) {
            (0, rng.range(1, 64) as u32)
        } else {
            ((rng.log_uniform(1.0, f64::from(init) / 4.0 + 1.0)) as u32, 0)
        };
        let cfg = HpccConfig {
            base_rtt_ns: t.max(1),
            eta_ppm,
            max_stage: rng.range(0, 10) as u32,
            wai_bytes: wai.max(if n == 0 { 1 } else { 0 }),
            expected_flows: n,
            init_window_bytes: init,
            min_window_bytes: min.min(init),
            max_window_bytes: max.max(init),
            mode: [Mode::Sender, Mode::Receiver, Mode::Probe][rng.range(0, 2) as usize],
            path_cap_pct: if rng.chance(0.5) { 0 } else { rng.range(50, 400) as u32 },
            u_weight_pct: if rng.chance(0.5) { 100 } else { rng.range(1, 100) as u32 },
            max_increase_pct: if rng.chance(0.5) { 0 } else { rng.range(101, 400) as u32 },
            low_u_pct: if rng.chance(0.5) { 0 } else { rng.range(1, 100) as u32 },
            qlen_min_filter: rng.chance(0.5),
            precommit_ref: rng.chance(0.5),
        };
        if cfg.validate().is_ok() {
            return Setup { cfg, rate_bps: rate };
        }
    }
}

/// One event of a trace (an owned [`Sample`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Host time, ns.
    pub now_ns: u64,
    /// ACK sequence number.
    pub ack_seq: u32,
    /// `snd_nxt`.
    pub snd_nxt: u32,
    /// Path ID.
    pub path_id: u16,
    /// Hops.
    pub hops: Vec<HopSample>,
}

impl TraceEvent {
    /// Borrowed view for the law.
    pub fn sample(&self) -> Sample<'_> {
        Sample {
            now_ns: self.now_ns,
            ack_seq: self.ack_seq,
            snd_nxt: self.snd_nxt,
            path_id: self.path_id,
            hops: &self.hops,
        }
    }
}

#[derive(Debug, Clone)]
struct HopState {
    rate: u64,
    ts: u64,
    tx: u64,
    qlen: f64,
    util: f64,
    skew: f64,
    skew_load: f64,
}

fn new_path(rng: &mut Rng, nominal: u64, t_ns: u64) -> (u16, Vec<HopState>) {
    let n = if rng.chance(0.9) { rng.range(1, 5) } else { rng.range(1, MAX_HOPS as u64) } as usize;
    let hops = (0..n)
        .map(|_| {
            let rate = match rng.range(0, 9) {
                0..=5 => nominal,
                6..=7 => RATES[rng.range(0, RATES.len() as u64 - 1) as usize].mbps * 1_000_000,
                _ => rng.range(1_000_000_000, 800_000_000_000),
            };
            let near_wrap = rng.chance(0.2);
            let start = |rng: &mut Rng| {
                if near_wrap {
                    u64::MAX - rng.range(0, 1 << 40)
                } else {
                    rng.next_u64() >> 2
                }
            };
            let bdp = rate as f64 * t_ns as f64 / 8e9;
            HopState {
                rate,
                ts: start(rng),
                tx: start(rng),
                qlen: if rng.chance(0.5) { 0.0 } else { bdp * rng.unit() },
                util: rng.unit() * 1.2,
                skew: 1.0 + (rng.unit() - 0.5) * 1e-4,
                skew_load: rng.unit() * 0.3,
            }
        })
        .collect();
    (rng.range(0, 0xfff) as u16, hops)
}

/// An event source for one flow. [`TraceGen::next`] either runs open loop
/// (each hop's utilization is a random walk) or closed loop: given the
/// flow's current window, the flow's own rate `W/T` plus a random
/// background load makes each hop's utilization, so the window settles where
/// the law puts it instead of drifting to a bound.
#[derive(Debug, Clone)]
pub struct TraceGen {
    setup: Setup,
    bdp: f64,
    path_id: u16,
    hops: Vec<HopState>,
    now: u64,
    snd_nxt: u32,
    recent: Vec<TraceEvent>,
}

impl TraceGen {
    /// A generator for `setup`, with a random first path.
    pub fn new(rng: &mut Rng, setup: &Setup) -> Self {
        let t = setup.cfg.base_rtt_ns;
        let (path_id, hops) = new_path(rng, setup.rate_bps, t);
        Self {
            setup: *setup,
            bdp: (setup.rate_bps as f64 * t as f64 / 8e9).max(1.0),
            path_id,
            hops,
            now: rng.range(0, 1 << 50),
            snd_nxt: rng.next_u64() as u32,
            recent: Vec::new(),
        }
    }

    /// The next event; `window` (bytes) closes the loop when given.
    pub fn next(&mut self, rng: &mut Rng, window: Option<f64>) -> TraceEvent {
        let e = self.make(rng, window);
        self.recent.push(e.clone());
        if self.recent.len() > 3 {
            self.recent.remove(0);
        }
        e
    }

    fn make(&mut self, rng: &mut Rng, window: Option<f64>) -> TraceEvent {
        let t = self.setup.cfg.base_rtt_ns;
        let r = rng.unit();
        if r < 0.004 {
            if let Some(prev) = self.recent.last() {
                // Duplicate of the previous sample: Δts = 0.
                let mut e = prev.clone();
                e.now_ns += 1;
                return e;
            }
        }
        if r < 0.008 && self.recent.len() >= 3 {
            // A reordered older sample.
            let mut e = self.recent[0].clone();
            e.now_ns = self.now;
            return e;
        }
        if r < 0.010 {
            let (p, h) = new_path(rng, self.setup.rate_bps, t);
            self.path_id = p;
            self.hops = h;
        }
        let dt = if rng.chance(0.01) {
            rng.log_uniform(t as f64, 1e9) as u64
        } else {
            rng.log_uniform(t as f64 / 200.0, t as f64 * 4.0).max(1.0) as u64
        };
        self.now += dt;
        let bdp = self.bdp;
        let mut sample = Vec::with_capacity(self.hops.len());
        for h in self.hops.iter_mut() {
            let bytes_per_ns = h.rate as f64 / 8e9;
            match window {
                Some(w) => {
                    // Own rate W/T plus a wandering background load.
                    if rng.chance(0.2) {
                        h.skew_load = (h.skew_load + (rng.unit() - 0.5) * 0.2).clamp(0.0, 0.6);
                    }
                    h.util = w / t as f64 / bytes_per_ns + h.skew_load + (rng.unit() - 0.5) * 0.05;
                }
                None => {
                    if rng.chance(0.2) {
                        h.util = (h.util + (rng.unit() - 0.5) * 0.4).clamp(0.0, 1.3);
                    }
                }
            }
            let dts = ((dt as f64 * h.skew) as u64 + rng.range(0, (dt / 20).max(1))).max(1);
            let sent = bytes_per_ns * dts as f64 * h.util.clamp(0.0, 1.0);
            h.qlen = (h.qlen + (h.util - 1.0) * bytes_per_ns * dts as f64).clamp(0.0, 16.0 * bdp);
            h.ts = h.ts.wrapping_add(dts);
            h.tx = h.tx.wrapping_add(sent as u64);
            sample.push(HopSample {
                rate_bps: h.rate,
                ts_ns: h.ts,
                tx_bytes: h.tx,
                qlen_bytes: h.qlen as u64,
            });
        }
        let w = window.unwrap_or(bdp);
        self.snd_nxt = self.snd_nxt.wrapping_add((w * dt as f64 / t as f64 * (0.5 + rng.unit())) as u32);
        let ack_seq = self.snd_nxt.wrapping_sub((w * (0.5 + rng.unit())) as u32);
        TraceEvent { now_ns: self.now, ack_seq, snd_nxt: self.snd_nxt, path_id: self.path_id, hops: sample }
    }
}

/// An open-loop random trace of `len` events for `setup`.
pub fn random_trace(rng: &mut Rng, setup: &Setup, len: usize) -> Vec<TraceEvent> {
    let mut g = TraceGen::new(rng, setup);
    (0..len).map(|_| g.next(rng, None)).collect()
}
