#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc's side of Source Flow Control (rust/tcp_hpcc/sfc_rx.rs) with
# the emulated switch's signals (emulator_sfc.sh tests the switch). One
# hpcc sender through a 10 Mbit/s port, base RTT 20 ms split, buffer
# 100 kB; the switch signals at 20 kB:
#
#  1. off by default: sfc_enable 0 and an empty sfc_acl; every signal is
#     counted as disabled, none applied; and (1b) the flow carries what it
#     carries with the switch silent (within 5%);
#  2. enabled with the switch in sfc_acl and the sender's eth0 in
#     sfc_ifaces: signals pause the flow (applied
#     or deferred to the next ACK) and cut its window;
#  3. spoofed and malformed signals, injected by a raw socket while the
#     switch is silent (outside the access list, TTL 254, an unknown flow,
#     a sequence number outside the flow's window, truncated, a bad
#     version): each counted exactly under its reason, none applied;
#     (3b) with sfc_max_hops 1 a TTL-254 signal passes the TTL rule (and
#     meets the window's), a TTL-253 one does not;
#  4. pause precision: one injected 5 ms pause (in the flow's window,
#     from the switch's address, a frame from the switch's port): in
#     the emulator's packet log the flow's data departures stop (but for
#     packets already below TCP, within two of its usual gaps) and resume
#     5 ms after the host paused the flow (the tracepoint's at=; up to one
#     usual gap and 1 ms late), with no retransmission within 100 ms (the
#     window cut off for this one; a throughput-gated check: skipped where
#     the VM cannot carry B);
#  5. the tcp_hpcc:hpcc_sfc tracepoint reported every signal of 2 and 3
#     with its outcome, as the counters did;
#  6. sfc_scope 1: a cubic flow and a UDP flow are paused at egress (their
#     packets get departure times); without sch_fq on the sender the
#     module says so once and counts it;
#  7. no collateral: an hpcc flow through an uncongested port beside a
#     signalled one receives no signal and (throughput-gated) carries what
#     it does alone (within 5%);
#  8. a storm of 100,000 signals per second (checked in virtual time;
#     plain TCG sends what it can) for 2 s from an allowed source: the
#     source's bucket admits at most sfc_rate x duration + sfc_burst,
#     sch_fq drops nothing beyond its horizon, the flow's cwnd is cut
#     once (at its end at least half what it was 100 ms in), and
#     (timing, throughput-gated) the flow is back at its rate within
#     100 ms;
#  9. no kernel warning.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

PORT=9000

ktap_begin 15 ip tc bpftool python3 modprobe
cleanup() {
	knobs_reset sfc_enable sfc_scope sfc_window_cut sfc_acl sfc_ifaces sfc_rate
	intsw_cleanup
}
trap cleanup EXIT
dmesg -c >/dev/null 2>&1
ktap_need emulator_builds intsw_build
ktap_need module_loads load_module
intsw_topo_fanin 1 rate_mbit=10 rtt_us=20000 split=1 buffer=100000 >"$OUT/topo.log" 2>&1 &&
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=20000 target=2000 suppress_us=2000 >>"$OUT/topo.log" 2>&1 &&
	ip netns exec ${HPCC_NS}-s1 sysctl -qw net.ipv4.tcp_congestion_control=hpcc ||
	{ ktap_print_msg_lines <"$OUT/topo.log"; ktap_test_fail "topology"; ktap_finished; }

# The tcp_hpcc:hpcc_sfc tracepoint around a test: sfc_trace_on, then
# sfc_trace_off FILE keeps its lines.
SFC_EV=$HPCC_TR/events/tcp_hpcc/hpcc_sfc/enable
sfc_trace_on() { hpcc_tracefs && echo >"$HPCC_TR/trace" && echo 1 >"$SFC_EV"; }
sfc_trace_off() { echo 0 >"$SFC_EV"; grep 'hpcc_sfc: ' "$HPCC_TR/trace" >"$1"; }

