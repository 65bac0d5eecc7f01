//! The control law's rules and edge cases, each checked on hand-built
//! samples with exactly computable results.

use hpcc_core::fixed::{U_MAX, U_ONE, WIN_ONE};
use hpcc_core::law::{srtt_pacing_cap, Event, HopSample, HpccFlow, Outcome, Sample, StaleReason};
use hpcc_core::params::{HpccConfig, HpccParams, Mode, ParamError};

const T: u64 = 10_000; // 10 µs
const B: u64 = 100_000_000_000; // 100 Gb/s
const BDP: u64 = B / 8 * T / 1_000_000_000; // 125_000 bytes

fn cfg() -> HpccConfig {
    HpccConfig {
        base_rtt_ns: T,
        eta_ppm: 950_000,
        max_stage: 3,
        wai_bytes: 1_000,
        expected_flows: 0,
        init_window_bytes: BDP as u32,
        min_window_bytes: 1_500,
        max_window_bytes: 4 * BDP as u32,
        mode: Mode::Sender,
        path_cap_pct: 0,
        u_weight_pct: 100,
        max_increase_pct: 0,
        low_u_pct: 0,
        qlen_min_filter: true,
        precommit_ref: false,
    }
}

/// A one-hop path whose hop has sent `tx` bytes by `ts` with queue `q`.
struct Path {
    hops: Vec<HopSample>,
    seq: u32,
    now: u64,
    path_id: u16,
}

impl Path {
    fn new(n: usize) -> Self {
        Path {
            hops: vec![HopSample { rate_bps: B, ts_ns: 1_000_000, tx_bytes: 5_000_000, qlen_bytes: 0 }; n],
            seq: 1000,
            now: 50_000_000,
            path_id: 7,
        }
    }
    /// Advances hop `i` by `dts` ns at `util` of line rate with queue `q`.
    fn advance(&mut self, i: usize, dts: u64, util_ppm: u64, q: u64) {
        let h = &mut self.hops[i];
        h.ts_ns = h.ts_ns.wrapping_add(dts);
        h.tx_bytes = h.tx_bytes.wrapping_add(B / 8 * dts / 1_000_000_000 * util_ppm / 1_000_000);
        h.qlen_bytes = q;
    }
    /// One committed round on hop 0: T at `util_ppm` of line rate, no
    /// queue, an ACK past everything sent before.
    fn round(&mut self, f: &mut HpccFlow, p: &HpccParams, util_ppm: u64) -> Outcome {
        self.advance(0, T, util_ppm, 0);
        self.seq += 1;
        let ack = self.seq + 1;
        f.on_sample(p, &self.sample(ack))
    }
    fn sample(&mut self, ack_seq: u32) -> Sample<'_> {
        self.now += T;
        Sample { now_ns: self.now, ack_seq, snd_nxt: self.seq, path_id: self.path_id, hops: &self.hops }
    }
}

fn params(c: HpccConfig) -> HpccParams {
    c.validate().unwrap()
}

#[test]
fn validation_rejects_each_bad_field_with_its_error() {
    let d = cfg();
    let bad = [
        (HpccConfig { base_rtt_ns: 0, ..d }, ParamError::BaseRtt),
        (HpccConfig { base_rtt_ns: 1_000_000_001, ..d }, ParamError::BaseRtt),
        (HpccConfig { eta_ppm: 0, ..d }, ParamError::Eta),
        (HpccConfig { eta_ppm: 1_000_001, ..d }, ParamError::Eta),
        (HpccConfig { wai_bytes: (1 << 31) + 1, ..d }, ParamError::Wai),
        (HpccConfig { wai_bytes: 0, expected_flows: 0, ..d }, ParamError::ExpectedFlows),
        (HpccConfig { wai_bytes: 0, expected_flows: 1, eta_ppm: 1_000_000, ..d }, ParamError::DefaultWaiZero),
        (HpccConfig { min_window_bytes: 0, ..d }, ParamError::Windows),
        (HpccConfig { min_window_bytes: BDP as u32 + 1, ..d }, ParamError::Windows),
        (HpccConfig { max_window_bytes: BDP as u32 - 1, ..d }, ParamError::Windows),
        (HpccConfig { max_window_bytes: (1 << 31) + 1, init_window_bytes: 1 << 31, ..d }, ParamError::Windows),
    ];
    for (c, e) in bad {
        assert_eq!(c.validate(), Err(e), "{c:?}");
        assert!(!e.describe().is_empty());
    }
    assert!(HpccConfig::DEFAULT.validate().is_ok());
    // Extremes of the supported ranges are accepted.
    let ok = HpccConfig {
        base_rtt_ns: 1,
        eta_ppm: 1,
        max_stage: u32::MAX,
        init_window_bytes: 1 << 31,
        min_window_bytes: 1,
        max_window_bytes: 1 << 31,
        ..d
    };
    assert!(ok.validate().is_ok());
    assert!(HpccConfig { base_rtt_ns: 1_000_000_000, ..d }.validate().is_ok());
}

