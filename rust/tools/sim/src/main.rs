//! `hpcc-scenario`: the fluid model's figures (`-v`: per-RTT tables).
//!
//! * default, or `--profile module|drafts [--set KNOB=VALUE ...]
//!   [--incumbents N] [--probe-backlog BYTES] [--host-delay-us US]
//!   [--csv FILE]`: every sender runs the module's controller with that
//!   profile's knobs, on the VM bench's path (one flow; N flows, 3 by
//!   default, and one more joining, whose per-RTT rates `--csv` writes),
//!   each probe meeting BYTES of backlog on average on top of the fluid
//!   queue (0 by default; `ModuleScenario::probe_backlog_bytes`), every ACK
//!   and response US later at the sender (0 by default, a multiple of 10;
//!   `ModuleScenario::host_delay_ns`);
//! * `--law`: the drafts' law alone on the standard 100 Gb/s scenarios
//!   (per-ACK samples, no probes);
//! * `--trace`: prints, as replay JSONL, the samples flow 0 receives in a
//!   short late-joiner run (the shipped example trace
//!   rust/tools/replay/examples/trace.jsonl).

use hpcc_core::knobs::Knobs;
use hpcc_sim::module::{self, ModuleScenario};
use hpcc_sim::{equilibrium_util, fair_rtt, incast, jain, late_joiner, mean, run, settle_rtt, Run, Scenario};

const BDP: f64 = 125_000.0;

/// The per-RTT table on the standard 100 Gb/s scenarios.
fn table(r: &Run, every: usize) {
    table_in(r, every, BDP, "Gb/s", 1e9);
}

fn shares(r: &Run, from: usize, to: usize) -> Vec<f64> {
    let n = r.rtts[from].flow_bps.len();
    (0..n).map(|i| mean(r, from, to, |s| s.flow_bps[i]) / 1e9).collect()
}

fn incast_report(n: usize, expected: u32, wire: bool, verbose: bool) {
    let sc: Scenario = incast(n, 200, wire, expected);
    let r = run(&sc);
    let target = equilibrium_util(&sc, n);
    println!(
        "== {n} flows start together at line rate; 100 Gb/s, T = 10 us, eta = 0.95, maxStage = 5, \
         W_ai = W_init(1-eta)/{expected} = {} B; {}",
        sc.cfg.validate().unwrap().wai_bytes(),
        if wire { "Figure-4 wire path" } else { "full-width samples" }
    );
    if verbose {
        table(&r, 10);
    }
    let first: Vec<String> = r.rtts[0].sent_bps.iter().map(|b| format!("{:.1}", b / 1e9)).collect();
    println!("  first-RTT sending rate per flow: {} Gb/s", first.join(", "));
    println!("  peak queue: {:.2} BDP", r.rtts.iter().map(|s| s.queue_max).fold(0.0, f64::max) / BDP);
    println!("  predicted equilibrium utilization eta + n*W_ai/BDP = {target:.4}");
    println!(
        "  settled (utilization within 0.01 of it, mean queue < 0.01 BDP, from then on) at RTT {:?}",
        settle_rtt(&r, 0, target, 0.01, 0.01 * BDP)
    );
    let sh = shares(&r, 20, 200);
    println!(
        "  RTTs 20..200: utilization {:.4}, mean queue {:.5} BDP, max queue {:.4} BDP, Jain {:.4}",
        mean(&r, 20, 200, |s| s.util),
        mean(&r, 20, 200, |s| s.queue_mean) / BDP,
        r.rtts[20..].iter().map(|s| s.queue_max).fold(0.0, f64::max) / BDP,
        jain(&sh)
    );
}

