#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc under stress, meant for the debug kernel (`make
# stress`: KASAN, kmemleak, lockdep with PROVE_RCU, debug objects,
# DEBUG_NET, refcount trackers, failslab, Rust overflow checks, booted with
# panic_on_warn). For HPCC_STRESS_SECS (default 600) s all at once, then
# the churn and the storm alone until the connections are done and the
# storm is sent:
#
#  - HPCC_STRESS_CONNS (default 20,000) short hpcc connections opened and
#    closed through the INT switch emulator;
#  - congestion control switched hpcc <-> cubic with setsockopt in every
#    TCP state (listener, SYN_SENT, ESTABLISHED, FIN_WAIT, an accepted
#    child, CLOSE_WAIT);
#  - a storm of >= HPCC_STRESS_HOSTILE (default 10^6) hostile probes and
#    responses toward both the sender and the receiver (every malformed
#    variant the parser knows, random bytes, well-formed ones for 4-tuples
#    with no flow or socket);
#  - module parameters written (valid and invalid values) while flows run;
#  - network namespaces deleted while their hpcc flows are live;
#  - failslab on the module's slab cache (hpcc_flow) for the middle third.
#
# Then, 10 times: rmmod as soon as the last hpcc socket is gone, and load
# again. Last a kmemleak scan, and the kernel log's splats (WARN, BUG,
# KASAN, lockdep, RCU, debug-objects reports and leaks) are counted:
# "splats: N".
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

SECS=${HPCC_STRESS_SECS:-600}
CONNS=${HPCC_STRESS_CONNS:-20000}
HOSTILE=${HPCC_STRESS_HOSTILE:-1000000}
DBG=/sys/kernel/debug
PORT=7000        # echo server, cubic
HPORT=7001       # echo server, hpcc (server sockets get flow state too)
DROP=7999        # SYNs to this port are dropped: SYN_SENT

ktap_begin 9 ip tc python3 modprobe rmmod nft
mountpoint -q $DBG || mount -t debugfs none $DBG
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	pkill -f hpcc_many.py 2>/dev/null
	pkill -f hpcc_flow.py 2>/dev/null
	[ -w $DBG/failslab/probability ] && echo 0 >$DBG/failslab/probability
	ip netns del ${HPCC_NS}-x1 2>/dev/null
	ip netns del ${HPCC_NS}-x2 2>/dev/null
	intsw_cleanup
}
trap cleanup EXIT
# Count only what this run causes: the kernel log and kmemleak's list of
# suspects so far (boot) are cleared.
dmesg -c >/dev/null 2>&1 || true
[ -w $DBG/kmemleak ] && echo clear >$DBG/kmemleak
# kmemleak's periodic scan walks all tracked memory under its lock every
# 10 min (minutes of a vCPU under TCG); the explicit scans at the end find
# every leak the periodic ones would.
[ -w $DBG/kmemleak ] && echo scan=off >$DBG/kmemleak
start=$(date +%s)
ktap_need emulator_builds intsw_build
ktap_need module_loads load_module
ulimit -n 1048576
intsw_topo_many || { ktap_test_fail "topology"; ktap_finished; }
ip netns exec ${HPCC_NS}-rcv nft -f - <<NFT || { ktap_test_fail "drop_rule"; ktap_finished; }
table inet hpcc_stress {
	chain in {
		type filter hook input priority 0;
		tcp dport $DROP drop
	}
}
NFT
ip netns exec ${HPCC_NS}-rcv python3 "$MANY" echo $PORT >"$OUT/echo.log" 2>&1 &
pids+=($!)
ip netns exec ${HPCC_NS}-rcv sh -c "sysctl -qw net.ipv4.tcp_congestion_control=hpcc &&
	exec python3 $MANY echo $HPORT" >"$OUT/echo-hpcc.log" 2>&1 &
pids+=($!)
wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 && wait_listening ${HPCC_NS}-rcv "sport = :$HPORT" 1 ||
	{ ktap_test_fail "echo_servers"; ktap_finished; }

