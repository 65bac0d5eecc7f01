#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plot of the incast benchmark (bench/incast.sh output).

  incast_plot.py DIR    reads DIR/incast.jsonl and DIR/incast/<algo>-sfc<0|1>-rep0.{log,run},
                        writes DIR/incast_queue.png

One panel per algorithm: the bottleneck's backlog (in BDP) seen by each
arriving packet against the time since the first byte was sent, SFC off
against on (repetition 0), drops marked with crosses.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(d):
    rows = [json.loads(line) for line in open(os.path.join(d, "incast.jsonl")) if line.strip()]
    algos = list(dict.fromkeys(r["algo"] for r in rows))
    r0 = rows[0]
    bdp = 100e6 / 8 * 2e-3
    fig, axes = plt.subplots(1, len(algos), figsize=(5 * len(algos), 4), sharey=True, squeeze=False)
    for ax, algo in zip(axes[0], algos):
        for sfc, color in ((0, "#d95f02"), (1, "#1b9e77")):
            base = os.path.join(d, "incast", f"{algo}-sfc{sfc}-rep0")
            try:
                run = json.load(open(base + ".run"))
                log = [tuple(int(x) for x in line.split()) for line in open(base + ".log") if line.strip()]
            except (OSError, ValueError):
                continue
            t0 = min(f["first_send_ns"] for f in run["flows"])
            t1 = run["t_done_ns"] or log[-1][0]
            pts = [((t - t0) / 1e6, b / bdp, dr) for t, b, _, _, dr in log if t0 <= t <= t1]
            m = [r for r in rows if r["algo"] == algo and r["sfc"] == sfc and r["rep"] == 0]
            lab = f'SFC {"on" if sfc else "off"}'
            if m:
                lab += f' ({m[0]["drops"]} drops, {m[0]["completion_ms"]:.0f} ms)'
            ax.plot([p[0] for p in pts if not p[2]], [p[1] for p in pts if not p[2]], ".", ms=2,
                    color=color, label=lab)
            dr = [p for p in pts if p[2]]
            if dr:
                ax.plot([p[0] for p in dr], [p[1] for p in dr], "x", ms=4, color=color)
        ax.set_title(f'{algo}, {r0["senders"]}:1')
        ax.set_xlabel("ms since the first byte was sent")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("bottleneck backlog (BDP)")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "incast_queue.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
