//! `hpcc-cost`: the cost of one HPCC++ update.
//!
//! Builds a steady stream of realistic samples (100 Gb/s hops, T = 10 µs,
//! 8 samples per RTT, utilization 0.85–1.05, small queues, one commit per
//! RTT) for 1 and 5 hops, then times `HpccFlow::on_sample` (full-width
//! telemetry) and `HpccFlow::on_int` (Figure-4 parse + unwrap + update).
//!
//! * `hpcc-cost` prints ns per update (best of 7 runs of 2^20 updates).
//! * `hpcc-cost --callgrind --hops N --mode sample|wire --iters M` runs M
//!   updates through the `#[inline(never)]` function `measured_update`,
//!   for `valgrind --tool=callgrind --toggle-collect='*measured_update*'`
//!   (see rust/tools/bench/cost.sh).
//! * `hpcc-cost --callgrind --hops N --mode ack|ack-wire --iters M`: the
//!   same through `measured_ack`, one call of the module's controller
//!   (`SockCtl::on_ack` with the module's knobs), without and with a new
//!   response carrying the wire stack.

use std::hint::black_box;
use std::time::Instant;

use hpcc_core::control::{AckDecision, Conn, FlowCtl, RateSample, Response, SfcState, SockCtl};
use hpcc_core::knobs::Knobs;
use hpcc_core::law::{HopSample, HpccFlow, Outcome, Sample};
use hpcc_core::params::{HpccConfig, HpccParams};
use hpcc_core::wire::{self, IntStack, RawHop};
use hpcc_ref::gen::Rng;

const RING: usize = 4096;
const T: u64 = 10_000;
const B: u64 = 100_000_000_000;

struct Ring {
    hops: usize,
    now: Vec<u64>,
    ack: Vec<u32>,
    nxt: Vec<u32>,
    full: Vec<HopSample>,
    wire: Vec<[u8; wire::encoded_len(wire::MAX_HOPS)]>,
}

fn build(hops: usize) -> Ring {
    let mut rng = Rng::new(hops as u64);
    let bdp = B / 8 * T / 1_000_000_000;
    let mut r = Ring { hops, now: vec![], ack: vec![], nxt: vec![], full: vec![], wire: vec![] };
    let mut ts: Vec<u64> = (0..hops).map(|i| 1_000_000 * i as u64).collect();
    let mut tx: Vec<u64> = (0..hops).map(|i| 7_000_000 * i as u64).collect();
    let mut now = 1_000_000_000u64;
    let mut seq = 0u32;
    for _ in 0..RING {
        let dt = T / 8;
        now += dt;
        seq = seq.wrapping_add((bdp / 8) as u32);
        let mut st = IntStack { n_hops: hops as u8, path_id: 77, ..Default::default() };
        for h in 0..hops {
            let util = 0.85 + 0.2 * rng.unit();
            ts[h] += dt;
            tx[h] += (B as f64 / 8e9 * dt as f64 * util.min(1.0)) as u64;
            let q = if util > 1.0 { rng.range(0, bdp / 20) } else { 0 };
            let raw = RawHop::quantize(8, ts[h], tx[h], q).unwrap();
            st.hops[h] = raw;
            // The full-width stream carries the same (quantized) values.
            r.full.push(HopSample { rate_bps: B, ts_ns: ts[h] >> 1 << 1, tx_bytes: tx[h] >> 9 << 9, qlen_bytes: q >> 9 << 9 });
        }
        let mut buf = [0u8; wire::encoded_len(wire::MAX_HOPS)];
        wire::encode(&st, &mut buf).unwrap();
        r.wire.push(buf);
        r.now.push(now);
        r.nxt.push(seq);
        r.ack.push(seq.wrapping_sub(bdp as u32));
    }
    r
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Sample,
    Wire,
}

/// One update; kept out of line so callgrind can count exactly its cost.
#[inline(never)]
fn measured_update(f: &mut HpccFlow, p: &HpccParams, r: &Ring, i: usize, mode: Mode) -> Outcome {
    match mode {
        Mode::Sample => {
            let hops = &r.full[i * r.hops..(i + 1) * r.hops];
            f.on_sample(p, &Sample { now_ns: r.now[i], ack_seq: r.ack[i], snd_nxt: r.nxt[i], path_id: 77, hops })
        }
        Mode::Wire => {
            let len = wire::encoded_len(r.hops);
            match f.on_int(p, &r.wire[i][..len], r.now[i], r.ack[i], r.nxt[i]) {
                Ok(o) => o,
                Err(_) => unreachable!("valid stack"),
            }
        }
    }
}

