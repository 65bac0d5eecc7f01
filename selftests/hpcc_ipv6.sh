#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: HPCC++ telemetry for IPv6 flows and dual-stack sockets.
#
# One sender, one emulated INT switch (100 Mbit/s, 2 ms, CE marking at
# BDP/4), one receiver, with IPv4 and IPv6 addresses (int_switch.sh
# intsw_topo_fanin + intsw_ipv6):
#
#  - an hpcc flow over IPv6 sends probes that the switch stamps, the
#    receiver's module answers and the sender accepts; its window is set
#    from them (tracepoint events with one hop and the port's link rate);
#  - no IPv6 probe or response reaches a socket or TCP: exact application
#    bytes, no RST, no checksum error;
#  - an AF_INET6 socket talking to an IPv4 peer (::ffff:10.0.2.1, a
#    dual-stack application) gets telemetry too, through IPv4 probes (an
#    IPv6 packet with IPv4-mapped addresses would be refused as malformed);
#  - the switch CE-marks IPv6 packets, so dctcp is a baseline over IPv6 too;
#  - forged IPv6 responses (wrong nonce, truncated, too many hops, random
#    bytes, unknown flow) are each counted and ignored.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

RATE_MBIT=${RATE_MBIT:-100}
RTT_US=${RTT_US:-2000}
BDP=$((RATE_MBIT * 1000000 / 8 * RTT_US / 1000000))
SECS=${SECS:-4}

ktap_begin 8 ip tc python3 modprobe nstat "${CLANG:-clang}"
trap 'intsw_cleanup; pkill -f hpcc_flow.py 2>/dev/null' EXIT

jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
COUNTERS="probes_sent probes_received probes_no_socket responses_sent responses_received responses_accepted samples_applied
	responses_bad_nonce malformed_truncated responses_too_many_hops malformed_magic responses_no_flow"

ktap_need module_loads load_module
ktap_need emulator_builds intsw_build
t_topology() {
	intsw_topo_fanin 1 rate_mbit="$RATE_MBIT" rtt_us="$RTT_US" ecn_k=$((BDP / 4)) &&
		intsw_ipv6 1 1 &&
		ip -n ${HPCC_NS}-s1 route get fd00:2::1 | grep -q 'via fd00:1:1::2 dev eth0' &&
		ip -n ${HPCC_NS}-rcv route get fd00:1:1::1 | grep -q 'via fd00:2::2 dev eth0' &&
		ip -n ${HPCC_NS}-sw1 route get fd00:2::1 | grep -q 'dev rcv' &&
		ip -n ${HPCC_NS}-s1 route get 10.0.2.1 | grep -q 'dev eth0'
}
ktap_check "dual_stack_topology" t_topology

