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


TESTS = [t_u_counts_only_updates_in_the_window, t_u_without_updates_is_null, t_ideal_fct,
         t_fct_percentiles_per_size, t_cli_fct_without_output_is_empty, t_cli_u_reads_a_trace_file]


if __name__ == "__main__":
    ktap.run(TESTS)