fn joiner_report(inc: usize, expected: u32, wire: bool, verbose: bool) {
    let join: usize = 50;
    let rtts: usize = 1000;
    let sc = late_joiner(inc, join as u64, rtts as u64, wire, expected);
    let r = run(&sc);
    println!(
        "== {inc} flow(s), one more joins at line rate at RTT {join}; W_ai = {} B; {}",
        sc.cfg.validate().unwrap().wai_bytes(),
        if wire { "Figure-4 wire path" } else { "full-width samples" }
    );
    if verbose {
        table(&r, 25);
    }
    let fair = |s: &hpcc_sim::RttStat| s.flow_bps.iter().sum::<f64>() / s.flow_bps.len() as f64;
    let first = &r.rtts[join + 1];
    println!(
        "  RTT {}: new flow at {:.2}x its fair share; peak queue after join {:.2} BDP",
        join + 1,
        first.flow_bps[inc] / fair(first),
        r.rtts[join..].iter().map(|s| s.queue_max).fold(0.0, f64::max) / BDP
    );
    for tol in [0.2, 0.1, 0.05] {
        println!(
            "  new flow within {:>2.0}% of fair share from RTT {:?} on",
            tol * 100.0,
            fair_rtt(&r, join, inc, tol).map(|k| format!("{k} ({} RTTs after joining)", k - join))
        );
    }
    let sh = shares(&r, rtts - 50, rtts);
    println!(
        "  last 50 RTTs: Gb/s per flow {:.2?}, Jain {:.4}, utilization {:.4}, mean queue {:.5} BDP",
        sh,
        jain(&sh),
        mean(&r, rtts - 50, rtts, |s| s.util),
        mean(&r, rtts - 50, rtts, |s| s.queue_mean) / BDP
    );
}

/// The module's controller on the VM bench's path (100 Mbit/s, T = 2 ms)
/// as `base` sets it up (knobs, probe backlog, host delay): one flow, then
/// `inc` flows (3 by default) with one more joining; `csv`: a file for the
/// join run's per-RTT rates (`rtt,util,queue_bdp,mbps...`).
fn module_report(name: &str, base: &ModuleScenario, verbose: bool, inc: usize, csv: Option<&str>) {
    let t = base.base_rtt_ns;
    let one = ModuleScenario { starts_ns: vec![0], duration_ns: 400 * t, ..base.clone() };
    let bdp = one.bdp();
    let r = module::run(&one);
    println!("== profile {name}: 1 flow, 100 Mbit/s, T = 2 ms, BDP {bdp:.0} B");
    if verbose {
        table_bdp(&r, 20, bdp);
    }
    println!(
        "  RTTs 100..400: utilization {:.4}, mean queue {:.4} BDP, max queue {:.4} BDP",
        mean(&r, 100, 400, |s| s.util),
        mean(&r, 100, 400, |s| s.queue_mean) / bdp,
        r.rtts[100..].iter().map(|s| s.queue_max).fold(0.0, f64::max) / bdp
    );
    let join = 200usize;
    let rtts = 800usize;
    let mut starts = vec![0; inc];
    starts.push(join as u64 * t);
    let sc = ModuleScenario { starts_ns: starts, duration_ns: rtts as u64 * t, ..base.clone() };
    let r = module::run(&sc);
    println!("== profile {name}: {inc} flows, one more joins at RTT {join}");
    if let Some(path) = csv {
        let mut out = String::from("rtt,util,queue_bdp");
        (0..=inc).for_each(|i| out.push_str(&format!(",flow{i}_mbps")));
        out.push('\n');
        for (k, s) in r.rtts.iter().enumerate() {
            out.push_str(&format!("{k},{:.4},{:.4}", s.util, s.queue_mean / bdp));
            s.flow_bps.iter().for_each(|b| out.push_str(&format!(",{:.3}", b / 1e6)));
            out.push('\n');
        }
        if let Err(e) = std::fs::write(path, out) {
            eprintln!("--csv {path}: {e}");
            std::process::exit(1);
        }
    }
    if verbose {
        table_bdp(&r, 20, bdp);
    }
    let jain_from = (join..rtts).find(|&k| r.rtts[k..].iter().all(|s| jain(&s.flow_bps) >= 0.95));
    println!(
        "  Jain >= 0.95 (per RTT, from then on) from RTT {:?}; new flow within 10% of fair share from {:?}",
        jain_from.map(|k| format!("{k} ({} RTTs after the join)", k - join)),
        fair_rtt(&r, join, inc, 0.1).map(|k| format!("{k} ({} RTTs after the join)", k - join))
    );
    println!(
        "  last 100 RTTs: utilization {:.4}, mean queue {:.4} BDP, Jain {:.4}",
        mean(&r, rtts - 100, rtts, |s| s.util),
        mean(&r, rtts - 100, rtts, |s| s.queue_mean) / bdp,
        jain(&shares(&r, rtts - 100, rtts))
    );
}

