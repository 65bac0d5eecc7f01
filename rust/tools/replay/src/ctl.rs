//! `hpcc-replay --ctl`: replays the `tcp_hpcc:hpcc_ctl` records of a VM
//! run (the text tracefs prints) through the controller
//! (`hpcc_core::control`) and checks that it makes, hook for hook, the
//! decisions the module made: cwnd and ssthresh, the pacing rate, whether
//! to probe, whether to take an SFC pause, whether to create the flow's
//! telemetry state.
//!
//! Each connection (the record's `sk`, `src` and `dst`) is replayed from
//! its `init` record on; records of a connection whose `init` the capture
//! missed are counted as skipped. The knobs are the profile's, overridden
//! by `# knob NAME=VALUE` lines of the capture (the selftest writes the
//! module's parameters there) and then by `--set NAME=VALUE`.

use std::collections::HashMap;

use hpcc_core::control::ctl_rec as flag;
use hpcc_core::control::{Conn, FlowCtl, InitDecision, Note, RateSample, Response, SfcState, SockCtl};
use hpcc_core::knobs::{Knobs, ACL_KNOB, IFACES_KNOB};
use hpcc_ffi as ffi;

/// One `hpcc_ctl` record (`struct hpcc_ctl_rec` and the connection's key).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rec {
    /// `sk src dst`: the connection.
    pub key: String,
    pub hook: u8,
    pub flags: u16,
    pub conn: Conn,
    pub rs: RateSample,
    pub resp_rx_ns: u64,
    pub resp_snd_nxt: u32,
    pub int: Vec<u8>,
    pub sfc: SfcState,
    pub out_cwnd: u32,
    pub out_ssthresh: u32,
    pub out_pacing: u64,
    pub out_pacing_shift: u8,
    /// `None`: a capture from before the field.
    pub out_tso_segs: Option<u16>,
}

impl Rec {
    fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    /// The glue asked for a probe: it was sent, or the namespace's probe
    /// budget held it (exactly one of the two).
    fn probe_asked(&self) -> bool {
        self.has(flag::PROBED) != self.has(flag::PROBE_HELD)
    }

    /// The line tracefs prints for this record after `hpcc_ctl: ` (the
    /// `TP_printk` of include/hpcc_trace.h), for tests.
    #[cfg(test)]
    pub fn to_trace(&self) -> String {
        let c = &self.conn;
        let int: String = self.int.iter().map(|b| format!("{b:02x}")).collect();
        let mut parts = self.key.splitn(3, ' ');
        let (sk, src, dst) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        format!(
            "sk={sk} src={src} dst={dst} hook={} flags={:#x} now={} mss={} cwnd={} ssthresh={} srtt={} min_rtt={} \
             packets_out={} in_flight={} snd_nxt={} rs_delivered={} rs_interval={} rs_prior_in_flight={} \
             rs_acked_sacked={} resp_rx={} resp_snd_nxt={} int={int} sfc_gen={} sfc_qlen={} sfc_speed={} sfc_gap={} \
             out_cwnd={} out_ssthresh={} out_pacing={} out_pacing_shift={}{}{}",
            self.hook,
            self.flags,
            c.now_ns,
            c.mss,
            c.cwnd,
            c.ssthresh,
            c.srtt_us,
            c.min_rtt_us,
            c.packets_out,
            c.in_flight,
            c.snd_nxt,
            self.rs.delivered,
            self.rs.interval_us,
            self.rs.prior_in_flight,
            self.rs.acked_sacked,
            self.resp_rx_ns,
            self.resp_snd_nxt,
            self.sfc.gen,
            self.sfc.qlen,
            self.sfc.speed,
            self.sfc.gap_ns,
            self.out_cwnd,
            self.out_ssthresh,
            self.out_pacing,
            self.out_pacing_shift,
            self.out_tso_segs.map_or(String::new(), |t| format!(" out_tso_segs={t}")),
            if c.max_pacing_rate == u64::MAX { String::new() } else { format!(" max_pacing={}", c.max_pacing_rate) },
        )
    }
}

