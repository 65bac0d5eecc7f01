#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Many TCP connections at once, and connection churn, for the scale and
stress tests of tcp_hpcc (one event loop, epoll via selectors).

  hpcc_many.py echo PORT [--bind ADDR]
        accept every connection and echo what it sends until EOF
  hpcc_many.py many DST PORT N [--rounds R] [--bytes B] [--cc ALGO]
                [--batch K] [--hold S] [--ports LO]
        open N connections (K handshakes in flight at a time), then R rounds
        in which every connection writes B bytes and reads their echo; keep
        them open S seconds, close; prints {"connected", "failed",
        "echoed", "secs"} (echoed: connections whose every round came back);
        --ports: bind the local ports in order from LO instead of letting
        connect() pick them (its search prefers ports of one parity and
        scans all of them once those are taken: quadratic in N beyond
        about 30,000 connections to one peer and port)
  hpcc_many.py pulse DST PORT N [--bytes B] [--cc ALGO] [--groups G]
                [--every MS] [--slot S] [--slots K] [--ports LO] [--flows FILE]
        open N connections, then K slots of S seconds, each activating one
        group of N/G of them in turn (connection i is in group i % G), each
        writing B bytes every MS ms (staggered) and reading the echo; at the
        end of each slot, read FILE (/proc/net/hpcc_flows of this netns) and
        report, for the connections that wrote in it, how many applied
        telemetry since their first write of the slot (a sample younger
        than that write) and the ages of their last samples in probe
        intervals (age / T); prints {"connected", "failed", "writes",
        "slots": [...], "secs"}
  hpcc_many.py churn DST PORT N [--bytes B] [--cc ALGO] [--parallel P]
        N short connections, P at a time: connect, write B bytes, read the
        echo, close; prints {"done", "failed", "secs"}
  hpcc_many.py toggle DST PORT DROP_PORT SECONDS [--stop FILE]
        for SECONDS, switch congestion control hpcc <-> cubic with
        setsockopt(TCP_CONGESTION) on sockets in every TCP state: a
        listener, SYN_SENT (a connect to DROP_PORT, whose SYNs the peer
        drops), ESTABLISHED with data in flight (to the echo server at
        DST PORT), FIN_WAIT (after shutdown), an accepted child and a
        CLOSE_WAIT socket (a local pair); prints {"toggles", "errors"};
        --stop: also stop once FILE exists
"""
import argparse
import errno
import json
import os
import selectors
import socket
import sys
import time

TCP_CONGESTION = 13


def fam(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def echo(a):
    ls = socket.socket(fam(a.bind))
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.bind, a.port))
    ls.listen(65535)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    print("listening", flush=True)
    while True:
        for key, _ in sel.select():
            if key.data is None:
                while True:
                    try:
                        c, _ = ls.accept()
                    except BlockingIOError:
                        break
                    except OSError as e:
                        if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                            break
                        raise
                    c.setblocking(False)
                    sel.register(c, selectors.EVENT_READ, 1)
                continue
            c = key.fileobj
            try:
                d = c.recv(65536)
            except (ConnectionError, OSError):
                d = b""
            if d:
                try:
                    c.send(d)
                except OSError:
                    pass
            else:
                sel.unregister(c)
                c.close()


def recv(s):
    """What a readable socket holds: None if nothing yet, b"" at EOF or error."""
    try:
        return s.recv(65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def new_sock(a):
    s = socket.socket(fam(a.dst))
    if a.cc:
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, a.cc.encode())
    s.setblocking(False)
    return s


def bind_next(s, a):
    """Binds `s` to the next free local port from a.ports; False if none."""
    while a.ports <= 65535:
        port, a.ports = a.ports, a.ports + 1
        try:
            s.bind(("::" if fam(a.dst) == socket.AF_INET6 else "0.0.0.0", port))
            return True
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    return False


def open_many(a, sel):
    """Opens a.n connections, a.batch handshakes at a time: (up, failed)."""
    pending, up, failed = 0, [], 0
    todo = a.n
    while todo or pending:
        while todo and pending < a.batch:
            s = new_sock(a)
            if a.ports and not bind_next(s, a):
                failed += todo
                todo = 0
                s.close()
                break
            r = s.connect_ex((a.dst, a.port))
            if r not in (0, errno.EINPROGRESS):
                failed += 1
                s.close()
            else:
                sel.register(s, selectors.EVENT_WRITE)
                pending += 1
            todo -= 1
        for key, _ in sel.select(timeout=30):
            s = key.fileobj
            sel.unregister(s)
            pending -= 1
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                up.append(s)
            else:
                failed += 1
                s.close()
    return up, failed


def many(a):
    t0 = time.monotonic()
    sel = selectors.DefaultSelector()
    up, failed = open_many(a, sel)
    msg = b"x" * a.bytes
    ok = {s.fileno(): True for s in up}
    for _ in range(a.rounds):
        got = {}
        for s in up:
            try:
                s.send(msg)
                sel.register(s, selectors.EVENT_READ)
                got[s.fileno()] = 0
            except OSError:
                ok[s.fileno()] = False
        deadline = time.monotonic() + 120 + len(up) / 100
        while got and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=5):
                s = key.fileobj
                d = recv(s)
                if d is None:
                    continue
                fd = s.fileno()
                if not d:
                    ok[fd] = False
                    sel.unregister(s)
                    got.pop(fd, None)
                    continue
                got[fd] += len(d)
                if got[fd] >= a.bytes:
                    sel.unregister(s)
                    got.pop(fd)
        for fd in got:
            ok[fd] = False
        for key in list(sel.get_map().values()):
            sel.unregister(key.fileobj)
    time.sleep(a.hold)
    for s in up:
        s.close()
    print(json.dumps({"connected": len(up), "failed": failed,
                      "echoed": sum(ok.values()), "secs": round(time.monotonic() - t0, 1)}))


def flow_ages(path):
    """/proc/net/hpcc_flows: {local port: (age_us or None, t_us)}."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 10 or not p[5].isdigit():
                    continue  # the header
                age = int(p[9]) if p[9].isdigit() else None  # "-": no sample yet
                out[int(p[0].rsplit(":", 1)[1])] = (age, max(int(p[5]), 1))
    except OSError:
        pass
    return out