# flow NAME SECS: an hpcc bulk flow hpcc-s1 -> hpcc-rcv for SECS seconds.
flow() {
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	local k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" tcpsend 10.0.2.1 $PORT "$2" >"$OUT/$1.send"
	wait $k
}

# 1. Off by default.
t_default_off() {
	echo "sfc_enable=$(cat $P/sfc_enable) sfc_acl='$(cat $P/sfc_acl)'"
	[ "$(cat $P/sfc_enable)" = 0 ] && [ -z "$(cat $P/sfc_acl)" ] || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	sfc_counts ${HPCC_NS}-s1 >"$OUT/off.0"
	flow off 3 || return 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/off.1"
	local sent rx dis app
	sent=$(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent)
	rx=$(sfc_delta "$OUT/off.0" "$OUT/off.1" sfc_received)
	dis=$(sfc_delta "$OUT/off.0" "$OUT/off.1" sfc_disabled)
	app=$(( $(sfc_delta "$OUT/off.0" "$OUT/off.1" sfc_applied) + $(sfc_delta "$OUT/off.0" "$OUT/off.1" sfc_deferred) ))
	echo "switch sent $sent signals; host received $rx, disabled $dis, applied $app; $(tail -1 "$OUT/off.send")"
	[ "$sent" -gt 0 ] && [ "$rx" -gt 0 ] && [ "$rx" -le "$sent" ] && [ "$dis" -eq "$rx" ] && [ "$app" -eq 0 ]
}
ktap_check "disabled_by_default_counts_and_ignores" t_default_off
Q_OFF=$(intsw_get ${HPCC_NS}-sw1 rcv qlen_p99_bytes)

# 1b. Disabled, the signals change nothing: the same flow with the switch
# silent carries the same bytes (within 5%).
sent_bytes() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["bytes"])' "$1"; }
t_disabled_matches_silent() {
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=0 >/dev/null || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	flow silent 3 || return 1
	local sent a b
	sent=$(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent)
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=20000 target=2000 suppress_us=2000 >/dev/null || return 1
	a=$(sent_bytes "$OUT/off.send") && b=$(sent_bytes "$OUT/silent.send") || return 1
	echo "signals disabled: $a bytes in 3 s; switch silent ($sent signals): $b bytes"
	[ "$sent" -eq 0 ] &&
		python3 -c 'import sys; a, b = map(int, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.05 * b else 1)' "$a" "$b"
}
ktap_check_v "disabled_run_matches_a_silent_switch" t_disabled_matches_silent

# 2. Enabled for the switch's address.
t_enabled() {
	echo 10.255.0.0/24 >"$P/sfc_acl" && echo eth0 >"$P/sfc_ifaces" && echo 1 >"$P/sfc_enable" || return 1
	echo "sfc_acl: $(cat $P/sfc_acl)"
	intsw_reset ${HPCC_NS}-sw1 rcv
	sfc_counts ${HPCC_NS}-s1 >"$OUT/on.0"
	sfc_trace_on
	flow on 3 || return 1
	sfc_trace_off "$OUT/on.trace"
	sfc_counts ${HPCC_NS}-s1 >"$OUT/on.1"
	local sent rx app def cut
	sent=$(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent)
	rx=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_received)
	app=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_applied)
	def=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_deferred)
	cut=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_window_cuts)
	echo "switch sent $sent; host received $rx, applied $app, deferred $def, window cuts $cut;" \
		"queue p99 $(intsw_get ${HPCC_NS}-sw1 rcv qlen_p99_bytes) B (SFC off: $Q_OFF B); $(tail -1 "$OUT/on.send")"
	echo "all sfc counters:"; paste -sd' ' "$OUT/on.1"
	[ "$rx" -gt 0 ] && [ $((app + def)) -gt 0 ] && [ "$cut" -gt 0 ]
}
ktap_check_v "enabled_signals_pause_and_cut" t_enabled