fn num<T: TryFrom<u64>>(kv: &HashMap<&str, &str>, k: &str) -> Result<T, String> {
    let v = kv.get(k).ok_or_else(|| format!("no {k}="))?;
    let n = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse::<u64>(),
    }
    .map_err(|_| format!("{k}={v}: not an integer"))?;
    T::try_from(n).map_err(|_| format!("{k}={v}: out of range"))
}

fn hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err(format!("int={s}: odd length"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| format!("int={s}: not hex")))
        .collect()
}

/// Parses one line of tracefs output; `None` if it is not an `hpcc_ctl`
/// record.
pub fn parse(line: &str) -> Option<Result<Rec, String>> {
    let (_, body) = line.split_once("hpcc_ctl: ")?;
    let kv: HashMap<&str, &str> = body.split_whitespace().filter_map(|t| t.split_once('=')).collect();
    Some((|| {
        let flags: u16 = num(&kv, "flags")?;
        let key = format!(
            "{} {} {}",
            kv.get("sk").ok_or("no sk=")?,
            kv.get("src").ok_or("no src=")?,
            kv.get("dst").ok_or("no dst=")?
        );
        Ok(Rec {
            key,
            hook: num(&kv, "hook")?,
            flags,
            conn: Conn {
                now_ns: num(&kv, "now")?,
                mss: num(&kv, "mss")?,
                cwnd: num(&kv, "cwnd")?,
                ssthresh: num(&kv, "ssthresh")?,
                srtt_us: num(&kv, "srtt")?,
                min_rtt_us: num(&kv, "min_rtt")?,
                packets_out: num(&kv, "packets_out")?,
                in_flight: num(&kv, "in_flight")?,
                snd_nxt: num(&kv, "snd_nxt")?,
                in_reduction: flags & flag::IN_REDUCTION != 0,
                cwnd_limited: flags & flag::CWND_LIMITED != 0,
                // Captures from before the field: no limit.
                max_pacing_rate: kv.get("max_pacing").map_or(Ok(u64::MAX), |_| num(&kv, "max_pacing"))?,
            },
            rs: RateSample {
                delivered: num(&kv, "rs_delivered")?,
                interval_us: num(&kv, "rs_interval")?,
                prior_in_flight: num(&kv, "rs_prior_in_flight")?,
                acked_sacked: num(&kv, "rs_acked_sacked")?,
                app_limited: flags & flag::RS_APP_LIMITED != 0,
            },
            resp_rx_ns: num(&kv, "resp_rx")?,
            resp_snd_nxt: num(&kv, "resp_snd_nxt")?,
            int: hex(kv.get("int").copied().unwrap_or(""))?,
            sfc: SfcState { gen: num(&kv, "sfc_gen")?, qlen: num(&kv, "sfc_qlen")?, speed: num(&kv, "sfc_speed")?,
                // Captures from before the field: not measured.
                gap_ns: kv.get("sfc_gap").map_or(Ok(0), |_| num(&kv, "sfc_gap"))?,
            },
            out_cwnd: num(&kv, "out_cwnd")?,
            out_ssthresh: num(&kv, "out_ssthresh")?,
            out_pacing: num(&kv, "out_pacing")?,
            out_pacing_shift: num(&kv, "out_pacing_shift")?,
            out_tso_segs: kv.get("out_tso_segs").map(|_| num(&kv, "out_tso_segs")).transpose()?,
        })
    })())
}

/// The knobs that are text (the SFC access and interface lists, from the
/// core's table): they do not reach the controller, so their lines are
/// skipped whatever their values.
pub const TEXT_KNOBS: [&str; 2] = [ACL_KNOB.name, IFACES_KNOB.name];

/// Knobs newer than some stored captures, each with the value under which
/// the module behaves as it did before the knob existed. A VM capture
/// lists every parameter the module had (`# knob` lines); one that lacks
/// a knob of this list predates it, and replays with this value.
pub const KNOBS_ADDED_LATER: [(&str, u32); 2] = [("wai_fair", 0), ("low_u_pct", 0)];

