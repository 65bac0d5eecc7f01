#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# N:1 incast benchmark, guest side (`make incast` runs it through vm/run):
# N senders (hpcc-s1..N) and a victim (hpcc-s<N+1>) through one emulated
# bottleneck port (hpcc-sw1/rcv: 100 Mbit/s, base RTT 2 ms split around
# the port, buffer 4 BDP, ECN marking at K = BDP/4 for dctcp) to hpcc-rcv.
# Each sender sends one message of 64-256 KiB at the same instant
# (incast.py: sizes drawn per repetition, the same for every run of it);
# the victim runs 8 KiB request/response RPCs across the same port. Every
# algorithm runs with Source Flow Control off and on, in the same boot:
#   off: the port does not signal, sfc_enable 0;
#   on:  the port signals (intsw_sfc defaults: trigger K, target K/10),
#        sfc_enable 1, sfc_acl the switches' addresses, sfc_ifaces the
#        senders' eth0, sfc_scope 1 (dctcp
#        and cubic flows are held at egress); the module's other settings
#        are its defaults.
# Senders pace in sch_fq (the qdisc SFC's pause relies on). Writes
# $HPCC_RESULTS/incast.jsonl, one line per run, and prints a table and the
# on/off ratios per algorithm. Environment: INCAST_SENDERS (8),
# INCAST_REPS (3), INCAST_ALGOS ("hpcc dctcp cubic"), INCAST_FAMILY (4|6).
#
# Fields: algo, sfc, senders, rep, family, drops, late_drops (drops later
# than two base RTTs after the first byte was sent), q_p50_bdp, q_p99_bdp
# (the port's backlog seen by arriving packets from the second base RTT of
# the incast to its end), q_max_bdp, completion_ms (first byte sent to last
# byte received), start_spread_ms (first to last sender's first byte: the
# senders share the guest's CPU), ideal_ms (all bytes at B plus one base RTT), util (the
# port's departures over the incast, first arrival to last departure),
# signals_sent (by the port), signals_applied (by the senders' modules,
# applied at once or on the next ACK), sfc_rejected (received but not
# applied, by reason), victim_rpcs, victim_p50_us, victim_p99_us (RPCs
# in progress during the incast), complete (every byte arrived), timeouts (the
# N senders' retransmission timeouts, TcpExtTCPTimeouts: a sender waiting
# in one leaves the port, and so the victim, a calmer queue), victim_fair_us
# (the victim's 8 KiB RPC on the wire at 1/(N+1) of the port, plus one base
# RTT: its time at a fair share).
set -u
. "$(dirname "$0")/../selftests/lib.sh"
here=$HPCC_LIB/py
. "$HPCC_LIB/sh/int_switch.sh"
. "$HPCC_LIB/sh/bench_lib.sh"

N=${INCAST_SENDERS:-8}
REPS=${INCAST_REPS:-3}
ALGOS=${INCAST_ALGOS:-hpcc dctcp cubic}
FAMILY=${INCAST_FAMILY:-4}
RATE_MBIT=100
RTT_US=2000
BDP=$((RATE_MBIT * 1000000 / 8 * RTT_US / 1000000))
JSON=$RESULTS/incast.jsonl
PY=${INTSW_PY:-python3}
mkdir -p "$OUT"
: >"$JSON"

load_module || { echo "incast: cannot load tcp_hpcc"; exit 1; }
intsw_build >/dev/null || { echo "incast: cannot build the switch emulator"; exit 1; }
cleanup() {
	knobs_reset sfc_enable sfc_scope sfc_acl sfc_ifaces
	intsw_cleanup
}
trap cleanup EXIT

intsw_topo_fanin $((N + 1)) rate_mbit=$RATE_MBIT rtt_us=$RTT_US split=1 buffer=$((4 * BDP)) \
	ecn_k=$((BDP / 4)) >"$OUT/topo.log" 2>&1 || { cat "$OUT/topo.log"; exit 1; }
