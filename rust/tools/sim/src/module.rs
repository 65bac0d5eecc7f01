//! The module's controller in the fluid model: every sender runs exactly
//! what `tcp_hpcc.ko` runs per ACK ([`hpcc_core::control`]: [`SockCtl`]
//! and [`FlowCtl`] under a [`Knobs`] profile), with its probes.
//!
//! Per step of `dt_ns` and flow:
//!
//! * the sender sends `min(R·dt, cwnd·mss − inflight)` bytes (pacing rate
//!   and cwnd as the controller set them), which reach the switch `T/2`
//!   later; the switch serves `B·dt` from a fluid FIFO and the served bytes
//!   are ACKed `T/2` later;
//! * when the controller asks for a probe (on an ACK, or when data starts
//!   with nothing in flight, `CA_EVENT_TX_START`), the probe carries the
//!   flow's `snd_nxt`; the NIC stamps it as it leaves, the bottleneck `T/2`
//!   later (ts, txBytes, qlen through the Figure-4 encoding), and its
//!   response reaches the sender after the queue's delay and `T/2` more,
//!   carrying the receiver's flow count (the flows started; 0 with
//!   `rcv_count_us` 0);
//! * on every step with ACKed bytes or a response, the controller runs
//!   once with the connection's state (srtt = T plus the queue's delay,
//!   min RTT = T, a rate sample of the last RTT's deliveries).
//!
//! It models no loss, no TSO bursts, no host delay: it shows what the
//! controller's rules do on a clean path, with the knobs the module
//! ships ([`Knobs::DEFAULT`]) or the drafts' law ([`Knobs::DRAFTS`]).

use crate::{Port, Run, RttStat, HOST_CLOCK0, NIC_CLOCK0, PATH_ID, SW_CLOCK0};
use hpcc_core::control::{Conn, FlowCtl, RateSample, Response, SfcState, SockCtl};
use hpcc_core::knobs::Knobs;
use hpcc_core::wire::{self, IntStack, RawHop, RATES};
use std::collections::VecDeque;

/// A scenario for the module's controller.
#[derive(Debug, Clone)]
pub struct ModuleScenario {
    /// Bottleneck (and NIC) rate, bits/s; a rate of the wire table.
    pub link_bps: u64,
    /// Base (propagation) RTT `T`, ns.
    pub base_rtt_ns: u64,
    /// Time step, ns (divides `T/2`).
    pub dt_ns: u64,
    /// Segment size, bytes.
    pub mss: u32,
    /// Start time of each flow, ns.
    pub starts_ns: Vec<u64>,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// The knobs every flow runs with.
    pub knobs: Knobs,
    /// Mean of the backlog a probe meets on top of the fluid queue, bytes
    /// (0: none): each probe's bottleneck stamp reads the fluid queue plus
    /// an exponentially distributed draw of this mean (a fixed-seed
    /// generator, so a run repeats). It models the host's clumped
    /// arrivals as telemetry sees them: in the VM, at 93% utilization of
    /// 100 Mbit/s, probes met 760 to 1,145 B of backlog (per flow means)
    /// where the fluid queue is empty. Only the stamp: the model's data
    /// still meets the fluid queue.
    pub probe_backlog_bytes: u32,
    /// Delay the sender's host adds to every ACK and response, ns (a
    /// multiple of `dt_ns`; 0: none). The flow's minimum RTT stays `T`:
    /// it models a host delay that varies, whose minimum the flow sees
    /// but whose mean lengthens its smoothed RTT, as in the VM, where srtt
    /// ran at 1.35 T at 100 Mbit/s and 1.9 T at 200 Mbit/s while T was the
    /// minimum. The windows that carry a rate then scale with srtt, not T.
    pub host_delay_ns: u64,
    /// When each flow stops sending, ns (a flow without an entry never
    /// does): it sends nothing more, and leaves the receiver's count.
    pub ends_ns: Vec<u64>,
}

impl ModuleScenario {
    /// Whether flow `i` is past its end (`ends_ns`) at `now` ns.
    fn ended(&self, i: usize, now: u64) -> bool {
        self.ends_ns.get(i).is_some_and(|&e| now >= e)
    }

    /// Bandwidth-delay product in bytes.
    pub fn bdp(&self) -> f64 {
        self.link_bps as f64 / 8e9 * self.base_rtt_ns as f64
    }

    /// `n` flows from `starts_ns` over the VM bench's path: 100 Mbit/s,
    /// T = 2 ms, MSS 1448.
    pub fn vm_bench(starts_ns: Vec<u64>, duration_ns: u64, knobs: Knobs) -> Self {
        Self {
            link_bps: 100_000_000,
            base_rtt_ns: 2_000_000,
            dt_ns: 10_000,
            mss: 1448,
            starts_ns,
            duration_ns,
            knobs,
            probe_backlog_bytes: 0,
            host_delay_ns: 0,
            ends_ns: Vec::new(),
        }
    }
}

