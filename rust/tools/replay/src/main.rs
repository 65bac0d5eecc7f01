//! `hpcc-replay`: runs a captured telemetry trace (JSON lines on stdin)
//! through the fixed-point HPCC++ core and the f64 reference model, and
//! prints one JSON object per input line on stdout.
//!
//! Input line:
//! `{"now_ns":u64,"ack_seq":u32,"snd_nxt":u32,"path_id":u16,
//!   "hops":[{"rate_bps":u64,"ts_ns":u64,"tx_bytes":u64,"qlen_bytes":u64},...]}`
//! (full-width, already decoded values; blank lines are skipped).
//!
//! Output line:
//! `{"window_bytes":u64,"ref_window_bytes":u64,"u":f64,"inc_stage":u32,
//!   "pacing_bps":u64,"stale":bool,"event":str}` where `u` is the core's
//! fixed-point `U` printed as a decimal, `ref_window_bytes` the reference
//! model's `W` (floored) and `event` one of recorded, path_changed,
//! updated, committed, stale.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use hpcc_core::fixed::{ETA_SCALE, U_ONE};
use hpcc_core::law::{Event, HopSample, HpccFlow, Sample};
use hpcc_core::knobs::Knobs;
use hpcc_core::params::{HpccConfig, Mode};
use hpcc_ref::{RefFlow, RefParams};
use serde_json::{Map, Value};

mod ctl;

const USAGE: &str = "\
usage: hpcc-replay [FLAGS] < trace.jsonl > out.jsonl
       hpcc-replay --knobs     tcp_hpcc's parameters and defaults, name=value

  --profile module|drafts  the starting point of the flags below: the law as
                           tcp_hpcc.ko runs it with its default parameters
                           (module, the default; windows for --mss) or the
                           drafts' law (drafts); later flags override it
  --mss N                  segment size for the module profile's window
                           bounds (default 1448)
  --base-rtt-ns N          base RTT T in ns, 1..=1000000000 (default 5000)
  --eta DEC                target utilization in (0, 1], a decimal with at
                           most 6 fractional digits, e.g. 0.95 (default 0.95)
  --max-stage N            additive-increase stages, >= 0 (default 5)
  --wai-bytes N            additive increase W_ai in bytes, >= 1
                           (default W_init*(1-eta)/N)
  --flows N                N for the default W_ai (default 16)
  --init-window-bytes N    initial window (module 14600, drafts 65536)
  --min-window-bytes N     lower window bound (default 4096)
  --max-window-bytes N     upper window bound, <= 2^31 (default 67108864)
  --path-cap-pct N         bound W by N% of the path BDP min(B)*T, 0 = off (default 0)
  --u-weight-pct N         weight of a sample in U's EWMA, % of tau/T (default 100)
  --max-increase-pct N     largest W/Wc of one update in %, 0 = off (default 0)
  --qlen-min-filter 0|1    queue term min(qlen, previous qlen) (1, default) or current qlen (0)
  --precommit-ref 0|1      probe mode: a non-committing decrease from W before the last commit (1) or from Wc (0, default)
  --mode sender|receiver|probe
                           NewAck (sequence-driven), NewINT (time-driven) or
                           probe (sequence-driven on the measured interval)
                           update of Wc (default sender)
  -h, --help               this text

usage: hpcc-replay --ctl [--ffi] [--profile module|datacenter|drafts] [--set KNOB=VALUE]... < trace

  Replays the tcp_hpcc:hpcc_ctl records of a VM run (tracefs text) through
  the controller and checks that it decides, hook for hook, what the module
  decided (cwnd, ssthresh, pacing rate, probes, SFC pauses, flow state).
  Knobs: the profile's (--profile, else a dc-sim trace's \"# dc-sim profile\"
  line, else module), then the capture's \"# knob NAME=VALUE\" lines, then
  --set. Prints a JSON summary; exits 1 on any mismatch or if no ACK was
  replayed. --ffi: through the core's C ABI (include/hpcc_ffi.h, what a
  simulator calls) instead of the core itself.

