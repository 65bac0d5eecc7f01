#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Userspace side of the INT switch emulator (selftests/lib/bpf/int_switch.bpf.c).

A port's maps are pinned in one directory, /sys/fs/bpf/<run>/<netns>/<dev>
(see int_switch.sh). This tool writes them with bpftool and reads them with
the bpf(2) syscall (see Map), samples the root qdisc over rtnetlink, and
sends and captures HPCC++ probes
(hpcc_wire.py builds them). What stays hand-written here and why:
SyscallMap, RootQdisc, in_netns, probe's capture filter (each says).

  intsw.py config DIR [key=value ...]   read-modify-write the port's config;
                                        prints it (keys: rate_bps buffer_bytes
                                        ecn_k_bytes delay_ns switch_id
                                        speed_code probe_dscp hist_bucket_bytes)
  intsw.py sfc DIR [key=value ...]      read-modify-write the port's SFC config;
                                        prints it (keys: trigger_bytes
                                        target_bytes suppress_ns rate burst
                                        ifindex udp_port addr4 addr6; the
                                        addresses as text)
  intsw.py stats DIR [--json]           counters (SFC's prefixed sfc_), backlog
                                        now, queue mean and p50/p99/max from
                                        the histogram
  intsw.py reset DIR                    zero counters, virtual clock, histogram
  intsw.py sample DIR NS DEV INTERVAL DURATION
                                        one line per INTERVAL s: t_ns and the
                                        port's tx_bytes, drops, ce_marks and
                                        backlog, plus fq's sent bytes and drops
                                        on NS/DEV (real departures)
  intsw.py probe --from NS --to NS --dev DEV --src A --dst A [options]
                                        sends probes from one netns and prints,
                                        as JSON lines, what arrives in the other
  intsw.py wait-busy DIR TIMEOUT [MIN_BACKLOG]
                                        waits until the port queues >= MIN_BACKLOG
                                        bytes (default 1500); exit 1 on timeout
  intsw.py log DIR                      the port's packet log, oldest first, one
                                        line per packet: t_ns backlog sport wire
                                        dropped(0/1)
  intsw.py hist DIR [--since FILE]      the queue-occupancy histogram as JSON
                                        (bucket width, counts, p50/p99); with
                                        --since, minus an earlier `hist` output
                                        of the same port: the queue over an
                                        interval, e.g. without a start-up
  intsw.py hist DIR --after SECS TIMEOUT FILE...
                                        the same, read SECS after the last of
                                        FILE... is non-empty (at most TIMEOUT s
                                        of waiting): started before the flows,
                                        so that no process start (tens of ms of
                                        guest CPU under TCG) falls in the run
  intsw.py arrivals DIR RATE_BPS [FROM_NS [UNTIL_NS]]
                                        from the packet log: accepted wire bytes
                                        arriving per 1 ms and per 10 ms bin, as
                                        fractions of B (p50/p99/max, and the
                                        share of empty 1 ms bins), JSON; the
                                        1 ms figures are mostly the host's
                                        jitter, the 10 ms ones the congestion
                                        control's (several RTTs of over- or
                                        under-sending)
  intsw.py util FILE RATE_BPS SKIP_S TAIL_S [FROM_NS]
                                        utilization and peak rate from a sample
                                        log (JSON), not before FROM_NS
                                        (CLOCK_MONOTONIC)

Layouts: selftests/lib/bpf/int_switch.h (keep in sync).
"""
# Imports are kept lazy where they can be: every start of this tool costs
# under TCG, and json/subprocess/argparse double it.
import os
import re
import struct
import sys
import time


def _wire():
    """selftests/lib/py/hpcc_wire.py, imported when first needed (most calls of
    this script never build or parse a probe)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import hpcc_wire
    return hpcc_wire


# ---- map layouts, read from selftests/lib/bpf/int_switch.h ---------------------------

