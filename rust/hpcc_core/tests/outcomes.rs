//! The SFC outcomes have one home, `hpcc_core::sfc::Outcome`'s table.
//! The C side repeats them twice: `enum hpcc_sfc_outcome` in
//! include/hpcc_shim.h (whose order is the tracepoint's code) and the
//! tcp_hpcc:hpcc_sfc tracepoint's `TRACE_DEFINE_ENUM` list and
//! `__print_symbolic` names in include/hpcc_trace.h. These tests fail when
//! either drifts from the table.

use hpcc_core::sfc::{Outcome, Reject, Taken};

fn header(name: &str) -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/").to_string() + name;
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The enumerators of `enum hpcc_sfc_outcome`, in order.
fn c_enum(h: &str) -> Vec<String> {
    let body = h.split("enum hpcc_sfc_outcome {").nth(1).expect("enum hpcc_sfc_outcome").split("};").next().unwrap();
    body.lines()
        .map(|l| l.split("/*").next().unwrap().trim().trim_end_matches(','))
        .filter(|l| !l.is_empty())
        .map(|l| {
            assert!(!l.contains('='), "{l}: the codes are the order, not assigned");
            l.to_string()
        })
        .collect()
}

#[test]
fn shim_enum_is_the_table_in_order() {
    let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.c_name()).collect();
    assert_eq!(c_enum(&header("hpcc_shim.h")), names);
    for (i, o) in Outcome::ALL.iter().enumerate() {
        assert_eq!(*o as usize, i);
    }
}

#[test]
fn tracepoint_names_every_outcome_as_the_table() {
    let h = header("hpcc_trace.h");
    let defined: Vec<&str> =
        h.lines().filter_map(|l| l.trim().strip_prefix("TRACE_DEFINE_ENUM(")?.strip_suffix(");")).collect();
    let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.c_name()).collect();
    assert_eq!(defined, names, "TRACE_DEFINE_ENUM list");
    let sym = h.split("__print_symbolic(__entry->outcome,").nth(1).expect("__print_symbolic of the outcome");
    let pairs: Vec<(String, String)> = sym
        .split('{')
        .skip(1)
        .map(|e| {
            let e = e.split('}').next().unwrap();
            let (c, t) = e.split_once(',').unwrap();
            (c.trim().to_string(), t.trim().trim_matches('"').to_string())
        })
        .collect();
    let want: Vec<(String, String)> =
        Outcome::ALL.iter().map(|o| (o.c_name().to_string(), o.trace_name().to_string())).collect();
    assert_eq!(pairs, want, "__print_symbolic names");
}

#[test]
fn each_outcome_has_its_own_counter_and_each_refusal_its_own_outcome() {
    let mut counters: Vec<&str> = Outcome::ALL.iter().map(|o| o.counter_name().to_str().unwrap()).collect();
    assert!(counters.iter().all(|c| c.starts_with("sfc_")));
    counters.sort();
    counters.dedup();
    assert_eq!(counters.len(), Outcome::COUNT);
    let rejects = [
        Reject::Disabled,
        Reject::BadUdp,
        Reject::BadSource,
        Reject::Loopback,
        Reject::Tunnel,
        Reject::Iface,
        Reject::Ttl,
        Reject::Acl,
        Reject::LocalSource,
        Reject::RateLimited,
        Reject::Truncated,
        Reject::BadHeader,
        Reject::NoFlow,
        Reject::SeqOutOfWindow,
        Reject::Duplicate,
        Reject::TableFull,
        Reject::SourceQuota,
    ];
    let mut all: Vec<Outcome> = rejects.iter().map(|&r| r.into()).collect();
    all.extend([Taken::Applied, Taken::Deferred, Taken::Egress].map(Outcome::from));
    let mut codes: Vec<u8> = all.iter().map(|&o| o as u8).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), Outcome::COUNT, "every outcome reached once: {all:?}");
}
