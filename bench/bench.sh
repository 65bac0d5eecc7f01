#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Side-by-side benchmark, guest side (run by `make bench` through vm/run):
# hpcc, dctcp (CE marking at K), cubic and bbr on the same emulated
# bottleneck, 1 and 4 flows, in one VM boot. Writes bench.jsonl and
# bench.csv to $HPCC_RESULTS and prints one table per scenario.
#
# "p50/p99 ≥0.5s" is the queue (in BDP) without the start-up: the
# bottleneck's histogram from about 0.5 s after the flows started (when
# every flow has had several telemetry updates) to their end. The q columns
# before it are the whole run, start-up included.
#
# The last three columns are the bottleneck's arrival rate in fractions of
# B (intsw.py arrivals, from its packet log): p99 over 1 ms bins (mostly the
# host's delivery jitter), p99 and max over 10 ms bins (several RTTs: the
# congestion control's over-sending).
#
# Each table also has an open-loop reference row, "paced90": cubic capped
# at 90% of B in total with SO_MAX_PACING_RATE, one packet per skb (TSO/GSO
# off on the senders). It needs no feedback and sends no bursts, so its
# queue is what the host stack itself adds: the floor under every
# algorithm's numbers on this machine (PACED=0 leaves it out). The flow
# completion mix has one too, "fair95": cubic with the bulk flow and each
# short flow capped at half of 95% of B, one packet per skb, so every
# short flow gets its fair share from its first byte with no queue: the
# slowdowns of any controller that shares the port fairly, on this host.
set -u
. "$(dirname "$0")/../selftests/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"
. "$HPCC_LIB/sh/bench_lib.sh"

# labelled NAME: the reference's JSON line (stdin) under algo NAME.
labelled() {
	python3 -c 'import json, sys; r = json.load(sys.stdin); r["algo"] = sys.argv[1]; print(json.dumps(r))' "$1"
}

# FLOWS= (empty) leaves out the 1- and 4-flow scenarios.
SECS=${SECS:-10}
RATE_MBIT=${RATE_MBIT:-100}
RTT_US=${RTT_US:-2000}
ALGOS=${ALGOS:-hpcc dctcp cubic bbr}
FLOWS=${FLOWS-1 4}
JSON=$RESULTS/bench.jsonl
: >"$JSON"

load_module || { echo "bench: cannot load tcp_hpcc"; exit 1; }
# hpcc runs the module's defaults; HPCC_BENCH_SIZING=drafts sizes it as
# the drafts do for this link (bench_lib.sh bench_hpcc_knobs, with
# HPCC_WAI_BASE and HPCC_PACING_SHIFT as it takes them).
if [ "${HPCC_BENCH_SIZING:-}" = drafts ]; then
	bench_hpcc_knobs "$RATE_MBIT" "$RTT_US" 4 "${HPCC_WAI_BASE:-}" "${HPCC_PACING_SHIFT:-}" >&2 ||
		{ echo "bench: cannot set tcp_hpcc's knobs"; exit 1; }
fi
intsw_build >/dev/null || { echo "bench: cannot build the switch emulator"; exit 1; }
trap 'intsw_cleanup' EXIT

for n in $FLOWS; do
	for algo in $ALGOS; do
		echo "bench: $algo, $n flow(s), ${SECS}s" >&2
		bench_scenario "$algo" "$n" single "$SECS" rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" \
			tag="$algo-$n" >>"$JSON" || echo "bench: $algo $n failed" >&2
	done
	[ "${PACED:-1}" = 1 ] || continue
	echo "bench: open-loop reference, $n flow(s), ${SECS}s" >&2
	bench_paced_reference "$n" single "$SECS" rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" tag="paced90-$n" |
		labelled paced90 >>"$JSON" || echo "bench: paced90 $n failed" >&2
done

# Flow completion times (bench_lib.sh bench_fct): short flows next to one
# bulk flow of the same algorithm (FCT=0 leaves it out).
FCT_JSON=$RESULTS/fct.jsonl
: >"$FCT_JSON"
if [ "${FCT:-1}" = 1 ]; then
	for algo in $ALGOS; do
		echo "bench: flow completion times, $algo, ${SECS}s" >&2
		bench_fct "$algo" "$SECS" rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" >>"$FCT_JSON" ||
			echo "bench: fct $algo failed" >&2
	done
	if [ "${PACED:-1}" = 1 ]; then
		echo "bench: flow completion times, fair-share reference, ${SECS}s" >&2
		bench_fct_fair_reference "$SECS" rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" tag=fct-fair95 |
			labelled fair95 >>"$FCT_JSON" || echo "bench: fct fair95 failed" >&2
	fi