# flow NAME DST ALGO SERVE_BIND: one SECS-long flow; counter deltas in
# D_<counter>, the switch port's in SW_<key>, the flow's trace lines (if
# the tracepoint exists) in $RESULTS/hpcc_ipv6.NAME.trace. SERVE_DEV binds
# the listener to a device; INJECT_FROM=ADDR sends N_FORGED forged
# responses of each kind from the receiver's netns (source ADDR) toward
# the flow (sender port 40100) one second in.
flow() {
	local name=$1 dst=$2 algo=$3 bind=$4 k srv snd sport=()
	declare -gA B=() D=() SW0=() SW=()
	for k in $COUNTERS; do B[$k]=$(hpcc_stat "$k"); done
	for k in probes_stamped ce_marks tx_bytes; do SW0[$k]=$(intsw_get ${HPCC_NS}-sw1 rcv "$k"); done
	hpcc_trace_start
	timeout 60 ip netns exec ${HPCC_NS}-rcv python3 "$FLOW" serve 5201 --once --cc "$algo" --bind "$bind" ${SERVE_DEV:+--dev "$SERVE_DEV"} \
		>"$RESULTS/hpcc_ipv6.$name.serve.json" &
	srv=$!
	wait_listening ${HPCC_NS}-rcv 'sport = :5201' 1
	[ -z "${INJECT_FROM:-}" ] || sport=(--sport 40100)
	timeout 60 ip netns exec ${HPCC_NS}-s1 python3 "$FLOW" send "$dst" 5201 "$SECS" --cc "$algo" "${sport[@]}" \
		>"$RESULTS/hpcc_ipv6.$name.send.json" &
	snd=$!
	if [ -n "${INJECT_FROM:-}" ]; then
		sleep 1
		ip netns exec ${HPCC_NS}-rcv python3 "$FLOW" inject all "$N_FORGED" --src "$INJECT_FROM" \
			--dst fd00:1:1::1 --sport 5201 --dport 40100 >/dev/null
	fi
	wait $snd
	wait $srv
	sleep 0.3
	hpcc_trace_stop "$RESULTS/hpcc_ipv6.$name.trace"
	for k in $COUNTERS; do D[$k]=$(($(hpcc_stat "$k") - ${B[$k]})); done
	for k in probes_stamped ce_marks tx_bytes; do SW[$k]=$(($(intsw_get ${HPCC_NS}-sw1 rcv "$k") - ${SW0[$k]})); done
	ktap_print_msg "$name: $(jget "$RESULTS/hpcc_ipv6.$name.send.json" mbps) Mbit/s; probes sent ${D[probes_sent]}" \
		"received ${D[probes_received]} (${D[probes_no_socket]} without a socket), stamped ${SW[probes_stamped]};" \
		"responses sent ${D[responses_sent]}" \
		"received ${D[responses_received]} accepted ${D[responses_accepted]}; samples applied" \
		"${D[samples_applied]}; CE marks ${SW[ce_marks]}"
}

# Trace lines of a flow from SRC to DST:5201 with one hop at the port's rate.
one_hop_lines() { # one_hop_lines NAME SRC DST
	grep -c "src=$2:[0-9]* dst=$3:5201 ev=[0-4] hop=0/1 .* link=$((RATE_MBIT * 1000000 / 8))\$" \
		"$RESULTS/hpcc_ipv6.$1.trace"
}

for ns in ${HPCC_NS}-s1 ${HPCC_NS}-rcv; do ip netns exec "$ns" nstat -n >/dev/null 2>&1; done
flow v6 fd00:2::1 hpcc ::
V6_TRACE=$(one_hop_lines v6 '\[fd00:1:1::1\]' '\[fd00:2::1\]' 2>/dev/null)

t_v6_telemetry() {
	echo "tcp_hpcc:hpcc_sample events of the IPv6 flow with one hop at B: ${V6_TRACE:-none}"
	[ "${D[probes_sent]}" -ge 20 ] || { echo "too few probes: ${D[probes_sent]}"; return 1; }
	# Every probe that arrives is answered, but for the last one or two
	# that can arrive after the connection closed (no socket to answer
	# for). Responses travel the unshaped reverse path. A probe can meet a
	# full drop-tail buffer, and a response can find the mailbox busy or
	# come late on a stalled host, so 90% of the probes, not all, must come
	# back accepted.
	[ "${D[probes_received]}" -eq $((D[responses_sent] + D[probes_no_socket])) ] &&
		[ "${D[probes_no_socket]}" -le 2 ] &&
		[ "${D[responses_received]}" -eq "${D[responses_sent]}" ] &&
		[ "${SW[probes_stamped]}" -ge "${D[probes_received]}" ] &&
		[ $((10 * D[responses_accepted])) -ge $((9 * D[probes_sent])) ] || return 1
	[ "${D[samples_applied]}" -ge 10 ] || { echo "too few samples applied"; return 1; }
	[ -n "$V6_TRACE" ] && [ "$V6_TRACE" -ge 10 ]
}
ktap_check "ipv6_probes_stamped_answered_and_applied" t_v6_telemetry

t_v6_no_socket() {
	local sent got
	sent=$(jget "$RESULTS/hpcc_ipv6.v6.send.json" bytes)
	got=$(jget "$RESULTS/hpcc_ipv6.v6.serve.json" bytes)
	echo "application bytes: sent $sent, received $got"
	[ "$sent" -gt 0 ] && [ "$sent" -eq "$got" ] && tcp_untouched ${HPCC_NS}-s1 ${HPCC_NS}-rcv
}
ktap_check "ipv6_probes_never_reach_a_socket_or_tcp" t_v6_no_socket

