#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: who may send tcp_hpcc an SFC signal (rust/hpcc_core/sfc/admit.rs
# `Rules::admit`, rust/tcp_hpcc/sfc_rx.rs). SFC on, the switches'
# prefixes 10.255.0.0/24 and fd00:ff::/64 in sfc_acl, the fabric port eth0
# in sfc_ifaces; one hpcc connection per check, and one signal (TTL 255,
# valid UDP checksum, its sequence number in flight) for it, sent
# by each kind of sender. A check passes when exactly that signal is
# counted under the expected outcome:
#
#  1. a switch (a frame from the switch's port): applied to its flow, and
#     only that flow, by the tracepoint;
#  2. the same signal twice: the second is a duplicate;
#  3. a raw socket of this host to its own address: loopback;
#  4. an unprivileged UDP socket from a local address in sfc_acl with
#     IP_TTL 255: loopback;
#  5. a frame on the fabric port whose source is this host's own address
#     (accept_local on, so it is not dropped as a martian first): local
#     source;
#  6. a container on a veth sending from the switch's address: not on an
#     allowed device;
#  7. an IPIP tunnel and 8. a GRE tunnel whose inner packet comes from the
#     switch's address with TTL 255: tunnel;
#  9. IPv6 from the IPv4-mapped ::ffff:10.255.0.1: bad source;
# 10. an IPv4 signal in an IPv6 packet from an allowed IPv6 switch: bad
#     header (the family must be the packet's);
# 11. a UDP length of 4000 on the 96-byte datagram, a UDP checksum of 0
#     and a wrong one: bad UDP;
# 12. sfc_scope 1: 64 signals for UDP tuples that have no local socket are
#     refused (no flow) and fill nothing: a signal for a real local UDP
#     socket is then applied at egress;
# 13. sfc_scope 1: datagrams of a paused 5-tuple that a container sends
#     through this host (forwarded) are not held, the local socket's are;
# 14. no kernel warning.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

PORT=9010
S1=${HPCC_NS}-s1
SW=${HPCC_NS}-sw1
CTR=${HPCC_NS}-ctr

ktap_begin 16 ip tc bpftool python3 modprobe
cleanup() {
	knobs_reset sfc_enable sfc_scope sfc_max_pause_us sfc_acl sfc_ifaces
	ip netns del "$CTR" 2>/dev/null
	intsw_cleanup
}
trap cleanup EXIT
dmesg -c >/dev/null 2>&1
ktap_need emulator_builds intsw_build
ktap_need module_loads load_module

# The switch is silent (no intsw_sfc): every signal here is injected.
setup() {
	# 10 Mbit/s and a 20 ms base RTT: a signal's sequence number, read from
	# TCP_INFO by a Python process under TCG, is still in flight when it
	# arrives.
	intsw_topo_fanin 1 rate_mbit=10 rtt_us=20000 split=1 &&
		ip netns exec "$S1" sysctl -qw net.ipv4.tcp_congestion_control=hpcc || return 1
	# Forged sources must reach LOCAL_IN to be counted: no reverse-path
	# filter, local sources accepted on the fabric port.
	local k
	for k in all default eth0; do ip netns exec "$S1" sysctl -qw "net.ipv4.conf.$k.rp_filter=0" || return 1; done
	ip netns exec "$S1" sysctl -qw net.ipv4.conf.eth0.accept_local=1 net.ipv4.ip_forward=1 || return 1
	# A local address inside sfc_acl, and an IPv6 address.
	ip netns exec "$S1" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0 &&
		ip -n "$S1" addr add 10.255.0.77/32 dev lo &&
		ip -n "$S1" addr add fd00:99::1/128 dev eth0 nodad || return 1
	# IPIP and GRE tunnels from the switch's port address.
	ip -n "$S1" link add tun0 type ipip local 10.1.1.1 remote 10.1.1.2 &&
		ip -n "$S1" link add gre1 type gre local 10.1.1.1 remote 10.1.1.2 &&
		ip -n "$S1" link set tun0 up && ip -n "$S1" link set gre1 up || return 1
	for k in tun0 gre1; do ip netns exec "$S1" sysctl -qw "net.ipv4.conf.$k.rp_filter=0" || return 1; done
	# A container on a veth.
	ip netns add "$CTR" &&
		ip link add vctr netns "$S1" type veth peer name eth0 netns "$CTR" &&
		ip -n "$S1" addr add 192.168.77.1/24 dev vctr && ip -n "$S1" link set vctr up &&
		ip -n "$CTR" addr add 192.168.77.2/24 dev eth0 && ip -n "$CTR" link set eth0 up &&
		ip -n "$CTR" link set lo up && ip -n "$CTR" route add default via 192.168.77.1 || return 1
	ip netns exec "$S1" sysctl -qw net.ipv4.conf.vctr.rp_filter=0 net.ipv4.conf.vctr.accept_local=1 || return 1
	# sch_fq on the fabric port: packets held at egress (sfc_scope 1) wait there.
	tc -n "$S1" qdisc replace dev eth0 root fq || return 1
	echo 10.255.0.0/24,fd00:ff::/64 >"$P/sfc_acl" && echo eth0 >"$P/sfc_ifaces" && echo 1 >"$P/sfc_enable"
}
setup >"$OUT/topo.log" 2>&1 || { ktap_print_msg_lines <"$OUT/topo.log"; ktap_test_fail "topology"; ktap_finished; }
ktap_test_pass "topology"