fi

# A late joiner (bench_lib.sh bench_join): 3 flows, a 4th joins 2 s in,
# JOIN_ALGOS (hpcc and dctcp), JOIN_TRIALS times each (1) (JOIN=0 leaves
# it out).
JOIN_JSON=$RESULTS/join.jsonl
: >"$JOIN_JSON"
if [ "${JOIN:-1}" = 1 ]; then
	for trial in $(seq 1 "${JOIN_TRIALS:-1}"); do
		for algo in ${JOIN_ALGOS:-hpcc dctcp}; do
			echo "bench: late joiner, $algo, trial $trial" >&2
			bench_join "$algo" 6 rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" >>"$JOIN_JSON" ||
				echo "bench: join $algo failed" >&2
		done
	done
	python3 - "$JOIN_JSON" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\nLate joiner: 3 flows, a 4th joins; Jain over 10-RTT windows from the join")
print(f'{"algo":7} {"Jain>=0.95 after":>17} {"held":>6} {"util":>6} {"q p50 BDP":>9}  last second: slowest/fastest of the mean')
for r in rows:
    j = "never" if r["jain_rtts"] is None else f'{r["jain_rtts"]} RTTs'
    print(f'{r["algo"]:7} {j:>17} {r["jain_hold"]:>6.2f} {r["util"]:>6.3f} {r["q_p50_bdp"] or 0:>9.3f}'
          f'  {r.get("last_s_min_of_mean")}/{r.get("last_s_max_of_mean")}')
PY
fi

python3 - "$JSON" "$RESULTS/bench.csv" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cols = ["algo", "flows", "util", "goodput_mbps", "q_p50_bytes", "q_p99_bytes", "q_max_bytes",
        "q_p50_bdp", "q_p99_bdp", "q_max_bdp", "drops", "ce_marks", "jain",
        "q_steady_p50_bdp", "q_steady_p99_bdp", "arr_p99_1ms", "arr_p99_10ms", "arr_max_10ms",
        "u_p25", "u_p50", "u_p75", "u_updates"]
for r in rows:
    for q in ("p50", "p99", "max"):
        r[f"q_{q}_bdp"] = round(r[f"q_{q}_bytes"] / r["bdp_bytes"], 3)
    for q in ("p50", "p99"):
        v = r.get(f"q_steady_{q}_bytes")
        r[f"q_steady_{q}_bdp"] = None if v is None else round(v / r["bdp_bytes"], 3)
    a = r.get("arrivals") or {}
    for k in ("p99_1ms", "p99_10ms", "max_10ms"):
        r[f"arr_{k}"] = a.get(k)
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols + ["rate_mbit", "rtt_us", "bdp_bytes", "secs"], extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
for n in sorted({r["flows"] for r in rows}):
    sc = [r for r in rows if r["flows"] == n]
    r0 = sc[0]
    print(f'\n{n} flow(s), B = {r0["rate_mbit"]} Mbit/s, base RTT {r0["rtt_us"]} us, BDP {r0["bdp_bytes"]} B, {r0["secs"]:.0f} s')
    print(f'{"algo":7} {"util":>6} {"goodput":>8} {"q p50":>14} {"q p99":>14} {"q max":>14} {"drops":>6} {"CE":>6} {"Jain":>6}'
          f' {"p50/p99 ≥0.5s":>13} {"arr p99 1ms":>11} {"10ms":>5} {"max":>5}')
    ref = {r["algo"]: r for r in sc}
    for r in sc:
        q = lambda k: f'{r[f"q_{k}_bytes"]:>6.0f} B {r[f"q_{k}_bdp"]:>5.2f}'
        u = "n/a" if r["util"] is None else f'{100 * r["util"]:.1f}%'
        arr = lambda k: "  n/a" if r[f"arr_{k}"] is None else f'{r[f"arr_{k}"]:>5.2f}'
        st = "n/a" if r["q_steady_p99_bdp"] is None else f'{r["q_steady_p50_bdp"]:.2f}/{r["q_steady_p99_bdp"]:.2f}'
        print(f'{r["algo"]:7} {u:>6} {r["goodput_mbps"]:>8.1f} {q("p50")} {q("p99")} {q("max")} {r["drops"]:>6} {r["ce_marks"]:>6} {r["jain"]:>6.3f}'
              f' {st:>13}       {arr("p99_1ms")} {arr("p99_10ms")} {arr("max_10ms")}')
    if "hpcc" in ref:
        h = ref["hpcc"]
        if h.get("u_updates"):
            # What the law aims for (U = eta) and where it sits; U counts
            # the queue in units of B*T, T being the flows' minimum RTT.
            print(f'  hpcc operating point: U p25/p50/p75 {h["u_p25"]:.2f}/{h["u_p50"]:.2f}/{h["u_p75"]:.2f}'
                  f' over {h["u_updates"]} updates (eta {h.get("eta")})')
        for a in ("dctcp", "cubic", "bbr", "paced90"):
            if a in ref and h["util"] and ref[a]["util"]:
                o = ref[a]
                p99 = "inf" if h["q_p99_bytes"] == 0 else f'{o["q_p99_bytes"] / h["q_p99_bytes"]:.1f}x'
                st = ""
                if h["q_steady_p99_bytes"] and o["q_steady_p99_bytes"] is not None:
                    st = f' ({o["q_steady_p99_bytes"] / h["q_steady_p99_bytes"]:.1f}x from 0.5 s)'
                print(f'  hpcc vs {a}: utilization {h["util"] / o["util"]:.2f}x, p99 queue {a}/hpcc = {p99}{st}')