# All loads run at once for SECS from here (set-up under KASAN takes
# minutes); then the toggles, the parameter writes and the netns deletions
# stop ($STOP) and the churn and the storm go on until they have made
# CONNS connections and sent HOSTILE packets. The mixed loads start a
# python process or a netns every few seconds: beside them the storm
# sends about 60 packets per second and direction instead of about 400
# alone, so keeping them for the whole churn would triple the run, not its
# coverage.
load=$(date +%s)
end=$((load + SECS))
STOP=$OUT/stop
rm -f "$STOP"
running() { [ ! -e "$STOP" ]; }

# --- the load, all at once -----------------------------------------------------
# What costs what here (the debug kernel under TCG, each load alone): 300
# short connections in 38 s from one process, 2 x 150 in 25 s from two;
# 3000 hostile packets in 19.4 s through the switch, in 13.6 s to the
# target's own address (loopback), and tcpreplay on loopback no faster
# (230 per second): the kernel's receive path, not the sender, is the
# cost. So the churn runs as two processes (one per sender netns) and the
# storm enters each target through its loopback.
#
# Churn: CONNS short connections, half to each server, at once.
ip netns exec ${HPCC_NS}-s1 python3 "$MANY" churn 10.0.2.1 $PORT $((CONNS / 2)) --parallel 32 --bytes 2000 \
	>"$OUT/churn.json" 2>"$OUT/churn.err" &
churn=$!
ip netns exec ${HPCC_NS}-s2 python3 "$MANY" churn 10.0.2.1 $HPORT $((CONNS - CONNS / 2)) --parallel 32 --bytes 2000 \
	>"$OUT/churn-hpcc.json" 2>"$OUT/churn-hpcc.err" &
churn2=$!
# Toggling in every state, until the end.
ip netns exec ${HPCC_NS}-s1 python3 "$MANY" toggle 10.0.2.1 $PORT $DROP 86400 --stop "$STOP" \
	>"$OUT/toggle.json" 2>"$OUT/toggle.err" &
toggle=$!
# The storm: into the receiver's hooks (probes and responses) and the
# sender's, each from a raw socket in that netns to its own address.
ip netns exec ${HPCC_NS}-rcv python3 "$FLOW" storm 86400 $((HOSTILE / 2)) --src 10.1.2.1 --dst 10.0.2.1 \
	>"$OUT/storm-rcv.json" 2>"$OUT/storm-rcv.err" &
storm1=$!
ip netns exec ${HPCC_NS}-s1 python3 "$FLOW" storm 86400 $((HOSTILE - HOSTILE / 2)) --src 10.0.2.1 --dst 10.1.1.1 \
	>"$OUT/storm-snd.json" 2>"$OUT/storm-snd.err" &
