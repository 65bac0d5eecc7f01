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
#  5. hpcc: the victim's p99 RPC latency lower with SFC on (RPCs in
#     progress during the incast);
#  6. dctcp and cubic (held at egress, sfc_scope 1): fewer drops with SFC
#     on (the ratios are reported).
#
# `make incast` runs it in virtual time (QEMU -icount: the network's timing
# is the emulation's, not the shared host's) with 16 senders.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.
set -u
here=$(dirname "$0")
. "$here/lib.sh"

RESULTS=${HPCC_RESULTS:-/tmp}
JSON=$RESULTS/incast.jsonl

require_root_and_vm
require_tools ip tc bpftool clang python3 modprobe

ktap_print_header

ktap_set_plan 6
"$here/incast.sh" >"$RESULTS/incast.txt" 2>"$RESULTS/incast.err"
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
ktap_check "hpcc_sfc_on_lowers_victim_p99" \
	check '0 < m["hpcc", 1]["victim_p99_us"] < m["hpcc", 0]["victim_p99_us"]'
ktap_check "dctcp_and_cubic_drop_less_with_sfc_on" \
	check 'all(m[a, 1]["drops"] < m[a, 0]["drops"] for a in ("dctcp", "cubic") if (a, 0) in m)'
ktap_finished