class Layout:
    """One struct of int_switch.h as a precompiled struct.Struct, offsets by
    the C rules the BPF program's layout follows (each field at a multiple
    of its size, the struct padded to its largest field): its data fields
    in order; the lock and padding are skipped. Decoding a map value must
    be fast (read_port_timed brackets a read to 200 us under TCG), and so
    must building this at import (every intsw.py call)."""

    _TYPES = {"__u64": ("Q", 8), "__u32": ("I", 4), "__u16": ("H", 2), "__u8": ("B", 1),
              "struct bpf_spin_lock": ("I", 4)}

    def __init__(self, body, defs):
        fmt, pos, align, self.fields = "<", 0, 1, []
        for typ, field, n in re.findall(r"^\s*(__u64|__u32|__u16|__u8|struct bpf_spin_lock)\s+(\w+)(?:\[(\w+)\])?;",
                                        body, re.M):
            code, size = self._TYPES[typ]
            count = (int(n) if n.isdigit() else defs[n]) if n else 1
            pad = -pos % size
            fmt += "%dx" % pad if pad else ""
            pos += pad + size * count
            align = max(align, size)
            if field == "lock" or field.startswith("_"):
                fmt += "%dx" % (size * count)
                continue
            fmt += ("%ds" % count if code == "B" else "%d%s" % (count, code)) if n else code
            self.fields.append(field)
        pad = -pos % align
        self.st = struct.Struct(fmt + ("%dx" % pad if pad else ""))
        self.size = self.st.size

    def unpack(self, raw):
        """A map value as {field: value} (byte arrays as bytes)."""
        return dict(zip(self.fields, self.st.unpack(raw)))

    def values(self, raw):
        """A map value's fields as a tuple (a u64 array's items inline)."""
        return self.st.unpack(raw)

    def pack(self, d):
        """{field: value} (byte arrays as bytes) as a map value; missing
        fields 0."""
        return self.st.pack(*[d[f] if isinstance(d.get(f), (bytes, bytearray)) else int(d.get(f, 0))
                              for f in self.fields])


def _layouts():
    """Every struct int_sw_* of int_switch.h as a Layout, and its integer
    #defines."""
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bpf", "int_switch.h")).read()
    defs = {n: int(v.rstrip("uU"), 0) for n, v in
            re.findall(r"^#define\s+(INT_SW_\w+)\s+(0x[0-9a-fA-F]+[uU]?|\d+[uU]?)\b", text, re.M)}
    return {n: Layout(b, defs) for n, b in re.findall(r"^struct (int_sw_\w+) \{(.*?)^\};", text, re.M | re.S)}, defs


_S, _D = _layouts()
CFG, PORT, HIST, LOG, SFC_CFG, SFC = (_S["int_sw_" + n] for n in ("cfg", "port", "hist", "log_rec", "sfc_cfg", "sfc"))
CFG_FIELDS, PORT_FIELDS, SFC_CFG_FIELDS, SFC_FIELDS = (x.fields for x in (CFG, PORT, SFC_CFG, SFC))
HIST_BUCKETS = _D["INT_SW_HIST_BUCKETS"]
HIST_BUCKET_DEFAULT = _D["INT_SW_HIST_BUCKET_DEFAULT"]
LOG_LEN = _D["INT_SW_LOG_LEN"]
LOG_DROPPED = _D["INT_SW_LOG_DROPPED"]
LOG_WIRE_MAX = 0xFFFF                # wire (a __u16) saturates here

# ---- maps --------------------------------------------------------------------


def _bpftool(*args):
    import json
    import subprocess
    r = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError(f"bpftool {' '.join(args[:3])}: {r.stderr.strip() or r.stdout.strip()}")
    return json.loads(r.stdout) if r.stdout.strip() else None


def _libc():
    """The C library (ctypes), loaded once: bpf(2) and setns(2) calls."""
    global _LIBC
    if _LIBC is None:
        import ctypes
        _LIBC = ctypes.CDLL(None, use_errno=True)
        _LIBC.syscall.restype = ctypes.c_long
    return _LIBC


