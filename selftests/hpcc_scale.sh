#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc's flow table at scale. Through the INT switch
# emulator (one sender, one switch, one receiver):
#
#  1. HPCC_SCALE_FLOWS (default 5,000; `make scale`: 50,000) concurrent hpcc connections from
#     one sender address to one server port (they differ only in the local
#     port, the case the old table placed in one 16-slot neighbourhood) all
#     connect and exchange three echoed rounds;
#  2. every one of them got flow state, none was refused;
#  3. more than 99% of those that sent data applied at least one response;
#  4. memory per flow: the hpcc_flow slab while they are open (reported);
#  5. all flow state is freed once they close;
#     and, reported: the cost of a table lookup on the response path
#     (hpcc_flow_lookup) at 1, 1,000 and N flows, timed by perf from kprobe
#     entry/return events, next to an empty shim function timed the same
#     way (the probes' own cost);
#  6. with max_flows_per_netns, a remote peer opening connections to a
#     server that uses hpcc fills only the server's netns: the server's
#     flows beyond the limit run the fallback (counted), while another
#     netns's flows all get telemetry.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

N=${HPCC_SCALE_FLOWS:-5000}
PORT=7000

ktap_begin 6 ip tc python3 modprobe perf
cleanup() {
	pkill -f hpcc_many.py 2>/dev/null
	knobs_reset max_flows_per_netns
	intsw_cleanup
}
trap cleanup EXIT
intsw_many_setup

start_echo() { # start_echo PORT: an echo server in ${HPCC_NS}-rcv
	ip netns exec ${HPCC_NS}-rcv python3 "$MANY" echo "$1" >"$OUT/echo.$1.log" 2>&1 &
	wait_listening ${HPCC_NS}-rcv "sport = :$1" 1
}

slab() { # slab FIELD: active_objs, objsize or bytes (slabs * pages * 4 KiB)
	awk -v f="$1" '$1 == "hpcc_flow" {
		if (f == "active_objs") print $2; else if (f == "objsize") print $4;
		else print $15 * $6 * 4096 }' /proc/slabinfo
}

# cost_start / cost_stop NAME: perf records kprobe entry and return of
# hpcc_flow_lookup (the table lookup of every response) and of
# hpcc_sock_net (an empty shim function: what the probes themselves cost);
# cost_stop prints "NAME: lookup MEAN ns (CALLS calls), empty function MEAN ns".
cost_start() {
	hpcc_tracefs
	local f
	for f in hpcc_flow_lookup hpcc_sock_net; do
		echo "p:hpcc_cost/${f}_in $f" >>$HPCC_TR/kprobe_events || return 1
		echo "r:hpcc_cost/${f}_out $f" >>$HPCC_TR/kprobe_events || return 1
	done
	perf record -q -a -o "$OUT/perf.data" -e 'hpcc_cost:*' >/dev/null 2>&1 &
	COST_PID=$!
	sleep 2
}
cost_stop() {
	kill -INT $COST_PID
	local i
	for i in $(seq 1 120); do kill -0 $COST_PID 2>/dev/null || break; sleep 1; done
	kill -9 $COST_PID 2>/dev/null
	wait $COST_PID 2>/dev/null
	perf script -i "$OUT/perf.data" -F cpu,time,event --ns 2>/dev/null | python3 -c '
import sys, collections
start, d = {}, collections.defaultdict(list)
for line in sys.stdin:
    p = line.split()
    if len(p) < 3:
        continue
    cpu, t, ev = p[0], float(p[1].rstrip(":")), p[2].rstrip(":").split(":")[-1]
    fn, io = ev.rsplit("_", 1)
    if io == "in":
        start[(cpu, fn)] = t
    elif (cpu, fn) in start:
        d[fn].append((t - start.pop((cpu, fn))) * 1e9)
m = lambda v: sum(v) / len(v) if v else 0
lk, e = d["hpcc_flow_lookup"], d["hpcc_sock_net"]
print(f"{sys.argv[1]}: lookup {m(lk):.0f} ns ({len(lk)} calls), empty function {m(e):.0f} ns")
' "$1"
	local f
	for f in hpcc_flow_lookup hpcc_sock_net; do
		echo "-:hpcc_cost/${f}_in" >>$HPCC_TR/kprobe_events
		echo "-:hpcc_cost/${f}_out" >>$HPCC_TR/kprobe_events
	done
}

# --- 1-5: N connections from one address to one port -------------------------
start_echo $PORT
: >"$OUT/cost.txt"
for n in 1 1000; do
	cost_start || break
	timeout 600 ip netns exec ${HPCC_NS}-s1 python3 "$MANY" many 10.0.2.1 $PORT $n \
		--rounds $((n == 1 ? 200 : 3)) >"$OUT/cost.$n.json" 2>&1
	cost_stop "$n flows" >>"$OUT/cost.txt"
done
ip netns exec ${HPCC_NS}-s1 python3 "$MANY" many 10.0.2.1 $PORT "$N" --rounds 3 --hold 20 --ports 1024 \
	>"$OUT/many.json" 2>"$OUT/many.err" &
