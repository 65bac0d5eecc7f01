#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of incast.py's message sizes and metrics (the incast
benchmark's numbers), on synthetic packet logs (intsw.py log: t_ns backlog
sport wire dropped) and runs. KTAP on stdout; exit 0 pass, 1 fail."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import incast  # noqa: E402
import ktap  # noqa: E402

RATE = 100_000_000          # 100 Mbit/s: 1514 B take 121,120 ns
RTT_US = 2000               # BDP 25,000 B
T0 = 5_000_000_000


def metrics(rows, run):
    with tempfile.NamedTemporaryFile("w", delete=False) as lg, tempfile.NamedTemporaryFile("w", delete=False) as rn:
        lg.write("".join("%d %d %d %d %d\n" % r for r in rows))
        json.dump(run, rn)
    try:
        return incast.metrics(lg.name, rn.name, RATE, RTT_US)
    finally:
        os.unlink(lg.name)
        os.unlink(rn.name)


def run_of(sizes, done_ns, rpcs=()):
    return {"t_start_ns": T0, "t_done_ns": done_ns, "errors": [], "rpcs": list(rpcs),
            "flows": [{"bytes": s, "got": s, "first_send_ns": T0 + 1000 * i, "last_recv_ns": done_ns}
                      for i, s in enumerate(sizes)]}


def t_sizes_repeat_per_repetition():
    a, b, c = incast.sizes(16, 0), incast.sizes(16, 0), incast.sizes(16, 1)
    ok = a == b and a != c and all(64 * 1024 <= s <= 256 * 1024 and s % 1024 == 0 for s in a + c)
    return ok, f"rep 0 {a[:4]}..., rep 1 {c[:4]}..."


def t_back_to_back_link_is_fully_used():
    # 200 packets of 1514 B arriving every 121,120 ns: the link never idles.
    gap = 1514 * 8 * 1_000_000_000 // RATE
    rows = [(T0 + 10_000 + i * gap, 0, 1, 1514, 0) for i in range(200)]
    m = metrics(rows, run_of([200 * 1448], T0 + 10_000 + 200 * gap + 2_000_000))
    ok = abs(m["util"] - 1.0) < 0.01 and m["drops"] == 0 and m["q_p99_bdp"] == 0.0
    return ok, json.dumps(m)


def t_late_drops_and_queue_windows():
    rtt = RTT_US * 1000
    rows = [
        (T0 + 100, 90_000, 1, 1514, 0),         # first RTT: not in the queue figures
        (T0 + rtt - 1, 90_000, 1, 1514, 1),     # early drop
        (T0 + 2 * rtt, 12_500, 1, 1514, 1),     # at 2 RTT: still early
        (T0 + 2 * rtt + 1, 25_000, 1, 1514, 1),  # late
        (T0 + 3 * rtt, 25_000, 1, 1514, 0),
        (T0 + 4 * rtt, 50_000, 1, 1514, 0),
        (T0 + 50 * rtt, 99_999, 1, 1514, 1),    # after the incast: ignored
    ]
    m = metrics(rows, run_of([100_000], T0 + 5 * rtt))
    ok = (m["drops"] == 3 and m["late_drops"] == 1 and m["q_max_bdp"] == 3.6
          and m["q_p50_bdp"] == 1.0 and m["q_p99_bdp"] == 2.0)
    return ok, json.dumps(m)


def t_queue_counts_every_segment():
    # 200 one-segment skbs find the port empty; one skb of five segments
    # (a TSO burst) finds 2 BDP ahead of it. The queue figures are per
    # packet on the wire: its five segments are 5 of 205 samples, above
    # the p99, each with the segments before it ahead of it as well.
    rtt = RTT_US * 1000
    rows = [(T0 + rtt + i * 130_000, 0, 1, 1514, 0) for i in range(200)]
    rows.append((T0 + rtt + 200 * 130_000, 50_000, 2, 5 * 1514, 0))
    m = metrics(rows, run_of([205 * 1448], T0 + rtt + 202 * 130_000))
    ok = (m["q_p50_bdp"] == 0.0 and m["q_p99_bdp"] == round((50_000 + 2 * 1514) / 25_000, 3)
          and m["q_max_bdp"] == round((50_000 + 4 * 1514) / 25_000, 3))
    # Dropped, the same skb's segments all found the full queue: no sample
    # above the buffer's 99,000 B.
    rows[-1] = (rows[-1][0], 99_000, 2, 5 * 1514, 1)
    d = metrics(rows, run_of([205 * 1448], T0 + rtt + 202 * 130_000))
    ok = ok and d["q_p99_bdp"] == 3.96
    return ok, json.dumps(m) + " " + json.dumps(d)


def t_completion_ideal_and_victim():
    rtt = RTT_US * 1000
    rpcs = [[T0 - 10_000_000, 1_000_000],    # over before the incast: not counted
            [T0 - 1_000_000, 1_000_000],     # in progress at its start: counted
            [T0 + 1_000, 2_000_000], [T0 + 3_000_000, 4_000_000], [T0 + 9_000_000, 9_000_000],
            [T0 + 50_000_000, 1]]           # after it
    m = metrics([(T0 + 10, 0, 1, 1514, 0)], run_of([125_000, 125_000], T0 + 30_000_000, rpcs))
    # 250,000 B at 12.5 MB/s = 20 ms, plus one base RTT. Victim latencies
    # 1, 2, 4, 9 ms: nearest rank, p50 the 2nd, p99 the 4th.
    ok = (m["completion_ms"] == 30.0 and m["ideal_ms"] == 22.0 and m["victim_rpcs"] == 4
          and m["victim_p50_us"] == 2000.0 and m["victim_p99_us"] == 9000.0 and m["complete"]
          and rtt == 2_000_000)
    return ok, json.dumps(m)


def t_victim_fair_share():
    # 8 KiB over IPv4: 6 segments, 8,588 B on the wire; 16:1 at 100 Mbit/s
    # is 1/17 of the port: 11,679.7 us, plus a 2 ms base RTT.
    v4 = incast.victim_fair_us(8192, 16, 100_000_000, 2000)
    v6 = incast.victim_fair_us(8192, 16, 100_000_000, 2000, family=6)
    return v4 == 13679.7 and v6 > v4, f"{v4} {v6}"


def t_incomplete_run_is_flagged():
    r = run_of([1000, 1000], T0 + 1_000_000)
    r["flows"][1]["got"] = 999
    m = metrics([(T0 + 10, 0, 1, 1514, 0)], r)
    return not m["complete"], json.dumps(m)


TESTS = [t_sizes_repeat_per_repetition, t_back_to_back_link_is_fully_used, t_late_drops_and_queue_windows,
         t_queue_counts_every_segment, t_completion_ideal_and_victim, t_victim_fair_share,
         t_incomplete_run_is_flagged]


if __name__ == "__main__":
    ktap.run(TESTS)
