//! `include/hpcc_ffi.h` against the library: every struct's size and
//! every field's offset as Rust lays them out (so the header has one home,
//! this crate, and drifts fail here), and every function driven from C
//! (`tests/c/smoke.c`) with the core's own answers to the same calls.

use hpcc_core::control::ctl_rec as cr;
use hpcc_core::control::{Conn, FlowCtl, Note, RateSample, Response, SfcState, SockCtl, TraceSample};
use hpcc_core::knobs::Knobs;
use hpcc_core::sfc;
use hpcc_core::wire::{self, IntStack, RawHop};
use hpcc_ffi::*;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cc() -> &'static str {
    if Command::new("cc").arg("--version").output().is_ok() {
        "cc"
    } else {
        "clang"
    }
}

/// `_Static_assert`s of a struct's size and fields' offsets.
macro_rules! layout {
    ($out:ident, $c:literal, $t:ty { $($f:ident),* $(,)? }) => {
        $out.push_str(&format!("_Static_assert(sizeof(struct {}) == {}, \"size of {}\");\n", $c, size_of::<$t>(), $c));
        $($out.push_str(&format!(
            "_Static_assert(offsetof(struct {}, {}) == {}, \"{}.{}\");\n",
            $c, stringify!($f), offset_of!($t, $f), $c, stringify!($f)
        ));)*
    };
}

