#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One N:1 incast, all ends in this one process (one clock, no start-up skew).

  incast.py run --senders NS,NS,... --to NS --dst ADDR --sizes B,B,...
                [--port 7000] [--cc ALGO] [--victim NS] [--victim-port 7001]
                [--rpc 8192] [--lead 0.3] [--timeout 30]
  incast.py sizes N REP     N message sizes of repetition REP (64-256 KiB)
  incast.py metrics LOG RUN RATE_BPS RTT_US   the run's metrics from the
                bottleneck's packet log (intsw.py log) and `run`'s output

`run` connects one TCP socket from each sender netns (socket created in that
netns) to a listener in --to, and a victim connection from --victim. The
victim sends RPCs of --rpc bytes, one at a time, each answered with 64
bytes, from --lead seconds before the incast until it is over. At the start
instant every sender hands its whole message to the kernel (SO_SNDBUF holds
it: one send() each) and shuts down its side; the receiver reads everything.
Prints one JSON object: t_start_ns (CLOCK_MONOTONIC, the switch
emulator's clock), per flow {bytes, first_send_ns, last_recv_ns}, the
victim's RPCs [[start_ns, latency_ns], ...], and errors.
"""
import json
import os
import random
import select
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TCP_CONGESTION = 13
REPLY = 64


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def nb(f, *args, default=b""):
    """f(*args) on a non-blocking socket; `default` if it would block."""
    try:
        return f(*args)
    except BlockingIOError:
        return default


def sizes(n, rep):
    """The messages of one repetition: the same for every algorithm and for
    SFC off and on (seeded by the repetition)."""
    r = random.Random(1000 + rep)
    return [r.randrange(64, 257) * 1024 for _ in range(n)]


def sock_in(ns, fam, cc, sndbuf=0):
    from intsw import in_netns
    with in_netns(ns):
        s = socket.socket(fam, socket.SOCK_STREAM)
    if cc:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
    if sndbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    return s


SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000   # <asm-generic/socket.h>, <linux/socket.h>


def run(a):
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    szs = [int(x) for x in a.sizes.split(",")]
    senders = a.senders.split(",")
    assert len(szs) == len(senders), "one size per sender"
    lst = sock_in(a.to, fam, a.cc)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((a.dst, a.port))
    lst.listen(len(senders) + 4)
    flows = []
    for ns, sz in zip(senders, szs):
        # SO_SNDBUF is doubled by the kernel: the whole message fits.
        c = sock_in(ns, fam, a.cc, sndbuf=sz + 65536)
        c.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
        c.connect((a.dst, a.port))
        r, _ = lst.accept()
        # The message is built (and its pages touched) now, not at the
        # start: under virtual time allocating 256 KiB per sender inside the
        # start loop spread the senders' first bytes over 7 ms (3.6 base
        # RTTs) instead of starting them at one instant.
        flows.append({"tx": c, "rx": r, "size": sz, "sent": 0, "got": 0, "msg": memoryview(b"\x00" * sz),
                      "first_send_ns": None, "last_recv_ns": None})
    vc = vr = None
    if a.victim:
        vl = sock_in(a.to, fam, a.cc)
        vl.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        vl.bind((a.dst, a.victim_port))
        vl.listen(1)
        vc = sock_in(a.victim, fam, a.cc)
        vc.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        vc.connect((a.dst, a.victim_port))
        vr, _ = vl.accept()
        vr.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        vl.close()
    lst.close()
    for f in flows:
        f["tx"].setblocking(False)
        f["rx"].setblocking(False)
    req = bytes(a.rpc)
    rpcs, errors = [], []
    v = {"out": 0, "t0": None, "srv": 0, "cli": 0}   # request bytes written / read, reply bytes read

    def victim_start():
        v["out"], v["srv"], v["cli"], v["t0"] = 0, 0, 0, now()

    t_start = now() + int(a.lead * 1e9)
    if vc:
        vc.setblocking(False)
        vr.setblocking(False)
        victim_start()
    started = False
    deadline = t_start + int(a.timeout * 1e9)
    t_done = None
    while True:
        t = now()
        if t > deadline:
            errors.append("timeout")
            break
        if not started and t >= t_start:
            started = True
            # Every message at once. In the one guest CPU each write runs
            # before the next: copied, the 16 messages took 1.5 ns per byte
            # plus 0.1 ms each and spread the first bytes over 4.8 ms (2.4
            # base RTTs), so later senders met a buffer the first had
            # filled. MSG_ZEROCOPY pins the message's pages instead; its
            # bytes are copied later, packet by packet, as they are sent.
            for f in flows:
                f["first_send_ns"] = now()
                f["sent"] += nb(f["tx"].send, f["msg"], MSG_ZEROCOPY, default=0)
        done = started and all(f["got"] >= f["size"] for f in flows)
        if done and t_done is None:
            t_done = max(f["last_recv_ns"] for f in flows)
        # The victim's RPC in flight finishes; then the run is over.
        if done and (vc is None or v["t0"] is None):
            break
        rd = [f["rx"] for f in flows if f["got"] < f["size"]]
        wr = [f["tx"] for f in flows if started and f["sent"] < f["size"]]
        if vc and v["t0"] is not None:
            rd += [vr, vc]
            if v["out"] < a.rpc:
                wr.append(vc)
        wait = 0.001 if not started else 0.05
        r, w, _ = select.select(rd, wr, [], wait)
        t = now()
        for f in flows:
            if f["tx"] in w:
                f["sent"] += nb(f["tx"].send, f["msg"][f["sent"]:], default=0)
            if f["sent"] >= f["size"] and f["tx"] is not None and f["tx"].fileno() >= 0 and not f.get("shut"):
                f["tx"].shutdown(socket.SHUT_WR)
                f["shut"] = True
            if f["rx"] in r:
                d = nb(f["rx"].recv, 1 << 20)
                if d:
                    f["got"] += len(d)
                    f["last_recv_ns"] = t
        if vc and v["t0"] is not None:
            if vc in w:
                v["out"] += nb(vc.send, req[v["out"]:], default=0)
            if vr in r:
                d = nb(vr.recv, 1 << 16)
                v["srv"] += len(d)
                if v["srv"] >= a.rpc and len(d):
                    vr.send(bytes(REPLY))
            if vc in r:
                v["cli"] += len(nb(vc.recv, 1 << 16))
                if v["cli"] >= REPLY:
                    rpcs.append([v["t0"], t - v["t0"]])
                    v["t0"] = None
                    if not done:
                        victim_start()
    for f in flows:
        f["tx"].close()
        f["rx"].close()
    for s in (vc, vr):
        if s:
            s.close()
    print(json.dumps({
        "t_start_ns": t_start, "t_done_ns": t_done, "cc": a.cc,
        "flows": [{"bytes": f["size"], "got": f["got"], "first_send_ns": f["first_send_ns"],
                   "last_recv_ns": f["last_recv_ns"]} for f in flows],
        "rpcs": rpcs, "errors": errors}))
    return 0 if not errors else 1


def pct(v, q):
    """Nearest-rank percentile q (0..1), as benchstat.py; None if empty."""
    from benchstat import pct as nearest_rank
    return nearest_rank(v, q) if len(v) else None


def segments(wire):
    """Packets on the wire in a logged skb of WIRE bytes (Ethernet MTU 1500)."""
    return max(1, -(-wire // 1514))


# Bytes of headers per segment on the wire: Ethernet 14, TCP 20 with
# timestamps 12, and IPv4 20 or IPv6 40.
HDR = {4: 66, 6: 86}
MSS = {4: 1448, 6: 1428}


def victim_fair_us(rpc, senders, rate_bps, rtt_us, family=4):
    """The victim's RPC time at a fair share: its RPC's bytes on the wire at
    1/(N+1) of the port, plus one base RTT (the reply)."""
    wire = rpc + -(-rpc // MSS[family]) * HDR[family]
    return round(wire * 8e6 * (senders + 1) / rate_bps + rtt_us, 1)


def metrics(log_path, run_path, rate_bps, rtt_us):
    """The incast's numbers (see incast.sh) from the bottleneck's packet log
    (rows: t_ns backlog sport wire dropped) and run's JSON."""
    r = json.load(open(run_path))
    rows = [tuple(int(x) for x in l.split()) for l in open(log_path) if l.strip()]
    rtt_ns = rtt_us * 1000
    bdp = rate_bps / 8 * rtt_us / 1e6
    t0 = min(f["first_send_ns"] for f in r["flows"])
    t_end = r["t_done_ns"] or max((f["last_recv_ns"] or t0) for f in r["flows"])
    inc = [x for x in rows if t0 <= x[0] <= t_end]
    # The backlog each packet on the wire found: a TSO skb's segments are
    # packets too, segment i with the i before it also ahead (as the
    # emulator's histogram counts them; a dropped skb's segments all found
    # the same full queue). Per skb, a 5-segment burst into a full queue
    # would count once, like one segment into an empty one.
    def per_packet(rows):
        return [x[1] + (0 if x[4] else i * x[3] // n) for x in rows for n in (segments(x[3]),) for i in range(n)]
    q = per_packet(x for x in inc if x[0] >= t0 + rtt_ns)
    total = sum(f["bytes"] for f in r["flows"])
    completion_ns = t_end - t0
    ideal_ns = total * 8e9 / rate_bps + rtt_ns
    accepted = [x for x in inc if not x[4]]
    # Bottleneck departures over the incast: the bytes it accepted and sent
    # from the first arrival on, over the time to the last departure.
    util = None
    if accepted:
        first = accepted[0][0]
        last_dep = max(x[0] + (x[1] + x[3]) * 8e9 / rate_bps for x in accepted)
        util = sum(x[3] for x in accepted) * 8e9 / rate_bps / max(1.0, last_dep - first)
    # RPCs in progress at any time during the incast: one that started
    # before it and waited through all of it counts too.
    lat = [l for s, l in r["rpcs"] if s <= t_end and s + l >= t0]
    return {
        "drops": sum(x[4] for x in inc),
        "late_drops": sum(x[4] for x in inc if x[0] > t0 + 2 * rtt_ns),
        "q_p50_bdp": round(pct(q, 0.5) / bdp, 3) if q else None,
        "q_p99_bdp": round(pct(q, 0.99) / bdp, 3) if q else None,
        "q_max_bdp": round(max(per_packet(inc)) / bdp, 3) if inc else None,
        "completion_ms": round(completion_ns / 1e6, 3),
        "start_spread_ms": round((max(f["first_send_ns"] for f in r["flows"]) - t0) / 1e6, 3),
        "ideal_ms": round(ideal_ns / 1e6, 3),
        "util": round(util, 3) if util is not None else None,
        "bytes": total,
        "victim_rpcs": len(lat),
        "victim_p50_us": round(pct(lat, 0.5) / 1e3, 1) if lat else None,
        "victim_p99_us": round(pct(lat, 0.99) / 1e3, 1) if lat else None,
        "complete": all(f["got"] >= f["bytes"] for f in r["flows"]) and not r["errors"],
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "sizes":
        print(",".join(str(s) for s in sizes(int(sys.argv[2]), int(sys.argv[3]))))
        return 0
    if cmd == "metrics":
        print(json.dumps(metrics(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
        return 0
    if cmd != "run":
        sys.exit(__doc__)
    import argparse
    ap = argparse.ArgumentParser(prog="incast.py run")
    ap.add_argument("--senders", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--port", type=int, default=7000)
    ap.add_argument("--cc", default="")
    ap.add_argument("--victim", default="")
    ap.add_argument("--victim-port", type=int, default=7001)
    ap.add_argument("--rpc", type=int, default=8192)
    ap.add_argument("--lead", type=float, default=0.3)
    ap.add_argument("--timeout", type=float, default=30.0)
    return run(ap.parse_args(sys.argv[2:]))


if __name__ == "__main__":
    sys.exit(main())
