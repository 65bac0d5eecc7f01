#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Statistics the benchmark derives from its raw outputs (bench_lib.sh).

  benchstat.py u TRACE FROM_NS TO_NS
        HPCC++'s operating point from tcp_hpcc:hpcc_sample lines (trace
        clock mono): U after each update (ev 2 updated, 3 committed) with a
        timestamp in [FROM_NS, TO_NS]; prints {"u_updates", "u_p25",
        "u_p50", "u_p75"} (the quartiles null without updates)
  benchstat.py fct FCT_JSON RATE_MBIT RTT_US
        flow completion times from `hpcc_flow.py fct` output; prints
        {size: {n, ideal_ms, p50_ms, p90_ms, p50_slowdown, p90_slowdown}}
  benchstat.py join LOG JOIN_NS END_NS RTT_US RATE_MBIT NFLOWS
        a late joiner's convergence from the bottleneck's packet log
        (`intsw.py log` lines: t_ns backlog sport wire dropped): see join()

  benchstat.py mix LOG RATE_MBIT
        where the flow completion mix loses the port: see mix_phases()

  benchstat.py scenario OUT ALGO N TOPO RATE_MBIT RTT_US BDP SECS NSENDERS
                        BEFORE AFTER MOVED T_START T_FIRST T_ALL
        one bench_scenario run's JSON line from its files: see scenario()

Percentiles are nearest-rank (numpy's "inverted_cdf": the smallest value
with at least a fraction p of the values at or below it).
"""
import json
import sys

UPDATE_EVENTS = ("2", "3")
MSS, WIRE = 1448, 1514  # payload and Ethernet frame of a full segment


def pct(values, p):
    """Nearest-rank percentile p (0..1) of a non-empty sequence."""
    import numpy
    return float(numpy.quantile(values, p, method="inverted_cdf"))


def u_quartiles(lines, from_ns, to_ns):
    us = []
    for line in lines:
        head, sep, tail = line.partition(": hpcc_sample:")
        if not sep:
            continue
        try:
            ts_ns = round(float(head.split()[-1]) * 1e9)
            f = dict(kv.split("=", 1) for kv in tail.split() if "=" in kv)
            if f["ev"] in UPDATE_EVENTS and from_ns <= ts_ns <= to_ns:
                us.append(int(f["U"]) / 1e6)
        except (ValueError, KeyError, IndexError):
            continue
    us.sort()
    q = (lambda p: round(pct(us, p), 4)) if us else (lambda p: None)
    return {"u_updates": len(us), "u_p25": q(0.25), "u_p50": q(0.5), "u_p75": q(0.75)}


def ideal_ms(size, rate_mbit, rtt_us):
    """The flow alone on an idle link with no host delay: the handshake's
    RTT, its bytes on the wire at B, one more RTT (last segment out, reply
    back)."""
    wire = -(-size // MSS) * WIRE
    return 2 * rtt_us / 1e3 + wire * 8 / (rate_mbit * 1e3)


def fct_sizes(fct, rate_mbit, rtt_us):
    out = {}
    for size in sorted({s for s, _ in fct}):
        ms = sorted(ns / 1e6 for s, ns in fct if s == size)
        ideal = ideal_ms(size, rate_mbit, rtt_us)
        p50, p90 = pct(ms, 0.5), pct(ms, 0.9)
        out[str(size)] = {"n": len(ms), "ideal_ms": round(ideal, 3),
                          "p50_ms": round(p50, 3), "p90_ms": round(p90, 3),
                          "p50_slowdown": round(p50 / ideal, 2), "p90_slowdown": round(p90 / ideal, 2)}
    return out


def read_log(path):
    """A packet log as `intsw.py log` writes it: (t_ns, backlog, sport,
    wire, dropped) rows, other lines skipped."""
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f if len(line.split()) == 5]


def jain(xs):
    """Jain's fairness index of non-negative shares (0 if all are 0)."""
    s, q = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q else 0.0