/// The per-RTT table on the VM bench's path (BDP `bdp`, Mb/s).
fn table_bdp(r: &Run, every: usize, bdp: f64) {
    table_in(r, every, bdp, "Mb/s", 1e6);
}

/// Per-RTT utilization, queue in BDPs, rates per flow in `unit` (bits/s
/// divided by `scale`) and windows: every `every`th RTT and the first 6.
fn table_in(r: &Run, every: usize, bdp: f64, unit: &str, scale: f64) {
    println!("  rtt   util  queue_mean/BDP  queue_max/BDP  {unit} per flow   windows");
    for (k, s) in r.rtts.iter().enumerate() {
        if k % every == 0 || k < 6 {
            let rates: Vec<String> = s.flow_bps.iter().map(|b| format!("{:6.2}", b / scale)).collect();
            println!(
                "  {k:4} {:6.3} {:14.4} {:14.4}  {}  {:?}",
                s.util,
                s.queue_mean / bdp,
                s.queue_max / bdp,
                rates.join(" "),
                s.window
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--law" || a == "--trace") {
        let name = args.iter().position(|a| a == "--profile").map_or("module", |i| {
            args.get(i + 1).map_or("", String::as_str)
        });
        let Some(mut k) = Knobs::profile(name) else {
            eprintln!("--profile {name:?}: expected module or drafts");
            std::process::exit(2);
        };
        // --set KNOB=VALUE (repeatable): a module parameter, as sysfs takes it.
        for kv in args.windows(2).filter(|w| w[0] == "--set").map(|w| &w[1]) {
            let ok = kv.split_once('=').and_then(|(n, v)| Some(k.set(n, v.parse().ok()?)));
            if ok != Some(true) {
                eprintln!("--set {kv:?}: expected KNOB=VALUE with a module parameter's name");
                std::process::exit(2);
            }
        }
        if let Err(e) = k.validate() {
            eprintln!("knobs refused: {e}");
            std::process::exit(2);
        }
        let after = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
        let inc = match after("--incumbents").map(|v| v.parse::<usize>()) {
            None => 3,
            Some(Ok(n)) if (1..=64).contains(&n) => n,
            Some(_) => {
                eprintln!("--incumbents: expected 1..64");
                std::process::exit(2);
            }
        };
        let backlog = match after("--probe-backlog").map(|v| v.parse::<u32>()) {
            None => 0,
            Some(Ok(b)) => b,
            Some(Err(_)) => {
                eprintln!("--probe-backlog: expected bytes");
                std::process::exit(2);
            }
        };
        let host_us = match after("--host-delay-us").map(|v| v.parse::<u64>()) {
            None => 0,
            Some(Ok(us)) if us % 10 == 0 && us <= 1_000_000 => us,
            Some(_) => {
                eprintln!("--host-delay-us: expected a multiple of 10 up to 10^6");
                std::process::exit(2);
            }
        };
        let base = ModuleScenario {
            probe_backlog_bytes: backlog,
            host_delay_ns: host_us * 1000,
            ..ModuleScenario::vm_bench(Vec::new(), 0, k)
        };
        module_report(name, &base, args.iter().any(|a| a == "-v"), inc, after("--csv").map(String::as_str));
        return;
    }
    if args.iter().any(|a| a == "--trace") {
        let mut sc = late_joiner(1, 10, 40, false, 16);
        sc.record_flow0 = true;
        for e in run(&sc).trace {
            let hops: Vec<String> = e
                .hops
                .iter()
                .map(|h| {
                    format!(
                        "{{\"rate_bps\":{},\"ts_ns\":{},\"tx_bytes\":{},\"qlen_bytes\":{}}}",
                        h.rate_bps, h.ts_ns, h.tx_bytes, h.qlen_bytes
                    )
                })
                .collect();
            println!(
                "{{\"now_ns\":{},\"ack_seq\":{},\"snd_nxt\":{},\"path_id\":{},\"hops\":[{}]}}",
                e.now_ns,
                e.ack_seq,
                e.snd_nxt,
                e.path_id,
                hops.join(",")
            );
        }
        return;
    }
    let v = args.iter().any(|a| a == "-v");
    for wire in [false, true] {
        incast_report(4, 16, wire, v);
        incast_report(4, 4, wire, v);
        joiner_report(3, 16, wire, v);
        joiner_report(1, 16, wire, v);
    }
}