#[test]
fn default_wai_follows_the_rule_of_thumb() {
    // W_ai = W_init (1 − eta) / N = 125000 · 0.05 / 4 = 1562.5 → 1562.
    let p = params(HpccConfig { wai_bytes: 0, expected_flows: 4, ..cfg() });
    assert_eq!(p.wai_bytes(), 1562);
    assert_eq!(params(cfg()).wai_bytes(), 1000);
}

#[test]
fn eta_threshold_is_exact() {
    // ceil(0.95 · 2^40) and 1.0 exactly.
    let p = params(cfg());
    assert_eq!(p.eta_threshold_q40(), ((95u128 << 40).div_ceil(100)) as u64);
    let p = params(HpccConfig { eta_ppm: 1_000_000, ..cfg() });
    assert_eq!(p.eta_threshold_q40(), U_ONE);
}

#[test]
fn new_flow_starts_at_init_window_with_u_one() {
    let p = params(cfg());
    let f = HpccFlow::new(&p);
    assert_eq!(f.window_bytes(), BDP as u32);
    assert_eq!(f.wc_q16(), BDP * WIN_ONE);
    assert_eq!(f.u_q40(), U_ONE);
    assert_eq!(f.inc_stage(), 0);
    // R = W/T: 125000 B per 10 µs = 12.5 GB/s = 100 Gb/s: line rate.
    assert_eq!(f.pacing_rate(&p), 12_500_000_000);
    assert_eq!(std::mem::size_of::<HpccFlow>(), 272);
}

#[test]
fn external_cut_lowers_w_and_wc_but_never_raises_or_goes_below_min() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    assert_eq!(f.cut(&p, 2 * BDP as u32), BDP as u32, "a cut above W changes nothing");
    assert_eq!(f.wc_q16(), BDP * WIN_ONE);
    assert_eq!(f.cut(&p, 50_000), 50_000);
    assert_eq!((f.window_q16(), f.wc_q16(), f.inc_stage()), (50_000 * WIN_ONE, 50_000 * WIN_ONE, 0));
    assert_eq!(f.cut(&p, 10), 1_500, "the minimum window holds");
    assert_eq!(f.pacing_rate(&p), 1_500 * 1_000_000_000 / T);
}

#[test]
fn first_event_only_records() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(2);
    path.hops[0].qlen_bytes = 10 * BDP; // would be a huge U if measured
    let o = f.on_sample(&p, &path.sample(2000));
    assert_eq!(o.event, Event::Recorded);
    assert_eq!(o.window_bytes, BDP as u32);
    assert_eq!(o.pacing_rate, 12_500_000_000);
    assert_eq!(f.u_q40(), U_ONE);
}

#[test]
fn full_utilization_gives_multiplicative_decrease_by_eta() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    // One RTT at exactly line rate, no queue: u' = 1, tau = T, so U = 1.
    path.advance(0, T, 1_000_000, 0);
    let o = f.on_sample(&p, &path.sample(2000));
    assert_eq!(o.event, Event::Committed);
    assert_eq!(f.u_q40(), U_ONE);
    // W = Wc · eta / U + W_ai = 125000 · 0.95 + 1000.
    assert_eq!(o.window_bytes, 118_750 + 1_000);
    assert_eq!(f.wc_q16(), (118_750 + 1_000) * WIN_ONE);
    assert_eq!(f.inc_stage(), 0);
    assert_eq!(o.pacing_rate, 119_750 * 100_000);
}

/// A flow after two samples one T apart on a fully used one-hop path whose
/// queue was `q_prev`, then is `q_now` bytes.
fn after_queues(p: &HpccParams, q_prev: u64, q_now: u64) -> HpccFlow {
    let mut f = HpccFlow::new(p);
    let mut path = Path::new(1);
    path.hops[0].qlen_bytes = q_prev;
    f.on_sample(p, &path.sample(0));
    path.advance(0, T, 1_000_000, q_now);
    f.on_sample(p, &path.sample(2000));
    f
}

#[test]
fn queue_term_uses_min_of_current_and_previous_qlen() {
    let p = params(cfg());
    // Now 2 BDP of queue, but the previous sample saw 0.5 BDP: u' = 0.5 + 1.
    let f = after_queues(&p, BDP / 2, 2 * BDP);
    assert_eq!(f.u_q40(), U_ONE + U_ONE / 2);
    assert_eq!(f.window_bytes(), (125_000.0 * 0.95 / 1.5) as u32 + 1_000);
}

#[test]
fn ewma_weight_is_tau_over_t_and_tau_is_capped_at_t() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    // Idle quarter RTT: u' = 0, U = 0.75 · 1 + 0.25 · 0.
    path.advance(0, T / 4, 0, 0);
    f.on_sample(&p, &path.sample(0));
    assert_eq!(f.u_q40(), U_ONE / 4 * 3);
    // Three RTTs at half rate: tau = T, U = u' = 0.5.
    path.advance(0, 3 * T, 500_000, 0);
    f.on_sample(&p, &path.sample(0));
    assert_eq!(f.u_q40(), U_ONE / 2);
}