def join(rows, join_ns, end_ns, rtt_ns, rate_bps, nflows, window_rtts=10):
    """How fast a flow that joins at JOIN_NS gets its share, from the
    bottleneck's packet log (rows: t_ns, backlog, sport, wire, dropped).

    The flows are the NFLOWS source ports with the most bytes after the
    join. Over windows of WINDOW_RTTS base RTTs, sliding by one RTT from
    the join to END_NS: each flow's bytes, and Jain's index over the
    flows. Returns {"flows": the flows seen, "log_from_join": whether the
    log (a ring) reaches back to the join, "jain_rtts": the first window start (base RTTs after
    the join) with Jain >= 0.95, "jain_hold": the fraction of the windows
    from then on with Jain >= 0.95, "last_s_mbps": each flow's rate over
    the last second before END_NS, "last_s_min_of_mean" and
    "last_s_max_of_mean": the slowest and the fastest of them over their
    mean, "jain": the per-RTT series, "util":
    bytes over [join, end] in fractions of B, "q_p50_bdp": the median
    backlog ahead of the packets in [join, end], in BDPs}."""
    sent = [r for r in rows if not r[4] and join_ns <= r[0] < end_ns]
    per = {}
    for r in sent:
        per[r[2]] = per.get(r[2], 0) + r[3]
    flows = sorted(per, key=per.get, reverse=True)[:nflows]
    # A flow that sent nothing is absent from the log but not from the
    # shares: each window counts NFLOWS flows.
    missing = nflows - len(flows)
    w = window_rtts * rtt_ns
    n_win = max(0, (end_ns - join_ns - w) // rtt_ns + 1)
    # Bytes per flow per RTT bin, then windows as sums of bins.
    bins = [[0] * ((end_ns - join_ns) // rtt_ns + 1) for _ in flows]
    idx = {f: i for i, f in enumerate(flows)}
    for r in sent:
        i = idx.get(r[2])
        if i is not None:
            bins[i][(r[0] - join_ns) // rtt_ns] += r[3]
    series = []
    for k in range(n_win):
        series.append(round(jain([sum(b[k:k + window_rtts]) for b in bins] + [0] * missing), 4) if flows else 0.0)
    first = next((k for k, j in enumerate(series) if j >= 0.95), None)
    hold = (sum(1 for j in series[first:] if j >= 0.95) / len(series[first:])) if first is not None else 0.0
    bdp = rate_bps / 8e9 * rtt_ns
    backlog = [r[1] for r in sent]
    # Each flow's rate over the last second (from the join if shorter),
    # and the slowest and fastest as fractions of their mean.
    t_last = max(join_ns, end_ns - 1_000_000_000)
    last = [sum(r[3] for r in sent if r[2] == f and r[0] >= t_last) * 8e3 / max(1, end_ns - t_last) for f in flows]
    last += [0.0] * missing
    m = sum(last) / len(last) if last else 0.0
    return {"flows": len(flows), "log_from_join": bool(rows) and rows[0][0] <= join_ns, "jain_rtts": first, "jain_hold": round(hold, 3),
            "last_s_mbps": [round(x, 2) for x in last],
            "last_s_min_of_mean": round(min(last) / m, 3) if m else None,
            "last_s_max_of_mean": round(max(last) / m, 3) if m else None,
            "jain": series,
            "util": round(sum(r[3] for r in sent) * 8e9 / (rate_bps * (end_ns - join_ns)), 4) if end_ns > join_ns else 0.0,
            "q_p50_bdp": round(pct(backlog, 0.5) / bdp, 4) if backlog else None}


MIX_AFTER_END_MS = (0, 2, 4, 6, 8, 10)
MIX_AFTER_START_MS = (0, 2, 4, 8, 16, 32)


def mix_phases(rows, rate_bps):
    """Where the flow completion mix (one bulk flow, short flows one after
    another) loses the port, from the bottleneck's packet log (rows: t_ns,
    backlog, sport, wire, dropped). The bulk flow is the source port with
    the most bytes; each other port (0, the topology's pings, aside) is a
    short flow, active from its first packet to its last. From the first
    short flow's start to the last one's end, in 1 ms bins, each bin's
    bytes over B, by the state at the bin's middle. Returns {"util": all
    bins, "alone_share": the bins with no short flow active, "util_alone",
    "util_shared", "after_end": {"A-B": mean over the bins alone A to B ms
    after a short flow ended}, "after_start": {"A-B": over the bins shared,
    A to B ms after the active short flow started}}; None without a short
    flow."""
    rows = [r for r in rows if not r[4] and r[2] != 0]
    per = {}
    for r in rows:
        per[r[2]] = per.get(r[2], 0) + r[3]
    if len(per) < 2:
        return None
    bulk = max(per, key=per.get)
    span = {}
    for t, _, sport, _, _ in rows:
        if sport != bulk:
            a = span.get(sport)
            span[sport] = (t, t) if a is None else (a[0], t)
    spans = sorted(span.values())
    t0, t1 = spans[0][0], max(e for _, e in spans)
    w = 1_000_000
    nb = (t1 - t0) // w
    if nb < 1:
        return None
    tot = [0] * nb
    for r in rows:
        i = (r[0] - t0) // w
        if 0 <= i < nb:
            tot[i] += r[3]
    cap = rate_bps / 8e9 * w
    alone, shared = [], []
    after_end = {k: [] for k in MIX_AFTER_END_MS[:-1]}
    after_start = {k: [] for k in MIX_AFTER_START_MS}
    for i in range(nb):
        m = t0 + i * w + w // 2
        u = tot[i] / cap
        active = [s for s, e in spans if s <= m <= e]
        if active:
            shared.append(u)
            since = (m - max(active)) / 1e6
            k = max(x for x in MIX_AFTER_START_MS if x <= since)
            after_start[k].append(u)
        else:
            alone.append(u)
            ended = [e for _, e in spans if e < m]
            since = (m - max(ended)) / 1e6 if ended else None
            if since is not None and since < MIX_AFTER_END_MS[-1]:
                after_end[max(x for x in MIX_AFTER_END_MS if x <= since)].append(u)

    def mean(xs):
        return round(sum(xs) / len(xs), 3) if xs else None

    def label(bounds, k):
        j = bounds.index(k)
        return f"{k}-{bounds[j + 1]}" if j + 1 < len(bounds) else f"{k}-"

    return {"util": mean(alone + shared), "alone_share": round(len(alone) / nb, 3),
            "util_alone": mean(alone), "util_shared": mean(shared),
            "after_end": {label(MIX_AFTER_END_MS, k): mean(v) for k, v in after_end.items()},
            "after_start": {label(MIX_AFTER_START_MS, k): mean(v) for k, v in after_start.items()}}


def scenario(out, algo, n, topo, rate, rtt, bdp, secs, nsnd, before, after, moved, t_start, t_first, t_all):
    """One bench_scenario run's JSON line (bench_lib.sh) from its files
    OUT.flowI.json, OUT.port.json, OUT.samples, OUT.queue-steady.json,
    OUT.arrivals.json, OUT.trace (and OUT.port-a.json for parallel), the
    module's counters BEFORE and AFTER (JSON) and the route MOVED
    (`"stamped_a_at_move": N` or empty)."""
    import os
    import subprocess
    intsw = os.path.join(os.path.dirname(os.path.abspath(__file__)), "intsw.py")
    rate, rtt, bdp, secs, nsnd = int(rate), int(rtt), int(bdp), float(secs), int(nsnd)
    flows = []
    for i in range(nsnd):
        try:
            flows.append(json.load(open(f"{out}.flow{i}.json")))
        except Exception:
            flows.append({"bytes": 0, "secs": secs, "mbps": 0.0})
    mbps = [f["mbps"] for f in flows]
    jain = (sum(mbps) ** 2 / (len(mbps) * sum(m * m for m in mbps))) if any(mbps) else 0.0
    port = json.load(open(f"{out}.port.json"))
    u = subprocess.run([sys.executable, intsw, "util", f"{out}.samples", str(rate * 1000000), "1.0", "0.5"],
                       capture_output=True, text=True).stdout.strip()
    try:
        util = json.loads(u)
    except Exception:
        util = None
    b, a = json.loads(before), json.loads(after)
    steady = json.load(open(f"{out}.queue-steady.json"))
    # The port's first packet may be the topology's reachability check, much
    # earlier: the reference is the last flow's connection.
    start_ns = max(port.get("first_ns", 0), int(t_all))
    late_after = start_ns + 10 * rtt * 1000
    r = {
        "algo": algo, "flows": int(n), "topo": topo, "rate_mbit": rate, "rtt_us": rtt,
        "bdp_bytes": bdp, "secs": secs,
        "util": util["util_fq"] if util else None,
        "util_detail": util,
        "goodput_mbps": round(sum(mbps), 2), "per_flow_mbps": mbps, "jain": round(jain, 4),
        "q_p50_bytes": port["qlen_p50_bytes"], "q_p99_bytes": port["qlen_p99_bytes"],
        "q_max_bytes": port["qlen_max_bytes"], "q_mean_bytes": port["qlen_mean_bytes"],
        "drops": port["drops"],
        "last_drop_after_start_ms": round((port["last_drop_ns"] - start_ns) / 1e6, 2) if port["drops"] else None,
        "drops_late": bool(port["drops"]) and port["last_drop_ns"] > late_after,
        "flows_started_ms": [round((int(t_first) - int(t_start)) / 1e6, 1), round((int(t_all) - int(t_start)) / 1e6, 1)],
        "ce_marks": port["ce_marks"], "probes_stamped": port["probes_stamped"],
        "arrivals": json.load(open(f"{out}.arrivals.json")),
        "q_steady_p50_bytes": steady["p50_bytes"] if steady else None,
        "q_steady_p99_bytes": steady["p99_bytes"] if steady else None,
        "hpcc": {k: a[k] - b.get(k, 0) for k in a if a[k] - b.get(k, 0)},
    }
    # HPCC++'s operating point: U (the law's estimate of the bottleneck's
    # normalized in-flight bytes, after each update) from the tracepoint, over
    # the same steady part as the arrivals.
    with open(f"{out}.trace") as f:
        r.update(u_quartiles(f, int(t_all) + 500_000_000, int(t_first) + int(secs * 1e9)))
    try:
        r["eta"] = int(open("/sys/module/tcp_hpcc/parameters/eta_ppm").read()) / 1e6 if algo == "hpcc" else None
    except OSError:
        r["eta"] = None
    if topo == "parallel":
        pa = json.load(open(f"{out}.port-a.json"))
        extra = json.loads("{" + moved + "}") if moved else {}
        r["stamped_a_at_move"] = extra.get("stamped_a_at_move")
        r["stamped_a_total"] = pa["probes_stamped"]
        r["stamped_b_total"] = port["probes_stamped"]
    return r


def main(argv):
    if len(argv) == 4 and argv[0] == "u":
        with open(argv[1]) as f:
            print(json.dumps(u_quartiles(f, int(argv[2]), int(argv[3]))))
    elif len(argv) == 4 and argv[0] == "fct":
        try:
            with open(argv[1]) as f:
                fct = json.load(f).get("fct", [])
        except (OSError, ValueError):
            fct = []
        print(json.dumps(fct_sizes(fct, int(argv[2]), int(argv[3]))))
    elif len(argv) == 7 and argv[0] == "join":
        rows = read_log(argv[1])
        join_ns, end_ns, rtt_us, rate_mbit, n = (int(x) for x in argv[2:])
        print(json.dumps(join(rows, join_ns, end_ns, rtt_us * 1000, rate_mbit * 1_000_000, n)))
    elif len(argv) == 3 and argv[0] == "mix":
        rows = read_log(argv[1])
        print(json.dumps(mix_phases(rows, int(argv[2]) * 1_000_000)))
    elif len(argv) == 16 and argv[0] == "scenario":
        print(json.dumps(scenario(*argv[1:])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