_LIBC = None


def _key(k):
    return [str(b) for b in struct.pack("<I", k)]


class Map:
    """A pinned array map: written with bpftool, read with the bpf(2)
    syscall (SyscallMap). Writes happen at set-up (config, reset); reads
    happen while flows run (counters, histogram snapshots, the sampler, the
    packet log), where a bpftool process is far too slow: 333 ms per lookup
    under TCG against 78 us (tools_cost.py)."""

    def __init__(self, path, value_size):
        self.path, self.vsize = path, value_size
        self._reader = None

    def lookup(self, key):
        if self._reader is None:
            self._reader = SyscallMap(self.path, self.vsize)
        return self._reader.lookup(key)

    def update(self, key, value):
        value = bytes(value).ljust(self.vsize, b"\0")
        _bpftool("map", "update", "pinned", self.path, "key", *_key(key),
                 "value", "hex", *(f"{b:02x}" for b in value))


class SyscallMap:
    """Lookups in a pinned array map with the bpf(2) syscall itself
    (BPF_OBJ_GET once, then BPF_MAP_LOOKUP_ELEM): every read of Map. Under
    TCG (tools_cost.py, beside another VM) a bpftool lookup took 333 ms
    against 78 us here, and a bpftool dump of the 65,536-record packet log
    18 s; the port map's timed read must sit between two clock reads 200 us
    apart (read_port_timed)."""

    _NR_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280}[os.uname().machine]
    BPF_MAP_LOOKUP_ELEM, BPF_OBJ_GET = 1, 7

    def __init__(self, path, value_size):
        import ctypes
        self._c = ctypes
        self._libc = _libc()
        self._p = ctypes.create_string_buffer(path.encode())
        self.fd = self._bpf(self.BPF_OBJ_GET, struct.pack("<QII", ctypes.addressof(self._p), 0, 0))
        self._k = ctypes.create_string_buffer(4)
        self._v = ctypes.create_string_buffer(value_size)

    def _bpf(self, cmd, attr):
        buf = self._c.create_string_buffer(attr, 128)
        r = self._libc.syscall(self._NR_BPF, cmd, buf, 128)
        if r < 0:
            e = self._c.get_errno()
            raise OSError(e, os.strerror(e))
        return r

    def lookup(self, key=0):
        struct.pack_into("<I", self._k, 0, key)
        self._bpf(self.BPF_MAP_LOOKUP_ELEM, struct.pack("<IIQQQ", self.fd, 0, self._c.addressof(self._k),
                                                        self._c.addressof(self._v), 0))
        return self._v.raw


class Port:
    def __init__(self, d):
        self.dir = d
        self.cfg = Map(os.path.join(d, "cfg"), CFG.size)
        self.port = Map(os.path.join(d, "port"), PORT.size)
        self.hist = Map(os.path.join(d, "hist"), HIST.size)
        self.plog = Map(os.path.join(d, "plog"), LOG.size)
        self.plogi = Map(os.path.join(d, "plogi"), 8)
        self.sfc_cfg = Map(os.path.join(d, "sfc_cfg"), SFC_CFG.size)
        self.sfc = Map(os.path.join(d, "sfc"), SFC.size)

    def read_cfg(self):
        return CFG.unpack(self.cfg.lookup(0))

    def write_cfg(self, c):
        self.cfg.update(0, CFG.pack(c))

    def read_sfc_cfg(self):
        import socket
        c = SFC_CFG.unpack(self.sfc_cfg.lookup(0))
        c["addr4"] = socket.inet_ntop(socket.AF_INET, c["addr4"])
        c["addr6"] = socket.inet_ntop(socket.AF_INET6, c["addr6"])
        return c

    def write_sfc_cfg(self, c):
        import socket
        c = dict(c, addr4=socket.inet_pton(socket.AF_INET, c["addr4"]),
                 addr6=socket.inet_pton(socket.AF_INET6, c["addr6"]))
        self.sfc_cfg.update(0, SFC_CFG.pack(c))

    def read_sfc(self):
        return SFC.unpack(self.sfc.lookup(0))

    def read_port(self):
        return PORT.unpack(self.port.lookup(0))


    def read_hist(self):
        return list(HIST.values(self.hist.lookup(0)))

    def reset(self):
        self.port.update(0, bytes(PORT.size))
        self.hist.update(0, bytes(HIST.size))
        self.plogi.update(0, bytes(8))
        self.sfc.update(0, bytes(SFC.size))

    def read_log(self):
        """The logged packets, oldest first: (t_ns, backlog, sport, wire, dropped)."""
        n = struct.unpack("<Q", self.plogi.lookup(0))[0]
        out = []
        for i in range(max(0, n - LOG_LEN), n):
            t, bf, sport, wire = LOG.values(self.plog.lookup(i % LOG_LEN))
            out.append((t, bf & ~LOG_DROPPED, sport, wire, int(bool(bf & LOG_DROPPED))))
        return out


