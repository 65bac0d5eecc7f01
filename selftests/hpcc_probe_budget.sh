#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: the probe budget at 10,000 connections. Through the INT switch
# emulator (one sender netns, one switch, one receiver netns), with
# probe_budget and response_budget set to HPCC_BUDGET (default 200 a
# second, low enough for the slow guest to exceed it) in both namespaces:
#
#  1. HPCC_BUDGET_FLOWS (default 10,000) hpcc connections open;
#  2. they want more probes than the budget: 20 slots of 2 s, in each of
#     which one group of a 40th of them (250) writes 1 KB every 500 ms each
#     (each write after idle wants a probe: 500 a second), so the budget
#     holds some back (probes_held_share);
#  3. the sender's probes, sampled every half second, never exceed the
#     budget plus one burst (32) over any sampled interval of a second or
#     more (each sample bracketed by the uptimes just before and after it);
#  4. nor do the receiver's responses;
#  5. every connection that wrote in a slot applied telemetry after its
#     first write of the slot (a sample in /proc/net/hpcc_flows younger
#     than that write), reported with the ages of the last samples in
#     probe intervals (age / T).
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

N=${HPCC_BUDGET_FLOWS:-10000}
BUDGET=${HPCC_BUDGET:-200}
BURST=32
PORT=7100

ktap_begin 5 ip tc python3 modprobe
cleanup() {
	pkill -f hpcc_many.py 2>/dev/null
	[ -n "${SAMPLERS:-}" ] && kill $SAMPLERS 2>/dev/null
	pkill -f /proc/net/hpcc_stat 2>/dev/null
	knobs_reset probe_budget response_budget
	intsw_cleanup
}
trap cleanup EXIT
intsw_many_setup
echo "$BUDGET" >"$P/probe_budget" && echo "$BUDGET" >"$P/response_budget" ||
	{ ktap_test_fail "budget_set"; ktap_finished; }

ip netns exec ${HPCC_NS}-rcv python3 "$MANY" echo $PORT >"$OUT/budget_echo.log" 2>&1 &
wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1

# Each namespace's counters every half second, from one process each:
# "before counter value after" lines, the uptimes read just before and
# after the counter (the slow guest can stop a sampler between the two).
# The function becomes the sampler (exec), so that its PID is the loop's.
sample() { # sample NS COUNTER... >FILE
	local ns=$1
	shift
	exec ip netns exec "$ns" sh -c 'while :; do
		for c in "$@"; do
			b=$(cut -d" " -f1 /proc/uptime)
			v=$(awk -v c="$c" "\$1 == c { print \$2 }" /proc/net/hpcc_stat)
			echo "$b $c $v $(cut -d" " -f1 /proc/uptime)"
		done
		sleep 0.5
	done' sample "$@"
}
sample ${HPCC_NS}-s1 probes_sent probes_held_share probes_held_budget >"$OUT/budget_s1.txt" &
SAMPLERS=$!
sample ${HPCC_NS}-rcv responses_sent probes_over_response_budget >"$OUT/budget_rcv.txt" &
SAMPLERS="$SAMPLERS $!"

timeout 1800 ip netns exec ${HPCC_NS}-s1 python3 "$MANY" pulse 10.0.2.1 $PORT "$N" --bytes 1000 \
	--groups 40 --every 500 --slot 2 --slots 20 --ports 1024 >"$OUT/budget_pulse.json" 2>"$OUT/budget_pulse.err"
kill $SAMPLERS 2>/dev/null
SAMPLERS=

res=$(cat "$OUT/budget_pulse.json" 2>/dev/null)
ktap_print_msg "$N connections, budget $BUDGET/s: $(python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); print({k: r[k] for k in ("connected", "failed", "writes", "secs")})' \
	"$OUT/budget_pulse.json" 2>/dev/null)"
while read -r line; do ktap_print_msg "$line"; done < <(python3 -c 'import json,sys
for s in json.load(open(sys.argv[1]))["slots"]:
    print("slot %(slot)d (%(secs)s s): %(wrote)d wrote, %(listed)d with flow state, %(fresh)d applied telemetry"
          " since; last sample age in probe intervals p50 %(age_t_p50)s p99 %(age_t_p99)s max %(age_t_max)s" % s)' \
	"$OUT/budget_pulse.json" 2>/dev/null)

# max_rate FILE COUNTER: over any two samples at least 1 s apart, the
# largest (increase - BURST) / (the longest time the increase can have
# taken): a token bucket keeps it within its rate.
max_rate() {
	awk -v c="$2" -v b=$BURST '$2 == c { tb[n] = $1; v[n] = $3; ta[n++] = $4 }
		END { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (tb[j] - ta[i] >= 1) {
			r = (v[j] - v[i] - b) / (ta[j] - tb[i]); if (r > m) m = r; break } printf "%d\n", m }' "$1"
}
grew() { # grew FILE COUNTER: its increase over the run
	awk -v c="$2" '$2 == c { if (!s) { a = $3; s = 1 } b = $3 } END { print b - a }' "$1"
}
probes_max=$(max_rate "$OUT/budget_s1.txt" probes_sent)
resp_max=$(max_rate "$OUT/budget_rcv.txt" responses_sent)
held=$(grew "$OUT/budget_s1.txt" probes_held_share)
ktap_print_msg "probes: most a second (less a burst) $probes_max, sent $(grew "$OUT/budget_s1.txt" probes_sent)," \
	"held for their share $held, held by the bucket $(grew "$OUT/budget_s1.txt" probes_held_budget);" \
	"responses: most a second $resp_max, sent $(grew "$OUT/budget_rcv.txt" responses_sent)," \
	"over the response budget $(grew "$OUT/budget_rcv.txt" probes_over_response_budget)"

t_connected() {
	python3 -c 'import json,sys; r = json.load(open(sys.argv[1]))
sys.exit(0 if r["connected"] == int(sys.argv[2]) else 1)' "$OUT/budget_pulse.json" "$N"
}
ktap_check "all_${N}_connections_up" t_connected
t_binds() { [ "$held" -gt 0 ]; }
ktap_check "the_budget_binds" t_binds
t_probes() { [ "$probes_max" -le "$BUDGET" ] && [ "$(grew "$OUT/budget_s1.txt" probes_sent)" -gt 0 ]; }
ktap_check "probes_per_second_within_the_budget" t_probes
t_responses() { [ "$resp_max" -le "$BUDGET" ]; }
ktap_check "responses_per_second_within_the_budget" t_responses
t_fresh() {
	python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))["slots"]
sys.exit(0 if s and all(x["wrote"] > 0 and x["fresh"] == x["wrote"] for x in s) else 1)' "$OUT/budget_pulse.json"
}
ktap_check "every_writing_connection_applied_telemetry_in_each_slot" t_fresh

ktap_finished