storm2=$!
# Parameters: valid and invalid values, restored at the end.
params_loop() {
	local writes=0 refused=0 k v
	local -A saved
	for k in eta_ppm probe_interval_us base_rtt_us telemetry max_flows_per_netns max_stage \
		pace_srtt_cap_pct window_validation init_window_bytes; do saved[$k]=$(cat "$P/$k"); done
	while running; do
		for kv in eta_ppm=900000 eta_ppm=0 eta_ppm=950000 probe_interval_us=500 probe_interval_us=2000000 \
			probe_interval_us=0 base_rtt_us=3000 base_rtt_us=0 telemetry=0 telemetry=7 telemetry=1 \
			max_flows_per_netns=50 max_flows_per_netns=4294967295 max_flows_per_netns=0 max_stage=0 \
			max_stage=5 pace_srtt_cap_pct=50 pace_srtt_cap_pct=150 window_validation=0 \
			window_validation=1 init_window_bytes=0 init_window_bytes=200000 init_window_bytes=65536; do
			k=${kv%%=*} v=${kv#*=}
			writes=$((writes + 1))
			echo "$v" >"$P/$k" 2>/dev/null || refused=$((refused + 1))
			sleep 0.2
		done
	done
	for k in "${!saved[@]}"; do echo "${saved[$k]}" >"$P/$k"; done
	echo "$writes $refused"
}
params_loop >"$OUT/params.txt" 2>"$OUT/params.err" &
params=$!
# Network namespaces deleted under live hpcc flows.
netns_loop() {
	local cycles=0 p1 p2
	while running; do
		ip netns add ${HPCC_NS}-x1 && ip netns add ${HPCC_NS}-x2 || break
		ip link add x1 netns ${HPCC_NS}-x1 type veth peer name x2 netns ${HPCC_NS}-x2
		ip -n ${HPCC_NS}-x1 addr add 10.9.0.1/24 dev x1 && ip -n ${HPCC_NS}-x1 link set x1 up
		ip -n ${HPCC_NS}-x2 addr add 10.9.0.2/24 dev x2 && ip -n ${HPCC_NS}-x2 link set x2 up
		ip netns exec ${HPCC_NS}-x2 python3 "$FLOW" serve 7100 --quiet >/dev/null 2>&1 &
		p2=$!
		wait_listening ${HPCC_NS}-x2 "sport = :7100" 1
		ip netns exec ${HPCC_NS}-x1 python3 "$FLOW" send 10.9.0.2 7100 30 --cc hpcc >/dev/null 2>&1 &
		p1=$!
		sleep 3
		# The namespaces go while the flow runs: its sockets die with them.
		kill -9 $p1 $p2 2>/dev/null
		ip netns del ${HPCC_NS}-x1
		ip netns del ${HPCC_NS}-x2
		wait $p1 $p2 2>/dev/null
		cycles=$((cycles + 1))
	done
	echo $cycles
}
# Its stderr apart: bash reports the killed jobs there.
netns_loop >"$OUT/netns.txt" 2>"$OUT/netns.err" &
netns=$!
# failslab on hpcc_flow for the middle third.
fs0=$(hpcc_stat flows_without_state)
sleep $((SECS / 3))
fail_on=0
if [ -w /sys/kernel/slab/hpcc_flow/failslab ] && [ -d $DBG/failslab ]; then
	echo 1 >/sys/kernel/slab/hpcc_flow/failslab
	echo Y >$DBG/failslab/cache-filter
	echo 30 >$DBG/failslab/probability
	echo 1 >$DBG/failslab/interval
	echo -1 >$DBG/failslab/times
	echo 0 >$DBG/failslab/verbose
	fail_on=1
	sleep $((SECS / 3))
	echo 0 >$DBG/failslab/probability
	echo 0 >/sys/kernel/slab/hpcc_flow/failslab
fi
fs1=$(hpcc_stat flows_without_state)
while [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
touch "$STOP"
wait $toggle $params $netns
ktap_print_msg "mixed load ran $(( $(date +%s) - load )) s (set-up $((load - start)) s)"
wait $churn $churn2
ktap_print_msg "churn done after $(( $(date +%s) - load )) s of load"
wait $storm1 $storm2
ktap_print_msg "load ran $(( $(date +%s) - load )) s with the storm's end"

# --- results -------------------------------------------------------------------------
t_churn() {
	cat "$OUT/churn.json" "$OUT/churn-hpcc.json"
	tail -n 3 "$OUT/churn.err" "$OUT/churn-hpcc.err"
	cat "$OUT/churn.json" "$OUT/churn-hpcc.json" | python3 -c 'import json,sys
rs=[json.loads(l) for l in sys.stdin if l.strip()]
n=int(sys.argv[1]); done=sum(r["done"] for r in rs); failed=sum(r["failed"] for r in rs)
sys.exit(0 if done == n and failed == 0 else 1)' "$CONNS"
}
ktap_print_msg "churn: $(cat "$OUT/churn.json" "$OUT/churn-hpcc.json" | tr '\n' ' ')"
ktap_check "${CONNS}_short_connections" t_churn
ktap_print_msg "toggles: $(cat "$OUT/toggle.json")"
t_toggle() { cat "$OUT/toggle.json" "$OUT/toggle.err"; grep -q '"toggles": [1-9]' "$OUT/toggle.json"; }
ktap_check "cc_switched_in_every_state" t_toggle
sent=$(cat "$OUT/storm-rcv.json" "$OUT/storm-snd.json" | python3 -c 'import json,sys; print(sum(json.loads(l)["sent"] for l in sys.stdin if l.strip()))' 2>/dev/null || echo 0)
ktap_print_msg "hostile packets sent: $sent"
t_storm() { [ "$sent" -ge "$HOSTILE" ]; }
ktap_check "hostile_storm_sent" t_storm
ktap_print_msg "parameter writes, refused: $(cat "$OUT/params.txt")"
t_params() { read -r w r <"$OUT/params.txt" && [ "$w" -gt 0 ] && [ "$r" -gt 0 ]; }
ktap_check "params_written_while_running" t_params
ktap_print_msg "netns deleted under live flows: $(cat "$OUT/netns.txt") times"
t_netns() { [ "$(cat "$OUT/netns.txt")" -gt 0 ]; }
ktap_check "netns_deleted_with_live_flows" t_netns
ktap_print_msg "failslab: flows without state $fs0 -> $fs1"
t_failslab() { [ "$fail_on" -eq 1 ] && [ "$fs1" -gt "$fs0" ]; }
ktap_check "failslab_refusals_fall_back" t_failslab

# --- rmmod as soon as the last socket is gone, 10 times --------------------------
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
pkill -f hpcc_many.py 2>/dev/null
wait 2>/dev/null
ip netns exec ${HPCC_NS}-rcv sysctl -qw net.ipv4.tcp_congestion_control=cubic
t_reload() {
	local i t ok=0
	for i in $(seq 1 10); do
		modprobe tcp_hpcc && hpcc_allow || return 1
		ip netns exec ${HPCC_NS}-rcv python3 "$FLOW" serve 7200 --once --quiet >/dev/null 2>&1 &
		wait_listening ${HPCC_NS}-rcv "sport = :7200" 1 || return 1
		ip netns exec ${HPCC_NS}-s1 python3 "$FLOW" send 10.0.2.1 7200 1 --cc hpcc >/dev/null || return 1
		wait
		for t in $(seq 1 1000); do
			rmmod tcp_hpcc 2>/dev/null && { ok=$((ok + 1)); break; }
			sleep 0.05
		done
	done
	echo "reloads: $ok of 10"
	[ $ok -eq 10 ] && modprobe tcp_hpcc && hpcc_allow
}
ktap_check "rmmod_and_reload_10_times" t_reload

# --- leaks and splats ------------------------------------------------------------
leaks=0
if [ -w $DBG/kmemleak ]; then
	echo scan >$DBG/kmemleak; sleep 5; echo scan >$DBG/kmemleak
	leaks=$(grep -c "unreferenced object" $DBG/kmemleak)
	cp $DBG/kmemleak "$OUT/kmemleak.txt"
fi
ktap_print_msg "kmemleak: $leaks unreferenced objects"
t_leaks() { [ -w $DBG/kmemleak ] && [ "$leaks" -eq 0 ]; }
ktap_check "kmemleak_clean" t_leaks
dmesg >"$OUT/dmesg.txt"
splats=$(grep -cE 'WARNING:|BUG:|KASAN|UBSAN|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|ODEBUG:|refcount_t:|leaked reference|Kernel panic|rust_panic|panicked at' "$OUT/dmesg.txt")
splats=$((splats + leaks))
echo "splats: $splats"
t_splats() { [ "$splats" -eq 0 ] || grep -E 'WARNING:|BUG:|KASAN|locking|lock state|RCU usage|ODEBUG|refcount|leaked|panic' "$OUT/dmesg.txt" | head -20; [ "$splats" -eq 0 ]; }
ktap_check "no_splats" t_splats
ktap_print_msg "total $(( $(date +%s) - start )) s"
ktap_finished
