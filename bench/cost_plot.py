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
    # The tcp_congestion_ops callbacks, and hpcc's netfilter hooks (every
    # packet of the netns, both ends) stacked on them.
    hook = [sum(v["instr_per_ack"] for k, v in (kp[x].get("callbacks") or {}).items() if k.startswith("hpcc_nf_"))
            for x in ks]
    total = [kp[x].get("callback_instr_per_ack") or 0 for x in ks]
    ops = [t - h for t, h in zip(total, hook)]
    b.bar(ks, ops, color="tab:green", label="tcp_congestion_ops callbacks")
    bars = b.bar(ks, hook, bottom=ops, color="tab:olive", label="hpcc's netfilter hooks (every packet)")
    for bar, o, t in zip(bars, ops, total):
        b.text(bar.get_x() + bar.get_width() / 2, t, f"{o:.0f}" + (f" + {t - o:.0f}" if t - o else ""),
               ha="center", va="bottom", fontsize=8)
    b.set_ylabel("instructions per ACK")
    b.set_title("congestion control per ACK received (kprobe run, TSO)", fontsize=9)
    b.legend(fontsize=8)
    fig.suptitle(f"virtual time: one instruction per ns; {plain[0]['rate_mbit']} Mbit/s, RTT {plain[0]['rtt_us']} us"
                 if plain else "", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "cost.png"), dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