/// dc-sim's `# dc-sim profile NAME knobs ...` header: the profile its
/// knob lines override (`ns3/dc-sim.cc` writes it).
pub fn parse_profile(line: &str) -> Option<&str> {
    line.strip_prefix("# dc-sim profile ")?.split_whitespace().next()
}

/// A `# knob NAME=VALUE` line: the knob and its value (`Ok(None)` for a
/// text knob).
pub fn parse_knob(line: &str) -> Option<Result<Option<(String, u32)>, String>> {
    let kv = line.strip_prefix("# knob ")?;
    Some(match kv.trim().split_once('=') {
        Some((k, _)) if TEXT_KNOBS.contains(&k) => Ok(None),
        Some((k, v)) => v.parse().map(|v| Some((k.to_string(), v))).map_err(|_| format!("knob {kv}: not a u32")),
        None => Err(format!("knob {kv}: expected NAME=VALUE")),
    })
}

/// A connection's replayed state.
struct Sock<C: Controller> {
    ctl: C::Sock,
    flow: Option<C::Flow>,
}

/// The controller a replay drives: the core called directly ([`Core`]),
/// or the core through its C ABI ([`Ffi`], `rust/hpcc_ffi`, what ns-3
/// calls).
pub trait Controller {
    type Sock;
    type Flow;
    fn init(&self, c: &Conn, has_sent_data: bool) -> (Self::Sock, InitDecision);
    fn wants_flow_on_ack(&self, s: &Self::Sock, c: &Conn) -> bool;
    fn wants_flow_on_tx_start(&self, s: &Self::Sock, c: &Conn) -> bool;
    fn flow_refused(&self, s: &mut Self::Sock, now_ns: u64);
    fn ssthresh(&self, s: &mut Self::Sock, c: &Conn) -> u32;
    fn flow_new(&self, c: &Conn) -> Option<Self::Flow>;
    fn probe_at_tx_start(&self, f: &Self::Flow, c: &Conn) -> bool;
    fn probe_sent(&self, f: &mut Self::Flow, now_ns: u64);
    fn probe_held(&self, f: &mut Self::Flow);
    fn on_ack(
        &self,
        s: &mut Self::Sock,
        c: &Conn,
        rs: Option<&RateSample>,
        flow: Option<(&mut Self::Flow, Option<&Response<'_>>, &SfcState)>,
    ) -> ffi::HpccAckDecision;
}

/// The core, called directly.
pub struct Core(pub Knobs);

impl Controller for Core {
    type Sock = SockCtl;
    type Flow = FlowCtl;
    fn init(&self, c: &Conn, has_sent_data: bool) -> (SockCtl, InitDecision) {
        SockCtl::init(&self.0, c, has_sent_data)
    }
    fn wants_flow_on_ack(&self, s: &SockCtl, c: &Conn) -> bool {
        s.wants_flow_on_ack(&self.0, c)
    }
    fn wants_flow_on_tx_start(&self, s: &SockCtl, c: &Conn) -> bool {
        s.wants_flow_on_tx_start(&self.0, c)
    }
    fn flow_refused(&self, s: &mut SockCtl, now_ns: u64) {
        s.flow_refused(now_ns)
    }
    fn ssthresh(&self, s: &mut SockCtl, c: &Conn) -> u32 {
        s.ssthresh(&self.0, c)
    }
    fn flow_new(&self, c: &Conn) -> Option<FlowCtl> {
        FlowCtl::new(&self.0, c)
    }
    fn probe_at_tx_start(&self, f: &FlowCtl, c: &Conn) -> bool {
        f.probe_at_tx_start(&self.0, c)
    }
    fn probe_sent(&self, f: &mut FlowCtl, now_ns: u64) {
        f.probe_sent(now_ns);
    }
    fn probe_held(&self, f: &mut FlowCtl) {
        f.probe_held();
    }
    fn on_ack(
        &self,
        s: &mut SockCtl,
        c: &Conn,
        rs: Option<&RateSample>,
        flow: Option<(&mut FlowCtl, Option<&Response<'_>>, &SfcState)>,
    ) -> ffi::HpccAckDecision {
        s.on_ack(&self.0, c, rs, flow).into()
    }
}

/// The core through its C ABI (`include/hpcc_ffi.h`): every call converts
/// to the ABI's records and back, as a C or C++ caller's would.
pub struct Ffi {
    knobs: *mut hpcc_core::knobs::Knobs,
}

/// A flow handle of the C ABI, freed with it.
pub struct FfiFlow(*mut FlowCtl);

impl Drop for FfiFlow {
    fn drop(&mut self) {
        // SAFETY: from hpcc_flow_new, freed once here.
        unsafe { ffi::hpcc_flow_free(self.0) }
    }
}

impl Ffi {
    /// The C ABI's knobs, set name by name to `k`'s values.
    pub fn new(k: &Knobs) -> Result<Self, String> {
        // SAFETY: a null profile is the module's.
        let knobs = unsafe { ffi::hpcc_knobs_new(core::ptr::null()) };
        let this = Self { knobs };
        for (name, v) in k.entries() {
            let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
            // SAFETY: our handle and a NUL-terminated name.
            if unsafe { ffi::hpcc_knobs_set(this.knobs, cname.as_ptr(), v) } != 0 {
                return Err(format!("hpcc_knobs_set {name}"));
            }
        }
        Ok(this)
    }
}

impl Drop for Ffi {
    fn drop(&mut self) {
        // SAFETY: from hpcc_knobs_new, freed once here.
        unsafe { ffi::hpcc_knobs_free(self.knobs) }
    }
}

// SAFETY (every call below): the handles are ours (from the ABI's
// constructors, alive while `self` and the flow are), the records are
// locals or the caller's references, and the response's bytes outlive the
// call.
impl Controller for Ffi {
    type Sock = ffi::HpccSock;
    type Flow = FfiFlow;
    fn init(&self, c: &Conn, has_sent_data: bool) -> (ffi::HpccSock, InitDecision) {
        let (mut s, mut d) = (ffi::HpccSock::default(), InitDecision::default());
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_init(self.knobs, c, c_int(has_sent_data), &mut s, &mut d) };
        (s, d)
    }
    fn wants_flow_on_ack(&self, s: &ffi::HpccSock, c: &Conn) -> bool {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_wants_flow_on_ack(s, self.knobs, c) != 0 }
    }
    fn wants_flow_on_tx_start(&self, s: &ffi::HpccSock, c: &Conn) -> bool {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_wants_flow_on_tx_start(s, self.knobs, c) != 0 }
    }
    fn flow_refused(&self, s: &mut ffi::HpccSock, now_ns: u64) {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_flow_refused(s, now_ns) }
    }
    fn ssthresh(&self, s: &mut ffi::HpccSock, c: &Conn) -> u32 {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_ssthresh(s, self.knobs, c) }
    }
    fn flow_new(&self, c: &Conn) -> Option<FfiFlow> {
        // SAFETY: see the impl.
        let f = unsafe { ffi::hpcc_flow_new(self.knobs, c) };
        (!f.is_null()).then_some(FfiFlow(f))
    }
    fn probe_at_tx_start(&self, f: &FfiFlow, c: &Conn) -> bool {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_flow_probe_at_tx_start(f.0, self.knobs, c) != 0 }
    }
    fn probe_sent(&self, f: &mut FfiFlow, now_ns: u64) {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_flow_probe_sent(f.0, now_ns) };
    }
    fn probe_held(&self, f: &mut FfiFlow) {
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_flow_probe_held(f.0) };
    }
    fn on_ack(
        &self,
        s: &mut ffi::HpccSock,
        c: &Conn,
        rs: Option<&RateSample>,
        flow: Option<(&mut FfiFlow, Option<&Response<'_>>, &SfcState)>,
    ) -> ffi::HpccAckDecision {
        let (f, resp, sfc) = match flow {
            Some((f, r, sfc)) => (f.0, r, Some(sfc)),
            None => (core::ptr::null_mut(), None, None),
        };
        let resp = resp.map(|r| ffi::HpccResponse { rx_ns: r.rx_ns, int_stack: r.int.as_ptr(), int_len: r.int.len(), snd_nxt: r.snd_nxt });
        let mut d = ffi::HpccAckDecision::default();
        // SAFETY: see the impl.
        unsafe { ffi::hpcc_sock_on_ack(s, self.knobs, c, ptr(rs), f, ptr(resp.as_ref()), ptr(sfc), &mut d) };
        d
    }
}

