//! include/hpcc_sfc.h and rust/hpcc_core/sfc/signal.rs describe the same signal.
//! These tests compare every `#define` of the header with the Rust
//! constants and (when a C compiler is present) check the C struct's
//! offsets and size, and that a signal filled in through the C struct is
//! the one the Rust parser reads.

mod common;

use std::collections::BTreeMap;

use common::{assert_same_defines, compile_bpf, have, run_c};
use hpcc_core::sfc::{self, Signal};

fn rust_constants() -> BTreeMap<String, u64> {
    [
        ("MAGIC", sfc::MAGIC.into()),
        ("VERSION", sfc::VERSION.into()),
        ("PORT_DEFAULT", sfc::PORT_DEFAULT.into()),
        ("TTL", sfc::TTL.into()),
        ("LEN", sfc::LEN as u64),
        ("OFF_VERSION", sfc::OFF_VERSION as u64),
        ("OFF_FAMILY", sfc::OFF_FAMILY as u64),
        ("OFF_L4PROTO", sfc::OFF_L4PROTO as u64),
        ("OFF_SPEED", sfc::OFF_SPEED as u64),
        ("OFF_RESERVED", sfc::OFF_RESERVED as u64),
        ("OFF_LEN", sfc::OFF_LEN as u64),
        ("OFF_PAUSE", sfc::OFF_PAUSE as u64),
        ("OFF_QLEN", sfc::OFF_QLEN as u64),
        ("OFF_SWITCH", sfc::OFF_SWITCH as u64),
        ("OFF_PORT", sfc::OFF_PORT as u64),
        ("OFF_SPORT", sfc::OFF_SPORT as u64),
        ("OFF_DPORT", sfc::OFF_DPORT as u64),
        ("OFF_SEQ", sfc::OFF_SEQ as u64),
        ("OFF_SADDR", sfc::OFF_SADDR as u64),
        ("OFF_DADDR", sfc::OFF_DADDR as u64),
    ]
    .into_iter()
    .map(|(k, v)| (format!("HPCC_SFC_{k}"), v))
    .collect()
}

#[test]
fn header_defines_equal_rust_constants() {
    assert_same_defines("hpcc_sfc.h", &rust_constants());
}

/// The reserved word sits where checksum offload of a cloned TCP segment
/// writes when the signal has the segment's IP version: byte 16 of the L4
/// header is byte 16 - 8 (UDP header) of the payload.
#[test]
fn reserved_word_is_where_a_stale_tcp_checksum_lands() {
    const TCP_CHECK_OFF: usize = 16;
    const UDP_HDR_LEN: usize = 8;
    assert_eq!(sfc::OFF_RESERVED, TCP_CHECK_OFF - UDP_HDR_LEN);
}

