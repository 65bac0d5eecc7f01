#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`make cost`'s plot: DIR/cost.jsonl (bench/cost.sh) as DIR/cost.png.

  cost_plot.py DIR

Left: whole-guest instructions per GB for each algorithm, with TSO as the
kernel does it and with one packet per skb, as ratios to cubic's written
on the bars. Right: the congestion-control callbacks' instructions per
ACK (the kprobe run).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(d):
    rows = [json.loads(line) for line in open(os.path.join(d, "cost.jsonl")) if line.strip()]
    plain = [r for r in rows if r["mode"] == "plain"]
    kp = {r["algo"]: r for r in rows if r["mode"] == "kprobes"}
    algos = list(dict.fromkeys(r["algo"] for r in plain))
    segs = list(dict.fromkeys(r["seg"] for r in plain))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    w = 0.8 / max(1, len(segs))
    for j, seg in enumerate(segs):
        by = {r["algo"]: r for r in plain if r["seg"] == seg}
        ref = (by.get("cubic") or {}).get("guest_instr_per_gb")
        xs = [i + j * w for i in range(len(algos))]
        ys = [(by.get(x) or {}).get("guest_instr_per_gb") or 0 for x in algos]
        bars = a.bar(xs, [y / 1e9 for y in ys], w, label={"tso": "TSO (the kernel's)", "one": "one packet per skb"}.get(seg, seg))
        for bar, y, x in zip(bars, ys, algos):
            if ref and y:
                sp = (by.get(x) or {}).get("segs_per_skb")
                a.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), f"{y / ref:.2f}x\n{sp} seg",
                       ha="center", va="bottom", fontsize=7)
    a.set_xticks([i + w * (len(segs) - 1) / 2 for i in range(len(algos))], algos)
    a.set_ylabel("guest instructions per GB (10^9)")
    a.set_title("whole guest, per GB delivered (ratio to cubic; segments per skb)", fontsize=9)
    a.legend(fontsize=8, loc="lower right")
    ks = [x for x in algos if x in kp]
    vals = [kp[x].get("callback_instr_per_ack") or 0 for x in ks]
    bars = b.bar(ks, vals, color="tab:green")
    for bar, v in zip(bars, vals):
        b.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    b.set_ylabel("instructions per ACK")
    b.set_title("all congestion-control callbacks per ACK\n(hpcc: with its netfilter hooks; kprobe run)", fontsize=9)
    fig.suptitle(f"virtual time: one instruction per ns; {plain[0]['rate_mbit']} Mbit/s, RTT {plain[0]['rtt_us']} us"
                 if plain else "", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "cost.png"), dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
