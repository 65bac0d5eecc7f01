//! Host-only companions of the `no_std` core, shared by the tests, the
//! replay tool, the scenario model and the benchmarks:
//!
//! * [`RefFlow`]: the HPCC++ law written directly from the drafts in `f64`,
//!   with the same edge-case rules as the core (first event records, path
//!   change, stale samples, hop choice, clamping), so the two can be
//!   compared event by event.
//! * [`gen`]: a small deterministic PRNG and random, valid configurations
//!   and telemetry traces.

pub mod gen;

use hpcc_core::law::{Event, HopSample, Sample, StaleReason};
use hpcc_core::params::{HpccParams, Mode};
use hpcc_core::wire::MAX_HOPS;

/// Parameters of the reference model, in `f64` (ns, bytes, bits/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefParams {
    /// Base RTT `T` in ns.
    pub t_ns: f64,
    /// Target utilization.
    pub eta: f64,
    /// `maxStage`.
    pub max_stage: u32,
    /// `W_ai` in bytes.
    pub wai: f64,
    /// Initial window, bytes.
    pub init: f64,
    /// Window bounds, bytes.
    pub min: f64,
    /// Window bounds, bytes.
    pub max: f64,
    /// Sender or receiver mode.
    pub mode: Mode,
    /// Largest accepted hop rate (same validity rule as the core).
    pub max_rate_bps: u64,
    /// Path BDP cap as a fraction of `min_j(B_j)·T` (0: off).
    pub path_cap: f64,
    /// Sample weight as a fraction of tau/T.
    pub u_weight: f64,
    /// Largest W/Wc of one update (0: none).
    pub max_increase: f64,
    /// `low_u_pct` (0: the ×2 bound alone, at U ≤ eta/2).
    pub low_u_pct: u32,
    /// The drafts' `min(qlen, previous qlen)` (true) or the current qlen.
    pub qlen_min_filter: bool,
    /// Probe mode: a non-committing decrease from W before the last commit.
    pub precommit_ref: bool,
}

impl RefParams {
    /// The same parameters as a validated core parameter set (`W_ai` after
    /// the default rule).
    pub fn from_params(p: &HpccParams) -> Self {
        let c = p.config();
        Self {
            t_ns: c.base_rtt_ns as f64,
            eta: f64::from(c.eta_ppm) / 1e6,
            max_stage: c.max_stage,
            wai: f64::from(p.wai_bytes()),
            init: f64::from(c.init_window_bytes),
            min: f64::from(c.min_window_bytes),
            max: f64::from(c.max_window_bytes),
            mode: c.mode,
            max_rate_bps: hpcc_core::fixed::MAX_RATE_BPS,
            path_cap: f64::from(c.path_cap_pct) / 100.0,
            u_weight: f64::from(c.u_weight_pct) / 100.0,
            max_increase: f64::from(c.max_increase_pct) / 100.0,
            low_u_pct: c.low_u_pct,
            qlen_min_filter: c.qlen_min_filter,
            precommit_ref: c.precommit_ref,
        }
    }
}

/// Result of one reference event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefOutcome {
    /// What happened (same classification as the core).
    pub event: Event,
    /// `W` in bytes, unrounded.
    pub window: f64,
    /// `U` after the event.
    pub u: f64,
    /// `incStage` after the event.
    pub inc_stage: u32,
}

/// The reference flow state.
#[derive(Debug, Clone, PartialEq)]
pub struct RefFlow {
    recs: Vec<HopSample>,
    has_records: bool,
    path_id: u16,
    /// `U`.
    pub u: f64,
    /// `Wc`, bytes.
    pub wc: f64,
    /// `W`, bytes.
    pub w: f64,
    /// `W` just before the last commit, bytes.
    pub w_pre: f64,
    /// `incStage`.
    pub inc_stage: u32,
    last_update_seq: Option<u32>,
    last_update_time: Option<u64>,
    rec_seq: u32,
    /// Window validation: bytes in flight since the last update (None: off).
    pub used: Option<f64>,
}

impl RefFlow {
    /// `U = 1`, `incStage = 0`, `W = Wc = init`.
    pub fn new(p: &RefParams) -> Self {
        Self {
            recs: Vec::new(),
            has_records: false,
            path_id: 0,
            u: 1.0,
            wc: p.init,
            w: p.init,
            w_pre: p.init,
            inc_stage: 0,
            last_update_seq: None,
            last_update_time: None,
            rec_seq: 0,
            used: None,
        }
    }

    fn out(&self, event: Event) -> RefOutcome {
        RefOutcome { event, window: self.w, u: self.u, inc_stage: self.inc_stage }
    }

    fn record(&mut self, s: &Sample<'_>) {
        self.rec_seq = s.ack_seq;
        self.recs = s.hops.to_vec();
        self.path_id = s.path_id;
        self.has_records = true;
    }

