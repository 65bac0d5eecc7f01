#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host test of the datacenter simulation's flow lists (flows.py) and its
report (dc_report.py), on synthetic CDFs and runs. KTAP on stdout; exit 0
pass, 1 fail."""
import io
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "selftests", "lib", "py"))
import dc_report  # noqa: E402
import flows  # noqa: E402
import ktap  # noqa: E402


def cdf_file(text):
    f = tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt")
    f.write(text)
    f.close()
    return f.name


def t_cdf_read_and_mean():
    p = cdf_file("0 0\n1000 50\n3000 100\n")
    try:
        pts = flows.read_cdf(p)
    finally:
        os.unlink(p)
    # Uniform on 0..1000 with half the mass, on 1000..3000 with the other.
    m = flows.mean(pts)
    return abs(m - (0.5 * 500 + 0.5 * 2000)) < 1e-9, f"mean {m}"


def t_cdf_refuses_malformed():
    refused = 0
    for text in ("0 0\n100 90\n", "0 5\n100 100\n", "0 0\n100 60\n50 100\n"):
        p = cdf_file(text)
        try:
            flows.read_cdf(p)
        except ValueError:
            refused += 1
        finally:
            os.unlink(p)
    return refused == 3, f"{refused} of 3 malformed CDFs refused"


def t_sample_interpolates():
    pts = [(0.0, 0.0), (1000.0, 0.5), (3000.0, 1.0)]
    got = [flows.sample(pts, u) for u in (0.0, 0.25, 0.5, 0.75, 1.0)]
    return got == [1, 500, 1000, 2000, 3000], f"samples {got}"


def t_same_arguments_same_list():
    pts = [(0.0, 0.0), (10000.0, 0.5), (1000000.0, 1.0)]
    a, _ = flows.generate(pts, 8, 0.3, 2_000_000, seed=7)
    b, _ = flows.generate(pts, 8, 0.3, 2_000_000, seed=7)
    c, _ = flows.generate(pts, 8, 0.3, 2_000_000, seed=8)
    return a == b and a != c, f"{len(a)} flows; seed 7 twice equal: {a == b}; seed 8 differs: {a != c}"


def t_offered_load_and_destinations():
    # Offered bytes over the window match the load; nobody sends to itself;
    # starts are sorted and inside the window.
    pts = [(0.0, 0.0), (10000.0, 0.5), (200000.0, 1.0)]
    hosts, load, window = 16, 0.4, 20_000_000
    fl, m = flows.generate(pts, hosts, load, window, seed=1)
    offered = sum(f[2] for f in fl) * 8 / (hosts * 100e9 * window / 1e9)
    ok = abs(offered - load) / load < 0.05
    ok &= all(f[0] != f[1] and 0 <= f[1] < hosts for f in fl)
    ok &= all(0 <= f[3] < window for f in fl) and fl == sorted(fl, key=lambda f: (f[3], f[0], f[1]))
    return ok, f"{len(fl)} flows, offered load {offered:.3f} for {load}"


def t_incast_adds_synchronized_fan_in():
    pts = [(0.0, 0.0), (1000.0, 1.0)]
    fl, _ = flows.generate(pts, 8, 0.01, 1_000_000, seed=3, incast=(7, 250000, 0.2, 1000))
    big = [f for f in fl if f[2] == 250000]
    by_dst = {}
    for f in big:
        by_dst.setdefault(f[1], []).append(f)
    ok = len(big) > 0 and len(big) % 7 == 0
    # Each incast, by its number: 7 distinct senders to one receiver within
    # the jitter; background flows carry no number.
    groups = {}
    for f in big:
        groups.setdefault(f[4], []).append(f)
    ok &= sorted(groups) == list(range(1, len(big) // 7 + 1))
    ok &= all(len(f) == 4 for f in fl if f[2] != 250000)
    for g in groups.values():
        ok &= len(g) == 7 and len({f[1] for f in g}) == 1 and len({f[0] for f in g}) == 7
        ok &= max(f[3] for f in g) - min(f[3] for f in g) <= 1000
    return ok, f"{len(groups)} incasts of 7 x 250 KB"


def run(algo, p99s, p50_big, q, incomplete=0, k=300000, rto=5000, window=0.05, buffer=2000000):
    b = {n: {"n": 10, "p50": 1.0, "p95": v, "p99": v} for n, v in zip(dc_report.BUCKETS, p99s)}
    b[">1MB"]["p50"] = p50_big
    return {"run": algo, "topo": "leaf-spine-32", "workload": "WebSearch", "load": 0.3, "algo": algo,
            "profile": "module" if algo == "hpcc" else "", "knobs": "", "int": "probe" if algo == "hpcc" else "",
            "sfc": 0, "flows": 10, "flows_sha256": "abc", "tcp": {"rto_min_us": rto},
            "queues": {"ecn_k_100g": k if algo == "dctcp" else 0, "buffer_bytes": buffer}, "buckets": b,
            "q_p99_bytes": q, "drops": 0, "incomplete": incomplete, "probes_per_s_host": 0,
            "probe_wire_share": 0, "window_s": window, "wall_s": 1}


def t_report_ratios_and_bars():
    rs = [run("hpcc", [2.0, 3.0, 4.0, 5.0], 2.4, 10_000), run("dctcp", [4.0, 4.0, 5.0, 6.0], 2.0, 300_000)]
    out = io.StringIO()
    checks = dc_report.judge(("leaf-spine-32", "WebSearch", 0.3, "abc"), rs, out)
    got = {name.split(": ", 1)[1]: (round(v, 3), ok) for name, v, _, ok in checks}
    want = {
        "hpcc/dctcp p99 slowdown <10KB": (0.5, True),
        "hpcc/dctcp p99 slowdown 10-100KB": (0.75, True),
        "hpcc/dctcp p50 slowdown >1MB": (1.2, True),
        "hpcc/dctcp p99 switch queue": (0.033, True),
        "baseline: dctcp/anchor DCTCP p99 <10KB": (round(4.0 / 4.2, 3), True),
        "hpcc/anchor HPCC p99 10-100KB": (round(3.0 / 2.61, 3), True),
        "hpcc/anchor HPCC p95 <10KB": (round(2.0 / 1.24, 3), False),
    }
    ok = all(got.get(k) == v for k, v in want.items())
    # A variant is judged under its own label.
    v = run("hpcc", [1.0, 2.0, 4.0, 5.0], 2.0, 10_000)
    v["knobs"] = "init_window_bytes=125000"
    names = [c[0] for c in dc_report.judge(("leaf-spine-32", "WebSearch", 0.3, "abc"), rs + [v], io.StringIO())]
    ok &= any(n.endswith("hpcc [init_window_bytes=125000]/dctcp p99 slowdown 10-100KB") for n in names)
    # A run with an incomplete flow fails the queue bar; a run that is not
    # the anchors' configuration is not compared with them.
    rs[0]["incomplete"] = 1
    rs[0]["window_s"] = rs[1]["window_s"] = 0.001
    checks = dc_report.judge(("leaf-spine-32", "WebSearch", 0.3, "abc"), rs, io.StringIO())
    names = [c[0] for c in checks]
    ok &= not [c for c in checks if "switch queue" in c[0]][0][3]
    ok &= not any("anchor" in n for n in names)
    return ok, f"checks {got}"


def t_report_judges_sfc_against_off():
    # SFC on against the same run with SFC off: queue, short flows, drops
    # after an incast's first base RTT; no dctcp needed.
    off = run("hpcc", [10.0, 20.0, 30.0, 5.0], 2.0, 1_000_000)
    on = run("hpcc", [4.0, 17.0, 10.0, 5.0], 2.0, 400_000)
    on["sfc"] = 1
    for r, late in ((off, 40), (on, 3)):
        r.update({"incasts": 5, "drops": late, "drops_after_first_rtt": late, "sfc_stats": {}})
    out = io.StringIO()
    checks = dc_report.judge(("leaf-spine-32", "WebSearch+incast", 0.5, "abc"), [off, on], out)
    got = {name.split(": ", 1)[1]: (round(v, 3), ok) for name, v, _, ok in checks}
    want = {
        "hpcc sfc/off p99 switch queue": (0.4, True),
        "hpcc sfc/off p99 slowdown <10KB": (0.4, True),
        "hpcc sfc/off p99 slowdown 10-100KB": (0.85, False),
        "hpcc sfc: drops after an incast's first base RTT": (3, False),
    }
    dc_report.table(("leaf-spine-32", "WebSearch+incast", 0.5, "abc"), [off, on], out)
    return got == want and "after an incast's first RTT" in out.getvalue(), f"checks {got}"


def t_report_labels_variants():
    labels = [dc_report.label(run("dctcp", [1] * 4, 1, 1, k=30000)),
              dc_report.label(run("hpcc", [1] * 4, 1, 1, rto=200000)),
              dc_report.label(run("dctcp", [1] * 4, 1, 1))]
    return labels == ["dctcp K=30KB", "hpcc rto_min=200ms", "dctcp"], f"labels {labels}"


if __name__ == "__main__":
    ktap.run([t_cdf_read_and_mean, t_cdf_refuses_malformed, t_sample_interpolates, t_same_arguments_same_list,
              t_offered_load_and_destinations, t_incast_adds_synchronized_fan_in, t_report_ratios_and_bars,
              t_report_judges_sfc_against_off, t_report_labels_variants])
