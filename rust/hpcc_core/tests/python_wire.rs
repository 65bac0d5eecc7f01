//! `selftests/lib/py/hpcc_wire.py`, the one Python copy of the wire format every
//! selftest script uses, builds probes and responses byte for byte as the
//! core does, and reports the same speed codes as the table.

mod common;

use hpcc_core::probe::{build_probe, build_response, classify, Tuple, MAX_PACKET_LEN};
use hpcc_core::wire::{self, IntStack, RawHop, RATES};
use std::process::Command;

fn py(args: &[&str]) -> Option<String> {
    if !common::have("python3") {
        eprintln!("SKIP: no python3");
        return None;
    }
    let script = common::include_dir().join("../selftests/lib/py/hpcc_wire.py");
    let out = Command::new("python3").arg(script).args(args).output().unwrap();
    assert!(out.status.success(), "hpcc_wire.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn probes_and_responses_match_the_core() {
    let v4 = Tuple::v4([10, 0, 1, 1], [10, 0, 2, 1], 40000, 5201);
    let mut v6 = Tuple { sport: 40000, dport: 5201, ..Tuple::default() };
    v6.saddr = "fd00:1::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
    v6.daddr = "fd00:2::1".parse::<std::net::Ipv6Addr>().unwrap().octets();
    for (t, src, dst) in [(v4, "10.0.1.1", "10.0.2.1"), (v6, "fd00:1::1", "fd00:2::1")] {
        let mut b = [0u8; MAX_PACKET_LEN];
        let n = build_probe(&mut b, &t, 11, 0xdead_beef, 123_456, 0);
        let Some(p) = py(&["packet", "probe", src, dst, "40000", "5201", "11", "0xdeadbeef", "123456"]) else {
            return;
        };
        assert_eq!(p, hex(&b[..n]), "probe {src}");
        // A response carrying two stamped hops.
        let mut st = IntStack { n_hops: 2, path_id: 0x5a5, ..Default::default() };
        st.hops[0] = RawHop::quantize(12, 1_234_567, 99_999, 1500).unwrap();
        st.hops[1] = RawHop::quantize(8, 7_654_321, 12_345_678, 64_000).unwrap();
        let mut int = [0u8; wire::encoded_len(wire::MAX_HOPS)];
        wire::encode(&st, &mut int).unwrap();
        let mut stamped = b;
        stamped[n - int.len()..n].copy_from_slice(&int);
        let probe = classify(&stamped[..n], 11, 15).unwrap().unwrap();
        let mut r = [0u8; MAX_PACKET_LEN];
        let rn = build_response(&mut r, &probe, 15, 0);
        let got = py(&["packet", "response", dst, src, "5201", "40000", "15", "0xdeadbeef", "123456", &hex(&int)]).unwrap();
        assert_eq!(got, hex(&r[..rn]), "response {src}");
    }
}

#[test]
fn speed_codes_match_the_table() {
    for r in RATES {
        let Some(code) = py(&["speed-code", &(r.mbps * 1_000_000).to_string()]) else { return };
        assert_eq!(code, r.code.to_string(), "{} Mbit/s", r.mbps);
    }
}