#[test]
fn chosen_hop_is_the_most_loaded_and_sets_tau() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(3);
    f.on_sample(&p, &path.sample(0));
    // Hop 0: idle over T; hop 1: 0.8 over T/2; hop 2: 0.6 over T.
    path.advance(0, T, 0, 0);
    path.advance(1, T / 2, 800_000, 0);
    path.advance(2, T, 600_000, 0);
    f.on_sample(&p, &path.sample(0));
    // Hop 1 wins (0.8), tau = T/2: U = 0.5 · 1 + 0.5 · 0.8 = 0.9.
    let want = (U_ONE as f64 * 0.9) as u64;
    assert!(f.u_q40().abs_diff(want) <= 1, "{} vs {want}", f.u_q40());
}

#[test]
fn additive_increase_for_max_stage_commits_then_multiplicative() {
    let p = params(cfg()); // maxStage = 3
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    let mut ack = 0u32;
    let mut wc = BDP;
    for stage in 1..=3 {
        // Half load: U = 0.5 < eta → AI.
        path.advance(0, T, 500_000, 0);
        path.seq = path.seq.wrapping_add(100_000);
        ack = ack.wrapping_add(100_000);
        let o = f.on_sample(&p, &path.sample(ack.wrapping_add(path.seq)));
        assert_eq!(o.event, Event::Committed);
        wc += 1_000;
        assert_eq!(o.window_bytes as u64, wc);
        assert_eq!(f.inc_stage(), stage);
    }
    // incStage = maxStage: multiplicative increase W = Wc · 0.95 / 0.5 + W_ai.
    path.advance(0, T, 500_000, 0);
    path.seq = path.seq.wrapping_add(100_000);
    let o = f.on_sample(&p, &path.sample(path.seq));
    assert_eq!(o.event, Event::Committed);
    assert_eq!(o.window_bytes as u64, wc * 19 / 10 + 1_000);
    assert_eq!(f.inc_stage(), 0);
}

#[test]
fn sender_commits_only_when_ack_passes_last_update_seq_wrap_safe() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    path.seq = u32::MAX - 10; // snd_nxt about to wrap
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 1_000_000, 0);
    // First update commits and sets lastUpdateSeq = snd_nxt = 2^32 − 11.
    assert_eq!(f.on_sample(&p, &path.sample(5)).event, Event::Committed);
    let wc = f.wc_q16();
    // ACKs up to lastUpdateSeq do not commit; W moves, Wc does not.
    for ack in [u32::MAX - 20, u32::MAX - 11] {
        path.advance(0, T, 2_000_000, BDP);
        let o = f.on_sample(&p, &path.sample(ack));
        assert_eq!(o.event, Event::Updated);
        assert_eq!(f.wc_q16(), wc);
        assert!(o.window_bytes < (wc / WIN_ONE) as u32);
    }
    // An ACK past it, after the sequence space wrapped, commits.
    path.seq = 40_000;
    path.advance(0, T, 1_000_000, 0);
    assert_eq!(f.on_sample(&p, &path.sample(3)).event, Event::Committed);
    assert_ne!(f.wc_q16(), wc);
    // lastUpdateSeq is now 40000.
    path.advance(0, T, 1_000_000, 0);
    assert_eq!(f.on_sample(&p, &path.sample(40_000)).event, Event::Updated);
    path.advance(0, T, 1_000_000, 0);
    assert_eq!(f.on_sample(&p, &path.sample(40_001)).event, Event::Committed);
}

#[test]
fn receiver_commits_when_now_exceeds_last_update_time_plus_t() {
    let p = params(HpccConfig { mode: Mode::Receiver, ..cfg() });
    let mut f = HpccFlow::new(&p);
    let hop = |ts: u64, tx: u64| [HopSample { rate_bps: B, ts_ns: ts, tx_bytes: tx, qlen_bytes: 0 }];
    let ev = |f: &mut HpccFlow, now: u64, h: &[HopSample]| {
        f.on_sample(&p, &Sample { now_ns: now, ack_seq: 0, snd_nxt: 0, path_id: 1, hops: h }).event
    };
    assert_eq!(ev(&mut f, 1_000, &hop(0, 0)), Event::Recorded);
    assert_eq!(ev(&mut f, 2_000, &hop(1_000, 10_000)), Event::Committed); // first update
    assert_eq!(ev(&mut f, 2_000 + T, &hop(2_000, 20_000)), Event::Updated); // not > last + T
    assert_eq!(ev(&mut f, 2_001 + T, &hop(3_000, 30_000)), Event::Committed);
    assert_eq!(ev(&mut f, 3_000 + T, &hop(4_000, 40_000)), Event::Updated);
    // Sequence numbers are ignored in receiver mode.
    assert_eq!(ev(&mut f, 2_002 + 2 * T, &hop(5_000, 50_000)), Event::Committed);
}

