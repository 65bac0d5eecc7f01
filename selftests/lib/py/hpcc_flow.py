#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Bulk TCP flows with exact byte accounting, and hostile HPCC++ responses.

  hpcc_flow.py serve PORT [--once] [--reply] [--quiet] [--cc ALGO] [--bind ADDR] [--dev DEV]
        accept connections, read each to EOF, print {"bytes": N} per connection
        (--quiet: not); --reply answers each with the count (8 bytes) before
        closing, which is when an fct client stops its clock;
        --cc sets the listener's (and so the connections') algorithm, which
        dctcp needs at both ends to negotiate ECN; --bind :: listens on IPv6
        and, dual-stack, on IPv4 (default 0.0.0.0, IPv4 only); --dev binds the
        listener, and so its connections, to a device (SO_BINDTODEVICE)
  hpcc_flow.py send DST PORT SECONDS [--cc hpcc] [--sport P] [--bind ADDR]
                [--maxrate MBIT] [--started FILE]
        send for SECONDS, close gracefully, print {"bytes","secs","mbps"};
        an address with ':' (fd00::1, or ::ffff:10.0.2.1 for an IPv4 peer of
        a dual-stack socket) makes an AF_INET6 socket;
        --maxrate caps the socket's pacing rate (SO_MAX_PACING_RATE): an
        open-loop sender at a fixed rate, the reference for what the host
        stack itself does to the queue; --started writes the CLOCK_MONOTONIC
        ns at which the connection was up (also "start_ns" in the JSON)
  hpcc_flow.py fct DST PORT SECONDS --sizes B,B,... [--cc ALGO] [--gap-ms MS] [--maxrate MBIT]
        flow completion times: for SECONDS, one new connection after
        another (sizes in turn, MS apart), each sending its size to a
        `serve --reply` and waiting for the reply; prints {"fct":
        [[size, ns], ...], "started": N, "failed": N}, ns from before
        connect() to the reply; a flow whose reply is missing or does not
        count its bytes is failed, not timed; --maxrate caps each
        connection's pacing rate as for send
  hpcc_flow.py send ... [--tcp-info 1]
        also prints the socket's segs_out, segs_in (ACKs, with the SYN-ACK
        and FIN) and data_segs_out from TCP_INFO, read after the peer closed
  hpcc_flow.py send ... [--tos N] [--mark N] [--pulse BYTES,MS]
        --tos sets IP_TOS/IPV6_TCLASS (DSCP << 2), --mark SO_MARK (policy
        routing), --pulse writes BYTES every MS instead of sending flat out
  hpcc_flow.py serve P1,P2,... [options]
        one server per port (forked)
  hpcc_flow.py serve ... [--rst]
        --rst: the first connection is reset (SO_LINGER 0) after its first bytes
  hpcc_flow.py hostile DEV SECONDS [--probe-dscp D] [--dscp D] [--ready FILE]
        a lying receiver: answers each probe arriving on DEV with a response
        that claims an idle path (txBytes frozen, queue 0), for SECONDS or
        until SIGTERM; READY is created once it listens
  hpcc_flow.py labels SECONDS DEV...
        per source port and DEV: the flow labels of data packets and probes
  hpcc_flow.py reuse DST PORT SPORT SECONDS [--cc ALGO]
        a connection reset by the peer (serve --rst) and kept open, then a
        new one on the same 4-tuple sending for SECONDS
  hpcc_flow.py storm SECONDS COUNT --src A --dst A [--probe-dscp D] [--dscp D]
        a hostile storm: up to COUNT packets in SECONDS from a raw socket,
        round-robin over precomputed variants: every malformed response and
        probe the parser knows (truncated, bad magic, version, type, length,
        too many hops, random bytes), well-formed responses and probes for
        4-tuples with no flow or socket, in both DSCPs; prints {"sent"}
  hpcc_flow.py inject KIND COUNT --src A --dst A --sport P --dport P [--dscp D]
        send COUNT forged responses of one KIND from this netns (raw socket;
        IPv6 if the addresses are):
          wrong_nonce   well-formed response, random nonce
          truncated     a response cut short inside the INT stack
          too_many_hops nHop = 15 (beyond the format)
          over_max_hops nHop = 5 with valid records (beyond max_hops=4)
          random        random bytes after the TCP header
          no_flow       well-formed response for a 4-tuple with no flow
          all           COUNT of each kind above, in one process

