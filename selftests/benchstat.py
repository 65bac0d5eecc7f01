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
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