#[test]
fn zero_utilization_gives_max_window_on_a_multiplicative_step() {
    let p = params(HpccConfig { max_stage: 0, ..cfg() });
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 0, 0); // idle for a full RTT: U = 0
    let o = f.on_sample(&p, &path.sample(2000));
    assert_eq!(f.u_q40(), 0);
    assert_eq!(o.window_bytes, 4 * BDP as u32);
    // With stages left, U = 0 is additive increase instead.
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 0, 0);
    assert_eq!(f.on_sample(&p, &path.sample(2000)).window_bytes, BDP as u32 + 1_000);
}

#[test]
fn window_is_clamped_before_commit() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    // 1000 BDP of queue on both samples: W would be ~119 bytes.
    path.hops[0].qlen_bytes = 1000 * BDP;
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 1_000_000, 1000 * BDP);
    let o = f.on_sample(&p, &path.sample(2000));
    assert_eq!(o.event, Event::Committed);
    assert_eq!(o.window_bytes, 1_500);
    assert_eq!(f.wc_q16(), 1_500 * WIN_ONE);
}

#[test]
fn path_change_drops_records_and_only_records() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(2);
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 1_000_000, 0);
    path.advance(1, T, 1_000_000, 0);
    f.on_sample(&p, &path.sample(2000));
    let (w, u) = (f.window_bytes(), f.u_q40());
    // New path ID: the counters are unrelated (going backwards), yet no stale.
    path.path_id = 8;
    path.hops[0].ts_ns = 5;
    let o = f.on_sample(&p, &path.sample(2000));
    assert_eq!(o.event, Event::PathChanged);
    assert_eq!((o.window_bytes, f.u_q40()), (w, u));
    path.advance(0, T, 1_000_000, 0);
    path.advance(1, T, 1_000_000, 0);
    assert!(!f.on_sample(&p, &path.sample(2000)).is_stale());
    // Hop count change.
    path.hops.pop();
    assert_eq!(f.on_sample(&p, &path.sample(2000)).event, Event::PathChanged);
    // Dropping records by hand.
    f.drop_records();
    path.advance(0, T, 1_000_000, 0);
    assert_eq!(f.on_sample(&p, &path.sample(2000)).event, Event::Recorded);
}

#[test]
fn stale_samples_change_nothing() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(2);
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 900_000, 0);
    path.advance(1, T, 900_000, 0);
    f.on_sample(&p, &path.sample(2000));
    let before = f.clone();
    let cases: Vec<(Box<dyn Fn(&mut Vec<HopSample>)>, StaleReason)> = vec![
        (Box::new(|_h| {}), StaleReason::ZeroDts),                      // duplicate
        (Box::new(|h| h[1].tx_bytes += 99), StaleReason::ZeroDts),      // non-chosen hop, Δts = 0
        (Box::new(|h| { h[0].ts_ns += T; h[1].ts_ns -= 1 }), StaleReason::Backwards),
        (Box::new(|h| { h[0].ts_ns += T; h[1].ts_ns += T; h[1].tx_bytes -= 1 }), StaleReason::Backwards),
        (Box::new(|h| h[0].rate_bps = 0), StaleReason::BadRate),
        (Box::new(|h| h[0].rate_bps = (1 << 48) + 1), StaleReason::BadRate),
        (Box::new(|h| h.clear()), StaleReason::NoHops),
        (Box::new(|h| h.resize(9, h[0])), StaleReason::TooManyHops),
    ];
    for (mutate, why) in cases {
        let mut hops = path.hops.clone();
        mutate(&mut hops);
        let o = f.on_sample(&p, &Sample { now_ns: path.now + 1, ack_seq: 9_999, snd_nxt: 1, path_id: 7, hops: &hops });
        assert_eq!(o.event, Event::Stale(why));
        assert_eq!(o.window_bytes, before.window_bytes());
        assert_eq!(f, before, "{why:?} changed the state");
    }
}

#[test]
fn full_width_counters_may_wrap_u64() {
    let p = params(cfg());
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    path.hops[0].ts_ns = u64::MAX - T / 2;
    path.hops[0].tx_bytes = u64::MAX - 100;
    f.on_sample(&p, &path.sample(0));
    path.advance(0, T, 1_000_000, 0);
    f.on_sample(&p, &path.sample(2000));
    assert_eq!(f.u_q40(), U_ONE);
    assert_eq!(f.window_bytes(), 119_750);
}

