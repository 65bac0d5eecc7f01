#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc's side of Source Flow Control (rust/sfc_rx.rs) with
# the emulated switch's signals (int_switch_sfc.sh tests the switch). One
# hpcc sender through a 10 Mbit/s port, base RTT 20 ms split, buffer
# 100 kB; the switch signals at 20 kB:
#
#  1. off by default: sfc_enable 0 and an empty sfc_acl; every signal is
#     counted as disabled, none applied;
#  2. enabled with the switch in sfc_acl: signals pause the flow (applied
#     or deferred to the next ACK) and cut its window;
#  3. spoofed and malformed signals, injected by a raw socket while the
#     switch is silent (outside the access list, TTL 254, an unknown flow,
#     a sequence number outside the flow's window, truncated, a bad
#     version): each counted exactly under its reason, none applied;
#  4. no kernel warning.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/int_switch.sh"

SIG=$HPCC_ROOT/selftests/sfc_signal.py
RESULTS=${HPCC_RESULTS:-/tmp}
OUT=$RESULTS/hpcc_sfc
P=/sys/module/tcp_hpcc/parameters
PORT=9000

require_root_and_vm
require_tools ip tc bpftool python3 modprobe

ktap_header 4
mkdir -p "$OUT"
cleanup() {
	echo 0 >"$P/sfc_enable" 2>/dev/null
	echo "" >"$P/sfc_acl" 2>/dev/null
	intsw_cleanup
}
trap cleanup EXIT
dmesg -c >/dev/null 2>&1
intsw_build >/dev/null 2>&1 || { ktap_fail "emulator_builds"; ktap_finish; }
install_module >/dev/null 2>&1 && modprobe tcp_hpcc || { ktap_fail "module_loads"; ktap_finish; }
intsw_topo_fanin 1 rate_mbit=10 rtt_us=20000 split=1 buffer=100000 >"$OUT/topo.log" 2>&1 &&
	intsw_sfc hpcc-sw1 rcv trigger=20000 target=2000 suppress_us=2000 >>"$OUT/topo.log" 2>&1 &&
	ip netns exec hpcc-s1 sysctl -qw net.ipv4.tcp_congestion_control=hpcc ||
	{ ktap_info_lines <"$OUT/topo.log"; ktap_fail "topology"; ktap_finish; }

# sfc counters of the sender's netns as "name=value" words.
sfc_counts() { ip netns exec hpcc-s1 cat /proc/net/hpcc_stat | awk '/^sfc_/ { print $1 "=" $2 }'; }
delta() { # delta BEFORE_FILE AFTER_FILE NAME
	local a b
	a=$(awk -F= -v k="$3" '$1 == k { print $2 }' "$1")
	b=$(awk -F= -v k="$3" '$1 == k { print $2 }' "$2")
	echo $((${b:-0} - ${a:-0}))
}

# flow NAME SECS: an hpcc bulk flow hpcc-s1 -> hpcc-rcv for SECS seconds.
flow() {
	ip netns exec hpcc-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	local k=$!
	wait_listening hpcc-rcv "sport = :$PORT" 1 || return 1
	ip netns exec hpcc-s1 python3 "$SIG" tcpsend 10.0.2.1 $PORT "$2" >"$OUT/$1.send"
	wait $k
}

# 1. Off by default.
t_default_off() {
	echo "sfc_enable=$(cat $P/sfc_enable) sfc_acl='$(cat $P/sfc_acl)'"
	[ "$(cat $P/sfc_enable)" = 0 ] && [ -z "$(cat $P/sfc_acl)" ] || return 1
	intsw_reset hpcc-sw1 rcv
	sfc_counts >"$OUT/off.0"
	flow off 3 || return 1
	sfc_counts >"$OUT/off.1"
	local sent rx dis app
	sent=$(intsw_get hpcc-sw1 rcv sfc_signals_sent)
	rx=$(delta "$OUT/off.0" "$OUT/off.1" sfc_received)
	dis=$(delta "$OUT/off.0" "$OUT/off.1" sfc_disabled)
	app=$(( $(delta "$OUT/off.0" "$OUT/off.1" sfc_applied) + $(delta "$OUT/off.0" "$OUT/off.1" sfc_deferred) ))
	echo "switch sent $sent signals; host received $rx, disabled $dis, applied $app; $(tail -1 "$OUT/off.send")"
	[ "$sent" -gt 0 ] && [ "$rx" -gt 0 ] && [ "$rx" -le "$sent" ] && [ "$dis" -eq "$rx" ] && [ "$app" -eq 0 ]
}
ktap_check "disabled_by_default_counts_and_ignores" t_default_off
Q_OFF=$(intsw_get hpcc-sw1 rcv qlen_p99_bytes)