Input: one JSON object per line: {\"now_ns\",\"ack_seq\",\"snd_nxt\",\"path_id\",
\"hops\":[{\"rate_bps\",\"ts_ns\",\"tx_bytes\",\"qlen_bytes\"}]}.
Output: one JSON object per input line: {\"window_bytes\",\"ref_window_bytes\",
\"u\",\"inc_stage\",\"pacing_bps\",\"stale\",\"event\"}.";

/// Parses a decimal in [0, ...] with at most 6 significant fractional
/// digits into parts per million, exactly (no floating point).
fn parse_eta(s: &str) -> Result<u32, String> {
    let bad = || format!("--eta {s:?}: expected a decimal such as 0.95");
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let (keep, rest) = frac.split_at(frac.len().min(6));
    if rest.bytes().any(|b| b != b'0') {
        return Err(format!("--eta {s:?}: at most 6 fractional digits (1 ppm resolution)"));
    }
    let int: u64 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad())? };
    let mut frac_ppm: u64 = if keep.is_empty() { 0 } else { keep.parse().map_err(|_| bad())? };
    for _ in keep.len()..6 {
        frac_ppm *= 10;
    }
    let ppm = int
        .checked_mul(u64::from(ETA_SCALE))
        .and_then(|v| v.checked_add(frac_ppm))
        .ok_or_else(bad)?;
    u32::try_from(ppm).map_err(|_| format!("--eta {s:?}: must be in (0, 1]"))
}

/// The law's configuration of a profile (see `--profile`) for T = 5 us.
fn profile(name: &str, mss: u32) -> Result<HpccConfig, String> {
    match name {
        "module" => Ok(Knobs::DEFAULT.hpcc(mss, HpccConfig::DEFAULT.base_rtt_ns)),
        "drafts" => Ok(HpccConfig::DEFAULT),
        _ => Err(format!("--profile {name:?}: expected module or drafts")),
    }
}

fn parse_args(args: &[String]) -> Result<Option<HpccConfig>, String> {
    // The profile first, whatever its position: the other flags override it.
    let flag = |name: &str| {
        args.iter().enumerate().find_map(|(i, a)| match a.split_once('=') {
            Some((f, v)) if f == name => Some(v.to_string()),
            _ if a == name => args.get(i + 1).cloned(),
            _ => None,
        })
    };
    let mss = match flag("--mss") {
        Some(v) => v.parse::<u32>().ok().filter(|&m| m > 0).ok_or_else(|| format!("--mss {v:?}: expected a positive integer"))?,
        None => 1448,
    };
    let mut c = profile(flag("--profile").as_deref().unwrap_or("module"), mss)?;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-h" || a == "--help" {
            return Ok(None);
        }
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i).cloned().ok_or_else(|| format!("{flag} needs a value"))?
            }
        };
        let num = |name: &str| -> Result<u64, String> {
            value.parse::<u64>().map_err(|_| format!("{name} {value:?}: expected a non-negative integer"))
        };
        let num32 = |name: &str| -> Result<u32, String> {
            u32::try_from(num(name)?).map_err(|_| format!("{name} {value:?}: too large"))
        };
        match flag {
            "--profile" | "--mss" => {}
            "--base-rtt-ns" => c.base_rtt_ns = num(flag)?,
            "--eta" => c.eta_ppm = parse_eta(&value)?,
            "--max-stage" => c.max_stage = num32(flag)?,
            "--wai-bytes" => c.wai_bytes = num32(flag)?,
            "--flows" => c.expected_flows = num32(flag)?,
            "--init-window-bytes" => c.init_window_bytes = num32(flag)?,
            "--min-window-bytes" => c.min_window_bytes = num32(flag)?,
            "--max-window-bytes" => c.max_window_bytes = num32(flag)?,
            "--path-cap-pct" => c.path_cap_pct = num32(flag)?,
            "--u-weight-pct" => c.u_weight_pct = num32(flag)?,
            "--max-increase-pct" => c.max_increase_pct = num32(flag)?,
            "--qlen-min-filter" => {
                c.qlen_min_filter = match value.as_str() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("--qlen-min-filter {value:?}: expected 0 or 1")),
                }
            }
            "--precommit-ref" => {
                c.precommit_ref = match value.as_str() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("--precommit-ref {value:?}: expected 0 or 1")),
                }
            }
            "--mode" => {
                c.mode = match value.as_str() {
                    "sender" => Mode::Sender,
                    "receiver" => Mode::Receiver,
                    "probe" => Mode::Probe,
                    _ => return Err(format!("--mode {value:?}: expected sender, receiver or probe")),
                }
            }
            _ => return Err(format!("unknown flag {flag:?}")),
        }
        i += 1;
    }
    Ok(Some(c))
}

fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a Value, String> {
    obj.get(name).ok_or_else(|| format!("missing field {name:?}"))
}

fn uint(obj: &Map<String, Value>, name: &str, max: u64) -> Result<u64, String> {
    let v = field(obj, name)?;
    match v.as_u64() {
        Some(n) if n <= max => Ok(n),
        _ => Err(format!("field {name:?} must be an integer in 0..={max}, got {v}")),
    }
}

/// One parsed input line.
struct Line {
    now_ns: u64,
    ack_seq: u32,
    snd_nxt: u32,
    path_id: u16,
    hops: Vec<HopSample>,
}

fn parse_line(text: &str) -> Result<Line, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let obj = v.as_object().ok_or("expected a JSON object")?;
    let hops_v = field(obj, "hops")?.as_array().ok_or("field \"hops\" must be an array")?;
    let mut hops = Vec::with_capacity(hops_v.len());
    for (i, h) in hops_v.iter().enumerate() {
        let h = h.as_object().ok_or_else(|| format!("hops[{i}] must be an object"))?;
        let f = |n: &str| uint(h, n, u64::MAX).map_err(|e| format!("hops[{i}]: {e}"));
        hops.push(HopSample {
            rate_bps: f("rate_bps")?,
            ts_ns: f("ts_ns")?,
            tx_bytes: f("tx_bytes")?,
            qlen_bytes: f("qlen_bytes")?,
        });
    }
    Ok(Line {
        now_ns: uint(obj, "now_ns", u64::MAX)?,
        ack_seq: uint(obj, "ack_seq", u32::MAX.into())? as u32,
        snd_nxt: uint(obj, "snd_nxt", u32::MAX.into())? as u32,
        path_id: uint(obj, "path_id", u16::MAX.into())? as u16,
        hops,
    })
}

fn event_name(e: Event) -> &'static str {
    match e {
        Event::Recorded => "recorded",
        Event::PathChanged => "path_changed",
        Event::Updated => "updated",
        Event::Committed => "committed",
        Event::Stale(_) => "stale",
    }
}

fn run(cfg: HpccConfig) -> Result<(), String> {
    let p = cfg.validate().map_err(|e| format!("invalid parameters: {}", e.describe()))?;
    let rp = RefParams::from_params(&p);
    let mut flow = HpccFlow::new(&p);
    let mut reference = RefFlow::new(&rp);
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for (i, line) in stdin.lock().lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| format!("line {n}: read error: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let l = match parse_line(&line) {
            Ok(l) => l,
            Err(e) => {
                let _ = out.flush();
                return Err(format!("line {n}: {e}"));
            }
        };
        let s = Sample { now_ns: l.now_ns, ack_seq: l.ack_seq, snd_nxt: l.snd_nxt, path_id: l.path_id, hops: &l.hops };
        let o = flow.on_sample(&p, &s);
        let r = reference.on_sample(&rp, &s);
        // Fields in the documented order; u through serde_json for a JSON float.
        let u = Value::from(flow.u_q40() as f64 / U_ONE as f64);
        let v = format!(
            "{{\"window_bytes\":{},\"ref_window_bytes\":{},\"u\":{u},\"inc_stage\":{},\"pacing_bps\":{},\"stale\":{},\"event\":\"{}\"}}",
            o.window_bytes,
            r.window.floor() as u64,
            flow.inc_stage(),
            o.pacing_bps(),
            o.is_stale(),
            event_name(o.event),
        );
        writeln!(out, "{v}").map_err(|e| format!("write error: {e}"))?;
    }
    out.flush().map_err(|e| format!("write error: {e}"))
}