#[test]
fn extreme_inputs_saturate_without_panicking() {
    for (t, rate, q, dts, dtx) in [
        (1, 1, u64::MAX, 1, i64::MAX as u64),
        (1_000_000_000, 1 << 48, u64::MAX, i64::MAX as u64, i64::MAX as u64),
        (1, 1 << 48, 0, 1, 0),
        (1_000_000_000, 1, 0, i64::MAX as u64, 1),
        (1_000, 1_000_000_000, u64::MAX, 1 << 41, 1 << 62),
    ] {
        let c = HpccConfig { base_rtt_ns: t, min_window_bytes: 1, init_window_bytes: 1 << 31, max_window_bytes: 1 << 31, ..cfg() };
        let p = params(c);
        let mut f = HpccFlow::new(&p);
        let h0 = [HopSample { rate_bps: rate, ts_ns: 0, tx_bytes: 0, qlen_bytes: q }];
        let h1 = [HopSample { rate_bps: rate, ts_ns: dts, tx_bytes: dtx, qlen_bytes: q }];
        f.on_sample(&p, &Sample { now_ns: 0, ack_seq: 0, snd_nxt: 0, path_id: 0, hops: &h0 });
        let o = f.on_sample(&p, &Sample { now_ns: 1, ack_seq: 1, snd_nxt: 1, path_id: 0, hops: &h1 });
        assert_eq!(o.event, Event::Committed);
        assert!(f.u_q40() <= U_MAX);
        assert!((1..=1 << 31).contains(&o.window_bytes));
    }
}

#[test]
fn path_cap_bounds_the_window_of_a_flow_that_cannot_fill_the_path() {
    // A flow held at half the line rate by something other than its window
    // (U = 0.5 forever): without the cap W grows each round by eta/U until
    // max_window; with it W stops at the path's B·T.
    let run = |cap_pct: u32| {
        let p = params(HpccConfig { max_stage: 0, path_cap_pct: cap_pct, ..cfg() });
        let mut f = HpccFlow::new(&p);
        let mut path = Path::new(2);
        path.hops[1].rate_bps = B / 4; // the slowest hop sets the cap
        f.on_sample(&p, &path.sample(0));
        let mut max_w = 0;
        for k in 1..20u32 {
            path.advance(0, T, 100_000, 0);
            path.advance(1, T, 125_000, 0); // half of B/4
            let seq = path.seq;
            path.seq += 1000;
            let o = f.on_sample(&p, &path.sample(seq + k));
            max_w = max_w.max(o.window_bytes);
        }
        max_w
    };
    assert_eq!(run(0), 4 * BDP as u32, "the drafts' law winds up to max_window");
    assert_eq!(run(100), BDP as u32 / 4, "capped at B·T of the slowest hop");
    assert_eq!(run(50), BDP as u32 / 8);
}

#[test]
fn path_cap_applies_from_the_first_record_and_on_a_path_change() {
    let p = params(HpccConfig { path_cap_pct: 100, init_window_bytes: 2 * BDP as u32, ..cfg() });
    let mut f = HpccFlow::new(&p);
    assert_eq!(f.window_bytes(), 2 * BDP as u32);
    let mut path = Path::new(1);
    let o = f.on_sample(&p, &path.sample(0));
    assert_eq!(o.event, Event::Recorded);
    assert_eq!(o.window_bytes, BDP as u32, "a new flow starts at line rate, not above");
    assert_eq!(f.wc_q16(), BDP * WIN_ONE);
    // A new path through a 10x slower link: W and Wc follow its BDP at once.
    path.path_id ^= 1;
    path.hops[0].rate_bps = B / 10;
    let o = f.on_sample(&p, &path.sample(0));
    assert_eq!(o.event, Event::PathChanged);
    assert_eq!(o.window_bytes, BDP as u32 / 10);
    assert_eq!(f.wc_q16(), BDP / 10 * WIN_ONE);
    // The cap never goes below min_window.
    path.path_id ^= 2;
    path.hops[0].rate_bps = 1_000_000; // BDP 1.25 bytes
    assert_eq!(f.on_sample(&p, &path.sample(0)).window_bytes, 1_500);
}

#[test]
fn path_cap_is_validated() {
    let d = cfg();
    assert_eq!(HpccConfig { path_cap_pct: 1001, ..d }.validate().unwrap_err(), ParamError::PathCap);
    assert!(HpccConfig { path_cap_pct: 1000, ..d }.validate().is_ok());
    assert!(HpccConfig { path_cap_pct: 0, ..d }.validate().is_ok());
}

#[test]
fn window_growth_is_bounded_by_twice_the_window_used() {
    let p = params(HpccConfig { max_stage: 0, ..cfg() });
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    // U = 0.5 while the flow had only 20 kB of its 125 kB in flight: the
    // multiplicative increase (×1.9) is suppressed (2 × 20 kB < Wc), but
    // the window is not cut either.
    f.set_used_window(Some(20_000));
    let o = path.round(&mut f, &p, 500_000);
    assert_eq!(o.event, Event::Committed);
    assert_eq!(o.window_bytes, BDP as u32);
    // 100 kB in flight: growth up to twice that plus one minimum window
    // (of the 238.5 kB asked for).
    f.set_used_window(Some(100_000));
    assert_eq!(path.round(&mut f, &p, 500_000).window_bytes, 203_000);
    // Overload still shrinks W whatever was used: 203 kB·0.95/1.9 + W_ai.
    f.set_used_window(Some(0));
    assert_eq!(path.round(&mut f, &p, 1_900_000).window_bytes, 102_500);
    // A flow that used its whole window is not bounded; nor is one that
    // reports nothing (None): W = Wc·0.95/0.5 + W_ai.
    for used in [Some(101_000), None] {
        f.set_used_window(used);
        let wc = f.wc_q16() / WIN_ONE;
        let w = path.round(&mut f, &p, 500_000).window_bytes;
        assert!(u64::from(w).abs_diff(wc * 19 / 10 + 1_000) <= 1, "{used:?}: {w}");
    }
}

