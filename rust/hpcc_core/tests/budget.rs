//! The probe budget (`hpcc_core::budget`) with real flow controllers:
//! many flows that want probes at every ACK share one namespace's budget.
//! The namespace never sends more than the budget (plus one burst), each
//! flow gets the same fraction of what it wants, and when its probes are
//! further apart than the INT timestamps reach, a flow probes in pairs
//! whose partner follows within half that reach.

use hpcc_core::budget::{self, Admit, Budget, BURST};
use hpcc_core::control::{Conn, FlowCtl};
use hpcc_core::knobs::Knobs;
use hpcc_core::probe::MAX_INTERVAL_NS;

const MSS: u32 = 1448;

fn conn(now_ns: u64, srtt_us: u32) -> Conn {
    Conn {
        now_ns,
        mss: MSS,
        cwnd: 10,
        ssthresh: u32::MAX,
        srtt_us,
        min_rtt_us: srtt_us,
        packets_out: 10,
        in_flight: 10,
        snd_nxt: 1,
        in_reduction: false,
        cwnd_limited: true,
        max_pacing_rate: u64::MAX,
    }
}

/// What a run saw: per flow, the times its probes left.
struct Run {
    sent: Vec<Vec<u64>>,
    waits: u64,
    over: u64,
}

/// `n` flows at a `srtt_us` RTT, each ACKed every `ack_ns` (staggered),
/// for `secs` seconds, asking for a probe whenever one is due, as the
/// kernel glue does.
fn run(k: &Knobs, n: usize, srtt_us: u32, ack_ns: u64, secs: u64) -> Run {
    let b = Budget::new();
    let t0 = 1_000_000_000u64;
    let mut flows: Vec<FlowCtl> = (0..n).map(|_| FlowCtl::new(k, &conn(t0, srtt_us)).unwrap()).collect();
    let mut r = Run { sent: vec![Vec::new(); n], waits: 0, over: 0 };
    let stagger = ack_ns / n as u64;
    let mut t = t0;
    while t < t0 + secs * 1_000_000_000 {
        for (i, f) in flows.iter_mut().enumerate() {
            let now = t + i as u64 * stagger;
            let c = conn(now, srtt_us);
            if !f.probe_due(k, &c) {
                continue;
            }
            match f.admit_probe(k, &b, &c) {
                Admit::Send => {
                    f.probe_sent(now);
                    r.sent[i].push(now);
                }
                Admit::Wait => r.waits += 1,
                Admit::OverBudget => r.over += 1,
            }
        }
        t += ack_ns;
    }
    r
}

/// Most probes any window of `w_ns` saw, over all flows.
fn most_in_window(r: &Run, w_ns: u64) -> usize {
    let mut all: Vec<u64> = r.sent.iter().flatten().copied().collect();
    all.sort_unstable();
    let mut best = 0;
    let mut j = 0;
    for i in 0..all.len() {
        while all[i] - all[j] >= w_ns {
            j += 1;
        }
        best = best.max(i - j + 1);
    }
    best
}

#[test]
fn without_a_budget_every_due_probe_leaves() {
    let k = Knobs { probe_budget: 0, ..Knobs::DEFAULT };
    let r = run(&k, 4, 100, 10_000, 1);
    assert_eq!((r.waits, r.over), (0, 0));
    for s in &r.sent {
        // One per smoothed RTT (100 us) for a second.
        assert!((9_900..=10_001).contains(&s.len()), "{}", s.len());
    }
}

#[test]
fn a_binding_budget_is_never_exceeded_and_shared_fairly() {
    // 100 flows at a 20 us RTT want 5,000,000 probes a second; the budget
    // is 20,000: each flow's share is 5 ms (below the pair threshold).
    let k = Knobs { probe_budget: 20_000, probe_min_interval_us: 0, ..Knobs::DEFAULT };
    let r = run(&k, 100, 20, 50_000, 2);
    assert!(most_in_window(&r, 1_000_000_000) <= 20_000 + BURST as usize, "{}", most_in_window(&r, 1_000_000_000));
    let fair = 20_000.0 * 2.0 / 100.0;
    for (i, s) in r.sent.iter().enumerate() {
        let got = s.len() as f64;
        assert!(got >= 0.8 * fair && got <= 1.2 * fair, "flow {i}: {got} probes, fair {fair}");
        // Its probes are about 5 ms apart, never less than half that but
        // for a pair's partner, once the demand has been measured (one
        // epoch).
        let settled = 1_000_000_000 + (1u64 << budget::EPOCH_SHIFT);
        // (A partner follows a probe that came after more than the INT
        // timestamps' reach.)
        let min_gap = s
            .windows(3)
            .filter(|w| w[1] > settled && w[1] - w[0] < MAX_INTERVAL_NS)
            .map(|w| w[2] - w[1])
            .min()
            .unwrap();
        assert!(min_gap >= 2_500_000, "flow {i}: gap {min_gap} ns");
    }
    assert!(r.waits > 0);
}

#[test]
fn shares_beyond_the_timestamps_reach_probe_in_pairs() {
    // 10,000 flows, 5,000 probes a second: a share of 2 s. Each flow sends
    // pairs whose partner follows one probe interval (200 us) after the
    // opener, so that the pair measures a rate.
    let k = Knobs { probe_budget: 5_000, ..Knobs::DEFAULT };
    let r = run(&k, 10_000, 200, 1_000_000, 5);
    assert!(most_in_window(&r, 1_000_000_000) <= 5_000 + BURST as usize);
    let mut pairs = 0;
    for (i, s) in r.sent.iter().enumerate() {
        assert!(!s.is_empty(), "flow {i} never probed");
        // A probe after a gap beyond the timestamps' reach opens a pair;
        // once the count has seen every flow, every opener's partner follows
        // one probe interval (or one ACK) later, and the next pair only
        // after the reach.
        let settled = 1_000_000_000 + (1u64 << budget::EPOCH_SHIFT);
        let mut k = 0;
        while k < s.len() {
            let opener = k == 0 || s[k] - s[k - 1] >= MAX_INTERVAL_NS;
            let partner = k > 0 && s[k] - s[k - 1] < MAX_INTERVAL_NS / 2;
            assert!(opener || partner || s[k] < settled, "flow {i}: probe at {} is neither", s[k]);
            if opener && s[k] > settled && s[k] < 5_900_000_000 {
                let next = s.get(k + 1).copied().unwrap_or(u64::MAX);
                assert!(next - s[k] < MAX_INTERVAL_NS / 2, "flow {i}: an opener at {} without its partner", s[k]);
                assert!(s.get(k + 2).map_or(true, |&t| t - next >= MAX_INTERVAL_NS), "flow {i}: pairs too close");
                pairs += 1;
            }
            k += 1;
        }
    }
    // 5,000 probes a second for about 4 s: about 10,000 pairs.
    assert!(pairs >= 8_000, "{pairs} pairs");
}

#[test]
fn the_response_budget_caps_answers() {
    let b = Budget::new();
    let mut n = 0;
    for us in 0..2_000_000u64 {
        if b.take_response(1_000_000_000 + us * 1000, 10_000) {
            n += 1;
        }
    }
    assert!((20_000..=20_000 + BURST as usize + 1).contains(&n), "{n}");
    assert_eq!(budget::earning(20_000, 10_000), budget::UNIT / 2);
}
