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


/// Rates of each flow over RTTs `from..to`, Mbit/s.
fn rates(r: &hpcc_sim::Run, from: usize, to: usize) -> Vec<f64> {
    (0..r.rtts[from].flow_bps.len())
        .map(|i| r.rtts[from..to].iter().map(|s| s.flow_bps[i]).sum::<f64>() / (to - from) as f64 / 1e6)
        .collect()
}

/// Three flows and one that joins 1 s later (RTT 500 of 3,000), each
/// probe meeting `backlog` bytes of backlog on average on top of the
/// fluid queue, and every ACK and response `host_delay_ns` late: the
/// largest deviation of a flow from the mean in 500-RTT (1-second) windows
/// from 500 RTTs after the join, each flow's rate over the last one
/// (Mbit/s), and its utilization.
fn late_join(k: Knobs, backlog: u32, host_delay_ns: u64) -> (f64, Vec<f64>, f64) {
    let (join, rtts) = (500usize, 3000usize);
    let mut sc = ModuleScenario::vm_bench(vec![0, 0, 0, join as u64 * T], rtts as u64 * T, k);
    sc.probe_backlog_bytes = backlog;
    sc.host_delay_ns = host_delay_ns;
    let r = hpcc_sim::module::run(&sc);
    let worst = (join + 500..=rtts - 500)
        .step_by(100)
        .map(|s| {
            let per = rates(&r, s, s + 500);
            let m = per.iter().sum::<f64>() / per.len() as f64;
            per.iter().map(|x| (x / m - 1.0).abs()).fold(0.0, f64::max)
        })
        .fold(0.0, f64::max);
    (worst, rates(&r, rtts - 500, rtts), mean(&r, rtts - 500, rtts, |s| s.util))
}

/// The late joiner with 1,000 to 2,000 B of backlog per probe (the VM's
/// probes met 760 to 1,145 B per flow, `ModuleScenario::probe_backlog_bytes`):
/// from 1 s after the join to the end (6 s), every flow within 10% of the
/// mean in every 1-second window, as the VM's late-joiner bar asks of the
/// last second (at most 2.6, 3.9 and 4.6% off). With the same W_ai for
/// every flow (`wai_fair` 0) the additive step's pull is too weak for each
/// flow's own noise in U: 15% off at 2,000 B (22.9/22.9/25.2/22.5 Mbit/s
/// in the last second). The queue filter (`qlen_min_filter` 1) halves the
/// noise each flow reads: without it the flows were 6.4, 6.9 and 10.8% off
/// with `wai_fair` 2, and 13 to 36% with 0 (20.9/24.6/28.1/19.5 Mbit/s at
/// 1,000 B, as the VM's were before `wai_fair`: 0.86 to 1.16).
#[test]
fn a_late_joiner_shares_within_ten_percent_despite_noisy_probes() {
    for backlog in [1000, 1500, 2000] {
        let (worst, last, util) = late_join(Knobs::DEFAULT, backlog, 0);
        assert!(worst <= 0.1, "backlog {backlog}: a flow {worst:.3} off the mean; last second {last:.1?}");
        let (worst_u, last_u, _) = late_join(Knobs { qlen_min_filter: 0, ..Knobs::DEFAULT }, backlog, 0);
        assert!(worst_u > worst, "qlen_min_filter 0, backlog {backlog}: {worst_u:.3}; last second {last_u:.1?}");
        if backlog == 2000 {
            // The same noise with the same W_ai for every flow: apart.
            let (worst0, last0, util0) = late_join(Knobs { wai_fair: 0, ..Knobs::DEFAULT }, backlog, 0);
            assert!(worst0 > 0.1, "wai_fair 0, backlog {backlog}: {worst0:.3}; last second {last0:.1?}");
            // The flows together add about what they did: U settles where it did.
            assert!((util - util0).abs() < 0.01, "utilization {util:.3} against {util0:.3}");
        }
    }
}

/// The same late joiner, 1,000 B of backlog per probe, with host delay on
/// every ACK and response: srtt runs at 1.35 T and 1.9 T, as it did in
/// the VM at 100 and 200 Mbit/s, while the flows' minimum RTT stays T.
/// Every flow within 10% of the mean in every 1-second window from 1 s
/// after the join (at most 2.3% off), at utilization 0.93 or more (0.96).
/// With W_ai and the fair share taken at T (`wai_fair` 1, the default
/// before), the additive step pulls half as hard at 1.9 T: the flows ended
/// up to 14% from the mean (21.2/25.7/24.8/21.2 Mbit/s in the last second,
/// 0.93 utilization; without the queue filter 21%, at 0.91).
#[test]
fn a_late_joiner_shares_within_ten_percent_despite_host_delay() {
    for delay in [T * 35 / 100, T * 9 / 10] {
        let (worst, last, util) = late_join(Knobs::DEFAULT, 1000, delay);
        assert!(worst <= 0.1, "host delay {delay} ns: a flow {worst:.3} off the mean; last second {last:.1?}");
        assert!(util >= 0.93, "host delay {delay} ns: utilization {util:.3}");
    }
    let (worst, last, util) = late_join(Knobs { wai_fair: 1, ..Knobs::DEFAULT }, 1000, T * 9 / 10);
    assert!(worst > 0.1, "wai_fair 1: {worst:.3}; last second {last:.1?}");
    assert!(util < 0.94, "wai_fair 1: utilization {util:.3}");
}