#[test]
fn probe_mode_commits_only_on_an_interval_sent_after_the_last_update() {
    // Probes once per RTT, each carrying the snd_nxt it was sent at: probe
    // k leaves just after response k−1 was applied. Sender mode commits on
    // every response; probe mode only when the interval the sample measured
    // (since the previous probe) began after the last commit.
    let run = |mode: Mode| {
        let p = params(HpccConfig { mode, ..cfg() });
        let mut f = HpccFlow::new(&p);
        let mut path = Path::new(1);
        let mut probe_seq = path.seq; // snd_nxt when the next probe leaves
        f.on_sample(&p, &path.sample(probe_seq));
        let mut events = Vec::new();
        for _ in 0..6 {
            path.seq += 10_000; // data sent while the probe was out
            let sent_at = probe_seq;
            probe_seq = path.seq + 1_500; // the next probe leaves just after this response
            path.advance(0, T, 900_000, 0);
            events.push(f.on_sample(&p, &path.sample(sent_at)).event);
        }
        events
    };
    use Event::{Committed as C, Updated as U};
    assert_eq!(run(Mode::Sender), [C, C, C, C, C, C]);
    assert_eq!(run(Mode::Probe), [C, U, C, U, C, U]);
}

/// Probe mode: the sample after a commit measured data sent before the
/// commit's cut. With `precommit_ref` its decrease is taken from the window
/// that data was sent under: the queue the commit answered is not cut
/// again, a queue that grew still is.
#[test]
fn precommit_ref_answers_a_stale_sample_from_the_window_its_data_was_sent_under() {
    // Samples alternate C, U (probe_mode_commits_only_on_an_interval_sent_after_the_last_update);
    // the last one, a U, reads the link full with `last_q` of queue.
    let run = |precommit_ref: bool, last_q: u64| {
        let p = params(HpccConfig {
            mode: Mode::Probe,
            max_stage: 0,
            wai_bytes: 1,
            qlen_min_filter: false,
            precommit_ref,
            ..cfg()
        });
        let mut f = HpccFlow::new(&p);
        let mut path = Path::new(1);
        let mut probe_seq = path.seq;
        f.on_sample(&p, &path.sample(probe_seq));
        let mut out = Vec::new();
        // Two rounds at eta with no queue, then the link full with half a
        // BDP of queue (U 1.5), then `last_q`.
        for (util, q) in [(950_000, 0), (950_000, 0), (1_000_000, BDP / 2), (1_000_000, last_q)] {
            path.seq += 10_000;
            let sent_at = probe_seq;
            probe_seq = path.seq + 1_500;
            path.advance(0, T, util, q);
            let o = f.on_sample(&p, &path.sample(sent_at));
            out.push((o.event, o.window_bytes));
        }
        out
    };
    use Event::{Committed as C, Updated as U};
    let bdp = BDP as f64;
    let cut = 0.95 / 1.5;
    let same = run(true, BDP / 2);
    assert_eq!(same.iter().map(|e| e.0).collect::<Vec<_>>(), [C, U, C, U]);
    let (w_commit, w_stale) = (f64::from(same[2].1), f64::from(same[3].1));
    assert!((w_commit / bdp - cut).abs() < 0.001, "the commit's cut: {w_commit}");
    assert_eq!(same[3].1, same[2].1, "the same queue again: no second cut");
    // The drafts' reference cuts again from the committed Wc.
    let drafts = run(false, BDP / 2);
    assert!((f64::from(drafts[3].1) / bdp - cut * cut).abs() < 0.001, "{drafts:?}");
    // A queue that grew (U 2.0) cuts from the window the data was sent
    // under: W·0.95/2.0, below the commit.
    let grew = run(true, BDP);
    assert!((f64::from(grew[3].1) / bdp - 0.95 / 2.0).abs() < 0.001, "{grew:?}");
    assert!(w_stale > f64::from(grew[3].1));
}