# An hpcc connection from s1 that keeps sending (sfc_signal.py tcpsend,
# its JSON in FILE); sets the caller's k (the sink's PID), s (the
# sender's) and sport.
sending_conn() { # sending_conn FILE
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" tcpsend 10.0.2.1 $PORT 30 >"$1" &
	s=$!
	local i
	for i in $(seq 1 100); do [ -s "$1" ] && break; sleep 0.2; done
	sport=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["sport"])' "$1")
}

# 3. Spoofed and malformed signals, the switch silent.
t_spoof() {
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=0 >/dev/null || return 1
	local k s sport isn
	sending_conn "$OUT/spoof.send" || return 1
	isn=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["isn"])' "$OUT/spoof.send")
	sleep 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/spoof.0"
	sfc_trace_on
	# One process sends all, while the connection is surely up.
	ip netns exec ${HPCC_NS}-sw1 python3 "$SIG" inject --to 10.1.1.1 --dport $PORT --count 10 \
		--case "10.9.9.9,255,$sport,0,good" --case "10.255.0.1,254,$sport,0,good" \
		--case "10.255.0.1,255,1,0,good" \
		--case "10.255.0.1,255,$sport,$(((isn - 1000000) & 0xffffffff)),good" \
		--case "10.255.0.1,255,$sport,0,truncated" --case "10.255.0.1,255,$sport,0,badversion" \
		>"$OUT/spoof.inject" || return 1
	sleep 1
	sfc_trace_off "$OUT/spoof.trace"
	sfc_counts ${HPCC_NS}-s1 >"$OUT/spoof.1"
	local alive
	alive=$(ip netns exec ${HPCC_NS}-s1 ss -tnH state established "( sport = :$sport )" | wc -l)
	echo "connection still established after the injections: $alive"
	kill $s 2>/dev/null
	wait $s
	wait $k
	local n ok=0
	for n in sfc_received:60 sfc_not_in_acl:10 sfc_bad_ttl:10 sfc_no_flow:10 sfc_seq_out_of_window:10 \
		sfc_truncated:10 sfc_bad_header:10 sfc_applied:0 sfc_deferred:0 sfc_window_cuts:0 \
		sfc_rate_limited:0 sfc_disabled:0; do
		local got
		got=$(sfc_delta "$OUT/spoof.0" "$OUT/spoof.1" "${n%%:*}")
		echo "${n%%:*}: $got (want ${n#*:})"
		[ "$got" -eq "${n#*:}" ] || ok=1
	done
	[ "$alive" -eq 1 ] || ok=1
	return $ok
}
ktap_check "spoofed_and_malformed_counted_never_applied" t_spoof

# 3b. sfc_max_hops 1: a signal that crossed one router (TTL 254), refused
# as bad_ttl by default (check 3), passes the TTL rule and meets the next
# one (its sequence number 0 is out of the window); TTL 253 is still refused.
t_max_hops() {
	local k s sport
	sending_conn "$OUT/hops.send" || return 1
	sleep 1
	echo 1 >"$P/sfc_max_hops" || return 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/hops.0"
	ip netns exec ${HPCC_NS}-sw1 python3 "$SIG" inject --to 10.1.1.1 --dport $PORT --count 10 \
		--case "10.255.0.1,254,$sport,0,good" --case "10.255.0.1,253,$sport,0,good" >"$OUT/hops.inject"
	local rc=$?
	sleep 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/hops.1"
	knobs_reset sfc_max_hops
	kill $s 2>/dev/null
	wait $s
	wait $k
	[ $rc -eq 0 ] || return 1
	local n ok=0
	for n in sfc_bad_ttl:10 sfc_seq_out_of_window:10 sfc_applied:0 sfc_deferred:0; do
		local got
		got=$(sfc_delta "$OUT/hops.0" "$OUT/hops.1" "${n%%:*}")
		echo "${n%%:*}: $got (want ${n#*:})"
		[ "$got" -eq "${n#*:}" ] || ok=1
	done
	return $ok
}
ktap_check "max_hops_lets_routed_signals_past_the_ttl_rule" t_max_hops