/// A record's address for the C ABI, or null.
fn ptr<T>(o: Option<&T>) -> *const T {
    o.map_or(core::ptr::null(), |v| v as *const T)
}

/// A C `int` of a flag.
fn c_int(b: bool) -> core::ffi::c_int {
    core::ffi::c_int::from(b)
}

/// What a replay found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub records: u64,
    pub connections: u64,
    pub acks: u64,
    pub telemetry_acks: u64,
    pub responses: u64,
    pub probes: u64,
    /// Probes due that the namespace's probe budget held back.
    pub probes_held: u64,
    pub flows_created: u64,
    pub ssthresh: u64,
    pub skipped: u64,
    pub mismatches: u64,
    /// The first mismatches, described.
    pub first: Vec<String>,
}

/// Replays records, connection by connection, through a [`Controller`].
pub struct Replay<C: Controller> {
    ctl: C,
    socks: HashMap<String, Sock<C>>,
    pub summary: Summary,
}

impl<C: Controller> Replay<C> {
    pub fn new(ctl: C) -> Self {
        Self { ctl, socks: HashMap::new(), summary: Summary::default() }
    }

    fn mismatch(&mut self, r: &Rec, what: String) {
        self.summary.mismatches += 1;
        if self.summary.first.len() < 20 {
            self.summary.first.push(format!("{} hook {} at {} ns: {what}", r.key, r.hook, r.conn.now_ns));
        }
    }

