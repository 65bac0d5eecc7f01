//! A small deterministic fluid model: N senders, each behind its own NIC
//! link, share one bottleneck switch port with a FIFO queue. Every sender
//! runs the fixed-point HPCC++ core; the switch stamps telemetry as a real
//! one would (egress timestamp, cumulative transmitted bytes, queue length,
//! link rate) and the sender sees it half an RTT later, on its ACKs.
//!
//! Time advances in steps of `dt_ns`. Per step and flow:
//!
//! * the sender sends `min(R·dt, W − inflight)` bytes (paced at `R = W/T`,
//!   limited by the window), which reach the switch `T/2` later;
//! * the switch serves `min(B·dt, queue + arrivals)` bytes, shared among
//!   flows in proportion to their bytes present (fluid FIFO); served bytes
//!   are ACKed `T/2` later (so queueing delay lengthens the RTT);
//! * every `sample_interval_ns` each active flow processes one ACK carrying
//!   two hops of telemetry: its NIC link and the bottleneck, as stamped
//!   `T/2` earlier. With `wire` set, the telemetry goes through the
//!   Figure-4 encoding (`RawHop::quantize`, `encode`, `HpccFlow::on_int`),
//!   narrow counters, wraps and all.
//!
//! Statistics are collected per base RTT.

pub mod module;

use hpcc_core::law::{HopSample, HpccFlow, Sample};
use hpcc_core::params::HpccConfig;
use hpcc_core::wire::{self, IntStack, RawHop, RATES};
use hpcc_ref::gen::TraceEvent;

/// A scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Bottleneck (and NIC) rate, bits/s; must be a rate of the wire table.
    pub link_bps: u64,
    /// Base (propagation) RTT `T`, ns.
    pub base_rtt_ns: u64,
    /// Time step, ns (divides `T/2`).
    pub dt_ns: u64,
    /// Start time of each flow, ns.
    pub starts_ns: Vec<u64>,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Telemetry (ACK) interval per flow, ns.
    pub sample_interval_ns: u64,
    /// Law parameters shared by all flows.
    pub cfg: HpccConfig,
    /// Route telemetry through the Figure-4 wire encoding.
    pub wire: bool,
    /// Record the full-width samples flow 0 receives (for replay traces).
    pub record_flow0: bool,
}

impl Scenario {
    /// Bandwidth-delay product in bytes.
    pub fn bdp(&self) -> f64 {
        self.link_bps as f64 / 8e9 * self.base_rtt_ns as f64
    }
}

/// Statistics of one base RTT.
#[derive(Debug, Clone, PartialEq)]
pub struct RttStat {
    /// Start of the interval, ns.
    pub t_ns: u64,
    /// Bytes each flow got through the bottleneck, as a rate in bits/s.
    pub flow_bps: Vec<f64>,
    /// Bytes each flow sent into the network, as a rate in bits/s.
    pub sent_bps: Vec<f64>,
    /// Bottleneck utilization (served / capacity).
    pub util: f64,
    /// Mean queue, bytes.
    pub queue_mean: f64,
    /// Max queue, bytes.
    pub queue_max: f64,
    /// Window of each flow at the end of the interval, bytes.
    pub window: Vec<u32>,
}

impl RttStat {
    /// An interval of `n` flows starting at `t_ns`, nothing counted yet.
    pub fn empty(n: usize, t_ns: u64) -> Self {
        Self {
            t_ns,
            flow_bps: vec![0.0; n],
            sent_bps: vec![0.0; n],
            util: 0.0,
            queue_mean: 0.0,
            queue_max: 0.0,
            window: vec![0; n],
        }
    }
}

/// Result of a run.
#[derive(Debug, Clone)]
pub struct Run {
    /// One entry per base RTT.
    pub rtts: Vec<RttStat>,
    /// Samples flow 0 received (when recorded).
    pub trace: Vec<TraceEvent>,
    /// Number of non-stale updates across all flows.
    pub updates: u64,
}

struct FlowState {
    law: HpccFlow,
    window: f64,
    rate_bytes_per_ns: f64,
    sent: f64,
    acked: f64,
    in_queue: f64,
    isn: u32,
    active: bool,
}