#[test]
fn header_layout_is_the_librarys() {
    let mut c = String::from("#include <stddef.h>\n#include <hpcc_ffi.h>\n");
    layout!(c, "hpcc_conn", Conn { now_ns, max_pacing_rate, mss, cwnd, ssthresh, srtt_us, min_rtt_us,
        packets_out, in_flight, snd_nxt, in_reduction, cwnd_limited });
    layout!(c, "hpcc_rate_sample", RateSample { interval_us, delivered, prior_in_flight, acked_sacked, app_limited });
    layout!(c, "hpcc_response", HpccResponse { rx_ns, int_stack, int_len, snd_nxt });
    layout!(c, "hpcc_sfc_state", SfcState { gap_ns, gen, qlen, speed });
    layout!(c, "hpcc_init_decision", hpcc_core::control::InitDecision { pacing_rate, cwnd, ssthresh, pacing_shift });
    layout!(c, "hpcc_ack_decision", HpccAckDecision { pacing_rate, cwnd, tso_segs, notes, pacing_shift, probe,
        take_pause, has_trace, trace });
    layout!(c, "hpcc_sock", HpccSock {});
    layout!(c, "hpcc_tuple", hpcc_core::probe::Tuple { saddr, daddr, sport, dport });
    layout!(c, "hpcc_sfc_signal", HpccSfcSignal { pause_ns, qlen, switch_id, seq, port_id, sport, dport, family,
        l4proto, speed, saddr, daddr });
    layout!(c, "hpcc_packet", HpccPacket { tuple, nonce, snd_nxt, kind, int_stack });
    layout!(c, "hpcc_sample", TraceSample { event, hop, n_hops, inc_stage, u_ppm, sample_u_ppm, qlen, window, wc,
        cwnd, inflight, srtt_us, base_rtt_us, pacing_rate, path_rate });
    // The sample's fields are the core's one list, in order.
    let h = std::fs::read_to_string(root().join("include/hpcc_ffi.h")).unwrap();
    let body = h.split("struct hpcc_sample {").nth(1).unwrap().split("};").next().unwrap();
    let names: Vec<&str> =
        body.lines().filter_map(|l| l.trim().strip_suffix(';')).filter_map(|l| l.split_whitespace().last()).collect();
    let want: Vec<&str> = TraceSample::FIELDS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, want, "struct hpcc_sample against TraceSample::FIELDS");
    for (name, v) in [
        ("HPCC_FFI_MAX_PACKET_LEN", MAX_PACKET_LEN),
        ("HPCC_FFI_INT_LEN", INT_LEN),
        ("HPCC_FFI_SFC_LEN", SFC_LEN),
        ("HPCC_FFI_SOCK_WORDS", size_of::<SockCtl>() / 8),
        ("HPCC_FFI_NONCE_ACCEPTED", NONCE_ACCEPTED as usize),
        ("HPCC_FFI_NONCE_BAD", NONCE_BAD as usize),
        ("HPCC_FFI_NONCE_LATE", NONCE_LATE as usize),
        ("HPCC_FFI_INT_TOO_MANY_HOPS", INT_TOO_MANY_HOPS as usize),
        ("HPCC_FFI_INT_BAD", INT_BAD as usize),
        ("HPCC_FFI_NOTE_HPCC_ACK", Note::HpccAck as usize),
        ("HPCC_FFI_NOTE_FALLBACK_ACK", Note::FallbackAck as usize),
        ("HPCC_FFI_NOTE_CAPPED_BY_REDUCTION", Note::CappedByReduction as usize),
        ("HPCC_FFI_NOTE_CAPPED_BY_DELIVERY", Note::CappedByDelivery as usize),
        ("HPCC_FFI_NOTE_RESPONSE_BAD_INT", Note::ResponseBadInt as usize),
        ("HPCC_FFI_NOTE_FIRST_TELEMETRY", Note::FirstTelemetry as usize),
        ("HPCC_FFI_NOTE_SAMPLE_APPLIED", Note::SampleApplied as usize),
        ("HPCC_FFI_NOTE_SAMPLE_RECORDED", Note::SampleRecorded as usize),
        ("HPCC_FFI_NOTE_SAMPLE_PATH_CHANGED", Note::SamplePathChanged as usize),
        ("HPCC_FFI_NOTE_SAMPLE_STALE", Note::SampleStale as usize),
        ("HPCC_FFI_NOTE_SFC_WINDOW_CUT", Note::SfcWindowCut as usize),
        ("HPCC_FFI_CTL_INIT", cr::HOOK_INIT as usize),
        ("HPCC_FFI_CTL_ACK", cr::HOOK_ACK as usize),
        ("HPCC_FFI_CTL_TX_START", cr::HOOK_TX_START as usize),
        ("HPCC_FFI_CTL_SSTHRESH", cr::HOOK_SSTHRESH as usize),
        ("HPCC_FFI_CTL_IN_REDUCTION", cr::IN_REDUCTION as usize),
        ("HPCC_FFI_CTL_CWND_LIMITED", cr::CWND_LIMITED as usize),
        ("HPCC_FFI_CTL_HAS_RS", cr::HAS_RS as usize),
        ("HPCC_FFI_CTL_RS_APP_LIMITED", cr::RS_APP_LIMITED as usize),
        ("HPCC_FFI_CTL_HAS_FLOW", cr::HAS_FLOW as usize),
        ("HPCC_FFI_CTL_FLOW_CREATED", cr::FLOW_CREATED as usize),
        ("HPCC_FFI_CTL_FLOW_REFUSED", cr::FLOW_REFUSED as usize),
        ("HPCC_FFI_CTL_HAS_RESPONSE", cr::HAS_RESPONSE as usize),
        ("HPCC_FFI_CTL_PROBED", cr::PROBED as usize),
        ("HPCC_FFI_CTL_TAKE_PAUSE", cr::TAKE_PAUSE as usize),
        ("HPCC_FFI_CTL_HAS_SENT_DATA", cr::HAS_SENT_DATA as usize),
        ("HPCC_FFI_CTL_PROBE_HELD", cr::PROBE_HELD as usize),
        ("HPCC_FFI_ADMIT_SEND", hpcc_ffi::ADMIT_SEND as usize),
        ("HPCC_FFI_ADMIT_WAIT", hpcc_ffi::ADMIT_WAIT as usize),
        ("HPCC_FFI_ADMIT_OVER_BUDGET", hpcc_ffi::ADMIT_OVER_BUDGET as usize),
    ] {
        c.push_str(&format!("_Static_assert({name} == {v}, \"{name}\");\n"));
    }
    assert_eq!(size_of::<SockCtl>() % 8, 0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("hpcc_ffi_layout.c");
    std::fs::write(&src, c).unwrap();
    let o = Command::new(cc())
        .args(["-fsyntax-only", "-Wall", "-Werror", "-I"])
        .arg(root().join("include"))
        .arg(&src)
        .output()
        .expect("a C compiler");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The static library cargo built with this test: `cargo test` leaves it
/// in `target/<profile>/deps/` as `libhpcc_ffi-<hash>.a` beside this
/// test's binary (only `cargo build` copies it up a level); the newest one
/// is this build's.
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let newest = std::fs::read_dir(deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("libhpcc_ffi-") && n.ends_with(".a")
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    newest.unwrap_or_else(|| panic!("no libhpcc_ffi-*.a in {} (cargo builds it with the crate)", deps.display()))
}

/// What `tests/c/smoke.c` prints, from the core itself for the same calls.
fn expected() -> Vec<String> {
    let mut k = Knobs::DEFAULT;
    let mut out = vec![format!("knobs 1 1 -22 0")];
    let mut bad = k;
    bad.set("eta_ppm", 2_000_000);
    out.push(format!("set 0 {}", if bad.validate().is_ok() { 0 } else { -22 }));
    k.set("eta_ppm", 950_000);
    out.push(format!("get 0 {} -22", k.get("eta_ppm").unwrap()));
    let mut c = Conn { now_ns: 1_000_000, mss: 1448, cwnd: 10, ssthresh: u32::MAX, srtt_us: 20, min_rtt_us: 10, ..Conn::default() };
    let (mut s, id) = SockCtl::init(&k, &c, false);
    out.push(format!("init {} {} {} {}", id.cwnd, id.ssthresh, id.pacing_shift, id.pacing_rate));
    (c.cwnd, c.ssthresh, c.packets_out, c.in_flight) = (id.cwnd, id.ssthresh, 4, 4);
    out.push(format!("wants {} {}", u8::from(s.wants_flow_on_ack(&k, &c)), u8::from(s.wants_flow_on_tx_start(&k, &c))));
    let mut f = FlowCtl::new(&k, &c).unwrap();
    out.push(format!("flow 1 {} {}", u8::from(f.probe_at_tx_start(&k, &c)), u8::from(f.probe_due(&k, &c))));
    // The probe says the flow's interval: its srtt, 20 us.
    let spacing = f.probe_spacing_us(&k, &c);
    assert_eq!(spacing, 20);
    let slot = f.probe_sent(c.now_ns);
    let t = hpcc_core::probe::Tuple::v4([10, 0, 1, 1], [10, 0, 2, 1], 40000, 5201);
    let len = t.packet_len();
    out.push(format!("probe {len} 1 {spacing} {spacing}"));
    out.push(format!("classified 0 {} 777 40000 5201", 0xabcd_0000u32 + slot));
    out.push(format!("response {len} 1 1 1"));
    out.push("nonces 0 1 1 0 1 2".into());
    let rs = RateSample { interval_us: 20, delivered: 8, prior_in_flight: 4, acked_sacked: 2, app_limited: false };
    let sfc = SfcState::default();
    for i in 1..=2u64 {
        c.now_ns += 20_000;
        let mut hops = [RawHop::default(); wire::MAX_HOPS];
        hops[0] = RawHop { rate: 8, ts: (500_000 + 10_000 * i) as u32, tx: (1000 + 60_000 * i) as u32, qlen: 10 };
        let mut int = [0u8; INT_LEN];
        wire::encode(&IntStack { n_hops: 1, path_id: 0, hops }, &mut int).unwrap();
        wire::set_rcv_flows(&mut int, 1);
        let r = Response { rx_ns: c.now_ns, snd_nxt: 777, int: &int };
        let d = s.on_ack(&k, &c, Some(&rs), Some((&mut f, Some(&r), &sfc)));
        let tr = d.trace.unwrap_or_default();
        out.push(format!(
            "ack {} {} {} {} {} {} {} {} {} {}",
            d.cwnd,
            d.pacing_rate,
            d.pacing_shift,
            d.tso_segs,
            u8::from(d.probe),
            u8::from(d.take_pause),
            d.notes.bits(),
            u8::from(d.trace.is_some()),
            tr.event,
            tr.window
        ));
        c.cwnd = d.cwnd;
    }
    let d = s.on_ack(&k, &c, None, None);
    out.push(format!("fallback {} {}", d.cwnd, d.notes.bits()));
    out.push(format!("pacing {}", f.pacing_rate(&k, 20)));
    let ss = s.ssthresh(&k, &c);
    out.push(format!("ssthresh {ss} undo {}", s.undo_cwnd(1)));
    s.flow_refused(c.now_ns);
    out.push(format!("after refused {}", u8::from(s.wants_flow_on_ack(&k, &c))));
    out.push("nulls -22 0 -22".into());
    assert!(d.notes.has(Note::FallbackAck));
    // SFC through the core's own rules.
    let sig = sfc::Signal {
        saddr: "10.0.1.1".parse().unwrap(),
        daddr: "10.0.2.1".parse().unwrap(),
        l4proto: sfc::IPPROTO_TCP,
        sport: 40000,
        dport: 5201,
        speed: 8,
        pause_ns: 50_000,
        qlen: 120_000,
        switch_id: 7,
        port_id: 3,
        seq: 1000,
    };
    let mut pay = [0u8; sfc::LEN];
    let n = sfc::encode(&sig, &mut pay).unwrap();
    assert_eq!(sfc::parse(&pay), Ok(sig));
    k.set("sfc_enable", 1);
    k.set("sfc_max_hops", 2);
    let pause = k.sfc_rules(sfc::Acl::default(), sfc::IfaceList::default()).check_flow(&sig, Some((500, 2000))).unwrap();
    let code = |o: sfc::Outcome| o as u8;
    out.push(format!(
        "sfc {n} {} {} 0 0 {} {pause} 120000 40000 1 2",
        code(sfc::Outcome::Disabled),
        code(sfc::Outcome::Ttl),
        code(sfc::Outcome::SeqOutOfWindow)
    ));
    let m = sfc::Mail::new();
    m.put(1000, 120_000, 8, None);
    m.put(1500, 60_000, 8, Some(9000));
    let st = m.state();
    out.push(format!("mail {} {} {} {} {} 0", st.gen, st.qlen, st.speed, st.gap_ns, m.take_pause()));
    // The probe budget: 1,000 probes a second for one flow at a 20 us
    // RTT, which wants 50,000: its first probe is admitted, its next waits
    // for its 1 ms share.
    k.set("probe_budget", 1000);
    let b = hpcc_core::budget::Budget::new();
    let mut f2 = FlowCtl::new(&k, &c).unwrap();
    let at = |dt: u64| Conn { now_ns: c.now_ns + dt, ..c };
    let a0 = f2.admit_probe(&k, &b, &at(0)) as u8;
    f2.probe_sent(c.now_ns);
    let a1 = f2.admit_probe(&k, &b, &at(1000)) as u8;
    let a2 = f2.admit_probe(&k, &b, &at(1_000_000)) as u8;
    out.push(format!("budget {a0} {a1} {a2} {} -22", u8::from(b.take_response(c.now_ns, k.response_budget))));
    out
}

#[test]
fn c_program_gets_the_cores_decisions() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = dir.join("hpcc_ffi_smoke");
    let o = Command::new(cc())
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(root().join("include"))
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/smoke.c"))
        .arg(staticlib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("a C compiler");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let got: Vec<String> = String::from_utf8(run.stdout).unwrap().lines().map(str::to_string).collect();
    let want = expected();
    assert_eq!(got, want);
    // The responses did drive the law: the second ACK applied telemetry.
    let last_ack = got.iter().rev().find(|l| l.starts_with("ack ")).unwrap();
    let bits: u16 = last_ack.split(' ').nth(7).unwrap().parse().unwrap();
    assert!(bits & (1 << Note::HpccAck as u8) != 0, "{last_ack}");
}
