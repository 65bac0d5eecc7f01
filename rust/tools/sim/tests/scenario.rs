//! The drafts' claims, checked on the fluid model (100 Gb/s bottleneck,
//! T = 10 µs, eta = 0.95, maxStage = 5, 8 ACKs with telemetry per RTT).
//! Tolerances are stated with each assertion; the figures are printed
//! (`cargo test -p hpcc-sim -- --nocapture`).

use hpcc_sim::{equilibrium_util, fair_rtt, incast, jain, late_joiner, mean, run, settle_rtt, Run, LINK_BPS};

const BDP: f64 = 125_000.0;

fn shares(r: &Run, from: usize, to: usize) -> Vec<f64> {
    let n = r.rtts[from].flow_bps.len();
    (0..n).map(|i| mean(r, from, to, |s| s.flow_bps[i])).collect()
}

fn check_incast(wire: bool) {
    // W_ai from the rule of thumb with N = 16 (the expected maximum), 4 flows.
    let sc = incast(4, 200, wire, 16);
    let r = run(&sc);
    let target = equilibrium_util(&sc, 4); // eta + 4 W_ai / BDP = 0.9625
    let peak = r.rtts.iter().map(|s| s.queue_max).fold(0.0, f64::max);
    let settle = settle_rtt(&r, 0, target, 0.01, 0.01 * BDP);
    let util = mean(&r, 20, 200, |s| s.util);
    let queue = mean(&r, 20, 200, |s| s.queue_mean);
    let sh = shares(&r, 20, 200);
    println!(
        "incast wire={wire}: first-RTT rates {:?} Gb/s, peak queue {:.2} BDP, settled at RTT {settle:?}, \
         RTTs 20..200 utilization {util:.4} (predicted {target:.4}), mean queue {:.2e} BDP, Jain {:.5}",
        r.rtts[0].sent_bps.iter().map(|b| (b / 1e8).round() / 10.0).collect::<Vec<_>>(),
        peak / BDP,
        queue / BDP,
        jain(&sh)
    );
    // Flows start at line rate: each sends B (±1%) during its first RTT.
    for b in &r.rtts[0].sent_bps {
        assert!((b / LINK_BPS as f64 - 1.0).abs() < 0.01, "first-RTT rate {b}");
    }
    // 4 line-rate flows overload the link: a queue of ~3 BDP forms...
    assert!(peak > 2.5 * BDP);
    // ...and within 20 RTTs utilization is within 0.01 of the equilibrium
    // eta + n W_ai / BDP (≈ eta·B: 0.9625 here) and the mean queue below
    // 0.01 BDP, for good.
    assert!(settle.is_some_and(|k| k <= 20), "settled at {settle:?}");
    assert!((0.95..=0.9625 + 1e-9).contains(&target));
    assert!((util - target).abs() < 0.002, "utilization {util}");
    assert!(queue < 0.001 * BDP, "queue {queue}");
    assert!(jain(&sh) > 0.999);
}

#[test]
fn incast_settles_to_eta_with_the_queue_drained() {
    check_incast(false);
}

#[test]
fn incast_settles_to_eta_through_the_wire_format() {
    check_incast(true);
}

#[test]
fn rule_of_thumb_with_exact_n_fills_the_link() {
    // W_ai = W_init (1 − eta)/N with N equal to the actual flow count puts
    // the equilibrium exactly at full utilization (still with no standing
    // queue): N·W_ai is the whole headroom.
    let sc = incast(4, 200, false, 4);
    let r = run(&sc);
    let util = mean(&r, 20, 200, |s| s.util);
    let queue = mean(&r, 20, 200, |s| s.queue_mean);
    println!("incast N=4: utilization {util:.4}, mean queue {:.2e} BDP", queue / BDP);
    assert!(equilibrium_util(&sc, 4) > 0.9999);
    assert!(util > 0.995 && queue < 0.01 * BDP);
}

fn check_joiner(incumbents: usize, wire: bool, within_rtts: usize) {
    let join = 50;
    let sc = late_joiner(incumbents, join as u64, 1000, wire, 16);
    let r = run(&sc);
    let n = incumbents + 1;
    let s1 = &r.rtts[join + 1];
    let start_share = s1.flow_bps[incumbents] / (s1.flow_bps.iter().sum::<f64>() / n as f64);
    let conv10 = fair_rtt(&r, join, incumbents, 0.10);
    let conv5 = fair_rtt(&r, join, incumbents, 0.05);
    let sh = shares(&r, 950, 1000);
    let util = mean(&r, 950, 1000, |s| s.util);
    println!(
        "joiner {incumbents}+1 wire={wire}: first RTT at {start_share:.2}x fair share; within 10% of fair \
         share {:?} RTTs after joining, within 5% {:?}; last 50 RTTs Gb/s {:.2?}, Jain {:.5}, utilization {util:.4}",
        conv10.map(|k| k - join),
        conv5.map(|k| k - join),
        sh.iter().map(|b| b / 1e9).collect::<Vec<_>>(),
        jain(&sh)
    );
    // The joiner starts at line rate...
    assert!(r.rtts[join].sent_bps[incumbents] > 0.4 * LINK_BPS as f64);
    // ...converges to within 10% of its fair share within `within_rtts`
    // RTTs and stays there...
    assert!(conv10.is_some_and(|k| k - join <= within_rtts), "{conv10:?}");
    // ...and all flows end up equal (Jain ≥ 0.999) at the equilibrium
    // utilization (±0.005) with no queue.
    assert!(jain(&sh) > 0.999);
    assert!((util - equilibrium_util(&sc, n)).abs() < 0.005);
    assert!(mean(&r, 950, 1000, |s| s.queue_mean) < 0.001 * BDP);
}

#[test]
fn late_joiner_converges_to_fair_share_one_incumbent() {
    check_joiner(1, false, 10);
}

#[test]
fn late_joiner_converges_to_fair_share_three_incumbents() {
    // The joiner starts with about twice its share; additive increase
    // (W_ai = 390 B per RTT per flow) closes the gap: ~200 RTTs to 10%.
    check_joiner(3, false, 300);
    check_joiner(3, true, 300);
}