# 4. Pause precision, the switch silent (check 3 turned it off). The
# window cut is off for this one: a cut leaves the flow window-limited
# after the pause until ACKs drain its excess in flight, which would add
# to the gap and is not the pause (checks 2 and the incast test cover it).
t_precision() {
	echo 0 >"$P/sfc_window_cut" || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	sfc_counts ${HPCC_NS}-s1 >"$OUT/pause.0"
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	local k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	sfc_trace_on
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" pause 10.0.2.1 $PORT --inject-ns ${HPCC_NS}-sw1 --inject-dev s1 \
		>"$OUT/pause.json"
	sfc_trace_off "$OUT/pause.trace"
	knobs_reset sfc_window_cut
	[ -s "$OUT/pause.json" ] || return 1
	wait $k
	sfc_counts ${HPCC_NS}-s1 >"$OUT/pause.1"
	python3 "$INTSW_DIR/intsw.py" log "$(intsw_dir ${HPCC_NS}-sw1 rcv)" >"$OUT/pause.log"
	echo "applied $(sfc_delta "$OUT/pause.0" "$OUT/pause.1" sfc_applied), deferred" \
		"$(sfc_delta "$OUT/pause.0" "$OUT/pause.1" sfc_deferred); $(cat "$OUT/pause.json")"
	[ $(($(sfc_delta "$OUT/pause.0" "$OUT/pause.1" sfc_applied) + $(sfc_delta "$OUT/pause.0" "$OUT/pause.1" sfc_deferred))) -eq 1 ] ||
		return 1
	python3 - "$OUT/pause.json" "$OUT/pause.log" "$OUT/pause.trace" "$OUT/pause.txt" <<-'EOF'
		import json, statistics, sys
		r = json.load(open(sys.argv[1]))
		# The flow's data segments (its probes leave outside TCP's clock).
		log = [[int(x) for x in l.split()] for l in open(sys.argv[2])
		       if l.split()[2] == str(r["sport"]) and int(l.split()[3]) > 200]
		t = [x[0] for x in log]
		# The pause runs from when the host moved the flow's clock (the
		# tracepoint's at=, CLOCK_MONOTONIC like the packet log): under
		# TCG the injected frame can reach the host, and the hook the
		# socket's lock, milliseconds after its send.
		took = [l for l in open(sys.argv[3])
		        if f"]:{r['sport']}->" in l and l.split()[-1] in ("applied", "deferred")]
		assert len(took) == 1, took
		ti = int(dict(f.split("=", 1) for f in took[0].split() if "=" in f)["at"])
		gaps = [b - a for a, b in zip(t, t[1:]) if ti - 500e6 < a < ti - 10e6]
		usual = statistics.median(gaps) / 1e6
		before = [x for x in t if x <= ti]
		# Packets already below TCP then may still leave within two
		# usual gaps; after them, the flow waits for the pause.
		held = [x for x in t if x > ti + 2 * usual * 1e6]
		last, resume = (before[-1] - ti) / 1e6, (held[0] - ti) / 1e6
		n_queued = sum(1 for x in t if ti < x <= ti + 2 * usual * 1e6)
		drops = sum(x[4] for x in log if ti <= x[0] <= ti + 100e6)
		msg = (f"the host paused the flow {(ti - r['t_inject_ns']) / 1e6:+.2f} ms after the signal's send;"
		       f" from then: last data departure before {last:+.2f} ms, {n_queued} within two"
		       f" usual gaps after, then the next at {resume:+.2f} ms; usual gap {usual:.2f} ms;"
		       f" retransmissions before it, 100 ms after it and at the end: {r['retrans']};"
		       f" the port's drops of the flow in those 100 ms: {drops}")
		print(msg)
		open(sys.argv[4], "w").write(msg + "\n")
		assert 4.5 <= resume <= 5.0 + usual + 1.0
		assert r["retrans"][0] == r["retrans"][1]
	EOF
}
# A timing check: run where the VM carries B (virtual time, a fast host);
# under a slow or shared TCG host the flow's own departures have gaps of
# 3-5 ms, as long as the pause.
ktap_perf_check "injected_5ms_pause_is_a_5ms_gap_on_the_wire" t_precision
[ ! -s "$OUT/pause.txt" ] || ktap_print_msg_lines <"$OUT/pause.txt"