/// Runs a scenario.
pub fn run(sc: &Scenario) -> Run {
    let p = sc.cfg.validate().expect("valid scenario parameters");
    let rate = RATES.iter().find(|r| r.bps() == sc.link_bps).expect("link rate in the wire table");
    let n = sc.starts_ns.len();
    let mut port = Port::new(n, sc.link_bps, sc.base_rtt_ns, sc.dt_ns);
    let (steps_half, steps_rtt, ring) = (port.steps_half, port.steps_rtt, port.ring);
    let sample_every = (sc.sample_interval_ns / sc.dt_ns).max(1) as usize;
    let total_steps = (sc.duration_ns / sc.dt_ns) as usize;

    let mut flows: Vec<FlowState> = (0..n)
        .map(|i| FlowState {
            law: HpccFlow::new(&p),
            window: f64::from(sc.cfg.init_window_bytes),
            rate_bytes_per_ns: 0.0,
            sent: 0.0,
            acked: 0.0,
            in_queue: 0.0,
            isn: 1_000_000u32.wrapping_mul(i as u32 + 7),
            active: false,
        })
        .collect();
    // Switch history: (ts_ns, tx_total, qlen) per step; per-flow NIC history: sent.
    let mut sw_hist = vec![(0u64, 0.0f64, 0.0f64); ring];
    let mut nic_hist = vec![vec![0.0f64; ring]; n];

    let mut out = Run { rtts: Vec::new(), trace: Vec::new(), updates: 0 };
    let mut cur = RttStat::empty(n, 0);
    for step in 0..total_steps {
        let now = step as u64 * sc.dt_ns;
        let slot = step % ring;
        // Senders.
        for (i, f) in flows.iter_mut().enumerate() {
            if !f.active && now >= sc.starts_ns[i] {
                f.active = true;
                f.law = HpccFlow::new(&p);
                f.window = f64::from(sc.cfg.init_window_bytes);
                // Start at line rate: R = W_init / T.
                f.rate_bytes_per_ns = f.window / sc.base_rtt_ns as f64;
            }
            // ACKs arriving now.
            f.acked += port.acked(i, step);
            let mut send = 0.0;
            if f.active {
                let inflight = f.sent - f.acked;
                send = (f.rate_bytes_per_ns * sc.dt_ns as f64).min((f.window - inflight).max(0.0));
            }
            f.sent += send;
            cur.sent_bps[i] += send * port.bucket_scale;
            port.send(i, step, send);
            nic_hist[i][slot] = f.sent;
        }
        // Switch.
        port.serve(step, flows.iter_mut().map(|f| &mut f.in_queue), &mut cur);
        sw_hist[slot] = (SW_CLOCK0 + now, port.tx_total, port.queue);

        // Telemetry on ACKs: state stamped T/2 ago at the switch, one RTT
        // ago at the NIC.
        if step >= steps_rtt {
            let (sw_ts, sw_tx, sw_q) = sw_hist[(step - steps_half) % ring];
            for (i, f) in flows.iter_mut().enumerate() {
                if !f.active || (step + i * sample_every / n.max(1)) % sample_every != 0 {
                    continue;
                }
                let nic_step = step - steps_rtt;
                let hops = [
                    HopSample {
                        rate_bps: sc.link_bps,
                        ts_ns: NIC_CLOCK0 + nic_step as u64 * sc.dt_ns,
                        tx_bytes: nic_hist[i][nic_step % ring] as u64,
                        qlen_bytes: 0,
                    },
                    HopSample { rate_bps: sc.link_bps, ts_ns: sw_ts, tx_bytes: sw_tx as u64, qlen_bytes: sw_q as u64 },
                ];
                let ack_seq = f.isn.wrapping_add(f.acked as u64 as u32);
                let snd_nxt = f.isn.wrapping_add(f.sent as u64 as u32);
                let now_host = HOST_CLOCK0 + now;
                let o = if sc.wire {
                    let mut st = IntStack { n_hops: 2, path_id: PATH_ID, ..Default::default() };
                    for (slot, h) in st.hops.iter_mut().zip(hops.iter()) {
                        *slot = RawHop::quantize(rate.code, h.ts_ns, h.tx_bytes, h.qlen_bytes).expect("rate code");
                    }
                    let mut buf = [0u8; wire::encoded_len(2)];
                    wire::encode(&st, &mut buf).expect("encode");
                    f.law.on_int(&p, &buf, now_host, ack_seq, snd_nxt).expect("valid stack")
                } else {
                    let s = Sample { now_ns: now_host, ack_seq, snd_nxt, path_id: PATH_ID, hops: &hops };
                    if sc.record_flow0 && i == 0 {
                        out.trace.push(TraceEvent {
                            now_ns: now_host,
                            ack_seq,
                            snd_nxt,
                            path_id: s.path_id,
                            hops: hops.to_vec(),
                        });
                    }
                    f.law.on_sample(&p, &s)
                };
                if !o.is_stale() {
                    out.updates += 1;
                }
                f.window = f64::from(o.window_bytes);
                f.rate_bytes_per_ns = o.pacing_rate as f64 / 1e9;
            }
        }
        if (step + 1) % steps_rtt == 0 {
            for (w, f) in cur.window.iter_mut().zip(&flows) {
                *w = if f.active { f.window as u32 } else { 0 };
            }
            let next_t = now + sc.dt_ns;
            out.rtts.push(std::mem::replace(
                &mut cur,
                RttStat::empty(n, next_t),
            ));
        }
    }
    out
}

