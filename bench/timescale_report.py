#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`make timescale`'s report: DIR/cost.jsonl (bench/cost.sh with SCALES)
as a table, DIR/timescale.json and DIR/timescale.png.

  timescale_report.py DIR

The fastest time scale is the highest rate at which cubic's one flow keeps
the bottleneck at >= 95% of B (departures, headers included, over the
flow's life) while the guest stays at least 30% idle under hpcc's; every
rate below it must pass too. The RTT is scaled with the rate, so the BDP
is the same at every rate.
"""
import json
import os
import sys

CUBIC_UTIL = 0.95
HPCC_IDLE = 0.30


def scan(rows):
    """[(rate, cubic row, hpcc row, passes)] by rate, and the fastest
    passing rate before the first failure (None: even the slowest fails)."""
    by = {}
    for r in rows:
        if r.get("mode") == "plain" and r.get("seg") == "tso":
            by.setdefault(r["rate_mbit"], {})[r["algo"]] = r
    out, fastest, broken = [], None, False
    for rate in sorted(by):
        c, h = by[rate].get("cubic"), by[rate].get("hpcc")
        ok = bool(c and h and (c.get("util") or 0) >= CUBIC_UTIL
                  and 1 - (h.get("guest_busy_frac") or 1) >= HPCC_IDLE)
        out.append((rate, c, h, ok))
        if ok and not broken:
            fastest = rate
        broken = broken or not ok
    return out, fastest


def main(d):
    rows = [json.loads(line) for line in open(os.path.join(d, "cost.jsonl")) if line.strip()]
    table, fastest = scan(rows)
    print("rate Mbit/s  RTT us  cubic util  cubic idle  hpcc util  hpcc idle  hpcc Mbit/s  hpcc seg/skb  holds")
    res = []
    for rate, c, h, ok in table:
        c, h = c or {}, h or {}
        idle = lambda r: None if r.get("guest_busy_frac") is None else round(1 - r["guest_busy_frac"], 3)
        print(f"{rate:10d}  {c.get('rtt_us', h.get('rtt_us', 0)):6d}  {c.get('util')!s:>10}  {idle(c)!s:>10}"
              f"  {h.get('util')!s:>9}  {idle(h)!s:>9}  {h.get('mbps')!s:>11}  {h.get('segs_per_skb')!s:>12}  {'yes' if ok else 'no'}")
        res.append({"rate_mbit": rate, "rtt_us": c.get("rtt_us", h.get("rtt_us")),
                    "cubic_util": c.get("util"), "cubic_idle": idle(c),
                    "hpcc_util": h.get("util"), "hpcc_idle": idle(h), "hpcc_mbps": h.get("mbps"),
                    "holds": ok})
    print(f"fastest time scale: {fastest} Mbit/s" if fastest else "fastest time scale: none of the rates holds")
    json.dump({"fastest_mbit": fastest, "cubic_util_min": CUBIC_UTIL, "hpcc_idle_min": HPCC_IDLE,
               "rates": res}, open(os.path.join(d, "timescale.json"), "w"), indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rates = [r["rate_mbit"] for r in res]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(rates, [r["cubic_util"] or 0 for r in res], "o-", label="cubic: utilization")
    ax.plot(rates, [r["hpcc_util"] or 0 for r in res], "s-", label="hpcc: utilization")
    ax.plot(rates, [r["hpcc_idle"] or 0 for r in res], "^--", label="guest idle under hpcc")
    ax.plot(rates, [r["cubic_idle"] or 0 for r in res], "v--", label="guest idle under cubic")
    ax.axhline(CUBIC_UTIL, color="grey", lw=0.8, ls=":")
    ax.axhline(HPCC_IDLE, color="grey", lw=0.8, ls=":")
    if fastest:
        ax.axvline(fastest, color="green", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(rates, [str(r) for r in rates])
    ax.set_xlabel("bottleneck rate, Mbit/s (RTT scaled: BDP 25 kB)")
    ax.set_ylim(0, 1.05)
    ax.set_title("The fastest time scale the VM holds (virtual time)")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "timescale.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/timescale")