PY

[ -s "$FCT_JSON" ] || exit 0
python3 - "$FCT_JSON" "$RESULTS/fct.csv" <<'PY'
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
flat = [dict(algo=r["algo"], size=int(k), **v) for r in rows for k, v in r["sizes"].items()]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["algo", "size", "n", "ideal_ms", "p50_ms", "p90_ms",
                                      "p50_slowdown", "p90_slowdown"])
    w.writeheader()
    w.writerows(flat)
r0 = rows[0]
print(f'\nFlow completion times: short flows, one after another, next to one bulk flow of the same'
      f' algorithm; B = {r0["rate_mbit"]} Mbit/s, base RTT {r0["rtt_us"]} us, {r0["secs"]:.0f} s.'
      f' Slowdown = FCT / ideal (alone, idle link, no host delay).')
print(f'{"algo":7} {"size":>8} {"n":>4} {"ideal ms":>8} {"p50 ms":>8} {"p90 ms":>8} {"p50 slow":>8} {"p90 slow":>8}'
      f' {"bulk Mbit/s":>11} {"q p99 BDP":>9} {"util":>6}')
for r in rows:
    for k, v in r["sizes"].items():
        print(f'{r["algo"]:7} {int(k):>8} {v["n"]:>4} {v["ideal_ms"]:>8.2f} {v["p50_ms"]:>8.2f} {v["p90_ms"]:>8.2f}'
              f' {v["p50_slowdown"]:>8.2f} {v["p90_slowdown"]:>8.2f} {r["background_mbps"]:>11.1f}'
              f' {r["q_p99_bytes"] / r["bdp_bytes"]:>9.2f} {r.get("util", 0):>6.3f}')
by = {r["algo"]: r for r in rows}
if "hpcc" in by and "cubic" in by and by["cubic"].get("util"):
    print(f'  bottleneck utilization over the mix, hpcc/cubic: {by["hpcc"]["util"] / by["cubic"]["util"]:.2f}')
if "hpcc" in by:
    h = by["hpcc"]["sizes"]
    for a in (x for x in by if x != "hpcc"):
        o = by[a]["sizes"]
        rat = ", ".join(f'{int(k) // 1024} KiB {o[k]["p50_ms"] / h[k]["p50_ms"]:.1f}x/{o[k]["p90_ms"] / h[k]["p90_ms"]:.1f}x'
                        for k in h if k in o and h[k]["p50_ms"] and h[k]["p90_ms"])
        print(f'  FCT {a}/hpcc (p50/p90): {rat}')
bad = [f'{r["algo"]} {r.get("flows_failed")}' for r in rows if r.get("flows_failed") != 0]
if bad:
    print("  short flows without a correct reply (not timed): " + ", ".join(bad))
PY