#[test]
fn u_weight_scales_the_ewma_step() {
    // U starts at 1.0; one full-RTT sample of u' = 0.5 moves it all the
    // way with the drafts' weight, half way with u_weight_pct = 50.
    for (pct, want_ppm) in [(100u32, 500_000u64), (50, 750_000), (10, 950_000)] {
        let p = params(HpccConfig { u_weight_pct: pct, ..cfg() });
        let mut f = HpccFlow::new(&p);
        let mut path = Path::new(1);
        f.on_sample(&p, &path.sample(0));
        path.advance(0, T, 500_000, 0);
        f.on_sample(&p, &path.sample(2000));
        let got = (u128::from(f.u_q40()) * 1_000_000 >> 40) as u64;
        assert!(got.abs_diff(want_ppm) <= 1, "{pct}%: U = {got} ppm");
    }
    assert_eq!(HpccConfig { u_weight_pct: 0, ..cfg() }.validate().unwrap_err(), ParamError::UWeight);
    assert_eq!(HpccConfig { u_weight_pct: 101, ..cfg() }.validate().unwrap_err(), ParamError::UWeight);
}

#[test]
fn max_increase_bounds_one_update_and_leaves_decreases_alone() {
    let p = params(HpccConfig { max_stage: 0, max_increase_pct: 125, ..cfg() });
    let mut f = HpccFlow::new(&p);
    let mut path = Path::new(1);
    f.on_sample(&p, &path.sample(0));
    // U = 0.5 asks for ×1.9; one update gives at most ×1.25.
    assert_eq!(path.round(&mut f, &p, 500_000).window_bytes, BDP as u32 * 5 / 4);
    // U = 1.9: W = Wc·0.95/1.9 + W_ai, unbounded below.
    assert_eq!(path.round(&mut f, &p, 1_900_000).window_bytes, BDP as u32 * 5 / 8 + 1_000);
    for bad in [100, 1001, 50] {
        assert_eq!(HpccConfig { max_increase_pct: bad, ..cfg() }.validate().unwrap_err(), ParamError::MaxIncrease);
    }
}

/// A low U (at most `low_u_pct`% of eta) with the increase bounded: the
/// law's multiplicative step whatever the additive stage, within ×2. Above
/// it, or with `low_u_pct` 0, the stage's additive step; with no bound
/// (the drafts), the stage alone decides.
#[test]
fn a_low_u_is_a_multiplicative_step_whatever_the_stage() {
    let after = |low_u_pct: u32, max_increase_pct: u32, util_ppm: u64| {
        let p = params(HpccConfig { max_stage: 3, max_increase_pct, low_u_pct, ..cfg() });
        let mut f = HpccFlow::new(&p);
        let mut path = Path::new(1);
        f.on_sample(&p, &path.sample(0));
        path.round(&mut f, &p, util_ppm).window_bytes
    };
    let additive = BDP as u32 + 1_000;
    // U = 0.6 ≤ 0.75·0.95: W = Wc·0.95/0.6 + W_ai.
    let law = (BDP as f64 * 0.95 / 0.6) as u32 + 1_000;
    assert!(after(75, 110, 600_000).abs_diff(law) <= 1, "{} against {law}", after(75, 110, 600_000));
    // At U = 0.3 the law's ×3.2 is bounded at ×2.
    assert_eq!(after(75, 110, 300_000), 2 * BDP as u32);
    // U = 0.8 is not low: the additive stage, as with the rule off.
    assert_eq!(after(75, 110, 800_000), additive);
    assert_eq!(after(0, 110, 600_000), additive);
    assert_eq!(after(0, 110, 300_000), additive);
    // Without the bound the rule is off: the drafts' stages.
    assert_eq!(after(75, 0, 600_000), additive);
    assert_eq!(HpccConfig { low_u_pct: 101, ..cfg() }.validate().unwrap_err(), ParamError::LowU);
}

#[test]
fn without_the_min_filter_the_queue_term_is_the_current_qlen() {
    let p = params(HpccConfig { qlen_min_filter: false, ..cfg() });
    // 2 BDP of queue now: u' = 2 + 1, whatever the previous sample saw.
    let f = after_queues(&p, BDP / 2, 2 * BDP);
    assert_eq!(f.u_q40(), 3 * U_ONE);
    assert_eq!(f.window_bytes(), (125_000.0 * 0.95 / 3.0) as u32 + 1_000);
    // And a queue that drained since is forgotten at once: u' = 0 + 1.
    assert_eq!(after_queues(&p, 2 * BDP, 0).u_q40(), U_ONE);
}

#[test]
fn srtt_pacing_cap_is_pct_of_the_window_per_srtt() {
    // 150% of 25000 B per 5 ms = 7.5 MB/s.
    assert_eq!(srtt_pacing_cap(25_000, 150, 5_000), 7_500_000);
    assert_eq!(srtt_pacing_cap(25_000, 100, 2_000), 12_500_000);
    // Off, or no RTT sample yet: no cap.
    assert_eq!(srtt_pacing_cap(25_000, 0, 5_000), u64::MAX);
    assert_eq!(srtt_pacing_cap(25_000, 150, 0), u64::MAX);
    // The largest inputs saturate instead of overflowing.
    assert_eq!(srtt_pacing_cap(u32::MAX, u32::MAX, 1), u64::MAX);
    assert_eq!(srtt_pacing_cap(u32::MAX, 1000, u32::MAX), u64::from(u32::MAX) * 1000 * 10_000 / u64::from(u32::MAX));
}

