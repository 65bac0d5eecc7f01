//! Runs the hpcc-replay binary on the shipped example trace and on broken
//! inputs and flags.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use hpcc_core::law::{HopSample, HpccFlow, Sample};
use hpcc_core::params::HpccConfig;
use serde_json::Value;

const TRACE: &str = include_str!("../examples/trace.jsonl");
/// Parameters the example trace was produced with (hpcc-scenario --trace):
/// the drafts' law.
const FLAGS: &[&str] = &[
    "--profile", "drafts", "--base-rtt-ns", "10000", "--eta", "0.95", "--max-stage", "5", "--flows", "16",
    "--init-window-bytes", "125000", "--min-window-bytes", "1500", "--max-window-bytes", "500000",
];

fn replay(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hpcc-replay"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hpcc-replay");
    let mut stdin = child.stdin.take().unwrap();
    // The child may exit early on a bad flag; ignore a broken pipe.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8(o.stdout.clone()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn example_trace_replays_like_the_core_and_the_reference() {
    let o = replay(FLAGS, TRACE);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = lines(&o);
    let input: Vec<&str> = TRACE.lines().collect();
    assert_eq!(out.len(), input.len());
    assert!(input.len() > 300);

    // The same samples through the library directly.
    let p = HpccConfig {
        base_rtt_ns: 10_000,
        eta_ppm: 950_000,
        max_stage: 5,
        wai_bytes: 0,
        expected_flows: 16,
        init_window_bytes: 125_000,
        min_window_bytes: 1_500,
        max_window_bytes: 500_000,
        mode: hpcc_core::params::Mode::Sender,
        path_cap_pct: 0,
        u_weight_pct: 100,
        max_increase_pct: 0,
        low_u_pct: 0,
        qlen_min_filter: true,
        precommit_ref: false,
    }
    .validate()
    .unwrap();
    let mut f = HpccFlow::new(&p);
    let mut committed = 0;
    for (line, (text, v)) in input.iter().zip(&out).enumerate() {
        let j: Value = serde_json::from_str(text).unwrap();
        let hops: Vec<HopSample> = j["hops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| HopSample {
                rate_bps: h["rate_bps"].as_u64().unwrap(),
                ts_ns: h["ts_ns"].as_u64().unwrap(),
                tx_bytes: h["tx_bytes"].as_u64().unwrap(),
                qlen_bytes: h["qlen_bytes"].as_u64().unwrap(),
            })
            .collect();
        let s = Sample {
            now_ns: j["now_ns"].as_u64().unwrap(),
            ack_seq: j["ack_seq"].as_u64().unwrap() as u32,
            snd_nxt: j["snd_nxt"].as_u64().unwrap() as u32,
            path_id: j["path_id"].as_u64().unwrap() as u16,
            hops: &hops,
        };
        let r = f.on_sample(&p, &s);
        let w = v["window_bytes"].as_u64().unwrap();
        assert_eq!(w, u64::from(r.window_bytes), "line {}", line + 1);
        assert_eq!(v["pacing_bps"].as_u64().unwrap(), r.pacing_bps());
        assert_eq!(v["inc_stage"].as_u64().unwrap(), u64::from(f.inc_stage()));
        assert_eq!(v["stale"].as_bool().unwrap(), r.is_stale());
        // serde_json's default float parser may be off by one ulp.
        let u = f.u_q40() as f64 / (1u64 << 40) as f64;
        assert!((v["u"].as_f64().unwrap() - u).abs() <= 1e-15 * u.max(1.0));
        let rw = v["ref_window_bytes"].as_u64().unwrap();
        assert!(w.abs_diff(rw) as f64 <= 0.005 * rw as f64 + 1.0, "line {}: {w} vs {rw}", line + 1);
        if v["event"] == "committed" {
            committed += 1;
        }
    }
    assert_eq!(out[0]["event"], "recorded");
    assert_eq!(out[0]["window_bytes"], 125_000);
    assert!(committed >= 30, "about one commit per RTT over 40 RTTs, got {committed}");
    // Field order as documented.
    let first = String::from_utf8(o.stdout.clone()).unwrap();
    assert!(first.starts_with(r#"{"window_bytes":125000,"ref_window_bytes":125000,"u":1.0,"inc_stage":0,"pacing_bps":100000000000,"stale":false"#));
}

#[test]
fn receiver_mode_commits_by_time() {
    let mut flags = FLAGS.to_vec();
    flags.extend(["--mode", "receiver"]);
    let out = lines(&replay(&flags, TRACE));
    let commits = out.iter().filter(|v| v["event"] == "committed").count();
    // now advances 1.25 µs per sample: a commit every 9th sample (> T = 10 µs).
    assert!((30..=40).contains(&commits), "{commits}");
}

#[test]
fn stale_and_path_change_lines_are_reported() {
    let mut input: Vec<&str> = TRACE.lines().take(5).collect();
    input.push(input[4]); // duplicate: Δts = 0
    let t: String = input.join("\n");
    let out = lines(&replay(FLAGS, &t));
    assert_eq!(out.len(), 6);
    assert_eq!(out[5]["stale"], true);
    assert_eq!(out[5]["window_bytes"], out[4]["window_bytes"]);
    let moved = TRACE.lines().nth(5).unwrap().replace("\"path_id\":1382", "\"path_id\":7");
    let t = format!("{}\n\n{}\n", TRACE.lines().take(5).collect::<Vec<_>>().join("\n"), moved);
    let out = lines(&replay(FLAGS, &t));
    assert_eq!(out.len(), 6, "blank lines are skipped");
    assert_eq!(out[5]["event"], "path_changed");
}

#[test]
fn malformed_line_is_an_error_naming_its_number() {
    let mut input: Vec<String> = TRACE.lines().take(4).map(String::from).collect();
    input[2] = r#"{"now_ns":1,"ack_seq":2,"snd_nxt":3,"path_id":4,"hops":[{"rate_bps":5}]}"#.into();
    let o = replay(FLAGS, &input.join("\n"));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3") && err.contains("ts_ns"), "{err}");
    assert_eq!(lines(&o).len(), 2, "lines before the error are still printed");
    let o = replay(FLAGS, "{\"now_ns\": 1,\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 1: invalid JSON"));
}