senders=()
for i in $(seq 1 $((N + 1))); do senders+=("${HPCC_NS}-s$i"); done
if [ "$FAMILY" = 6 ]; then
	intsw_ipv6 $((N + 1)) 1 || exit 1
	DST=fd00:2::1
else
	DST=10.0.2.1
fi
_bench_fq "${senders[@]}"
for ns in "${senders[@]}" ${HPCC_NS}-rcv; do
	# Every run starts from the same state: nothing learned from the last.
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_no_metrics_save=1
done
sender_list=$(IFS=,; echo "${senders[*]:0:N}")
victim=${HPCC_NS}-s$((N + 1))

sfc_sum() { # the senders' sfc_ counters, summed, as JSON
	local ns
	for ns in "${senders[@]}"; do ip netns exec "$ns" cat /proc/net/hpcc_stat; done |
		awk '/^sfc_/ { v[$1] += $2 } END { printf "{"; s = ""; for (k in v) { printf "%s\"%s\": %d", s, k, v[k]; s = ", " } print "}" }'
}

timeouts() { # timeouts NS...: their retransmission timeouts, summed
	local ns
	for ns in "$@"; do ip netns exec "$ns" nstat -asz TcpExtTCPTimeouts; done |
		awk '$1 == "TcpExtTCPTimeouts" { n += $2 } END { print n + 0 }'
}

sfc_mode() { # sfc_mode 0|1
	if [ "$1" = 1 ]; then
		intsw_sfc ${HPCC_NS}-sw1 rcv >/dev/null || return 1
		echo 10.255.0.0/24,fd00:ff::/64 >$P/sfc_acl && echo eth0 >$P/sfc_ifaces && echo 1 >$P/sfc_enable &&
			echo 1 >$P/sfc_scope
	else
		intsw_sfc ${HPCC_NS}-sw1 rcv trigger=0 >/dev/null || return 1
		knobs_reset sfc_enable sfc_acl sfc_ifaces sfc_scope
	fi
}

for rep in $(seq 0 $((REPS - 1))); do
	sizes=$("$PY" "$here/incast.py" sizes "$N" "$rep")
	for algo in $ALGOS; do
		for sfc in 0 1; do
			tag=$algo-sfc$sfc-rep$rep
			echo "incast: $algo, SFC $sfc, $N:1, repetition $rep" >&2
			sfc_mode "$sfc" || { echo "incast: cannot set SFC $sfc" >&2; exit 1; }
			intsw_reset ${HPCC_NS}-sw1 rcv
			sfc_sum >"$OUT/$tag.sfc0"
			rto0=$(timeouts "${senders[@]:0:N}")
			ip netns exec ${HPCC_NS}-rcv sysctl -qw net.ipv4.tcp_congestion_control="$algo"
			"$PY" "$here/incast.py" run --senders "$sender_list" --to ${HPCC_NS}-rcv --dst "$DST" \
				--sizes "$sizes" --cc "$algo" --victim "$victim" >"$OUT/$tag.run" 2>"$OUT/$tag.err" ||
				echo "incast: $tag: $(tail -1 "$OUT/$tag.err")" >&2
			sleep 0.2
			sfc_sum >"$OUT/$tag.sfc1"
			echo $(($(timeouts "${senders[@]:0:N}") - rto0)) >"$OUT/$tag.rto"
			"$PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir ${HPCC_NS}-sw1 rcv)" >"$OUT/$tag.log"
			intsw_stats ${HPCC_NS}-sw1 rcv --json >"$OUT/$tag.port"
			"$PY" - "$here" "$OUT/$tag" "$algo" "$sfc" "$N" "$rep" "$FAMILY" $((RATE_MBIT * 1000000)) \
				"$RTT_US" >>"$JSON" <<-'EOF' || echo "incast: $tag: no metrics" >&2
				import json, sys
				here, base, algo, sfc, n, rep, fam, rate, rtt = sys.argv[1:]
				sys.path.insert(0, here)
				import incast
				m = incast.metrics(base + ".log", base + ".run", int(rate), int(rtt))
				port = json.load(open(base + ".port"))
				s0, s1 = json.load(open(base + ".sfc0")), json.load(open(base + ".sfc1"))
				d = {k: s1[k] - s0.get(k, 0) for k in s1}
				rej = {k[4:]: v for k, v in d.items() if v and k not in
				       ("sfc_received", "sfc_applied", "sfc_deferred", "sfc_applied_egress",
				        "sfc_window_cuts", "sfc_egress_held")}
				r = {"algo": algo, "sfc": int(sfc), "senders": int(n), "rep": int(rep), "family": int(fam)}
				r.update(m)
				r.update({"signals_sent": port.get("sfc_signals_sent", 0),
				          "signals_received": d.get("sfc_received", 0),
				          "signals_applied": d.get("sfc_applied", 0) + d.get("sfc_deferred", 0)
				          + d.get("sfc_applied_egress", 0),
				          "egress_held": d.get("sfc_egress_held", 0),
				          "window_cuts": d.get("sfc_window_cuts", 0), "sfc_rejected": rej,
				          "ce_marks": port["ce_marks"], "timeouts": int(open(base + ".rto").read()),
				          "victim_fair_us": incast.victim_fair_us(8192, int(n), int(rate), int(rtt), int(fam))})
				print(json.dumps(r))
			EOF
		done
	done