/// Where the clocks start: the NIC's and the switch's at arbitrary
/// offsets, as real ones do, and the sender host's.
pub(crate) const NIC_CLOCK0: u64 = 123_456_789;
pub(crate) const SW_CLOCK0: u64 = 987_654_321;
pub(crate) const HOST_CLOCK0: u64 = 5_000_000_000;
/// The two-hop path's ID: the XOR of its hops' IDs (NIC 0x0c3, switch 0x5a5).
pub(crate) const PATH_ID: u16 = 0x5a5 ^ 0x0c3;

/// The bottleneck port and the delay lines around it: a sender's bytes
/// reach the port half a base RTT after they leave it, and the port's
/// output reaches the sender (as ACKs) half an RTT later. Steps are `dt`
/// apart; the delay lines are rings indexed by step.
pub(crate) struct Port {
    /// Bytes waiting at the port.
    pub(crate) queue: f64,
    /// Bytes the port has sent.
    pub(crate) tx_total: f64,
    /// Bytes it sends per step.
    pub(crate) cap: f64,
    /// Steps in half a base RTT, and in one.
    pub(crate) steps_half: usize,
    pub(crate) steps_rtt: usize,
    /// The rings' length.
    pub(crate) ring: usize,
    /// Bytes per base RTT to bits/s.
    pub(crate) bucket_scale: f64,
    to_switch: Vec<Vec<f64>>,
    to_sender: Vec<Vec<f64>>,
}

impl Port {
    /// A port of `link_bps` for `n` senders at base RTT `base_rtt_ns`, in
    /// steps of `dt_ns` (which must divide half the RTT).
    pub(crate) fn new(n: usize, link_bps: u64, base_rtt_ns: u64, dt_ns: u64) -> Self {
        let steps_half = (base_rtt_ns / 2 / dt_ns) as usize;
        assert!(steps_half >= 1 && steps_half as u64 * 2 * dt_ns == base_rtt_ns);
        let steps_rtt = 2 * steps_half;
        let ring = 2 * steps_rtt + 2;
        Port {
            queue: 0.0,
            tx_total: 0.0,
            cap: link_bps as f64 / 8e9 * dt_ns as f64,
            steps_half,
            steps_rtt,
            ring,
            bucket_scale: 8e9 / base_rtt_ns as f64,
            to_switch: vec![vec![0.0; ring]; n],
            to_sender: vec![vec![0.0; ring]; n],
        }
    }

    /// Sender `i` puts `bytes` on the wire at `step`.
    pub(crate) fn send(&mut self, i: usize, step: usize, bytes: f64) {
        self.to_switch[i][(step + self.steps_half) % self.ring] += bytes;
    }

    /// What reaches sender `i`'s ACK clock at `step`.
    pub(crate) fn acked(&mut self, i: usize, step: usize) -> f64 {
        std::mem::take(&mut self.to_sender[i][step % self.ring])
    }

    /// One step of the fluid FIFO: takes the step's arrivals, serves `cap`
    /// bytes shared among the flows in proportion to their bytes present
    /// (`in_queue`), sends what each got toward its sender and adds the
    /// step to `cur`. Returns the bytes served.
    pub(crate) fn serve<'a>(&mut self, step: usize, in_queue: impl Iterator<Item = &'a mut f64>, cur: &mut RttStat) -> f64 {
        let (slot, back) = (step % self.ring, (step + self.steps_half) % self.ring);
        let arrivals: Vec<f64> = self.to_switch.iter_mut().map(|d| std::mem::take(&mut d[slot])).collect();
        let present: f64 = self.queue + arrivals.iter().sum::<f64>();
        let served = self.cap.min(present);
        for (i, q) in in_queue.enumerate() {
            let mine = *q + arrivals[i];
            let out_i = if present > 0.0 { served * mine / present } else { 0.0 };
            *q = mine - out_i;
            self.to_sender[i][back] += out_i;
            cur.flow_bps[i] += out_i * self.bucket_scale;
        }
        self.queue = present - served;
        self.tx_total += served;
        cur.util += served / (self.cap * self.steps_rtt as f64);
        cur.queue_mean += self.queue / self.steps_rtt as f64;
        cur.queue_max = cur.queue_max.max(self.queue);
        served
    }
}