#[test]
fn bad_flags_print_usage_and_fail() {
    for args in [
        &["--bogus", "1"][..],
        &["--eta", "1.5"],
        &["--eta", "0"],
        &["--eta", "abc"],
        &["--mode", "both"],
        &["--max-stage", "-1"],
        &["--base-rtt-ns", "0"],
        &["--min-window-bytes", "9", "--max-window-bytes", "8"],
        &["--wai-bytes"],
    ] {
        let o = replay(args, "");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("usage: hpcc-replay"), "{args:?}: {err}");
    }
    let o = replay(&["--help"], "");
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("--base-rtt-ns"));
}

#[test]
fn module_profile_is_the_default_and_is_the_module_law() {
    use hpcc_core::knobs::Knobs;
    use hpcc_core::law::{HpccFlow, Sample};
    let flags = ["--base-rtt-ns", "10000", "--init-window-bytes", "125000", "--max-window-bytes", "500000"];
    let o = replay(&flags, TRACE);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = lines(&o);
    let explicit = lines(&replay(&[&["--profile", "module"][..], &flags[..]].concat(), TRACE));
    assert_eq!(out, explicit, "module is the default profile");
    // The module's law: its knobs' configuration, with the flags' values.
    let p = HpccConfig {
        base_rtt_ns: 10_000,
        init_window_bytes: 125_000,
        max_window_bytes: 500_000,
        ..Knobs::DEFAULT.hpcc(1448, 10_000)
    }
    .validate()
    .unwrap();
    assert!(p.config().max_increase_pct == 110 && p.config().qlen_min_filter, "module knobs");
    let mut f = HpccFlow::new(&p);
    for (line, v) in TRACE.lines().zip(&out) {
        let e: Value = serde_json::from_str(line).unwrap();
        let hops: Vec<_> = e["hops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| hpcc_core::law::HopSample {
                rate_bps: h["rate_bps"].as_u64().unwrap(),
                ts_ns: h["ts_ns"].as_u64().unwrap(),
                tx_bytes: h["tx_bytes"].as_u64().unwrap(),
                qlen_bytes: h["qlen_bytes"].as_u64().unwrap(),
            })
            .collect();
        let r = f.on_sample(
            &p,
            &Sample {
                now_ns: e["now_ns"].as_u64().unwrap(),
                ack_seq: e["ack_seq"].as_u64().unwrap() as u32,
                snd_nxt: e["snd_nxt"].as_u64().unwrap() as u32,
                path_id: e["path_id"].as_u64().unwrap() as u16,
                hops: &hops,
            },
        );
        assert_eq!(v["window_bytes"].as_u64().unwrap(), u64::from(r.window_bytes));
    }
    // And it is not the drafts' law on this trace.
    let drafts = lines(&replay(&[&["--profile", "drafts"][..], &flags[..]].concat(), TRACE));
    assert_ne!(out, drafts);
}

