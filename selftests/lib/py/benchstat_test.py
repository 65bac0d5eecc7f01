#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of benchstat.py, the statistics behind the benchmark's and the
closed-loop test's operating-point and flow-completion-time figures. The
trace lines have the format of tcp_hpcc:hpcc_sample (include/hpcc_trace.h).
KTAP on stdout; exit 0 pass, 1 fail."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchstat  # noqa: E402
import ktap  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def line(ts_s, ev, u_ppm):
    return (f"         python3-239     [001] .Ns..    {ts_s:.6f}: hpcc_sample: src=10.1.1.1:39468 "
            f"dst=10.0.2.1:5301 ev={ev} hop=0/1 U={u_ppm} u={u_ppm} qlen=1188 W=25819 Wc=25819 "
            f"stage=1 cwnd=17 inflight=7 srtt=9505 T=3403 rate=7587129 link=12500000\n")


def t_u_counts_only_updates_in_the_window():
    lines = [
        line(9.999999, 3, 400000),   # before the window
        line(10.0, 2, 500000),       # at its start: counted
        line(10.1, 0, 100000),       # recorded only
        line(10.2, 1, 100000),       # path changed
        line(10.3, 4, 100000),       # stale
        line(10.4, 3, 900000),
        line(10.5, 2, 950000),
        line(10.6, 3, 1000000),
        "garbage without the event\n",
        line(10.7, 2, 1).replace("U=1 ", "U=x "),  # unparsable U
        line(11.0, 3, 1200000),      # at its end: counted
        line(11.000001, 3, 2000000),  # after it
    ]
    got = benchstat.u_quartiles(lines, 10_000_000_000, 11_000_000_000)
    want = {"u_updates": 5, "u_p25": 0.9, "u_p50": 0.95, "u_p75": 1.0}
    return got == want, f"got {got}, want {want}"


def t_u_without_updates_is_null():
    got = benchstat.u_quartiles([line(10.0, 0, 1000000)], 0, 20_000_000_000)
    want = {"u_updates": 0, "u_p25": None, "u_p50": None, "u_p75": None}
    return got == want, f"got {got}"


def t_ideal_fct():
    # 8 KiB: 6 segments, 9084 B on the wire at 100 Mbit/s = 0.72672 ms, + 2 RTTs of 2 ms.
    # 1 MiB: 725 segments, 1097650 B = 87.812 ms, + 4 ms.
    a, b = benchstat.ideal_ms(8192, 100, 2000), benchstat.ideal_ms(1048576, 100, 2000)
    return abs(a - 4.72672) < 1e-9 and abs(b - 91.812) < 1e-9, f"8 KiB {a} ms, 1 MiB {b} ms"


def t_fct_percentiles_per_size():
    # 8 KiB: 10 flows of 5..14 ms (given out of order); 64 KiB: one flow of 20 ms.
    # Nearest rank: p50 the 5th value (9 ms), p90 the 9th (13 ms).
    fct = [[8192, ms * 1_000_000] for ms in (14, 5, 13, 6, 12, 7, 11, 8, 10, 9)] + [[65536, 20_000_000]]
    got = benchstat.fct_sizes(fct, 100, 2000)
    small, large = got["8192"], got["65536"]
    ok = (small["n"] == 10 and small["p50_ms"] == 9.0 and small["p90_ms"] == 13.0
          and small["p50_slowdown"] == round(9.0 / 4.72672, 2) and large["n"] == 1
          and large["p50_ms"] == large["p90_ms"] == 20.0 and set(got) == {"8192", "65536"})
    return ok, f"got {got}"


def t_cli_fct_without_output_is_empty():
    r = subprocess.run([sys.executable, os.path.join(HERE, "benchstat.py"), "fct", "/nonexistent", "100", "2000"],
                       capture_output=True, text=True)
    return r.returncode == 0 and json.loads(r.stdout) == {}, f"rc {r.returncode}, out {r.stdout.strip()}"


def t_cli_u_reads_a_trace_file():
    with tempfile.NamedTemporaryFile("w", suffix=".trace", delete=False) as f:
        f.writelines([line(1.0, 3, 800000), line(2.0, 2, 1000000), line(3.0, 2, 900000)])
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "benchstat.py"), "u", f.name,
                            "1500000000", "3000000000"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    # Two updates (0.9, 1.0): nearest rank, p50 is the first.
    want = {"u_updates": 2, "u_p25": 0.9, "u_p50": 0.9, "u_p75": 1.0}
    return r.returncode == 0 and json.loads(r.stdout) == want, f"rc {r.returncode}, out {r.stdout.strip()}"