    /// NewAck / NewINT on one full-width sample.
    pub fn on_sample(&mut self, p: &RefParams, s: &Sample<'_>) -> RefOutcome {
        let n = s.hops.len();
        if n == 0 {
            return self.out(Event::Stale(StaleReason::NoHops));
        }
        if n > MAX_HOPS {
            return self.out(Event::Stale(StaleReason::TooManyHops));
        }
        if s.hops.iter().any(|h| h.rate_bps == 0 || h.rate_bps > p.max_rate_bps) {
            return self.out(Event::Stale(StaleReason::BadRate));
        }
        // Path BDP cap: a fraction of the slowest hop's B·T.
        let cap = if p.path_cap > 0.0 {
            let b = s.hops.iter().map(|h| h.rate_bps).min().unwrap_or(0) as f64;
            p.path_cap * b * p.t_ns / 8e9
        } else {
            f64::INFINITY
        };
        let first = !self.has_records;
        if first || self.path_id != s.path_id || self.recs.len() != n {
            self.record(s);
            self.w = self.w.min(cap).max(p.min);
            self.wc = self.wc.min(cap).max(p.min);
            return self.out(if first { Event::Recorded } else { Event::PathChanged });
        }
        // MeasureInflight.
        let mut best: Option<(f64, f64)> = None; // (u', tau)
        for (h, r) in s.hops.iter().zip(&self.recs) {
            let dts = h.ts_ns.wrapping_sub(r.ts_ns);
            let dtx = h.tx_bytes.wrapping_sub(r.tx_bytes);
            if dts == 0 {
                return self.out(Event::Stale(StaleReason::ZeroDts));
            }
            if dts > i64::MAX as u64 || dtx > i64::MAX as u64 {
                return self.out(Event::Stale(StaleReason::Backwards));
            }
            let b = h.rate_bps as f64; // bits/s
            let bt = b * p.t_ns / 8e9; // bytes
            let tx_rate = dtx as f64 / dts as f64 * 8e9; // bits/s
            let qmin = if p.qlen_min_filter { h.qlen_bytes.min(r.qlen_bytes) } else { h.qlen_bytes } as f64;
            let u = qmin / bt + tx_rate / b;
            match best {
                Some((bu, _)) if !(u > bu) => {}
                _ => best = Some((u, dts as f64)),
            }
        }
        let (u, dts) = best.unwrap_or((0.0, 0.0));
        let tau = dts.min(p.t_ns) * p.u_weight;
        self.u = (1.0 - tau / p.t_ns) * self.u + tau / p.t_ns * u;
        let update_wc = match p.mode {
            mode @ (Mode::Sender | Mode::Probe) => {
                // Sender: ack_seq after lastUpdateSeq; probe: the measured
                // interval began at or after it.
                let go = match (self.last_update_seq, mode) {
                    (None, _) => true,
                    (Some(l), Mode::Sender) => (s.ack_seq.wrapping_sub(l) as i32) > 0,
                    (Some(l), _) => (self.rec_seq.wrapping_sub(l) as i32) >= 0,
                };
                if go {
                    self.last_update_seq = Some(s.snd_nxt);
                }
                go
            }
            Mode::Receiver => {
                let go = match self.last_update_time {
                    None => true,
                    Some(l) => (s.now_ns as f64) > l as f64 + p.t_ns,
                };
                if go {
                    self.last_update_time = Some(s.now_ns);
                }
                go
            }
        };
        // ComputeWind.
        // A low U (at most low_u_pct% of eta) with the bounded increase on:
        // a multiplicative step whatever the stage, bounded at ×2 at least;
        // low_u_pct 0: the ×2 bound alone, at U ≤ eta/2.
        let low_pct = match p.low_u_pct {
            0 => hpcc_core::law::LOW_U_BOUND_ONLY_PCT,
            pct => pct,
        };
        let low_u = p.max_increase > 0.0 && 100.0 * self.u <= p.eta * f64::from(low_pct);
        let md = self.u >= p.eta || self.inc_stage >= p.max_stage || (low_u && p.low_u_pct != 0);
        let w = if md {
            if self.u == 0.0 {
                f64::INFINITY
            } else {
                self.wc / (self.u / p.eta) + p.wai
            }
        } else {
            self.wc + p.wai
        };
        let w = w.min(p.max).min(cap);
        // Bounded increase, at least ×2 at a low U.
        let inc = if low_u {
            p.max_increase.max(f64::from(hpcc_core::law::LOW_U_INCREASE_PCT) / 100.0)
        } else {
            p.max_increase
        };
        let w = if p.max_increase > 0.0 { w.min(self.wc * inc) } else { w };
        // Window validation: no increase above USED_WINDOW_GAIN times the
        // window used plus one minimum window.
        let w = match self.used {
            Some(u) => w.min(((u + p.min) * hpcc_core::law::USED_WINDOW_GAIN as f64).max(self.wc)),
            None => w,
        };
        let mut w = w.max(p.min);
        // A stale decrease (probe mode): from W before the last commit,
        // within [the law's from Wc, Wc].
        if !update_wc && md && w < self.wc && p.precommit_ref && p.mode == Mode::Probe {
            let pre = if self.u == 0.0 { f64::INFINITY } else { self.w_pre / (self.u / p.eta) + p.wai };
            w = w.max(pre.min(self.wc)).max(p.min);
        }
        let before = std::mem::replace(&mut self.w, w);
        if update_wc {
            self.w_pre = before;
            self.wc = self.w;
            self.inc_stage = if md { 0 } else { self.inc_stage + 1 };
        }
        self.record(s);
        self.out(if update_wc { Event::Committed } else { Event::Updated })
    }
}