/// Jain's fairness index of the given rates.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * s2)
}

/// Bottleneck rate of the standard scenarios: 100 Gb/s.
pub const LINK_BPS: u64 = 100_000_000_000;
/// Base RTT of the standard scenarios: 10 µs (BDP 125,000 bytes).
pub const BASE_RTT_NS: u64 = 10_000;

fn standard(starts_ns: Vec<u64>, rtts: u64, wire: bool, expected_flows: u32) -> Scenario {
    let bdp = (LINK_BPS / 8 * BASE_RTT_NS / 1_000_000_000) as u32;
    Scenario {
        link_bps: LINK_BPS,
        base_rtt_ns: BASE_RTT_NS,
        dt_ns: 100,
        starts_ns,
        duration_ns: rtts * BASE_RTT_NS,
        sample_interval_ns: BASE_RTT_NS / 8,
        cfg: HpccConfig {
            base_rtt_ns: BASE_RTT_NS,
            eta_ppm: 950_000,
            max_stage: 5,
            wai_bytes: 0, // W_init (1 − eta) / N
            expected_flows,
            init_window_bytes: bdp, // start at line rate
            min_window_bytes: 1_500,
            max_window_bytes: 4 * bdp,
            mode: hpcc_core::params::Mode::Sender,
            path_cap_pct: 0, // the drafts' law
            u_weight_pct: 100,
            max_increase_pct: 0,
            low_u_pct: 0,
            qlen_min_filter: true,
            precommit_ref: false,
        },
        wire,
        record_flow0: false,
    }
}

/// `n` flows start together at line rate (an `n`:1 incast for one RTT);
/// `W_ai` follows the rule of thumb with `N = expected_flows`.
pub fn incast(n: usize, rtts: u64, wire: bool, expected_flows: u32) -> Scenario {
    standard(vec![0; n], rtts, wire, expected_flows)
}

/// `incumbents` flows from time 0, one more joining at line rate at
/// `join_rtt`.
pub fn late_joiner(incumbents: usize, join_rtt: u64, rtts: u64, wire: bool, expected_flows: u32) -> Scenario {
    let mut starts = vec![0; incumbents];
    starts.push(join_rtt * BASE_RTT_NS);
    standard(starts, rtts, wire, expected_flows)
}

/// Equilibrium utilization of `flows` flows at zero queue: summing
/// `W = Wc·eta/U + W_ai` over the flows with `U = ΣW/BDP` gives
/// `ΣW = eta·BDP + flows·W_ai`, i.e. utilization `eta + flows·W_ai/BDP`
/// (capped at 1). With the rule of thumb and `N = flows` this is exactly 1.
pub fn equilibrium_util(sc: &Scenario, flows: usize) -> f64 {
    let p = sc.cfg.validate().expect("valid");
    let eta = f64::from(sc.cfg.eta_ppm) / 1e6;
    (eta + flows as f64 * f64::from(p.wai_bytes()) / sc.bdp()).min(1.0)
}

/// Mean of `f` over RTTs `from..to`.
pub fn mean(r: &Run, from: usize, to: usize, f: impl Fn(&RttStat) -> f64) -> f64 {
    let s = &r.rtts[from..to];
    s.iter().map(f).sum::<f64>() / s.len() as f64
}

/// First RTT index from which every later RTT has utilization within
/// `util_tol` of `target` and a mean queue below `queue_tol` bytes.
pub fn settle_rtt(r: &Run, from: usize, target: f64, util_tol: f64, queue_tol: f64) -> Option<usize> {
    let ok = |s: &RttStat| (s.util - target).abs() <= util_tol && s.queue_mean <= queue_tol;
    let mut k = r.rtts.len();
    while k > from && ok(&r.rtts[k - 1]) {
        k -= 1;
    }
    (k < r.rtts.len()).then_some(k)
}

/// First RTT index at or after `from` from which flow `i`'s throughput
/// stays within `tol` (relative) of an equal share of the served total.
pub fn fair_rtt(r: &Run, from: usize, i: usize, tol: f64) -> Option<usize> {
    let ok = |s: &RttStat| {
        let fair = s.flow_bps.iter().sum::<f64>() / s.flow_bps.len() as f64;
        (s.flow_bps[i] - fair).abs() <= tol * fair
    };
    let mut k = r.rtts.len();
    while k > from && ok(&r.rtts[k - 1]) {
        k -= 1;
    }
    (k < r.rtts.len()).then_some(k)
}