# 2. Enabled for the switch's address.
t_enabled() {
	echo 10.255.0.0/24 >"$P/sfc_acl" && echo 1 >"$P/sfc_enable" || return 1
	echo "sfc_acl: $(cat $P/sfc_acl)"
	intsw_reset hpcc-sw1 rcv
	sfc_counts >"$OUT/on.0"
	flow on 3 || return 1
	sfc_counts >"$OUT/on.1"
	local sent rx app def cut
	sent=$(intsw_get hpcc-sw1 rcv sfc_signals_sent)
	rx=$(delta "$OUT/on.0" "$OUT/on.1" sfc_received)
	app=$(delta "$OUT/on.0" "$OUT/on.1" sfc_applied)
	def=$(delta "$OUT/on.0" "$OUT/on.1" sfc_deferred)
	cut=$(delta "$OUT/on.0" "$OUT/on.1" sfc_window_cuts)
	echo "switch sent $sent; host received $rx, applied $app, deferred $def, window cuts $cut;" \
		"queue p99 $(intsw_get hpcc-sw1 rcv qlen_p99_bytes) B (SFC off: $Q_OFF B); $(tail -1 "$OUT/on.send")"
	echo "all sfc counters:"; paste -sd' ' "$OUT/on.1"
	[ "$rx" -gt 0 ] && [ $((app + def)) -gt 0 ] && [ "$cut" -gt 0 ]
}
ktap_check "enabled_signals_pause_and_cut" t_enabled

# 3. Spoofed and malformed signals, the switch silent.
t_spoof() {
	intsw_sfc hpcc-sw1 rcv trigger=0 >/dev/null || return 1
	ip netns exec hpcc-rcv python3 "$SIG" sink $PORT 120 >/dev/null &
	local k=$!
	wait_listening hpcc-rcv "sport = :$PORT" 1 || return 1
	ip netns exec hpcc-s1 python3 "$SIG" tcpsend 10.0.2.1 $PORT 30 >"$OUT/spoof.send" &
	local s=$! i
	for i in $(seq 1 100); do [ -s "$OUT/spoof.send" ] && break; sleep 0.2; done
	local sport isn
	sport=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["sport"])' "$OUT/spoof.send")
	isn=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["isn"])' "$OUT/spoof.send")
	sleep 1
	sfc_counts >"$OUT/spoof.0"
	# One process sends all, while the connection is surely up.
	ip netns exec hpcc-sw1 python3 "$SIG" inject --to 10.1.1.1 --dport $PORT --count 10 \
		--case "10.9.9.9,255,$sport,0,good" --case "10.255.0.1,254,$sport,0,good" \
		--case "10.255.0.1,255,1,0,good" \
		--case "10.255.0.1,255,$sport,$(((isn - 1000000) & 0xffffffff)),good" \
		--case "10.255.0.1,255,$sport,0,truncated" --case "10.255.0.1,255,$sport,0,badversion" \
		>"$OUT/spoof.inject" || return 1
	sleep 1
	sfc_counts >"$OUT/spoof.1"
	local alive
	alive=$(ip netns exec hpcc-s1 ss -tnH state established "( sport = :$sport )" | wc -l)
	echo "connection still established after the injections: $alive"
	kill $s 2>/dev/null
	wait $s
	wait $k
	local n ok=0
	for n in sfc_received:60 sfc_not_in_acl:10 sfc_bad_ttl:10 sfc_no_flow:10 sfc_seq_out_of_window:10 \
		sfc_truncated:10 sfc_bad_header:10 sfc_applied:0 sfc_deferred:0 sfc_window_cuts:0 \
		sfc_rate_limited:0 sfc_disabled:0; do
		local got
		got=$(delta "$OUT/spoof.0" "$OUT/spoof.1" "${n%%:*}")
		echo "${n%%:*}: $got (want ${n#*:})"
		[ "$got" -eq "${n#*:}" ] || ok=1
	done
	[ "$alive" -eq 1 ] || ok=1
	return $ok
}
ktap_check "spoofed_and_malformed_counted_never_applied" t_spoof

t_dmesg() {
	dmesg >"$OUT/dmesg.txt" 2>&1
	! grep -E "WARNING|BUG|Oops|RCU|KASAN|UBSAN" "$OUT/dmesg.txt"
}
ktap_check "no_kernel_warnings" t_dmesg

ktap_finish