/// `--ctl`: the controller replay of a tracefs capture on stdin.
fn run_ctl(args: &[String]) -> Result<ctl::Summary, String> {
    let mut knobs = Knobs::DEFAULT;
    let mut profile_flag = false;
    let mut ffi = false;
    let mut sets = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (args[i].clone(), None),
        };
        let mut value = || {
            inline.clone().map_or_else(
                || {
                    i += 1;
                    args.get(i).cloned().ok_or_else(|| format!("{flag} needs a value"))
                },
                Ok,
            )
        };
        match flag.as_str() {
            "--ctl" => {}
            "--ffi" => ffi = true,
            "--profile" => {
                let p = value()?;
                knobs = Knobs::profile(&p).ok_or_else(|| format!("--profile {p:?}: expected module, datacenter or drafts"))?;
                profile_flag = true;
            }
            "--set" => {
                let kv = value()?;
                sets.push(ctl::parse_knob(&format!("# knob {kv}")).ok_or("--set")??.ok_or(format!("--set {kv}: not a number knob"))?)
            }
            f => return Err(format!("unknown flag {f:?} with --ctl")),
        }
        i += 1;
    }
    let set = |knobs: &mut Knobs, (k, v): &(String, u32)| {
        if knobs.set(k, *v) { Ok(()) } else { Err(format!("unknown knob {k:?}")) }
    };
    // Unknown names fail now, not at the first record.
    let mut scratch = Knobs::DEFAULT;
    sets.iter().try_for_each(|kv| set(&mut scratch, kv))?;
    // The capture's knob lines come before its first record.
    let mut recs = Vec::new();
    // The knob lines a VM capture lists, and whether it is dc-sim's.
    let (mut listed, mut dc_sim) = (Vec::new(), false);
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: read error: {e}", n + 1))?;
        let profile = ctl::parse_profile(&line);
        let knob = ctl::parse_knob(&line);
        if (profile.is_some() || knob.is_some()) && !recs.is_empty() {
            return Err(format!("line {}: a knob or profile line after the first record", n + 1));
        }
        // dc-sim's header names its profile; its knob lines are the
        // overrides on top of it.
        if let Some(p) = profile {
            dc_sim = true;
            if !profile_flag {
                knobs = Knobs::profile(p).ok_or_else(|| format!("line {}: unknown profile {p:?}", n + 1))?;
            }
            continue;
        }
        if let Some(kv) = knob {
            if let Some(kv) = kv.map_err(|e| format!("line {}: {e}", n + 1))? {
                set(&mut knobs, &kv).map_err(|e| format!("line {}: {e}", n + 1))?;
                listed.push(kv.0);
            }
            continue;
        }
        let Some(rec) = ctl::parse(&line) else { continue };
        recs.push(rec.map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    if !dc_sim && !listed.is_empty() {
        for (k, v) in ctl::KNOBS_ADDED_LATER {
            if !listed.iter().any(|l| l == k) {
                knobs.set(k, v);
            }
        }
    }
    for kv in &sets {
        let _ = set(&mut knobs, kv);
    }
    fn drive<C: ctl::Controller>(c: C, recs: &[ctl::Rec]) -> ctl::Summary {
        let mut r = ctl::Replay::new(c);
        recs.iter().for_each(|rec| r.step(rec));
        r.summary
    }
    Ok(if ffi { drive(ctl::Ffi::new(&knobs)?, &recs) } else { drive(ctl::Core(knobs), &recs) })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--knobs") {
        print!("{}", hpcc_core::knobs::Defaults);
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--ctl") {
        return match run_ctl(&args) {
            Ok(s) => {
                for m in &s.first {
                    eprintln!("hpcc-replay: mismatch: {m}");
                }
                println!(
                    "{{\"records\":{},\"connections\":{},\"acks\":{},\"telemetry_acks\":{},\"responses\":{},\"probes\":{},\"probes_held\":{},\"flows_created\":{},\"ssthresh\":{},\"skipped\":{},\"mismatches\":{}}}",
                    s.records, s.connections, s.acks, s.telemetry_acks, s.responses, s.probes, s.probes_held, s.flows_created,
                    s.ssthresh, s.skipped, s.mismatches
                );
                if s.mismatches > 0 || s.acks == 0 {
                    if s.acks == 0 {
                        eprintln!("hpcc-replay: no ACK record of a connection whose init was captured");
                    }
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                }
            }
            Err(e) => {
                eprintln!("hpcc-replay: {e}");
                ExitCode::from(2)
            }
        };
    }
    let cfg = match parse_args(&args) {
        Ok(Some(c)) => c,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("hpcc-replay: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = cfg.validate() {
        eprintln!("hpcc-replay: invalid parameters: {}\n\n{USAGE}", e.describe());
        return ExitCode::from(2);
    }
    match run(cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hpcc-replay: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_is_parsed_exactly() {
        assert_eq!(parse_eta("0.95"), Ok(950_000));
        assert_eq!(parse_eta(".95"), Ok(950_000));
        assert_eq!(parse_eta("1"), Ok(1_000_000));
        assert_eq!(parse_eta("1.000000000"), Ok(1_000_000));
        assert_eq!(parse_eta("0.000001"), Ok(1));
        assert_eq!(parse_eta("0.123456"), Ok(123_456));
        assert_eq!(parse_eta("0.9"), Ok(900_000));
        assert_eq!(parse_eta("1.5"), Ok(1_500_000)); // rejected later by validation
        for bad in ["", ".", "-0.5", "0.5e1", "0,95", "0.1234567", " 0.9", "abc", "1..2"] {
            assert!(parse_eta(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn flags_override_defaults() {
        let a: Vec<String> = "--profile drafts --base-rtt-ns 12000 --eta=0.9 --max-stage 0 --wai-bytes 100 --init-window-bytes 20000 \
                              --min-window-bytes 10 --max-window-bytes 40000 --mode receiver --flows 3"
            .split_whitespace()
            .map(String::from)
            .collect();
        let c = parse_args(&a).unwrap().unwrap();
        assert_eq!(
            c,
            HpccConfig {
                base_rtt_ns: 12_000,
                eta_ppm: 900_000,
                max_stage: 0,
                wai_bytes: 100,
                expected_flows: 3,
                init_window_bytes: 20_000,
                min_window_bytes: 10,
                max_window_bytes: 40_000,
                mode: Mode::Receiver,
                path_cap_pct: 0,
                u_weight_pct: 100,
                max_increase_pct: 0,
                low_u_pct: 0,
                qlen_min_filter: true,
                precommit_ref: false,
            }
        );
        assert!(parse_args(&["--max-stage".into(), "-1".into()]).is_err());
        let no_filter = parse_args(&["--qlen-min-filter".into(), "0".into()]);
        assert_eq!(no_filter.map(|c| c.map(|c| c.qlen_min_filter)), Ok(Some(false)));
        assert!(parse_args(&["--qlen-min-filter".into(), "2".into()]).is_err());
        assert!(parse_args(&["--bogus".into(), "1".into()]).is_err());
        assert!(parse_args(&["--eta".into()]).is_err());
        assert_eq!(parse_args(&["--help".into()]), Ok(None));
    }

    #[test]
    fn lines_are_validated() {
        let ok = r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":[{"rate_bps":5,"ts_ns":6,"tx_bytes":7,"qlen_bytes":8}]}"#;
        let l = parse_line(ok).unwrap();
        assert_eq!((l.now_ns, l.ack_seq, l.snd_nxt, l.path_id), (1, 2, 3, 4));
        assert_eq!(l.hops, vec![HopSample { rate_bps: 5, ts_ns: 6, tx_bytes: 7, qlen_bytes: 8 }]);
        for bad in [
            "{",
            "[]",
            r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":4}"#,
            r#"{"now_ns":1,"ack_seq":4294967296,"snd_nxt":3,"path_id":4,"hops":[]}"#,
            r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":65536,"hops":[]}"#,
            r#"{"now_ns":-1,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":[]}"#,
            r#"{"now_ns":1.5,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":[]}"#,
            r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":[{"rate_bps":5}]}"#,
            r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":{}}"#,
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
    }
}