def pulse(a):
    t0 = time.monotonic()
    sel = selectors.DefaultSelector()
    up, failed = open_many(a, sel)
    for s in up:
        sel.register(s, selectors.EVENT_READ)
    msg = b"x" * a.bytes
    writes, slots = 0, []
    for k in range(a.slots):
        group = [s for i, s in enumerate(up) if i % a.groups == k % a.groups]
        first = {}
        start = time.monotonic()
        end = start + a.slot
        # Each connection writes every a.every ms, staggered over the period.
        step = a.every / 1000 / max(len(group), 1)
        nxt, i = start, 0
        while True:
            now = time.monotonic()
            if now >= end:
                break
            while now >= nxt and group:
                s = group[i % len(group)]
                try:
                    s.send(msg)
                    writes += 1
                    first.setdefault(s.getsockname()[1], now)
                except OSError:
                    pass
                i += 1
                nxt += step
            for key, _ in sel.select(timeout=max(0.0, min(nxt, end) - time.monotonic())):
                recv(key.fileobj)
        read_at = time.monotonic()
        ages = flow_ages(a.flows)
        # The kernel computes each age as it prints the line, and printing
        # 10,000 lines takes the slow guest a while: measure from the end.
        read_end = time.monotonic()
        seen = {p: ages.get(p) for p in first}
        # Applied telemetry since its first write of the slot: a sample
        # younger than that write.
        fresh = [p for p, x in seen.items() if x and x[0] is not None and x[0] <= (read_end - first[p]) * 1e6]
        rel = sorted(x[0] / x[1] for x in seen.values() if x and x[0] is not None)
        q = lambda f: round(rel[min(len(rel) - 1, int(f * len(rel)))], 1) if rel else None
        slots.append({"slot": k, "wrote": len(first), "listed": sum(1 for x in seen.values() if x),
                      "fresh": len(fresh), "age_t_p50": q(0.5), "age_t_p99": q(0.99), "age_t_max": q(1.0),
                      "secs": round(read_at - start, 2), "read_secs": round(read_end - read_at, 2)})
        print(json.dumps(slots[-1]), file=sys.stderr, flush=True)
    for s in up:
        s.close()
    print(json.dumps({"connected": len(up), "failed": failed, "writes": writes, "slots": slots,
                      "secs": round(time.monotonic() - t0, 1)}))


