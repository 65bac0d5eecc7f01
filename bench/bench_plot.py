#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plots of the side-by-side benchmark (bench/bench.sh output).

  bench_plot.py DIR     reads DIR/bench.jsonl and DIR/bench-<algo>-<n>.samples,
                        writes DIR/bench_summary.png and DIR/bench_queue.png

DIR/fct.jsonl, if there, gives DIR/bench_fct.png: the short flows' FCT
slowdown (p50, with the p90) per size and algorithm; and, where its runs
have phases (benchstat.py mix_phases), DIR/bench_mix.png: the port's
utilization alone after a short flow ends and shared after one starts. DIR/join.jsonl, if
there, gives DIR/bench_join.png: Jain's index over the 4 flows after a late
joiner, per algorithm, against base RTTs since the join.

bench_summary.png: utilization, p99 queue (fraction of BDP) and drops per
algorithm, for 1 and 4 flows. bench_queue.png: the bottleneck's backlog over
time (0.2 s samples) for each algorithm with 4 flows and 1 flow.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"hpcc": "#1b9e77", "dctcp": "#d95f02", "cubic": "#7570b3", "bbr": "#e7298a"}


def main(d):
    rows = [json.loads(line) for line in open(os.path.join(d, "bench.jsonl")) if line.strip()]
    flows = sorted({r["flows"] for r in rows})
    algos = list(dict.fromkeys(r["algo"] for r in rows))

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    width = 0.8 / max(1, len(flows))
    metrics = [
        ("util", "utilization of B", lambda r: (r["util"] or 0) * 100, "%"),
        ("q_p99", "p99 queue (fraction of BDP)", lambda r: r["q_p99_bytes"] / r["bdp_bytes"], "BDP"),
        ("drops", "drops at the bottleneck", lambda r: r["drops"], "packets"),
    ]
    for ax, (_, title, f, unit) in zip(axes, metrics):
        for j, n in enumerate(flows):
            xs, ys = [], []
            for i, a in enumerate(algos):
                r = next((r for r in rows if r["algo"] == a and r["flows"] == n), None)
                if r is not None:
                    xs.append(i + j * width)
                    ys.append(f(r))
            bars = ax.bar(xs, ys, width, label=f"{n} flow{'s' if n > 1 else ''}",
                          color=[COLORS.get(algos[int(round(x - j * width))], "gray") for x in xs],
                          alpha=1.0 if j == 0 else 0.55, edgecolor="black", linewidth=0.5)
            ax.bar_label(bars, fmt="%.2f" if unit == "BDP" else "%.0f", fontsize=7)
        ax.set_xticks([i + width * (len(flows) - 1) / 2 for i in range(len(algos))])
        ax.set_xticklabels(algos)
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.legend(fontsize=8)
    r0 = rows[0]
    fig.suptitle(f'B = {r0["rate_mbit"]} Mbit/s, base RTT {r0["rtt_us"]} us, BDP {r0["bdp_bytes"]} B, '
                 f'{r0["secs"]:.0f} s per run (solid: 1 flow, light: 4 flows)')
    fig.tight_layout()
    fig.savefig(os.path.join(d, "bench_summary.png"), dpi=110)

    fig, axes = plt.subplots(len(flows), 1, figsize=(10, 3.2 * len(flows)), squeeze=False)
    for ax, n in zip(axes[:, 0], flows):
        for a in algos:
            path = os.path.join(d, f"bench-{a}-{n}.samples")
            if not os.path.exists(path):
                continue
            pts = [list(map(int, line.split())) for line in open(path) if line.strip()]
            if not pts:
                continue
            t0 = pts[0][0]
            bdp = next(r["bdp_bytes"] for r in rows if r["algo"] == a and r["flows"] == n)
            ax.plot([(p[0] - t0) / 1e9 for p in pts], [p[4] / bdp for p in pts],
                    label=a, color=COLORS.get(a), linewidth=1.2)
        ax.set_title(f"bottleneck backlog, {n} flow{'s' if n > 1 else ''}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (BDP)")
        ax.legend(fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "bench_queue.png"), dpi=110)
    print(f"wrote {d}/bench_summary.png and {d}/bench_queue.png")
    fct(d)
    mix(d)
    join(d)


def jsonl(d, name):
    """The JSON lines of DIR/NAME ([] without the file)."""
    path = os.path.join(d, name)
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []


def mix(d):
    rows = [r for r in jsonl(d, "fct.jsonl") if r.get("phases")]
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.2), sharey=True)
    width = 0.8 / len(rows)
    for ax, key, title in ((axes[0], "after_end", "bulk flow alone: ms after a short flow ended"),
                           (axes[1], "after_start", "shared: ms after the short flow started")):
        labels = list(rows[0]["phases"][key])
        for j, r in enumerate(rows):
            ph = r["phases"]
            v = [ph[key].get(k) or 0 for k in labels]
            ax.bar([i + j * width for i in range(len(labels))], v, width, color=COLORS.get(r["algo"], "gray"),
                   edgecolor="black", linewidth=0.5, hatch=r.get("hatch"),
                   label=f'{r["algo"]}: mix {ph["util"]:.3f}, alone {ph["util_alone"]:.3f} '
                         f'({100 * ph["alone_share"]:.0f}% of the time), shared {ph["util_shared"]:.3f}')
        ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(labels))])
        ax.set_xticklabels(labels)
        ax.set_title(title, fontsize=10)
        ax.axhline(1, color="gray", linewidth=0.6)
    axes[0].set_ylabel("utilization of B (1 ms bins)")
    axes[0].legend(fontsize=7, loc="lower right")
    r0 = rows[0]
    fig.suptitle(f'Where the flow completion mix loses the port: B = {r0["rate_mbit"]} Mbit/s, '
                 f'base RTT {r0["rtt_us"]} us', fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "bench_mix.png"), dpi=110)
    print(f"wrote {d}/bench_mix.png")


def join(d):
    rows = jsonl(d, "join.jsonl")
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(10, 4.2))
    for r in rows:
        first = "never" if r["jain_rtts"] is None else f'{r["jain_rtts"]} RTTs'
        ax.plot(range(len(r["jain"])), r["jain"], color=COLORS.get(r["algo"], "gray"), linewidth=1,
                label=f'{r["algo"]}: Jain >= 0.95 after {first}, util {r["util"]:.2f}, '
                      f'queue p50 {r["q_p50_bdp"] or 0:.3f} BDP')
    ax.axhline(0.95, color="gray", linewidth=0.6, linestyle="--")
    ax.axvline(50, color="gray", linewidth=0.6, linestyle=":")
    ax.set_xlabel("base RTTs since the join (start of a 10-RTT window)")
    ax.set_ylabel("Jain's index, 4 flows")
    ax.set_ylim(0, 1.02)
    r0 = rows[0]
    ax.set_title(f'{r0["incumbents"]} flows running, one joins: B = {r0["rate_mbit"]} Mbit/s, '
                 f'base RTT {r0["rtt_us"]} us', fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "bench_join.png"), dpi=110)
    print(f"wrote {d}/bench_join.png")


def fct(d):
    rows = jsonl(d, "fct.jsonl")
    if not rows:
        return
    sizes = sorted({int(k) for r in rows for k in r["sizes"]})
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(rows)
    for j, r in enumerate(rows):
        xs = [i + j * width for i, s in enumerate(sizes) if str(s) in r["sizes"]]
        v = [r["sizes"][str(s)] for s in sizes if str(s) in r["sizes"]]
        p50 = [x["p50_slowdown"] for x in v]
        p90 = [x["p90_slowdown"] for x in v]
        ax.bar(xs, p50, width, color=COLORS.get(r["algo"], "gray"), edgecolor="black", linewidth=0.5,
               label=f'{r["algo"]} (p50 bar, p90 tick)')
        ax.errorbar(xs, p50, yerr=[[0] * len(p50), [b - a for a, b in zip(p50, p90)]], fmt="none",
                    ecolor="black", capsize=3, linewidth=0.8)
    ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(sizes))])
    ax.set_xticklabels([f"{s // 1024} KiB" for s in sizes])
    ax.set_ylabel("FCT slowdown (FCT / ideal)")
    ax.axhline(1, color="gray", linewidth=0.6)
    r0 = rows[0]
    ax.set_title(f'Short flows next to one bulk flow of the same algorithm: B = {r0["rate_mbit"]} Mbit/s, '
                 f'base RTT {r0["rtt_us"]} us', fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "bench_fct.png"), dpi=110)
    print(f"wrote {d}/bench_fct.png")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/bench")