/// A tracefs line of `tcp_hpcc:hpcc_ctl` (include/hpcc_trace.h).
fn ctl_line(hook: u8, flags: u16, c: &hpcc_core::control::Conn, acked: u32, out: (u32, u32, u64, u8)) -> String {
    format!(
        "  python3-812 [001] ..s2. 3.141592: hpcc_ctl: sk=00000000c0ffee00 src=10.1.1.1:40000 dst=10.0.2.1:9300 \
         hook={hook} flags={flags:#x} now={} mss={} cwnd={} ssthresh={} srtt={} min_rtt={} packets_out={} in_flight={} \
         snd_nxt={} rs_delivered={acked} rs_interval=1000 rs_prior_in_flight={acked} rs_acked_sacked={acked} resp_rx=0 \
         resp_snd_nxt=0 int= sfc_gen=0 sfc_qlen=0 sfc_speed=0 out_cwnd={} out_ssthresh={} out_pacing={} \
         out_pacing_shift={}\n",
        c.now_ns, c.mss, c.cwnd, c.ssthresh, c.srtt_us, c.min_rtt_us, c.packets_out, c.in_flight, c.snd_nxt,
        out.0, out.1, out.2, out.3
    )
}

#[test]
fn ctl_capture_with_the_modules_parameters_replays() {
    use hpcc_core::control::{ctl_rec, Conn, RateSample, SockCtl};
    use hpcc_core::knobs::Knobs;
    // The module's parameters as the selftest writes them, with a changed
    // knob (which the replay must apply) and the text access list.
    let k = Knobs { fallback_ai_segs: 3, ..Knobs::DEFAULT };
    let mut cap: String = k.entries().iter().map(|(n, v)| format!("# knob {n}={v}\n")).collect();
    cap.push_str("# knob sfc_acl=\n");
    let c = Conn { now_ns: 1_000_000, mss: 1448, cwnd: 10, ssthresh: u32::MAX, srtt_us: 1000, min_rtt_us: 1000, ..Conn::default() };
    let (mut s, d) = SockCtl::init(&k, &c, false);
    cap.push_str(&ctl_line(ctl_rec::HOOK_INIT, 0, &c, 0, (d.cwnd, d.ssthresh, d.pacing_rate, d.pacing_shift)));
    // An ACK of a whole window of a cwnd-limited connection with nothing
    // left in flight (no flow state wanted): the fallback's additive
    // increase, by 3 segments.
    let a = Conn { now_ns: 2_000_000, cwnd: d.cwnd, ssthresh: d.ssthresh, cwnd_limited: true, ..c };
    let rs = RateSample { delivered: d.cwnd, interval_us: 1000, prior_in_flight: d.cwnd, acked_sacked: d.cwnd, app_limited: false };
    let e = s.on_ack(&k, &a, Some(&rs), None);
    assert_eq!(e.cwnd, d.cwnd + 3);
    let flags = ctl_rec::CWND_LIMITED | ctl_rec::HAS_RS;
    let ack = ctl_line(ctl_rec::HOOK_ACK, flags, &a, d.cwnd, (e.cwnd, 0, e.pacing_rate, e.pacing_shift));
    let o = replay(&["--ctl"], &format!("{cap}{ack}"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out} {}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((v["connections"].as_u64(), v["acks"].as_u64(), v["mismatches"].as_u64()), (Some(1), Some(1), Some(0)));
    // With the default knobs instead, the same capture mismatches.
    let o = replay(&["--ctl", "--set", "fallback_ai_segs=1"], &format!("{cap}{ack}"));
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    // A knob line that is not a number is an error naming its line.
    let o = replay(&["--ctl"], "# knob eta_ppm=x\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 1"));
}