def churn(a):
    t0 = time.monotonic()
    sel = selectors.DefaultSelector()
    done = failed = started = 0
    live = {}
    msg = b"x" * a.bytes

    def start():
        nonlocal started, failed
        started += 1
        s = new_sock(a)
        r = s.connect_ex((a.dst, a.port))
        if r not in (0, errno.EINPROGRESS):
            failed += 1
            s.close()
            return
        live[s.fileno()] = [s, 0]
        sel.register(s, selectors.EVENT_WRITE)

    while started < a.n or live:
        while started < a.n and len(live) < a.parallel:
            start()
        for key, ev in sel.select(timeout=30):
            s = key.fileobj
            st = live[s.fileno()]
            if ev & selectors.EVENT_WRITE:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    failed += 1
                else:
                    try:
                        s.send(msg)
                        sel.modify(s, selectors.EVENT_READ)
                        continue
                    except OSError:
                        failed += 1
            else:
                d = recv(s)
                if d is None:
                    continue
                st[1] += len(d)
                if d and st[1] < a.bytes:
                    continue
                if st[1] >= a.bytes:
                    done += 1
                    if done % 1000 == 0:  # progress, for runs that take hours
                        print(json.dumps({"progress": done, "secs": round(time.monotonic() - t0, 1)}),
                              file=sys.stderr, flush=True)
                else:
                    failed += 1
            sel.unregister(s)
            del live[s.fileno()]
            s.close()
    print(json.dumps({"done": done, "failed": failed, "secs": round(time.monotonic() - t0, 1)}))


ALGOS = [b"hpcc", b"cubic"]


def flip(s, n):
    """Switches `s` n times; returns (switches, errors)."""
    ok = err = 0
    for i in range(n):
        try:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, ALGOS[i % 2])
            ok += 1
        except OSError:
            err += 1
    return ok, err


def toggle(a):
    end = time.monotonic() + a.secs
    tot = errs = 0

    def f(s, n):
        nonlocal tot, errs
        o, e = flip(s, n)
        tot += o
        errs += e

    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(128)
    while time.monotonic() < end and not (a.stop and os.path.exists(a.stop)):
        f(ls, 4)                                        # listener
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((a.dst, a.drop_port))              # SYN_SENT
        f(s, 8)
        s.close()
        try:
            c = socket.create_connection((a.dst, a.port), timeout=10)
        except OSError:
            errs += 1
            continue
        try:
            for i in range(8):                          # ESTABLISHED, data in flight
                f(c, 1)
                c.sendall(b"x" * 4000)
            got = 0
            while got < 32000:
                d = c.recv(65536)
                if not d:
                    break
                got += len(d)
            c.shutdown(socket.SHUT_WR)                  # FIN_WAIT
            f(c, 8)
        except OSError:
            errs += 1
        c.close()
        p = socket.create_connection(ls.getsockname())
        ch, _ = ls.accept()                             # accepted child
        f(ch, 4)
        ch.sendall(b"y" * 2000)
        f(ch, 4)
        p.recv(65536)
        p.close()
        time.sleep(0.01)                                # ch in CLOSE_WAIT
        f(ch, 4)
        try:
            ch.sendall(b"z" * 1000)
        except OSError:
            pass
        f(ch, 4)
        ch.close()
    print(json.dumps({"toggles": tot, "errors": errs}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("echo")
    e.add_argument("port", type=int)
    e.add_argument("--bind", default="0.0.0.0")
    for name in ("many", "churn", "pulse"):
        m = sub.add_parser(name)
        m.add_argument("dst")
        m.add_argument("port", type=int)
        m.add_argument("n", type=int)
        m.add_argument("--bytes", type=int, default=100)
        m.add_argument("--cc", default="hpcc")
    sub.choices["many"].add_argument("--rounds", type=int, default=3)
    sub.choices["many"].add_argument("--batch", type=int, default=512)
    sub.choices["many"].add_argument("--hold", type=float, default=0)
    sub.choices["many"].add_argument("--ports", type=int, default=0)
    sub.choices["churn"].add_argument("--parallel", type=int, default=32)
    for o, d, t in (("--groups", 10, int), ("--every", 50.0, float), ("--slot", 1.0, float), ("--slots", 10, int),
                    ("--ports", 0, int),
                    ("--batch", 512, int), ("--flows", "/proc/net/hpcc_flows", str)):
        sub.choices["pulse"].add_argument(o, type=t, default=d)
    t = sub.add_parser("toggle")
    t.add_argument("dst")
    t.add_argument("port", type=int)
    t.add_argument("drop_port", type=int)
    t.add_argument("secs", type=float)
    t.add_argument("--stop")
    a = p.parse_args()
    {"echo": echo, "many": many, "churn": churn, "pulse": pulse, "toggle": toggle}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
