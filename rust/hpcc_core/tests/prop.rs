//! Property tests: the fixed-point core against the f64 reference model
//! (hpcc-ref) at every event of random traces of 10,000+ events.
//!
//! Measured (closing note): the default run (64 traces × 10,000 events)
//! sees a worst relative W error of 3.1e-6, the long run
//! (`HPCC_PROP_CASES=2000 cargo test --release -p hpcc-core --test prop --
//! --ignored --nocapture`, 2000 × 20,000 = 4·10^7 events) 1.5e-5; both
//! occur at windows of a few bytes, where the 2^-16-byte window resolution
//! dominates. Event classification and incStage agree at every event.

use hpcc_core::fixed::{div_wide, U_ONE, WIN_ONE};
use hpcc_core::law::{Event, HpccFlow};
use hpcc_ref::gen::{random_setup, Rng, TraceGen};
use hpcc_ref::{RefFlow, RefParams};

/// Worst relative error of W and worst absolute error of U over `cases`
/// random setups of `events` events each, plus branch-coverage counters.
struct Stats {
    worst_w: f64,
    worst_w_at: (u64, usize),
    worst_u: f64,
    events: usize,
    committed: usize,
    updated: usize,
    stale: usize,
    path_changes: usize,
    md_commits: usize,
    ai_commits: usize,
    clamped: usize,
}

fn run(seed0: u64, cases: u64, events: usize) -> Stats {
    let mut st = Stats {
        worst_w: 0.0,
        worst_w_at: (0, 0),
        worst_u: 0.0,
        events: 0,
        committed: 0,
        updated: 0,
        stale: 0,
        path_changes: 0,
        md_commits: 0,
        ai_commits: 0,
        clamped: 0,
    };
    for seed in seed0..seed0 + cases {
        let mut rng = Rng::new(seed);
        let setup = random_setup(&mut rng);
        let p = setup.cfg.validate().expect("generator makes valid configs");
        let rp = RefParams::from_params(&p);
        // Three in four traces close the loop through the reference window.
        let closed = seed % 4 != 0;
        let mut gen = TraceGen::new(&mut rng, &setup);
        assert!(events >= 10_000);
        let mut f = HpccFlow::new(&p);
        let mut r = RefFlow::new(&rp);
        for i in 0..events {
            let e = gen.next(&mut rng, closed.then_some(r.w));
            let s = e.sample();
            // Window validation: one trace in three reports the window used
            // (a random fraction of W, often all of it); the rest run the
            // drafts' law.
            let used = (seed % 3 == 0).then(|| (r.w * rng.log_uniform(0.05, 1.5)).min(u32::MAX as f64) as u32);
            f.set_used_window(used);
            r.used = used.map(f64::from);
            let o = f.on_sample(&p, &s);
            let ro = r.on_sample(&rp, &s);
            assert_eq!(o.event, ro.event, "seed {seed} event {i}: {setup:?}");
            assert_eq!(f.inc_stage(), ro.inc_stage, "seed {seed} event {i}");
            let w = f.window_q16() as f64 / WIN_ONE as f64;
            let rel = (w - ro.window).abs() / ro.window;
            if rel > st.worst_w {
                st.worst_w = rel;
                st.worst_w_at = (seed, i);
            }
            assert!(
                rel <= 0.005,
                "seed {seed} event {i}: W {w} vs reference {} ({:.4}%), {setup:?}",
                ro.window,
                rel * 100.0
            );
            assert_eq!(o.window_bytes, f.window_bytes());
            let u = f.u_q40() as f64 / U_ONE as f64;
            let du = (u - ro.u).abs() / ro.u.max(1e-3);
            st.worst_u = st.worst_u.max(du);
            st.events += 1;
            match o.event {
                Event::Committed => {
                    st.committed += 1;
                    if f.inc_stage() == 0 {
                        st.md_commits += 1;
                    } else {
                        st.ai_commits += 1;
                    }
                }
                Event::Updated => st.updated += 1,
                Event::Stale(_) => st.stale += 1,
                Event::PathChanged => st.path_changes += 1,
                Event::Recorded => {}
            }
            if ro.window == rp.min || ro.window == rp.max {
                st.clamped += 1;
            }
        }
    }
    st
}

#[test]
fn window_within_half_percent_of_f64_model_on_random_traces() {
    let st = run(1, 64, 10_000);
    println!(
        "prop: {} events, worst W rel error {:.3e} (seed {}, event {}), worst U rel error {:.3e}; \
         committed {} (MD/MI {} / AI {}), updated {}, stale {}, path changes {}, clamped {}",
        st.events,
        st.worst_w,
        st.worst_w_at.0,
        st.worst_w_at.1,
        st.worst_u,
        st.committed,
        st.md_commits,
        st.ai_commits,
        st.updated,
        st.stale,
        st.path_changes,
        st.clamped
    );
    // The traces must exercise every branch, or the comparison means little.
    assert!(st.md_commits > 1000 && st.ai_commits > 1000, "branch coverage");
    assert!(st.updated > 1000 && st.stale > 100 && st.path_changes > 10);
    assert!(st.clamped < st.events / 2, "too many clamped windows: {}", st.clamped);
}

/// Longer run: `cargo test --release -p hpcc-core --test prop -- --ignored`.
#[test]
#[ignore]
fn window_within_half_percent_long() {
    let cases = std::env::var("HPCC_PROP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let st = run(1_000, cases, 20_000);
    println!(
        "prop-long: {} events, worst W rel error {:.3e} (seed {}, event {}), worst U rel error {:.3e}",
        st.events, st.worst_w, st.worst_w_at.0, st.worst_w_at.1, st.worst_u
    );
}

#[test]
fn div_wide_matches_u128_division() {
    let mut rng = Rng::new(7);
    let mut checked = 0;
    for i in 0..2_000_000u64 {
        // Mix magnitudes so every normalization shift is exercised.
        let d = match i % 4 {
            0 => rng.next_u64(),
            1 => rng.next_u64() >> rng.range(0, 63),
            2 => (1u64 << rng.range(0, 63)).wrapping_add(rng.range(0, 3)).wrapping_sub(1),
            _ => rng.range(1, 1000),
        };
        let n_hi = rng.next_u64() >> rng.range(0, 64).min(63);
        let n = (u128::from(n_hi) << 64 | u128::from(rng.next_u64())) >> rng.range(0, 127);
        let want = if d == 0 { None } else { u64::try_from(n / u128::from(d)).ok() };
        assert_eq!(div_wide(n, d), want, "{n} / {d}");
        if want.is_some() {
            checked += 1;
        }
    }
    assert!(checked > 500_000);
    // Edges.
    assert_eq!(div_wide(u128::MAX, u64::MAX), None);
    assert_eq!(div_wide((u128::from(u64::MAX - 1) << 64) | u128::from(u64::MAX), u64::MAX), Some(u64::MAX));
    assert_eq!(div_wide(1 << 64, 2), Some(1 << 63));
    assert_eq!(div_wide(5, 0), None);
}