# A dual-stack application: an AF_INET6 socket to an IPv4 peer.
flow mapped ::ffff:10.0.2.1 hpcc ::
MAPPED_TRACE=$(one_hop_lines mapped '\[::ffff:10.1.1.1\]' '\[::ffff:10.0.2.1\]' 2>/dev/null)
t_mapped() {
	echo "tcp_hpcc:hpcc_sample events of the v4-mapped flow with one hop at B: ${MAPPED_TRACE:-none}"
	[ "${D[probes_sent]}" -ge 20 ] &&
		[ "${SW[probes_stamped]}" -ge "${D[probes_received]}" ] &&
		[ $((10 * D[responses_accepted])) -ge $((9 * D[probes_sent])) ] &&
		[ "${D[samples_applied]}" -ge 10 ] &&
		[ -n "$MAPPED_TRACE" ] && [ "$MAPPED_TRACE" -ge 10 ]
}
ktap_check "v4_mapped_socket_probes_over_ipv4" t_mapped

ip netns exec ${HPCC_NS}-s1 nstat -n >/dev/null 2>&1
flow dctcp6 fd00:2::1 dctcp ::
t_dctcp6() {
	local ce
	ce=$(netns_nstat ${HPCC_NS}-s1 TcpExtTCPDeliveredCE)
	echo "dctcp over IPv6: switch CE marks ${SW[ce_marks]}, sender TCPDeliveredCE $ce; tcp_hpcc probes sent ${D[probes_sent]}"
	# CE marks reach dctcp's sender, and an algorithm other than hpcc
	# sends no probes.
	[ "${SW[ce_marks]}" -gt 0 ] && [ "$ce" -gt 0 ] && [ "${D[probes_sent]}" -eq 0 ]
}
ktap_check "ipv6_ce_marking_reaches_dctcp" t_dctcp6

# A receiver whose connection is bound to its device (SO_BINDTODEVICE on
# the listener, as link-local IPv6 connections are to their scope): the
# module must look the connection up on the device the probe came in on.
SERVE_DEV=eth0 flow bound fd00:2::1 hpcc "::"
t_bound() {
	[ "${D[probes_sent]}" -ge 20 ] &&
		[ "${D[probes_no_socket]}" -le 2 ] &&
		[ $((10 * D[responses_accepted])) -ge $((9 * D[probes_sent])) ]
}
ktap_check "device_bound_receiver_answers" t_bound

# Forged IPv6 responses (hpcc_flow.py inject, from the receiver's netns)
# toward a running IPv6 hpcc flow: each kind is counted where the IPv4
# ones are (hpcc_probe.sh), and genuine responses keep being accepted.
N_FORGED=${N_FORGED:-200}
echo 4 >$P/max_hops	# so that 5 valid hops are "over max_hops"
SECS=5 INJECT_FROM=fd00:2::1 flow forged fd00:2::1 hpcc "::"
knobs_reset max_hops
ktap_print_msg "IPv6 forgeries, $N_FORGED of each kind: bad_nonce ${D[responses_bad_nonce]} truncated ${D[malformed_truncated]}" \
	"too_many_hops ${D[responses_too_many_hops]} random(bad magic) ${D[malformed_magic]} no_flow ${D[responses_no_flow]}"
t_v6_forged() {
	[ "${D[responses_bad_nonce]}" -eq "$N_FORGED" ] &&
		[ "${D[malformed_truncated]}" -eq "$N_FORGED" ] &&
		[ "${D[responses_too_many_hops]}" -eq $((2 * N_FORGED)) ] &&
		[ "${D[malformed_magic]}" -eq "$N_FORGED" ] &&
		[ "${D[responses_no_flow]}" -eq "$N_FORGED" ] &&
		[ "${D[probes_sent]}" -ge 20 ] &&
		[ $((10 * D[responses_accepted])) -ge $((9 * D[probes_sent])) ]
}
ktap_check "ipv6_forged_responses_counted_and_ignored" t_v6_forged

t_no_warnings() {
	! dmesg | grep -E 'WARNING:|BUG:|Oops|panicked|refcount_t' | grep -v '^$'
}
ktap_check "no_kernel_warnings" t_no_warnings

ktap_finished