done

"$PY" - "$JSON" <<'EOF'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if not rows:
    sys.exit("incast: no runs")
r0 = rows[0]
print(f'\nIncast {r0["senders"]}:1 (IPv{r0["family"]}), 100 Mbit/s, base RTT 2 ms, buffer 4 BDP; '
      f'medians over {len({r["rep"] for r in rows})} repetitions')
cols = ["drops", "late_drops", "q_p50_bdp", "q_p99_bdp", "q_max_bdp", "completion_ms", "ideal_ms",
        "util", "signals_sent", "signals_applied", "victim_p99_us", "timeouts"]
print(f'{"algo":6} {"sfc":>3} ' + " ".join(f"{c:>13}" for c in cols))
med = {}
for algo in dict.fromkeys(r["algo"] for r in rows):
    for sfc in (0, 1):
        rs = [r for r in rows if r["algo"] == algo and r["sfc"] == sfc]
        if not rs:
            continue
        m = {c: st.median([r[c] for r in rs if r[c] is not None] or [0]) for c in cols}
        med[algo, sfc] = m
        bad = sum(1 for r in rs if not r["complete"])
        print(f'{algo:6} {sfc:>3} ' + " ".join(f"{m[c]:>13.3f}" if isinstance(m[c], float) else f"{m[c]:>13}" for c in cols)
              + (f"  ({bad} incomplete)" if bad else ""))
for algo in dict.fromkeys(r["algo"] for r in rows):
    if (algo, 0) in med and (algo, 1) in med:
        a, b = med[algo, 0], med[algo, 1]
        rat = lambda c: "n/a" if not a[c] else f"{b[c] / a[c]:.2f}"
        print(f'  {algo} SFC on/off: drops {b["drops"]}/{a["drops"]}, late drops {b["late_drops"]}/{a["late_drops"]},'
              f' q p99 {rat("q_p99_bdp")}x, completion {rat("completion_ms")}x, victim p99 {rat("victim_p99_us")}x')
        # Per repetition: a sender in a retransmission timeout leaves the
        # victim a calmer port, so its p99 follows the timeouts.
        per = lambda s: ", ".join(f'{r["timeouts"]} / {(r["victim_p99_us"] or 0) / 1e3:.1f} ms'
                                  for r in sorted((r for r in rows if r["algo"] == algo and r["sfc"] == s),
                                                  key=lambda r: r["rep"]))
        print(f'    per repetition (timeouts / victim p99), SFC off: {per(0)}; on: {per(1)}')
EOF
