#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of hpcc_wire.py's hand-written packet builder against scapy's
dissectors: the IP header and its checksum, and the TCP header with the
checksum one off the valid one, as the module writes them (the builder is
hand-written because scapy builds a packet over 100 times slower, see
hpcc_wire.tcp_packet); and sfc_signal.py's storm batches on loopback. KTAP on
stdout."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcc_wire as W  # noqa: E402
import ktap  # noqa: E402


def check(src, dst):
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    stack = W.int_stack(2, 0x123, W.hop(12, 1000, 2000, 30) + W.hop(13, 1, 2, 3))
    raw = W.packet(W.T_RESPONSE, src, dst, 40000, 5201, W.DSCP_RESPONSE, 0xdeadbeef, 12345, stack, ecn=1)
    v6 = ":" in src
    p = (IPv6 if v6 else IP)(raw)
    bad = []
    if v6:
        if (p.tc, p.hlim, p.nh, p.plen, p.fl) != ((W.DSCP_RESPONSE << 2) | 1, 64, 6, len(raw) - 40, 0):
            bad.append(f"IPv6 header {p.tc} {p.hlim} {p.nh} {p.plen} {p.fl}")
    else:
        if (p.tos, p.ttl, p.proto, str(p.flags), p.id, p.len) != ((W.DSCP_RESPONSE << 2) | 1, 64, 6, "DF", 0, len(raw)):
            bad.append(f"IPv4 header {p.tos} {p.ttl} {p.proto} {p.flags} {p.id} {p.len}")
        q = p.copy()
        del q.chksum
        if IP(bytes(q)).chksum != p.chksum:
            bad.append("IPv4 checksum not valid")
    t = p[TCP]
    if (t.sport, t.dport, t.seq, t.ack, str(t.flags), t.window, t.dataofs) != (40000, 5201, 0, 0, "A", 0, 5):
        bad.append(f"TCP header {t.sport} {t.dport} {t.seq} {t.ack} {t.flags} {t.window} {t.dataofs}")
    q = p.copy()
    del q[TCP].chksum
    valid = (IPv6 if v6 else IP)(bytes(q))[TCP].chksum
    if t.chksum != (valid + 1) & 0xFFFF:
        bad.append(f"TCP checksum {t.chksum:#x}, valid {valid:#x}: not valid + 1")
    pay = W.parse_payload(bytes(t.payload))
    if not pay or (pay["nonce"], pay["snd_nxt"], pay["nhop"], pay["path_id"]) != (0xdeadbeef, 12345, 2, 0x123):
        bad.append(f"payload {pay}")
    return not bad, "; ".join(bad) or f"{len(raw)} bytes, as scapy reads them"


def t_ipv4_response_matches_scapy():
    return check("10.0.1.1", "10.0.2.1")


def t_ipv6_response_matches_scapy():
    return check("fd00:1::1", "fd00:2::1")


def t_signal_storm_batch_sends_every_copy():
    """sfc_signal.py's storm sends a batch of copies in one sendmmsg(2)
    call (FrameSender.send_many): every copy leaves, each the whole frame.
    On loopback, with an ethertype nothing else uses."""
    import socket
    import struct
    import sfc_signal as S
    proto = 0x88B5  # IEEE 802 local experimental
    try:
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
        f = S.FrameSender(None, "lo", "00:00:00:00:00:00")
    except PermissionError:
        return None, "no CAP_NET_RAW"
    rx.bind(("lo", 0))
    rx.settimeout(0.5)
    f.frame = lambda pkt: bytes(12) + struct.pack("!H", proto) + pkt
    pkt = bytes([0x45]) + bytes(range(60))
    f.send_many(pkt, 100)
    got = []
    try:
        while True:
            got.append(rx.recv(2048))
    except socket.timeout:
        pass
    rx.close()
    whole = sum(1 for g in got if g == f.frame(pkt))
    return (S._sendmmsg is not None and len(got) == 100 and whole == 100,
            f"sendmmsg {'found' if S._sendmmsg else 'missing'}; received {len(got)} of 100 frames, {whole} whole")


if __name__ == "__main__":
    ktap.run([t_ipv4_response_matches_scapy, t_ipv6_response_matches_scapy, t_signal_storm_batch_sends_every_copy])