# 5. The tracepoint: one line per signal with the counters' outcome.
t_trace() {
	local app def n ok=0
	app=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_applied)
	def=$(sfc_delta "$OUT/on.0" "$OUT/on.1" sfc_deferred)
	echo "enabled run: $(grep -c ' applied$' "$OUT/on.trace") applied, $(grep -c ' deferred$' "$OUT/on.trace")" \
		"deferred in the trace; counters $app, $def; e.g."
	grep -m1 ' applied$' "$OUT/on.trace" | sed 's/^ *//'
	[ "$(grep -c ' applied$' "$OUT/on.trace")" -eq "$app" ] &&
		[ "$(grep -c ' deferred$' "$OUT/on.trace")" -eq "$def" ] && [ "$app" -gt 0 ] || ok=1
	# an applied pause is the asked one, clamped to sfc_max_pause_us
	grep ' applied$' "$OUT/on.trace" | awk -v m="$(($(cat $P/sfc_max_pause_us) * 1000))" '
		{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) f[kv[1]] = kv[2] + 0 }
		{ want = f["pause"] < m ? f["pause"] : m; if (f["applied"] != want || f["applied"] == 0) bad++ }
		END { exit bad > 0 }' || { echo "an applied pause is not the asked one"; ok=1; }
	for n in bad_ttl:sfc_bad_ttl not_in_acl:sfc_not_in_acl no_flow:sfc_no_flow \
		seq_out_of_window:sfc_seq_out_of_window truncated:sfc_truncated bad_header:sfc_bad_header; do
		local got want
		got=$(grep -c " ${n%%:*}\$" "$OUT/spoof.trace")
		want=$(sfc_delta "$OUT/spoof.0" "$OUT/spoof.1" "${n#*:}")
		echo "spoofed: ${n%%:*} $got in the trace, counter $want"
		[ "$got" -eq "$want" ] && [ "$got" -gt 0 ] || ok=1
	done
	grep -m1 ' seq_out_of_window$' "$OUT/spoof.trace" | sed 's/^ *//'
	return $ok
}
ktap_check_v "tracepoint_reports_each_signal" t_trace

# 6. sfc_scope 1: flows hpcc does not control, held at egress.
t_scope() {
	local ok=0 d
	echo 1 >"$P/sfc_scope" || return 1
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=20000 target=2000 suppress_us=2000 >/dev/null || return 1
	ip netns exec ${HPCC_NS}-s1 sysctl -qw net.ipv4.tcp_congestion_control=cubic || return 1
	# (a) cubic, no EDT qdisc on the sender: counted and said once.
	local warn
	warn=$(dmesg | grep -c "sfc_scope: no EDT qdisc")
	sfc_counts ${HPCC_NS}-s1 >"$OUT/scope.0"
	flow scope-nofq 2 || return 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/scope.1"
	warn=$(($(dmesg | grep -c "sfc_scope: no EDT qdisc") - warn))
	echo "cubic without fq: applied at egress $(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_applied_egress)," \
		"no EDT qdisc $(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_egress_no_edt_qdisc), held" \
		"$(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_egress_held); messages: $warn"
	[ "$(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_applied_egress)" -gt 0 ] &&
		[ "$(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_egress_no_edt_qdisc)" -gt 0 ] &&
		[ "$(sfc_delta "$OUT/scope.0" "$OUT/scope.1" sfc_egress_held)" -eq 0 ] && [ "$warn" -eq 1 ] || ok=1
	# (b) cubic with sch_fq: held.
	tc -n ${HPCC_NS}-s1 qdisc replace dev eth0 root fq || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	flow scope-fq 3 || return 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/scope.2"
	echo "cubic with fq: switch sent $(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent), host applied at egress" \
		"$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_applied_egress), held $(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_egress_held)" \
		"packets, no EDT qdisc $(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_egress_no_edt_qdisc), hpcc-path applied" \
		"$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_applied); $(tail -1 "$OUT/scope-fq.send")"
	[ "$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_applied_egress)" -gt 0 ] &&
		[ "$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_egress_held)" -gt 0 ] &&
		[ "$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_egress_no_edt_qdisc)" -eq 0 ] &&
		[ "$(sfc_delta "$OUT/scope.1" "$OUT/scope.2" sfc_applied)" -eq 0 ] || ok=1
	# (c) UDP at twice the port's rate.
	intsw_reset ${HPCC_NS}-sw1 rcv
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" blast 10.0.2.1 9999 2 --mbit 20 >"$OUT/scope-udp.send" || return 1
	sfc_counts ${HPCC_NS}-s1 >"$OUT/scope.3"
	echo "UDP with fq: switch sent $(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent), host applied at egress" \
		"$(sfc_delta "$OUT/scope.2" "$OUT/scope.3" sfc_applied_egress), held $(sfc_delta "$OUT/scope.2" "$OUT/scope.3" sfc_egress_held) packets"
	[ "$(sfc_delta "$OUT/scope.2" "$OUT/scope.3" sfc_applied_egress)" -gt 0 ] &&
		[ "$(sfc_delta "$OUT/scope.2" "$OUT/scope.3" sfc_egress_held)" -gt 0 ] || ok=1
	knobs_reset sfc_scope
	tc -n ${HPCC_NS}-s1 qdisc del dev eth0 root 2>/dev/null
	ip netns exec ${HPCC_NS}-s1 sysctl -qw net.ipv4.tcp_congestion_control=hpcc
	return $ok
}
ktap_check_v "scope_all_pauses_other_flows_at_egress" t_scope