    /// The flow's telemetry state as the hook found or made it; checks the
    /// hook's flags against the controller's `wants_flow`.
    fn flow_step(&mut self, r: &Rec, wants: fn(&C, &C::Sock, &Conn) -> bool) -> Result<(), String> {
        let s = self.socks.get_mut(&r.key).ok_or("no state")?;
        let had = s.flow.is_some();
        let (has, created, refused) = (r.has(flag::HAS_FLOW), r.has(flag::FLOW_CREATED), r.has(flag::FLOW_REFUSED));
        if had {
            return if has && !created && !refused { Ok(()) } else { Err(format!("flow state kept, flags {:#x}", r.flags)) };
        }
        let wants = wants(&self.ctl, &s.ctl, &r.conn);
        if wants != (created || refused) {
            return Err(format!("wants_flow {wants}, flags {:#x}", r.flags));
        }
        if created {
            s.flow = Some(self.ctl.flow_new(&r.conn).ok_or("FlowCtl::new refused what the module created")?);
            self.summary.flows_created += 1;
        } else if refused {
            self.ctl.flow_refused(&mut s.ctl, r.conn.now_ns);
        }
        Ok(())
    }

    /// Replays one record.
    pub fn step(&mut self, r: &Rec) {
        self.summary.records += 1;
        if r.hook == flag::HOOK_INIT {
            let (ctl, d) = self.ctl.init(&r.conn, r.has(flag::HAS_SENT_DATA));
            if !self.socks.contains_key(&r.key) {
                self.summary.connections += 1;
            }
            self.socks.insert(r.key.clone(), Sock { ctl, flow: None });
            let want = (r.out_cwnd, r.out_ssthresh, r.out_pacing, r.out_pacing_shift);
            let got = (d.cwnd, d.ssthresh, d.pacing_rate, d.pacing_shift);
            if got != want {
                self.mismatch(r, format!("init (cwnd, ssthresh, pacing, shift): replay {got:?}, module {want:?}"));
            }
            return;
        }
        if !self.socks.contains_key(&r.key) {
            self.summary.skipped += 1;
            return;
        }
        match r.hook {
            h if h == flag::HOOK_SSTHRESH => {
                self.summary.ssthresh += 1;
                let s = self.socks.get_mut(&r.key).expect("checked above");
                let got = self.ctl.ssthresh(&mut s.ctl, &r.conn);
                if got != r.out_ssthresh {
                    self.mismatch(r, format!("ssthresh: replay {got}, module {}", r.out_ssthresh));
                }
            }
            h if h == flag::HOOK_TX_START => {
                if let Err(e) = self.flow_step(r, C::wants_flow_on_tx_start) {
                    return self.mismatch(r, e);
                }
                let s = self.socks.get_mut(&r.key).expect("checked above");
                let due = s.flow.as_ref().is_some_and(|f| self.ctl.probe_at_tx_start(f, &r.conn));
                if let (true, Some(f)) = (r.has(flag::PROBED), s.flow.as_mut()) {
                    self.ctl.probe_sent(f, r.conn.now_ns);
                    self.summary.probes += 1;
                }
                if let (true, Some(f)) = (r.has(flag::PROBE_HELD), s.flow.as_mut()) {
                    self.ctl.probe_held(f);
                    self.summary.probes_held += 1;
                }
                if due != r.probe_asked() {
                    self.mismatch(r, format!("tx_start: probe due {due}, module probed or held {}", r.probe_asked()));
                }
            }
            h if h == flag::HOOK_ACK => self.ack(r),
            h => self.mismatch(r, format!("unknown hook {h}")),
        }
    }