The packet layout follows include/hpcc_probe.h and include/hpcc_int.h.
"""
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

TCP_CONGESTION = 13
SO_MAX_PACING_RATE = 47
SO_MARK = 36
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcc_wire as W  # noqa: E402
from hpcc_knobs import knob_default  # noqa: E402

MAGIC, VERSION, T_RESPONSE = W.MAGIC, W.VERSION, W.T_RESPONSE
PROBE_DSCP, RESPONSE_DSCP = str(knob_default("probe_dscp")), str(knob_default("response_dscp"))
INT_HDR, HOP, MAX_HOPS = W.INT_HDR_LEN, W.HOP_LEN, W.MAX_HOPS
PAYLOAD = W.PAYLOAD_LEN


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve(argv):
    if "," in argv[0]:
        # several ports: one server process per port
        ports = argv[0].split(",")
        for p in ports[1:]:
            if os.fork() == 0:
                return serve([p] + argv[1:])
        return serve([ports[0]] + argv[1:])
    port = int(argv[0])
    once = "--once" in argv
    bind = argv[argv.index("--bind") + 1] if "--bind" in argv else "0.0.0.0"
    ls = socket.socket(family(bind))
    if "--cc" in argv:
        ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, argv[argv.index("--cc") + 1].encode())
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family(bind) == socket.AF_INET6:
        ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    if "--dev" in argv:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, argv[argv.index("--dev") + 1].encode())
    ls.bind((bind, port))
    ls.listen(16)
    rst = "--rst" in argv
    while True:
        c, _ = ls.accept()
        n = 0
        if rst:
            # the first connection: reset after its first bytes (SO_LINGER 0)
            rst = False
            c.recv(1 << 16)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
            continue
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            n += len(b)
        if "--reply" in argv:
            c.sendall(struct.pack("!Q", n))
        c.close()
        if "--quiet" not in argv:
            print(json.dumps({"bytes": n}), flush=True)
        if once:
            return


def cap_rate(s, opts):
    """--maxrate MBIT: SO_MAX_PACING_RATE (bytes per second; the kernel
    takes an unsigned long)."""
    if "--maxrate" in opts:
        s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                     struct.pack("=Q", int(float(opts["--maxrate"]) * 1e6 / 8)))


def send(argv):
    dst, port, secs = argv[0], int(argv[1]), float(argv[2])
    opts = dict(zip(argv[3::2], argv[4::2]))
    s = socket.socket(family(dst))
    if "--cc" in opts:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, opts["--cc"].encode())
    cap_rate(s, opts)
    if "--tos" in opts:
        # the DSCP/ECN byte: IP_TOS for IPv4, IPV6_TCLASS for IPv6
        lvl, opt = ((socket.IPPROTO_IPV6, socket.IPV6_TCLASS) if family(dst) == socket.AF_INET6
                    else (socket.IPPROTO_IP, socket.IP_TOS))
        s.setsockopt(lvl, opt, int(opts["--tos"], 0))
    if "--mark" in opts:
        s.setsockopt(socket.SOL_SOCKET, SO_MARK, int(opts["--mark"], 0))
    if "--sport" in opts:
        s.bind((opts.get("--bind", "::" if family(dst) == socket.AF_INET6 else "0.0.0.0"), int(opts["--sport"])))
    s.connect((dst, port))
    # CLOCK_MONOTONIC, the emulator's clock: when this flow really started
    # (python itself can take a second or two to get here under TCG).
    start_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if "--started" in opts:
        tmp = opts["--started"] + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{start_ns}\n")
        os.rename(tmp, opts["--started"])
    # --pulse BYTES,MS: write BYTES every MS (a flow that goes idle between
    # writes: each write starts a transmission, which sends a probe)
    pulse = [float(x) for x in opts["--pulse"].split(",")] if "--pulse" in opts else None
    buf = b"\x5a" * (int(pulse[0]) if pulse else 1 << 16)
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        if pulse:
            s.sendall(buf)
            n += len(buf)
            time.sleep(pulse[1] / 1000)
        else:
            n += s.send(buf)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # wait for the peer's close: every byte was read
    dt = time.monotonic() - t0
    out = {"bytes": n, "secs": round(dt, 3), "mbps": round(n * 8 / dt / 1e6, 2), "start_ns": start_ns}
    if opts.get("--tcp-info") == "1":
        # struct tcp_info (include/uapi/linux/tcp.h): __u32 tcpi_segs_out
        # at byte 136, tcpi_segs_in at 140, tcpi_data_segs_out at 156.
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 192)
        segs_out, segs_in = struct.unpack_from("=II", info, 136)
        (data_segs_out,) = struct.unpack_from("=I", info, 156)
        out.update(segs_out=segs_out, segs_in=segs_in, data_segs_out=data_segs_out)
    s.close()
    print(json.dumps(out))


def fct(argv):
    dst, port, secs = argv[0], int(argv[1]), float(argv[2])
    opts = dict(zip(argv[3::2], argv[4::2]))
    sizes = [int(x) for x in opts["--sizes"].split(",")]
    gap = float(opts.get("--gap-ms", "10")) / 1e3
    out, failed, i, end = [], 0, 0, time.monotonic() + secs
    while time.monotonic() < end:
        size = sizes[i % len(sizes)]
        i += 1
        s = socket.socket(family(dst))
        if "--cc" in opts:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, opts["--cc"].encode())
        cap_rate(s, opts)
        buf = b"\x5a" * size
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        s.connect((dst, port))
        s.sendall(buf)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while len(got) < 8:
            b = s.recv(8 - len(got))
            if not b:
                break
            got += b
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        s.close()
        if len(got) == 8 and struct.unpack("!Q", got)[0] == size:
            out.append([size, t1 - t0])
        else:
            failed += 1
        time.sleep(gap)
    print(json.dumps({"fct": out, "started": i, "failed": failed}))


def response(nonce, snd_nxt, nhop, hops=b""):
    return W.payload(T_RESPONSE, nonce, snd_nxt, W.int_stack(nhop, 0x123, hops))


KINDS = ["wrong_nonce", "truncated", "too_many_hops", "over_max_hops", "random", "no_flow"]


def inject(argv):
    if argv[0] == "all":
        for k in KINDS:
            inject([k] + argv[1:])
        return
    kind, count = argv[0], int(argv[1])
    o = dict(zip(argv[2::2], argv[3::2]))
    src, dst = o["--src"], o["--dst"]
    sport, dport = int(o["--sport"]), int(o["--dport"])
    dscp = int(o.get("--dscp", RESPONSE_DSCP))
    # IPPROTO_RAW: we write the IP header (IPv4 or IPv6, by the addresses)
    s = socket.socket(family(src), socket.SOCK_RAW, socket.IPPROTO_RAW)
    for i in range(count):
        nonce = int.from_bytes(os.urandom(4), "big")
        if kind == "wrong_nonce":
            pl = response(nonce, i, 1, W.hop(12, i * 1000, i * 100, 0))
        elif kind == "truncated":
            pl = response(nonce, i, 1, W.hop(12, i, i, 0))[:16 + INT_HDR + 3]
        elif kind == "too_many_hops":
            pl = response(nonce, i, 15)
        elif kind == "over_max_hops":
            pl = response(nonce, i, 5, b"".join(W.hop(12, i, i, 0) for _ in range(5)))
        elif kind == "random":
            pl = os.urandom(PAYLOAD)
        elif kind == "no_flow":
            pl = response(nonce, i, 1, W.hop(12, i, i, 0))
            sport += 1
        else:
            sys.exit(f"unknown kind {kind}")
        s.sendto(W.tcp_packet(src, dst, sport, dport, dscp, pl), (dst, 0))
    print(json.dumps({"kind": kind, "sent": count}))


def storm_variants(src, dst, pd=W.DSCP_PROBE, rd=W.DSCP_RESPONSE):
    """The storm's 768 packets (IP header on): every malformed variant of
    probes and responses the parser knows, random bytes, and well-formed
    ones for 4-tuples with no flow or socket."""
    variants = []
    for i in range(64):
        nonce = int.from_bytes(os.urandom(4), "big")
        h = W.hop(12, i * 1000, i * 100, i)
        good = response(nonce, i, 1, h)
        probe = W.payload(W.T_PROBE, nonce, i, good[16:])
        for dscp, pl in [
            (rd, good),                                   # no flow / bad nonce
            (rd, good[:16 + INT_HDR + 3]),                # truncated
            (rd, response(nonce, i, 15)),                 # too many hops
            (rd, response(nonce, i, 5, h * 5)),           # over max_hops
            (rd, os.urandom(PAYLOAD)),                    # random: bad magic
            (rd, good[:4] + b"\x09" + good[5:]),          # bad version
            (rd, good[:5] + b"\x07" + good[6:]),          # bad type
            (rd, good[:6] + b"\x00\x03" + good[8:]),      # bad length
            (rd, os.urandom(i % 40)),                     # short random
            (pd, probe),                                  # probe, no socket
            (pd, probe[:20]),                             # truncated probe
            (pd, os.urandom(PAYLOAD)),                    # random probe
        ]:
            variants.append(W.tcp_packet(src, dst, 1024 + i * 7, 5201 + i, dscp, pl))
    return variants


def storm(argv):
    secs, count = float(argv[0]), int(argv[1])
    o = dict(zip(argv[2::2], argv[3::2]))
    src, dst = o["--src"], o["--dst"]
    pd, rd = int(o.get("--probe-dscp", PROBE_DSCP)), int(o.get("--dscp", RESPONSE_DSCP))
    variants = storm_variants(src, dst, pd, rd)
    s = socket.socket(family(src), socket.SOCK_RAW, socket.IPPROTO_RAW)
    t0 = time.monotonic()
    sent, end, n = 0, t0 + secs, len(variants)
    while sent < count and (sent % 1024 or time.monotonic() < end):
        try:
            s.sendto(variants[sent % n], (dst, 0))
        except OSError:
            pass
        sent += 1
        if sent % 50000 == 0:  # progress, for runs that take hours
            print(json.dumps({"progress": sent, "secs": round(time.monotonic() - t0, 1)}),
                  file=sys.stderr, flush=True)
    print(json.dumps({"sent": sent, "secs": round(time.monotonic() - t0, 1)}))


def dscp_filter(dscp):
    """A classic BPF program, compiled by tcpdump, that passes only IPv4 and
    IPv6 TCP frames carrying DSCP: a packet socket then wakes for those alone
    instead of for every data segment."""
    expr = ("(ip and (ip[1] & 0xfc) = %d and ip[9] = 6) or "
            "(ip6 and (ip6[0:2] & 0x0fc0) = %d and ip6[6] = 6)") % (dscp << 2, dscp << 6)
    out = subprocess.run(["tcpdump", "-dd", "-y", "EN10MB", expr], check=True,
                         capture_output=True, text=True).stdout
    ins = [tuple(int(x, 0) for x in l.strip(" {},").split(","))
           for l in out.splitlines() if l.startswith("{")]
    return b"".join(struct.pack("HBBI", *i) for i in ins), len(ins)


def frames(dev, secs, bpf=None, ready=None):
    """Ethernet frames received on DEV (this netns) for SECS seconds, only
    those BPF (a dscp_filter) passes if given; READY, a path, is created once
    the socket listens."""
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    if bpf:
        prog = ctypes.create_string_buffer(bpf[0])
        # struct sock_fprog { unsigned short len; struct sock_filter *filter; }
        rx.setsockopt(socket.SOL_SOCKET, 26,  # SO_ATTACH_FILTER
                      struct.pack("HL", bpf[1], ctypes.addressof(prog)))
    rx.bind((dev, 0))
    rx.settimeout(0.2)
    if ready:
        open(ready, "w").close()
    t_end = time.monotonic() + secs
    while time.monotonic() < t_end:
        try:
            f, addr = rx.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        yield f


def ip_tcp(frame):
    """(family, src, dst, tclass, flow label, TCP bytes) of an IPv4/IPv6 TCP
    frame without options or extension headers, else None."""
    et = frame[12:14]
    if et == b"\x08\x00" and len(frame) >= 34 and frame[23] == 6:
        ihl = (frame[14] & 0xf) * 4
        return (socket.AF_INET, frame[26:30], frame[30:34], frame[15], 0, frame[14 + ihl:])
    if et == b"\x86\xdd" and len(frame) >= 54 and frame[20] == 6:
        w, = struct.unpack("!I", frame[14:18])
        return (socket.AF_INET6, frame[22:38], frame[38:54], (w >> 20) & 0xff, w & 0xfffff, frame[54:])
    return None


def ours(tcp, ptype):
    """The nonce, snd_nxt and INT stack of a probe (ptype 1) or response (2)."""
    pay = tcp[(tcp[12] >> 4) * 4:] if len(tcp) >= 20 else b""
    p = W.parse_payload(pay)
    if not p or p["version"] != VERSION or p["type"] != ptype or p["len"] != PAYLOAD:
        return None
    return p["nonce"], p["snd_nxt"], pay[W.PROBE_HDR_LEN:PAYLOAD]


def hostile(argv):
    """A receiver that lies: answers every probe arriving on DEV with a
    response claiming an idle path (each stamped hop keeps its rate code and
    timestamp, but its txBytes stop at their first value and its queue is
    0, so u' = 0). The module's own answer must be stopped by the caller
    (an nftables rule dropping the probe DSCP before its hook)."""
    dev, secs = argv[0], float(argv[1])
    dscp = int(argv[argv.index("--dscp") + 1]) if "--dscp" in argv else int(RESPONSE_DSCP)
    pdscp = int(argv[argv.index("--probe-dscp") + 1]) if "--probe-dscp" in argv else int(PROBE_DSCP)
    ready = argv[argv.index("--ready") + 1] if "--ready" in argv else None
    tx = {socket.AF_INET: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
          socket.AF_INET6: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)}
    frozen = {}
    sent = 0
    # SIGTERM (the caller, once its flow ended) ends the answers early.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        for f in frames(dev, secs, dscp_filter(pdscp), ready):
            p = ip_tcp(f)
            if not p:
                continue
            fam, src, dst, _, _, tcp = p
            o = ours(tcp, 1)
            if not o:
                continue
            nonce, snd_nxt, stack = o
            sport, dport = struct.unpack("!HH", tcp[:4])
            hdr = W.parse_payload(W.payload(T_RESPONSE, nonce, snd_nxt, stack))
            hops = b""
            for i, h in enumerate(hdr["hops"][:min(hdr["nhop"], MAX_HOPS)]):
                txb = frozen.setdefault((sport, dport, i), h["txb"])
                hops += W.hop(h["speed"], h["ts"], txb, 0)
            pl = W.payload(T_RESPONSE, nonce, snd_nxt, W.int_stack(hdr["nhop"], hdr["path_id"], hops))
            a = lambda b: socket.inet_ntop(fam, b)
            tx[fam].sendto(W.tcp_packet(a(dst), a(src), dport, sport, dscp, pl), (a(src), 0))
            sent += 1
    finally:
        print(json.dumps({"forged": sent}))


def labels(argv):
    """Per TCP source port arriving on each DEV: the IPv6 flow labels (or,
    for IPv4, 0) of its data packets and of its probes; JSON."""
    secs = float(argv[0])
    out = {}
    import threading
    lock = threading.Lock()

    def watch(dev):
        for f in frames(dev, secs):
            p = ip_tcp(f)
            if not p:
                continue
            tcp = p[5]
            sport, = struct.unpack("!H", tcp[:2])
            kind = "probe" if ours(tcp, 1) else ("data" if len(tcp) > (tcp[12] >> 4) * 4 else None)
            if kind is None:
                continue
            with lock:
                e = out.setdefault(str(sport), {})
                e.setdefault(f"{dev}_{kind}", set()).add(p[4])
    ts = [threading.Thread(target=watch, args=(d,)) for d in argv[1:]]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({k: {kk: sorted(vv) for kk, vv in v.items()} for k, v in out.items()}))


def reuse(argv):
    """A connection from SPORT that the peer resets (it must close with
    SO_LINGER 0 after the first bytes, `serve --rst`), kept open by this
    application, then a new connection on the same 4-tuple sending for
    SECONDS. Prints {"reset": bool, "bytes": N}."""
    dst, port, sport, secs = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    cc = argv[argv.index("--cc") + 1].encode() if "--cc" in argv else None
    bind = "::" if family(dst) == socket.AF_INET6 else "0.0.0.0"

    def sock():
        s = socket.socket(family(dst))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc)
        s.bind((bind, sport))
        s.connect((dst, port))
        return s
    old = sock()
    reset = False
    try:
        old.sendall(b"x" * 100000)
        for _ in range(50):
            if not old.recv(1):
                break
    except ConnectionError:  # reset, or a broken pipe after the reset
        reset = True
    new = sock()
    n = 0
    t0 = time.monotonic()
    buf = b"\x5a" * (1 << 16)
    while time.monotonic() - t0 < secs:
        n += new.send(buf)
    new.shutdown(socket.SHUT_WR)
    new.recv(1)
    new.close()
    old.close()
    print(json.dumps({"reset": reset, "bytes": n}))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    {"serve": serve, "send": send, "fct": fct, "inject": inject, "storm": storm, "hostile": hostile, "labels": labels,
     "reuse": reuse}.get(cmd, lambda a: sys.exit(__doc__))(sys.argv[2:])