many=$!
# Time lookups once all N are open (the first round's echoes).
( for i in $(seq 1 600); do [ "$(hpcc_stat flows ${HPCC_NS}-s1)" -ge "$N" ] && break; sleep 1; done
  cost_start && sleep 30 && cost_stop "$N flows" >>"$OUT/cost.txt" ) &
costjob=$!
# While they are held open: the slab and the counters.
peak=0
while kill -0 $many 2>/dev/null; do
	a=$(slab active_objs); [ "${a:-0}" -gt "$peak" ] && { peak=$a; slab bytes >"$OUT/slab_bytes"; }
	sleep 2
done
wait $many
wait $costjob
ktap_print_msg_lines <"$OUT/cost.txt"
res=$(cat "$OUT/many.json")
started=$(hpcc_stat flows_started ${HPCC_NS}-s1)
with=$(hpcc_stat flows_with_telemetry ${HPCC_NS}-s1)
refused=$(( $(hpcc_stat flows_without_state ${HPCC_NS}-s1) + $(hpcc_stat flows_over_netns_limit ${HPCC_NS}-s1) +
	$(hpcc_stat flows_churn_deferred ${HPCC_NS}-s1) ))
ktap_print_msg "$N connections: $res"
ktap_print_msg "flow state: started $started, with telemetry $with, refused $refused"
t_connect() {
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); n=int(sys.argv[2]);
sys.exit(0 if r["connected"] == n and r["echoed"] == n else 1)' "$OUT/many.json" "$N"
}
ktap_check "all_${N}_connections_up_and_echoed" t_connect
t_state() { [ "$started" -ge "$N" ] && [ "$refused" -eq 0 ]; }
ktap_check "every_connection_got_flow_state" t_state
t_telemetry() { [ "$started" -gt 0 ] && [ $((with * 1000 / started)) -gt 990 ]; }
ktap_check "over_99pct_applied_a_response" t_telemetry
bytes=$(cat "$OUT/slab_bytes" 2>/dev/null || echo 0)
ktap_print_msg "hpcc_flow slab at peak: $peak objects of $(slab objsize) B, $bytes B in slabs ($((bytes / (peak > 0 ? peak : 1))) B per flow)"
t_mem() { [ "$peak" -ge "$N" ]; }
ktap_check "slab_holds_one_object_per_flow" t_mem
t_freed() {
	local i
	for i in $(seq 1 60); do
		[ "$(hpcc_stat flows ${HPCC_NS}-s1)" -eq 0 ] && return 0
		sleep 1
	done
	echo "flows still allocated: $(hpcc_stat flows ${HPCC_NS}-s1), pending free $(hpcc_stat flows_pending_free ${HPCC_NS}-s1)"
	return 1
}
ktap_check "flow_state_freed_after_close" t_freed

# --- 6: a per-netns limit isolates namespaces ----------------------------------
LIMIT=1000
t_isolation() {
	echo $LIMIT >"$P/max_flows_per_netns" || return 1
	ip netns exec ${HPCC_NS}-rcv sysctl -qw net.ipv4.tcp_congestion_control=hpcc || return 1
	start_echo $((PORT + 1)) || return 1
	local srv0 lim0 vic0 vic1
	lim0=$(hpcc_stat flows_over_netns_limit ${HPCC_NS}-rcv)
	vic0=$(hpcc_stat flows_with_telemetry ${HPCC_NS}-s1)
	# The remote peer: 2 x LIMIT cubic connections, each answered by an
	# hpcc server socket in hpcc-rcv (the echo is data: flow state).
	ip netns exec ${HPCC_NS}-s2 python3 "$MANY" many 10.0.2.1 $((PORT + 1)) $((2 * LIMIT)) \
		--cc cubic --rounds 3 --hold 30 >"$OUT/peer.json" 2>&1 &
	local peer=$! i
	for i in $(seq 1 120); do
		[ "$(hpcc_stat flows ${HPCC_NS}-rcv)" -ge $LIMIT ] && break
		sleep 1
	done
	# Meanwhile, in another netns: 200 hpcc connections.
	ip netns exec ${HPCC_NS}-s1 python3 "$MANY" many 10.0.2.1 $PORT 200 --rounds 3 >"$OUT/victim.json" 2>&1
	vic1=$(hpcc_stat flows_with_telemetry ${HPCC_NS}-s1)
	wait $peer
	local over=$(( $(hpcc_stat flows_over_netns_limit ${HPCC_NS}-rcv) - lim0 ))
	echo "server netns: flows over the limit $over; other netns: $((vic1 - vic0)) of 200 flows with telemetry; $(cat "$OUT/victim.json")"
	ip netns exec ${HPCC_NS}-rcv sysctl -qw net.ipv4.tcp_congestion_control=cubic
	knobs_reset max_flows_per_netns
	[ "$over" -ge $LIMIT ] && [ $((vic1 - vic0)) -ge 198 ]
}
t_isolation >"$OUT/isolation.txt" 2>&1; rc=$?
ktap_print_msg_lines <"$OUT/isolation.txt"
if [ $rc -eq 0 ]; then ktap_test_pass "netns_limit_isolates_namespaces"; else ktap_test_fail "netns_limit_isolates_namespaces"; fi

ktap_finished
