//! include/hpcc_int.h and rust/hpcc_core/wire.rs describe the same wire
//! format. These tests parse every `#define` of the header and compare it
//! with the Rust constants, check that the unit table follows its stated
//! rule, and (when a C compiler is present) compile the header's helpers and
//! compare their bytes with the Rust encoder.

mod common;

use std::collections::BTreeMap;

use common::{assert_same_defines, compile_bpf, run_c};
use hpcc_core::wire::{self, RawHop, IntStack, RATES};

fn rust_constants() -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = [
        ("HDR_LEN", wire::HDR_LEN as u64),
        ("HOP_LEN", wire::HOP_LEN as u64),
        ("MAX_HOPS", wire::MAX_HOPS as u64),
        ("MAX_LEN", wire::encoded_len(wire::MAX_HOPS) as u64),
        ("RCV_FLOWS_OFF", wire::RCV_FLOWS_OFF as u64),
        ("SPACING_TAG", wire::SPACING_TAG.into()),
        ("NHOP_POS", wire::NHOP_POS.into()),
        ("NHOP_BITS", wire::NHOP_BITS.into()),
        ("PATHID_BITS", wire::PATHID_BITS.into()),
        ("PATHID_MASK", (1u64 << wire::PATHID_BITS) - 1),
        ("HOP_RATE_POS", wire::HOP_RATE_POS.into()),
        ("HOP_RATE_BITS", wire::HOP_RATE_BITS.into()),
        ("HOP_TS_POS", wire::HOP_TS_POS.into()),
        ("HOP_TS_BITS", wire::HOP_TS_BITS.into()),
        ("HOP_TXB_POS", wire::HOP_TXB_POS.into()),
        ("HOP_TXB_BITS", wire::HOP_TXB_BITS.into()),
        ("HOP_QLEN_POS", wire::HOP_QLEN_POS.into()),
        ("HOP_QLEN_BITS", wire::HOP_QLEN_BITS.into()),
        ("TS_MASK", (1u64 << wire::HOP_TS_BITS) - 1),
        ("TXB_MASK", (1u64 << wire::HOP_TXB_BITS) - 1),
        ("QLEN_MASK", (1u64 << wire::HOP_QLEN_BITS) - 1),
        ("TS_UNIT_SHIFT", wire::TS_UNIT_SHIFT.into()),
        ("TS_SPAN_NS", wire::TS_SPAN_NS),
        ("MAX_GAP_NS", wire::MAX_GAP_NS),
        ("RATE_MAX", RATES.len() as u64),
    ]
    .into_iter()
    .map(|(k, v)| (format!("HPCC_INT_{k}"), v))
    .collect();
    for r in RATES {
        m.insert(format!("HPCC_INT_RATE_{}", r.name), r.code.into());
        m.insert(format!("HPCC_INT_RATE_{}_MBPS", r.name), r.mbps);
        m.insert(format!("HPCC_INT_RATE_{}_UNIT_SHIFT", r.name), r.unit_shift.into());
    }
    m
}

#[test]
fn header_defines_equal_rust_constants() {
    assert_same_defines("hpcc_int.h", &rust_constants());
}

#[test]
fn rate_table_is_dense_and_units_follow_the_rule() {
    for (i, r) in RATES.iter().enumerate() {
        assert_eq!(usize::from(r.code), i + 1);
        assert_eq!(wire::rate_info(r.code), Some(r));
        // Smallest power of two for which the 20-bit txBytes counter at line
        // rate wraps no faster than the 24-bit ts counter.
        let bytes_per_span = r.bps() as f64 / 8.0 * wire::TS_SPAN_NS as f64 * 1e-9;
        let span = |s: u32| (1u64 << (wire::HOP_TXB_BITS + s)) as f64;
        assert!(span(r.unit_shift) >= bytes_per_span, "{}: unit too small", r.name);
        assert!(r.unit_shift == 0 || span(r.unit_shift - 1) < bytes_per_span, "{}: unit not minimal", r.name);
    }
    for code in [0u8, 16, 255] {
        assert_eq!(wire::rate_info(code), None);
    }
    // The gap limit covers a probe per RTT at the largest supported T (10 ms).
    assert!(wire::MAX_GAP_NS > 10_000_000);
}

#[test]
fn c_helpers_pack_the_same_bytes_as_rust() {
    let cases: Vec<(u32, u32, u32, u32, u32, u32)> = (0..64u32)
        .map(|i| {
            let x = i.wrapping_mul(0x9e37_79b9);
            (1 + i % 11, x >> 8, x.rotate_left(7), x.rotate_left(13) & 0xffff, i % 9, x & 0xfff)
        })
        .collect();
    let mut c = String::from("#include <stdio.h>\n#include \"hpcc_int.h\"\nint main(void) {\n");
    c += "  struct hpcc_int_hop h; struct hpcc_int_hdr x; unsigned char *p; int i;\n";
    for (rate, ts, tx, q, nhop, pid) in &cases {
        c += &format!(
            "  hpcc_int_hop_pack(&h, {rate}u, {ts}u, {tx}u, {q}u); p = (unsigned char *)&h;\n  \
             for (i = 0; i < 8; i++) printf(\"%02x\", p[i]);\n  \
             hpcc_int_hdr_pack(&x, {nhop}u, {pid}u); p = (unsigned char *)&x;\n  \
             for (i = 0; i < 4; i++) printf(\"%02x\", p[i]);\n  printf(\"\\n\");\n"
        );
    }
    c += "  for (i = 0; i < 17; i++) printf(\"%d \", hpcc_int_unit_shift(i));\n  return 0;\n}\n";
    let Some(text) = run_c("int-h", &c) else { return };
    let mut lines = text.lines();
    for (rate, ts, tx, q, nhop, pid) in &cases {
        let hop = RawHop { rate: *rate as u8, ts: *ts, tx: *tx, qlen: *q as u16 };
        let mut stack = IntStack { n_hops: 1, path_id: *pid as u16, ..Default::default() };
        stack.hops[0] = hop;
        let mut buf = [0u8; 12];
        wire::encode(&stack, &mut buf).unwrap();
        let want_hop: String = buf[4..].iter().map(|b| format!("{b:02x}")).collect();
        let st2 = IntStack { n_hops: *nhop as u8, path_id: *pid as u16, ..Default::default() };
        let mut full = [0u8; 68];
        wire::encode(&st2, &mut full).unwrap();
        let want_hdr: String = full[..4].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(lines.next().unwrap(), format!("{want_hop}{want_hdr}"), "{hop:?} {nhop} {pid}");
    }
    let shifts: Vec<i64> = lines.next().unwrap().split_whitespace().map(|s| s.parse().unwrap()).collect();
    for (code, s) in shifts.iter().enumerate() {
        let want = wire::rate_info(code as u8).map(|r| i64::from(r.unit_shift)).unwrap_or(-1);
        assert_eq!(*s, want, "unit shift of code {code}");
    }
}

#[test]
fn header_compiles_for_bpf() {
    compile_bpf(
        "int-h",
        "#include \"hpcc_int.h\"\n\
         int f(struct hpcc_int_hop *h, struct hpcc_int_hdr *x, __u32 r)\n\
         { hpcc_int_hop_pack(h, r, 2, 3, 4); hpcc_int_hdr_pack(x, 1, 5); return hpcc_int_unit_shift(r); }\n",
    );
}
