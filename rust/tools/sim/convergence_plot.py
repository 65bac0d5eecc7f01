#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Convergence of a late joiner in the fluid model, as a PNG.

  convergence_plot.py [--after=N] [--smooth=K] OUT.png LABEL=RUN.csv [LABEL=RUN.csv ...]

Each RUN.csv is `hpcc-scenario --csv` output (rtt, util, queue_bdp and one
rate column per flow). One panel per run: each flow's rate (Mbit/s) per
base RTT around the join, with Jain's index over the active flows on a
second axis and the queue below; N base RTTs after the join (150), rates
averaged over K RTTs (1).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    flows = [k for k in rows[0] if k.endswith("_mbps")]
    return rows, flows


def jain(rates):
    active = [r for r in rates if r > 0]
    s = sum(active)
    return s * s / (len(active) * sum(r * r for r in active)) if active else 0.0


def main(out, runs, after=150, smooth=1):
    fig, axes = plt.subplots(2, len(runs), figsize=(5.5 * len(runs), 5.5), sharex=True,
                             gridspec_kw={"height_ratios": [3, 1]}, squeeze=False)
    for col, (label, path) in enumerate(runs):
        rows, flows = load(path)
        rtt = [int(r["rtt"]) for r in rows]
        # The join: the first RTT the last flow sends.
        join = next(i for i, r in enumerate(rows) if float(r[flows[-1]]) > 0)
        lo, hi = max(0, join - 20), min(len(rows), join + after)
        ax = axes[0][col]
        for f in flows:
            v = [float(r[f]) for r in rows]
            v = [sum(v[max(0, i - smooth + 1):i + 1]) / len(v[max(0, i - smooth + 1):i + 1]) for i in range(len(v))]
            ax.plot(rtt[lo:hi], v[lo:hi], lw=1.2, label=f.replace("_mbps", ""))
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("Mbit/s")
        j = ax.twinx()
        jv = [jain([float(r[f]) for f in flows]) for r in rows[lo:hi]]
        j.plot(rtt[lo:hi], jv, "k:", lw=1, label="Jain")
        j.axhline(0.95, color="grey", lw=0.5)
        j.set_ylim(0.5, 1.02)
        j.set_ylabel("Jain's index")
        hit = next((rtt[lo + i] for i, v in enumerate(jv)
                    if rtt[lo + i] >= join and all(w >= 0.95 for w in jv[i:])), None)
        if hit is not None:
            j.axvline(hit, color="grey", lw=0.5)
            j.text(hit, 0.52, f" Jain ≥ 0.95 from {hit - join} RTTs", fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
        q = axes[1][col]
        q.plot(rtt[lo:hi], [float(r["queue_bdp"]) for r in rows[lo:hi]], color="tab:red", lw=1)
        q.set_ylabel("queue (BDP)")
        q.set_xlabel("base RTT")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    opts = {a.split("=", 1)[0]: int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--")}
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    main(args[0], [a.split("=", 1) for a in args[1:]], opts.get("--after", 150), opts.get("--smooth", 1))
