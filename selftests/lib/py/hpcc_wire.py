#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The probe / response and INT wire format, for every selftest script.

Layout, constants and speed codes are read from include/hpcc_probe.h and
include/hpcc_int.h (the headers the module's Rust core and the eBPF switch
are checked against), so no script carries a copy. Packets are built byte
for byte as the module builds them (rust/hpcc_core/probe.rs), which
rust/hpcc_core/tests/python_wire.rs checks:

  hpcc_wire.py packet probe|response SRC DST SPORT DPORT DSCP NONCE SND_NXT [INT_HEX]
        prints the packet (IP header on) as hex
  hpcc_wire.py speed-code RATE_BPS
        prints the speed code a switch port of that rate reports
"""
import os
import re
import socket
import struct
import sys

_ROOT = os.environ.get("HPCC_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


def _defines(*files):
    """Every integer #define of the headers, expressions of earlier ones
    evaluated."""
    out = {}
    for f in files:
        text = open(os.path.join(_ROOT, "include", f)).read()
        for name, val in re.findall(r"^#define\s+(HPCC_\w+)\s+([^/\n]+?)\s*(?:/\*.*)?$", text, re.M):
            expr = re.sub(r"\b(HPCC_\w+)\b", lambda m: str(out[m.group(1)]), val)
            expr = re.sub(r"(?<=[0-9a-fA-F])[uUlL]+\b", "", expr)
            if re.fullmatch(r"[0-9a-fA-Fx()+\-*<> ]+", expr):
                out[name] = int(eval(expr, {"__builtins__": {}}))
    return out


H = _defines("hpcc_int.h", "hpcc_probe.h")
MAGIC = H["HPCC_PROBE_MAGIC"]
VERSION = H["HPCC_PROBE_VERSION"]
T_PROBE = H["HPCC_PROBE_TYPE_PROBE"]
T_RESPONSE = H["HPCC_PROBE_TYPE_RESPONSE"]
DSCP_PROBE = H["HPCC_PROBE_DSCP_DEFAULT"]
DSCP_RESPONSE = H["HPCC_RESPONSE_DSCP_DEFAULT"]
PROBE_HDR_LEN = H["HPCC_PROBE_HDR_LEN"]
INT_HDR_LEN = H["HPCC_INT_HDR_LEN"]
HOP_LEN = H["HPCC_INT_HOP_LEN"]
MAX_HOPS = H["HPCC_INT_MAX_HOPS"]
INT_LEN = H["HPCC_INT_MAX_LEN"]
PAYLOAD_LEN = H["HPCC_PROBE_PAYLOAD_LEN"]
TCP_HDR_LEN = H["HPCC_PROBE_TCP_HDR_LEN"]

# Speed codes: {code: (Mbit/s, byte-unit shift)}.
SPEEDS = {v: (H[n + "_MBPS"], H[n + "_UNIT_SHIFT"]) for n, v in H.items()
          if re.fullmatch(r"HPCC_INT_RATE_[0-9A-Z]+", n) and n != "HPCC_INT_RATE_MAX"}


def unit_shift(code):
    """Byte-unit shift of txBytes and qlen for a speed code (None if reserved)."""
    return SPEEDS.get(code, (None, None))[1]


def speed_code(rate_bps):
    """The code a port of `rate_bps` reports: the slowest listed rate at
    least as fast (the emulated 100M / 200M codes below 1 Gbit/s)."""
    mbps = rate_bps // 1_000_000
    for code, (m, _) in sorted(SPEEDS.items(), key=lambda kv: kv[1][0]):
        if mbps <= m:
            return code
    return max(SPEEDS, key=lambda c: SPEEDS[c][0])


def hop(code, ts, txb, qlen):
    """One hop record, from its fields already in wire units."""
    w = ((code & ((1 << H["HPCC_INT_HOP_RATE_BITS"]) - 1)) << H["HPCC_INT_HOP_RATE_POS"]) \
        | ((ts & H["HPCC_INT_TS_MASK"]) << H["HPCC_INT_HOP_TS_POS"]) \
        | ((txb & H["HPCC_INT_TXB_MASK"]) << H["HPCC_INT_HOP_TXB_POS"]) \
        | ((qlen & H["HPCC_INT_QLEN_MASK"]) << H["HPCC_INT_HOP_QLEN_POS"])
    return struct.pack("!Q", w)


def int_stack(nhop=0, path_id=0, hops=b"", rcv_flows=0):
    """An INT stack of INT_LEN bytes: header (with a response's receiver
    flow count in the padding), records, zero padding."""
    w0 = ((nhop & ((1 << H["HPCC_INT_NHOP_BITS"]) - 1)) << H["HPCC_INT_NHOP_POS"]) \
        | (path_id & H["HPCC_INT_PATHID_MASK"])
    s = struct.pack("!HH", w0, rcv_flows) + hops
    return s + bytes(max(0, INT_LEN - len(s)))


def payload(ptype, nonce, snd_nxt, stack=None):
    """The probe / response payload: header and INT stack."""
    stack = int_stack() if stack is None else stack
    return struct.pack("!IBBHII", MAGIC, VERSION, ptype, PAYLOAD_LEN, nonce, snd_nxt) + stack


def checksum(b):
    """The Internet checksum of `b`."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def tcp_packet(src, dst, sport, dport, dscp, pay, ecn=0):
    """An IPv4 or IPv6 packet carrying a TCP segment (ACK, seq/ack 0,
    window 0) with `pay`, headers as the module writes them: DF, TTL / hop
    limit 64, and a TCP checksum one off the valid one (no TCP stack
    accepts it).

    Hand-written rather than scapy: the lying receiver answers every probe
    within an RTT and the stress storm sends 10^6 packets, and scapy builds
    one over 100 times slower (build host: 1.1 ms against 6 us per
    response; TCG: 27.5 ms against 220 us, selftests/lib/py/tools_cost.py). wire_test.py checks these
    headers with scapy's dissectors, python_wire.rs byte for byte against
    the module's encoder."""
    fam = family(src)
    sa, da = socket.inet_pton(fam, src), socket.inet_pton(fam, dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 0, 0, (TCP_HDR_LEN // 4) << 4, 0x10, 0, 0, 0)
    seg = tcp + pay
    if fam == socket.AF_INET6:
        pseudo = sa + da + struct.pack("!IxxxB", len(seg), socket.IPPROTO_TCP)
    else:
        pseudo = sa + da + struct.pack("!xBH", socket.IPPROTO_TCP, len(seg))
    csum = (checksum(pseudo + seg) + 1) & 0xFFFF
    seg = seg[:16] + struct.pack("!H", csum) + seg[18:]
    tc = ((dscp & 0x3F) << 2) | (ecn & 3)
    if fam == socket.AF_INET6:
        return struct.pack("!IHBB", (6 << 28) | (tc << 20), len(seg), socket.IPPROTO_TCP, 64) + sa + da + seg
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tc, 20 + len(seg), 0, 0x4000, 64, socket.IPPROTO_TCP, 0, sa, da)
    return ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:] + seg