# 7. No collateral: an hpcc flow through an uncongested port (hpcc-rcv ->
# hpcc-s1, app-limited at 2 Mbit/s) beside one that makes the bottleneck
# signal (SFC on, the switch in sfc_acl): 0 signals reach its sender, and
# (7b, throughput-gated: both rates are the VM's) it carries what it
# carries alone, within 5%.
rev_flow() { # rev_flow TAG: the reverse flow for 3 s; prints its Mbit/s
	ip netns exec ${HPCC_NS}-s1 python3 "$FLOW" serve 9100 --once --quiet >/dev/null &
	local k=$!
	wait_listening ${HPCC_NS}-s1 "sport = :9100" 1 || return 1
	ip netns exec ${HPCC_NS}-rcv python3 "$FLOW" send 10.1.1.1 9100 3 --cc hpcc --maxrate 2 >"$OUT/rev.$1.json" || return 1
	wait $k
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mbps"])' "$OUT/rev.$1.json"
}
rcv_received() { ip netns exec ${HPCC_NS}-rcv cat /proc/net/hpcc_stat | awk '$1 == "sfc_received" { print $2 }'; }
t_collateral() {
	echo 10.255.0.0/24 >"$P/sfc_acl" && echo eth0 >"$P/sfc_ifaces" && echo 1 >"$P/sfc_enable" || return 1
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=20000 target=2000 suppress_us=2000 >/dev/null || return 1
	local alone busy r0 r1 sent
	alone=$(rev_flow alone) || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	r0=$(rcv_received)
	flow collateral 5 &
	local f=$!
	sleep 1
	busy=$(rev_flow busy) || return 1
	wait $f
	r1=$(rcv_received)
	sent=$(intsw_get ${HPCC_NS}-sw1 rcv sfc_signals_sent)
	echo "reverse flow alone $alone Mbit/s, beside the signalled one $busy Mbit/s; the switch sent" \
		"$sent signals, the reverse flow's sender received $((r1 - r0))"
	echo "$alone $busy" >"$OUT/rev.rates"
	[ "$sent" -gt 0 ] && [ $((r1 - r0)) -eq 0 ]
}
ktap_check_v "no_signal_on_an_uncongested_path" t_collateral
t_collateral_rate() {
	local alone busy
	read -r alone busy <"$OUT/rev.rates" || return 1
	echo "reverse flow alone $alone Mbit/s, beside the signalled one $busy Mbit/s"
	python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(b - a) <= 0.05 * a else 1)' "$alone" "$busy"
}
ktap_perf_check "no_collateral_on_an_uncongested_path" t_collateral_rate