#[test]
fn srtt_pacing_cap_leaves_w_over_t_alone_while_srtt_is_near_t() {
    let p = params(cfg());
    let f = HpccFlow::new(&p);
    let w = f.window_bytes();
    let t_us = (T / 1_000) as u32;
    // srtt = T, or up to 1.5 T: 150% of W/srtt is at least W/T.
    for srtt in [t_us, t_us * 3 / 2] {
        assert!(srtt_pacing_cap(w, 150, srtt) >= f.pacing_rate(&p), "srtt {srtt}");
    }
    // srtt = 3 T: the cap is half of W/T.
    assert_eq!(srtt_pacing_cap(w, 150, 3 * t_us), f.pacing_rate(&p) / 2);
}

#[test]
fn srtt_pacing_cap_matches_a_128_bit_reference() {
    let reference = |w: u32, pct: u32, srtt: u32| -> u64 {
        if pct == 0 || srtt == 0 {
            return u64::MAX;
        }
        let x = u128::from(w) * u128::from(pct) * 10_000 / u128::from(srtt);
        u64::try_from(x).unwrap_or(u64::MAX)
    };
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    for i in 0..100_000 {
        let (w, srtt) = (next(), next() >> (i % 32));
        // The module's range, and any u32 (then only saturation must agree).
        let pct = if i % 2 == 0 { 100 + next() % 901 } else { next() };
        let (got, want) = (srtt_pacing_cap(w, pct, srtt), reference(w, pct, srtt));
        if pct <= 1000 {
            assert_eq!(got, want, "w {w} pct {pct} srtt {srtt}");
        } else {
            // Past 4·10^5 % the fallback divides by srtt first: it may lose
            // up to pct/100 + 1 B/s, never more, and saturates only past u64.
            assert!(got <= want && want - got <= u64::from(pct) / 100 + 1, "w {w} pct {pct} srtt {srtt}: {got} vs {want}");
        }
    }
}

/// A flow driven down to its minimum window by a burst on its path (the
/// module's knobs: one stage, +10% per update, window validation), then
/// alone on the idle link. The glue reports as `used` what it sees in
/// flight, which after an ACK is the window less that ACK's segment. At
/// every small window the flow must regain 90% of eta·B·T within 50
/// updates (one per base RTT here).
#[test]
fn window_validation_climbs_back_from_every_small_window() {
    const MSS: u32 = 1448;
    const T2: u64 = 2_000_000; // 2 ms
    const B2: u64 = 100_000_000; // 100 Mb/s
    const BDP2: u64 = B2 / 8 * T2 / 1_000_000_000; // 25 000 bytes
    for min_segs in 2..=4u32 {
        let p = params(HpccConfig {
            base_rtt_ns: T2,
            max_stage: 1,
            wai_bytes: 312,
            init_window_bytes: BDP2 as u32,
            min_window_bytes: min_segs * MSS,
            max_window_bytes: 64 * BDP2 as u32,
            mode: Mode::Probe,
            max_increase_pct: 110,
            qlen_min_filter: false,
            ..cfg()
        });
        let mut f = HpccFlow::new(&p);
        let mut hop = HopSample { rate_bps: B2, ts_ns: 1_000_000, tx_bytes: 5_000_000, qlen_bytes: 0 };
        let (mut now, mut seq) = (50_000_000u64, 1000u32);
        let mut step = |f: &mut HpccFlow, tx: u64, q: u64| {
            hop.ts_ns += T2;
            hop.tx_bytes += tx;
            hop.qlen_bytes = q;
            now += T2;
            let ack = seq;
            seq = seq.wrapping_add(100_000);
            let hops = [hop];
            f.on_sample(&p, &Sample { now_ns: now, ack_seq: ack, snd_nxt: seq, path_id: 1, hops: &hops })
        };
        step(&mut f, 0, 0);
        // The burst: the link full and a 4-BDP queue until W is at its minimum.
        for _ in 0..200 {
            let w = f.window_bytes();
            f.set_used_window(Some(w.saturating_sub(MSS)));
            step(&mut f, BDP2, 4 * BDP2);
        }
        assert_eq!(u64::from(f.window_bytes()), u64::from(min_segs * MSS), "min {min_segs}: at the floor");
        // Alone on the idle link: the flow sends W per T.
        let target = BDP2 * 95 / 100 * 9 / 10;
        let mut rounds = None;
        for r in 1..=50u32 {
            let w = f.window_bytes();
            f.set_used_window(Some(w.saturating_sub(MSS)));
            step(&mut f, u64::from(w), 0);
            if u64::from(f.window_bytes()) >= target {
                rounds = Some(r);
                break;
            }
        }
        assert!(rounds.is_some(), "min {min_segs} segs: W = {} B after 50 updates", f.window_bytes());
        eprintln!("min {min_segs} segs: 90% of eta·B·T after {rounds:?} updates");
    }
}