SFC_EV=$HPCC_TR/events/tcp_hpcc/hpcc_sfc/enable

# sent NAME [pause options...]: one hpcc connection for 2 s and, 1 s in,
# its signal sent as the options say; the counters before and after in
# $OUT/NAME.0 and .1, the trace in $OUT/NAME.trace.
sent() {
	local name=$1
	shift
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 60 >/dev/null &
	local k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	sfc_counts "$S1" >"$OUT/$name.0"
	hpcc_tracefs && echo >"$HPCC_TR/trace" && echo 1 >"$SFC_EV"
	ip netns exec "$S1" python3 "$SIG" pause 10.0.2.1 $PORT --after 1 --secs 2 "$@" >"$OUT/$name.json" 2>"$OUT/$name.err"
	local rc=$?
	sleep 0.3
	echo 0 >"$SFC_EV"
	grep 'hpcc_sfc: ' "$HPCC_TR/trace" >"$OUT/$name.trace"
	sfc_counts "$S1" >"$OUT/$name.1"
	wait $k
	[ $rc -eq 0 ] || { cat "$OUT/$name.err"; return 1; }
}

# expect NAME COUNTER[+COUNTER...]=N...: each counter (or sum) grew by
# exactly N; any sfc counter not named grew by 0, but sfc_window_cuts
# (any).
expect() {
	local name=$1 ok=0 kv c want got
	shift
	for kv in "$@"; do
		c=${kv%%=*} want=${kv#*=} got=0
		local part
		for part in ${c//+/ }; do got=$((got + $(sfc_delta "$OUT/$name.0" "$OUT/$name.1" "$part"))); done
		echo "$c: $got (want $want)"
		[ "$got" -eq "$want" ] || ok=1
	done
	for c in $(cut -d= -f1 "$OUT/$name.1"); do
		case " ${*//+/= } " in *" $c="*) continue ;; esac
		case $c in sfc_window_cuts) continue ;; esac
		got=$(sfc_delta "$OUT/$name.0" "$OUT/$name.1" "$c")
		[ "$got" -eq 0 ] || { echo "$c: $got (want 0)"; ok=1; }
	done
	return $ok
}

FROM_SWITCH=(--inject frame --inject-ns "$SW" --inject-dev s1 --rx-dev eth0)

t_switch() {
	sent switch "${FROM_SWITCH[@]}" || return 1
	local sport
	sport=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sport"])' "$OUT/switch.json")
	cat "$OUT/switch.trace"
	expect switch sfc_received=1 sfc_applied+sfc_deferred=1 &&
		[ "$(grep -cE ' (applied|deferred)$' "$OUT/switch.trace")" -eq 1 ] &&
		grep -q "10.1.1.1\]:$sport->" "$OUT/switch.trace"
}
ktap_check_v "switch_signal_pauses_exactly_its_flow" t_switch

t_replay() {
	sent replay "${FROM_SWITCH[@]}" --repeat 2 && expect replay sfc_received=2 sfc_applied+sfc_deferred=1 sfc_duplicate=1
}
ktap_check_v "replayed_signal_counted_duplicate" t_replay

t_loopback() { sent lo --inject raw && expect lo sfc_received=1 sfc_loopback=1; }
ktap_check_v "raw_socket_of_this_host_refused" t_loopback

t_udp_local() { sent udp --inject udp --src 10.255.0.77 && expect udp sfc_received=1 sfc_loopback=1; }
ktap_check_v "unprivileged_udp_sender_with_ttl_255_refused" t_udp_local

t_local_source() { sent localsrc "${FROM_SWITCH[@]}" --src 10.255.0.77 && expect localsrc sfc_received=1 sfc_local_source=1; }
ktap_check_v "own_address_on_the_fabric_refused" t_local_source

t_container() {
	sent ctr --inject frame --inject-ns "$CTR" --inject-dev eth0 --rx-dev vctr && expect ctr sfc_received=1 sfc_not_on_iface=1
}
ktap_check_v "container_veth_sender_refused" t_container

