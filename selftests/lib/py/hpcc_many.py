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


def many(a):
    t0 = time.monotonic()
    sel = selectors.DefaultSelector()
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
    for name in ("many", "churn"):
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
    t = sub.add_parser("toggle")
    t.add_argument("dst")
    t.add_argument("port", type=int)
    t.add_argument("drop_port", type=int)
    t.add_argument("secs", type=float)
    t.add_argument("--stop")
    a = p.parse_args()
    {"echo": echo, "many": many, "churn": churn, "toggle": toggle}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