/// One ACK through the controller; kept out of line for callgrind.
#[inline(never)]
fn measured_ack(s: &mut SockCtl, f: &mut FlowCtl, k: &Knobs, r: &Ring, i: usize, response: bool) -> AckDecision {
    let c = Conn {
        now_ns: r.now[i],
        mss: 1448,
        cwnd: 86,
        ssthresh: 86,
        srtt_us: 10,
        min_rtt_us: 10,
        packets_out: 80,
        in_flight: 80,
        snd_nxt: r.nxt[i],
        in_reduction: false,
        cwnd_limited: true,
        max_pacing_rate: u64::MAX,
    };
    let rs = RateSample { delivered: 86, interval_us: 10, prior_in_flight: 80, acked_sacked: 2, app_limited: false };
    let len = wire::encoded_len(r.hops);
    let resp = Response { rx_ns: r.now[i], snd_nxt: r.ack[i], int: &r.wire[i][..len] };
    s.on_ack(k, &c, Some(&rs), Some((f, response.then_some(&resp), &SfcState::default())))
}

/// Runs `iters` ACKs through the controller (every one with a response,
/// or none); returns elapsed ns.
fn drive_ack(r: &Ring, response: bool, iters: usize) -> f64 {
    let k = Knobs::DEFAULT;
    let c = Conn { mss: 1448, cwnd: 10, min_rtt_us: 10, srtt_us: 10, ..Conn::default() };
    let (mut s0, _) = SockCtl::init(&k, &c, false);
    let mut f0 = FlowCtl::new(&k, &c).expect("valid knobs");
    measured_ack(&mut s0, &mut f0, &k, r, 0, true);
    let (mut s, mut f) = (s0, f0.clone());
    let start = Instant::now();
    let mut i = 1;
    for _ in 0..iters {
        if i == RING {
            (s, f) = (s0, f0.clone());
            i = 1;
        }
        black_box(measured_ack(black_box(&mut s), &mut f, &k, r, black_box(i), response));
        i += 1;
    }
    start.elapsed().as_nanos() as f64
}

fn params() -> HpccParams {
    HpccConfig {
        base_rtt_ns: T,
        init_window_bytes: 125_000,
        min_window_bytes: 1_500,
        max_window_bytes: 500_000,
        ..HpccConfig::DEFAULT
    }
    .validate()
    .unwrap()
}

/// Runs `iters` updates; returns (elapsed ns, non-stale count).
fn drive(r: &Ring, p: &HpccParams, mode: Mode, iters: usize) -> (f64, usize) {
    // Flow state right after the ring's first (recording) sample; each pass
    // over the ring restarts from it, so counters never run backwards.
    let mut base = HpccFlow::new(p);
    measured_update(&mut base, p, r, 0, mode);
    let mut f = base.clone();
    let mut ok = 0;
    let start = Instant::now();
    let mut i = 1;
    for _ in 0..iters {
        if i == RING {
            f = base.clone();
            i = 1;
        }
        let o = measured_update(black_box(&mut f), p, r, black_box(i), mode);
        ok += usize::from(!black_box(o).is_stale());
        i += 1;
    }
    (start.elapsed().as_nanos() as f64, ok)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let p = params();
    if args.iter().any(|a| a == "--callgrind") {
        let hops: usize = get("--hops").and_then(|v| v.parse().ok()).unwrap_or(1);
        let iters: usize = get("--iters").and_then(|v| v.parse().ok()).unwrap_or(100_000);
        let r = build(hops);
        if let Some(m @ ("ack" | "ack-wire")) = get("--mode").as_deref() {
            drive_ack(&r, m == "ack-wire", iters);
            println!("calls {}", iters + 1);
            return;
        }
        let mode = if get("--mode").as_deref() == Some("wire") { Mode::Wire } else { Mode::Sample };
        let (_, ok) = drive(&r, &p, mode, iters);
        // `drive` calls measured_update once more, for the recording sample.
        println!("calls {}", iters + 1);
        assert!(ok > iters * 9 / 10);
        return;
    }
    println!("hops  path                        ns/update (best of 7 x 2^20)   non-stale");
    for hops in [1usize, 5] {
        let r = build(hops);
        for (mode, name) in [(Mode::Sample, "on_sample (full width)"), (Mode::Wire, "on_int (parse+unwrap+update)")] {
            let iters = 1 << 20;
            let mut best = f64::MAX;
            let mut ok = 0;
            for _ in 0..7 {
                let (ns, k) = drive(&r, &p, mode, iters);
                best = best.min(ns / iters as f64);
                ok = k;
            }
            println!("{hops:4}  {name:28} {best:8.1}                       {:.3}", ok as f64 / iters as f64);
        }
        for (response, name) in [(false, "controller, ACK alone"), (true, "controller, ACK + response")] {
            let iters = 1 << 20;
            let best = (0..7).map(|_| drive_ack(&r, response, iters) / iters as f64).fold(f64::MAX, f64::min);
            println!("{hops:4}  {name:28} {best:8.1}");
        }
    }
}