#[test]
fn c_struct_layout_and_bytes_match_rust() {
    let fields = ["magic", "version", "family", "l4proto", "speed", "reserved", "len", "pause_ns", "qlen",
        "switch_id", "port_id", "sport", "dport", "reserved2", "seq", "saddr", "daddr"];
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <arpa/inet.h>\n\
         #include \"hpcc_sfc.h\"\nint main(void) {\n  struct hpcc_sfc_hdr h; unsigned i;\n",
    );
    for f in fields {
        c += &format!("  printf(\"%zu \", offsetof(struct hpcc_sfc_hdr, {f}));\n");
    }
    c += "  printf(\"%zu\\n\", sizeof(h));\n  memset(&h, 0, sizeof(h));\n\
          h.magic = htonl(HPCC_SFC_MAGIC); h.version = HPCC_SFC_VERSION; h.family = 6;\n\
          h.l4proto = 6; h.speed = 12; h.len = htons(HPCC_SFC_LEN); h.pause_ns = htonl(1500000);\n\
          h.qlen = htonl(90000); h.switch_id = htonl(0x102); h.port_id = htons(3);\n\
          h.sport = htons(40000); h.dport = htons(5201); h.seq = htonl(0xfffff000u);\n\
          h.saddr[0] = 0xfd; h.saddr[15] = 1; h.daddr[0] = 0xfd; h.daddr[15] = 2;\n\
          for (i = 0; i < sizeof(h); i++) printf(\"%02x\", ((unsigned char *)&h)[i]);\n\
          printf(\"\\n\");\n  return 0;\n}\n";
    let Some(out) = run_c("sfc-h", &c) else { return };
    let mut lines = out.lines();
    let offs: Vec<usize> = lines.next().unwrap().split(' ').map(|s| s.parse().unwrap()).collect();
    let want = [0, sfc::OFF_VERSION, sfc::OFF_FAMILY, sfc::OFF_L4PROTO, sfc::OFF_SPEED, sfc::OFF_RESERVED,
        sfc::OFF_LEN, sfc::OFF_PAUSE, sfc::OFF_QLEN, sfc::OFF_SWITCH, sfc::OFF_PORT, sfc::OFF_SPORT,
        sfc::OFF_DPORT, sfc::OFF_DPORT + 2, sfc::OFF_SEQ, sfc::OFF_SADDR, sfc::OFF_DADDR, sfc::LEN];
    assert_eq!(offs, want, "offsets of {fields:?} and the size");
    let hex = lines.next().unwrap();
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let s = sfc::parse(&bytes).expect("the C-built signal parses");
    assert_eq!(
        s,
        Signal {
            saddr: "fd00::1".parse().unwrap(),
            daddr: "fd00::2".parse().unwrap(),
            l4proto: sfc::IPPROTO_TCP,
            sport: 40000,
            dport: 5201,
            speed: 12,
            pause_ns: 1_500_000,
            qlen: 90_000,
            switch_id: 0x102,
            port_id: 3,
            seq: 0xffff_f000,
        }
    );
    let mut back = [0u8; sfc::LEN];
    sfc::encode(&s, &mut back).unwrap();
    assert_eq!(back.as_slice(), bytes.as_slice(), "Rust encodes the same bytes");
}

#[test]
fn header_compiles_for_bpf() {
    compile_bpf(
        "sfc-h",
        "#include \"hpcc_sfc.h\"\n\
         int f(struct hpcc_sfc_hdr *h) { h->len = HPCC_SFC_LEN; return sizeof(*h) == HPCC_SFC_LEN; }\n",
    );
}

/// The selftests' Python encoder (selftests/lib/py/sfc_signal.py, which reads the
/// layout from the header) builds what the Rust parser reads.
#[test]
fn python_encoder_matches_rust_parser() {
    if !have("python3") {
        eprintln!("SKIP: no python3");
        return;
    }
    let dir = common::include_dir().join("../selftests/lib/py");
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys; sys.path.insert(0, sys.argv[1]); import sfc_signal as s; \
             print(s.encode(4, 6, 12, 1500000, 90000, 0x102, 3, 40000, 5201, 0xfffff000, '10.1.1.1', '10.0.2.1').hex()); \
             print(s.encode(6, 17, 1, 7, 8, 9, 10, 11, 12, 0, 'fd00::1', 'fd00::2').hex())",
        )
        .arg(&dir)
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let hex = |h: &str| -> Vec<u8> { (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect() };
    let v4 = sfc::parse(&hex(lines.next().unwrap())).expect("IPv4 signal from python");
    assert_eq!((v4.pause_ns, v4.qlen, v4.switch_id, v4.port_id, v4.sport, v4.dport, v4.seq), (1500000, 90000, 0x102, 3, 40000, 5201, 0xfffff000));
    assert_eq!((v4.saddr, v4.daddr), ("10.1.1.1".parse().unwrap(), "10.0.2.1".parse().unwrap()));
    let v6 = sfc::parse(&hex(lines.next().unwrap())).expect("IPv6 signal from python");
    assert_eq!((v6.l4proto, v6.speed, v6.pause_ns, v6.qlen, v6.switch_id), (17, 1, 7, 8, 9));
    assert_eq!((v6.saddr, v6.daddr), ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap()));
}