/// xorshift64*: the model's fixed-seed generator.
struct Rng(u64);

impl Rng {
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Exponential of mean `mean`.
    fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit().ln()
    }
}

/// A probe on its way: where it is stamped and when its response arrives.
struct Probe {
    /// Step at which it reaches the bottleneck.
    at_switch: usize,
    /// The NIC's stamp: (ts, tx_bytes).
    nic: (u64, u64),
    /// The snd_nxt it carries.
    snd_nxt: u32,
}

struct Sender {
    s: SockCtl,
    f: Option<FlowCtl>,
    cwnd: u32,
    rate: u64,
    sent: f64,
    acked: f64,
    in_queue: f64,
    isn: u32,
    active: bool,
    /// ssthresh as `init` set it (the model has no loss).
    ssthresh: u32,
    /// Segments ACKed so far (whole segments, as TCP counts them).
    acked_segs: u64,
    probes: VecDeque<Probe>,
    /// Responses on their way back: (arrival step, snd_nxt, INT bytes).
    responses: VecDeque<(usize, u32, Vec<u8>)>,
    /// ACKed bytes held by the host delay: (arrival step, bytes).
    acks: VecDeque<(usize, f64)>,
}

/// Runs a scenario; statistics per base RTT as [`crate::run`] gives them
/// (`window` is cwnd·mss).
pub fn run(sc: &ModuleScenario) -> Run {
    let rate = RATES.iter().find(|r| r.bps() == sc.link_bps).expect("link rate in the wire table");
    let n = sc.starts_ns.len();
    let mut port = Port::new(n, sc.link_bps, sc.base_rtt_ns, sc.dt_ns);
    let (steps_half, steps_rtt, ring, cap) = (port.steps_half, port.steps_rtt, port.ring, port.cap);
    let total_steps = (sc.duration_ns / sc.dt_ns) as usize;
    let k = &sc.knobs;
    let mss = f64::from(sc.mss);
    let t_us = u32::try_from(sc.base_rtt_ns / 1000).unwrap_or(u32::MAX).max(1);
    let host_steps = (sc.host_delay_ns / sc.dt_ns) as usize;
    let host_us = u32::try_from(sc.host_delay_ns / 1000).unwrap_or(u32::MAX);

    let mut flows: Vec<Sender> = (0..n)
        .map(|i| Sender {
            s: SockCtl::default(),
            f: None,
            cwnd: 0,
            rate: 0,
            sent: 0.0,
            acked: 0.0,
            in_queue: 0.0,
            isn: 1_000_000u32.wrapping_mul(i as u32 + 7),
            active: false,
            ssthresh: 0,
            acked_segs: 0,
            probes: VecDeque::new(),
            responses: VecDeque::new(),
            acks: VecDeque::new(),
        })
        .collect();
    let mut acked_hist = vec![vec![0.0f64; ring]; n];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    let mut out = Run { rtts: Vec::new(), trace: Vec::new(), updates: 0 };
    let mut cur = RttStat::empty(n, 0);
    for step in 0..total_steps {
        let now = step as u64 * sc.dt_ns;
        let slot = step % ring;
        let srtt_us =
            t_us.saturating_add(host_us).saturating_add((port.queue / cap * sc.dt_ns as f64 / 1000.0) as u32);
        let conn = |f: &Sender, cwnd: u32| {
            let inflight = ((f.sent - f.acked) / mss).ceil().max(0.0) as u32;
            Conn {
                now_ns: HOST_CLOCK0 + now,
                mss: sc.mss,
                cwnd,
                ssthresh: f.ssthresh,
                srtt_us,
                min_rtt_us: t_us,
                packets_out: inflight,
                in_flight: inflight,
                snd_nxt: f.isn.wrapping_add(f.sent as u64 as u32),
                in_reduction: false,
                cwnd_limited: inflight.saturating_add(1) >= cwnd,
                max_pacing_rate: u64::MAX,
            }
        };
        // Senders.
        for (i, f) in flows.iter_mut().enumerate() {
            if !f.active && now >= sc.starts_ns[i] {
                f.active = true;
                let c = Conn { srtt_us: t_us, ..conn(f, 10) };
                let (s, d) = SockCtl::init(k, &c, false);
                f.s = s;
                f.cwnd = d.cwnd;
                f.ssthresh = d.ssthresh;
                f.rate = d.pacing_rate;
                f.f = s.wants_flow_on_tx_start(k, &c).then(|| FlowCtl::new(k, &c)).flatten();
            }
            // What the port delivers now reaches the ACK clock host_steps
            // later (now, without host delay).
            f.acks.push_back((step + host_steps, port.acked(i, step)));
            while let Some(&(_, got)) = f.acks.front().filter(|a| a.0 <= step) {
                f.acks.pop_front();
                f.acked += got;
            }
            acked_hist[i][slot] = f.acked;
            if !f.active || sc.ended(i, now) {
                continue;
            }
            let inflight = f.sent - f.acked;
            let send = (f.rate as f64 * sc.dt_ns as f64 / 1e9).min((f64::from(f.cwnd) * mss - inflight).max(0.0));
            if send > 0.0 && inflight <= 0.0 {
                // CA_EVENT_TX_START: a probe ahead of the data.
                let c = conn(f, f.cwnd);
                if let Some(ctl) = f.f.as_mut().filter(|ctl| ctl.probe_due(k, &c)) {
                    ctl.probe_sent(c.now_ns);
                    f.probes.push_back(Probe {
                        at_switch: step + steps_half,
                        nic: (NIC_CLOCK0 + now, f.sent as u64),
                        snd_nxt: c.snd_nxt,
                    });
                }
            }
            f.sent += send;
            cur.sent_bps[i] += send * port.bucket_scale;
            port.send(i, step, send);
        }
        // Switch.
        port.serve(step, flows.iter_mut().map(|f| &mut f.in_queue), &mut cur);
        let (queue, tx_total) = (port.queue, port.tx_total);
        // Probes at the bottleneck: stamped, answered after the queue.
        let qdelay_steps = (queue / cap).ceil() as usize;
        // The receiver's flow count (rcv_count_us): the flows started.
        let rcv_flows = if k.rcv_count_us == 0 {
            0
        } else {
            flows.iter().enumerate().filter(|&(i, f)| f.active && !sc.ended(i, now)).count() as u16
        };
        for f in flows.iter_mut() {
            while f.probes.front().is_some_and(|p| p.at_switch <= step) {
                let p = f.probes.pop_front().expect("front");
                let mut st = IntStack { n_hops: 2, path_id: PATH_ID, ..Default::default() };
                st.hops[0] = RawHop::quantize(rate.code, p.nic.0, p.nic.1, 0).expect("rate code");
                let seen = match sc.probe_backlog_bytes {
                    0 => queue,
                    b => queue + rng.exp(f64::from(b)),
                };
                st.hops[1] =
                    RawHop::quantize(rate.code, SW_CLOCK0 + now, tx_total as u64, seen as u64).expect("rate code");
                let mut buf = vec![0u8; wire::encoded_len(2)];
                wire::encode(&st, &mut buf).expect("encode");
                wire::set_rcv_flows(&mut buf, rcv_flows);
                f.responses.push_back((step + qdelay_steps + steps_half + host_steps, p.snd_nxt, buf));
            }
        }
        // ACKs and responses at the senders: one controller call each step.
        for (i, f) in flows.iter_mut().enumerate() {
            if !f.active {
                continue;
            }
            let resp = f.responses.front().is_some_and(|r| r.0 <= step).then(|| f.responses.pop_front()).flatten();
            let delivered = f.acked - acked_hist[i][(step + ring - steps_rtt) % ring];
            // An ACK per whole segment delivered (the model's ACKs carry
            // every segment completed in the step).
            let segs = (f.acked / mss) as u64;
            let newly = segs.saturating_sub(f.acked_segs);
            f.acked_segs = segs;
            if newly == 0 && resp.is_none() {
                continue;
            }
            let c = conn(f, f.cwnd);
            let rs = RateSample {
                delivered: (delivered / mss) as u32,
                interval_us: u64::from(t_us),
                prior_in_flight: c.in_flight,
                acked_sacked: u32::try_from(newly).unwrap_or(u32::MAX),
                app_limited: false,
            };
            let sfc = SfcState::default();
            let r = resp.as_ref().map(|(_, snd_nxt, int)| Response { rx_ns: c.now_ns, snd_nxt: *snd_nxt, int });
            let d = f.s.on_ack(k, &c, Some(&rs), f.f.as_mut().map(|ctl| (ctl, r.as_ref(), &sfc)));
            if d.trace.is_some_and(|t| t.event >= 2 && t.event <= 3) {
                out.updates += 1;
            }
            f.cwnd = d.cwnd;
            f.rate = d.pacing_rate;
            if d.probe {
                if let Some(ctl) = f.f.as_mut() {
                    ctl.probe_sent(c.now_ns);
                    f.probes.push_back(Probe {
                        at_switch: step + steps_half,
                        nic: (NIC_CLOCK0 + now, f.sent as u64),
                        snd_nxt: c.snd_nxt,
                    });
                }
            }
        }
        if (step + 1) % steps_rtt == 0 {
            for (w, f) in cur.window.iter_mut().zip(&flows) {
                *w = if f.active { f.cwnd.saturating_mul(sc.mss) } else { 0 };
            }
            out.rtts.push(std::mem::replace(&mut cur, RttStat::empty(n, now + sc.dt_ns)));
        }
    }
    out
}