def _join_log(rtts, share, t0=1_000_000_000, rtt=2_000_000, pkt=1514):
    """A packet log: flows 1..4 (sports 1001..1004) at 100 Mbit/s, the
    4th from RTT 0 at share(k) of the others' rate in RTT k; a 1500-byte
    backlog ahead of each packet; one dropped packet that must not count."""
    rows = []
    per_rtt = 100e6 / 8 * rtt / 1e9 / pkt  # packets per RTT at B
    for k in range(rtts):
        s4 = share(k)
        rates = [1, 1, 1, s4]
        tot = sum(rates)
        for f, r in enumerate(rates):
            n = round(per_rtt * r / tot)
            for i in range(n):
                rows.append((t0 + k * rtt + i * rtt // max(n, 1), 1500, 1001 + f, pkt, 0))
    rows.append((t0 + 5 * rtt, 0, 1004, 60000, 1))
    rows.sort()
    return rows, t0, t0 + rtts * rtt


def t_join_converges_when_the_newcomer_gets_its_share():
    # The newcomer ramps linearly from 0 to its share over 30 RTTs.
    rows, j, e = _join_log(100, lambda k: min(1.0, k / 30))
    got = benchstat.join(rows, j, e, 2_000_000, 100_000_000, 4)
    # Jain over 10-RTT windows passes 0.95 before the ramp ends, and holds.
    ok = (got["flows"] == 4 and got["jain_rtts"] is not None and 5 <= got["jain_rtts"] <= 25
          and got["jain_hold"] == 1.0 and 0.9 <= got["util"] <= 1.01 and got["q_p50_bdp"] == 0.06
          and len(got["jain"]) == 91)
    return ok, f"jain_rtts {got['jain_rtts']}, hold {got['jain_hold']}, util {got['util']}, q {got['q_p50_bdp']}"


def t_join_never_converges_when_the_newcomer_starves():
    rows, j, e = _join_log(100, lambda k: 0.1)
    got = benchstat.join(rows, j, e, 2_000_000, 100_000_000, 4)
    return got["jain_rtts"] is None and got["jain_hold"] == 0.0 and max(got["jain"]) < 0.9, f"got {got['jain_rtts']}, max {max(got['jain'])}"


def t_join_cli_reads_a_log():
    rows, j, e = _join_log(40, lambda k: 1.0)
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.writelines("%d %d %d %d %d\n" % r for r in rows)
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "benchstat.py"), "join", f.name, str(j), str(e),
                            "2000", "100", "4"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    got = json.loads(r.stdout) if r.returncode == 0 else {}
    return got.get("jain_rtts") == 0 and got.get("flows") == 4, f"rc {r.returncode}, {r.stdout[:200]} {r.stderr[-200:]}"


def t_join_counts_a_silent_joiner():
    # The newcomer never sends: 3 equal flows alone must not look fair.
    rows, j, e = _join_log(60, lambda k: 0.0)
    got = benchstat.join(rows, j, e, 2_000_000, 100_000_000, 4)
    ok = got["flows"] == 3 and got["jain_rtts"] is None and max(got["jain"]) <= 0.75 and got["log_from_join"]
    return ok, f"flows {got['flows']}, jain_rtts {got['jain_rtts']}, max {max(got['jain'])}"


def t_scenario_summarizes_a_run():
    # Two flows' files as bench_scenario leaves them; no sampler output
    # (util null) and no trace updates (U null).
    d = tempfile.mkdtemp()
    out = os.path.join(d, "bench-hpcc-2")
    for i, mbps in enumerate((40.0, 50.0)):
        json.dump({"bytes": 1, "secs": 10, "mbps": mbps}, open(f"{out}.flow{i}.json", "w"))
    json.dump({"qlen_p50_bytes": 1000, "qlen_p99_bytes": 5000, "qlen_max_bytes": 9000, "qlen_mean_bytes": 1500,
               "drops": 2, "last_drop_ns": 3_000_000_000, "first_ns": 1_000_000_000, "ce_marks": 0,
               "probes_stamped": 77}, open(f"{out}.port.json", "w"))
    json.dump({"p50_bytes": 800, "p99_bytes": 4000}, open(f"{out}.queue-steady.json", "w"))
    json.dump({"p99_1ms": 1.1}, open(f"{out}.arrivals.json", "w"))
    open(f"{out}.samples", "w").close()
    open(f"{out}.trace", "w").close()
    r = subprocess.run([sys.executable, os.path.join(HERE, "benchstat.py"), "scenario", out, "hpcc", "2", "single",
                        "100", "2000", "25000", "10", "2", '{"a": 1}', '{"a": 4, "b": 2}', "",
                        "1000000000", "1500000000", "2000000000"], capture_output=True, text=True)
    got = json.loads(r.stdout) if r.returncode == 0 else {}
    want = {"algo": "hpcc", "flows": 2, "goodput_mbps": 90.0, "jain": round(90 ** 2 / (2 * (40 ** 2 + 50 ** 2)), 4),
            "q_p99_bytes": 5000, "q_steady_p99_bytes": 4000, "drops": 2, "drops_late": True,
            "last_drop_after_start_ms": 1000.0, "flows_started_ms": [500.0, 1000.0], "hpcc": {"a": 3, "b": 2},
            "util": None, "u_updates": 0}
    bad = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
    return not bad, f"rc {r.returncode} {r.stderr[-300:]} {bad}"


def mix_log():
    """A mix at 100 Mbit/s (12,500 B per ms), a packet per 0.1 ms: short
    flows on ports 2 (5-10 ms) and 3 (15-20 ms) share the port
    with the bulk flow (port 1) half and half; alone, the bulk flow sends
    at half the port for 2 ms, then at all of it. A ping (port 0) and a
    dropped packet (port 4) count for nothing."""
    rows = [(1_000, 0, 0, 98, 0), (7_000_050, 900, 4, 1514, 1)]
    for k in range(250):
        t = k * 100_000 + 50_000
        short = 2 if 5_000_000 <= t < 10_000_000 else 3 if 15_000_000 <= t < 20_000_000 else None
        if short:
            rows += [(t, 0, 1, 625, 0), (t, 0, short, 625, 0)]
        else:
            rows.append((t, 0, 1, 625 if t < 12_000_000 else 1250, 0))
    return rows


def t_mix_phases_split_the_port_by_the_short_flows():
    got = benchstat.mix_phases(mix_log(), 100_000_000)
    # 14 bins of 1 ms from 5.05 ms: 9 shared at 1.0, 5 alone (two at 0.5).
    want = {"util": round(13 / 14, 3), "alone_share": round(5 / 14, 3), "util_alone": 0.8, "util_shared": 1.0,
            "after_end": {"0-2": 0.5, "2-4": 1.0, "4-6": 1.0, "6-8": None, "8-10": None},
            "after_start": {"0-2": 1.0, "2-4": 1.0, "4-8": 1.0, "8-16": None, "16-32": None, "32-": None}}
    return got == want, f"{got}"


def t_mix_phases_need_a_short_flow():
    rows = [(t, 0, 1, 1250, 0) for t in range(0, 10_000_000, 100_000)]
    return benchstat.mix_phases(rows, 100_000_000) is None, ""


def t_warm_snapshot_waits_for_every_flow():
    """intsw.py hist --after: the bench's steady-queue snapshot, started
    before the flows, waits until every sender has written its start."""
    import threading
    import time
    import intsw
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "started0"), os.path.join(d, "started1")
        open(a, "w").write("1\n")
        open(b, "w").close()
        threading.Timer(0.2, lambda: open(b, "w").write("2\n")).start()
        t0 = time.monotonic()
        intsw.wait_files([a, b], 5)
        waited = time.monotonic() - t0
        t0 = time.monotonic()
        intsw.wait_files([os.path.join(d, "never")], 0.1)
        gave_up = time.monotonic() - t0
    return 0.2 <= waited < 2 and 0.1 <= gave_up < 1, f"waited {waited:.3f} s, gave up after {gave_up:.3f} s"


TESTS = [t_u_counts_only_updates_in_the_window, t_u_without_updates_is_null, t_ideal_fct,
         t_fct_percentiles_per_size, t_cli_fct_without_output_is_empty, t_cli_u_reads_a_trace_file,
         t_join_converges_when_the_newcomer_gets_its_share, t_join_never_converges_when_the_newcomer_starves,
         t_join_cli_reads_a_log, t_join_counts_a_silent_joiner, t_scenario_summarizes_a_run,
         t_mix_phases_split_the_port_by_the_short_flows, t_mix_phases_need_a_short_flow,
         t_warm_snapshot_waits_for_every_flow]


if __name__ == "__main__":
    ktap.run(TESTS)
