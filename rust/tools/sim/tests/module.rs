//! The module's controller (`hpcc_core::control`) in the fluid model, with
//! the knobs the module ships.

use hpcc_core::knobs::Knobs;
use hpcc_sim::module::{run, ModuleScenario};
use hpcc_sim::{jain, mean};

const T: u64 = 2_000_000;

#[test]
fn one_flow_fills_the_link_without_a_standing_queue() {
    let sc = ModuleScenario::vm_bench(vec![0], 300 * T, Knobs::DEFAULT);
    let r = run(&sc);
    let util = mean(&r, 100, 300, |s| s.util);
    let q = r.rtts[100..].iter().map(|s| s.queue_max).fold(0.0, f64::max) / sc.bdp();
    assert!(util >= 0.93, "utilization {util:.3}");
    assert!(q <= 0.1, "max queue {q:.3} BDP");
    assert!(r.updates > 100, "{} updates", r.updates);
}

#[test]
fn three_flows_starting_at_line_rate_drain_the_queue_and_share() {
    let sc = ModuleScenario::vm_bench(vec![0, 0, 0], 200 * T, Knobs::DEFAULT);
    let r = run(&sc);
    let drained = r.rtts.iter().position(|s| s.queue_max < 0.1 * sc.bdp()).expect("the queue drains");
    assert!(drained <= 40, "queue below 0.1 BDP only from RTT {drained}");
    let last = &r.rtts[150..];
    assert!(last.iter().all(|s| jain(&s.flow_bps) > 0.99));
    assert!(mean(&r, 150, 200, |s| s.util) >= 0.93);
}