    fn ack(&mut self, r: &Rec) {
        self.summary.acks += 1;
        if let Err(e) = self.flow_step(r, C::wants_flow_on_ack) {
            return self.mismatch(r, e);
        }
        let rs = r.has(flag::HAS_RS).then_some(r.rs);
        let resp = r.has(flag::HAS_RESPONSE).then(|| Response {
            rx_ns: r.resp_rx_ns,
            snd_nxt: r.resp_snd_nxt,
            int: &r.int,
        });
        self.summary.responses += u64::from(resp.is_some());
        let s = self.socks.get_mut(&r.key).expect("flow_step found it");
        let flow = s.flow.as_mut().map(|f| (f, resp.as_ref(), &r.sfc));
        let d = self.ctl.on_ack(&mut s.ctl, &r.conn, rs.as_ref(), flow);
        let probe = d.probe != 0;
        if probe && r.has(flag::PROBED) {
            if let Some(f) = s.flow.as_mut() {
                self.ctl.probe_sent(f, r.conn.now_ns);
            }
            self.summary.probes += 1;
        }
        if d.notes & (1 << Note::HpccAck as u8) != 0 {
            self.summary.telemetry_acks += 1;
        }
        let got = (d.cwnd, d.pacing_rate, d.pacing_shift, probe, d.take_pause != 0);
        if probe && r.has(flag::PROBE_HELD) {
            if let Some(f) = s.flow.as_mut() {
                self.ctl.probe_held(f);
            }
            self.summary.probes_held += 1;
        }
        let want = (r.out_cwnd, r.out_pacing, r.out_pacing_shift, r.probe_asked(), r.has(flag::TAKE_PAUSE));
        if got != want {
            self.mismatch(r, format!("ack (cwnd, pacing, shift, probe, pause): replay {got:?}, module {want:?}"));
        } else if r.out_tso_segs.is_some_and(|t| t != d.tso_segs) {
            self.mismatch(r, format!("ack TSO segments: replay {}, module {:?}", d.tso_segs, r.out_tso_segs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpcc_core::wire;

    /// What the module's glue would record for a scripted connection:
    /// the controller itself run as the kernel runs it.
    fn script() -> Vec<Rec> {
        let k = Knobs::DEFAULT;
        let key = "00000000deadbeef 10.1.1.1:40000 10.0.2.1:9000".to_string();
        let mut out = Vec::new();
        let mss = 1448;
        let mut c = Conn { now_ns: 1_000_000, mss, cwnd: 10, ssthresh: u32::MAX, ..Conn::default() };
        let (mut ctl, d) = SockCtl::init(&k, &c, false);
        out.push(Rec {
            key: key.clone(),
            hook: flag::HOOK_INIT,
            conn: c,
            out_cwnd: d.cwnd,
            out_ssthresh: d.ssthresh,
            out_pacing: d.pacing_rate,
            out_pacing_shift: d.pacing_shift,
            ..Rec::default()
        });
        c.cwnd = d.cwnd;
        c.ssthresh = d.ssthresh;
        let mut flow: Option<FlowCtl> = None;
        let mut tx = 0u64;
        for i in 0..200u32 {
            // An ACK every 50 us of a 1 ms path through a 1 Gbit/s port.
            c.now_ns += 50_000;
            c.srtt_us = 1000;
            c.min_rtt_us = 1000;
            c.packets_out = c.cwnd;
            c.in_flight = c.cwnd;
            c.snd_nxt = c.snd_nxt.wrapping_add(c.cwnd / 20 * mss);
            c.cwnd_limited = i % 3 == 0;
            let mut flags = 0;
            if flow.is_none() && ctl.wants_flow_on_ack(&k, &c) {
                flow = FlowCtl::new(&k, &c);
                flags |= flag::FLOW_CREATED;
            }
            if flow.is_some() {
                flags |= flag::HAS_FLOW;
            }
            // A response every other ACK: the port busy, a queue of 0 to
            // 12 kB.
            let mut int = vec![0u8; 68];
            tx += 6250;
            let mut hops = [wire::RawHop::default(); wire::MAX_HOPS];
            hops[0] = wire::RawHop::quantize(1, c.now_ns - 10_000, tx, 3000 * u64::from(i % 5)).expect("a hop");
            let stack = wire::IntStack { n_hops: 1, path_id: 7, hops };
            let resp = (i % 2 == 1).then(|| {
                let _ = wire::encode(&stack, &mut int);
                flags |= flag::HAS_RESPONSE;
                Response { rx_ns: c.now_ns, snd_nxt: c.snd_nxt.wrapping_sub(mss), int: &int }
            });
            let rs = RateSample {
                delivered: c.cwnd,
                interval_us: 1000,
                prior_in_flight: c.cwnd,
                acked_sacked: c.cwnd / 20,
                app_limited: false,
            };
            flags |= flag::HAS_RS;
            let sfc = SfcState::default();
            let d = ctl.on_ack(&k, &c, Some(&rs), flow.as_mut().map(|f| (f, resp.as_ref(), &sfc)));
            if d.probe {
                // Now and then a due probe held by the namespace's budget:
                // then it stays due.
                if i % 40 == 0 {
                    if let Some(f) = flow.as_mut() {
                        f.probe_held();
                    }
                    flags |= flag::PROBE_HELD;
                } else {
                    if let Some(f) = flow.as_mut() {
                        f.probe_sent(c.now_ns);
                    }
                    flags |= flag::PROBED;
                }
            }
            if c.cwnd_limited {
                flags |= flag::CWND_LIMITED;
            }
            out.push(Rec {
                key: key.clone(),
                hook: flag::HOOK_ACK,
                flags,
                conn: c,
                rs,
                resp_rx_ns: resp.map_or(0, |r| r.rx_ns),
                resp_snd_nxt: resp.map_or(0, |r| r.snd_nxt),
                int: if resp.is_some() { int.clone() } else { Vec::new() },
                out_cwnd: d.cwnd,
                out_pacing: d.pacing_rate,
                out_pacing_shift: d.pacing_shift,
                out_tso_segs: Some(d.tso_segs),
                ..Rec::default()
            });
            c.cwnd = d.cwnd;
        }
        out
    }

    fn replay(lines: &[String]) -> Summary {
        let mut r = Replay::new(Core(Knobs::DEFAULT));
        for l in lines {
            if let Some(rec) = parse(l) {
                r.step(&rec.expect("parses"));
            }
        }
        r.summary
    }

    fn lines(recs: &[Rec]) -> Vec<String> {
        recs.iter().map(|r| format!("  python3-1234 [001] ..s2. 12.345678: hpcc_ctl: {}", r.to_trace())).collect()
    }

    #[test]
    fn a_recorded_connection_replays_exactly() {
        let recs = script();
        let s = replay(&lines(&recs));
        assert_eq!(s.mismatches, 0, "{:?}", s.first);
        assert_eq!((s.records, s.connections, s.acks, s.skipped), (201, 1, 200, 0));
        assert!(s.responses >= 90 && s.probes > 0 && s.probes_held > 0 && s.telemetry_acks > 100, "{s:?}");
    }

    #[test]
    fn a_probe_both_sent_and_held_is_a_mismatch() {
        let mut recs = script();
        let i = (10..).find(|&i| recs[i].has(flag::PROBED)).expect("a probe");
        recs[i].flags |= flag::PROBE_HELD;
        assert_eq!(replay(&lines(&recs)).mismatches, 1);
    }

    #[test]
    fn records_parse_back_to_themselves() {
        for r in script() {
            let back = parse(&format!("x hpcc_ctl: {}", r.to_trace())).expect("a record").expect("parses");
            assert_eq!(back, r);
        }
        let mut r = script().remove(5);
        r.conn.max_pacing_rate = 125_000_000;
        let line = format!("x hpcc_ctl: {}", r.to_trace());
        assert!(line.contains(" max_pacing=125000000"), "{line}");
        assert_eq!(parse(&line).expect("a record").expect("parses"), r);
        assert!(parse("x hpcc_sample: src=1").is_none());
        assert!(parse("x hpcc_ctl: sk=1 hook=1").expect("a record").is_err());
    }

    #[test]
    fn a_changed_decision_is_found() {
        let mut recs = script();
        recs[150].out_cwnd += 1;
        recs[160].out_pacing -= 1;
        recs[170].flags ^= flag::PROBED;
        let s = replay(&lines(&recs));
        assert!(s.mismatches >= 3, "{s:?}");
        assert!(s.first[0].contains("ack (cwnd, pacing, shift, probe, pause)"), "{:?}", s.first);
        // The TSO cap, and SO_MAX_PACING_RATE, which it follows.
        let mut recs = script();
        let i = (100..).find(|&i| recs[i].out_tso_segs.is_some_and(|t| t > 0)).expect("a TSO cap");
        recs[i].out_tso_segs = recs[i].out_tso_segs.map(|t| t + 1);
        let s = replay(&lines(&recs));
        assert_eq!(s.mismatches, 1, "{s:?}");
        assert!(s.first[0].contains("TSO segments"), "{:?}", s.first);
        // A changed input changes what the controller decides downstream:
        // two responses in a row that show a queue of a BDP (the default
        // filter, min(qlen, previous qlen), ignores one).
        let mut recs = script();
        let i = (100..).find(|&i| recs[i].has(flag::HAS_RESPONSE)).expect("a response");
        let j = (i + 1..).find(|&j| recs[j].has(flag::HAS_RESPONSE)).expect("a second response");
        for r in [i, j] {
            let mut s = wire::parse(&recs[r].int).expect("an INT stack");
            s.hops[0].qlen = u16::MAX;
            let _ = wire::encode(&s, &mut recs[r].int);
        }
        let s = replay(&lines(&recs));
        assert!(s.mismatches > 0, "{s:?}");
    }

    #[test]
    fn a_connection_without_init_is_skipped() {
        let recs = script();
        let s = replay(&lines(&recs[1..]));
        assert_eq!((s.skipped, s.acks, s.mismatches), (200, 0, 0));
    }

    #[test]
    fn knob_lines() {
        assert_eq!(parse_knob("# knob eta_ppm=900000"), Some(Ok(Some(("eta_ppm".into(), 900_000)))));
        assert!(parse_knob("# knob eta_ppm").expect("a knob").is_err());
        assert!(parse_knob("# knob eta_ppm=x").expect("a knob").is_err());
        // The access list is text, empty by default: skipped.
        assert_eq!(parse_knob("# knob sfc_acl="), Some(Ok(None)));
        assert_eq!(parse_knob("# knob sfc_ifaces=eth0,eth1"), Some(Ok(None)));
        assert_eq!(parse_knob("# knob sfc_ifaces="), Some(Ok(None)));
        assert_eq!(parse_knob("# knob sfc_acl=10.0.0.0/8,fd00::/8"), Some(Ok(None)));
        assert!(parse_knob("hpcc_ctl: x").is_none());
    }
}