# 8. A storm: 100,000 signals per second for 2 s from the switch's
# address (in sfc_acl), the switch itself silent, sch_fq on the sender.
# The per-netns bucket (sfc_rate per second, sfc_burst) admits at most
# rate x duration + burst of them; fq drops nothing beyond its horizon;
# and (timing, throughput-gated) 100 ms after the storm the flow leaves
# the bottleneck at the rate it had before it. Under plain TCG a loaded
# host's VM sends fewer (6,671/s in one CI run, below the default
# sfc_rate, so nothing was over the bucket to refuse): there the bucket
# is set to 1,000/s for the storm. Virtual time keeps the default.
STORM_SFC_RATE=$(knob_default sfc_rate)
[ "${HPCC_VM_ICOUNT:-0}" = 1 ] || STORM_SFC_RATE=1000
t_storm() {
	echo 10.255.0.0/24 >"$P/sfc_acl" && echo eth0 >"$P/sfc_ifaces" && echo 1 >"$P/sfc_enable" || return 1
	echo "$STORM_SFC_RATE" >"$P/sfc_rate" || return 1
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=0 >/dev/null || return 1
	tc -n ${HPCC_NS}-s1 qdisc replace dev eth0 root fq || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	sfc_counts ${HPCC_NS}-s1 >"$OUT/storm.0"
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	local k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" pause 10.0.2.1 $PORT --after 1.5 --secs 4.5 \
		--inject-ns ${HPCC_NS}-sw1 --inject-dev s1 --pause-us 1000 --storm 2 --rate 100000 >"$OUT/storm.json"
	local rc=$?
	wait $k
	sfc_counts ${HPCC_NS}-s1 >"$OUT/storm.1"
	local hz
	# tc prints horizon_drops only when not 0.
	hz=$(tc -s -n ${HPCC_NS}-s1 qdisc show dev eth0 | awk '$1 == "qdisc" && $2 == "fq" { fq = 1 }
		{ for (i = 1; i < NF; i++) if ($i == "horizon_drops") h = $(i + 1) }
		END { print fq ? h + 0 : "no-fq" }')
	tc -n ${HPCC_NS}-s1 qdisc del dev eth0 root 2>/dev/null
	python3 "$INTSW_DIR/intsw.py" log "$(intsw_dir ${HPCC_NS}-sw1 rcv)" >"$OUT/storm.log"
	[ $rc -eq 0 ] && [ -s "$OUT/storm.json" ] || { cat "$OUT/storm.json"; return 1; }
	local c n
	for c in received rate_limited applied deferred no_flow seq_out_of_window duplicate; do
		n=$(sfc_delta "$OUT/storm.0" "$OUT/storm.1" sfc_$c)
		eval "s_$c=$n"
	done
	python3 - "$OUT/storm.json" "$OUT/storm.log" "$(cat $P/sfc_rate)" "$(cat $P/sfc_burst)" \
		"$s_received" "$s_rate_limited" "$s_applied" "$s_deferred" "$s_no_flow" "$s_seq_out_of_window" \
		"$s_duplicate" "$hz" "$OUT/storm.txt" <<-'EOF'
		import json, sys
		r = json.load(open(sys.argv[1]))
		rate, burst, rx, limited, app, dfr, noflow, seq, dup = map(int, sys.argv[3:12])
		hz, txt = sys.argv[12], sys.argv[13]
		secs = (r["t_storm_end_ns"] - r["t_inject_ns"]) / 1e9
		# Past the bucket: acted on, or refused by the flow's checks.
		admitted = app + dfr + noflow + seq + dup
		bound = rate * (secs + 0.01) + burst
		# The flow's departures from the 10 Mbit/s port, bytes per ns
		# before the storm and, after it, the first 20 ms window from which
		# it leaves at 90% of that.
		B = 10e6 / 8 / 1e9
		dep = []
		for l in open(sys.argv[2]):
		    t, q, sport, wire, drop = map(int, l.split())
		    if sport == r["sport"] and not drop:
		        dep.append((t + (q + wire) / B, wire))
		ti, te = r["t_inject_ns"], r["t_storm_end_ns"]
		before = sum(w for t, w in dep if ti - 500e6 <= t < ti - 10e6) / 490e6
		back = None
		for k in range(0, 400):
		    t0 = te + k * 1e6
		    if sum(w for t, w in dep if t0 <= t < t0 + 20e6) >= 0.9 * before * 20e6:
		        back = k
		        break
		msg = (f"{r['signals']} signals in {secs:.2f} s ({r['signals'] / secs:,.0f}/s); received {rx},"
		       f" rate-limited {limited}, admitted {admitted} (applied {app}, deferred {dfr}, no flow {noflow},"
		       f" out of window {seq}, duplicates {dup}) of at most {bound:,.0f} (sfc_rate {rate}/s x {secs:.2f} s + sfc_burst {burst});"
		       f" fq horizon drops {hz}; the flow left the port at {before * 8e3:.2f} Mbit/s before the storm and"
		       f" was back at 90% of it {back} ms after it")
		print(msg)
		open(txt, "w").write(json.dumps({"back_ms": back, "before_mbps": before * 8e3,
		                                 "rate": r["signals"] / secs}) + "\n")
		assert rx > bound and limited > 0 and admitted <= bound and app + dfr > 0
		assert hz == "0"
	EOF
}
ktap_check_v "storm_is_rate_limited" t_storm
knobs_reset sfc_rate
storm_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/storm.txt" "$1" 2>/dev/null; }
# The sender's rate: in virtual time one Python process sends 100,000 per
# second, to within 1% (it keeps pace in batches of 64 between writes;
# measured 99,990 and 100,005 in two runs); under plain TCG the VM sends
# what it can, and the bucket check above holds at any rate above
# sfc_rate.
t_storm_rate() { python3 -c 'import sys; r = float(sys.argv[1]); print(f"{r:,.0f} signals/s"); sys.exit(0 if r >= 99_000 else 1)' "$(storm_field rate)"; }
if [ "${HPCC_VM_ICOUNT:-0}" = 1 ]; then
	ktap_check_v "storm_at_100k_signals_per_second" t_storm_rate
else
	ktap_test_skip "storm_at_100k_signals_per_second" "$(storm_field rate | cut -d. -f1) signals/s; 100,000/s is checked in virtual time (HPCC_VM_ICOUNT=1)"
fi
# Signals alone cut once per episode, and an episode ends only when the
# signals fall silent: through the storm the flow keeps at least half the
# cwnd it had 100 ms in (measured before: ACKs far apart each started a
# new episode, and ten cuts took it from 34 segments to 6).
t_storm_cuts_once() {
	python3 - "$OUT/storm.json" <<-'EOF'
	import json, sys
	r = json.load(open(sys.argv[1]))
	cut, end = r.get("cwnd_cut"), r.get("cwnd_end")
	print(f"cwnd {cut} segments 100 ms into the storm, {end} at its end")
	sys.exit(0 if cut and end and end >= cut / 2 else 1)
	EOF
}
ktap_check_v "storm_cuts_the_window_once" t_storm_cuts_once
t_storm_recovery() { python3 -c 'import sys; print(f"back in {sys.argv[1]} ms"); sys.exit(0 if sys.argv[1] != "None" and float(sys.argv[1]) <= 100 else 1)' "$(storm_field back_ms)"; }
# A timing check, like 4.
ktap_perf_check "storm_flow_back_at_full_rate_within_100ms" t_storm_recovery

t_dmesg() {
	dmesg >"$OUT/dmesg.txt" 2>&1
	! grep -E "WARNING|BUG|Oops|RCU|KASAN|UBSAN" "$OUT/dmesg.txt"
}
ktap_check "no_kernel_warnings" t_dmesg

ktap_finished
