//! The sample record's fields have one home, `trace_sample_fields!`
//! (`hpcc_core::control::TraceSample::FIELDS`). The kernel glue builds the
//! C record from it and asserts the layout; these tests check the C side
//! that a build does not: `struct hpcc_trace_rec` (include/hpcc_shim.h),
//! and the `tcp_hpcc:hpcc_sample` tracepoint's entry and assignments
//! (include/hpcc_trace.h), which must name every field, in order.

use hpcc_core::control::TraceSample;

fn header(name: &str) -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/").to_string() + name;
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn c_type(rust: &str) -> String {
    format!("__{rust}")
}

fn want() -> Vec<(String, String)> {
    TraceSample::FIELDS.iter().map(|(n, t)| (n.to_string(), c_type(t))).collect()
}

#[test]
fn c_record_is_the_field_list() {
    let h = header("hpcc_shim.h");
    let body = h.split("struct hpcc_trace_rec {").nth(1).expect("struct hpcc_trace_rec").split("};").next().unwrap();
    let got: Vec<(String, String)> = body
        .lines()
        .map(|l| l.split("/*").next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (t, n) = l.trim_end_matches(';').split_once(char::is_whitespace).unwrap();
            (n.trim().to_string(), t.to_string())
        })
        .collect();
    assert_eq!(got, want());
}

#[test]
fn tracepoint_entry_and_assignments_are_the_field_list() {
    let h = header("hpcc_trace.h");
    let ev = h.split("TRACE_EVENT(hpcc_sample,").nth(1).expect("hpcc_sample").split("TRACE_EVENT(").next().unwrap();
    let entry = ev.split("TP_STRUCT__entry(").nth(1).unwrap().split("TP_fast_assign(").next().unwrap();
    let fields: Vec<(String, String)> = entry
        .lines()
        .filter_map(|l| l.trim().strip_prefix("__field(")?.strip_suffix(')'))
        .map(|f| {
            let (t, n) = f.split_once(',').unwrap();
            (n.trim().to_string(), t.trim().to_string())
        })
        .collect();
    assert_eq!(fields, want(), "TP_STRUCT__entry");
    let assign = ev.split("TP_fast_assign(").nth(1).unwrap().split("TP_printk(").next().unwrap();
    let assigned: Vec<String> = assign
        .lines()
        .filter_map(|l| {
            let (lhs, rhs) = l.trim().strip_prefix("__entry->")?.split_once(" = ")?;
            (rhs.trim_end_matches(';') == format!("r->{lhs}")).then(|| lhs.to_string())
        })
        .collect();
    let names: Vec<String> = want().into_iter().map(|(n, _)| n).collect();
    assert_eq!(assigned, names, "TP_fast_assign");
}

#[test]
fn words_round_trip_every_field() {
    let t = TraceSample {
        event: 3,
        hop: 1,
        n_hops: 2,
        inc_stage: 4,
        u_ppm: 950_000,
        sample_u_ppm: 1_200_000,
        qlen: 12_345,
        window: 25_000,
        wc: 24_000,
        cwnd: 17,
        inflight: 16,
        srtt_us: 2_100,
        base_rtt_us: 2_000,
        pacing_rate: 12_500_000,
        path_rate: u64::MAX,
    };
    let w = t.to_words();
    assert_eq!(w.len(), TraceSample::FIELDS.len());
    assert_eq!(TraceSample::from_words(&w), t);
    let mut bad = w;
    bad[0] = 256;
    assert_eq!(TraceSample::from_words(&bad).event, 0, "too wide for a u8");
}