def packet(ptype, src, dst, sport, dport, dscp, nonce, snd_nxt, stack=None, ecn=0):
    """A complete probe or response, as the module builds it."""
    return tcp_packet(src, dst, sport, dport, dscp, payload(ptype, nonce, snd_nxt, stack), ecn)


def parse_payload(pay):
    """The fields of a probe / response payload (None if not one)."""
    if len(pay) < PAYLOAD_LEN:
        return None
    magic, ver, ptype, plen, nonce, snd_nxt = struct.unpack("!IBBHII", pay[:PROBE_HDR_LEN])
    if magic != MAGIC:
        return None
    off = PROBE_HDR_LEN
    w0, = struct.unpack("!H", pay[off:off + 2])
    pad, = struct.unpack("!H", pay[off + H["HPCC_INT_RCV_FLOWS_OFF"]:off + H["HPCC_INT_RCV_FLOWS_OFF"] + 2])
    # A probe's spacing carries the tag; a response's count never does.
    tag = H["HPCC_INT_SPACING_TAG"]
    rcv_flows, spacing_us = (0, pad & (tag - 1)) if pad & tag else (pad, 0)
    hops = []
    for i in range(MAX_HOPS):
        a = off + INT_HDR_LEN + HOP_LEN * i
        rec, = struct.unpack("!Q", pay[a:a + HOP_LEN])
        hops.append({"speed": rec >> H["HPCC_INT_HOP_RATE_POS"],
                     "ts": (rec >> H["HPCC_INT_HOP_TS_POS"]) & H["HPCC_INT_TS_MASK"],
                     "txb": (rec >> H["HPCC_INT_HOP_TXB_POS"]) & H["HPCC_INT_TXB_MASK"],
                     "qlen": (rec >> H["HPCC_INT_HOP_QLEN_POS"]) & H["HPCC_INT_QLEN_MASK"]})
    return {"type": ptype, "version": ver, "len": plen, "nonce": nonce, "snd_nxt": snd_nxt,
            "nhop": w0 >> H["HPCC_INT_NHOP_POS"], "path_id": w0 & H["HPCC_INT_PATHID_MASK"],
            "rcv_flows": rcv_flows, "spacing_us": spacing_us, "hops": hops}


def parse_frame(frame):
    """Decodes an Ethernet frame carrying an IPv4 probe or response."""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0xf) * 4
    if ip[0] >> 4 != 4 or ip[9] != socket.IPPROTO_TCP or len(ip) < ihl + 20:
        return None
    tcp = ip[ihl:]
    p = parse_payload(tcp[(tcp[12] >> 4) * 4:])
    if p is None:
        return None
    sport, dport = struct.unpack("!HH", tcp[:4])
    p.update({"dscp": ip[1] >> 2, "ecn": ip[1] & 3, "sport": sport, "dport": dport,
              "src": socket.inet_ntoa(ip[12:16]), "dst": socket.inet_ntoa(ip[16:20])})
    return p


def main(argv):
    if argv[:1] == ["packet"] and len(argv) in (9, 10):
        kind, src, dst = argv[1], argv[2], argv[3]
        sport, dport, dscp, nonce, snd_nxt = (int(x, 0) for x in argv[4:9])
        stack = bytes.fromhex(argv[9]) if len(argv) == 10 else None
        ptype = {"probe": T_PROBE, "response": T_RESPONSE}[kind]
        print(packet(ptype, src, dst, sport, dport, dscp, nonce, snd_nxt, stack).hex())
    elif argv[:1] == ["speed-code"] and len(argv) == 2:
        print(speed_code(int(argv[1])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