/// One of two flows leaves (the FCT mix's short flow ending next to the
/// bulk flow): the link's utilization over the next 5 base RTTs (10 ms, the mix's gap
/// between short flows) and over the 10 after those.
fn departure(k: Knobs) -> (f64, f64) {
    let (leave, rtts) = (300usize, 340usize);
    let mut sc = ModuleScenario::vm_bench(vec![0, 0], rtts as u64 * T, k);
    sc.ends_ns = vec![u64::MAX, leave as u64 * T];
    let r = run(&sc);
    (mean(&r, leave, leave + 5, |s| s.util), mean(&r, leave + 5, leave + 15, |s| s.util))
}

/// Before the low-U rule (`hpcc_core::law::LOW_U_PCT_OF_ETA`) the bulk
/// flow grew by one segment per two RTTs: 0.58 over the first 5 RTTs and
/// 0.74 over the next 10, as the VM's mix showed (0.59 to 0.69 of B in
/// the 10 ms after a short flow ended). Without the increase bound and the
/// additive stage (the `datacenter` profile's regrowth): 0.80 and 0.97.
#[test]
fn the_remaining_flow_takes_the_port_back_within_five_rtts() {
    let (first, then) = departure(Knobs::DEFAULT);
    assert!(first >= 0.7, "utilization {first:.3} over the 5 RTTs after the departure");
    assert!(then >= 0.93, "utilization {then:.3} over the 10 RTTs after those");
}

/// A flow of `k` base RTTs joins a bulk flow at RTT 200 (the FCT mix's
/// short flow), each probe meeting `backlog` bytes on top of the fluid
/// queue: the link's utilization over the short flow's life and 5 RTTs
/// after, and the bulk flow's smallest window over them against its
/// window just before.
fn arrival(k: Knobs, rtts: u64, backlog: u32) -> (f64, f64) {
    let mut sc = ModuleScenario::vm_bench(vec![0, 200 * T], 260 * T, k);
    sc.ends_ns = vec![u64::MAX, (200 + rtts) * T];
    sc.probe_backlog_bytes = backlog;
    let r = run(&sc);
    let end = 200 + rtts as usize + 5;
    let before = f64::from(r.rtts[199].window[0]);
    let low = r.rtts[200..end].iter().map(|s| s.window[0]).min().map_or(0.0, f64::from);
    (mean(&r, 200, end, |s| s.util), low / before)
}

/// The short flow's first window meets the bulk flow near eta; the bulk
/// flow's next probe reads the queue and commits W = Wc·eta/U. Its probe
/// after that left on the committing ACK, so what it measured was sent
/// before the cut: it reads the same queue. With `precommit_ref` 0 it
/// cut again from the committed Wc (24 to 15 to 10 kB for a 6-RTT flow,
/// 0.85 of B over the flow's life and 5 RTTs after, 0.84 with 1,000 B of
/// probe backlog); with 1 it answers from the window its data was sent
/// under (24 to 15 kB, 0.90 and 0.89).
#[test]
fn a_short_flow_cuts_the_bulk_flow_once() {
    for backlog in [0, 1000] {
        let (util, low) = arrival(Knobs::DEFAULT, 6, backlog);
        assert!(util >= 0.88, "backlog {backlog}: utilization {util:.3}");
        assert!(low >= 0.55, "backlog {backlog}: bulk window down to {low:.2} of its window before");
    }
}

/// Utilization of `n` flows over RTTs 200 to 1,000, each probe meeting
/// `backlog` bytes of backlog on average on top of the fluid queue.
fn noisy_util(k: Knobs, n: usize, backlog: u32) -> f64 {
    let mut sc = ModuleScenario::vm_bench(vec![0; n], 1000 * T, k);
    sc.probe_backlog_bytes = backlog;
    mean(&run(&sc), 200, 1000, |s| s.util)
}

/// A probe that meets a burst's backlog reads a queue the flows did not
/// build: with the current qlen alone (`qlen_min_filter` 0) each such
/// probe cuts W, and 1,000 B of backlog per probe cost 1 and 4 flows
/// 0.93 and 0.94 of the link, 1,500 B 0.91 and 0.92. The drafts'
/// min(qlen, previous qlen) takes the smaller of two probes' readings:
/// 0.96 and 0.96, then 0.95 and 0.95. Without the noise both hold 0.98.
#[test]
fn the_queue_filter_keeps_the_link_despite_noisy_probes() {
    for n in [1, 4] {
        for backlog in [1000, 1500] {
            let util = noisy_util(Knobs::DEFAULT, n, backlog);
            assert!(util >= 0.945, "{n} flows, backlog {backlog}: utilization {util:.3}");
            let util0 = noisy_util(Knobs { qlen_min_filter: 0, ..Knobs::DEFAULT }, n, backlog);
            assert!(util0 <= util - 0.015, "{n} flows, backlog {backlog}: {util0:.3} unfiltered against {util:.3}");
        }
        let quiet = noisy_util(Knobs::DEFAULT, n, 0);
        assert!(quiet >= 0.97, "{n} flows without noise: utilization {quiet:.3}");
    }
}