/// The VM trace below, decompressed.
fn vm_trace() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/ctl-before-cong-abstraction.trace.xz");
    let xz = Command::new("xz").args(["-dc", path]).output().expect("xz (xz-utils) decompresses the trace");
    assert!(xz.status.success(), "xz -dc {path}");
    String::from_utf8(xz.stdout).unwrap()
}

/// A controller trace captured in the VM (`hpcc_ctl_trace.sh`, default
/// knobs, three connections) before the kernel glue's hooks became `impl
/// Algorithm for Hpcc`: the controller must still decide every hook of it
/// exactly as the module did then. A trace taken after a refactor would
/// only check the new code against itself.
#[test]
fn vm_trace_captured_before_the_cong_abstraction_replays_exactly() {
    let trace = vm_trace();
    let o = replay(&["--ctl"], &trace);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(s["mismatches"], 0, "{s}");
    assert_eq!(s["records"], 6047, "{s}");
    assert!(s["acks"].as_u64().unwrap() > 5000 && s["responses"].as_u64().unwrap() > 1000, "{s}");
    // It lists every knob the module had then, and not wai_fair: it
    // replays with wai_fair 0 (ctl::KNOBS_ADDED_LATER). Set to 1, the
    // decisions differ: the knob changes what the module does.
    assert!(!trace.contains("# knob wai_fair="));
    let o = replay(&["--ctl", "--set", "wai_fair=1"], &trace);
    let s: Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    assert!(s["mismatches"].as_u64().unwrap() > 0, "{s}");
}

/// The same trace through the core's C ABI (`--ffi`, include/hpcc_ffi.h,
/// what a simulator calls): the module's decisions, and the same summary
/// as through the core itself.
#[test]
fn vm_trace_replays_exactly_through_the_c_abi() {
    let trace = vm_trace();
    let core = replay(&["--ctl"], &trace);
    let ffi = replay(&["--ctl", "--ffi"], &trace);
    assert!(ffi.status.success(), "{}", String::from_utf8_lossy(&ffi.stderr));
    let s: Value = serde_json::from_str(String::from_utf8_lossy(&ffi.stdout).trim()).unwrap();
    assert_eq!(s["mismatches"], 0, "{s}");
    assert_eq!(ffi.stdout, core.stdout);
}

/// A dc-sim trace names its profile in its header ("# dc-sim profile
/// datacenter knobs ..."), and its knob lines are only the overrides: the
/// replay starts from that profile, unless --profile says otherwise. The
/// VM trace ran the module's defaults, so under a datacenter header every
/// connection's first window differs, and --profile module restores it.
#[test]
fn a_dc_sim_header_names_the_profile_the_replay_starts_from() {
    let trace = vm_trace();
    // The VM capture lists every knob; dc-sim lists only its overrides.
    let records: String = trace.lines().filter(|l| !l.starts_with("# knob ")).map(|l| format!("{l}\n")).collect();
    let dc = format!("# dc-sim profile datacenter knobs \n{records}");
    let o = replay(&["--ctl"], &dc);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    assert!(s["mismatches"].as_u64().unwrap() > 0, "{s}");
    // The capture predates wai_fair and low_u_pct, and ran qlen_min_filter
    // 0 and pace_srtt_cap_pct 150: a dc-sim header lists only overrides,
    // so the knobs it lacks are the profile's unless set.
    let set = ["wai_fair=0", "low_u_pct=0", "qlen_min_filter=0", "pace_srtt_cap_pct=150"];
    let args: Vec<&str> = ["--ctl", "--profile", "module"].into_iter().chain(set.iter().flat_map(|k| ["--set", k])).collect();
    let o = replay(&args, &dc);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = replay(&["--ctl"], "# dc-sim profile nosuch knobs \n");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown profile"));
}