t_ipip() {
	sent ipip "${FROM_SWITCH[@]}" --encap ipip --outer-src 10.1.1.2 --outer-dst 10.1.1.1 &&
		expect ipip sfc_received=1 sfc_tunnel=1
}
ktap_check_v "ipip_tunnel_inner_signal_refused" t_ipip

t_gre() {
	sent gre "${FROM_SWITCH[@]}" --encap gre --outer-src 10.1.1.2 --outer-dst 10.1.1.1 &&
		expect gre sfc_received=1 sfc_tunnel=1
}
ktap_check_v "gre_tunnel_inner_signal_refused" t_gre

t_mapped() {
	sent mapped "${FROM_SWITCH[@]}" --src ::ffff:10.255.0.1 --to6 fd00:99::1 &&
		expect mapped sfc_received=1 sfc_bad_source=1
}
ktap_check_v "ipv4_mapped_ipv6_source_refused" t_mapped

t_family() {
	sent family "${FROM_SWITCH[@]}" --src fd00:ff::1 --to6 fd00:99::1 &&
		expect family sfc_received=1 sfc_bad_header=1
}
ktap_check_v "ipv4_signal_in_ipv6_packet_refused" t_family

t_udp() {
	local ok=0
	sent udplen "${FROM_SWITCH[@]}" --udp-len 4000 && expect udplen sfc_received=1 sfc_bad_udp=1 || ok=1
	sent csum0 "${FROM_SWITCH[@]}" --udp-csum zero && expect csum0 sfc_received=1 sfc_bad_udp=1 || ok=1
	sent csumbad "${FROM_SWITCH[@]}" --udp-csum bad && expect csumbad sfc_received=1 sfc_bad_udp=1 || ok=1
	return $ok
}
ktap_check_v "bad_udp_length_or_checksum_refused" t_udp

t_bogus_tuples() {
	echo 1 >"$P/sfc_scope" || return 1
	sfc_counts "$S1" >"$OUT/bogus.0"
	ip netns exec "$S1" python3 "$SIG" spray --inject-ns "$SW" --inject-dev s1 --local 10.1.1.1 \
		--sports 20000-20063 --pause-us 10000 || return 1
	sleep 0.2
	sfc_counts "$S1" >"$OUT/bogus.1"
	expect bogus sfc_received=64 sfc_no_flow=64 || return 1
	# A real local UDP socket's flow still gets its pause. The socket
	# marks itself bound (python can take seconds to start: a fixed
	# sleep lost the race in virtual time) and lives until killed.
	rm -f "$OUT/udp.ready"
	ip netns exec "$S1" python3 -c 'import socket, sys, time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 20100))
open(sys.argv[1], "w").write("1"); time.sleep(60)' "$OUT/udp.ready" &
	local u=$!
	wait_files 30 "$OUT/udp.ready" || { kill $u 2>/dev/null; echo "the UDP socket never bound"; return 1; }
	sfc_counts "$S1" >"$OUT/real.0"
	ip netns exec "$S1" python3 "$SIG" spray --inject-ns "$SW" --inject-dev s1 --local 10.1.1.1 \
		--sports 20100-20100 --pause-us 10000 || return 1
	sleep 0.2
	sfc_counts "$S1" >"$OUT/real.1"
	kill $u 2>/dev/null
	wait $u
	expect real sfc_received=1 sfc_applied_egress=1
}
ktap_check_v "scope1_bogus_tuples_refused_real_one_applied" t_bogus_tuples

t_forwarded() {
	echo 1 >"$P/sfc_scope" && echo 1000000 >"$P/sfc_max_pause_us" || return 1
	ip netns exec "$S1" python3 "$SIG" scope-hold --inject-ns "$SW" --inject-dev s1 --local 10.1.1.1 \
		--sport 20200 --from-ns "$CTR" --pause-us 1000000 >"$OUT/fwd.json" || return 1
	cat "$OUT/fwd.json"
	python3 - "$OUT/fwd.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["applied_egress"] == 1 and r["fwd_held"] == 0 and r["local_held"] >= 1 else 1)
PY
}
ktap_check_v "scope1_holds_only_this_netns_sockets_packets" t_forwarded

# The access list and interface list are root's only; the knobs readable.
t_modes() {
	local a i k
	a=$(stat -c %a "$P/sfc_acl") i=$(stat -c %a "$P/sfc_ifaces") k=$(stat -c %a "$P/sfc_enable")
	echo "sfc_acl $a, sfc_ifaces $i, sfc_enable $k"
	[ "$a" = 600 ] && [ "$i" = 600 ] && [ "$k" = 644 ]
}
ktap_check_v "acl_and_interface_list_are_root_only" t_modes

t_dmesg() {
	! dmesg | grep -E 'WARNING|BUG|Oops|lockdep|soft lockup' | tee "$OUT/dmesg.txt" | grep -q .
}
ktap_check "no_kernel_warnings" t_dmesg

ktap_finished