def arrivals(rows, rate_bps, from_ns=0, until_ns=None):
    """Arrival-rate distribution of a packet log (Port.read_log rows)."""
    rows = [r for r in rows if r[0] >= from_ns and (until_ns is None or r[0] < until_ns) and not r[4]]
    if len(rows) < 2:
        return None
    out = {"packets": len(rows), "secs": round((rows[-1][0] - rows[0][0]) / 1e9, 3)}
    for ms in (1, 10):
        w = ms * 1000000
        first, last = rows[0][0] // w, rows[-1][0] // w
        bins = [0] * (last - first + 1)
        for r in rows:
            bins[r[0] // w - first] += r[3]
        # The first and last bins are partial.
        v = sorted(b * 8e9 / (rate_bps * w) for b in bins[1:-1]) or [0.0]
        out[f"p50_{ms}ms"] = round(v[len(v) // 2], 3)
        out[f"p99_{ms}ms"] = round(v[min(len(v) - 1, len(v) * 99 // 100)], 3)
        out[f"max_{ms}ms"] = round(v[-1], 3)
        if ms == 1:
            out["empty_1ms_pct"] = round(100 * sum(1 for x in v if x == 0) / len(v), 1)
    return out


def backlog_bytes(cfg, p, now_ns):
    ahead_ps = max(0, p["next_ps"] - now_ns * 1000)
    return ahead_ps // 1000 * cfg["rate_bps"] // 8_000_000_000


def percentile(hist, width, q):
    """q-quantile of the sampled queue, linear within a bucket (bytes)."""
    total = sum(hist)
    if not total:
        return 0.0
    target = q * total
    cum = 0
    for i, n in enumerate(hist):
        if n and cum + n >= target:
            return i * width + width * (target - cum) / n
        cum += n
    return float(len(hist) * width)


def stats(port):
    cfg = port.read_cfg()
    p, now = read_port_timed(port)
    hist = port.read_hist()
    width = cfg["hist_bucket_bytes"] or HIST_BUCKET_DEFAULT
    s = dict(p)
    s.update({
        "now_ns": now,
        "rate_bps": cfg["rate_bps"],
        "buffer_bytes": cfg["buffer_bytes"],
        "ecn_k_bytes": cfg["ecn_k_bytes"],
        "switch_id": cfg["switch_id"],
        "speed_code": cfg["speed_code"],
        "unit_shift": _wire().unit_shift(cfg["speed_code"]),
        "backlog_bytes": backlog_bytes(cfg, p, now),
        "hist_bucket_bytes": width,
        "hist_samples": sum(hist),
        "hist_overflow": hist[-1],
        "qlen_mean_bytes": round(p["qlen_sum"] / p["qlen_samples"], 1) if p["qlen_samples"] else 0.0,
        "qlen_p50_bytes": round(percentile(hist, width, 0.50), 1),
        "qlen_p99_bytes": round(percentile(hist, width, 0.99), 1),
        "qlen_max_bytes": p["max_qlen_bytes"],
    })
    s.update({"sfc_" + k: v for k, v in port.read_sfc().items() if k not in ("tokens", "last_ns", "ring_next")})
    return s


def wait_files(paths, timeout):
    """Until every one of paths is a non-empty file, or timeout seconds."""
    end = time.monotonic() + timeout
    for p in paths:
        while time.monotonic() < end:
            try:
                if os.path.getsize(p) > 0:
                    break
            except OSError:
                pass
            time.sleep(0.02)


def hist_json(port, since=None):
    """The port's histogram, minus an earlier hist_json() of it."""
    width = port.read_cfg()["hist_bucket_bytes"] or HIST_BUCKET_DEFAULT
    h = port.read_hist()
    if since is not None:
        if since["width"] != width or len(since["buckets"]) != len(h):
            raise ValueError("histogram layout changed since the snapshot")
        h = [a - b for a, b in zip(h, since["buckets"])]
        if min(h) < 0:
            raise ValueError("histogram was reset since the snapshot")
    return {"width": width, "samples": sum(h), "p50_bytes": round(percentile(h, width, 0.50), 1),
            "p99_bytes": round(percentile(h, width, 0.99), 1), "buckets": h}


def parse_kv(args, fields):
    out = {}
    for a in args:
        k, _, v = a.partition("=")
        if k not in fields or not v:
            sys.exit(f"intsw.py: unknown or empty key {a!r} (known: {' '.join(fields)})")
        out[k] = int(v, 0)
    return out


# ---- sampling for utilization ------------------------------------------------

def wait_busy(port, timeout, min_backlog):
    """Waits until the port has a queue of at least min_backlog bytes."""
    cfg = port.read_cfg()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        p, now = read_port_timed(port)
        if backlog_bytes(cfg, p, now) >= min_backlog:
            return 0
        time.sleep(0.02)
    return 1


class RootQdisc:
    """Counters of a device's root qdisc over rtnetlink (RTM_GETQDISC), from
    a socket opened in the device's netns: bytes and packets it has sent
    (qdisc_pkt_len: GSO counted with every segment's headers, like the
    emulator) and its drops. No `tc` process per sample, so sampling barely
    perturbs a TCG guest (586 ms per `tc -s` read there).

    Hand-written rather than pyroute2: the sampler must be running before
    the flows it samples start, and importing pyroute2 takes 0.65 s on the
    2-core build host (python itself 0.05 s) and 32 s under TCG
    (tools_cost.py): a sampler with it missed a whole 4 s flow in
    emulator.sh. A read costs 0.32 ms here, 9.8 ms with pyroute2."""

    def __init__(self, ns, dev):
        import socket
        with in_netns(ns):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
            self.ifindex = socket.if_nametoindex(dev)
        self.seq = 0

    def read(self):
        RTM_GETQDISC, RTM_NEWQDISC, NLMSG_DONE, NLMSG_ERROR = 38, 36, 3, 2
        TCA_STATS2, TCA_STATS_BASIC, TCA_STATS_QUEUE = 7, 1, 3
        self.seq += 1
        tcm = struct.pack("<BxxxiIII", 0, self.ifindex, 0, 0, 0)
        self.sock.send(struct.pack("<IHHII", 16 + len(tcm), RTM_GETQDISC, 0x301, self.seq, 0) + tcm)
        res = (0, 0, 0)
        while True:
            buf = self.sock.recv(1 << 16)
            off = 0
            while off + 16 <= len(buf):
                ln, typ, _, seq, _ = struct.unpack_from("<IHHII", buf, off)
                if typ in (NLMSG_DONE, NLMSG_ERROR):
                    return res
                if typ == RTM_NEWQDISC:
                    _, ifi, _, parent, _ = struct.unpack_from("<BxxxiIII", buf, off + 16)
                    if ifi == self.ifindex and parent == 0xffffffff:
                        res = self._stats(buf[off + 36:off + ln], TCA_STATS2,
                                          TCA_STATS_BASIC, TCA_STATS_QUEUE) or res
                off += (ln + 3) & ~3

    @staticmethod
    def _attrs(b):
        off = 0
        while off + 4 <= len(b):
            ln, typ = struct.unpack_from("<HH", b, off)
            if ln < 4:
                break
            yield typ & 0x3fff, b[off + 4:off + ln]
            off += (ln + 3) & ~3

    def _stats(self, b, stats2, basic, queue):
        for typ, val in self._attrs(b):
            if typ == stats2:
                by = pk = dr = 0
                for t2, v2 in self._attrs(val):
                    if t2 == basic:
                        by, pk = struct.unpack_from("<QI", v2)
                    elif t2 == queue:
                        dr = struct.unpack_from("<IIIII", v2)[2]
                return by, pk, dr
        return None


# The backlog is next_ps minus the time of the map read. Under TCG the
# sampler can be descheduled for milliseconds between reading the clock and
# reading the map, and 1 ms is 12.5 kB at 100 Mbit/s: a clock read before
# such a stall made a full 4-BDP buffer look like 11 BDP. So the read is
# bracketed by two clock reads and retried until they are close.
READ_GAP_NS = 200_000


def read_port_timed(port, tries=20):
    """The port map and a time within READ_GAP_NS of its read (the
    bracket's midpoint). If no try is that close: the time after the read,
    so the backlog is a lower bound, never more than the real one."""
    for _ in range(tries):
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        p = port.read_port()
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if t1 - t0 <= READ_GAP_NS:
            return p, (t0 + t1) // 2
    return p, t1


def sample(port, ns, dev, interval, duration):
    """Columns: t_ns tx_bytes drops ce_marks backlog_bytes fq_bytes fq_drops
    t_fq_ns (the port's map and the root qdisc read back to back)."""
    cfg = port.read_cfg()
    q = RootQdisc(ns, dev)
    end = time.monotonic() + duration
    while True:
        p, now = read_port_timed(port)
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        fb, fp, fd = q.read()
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        print(now, p["tx_bytes"], p["drops"], p["ce_marks"],
              backlog_bytes(cfg, p, now), fb, fd, (t0 + t1) // 2, flush=True)
        if time.monotonic() >= end:
            break
        time.sleep(interval)


def util(path, rate_bps, skip_s, tail_s, from_ns=0):
    """Utilization of a sample log over the active period (from the first to
    the last sample in which the port sent anything) minus skip_s at its
    start and tail_s at its end, and not before from_ns (CLOCK_MONOTONIC):
    from the emulator's departures
    (tx_bytes - backlog) and from fq's sent bytes (real departures); and
    fq's peak rate over any two consecutive sampling intervals."""
    rows = [list(map(int, l.split())) for l in open(path) if l.strip()]
    # active: intervals in which the port sent at least 20% of B
    act = [i for i in range(1, len(rows))
           if (rows[i][1] - rows[i - 1][1]) * 8 > 0.2 * rate_bps * (rows[i][0] - rows[i - 1][0]) / 1e9]
    if not act:
        return None
    t_a, t_b = rows[act[0] - 1][0], rows[act[-1]][0]
    w = [r for r in rows if max(t_a + skip_s * 1e9, from_ns) <= r[0] <= t_b - tail_s * 1e9]
    if len(w) < 3:
        return None
    dt = (w[-1][0] - w[0][0]) / 1e9
    dep = lambda r: r[1] - r[4]
    u_emu = (dep(w[-1]) - dep(w[0])) * 8 / dt / rate_bps
    u_fq = (w[-1][5] - w[0][5]) * 8 / (w[-1][7] - w[0][7]) * 1e9 / rate_bps
    peak = max((b[5] - a[5]) * 8 / ((b[7] - a[7]) / 1e9) / rate_bps
               for a, b in zip(w, w[2:]) if b[7] > a[7])
    return {"util_emu": round(u_emu, 4), "util_fq": round(u_fq, 4),
            "peak_fq": round(peak, 4), "window_s": round(dt, 2),
            "samples": len(w), "fq_drops": rows[-1][6]}


# ---- probes -----------------------------------------------------------------

_CLONE_NEWNET = 0x40000000


class in_netns:
    """`with in_netns(NAME):` runs the block in the existing netns NAME (a
    missing one is an error, never created), then returns: setns(2) with
    the C library, as pyroute2.netns does, without pyroute2's import cost
    (see RootQdisc)."""

    def __init__(self, name):
        self.name = name

    @staticmethod
    def _setns(fd, what):
        import ctypes
        if _libc().setns(fd, _CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {what}: {os.strerror(e)}")

    def __enter__(self):
        self.me = os.open("/proc/self/ns/net", os.O_RDONLY)
        try:
            fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
            try:
                self._setns(fd, self.name)
            finally:
                os.close(fd)
        except BaseException:
            os.close(self.me)
            raise

    def __exit__(self, *exc):
        try:
            self._setns(self.me, "back")
        finally:
            os.close(self.me)


def probe(argv):
    import argparse
    import json
    import socket
    ap = argparse.ArgumentParser(prog="intsw.py probe")
    ap.add_argument("--from", dest="src_ns", required=True)
    ap.add_argument("--to", dest="dst_ns", required=True)
    ap.add_argument("--dev", required=True, help="capture device in --to")
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--sport", type=int, default=40000)
    ap.add_argument("--dport", type=int, default=5201)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from hpcc_knobs import knob_default
    ap.add_argument("--dscp", type=lambda x: int(x, 0), default=knob_default("probe_dscp"))
    ap.add_argument("--type", choices=["probe", "response"], default="probe")
    ap.add_argument("--nhop", type=int, default=0)
    ap.add_argument("--path-id", type=lambda x: int(x, 0), default=0)
    ap.add_argument("--fill", type=lambda x: int(x, 0), default=0,
                    help="byte to pre-fill the hop records with")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between probes")
    ap.add_argument("--nonce", type=lambda x: int(x, 0), default=0x1000)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--port", help="a port's pin directory: print its stats before "
                    "sending and after capturing, as a last JSON line")
    a = ap.parse_args(argv)
    port = Port(a.port) if a.port else None
    before = stats(port) if port else None
    import ctypes
    with in_netns(a.dst_ns):
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        # Only frames with HPCC_PROBE_MAGIC right after a 20-byte IPv4 and
        # a 20-byte TCP header reach the socket: under a bulk flow python
        # could not keep up with every frame. Four classic BPF
        # instructions by hand: scapy compiles the same filter, but
        # importing it takes 17.6 s under TCG (tools_cost.py).
        cbpf = struct.pack("<HBBI", 0x20, 0, 0, 14 + 20 + 20)          # ld [54]
        cbpf += struct.pack("<HBBI", 0x15, 0, 1, _wire().MAGIC)        # jeq MAGIC
        cbpf += struct.pack("<HBBI", 0x06, 0, 0, 0xffff)               # ret all
        cbpf += struct.pack("<HBBI", 0x06, 0, 0, 0)                    # ret 0
        prog = ctypes.create_string_buffer(cbpf, len(cbpf))
        fprog = struct.pack("HxxxxxxQ", 4, ctypes.addressof(prog))
        rx.setsockopt(socket.SOL_SOCKET, 26, fprog)                     # SO_ATTACH_FILTER
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        rx.bind((a.dev, 0))
        rx.settimeout(0.1)
    with in_netns(a.src_ns):
        tx = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    ptype = _wire().T_PROBE if a.type == "probe" else _wire().T_RESPONSE
    want = {a.nonce + i for i in range(a.count)}
    sent = {}
    got = []
    for i in range(a.count):
        w = _wire()
        stack = w.int_stack(a.nhop, a.path_id, bytes([a.fill]) * (w.MAX_HOPS * w.HOP_LEN))
        pkt = w.packet(ptype, a.src, a.dst, a.sport, a.dport, a.dscp, a.nonce + i, 1000 * i, stack)
        sent[a.nonce + i] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        tx.sendto(pkt, (a.dst, 0))
        time.sleep(a.gap)
    deadline = time.monotonic() + a.timeout
    while want and time.monotonic() < deadline:
        try:
            frame = rx.recv(4096)
        except socket.timeout:
            continue
        pr = _wire().parse_frame(frame)
        if pr and pr["nonce"] in want:
            want.discard(pr["nonce"])
            pr["t_rx_ns"] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            pr["t_tx_ns"] = sent[pr["nonce"]]
            got.append(pr)
    for pr in got:
        print(json.dumps(pr))
    if port:
        print(json.dumps({"stats_before": before, "stats_after": stats(port)}))
    return 0 if got else 1


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "config":
        port = Port(args[0])
        c = port.read_cfg()
        if args[1:]:
            c.update(parse_kv(args[1:], CFG_FIELDS))
            port.write_cfg(c)
            c = port.read_cfg()
        print(" ".join(f"{k}={v}" for k, v in c.items()))
    elif cmd == "sfc":
        port = Port(args[0])
        c = port.read_sfc_cfg()
        for a in args[1:]:
            k, _, v = a.partition("=")
            if k not in SFC_CFG_FIELDS or not v:
                sys.exit(f"intsw.py: unknown or empty key {a!r} (known: {' '.join(SFC_CFG_FIELDS)})")
            c[k] = v if k.startswith("addr") else int(v, 0)
        if args[1:]:
            port.write_sfc_cfg(c)
            c = port.read_sfc_cfg()
        print(" ".join(f"{k}={v}" for k, v in c.items()))
    elif cmd == "stats":
        s = stats(Port(args[0]))
        if "--json" in args:
            import json
            print(json.dumps(s))
        else:
            print("\n".join(f"{k}={v}" for k, v in s.items()))
    elif cmd == "reset":
        Port(args[0]).reset()
    elif cmd == "sample":
        sample(Port(args[0]), args[1], args[2], float(args[3]), float(args[4]))
    elif cmd == "wait-busy":
        return wait_busy(Port(args[0]), float(args[1]), int(args[2]) if args[2:] else 1500)
    elif cmd == "log":
        sys.stdout.write("".join("%d %d %d %d %d\n" % r for r in Port(args[0]).read_log()))
    elif cmd == "hist":
        import json
        since = None
        if "--since" in args:
            with open(args[args.index("--since") + 1]) as f:
                since = json.load(f)
        # Everything but the read before the wait (imports, the maps'
        # descriptors: one read does them): with --after the read falls in
        # a run, where even an import stalls the senders.
        port = Port(args[0])
        if "--after" in args:
            hist_json(port)
            i = args.index("--after")
            wait_files(args[i + 3:], float(args[i + 2]))
            time.sleep(float(args[i + 1]))
        try:
            print(json.dumps(hist_json(port, since)))
        except ValueError as e:
            sys.exit(f"intsw.py hist: {e}")
    elif cmd == "arrivals":
        import json
        print(json.dumps(arrivals(Port(args[0]).read_log(), int(args[1]),
                                  int(args[2]) if len(args) > 2 else 0,
                                  int(args[3]) if len(args) > 3 else None)))
    elif cmd == "util":
        import json
        r = util(args[0], int(args[1]), float(args[2]), float(args[3]),
                 int(args[4]) if len(args) > 4 else 0)
        print(json.dumps(r))
        return 0 if r else 1
    elif cmd == "probe":
        return probe(args)
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
