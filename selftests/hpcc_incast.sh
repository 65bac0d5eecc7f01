#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: the incast acceptance checks of Source Flow Control. Runs the
# incast benchmark (incast.sh: N:1 through one 100 Mbit/s port, base RTT
# 2 ms, buffer 4 BDP; hpcc, dctcp and cubic, each with SFC off and on in
# this boot, INCAST_REPS repetitions) and checks, on the medians over the
# repetitions:
#
#  1. every run delivered every byte; with SFC off the port sent no
#     signal, with SFC on the senders applied some;
#  2. hpcc, SFC on: no late drop (after the first two base RTTs) in any
#     repetition;
#  3. hpcc: the p99 queue with SFC on at most half of the one with it off;
#  4. hpcc: completion with SFC on at most 1.05 times the one with it off;
#  5. hpcc, SFC on: the victim's p99 RPC latency (RPCs in progress during
#     the incast) at most 1.15 times its fair-share RPC time
#     (victim_fair_us); and, in the repetitions where no sender timed out
#     with SFC off or on, at most SFC off's;
#  6. dctcp and cubic (held at egress, sfc_scope 1): fewer drops with SFC
#     on (the ratios are reported);
#  7. IPv6 works the same: a 4:1 incast of hpcc, SFC off and on, once
#     over IPv4 and once over IPv6 in this boot (INCAST_FAMILY_SENDERS,
#     4; 0 skips it): over IPv6 too every run completes and SFC on
#     signals, applies and has no late drop; per SFC setting, drops within
#     one packet of IPv4's, signals applied within 10%, completion within
#     15% and p99 queue within 25%: the spread between repetitions of one
#     family (measured: completion 71-99 ms, the SFC-on p99 1.17-1.47 BDP,
#     in two clusters whichever the family).
#
# `make incast` runs it in virtual time (QEMU -icount: the network's timing
# is the emulation's, not the shared host's) with 16 senders.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.
set -u
. "$(dirname "$0")/lib.sh"

JSON=$RESULTS/incast.jsonl

ktap_begin 8 ip tc bpftool clang python3 modprobe
"$HPCC_ROOT/bench/incast.sh" >"$RESULTS/incast.txt" 2>"$RESULTS/incast.err"
ktap_print_msg_lines <"$RESULTS/incast.txt"
[ -s "$JSON" ] || { ktap_print_msg_lines <"$RESULTS/incast.err"; ktap_test_fail "incast_ran"; ktap_finished; }

# check 'PYTHON EXPRESSION over m[algo, sfc] (medians) and rows'
check() {
	python3 - "$JSON" "$1" <<-'EOF'
		import json, statistics as st, sys
		rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
		keys = [k for k, v in rows[0].items() if isinstance(v, (int, float))]
		m = {}
		for r in rows:
		    m.setdefault((r["algo"], r["sfc"]), []).append(r)
		m = {a: {k: st.median([r[k] for r in rs if r.get(k) is not None] or [0]) for k in keys}
		     for a, rs in m.items()}
		ok = eval("(" + sys.argv[2] + ")")
		sys.exit(0 if ok else 1)
	EOF
}

t_complete() {
	check 'all(r["complete"] for r in rows)
	       and all(r["signals_sent"] == 0 for r in rows if r["sfc"] == 0)
	       and all(r["signals_applied"] > 0 for r in rows if r["sfc"] == 1)'
}
ktap_check "every_run_complete_signals_only_with_sfc_on" t_complete
ktap_check "hpcc_sfc_on_no_late_drops" \
	check 'all(r["late_drops"] == 0 for r in rows if r["algo"] == "hpcc" and r["sfc"] == 1)'
ktap_check "hpcc_sfc_on_halves_p99_queue" \
	check 'm["hpcc", 1]["q_p99_bdp"] <= 0.5 * m["hpcc", 0]["q_p99_bdp"]'
ktap_check "hpcc_sfc_on_completion_within_5pct" \
	check 'm["hpcc", 1]["completion_ms"] <= 1.05 * m["hpcc", 0]["completion_ms"]'
ktap_check "hpcc_sfc_on_victim_p99_within_1_15x_fair_share" \
	check '0 < m["hpcc", 1]["victim_p99_us"] <= 1.15 * m["hpcc", 1]["victim_fair_us"]'
# Where no sender timed out (a sender waiting out a timeout leaves the
# victim a calmer port, which SFC is not): SFC on no slower than off.
ktap_check "hpcc_sfc_on_victim_p99_le_off_without_timeouts" \
	check 'all(on["victim_p99_us"] <= off["victim_p99_us"]
	           for off in rows if off["algo"] == "hpcc" and off["sfc"] == 0 and off["timeouts"] == 0
	           for on in rows if on["algo"] == "hpcc" and on["sfc"] == 1 and on["rep"] == off["rep"]
	           and on["timeouts"] == 0)'
ktap_check "dctcp_and_cubic_drop_less_with_sfc_on" \
	check 'all(m[a, 1]["drops"] < m[a, 0]["drops"] for a in ("dctcp", "cubic") if (a, 0) in m)'

# 7. The same incast over IPv4 and IPv6, smaller (each family builds its
# own topology).
FN=${INCAST_FAMILY_SENDERS:-4}
t_families() {
	local fam
	for fam in 4 6; do
		mkdir -p "$RESULTS/family$fam"
		HPCC_RESULTS=$RESULTS/family$fam INCAST_SENDERS=$FN INCAST_FAMILY=$fam INCAST_ALGOS=hpcc \
			"$HPCC_ROOT/bench/incast.sh" >"$RESULTS/family$fam/incast.txt" 2>"$RESULTS/family$fam/incast.err" || return 1
		grep -E '^(Incast|  hpcc)' "$RESULTS/family$fam/incast.txt"
	done
	python3 - "$RESULTS/family4/incast.jsonl" "$RESULTS/family6/incast.jsonl" <<-'EOF'
		import json, statistics as st, sys
		load = lambda f: [json.loads(l) for l in open(f) if l.strip()]
		v4, v6 = load(sys.argv[1]), load(sys.argv[2])
		med = lambda rows, sfc, k: st.median([r[k] for r in rows if r["sfc"] == sfc])
		ok = bool(v4) and bool(v6) and all(r["family"] == 6 for r in v6) and all(r["complete"] for r in v4 + v6)
		ok &= all(r["signals_applied"] > 0 and r["late_drops"] == 0 for r in v6 if r["sfc"] == 1)
		tol = {"signals_applied": 0.10, "completion_ms": 0.15, "q_p99_bdp": 0.25}
		for sfc in (0, 1):
		    d4, d6 = med(v4, sfc, "drops"), med(v6, sfc, "drops")
		    line = [f"SFC {sfc}: drops {d6}/{d4}"]
		    ok &= abs(d6 - d4) <= 1
		    for k, t in tol.items():
		        if sfc == 0 and k == "signals_applied":
		            continue  # none without SFC
		        a, b = med(v4, sfc, k), med(v6, sfc, k)
		        line.append(f"{k} {b:.3f}/{a:.3f} ({b / a:.2f}x)" if a else f"{k} {b}/{a}")
		        ok &= a > 0 and abs(b / a - 1) <= t
		    print("IPv6/IPv4, " + ", ".join(line))
		sys.exit(0 if ok else 1)
	EOF
}
if [ "$FN" -gt 0 ]; then
	ktap_check_v "ipv6_incast_works_as_ipv4" t_families
else
	ktap_test_skip "ipv6_incast_works_as_ipv4" "INCAST_FAMILY_SENDERS 0"
fi
ktap_finished
