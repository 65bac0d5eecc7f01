#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc loads, registers "hpcc", is selectable per netns and per
# socket, carries a flow through a shaped bottleneck on the no-telemetry
# fallback at >= 80% utilization with a bounded window, and is pinned while a
# socket uses it. KTAP on stdout; exit 0 pass, 1 fail, 4 skip.
#
# Runs inside the test VM (vm/run). Writes raw data to $HPCC_RESULTS if set.

set -u
. "$(dirname "$0")/lib.sh"

RATE_MBIT=${RATE_MBIT:-100}
DELAY_US=${DELAY_US:-1000}          # one-way; base RTT = 2 * DELAY_US
DURATION=${DURATION:-10}
MIN_UTIL_PCT=${MIN_UTIL_PCT:-80}

ktap_begin 12 ip tc ss iperf3 python3 modprobe insmod rmmod depmod setpriv
# Throughput-dependent checks need a VM that carries B (lib.sh perf_gate).
PERF_WHY=$(perf_gate)
trap 'topo_cleanup; pkill -x iperf3 2>/dev/null' EXIT
ktap_print_msg "perf gate: reference cubic $(cat "$PERF_GATE_FILE.mbps") Mbit/s${PERF_WHY:+ ($PERF_WHY)}"

# BDP and buffer of the bottleneck, in bytes.
BDP=$((RATE_MBIT * 1000000 / 8 * 2 * DELAY_US / 1000000))
BUF=$((2 * BDP))
ktap_print_msg "bottleneck ${RATE_MBIT} Mbit/s, base RTT $((2 * DELAY_US)) us, BDP ${BDP} B, buffer ${BUF} B"

# 1. insmod / rmmod of the built object, then modprobe by name.
t_load() {
	rmmod tcp_hpcc 2>/dev/null
	insmod "$HPCC_ROOT/tcp_hpcc.ko" || return 1
	grep -q '^tcp_hpcc ' /proc/modules || { echo "not in /proc/modules after insmod"; return 1; }
	rmmod tcp_hpcc || return 1
	install_module || return 1
	modprobe tcp_hpcc || return 1
	grep -q '^tcp_hpcc ' /proc/modules || { echo "not in /proc/modules after modprobe"; return 1; }
	dmesg | grep -q 'tcp_hpcc: registered congestion control "hpcc"' ||
		{ echo "no registration message in dmesg"; return 1; }
}
ktap_check "module_loads_insmod_and_modprobe" t_load

# 2. registered with TCP.
t_available() {
	local avail
	avail=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
	echo "available: $avail"
	grep -qw hpcc <<<"$avail"
}
ktap_check "hpcc_in_tcp_available_congestion_control" t_available

# 3. The parameters are the core's knob table (selftests/lib/knob_defaults,
# rust/hpcc_core/knobs.rs): the same names, each at its default.
t_params_are_the_table() {
	local p=/sys/module/tcp_hpcc/parameters have want k v d bad=0
	have=$(ls "$p" | sort)
	want=$(knob_names | sort)
	[ "$have" = "$want" ] || { diff <(echo "$want") <(echo "$have"); return 1; }
	for k in $(knob_names); do
		v=$(cat "$p/$k") d=$(knob_default "$k")
		[ "$v" = "$d" ] || { echo "$k: $v, the table's default $d"; bad=1; }
	done
	echo "$(wc -w <<<"$want") parameters, each at the table's default"
	return $bad
}
ktap_check "parameters_are_the_knob_table_at_its_defaults" t_params_are_the_table

# 4. parameters are visible, and invalid values are refused.
t_params() {
	local p=/sys/module/tcp_hpcc/parameters
	local k
	for k in init_window_bytes fallback_ai_segs fallback_beta min_cwnd_segs max_cwnd_segs; do
		[ -r "$p/$k" ] || { echo "missing $p/$k"; return 1; }
	done
		echo 0 >"$p/init_window_bytes" 2>/dev/null && { echo "init_window_bytes=0 accepted"; return 1; }
	echo 1024 >"$p/fallback_beta" 2>/dev/null && { echo "fallback_beta=1024 accepted"; return 1; }
	echo 1 >"$p/min_cwnd_segs" 2>/dev/null && { echo "min_cwnd_segs=1 accepted"; return 1; }
	echo 100 >"$p/max_cwnd_segs" || return 1
	echo 200 >"$p/min_cwnd_segs" 2>/dev/null && { echo "min above max accepted"; return 1; }
	echo garbage >"$p/fallback_ai_segs" 2>/dev/null && { echo "non-number accepted"; return 1; }
	knob_default max_cwnd_segs >"$p/max_cwnd_segs" || return 1
	[ "$(cat $p/init_window_bytes)" = "$(knob_default init_window_bytes)" ] || { echo "init_window_bytes changed"; return 1; }
	# HPCC++ knobs: 0/1 switches and ranges are enforced, valid writes stick.
	echo 2 >"$p/qlen_min_filter" 2>/dev/null && { echo "qlen_min_filter=2 accepted"; return 1; }
	echo 2 >"$p/window_validation" 2>/dev/null && { echo "window_validation=2 accepted"; return 1; }
	echo 100 >"$p/max_increase_pct" 2>/dev/null && { echo "max_increase_pct=100 accepted"; return 1; }
	echo 99 >"$p/pace_srtt_cap_pct" 2>/dev/null && { echo "pace_srtt_cap_pct=99 accepted"; return 1; }
	echo 1001 >"$p/pace_srtt_cap_pct" 2>/dev/null && { echo "pace_srtt_cap_pct=1001 accepted"; return 1; }
	echo 0 >"$p/pace_srtt_cap_pct" && [ "$(cat $p/pace_srtt_cap_pct)" = 0 ] || { echo "pace_srtt_cap_pct=0 refused"; return 1; }
	knob_default pace_srtt_cap_pct >"$p/pace_srtt_cap_pct" || return 1
	echo 1 >"$p/qlen_min_filter" && [ "$(cat $p/qlen_min_filter)" = 1 ] || { echo "qlen_min_filter=1 refused"; return 1; }
	knob_default qlen_min_filter >"$p/qlen_min_filter" || return 1
	dmesg | grep -q 'tcp_hpcc: rejected' || { echo "no pr_warn for rejected value"; return 1; }
}
ktap_check "params_visible_and_validated" t_params

topo_line || { ktap_test_fail "topology"; ktap_finished; }

# 5. Restricted like dctcp: right after loading, a netns cannot make hpcc
# its default and an unprivileged socket cannot pick it, while root
# (CAP_NET_ADMIN) can; once an admin adds it to
# net.ipv4.tcp_allowed_congestion_control (hpcc_allow), both can.
sockopt_as() { # sockopt_as root|nobody ALGO: setsockopt(TCP_CONGESTION) works?
	local run=()
	[ "$1" = nobody ] && run=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
	ip netns exec "$NS_SND" "${run[@]}" python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
' "$2" 2>/dev/null
}
t_sysctl() {
	local allowed
	allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
	case " $allowed " in *" hpcc "*) echo "allowed right after loading: $allowed"; return 1 ;; esac
	if ip netns exec "$NS_SND" sysctl -qw net.ipv4.tcp_congestion_control=hpcc 2>/dev/null; then
		echo "a netns made restricted hpcc its default"; return 1
	fi
	if sockopt_as nobody hpcc; then echo "an unprivileged socket picked restricted hpcc"; return 1; fi
	sockopt_as nobody cubic || { echo "an unprivileged socket cannot pick cubic (test broken)"; return 1; }
	sockopt_as root hpcc || { echo "root cannot pick restricted hpcc"; return 1; }
	hpcc_allow || return 1
	sockopt_as nobody hpcc || { echo "an unprivileged socket cannot pick allowed hpcc"; return 1; }
	ip netns exec "$NS_SND" sysctl -qw net.ipv4.tcp_congestion_control=hpcc || return 1
	[ "$(ip netns exec "$NS_SND" sysctl -n net.ipv4.tcp_congestion_control)" = hpcc ] || return 1
	# The init netns is untouched.
	[ "$(sysctl -n net.ipv4.tcp_congestion_control)" != hpcc ]
}
ktap_check "restricted_until_allowed_then_sysctl_selects_hpcc_in_netns" t_sysctl

# 6. per-socket by setsockopt(TCP_CONGESTION), as an unprivileged-style
# request from a netns whose default is cubic.
t_setsockopt() {
	ip netns exec "$NS_RCV" python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"hpcc")
got = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0")
print("getsockopt:", got)
assert got == b"hpcc", got
EOF
}
ktap_check "setsockopt_selects_hpcc" t_setsockopt

# 7-9. A bulk flow through the shaped bottleneck.
topo_shape "$RATE_MBIT" "$DELAY_US" "$BUF"
# The flow, as a function: the utilization check runs it once more if it
# fails on a host that still carries B (lib.sh ktap_perf_check).
fallback_flow() {
	ip netns exec "$NS_RCV" iperf3 -s -D -1 -p 5201 --logfile "$RESULTS/iperf3-server.log"
	sleep 0.5
	SS_LOG=$RESULTS/hpcc_basic.ss.log
	TC_LOG=$RESULTS/hpcc_basic.tc.log
	: >"$SS_LOG"
	: >"$TC_LOG"
	# Samples the sender's sockets and the bottleneck's byte counter (L2 bytes
	# the tbf has sent: the link's true load) every 200 ms.
	(
		end=$((SECONDS + DURATION + 3))
		while [ $SECONDS -lt $end ]; do
			ip netns exec "$NS_SND" ss -tin dst 10.0.2.1 >>"$SS_LOG" 2>/dev/null
			echo "T $(date +%s%N) $(ip netns exec "$NS_SW" tc -s qdisc show dev sw-rcv | awk '/Sent/ { print $2; exit }')" >>"$TC_LOG"
			sleep 0.2
		done
	) &
	sampler=$!
	ip netns exec "$NS_SND" iperf3 -c 10.0.2.1 -p 5201 -t "$DURATION" -O 2 -C hpcc -J \
		>"$RESULTS/hpcc_basic.iperf3.json" 2>&1
	iperf_rc=$?
	wait $sampler
}
fallback_flow

t_transfer() {
	[ $iperf_rc -eq 0 ] || { head -c 2000 "$RESULTS/hpcc_basic.iperf3.json"; return 1; }
	grep -q '"bytes":' "$RESULTS/hpcc_basic.iperf3.json" || return 1
}
ktap_check "transfer_through_bottleneck_completes" t_transfer

t_ss_shows_hpcc() {
	grep -q ' hpcc ' "$SS_LOG" || { echo "ss -ti never showed hpcc"; tail -5 "$SS_LOG"; return 1; }
}
ktap_check "ss_ti_shows_hpcc" t_ss_shows_hpcc

# Utilization of B: bytes the bottleneck sent (L2, as tbf counts them) over
# the measured part of the flow, i.e. after iperf3's 2 s omit and before its
# end. TCP goodput (iperf3, payload only) is reported beside it.
fallback_measure() { # sets UTIL_PCT GOODPUT_PCT MAX_CWND MEAN_CWND CWND_BOUND
	read -r UTIL_PCT GOODPUT_PCT MAX_CWND MEAN_CWND < <(python3 - "$RESULTS/hpcc_basic.iperf3.json" "$SS_LOG" "$RATE_MBIT" "$TC_LOG" "$DURATION" <<'EOF'
import json, re, sys
j = json.load(open(sys.argv[1]))
rate = float(sys.argv[3]) * 1e6
goodput = 100.0 * j["end"]["sum_received"]["bits_per_second"] / rate
cw = [int(m) for m in re.findall(r"\bcwnd:(\d+)", open(sys.argv[2]).read())]
pts = [(int(t) / 1e9, int(b)) for _, t, b in (l.split() for l in open(sys.argv[4])) if b.isdigit()]
util = -1.0
if pts:
    t0 = pts[0][0] + 2.5                     # past the omitted start-up
    t1 = t0 + float(sys.argv[5]) - 1.0       # before the flow ends
    win = [p for p in pts if t0 <= p[0] <= t1]
    if len(win) >= 2 and win[-1][0] > win[0][0]:
        util = 100.0 * (win[-1][1] - win[0][1]) * 8 / (win[-1][0] - win[0][0]) / rate
print(f"{util:.1f}", f"{goodput:.1f}", max(cw) if cw else -1, f"{sum(cw)/len(cw):.1f}" if cw else -1)
EOF
	)
	MSS=1448
	CWND_BOUND=$(((BDP + BUF) * 2 / MSS + 10))
	ktap_print_msg "fallback: link utilization ${UTIL_PCT}% of ${RATE_MBIT} Mbit/s (TCP goodput ${GOODPUT_PCT}%), cwnd mean ${MEAN_CWND} max ${MAX_CWND} segs (bound ${CWND_BOUND})"
	echo "rate_mbit=$RATE_MBIT util_pct=$UTIL_PCT goodput_pct=$GOODPUT_PCT cwnd_mean=$MEAN_CWND cwnd_max=$MAX_CWND cwnd_bound=$CWND_BOUND" \
		>"$RESULTS/hpcc_basic.fallback.txt"
}
fallback_measure

fallback_rerun() { fallback_flow; fallback_measure; }
t_util() {
	python3 -c "import sys; sys.exit(0 if float('$UTIL_PCT') >= $MIN_UTIL_PCT else 1)"
}
ktap_perf_check "fallback_utilization_at_least_${MIN_UTIL_PCT}pct" t_util fallback_rerun

t_bounded() {
	[ "$MAX_CWND" -gt 0 ] && [ "$MAX_CWND" -le "$CWND_BOUND" ]
}
ktap_check "fallback_window_bounded" t_bounded

# 10-11. A socket using hpcc pins the module; once it is gone, rmmod works.
topo_cleanup
sleep 0.5
python3 - <<'EOF' &
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"hpcc")
time.sleep(60)
EOF
holder=$!
# Under TCG python can take seconds to start: wait for the socket (10 s).
for _ in $(seq 1 100); do
	[ "$(awk '$1 == "tcp_hpcc" { print $3 }' /proc/modules)" -ge 1 ] 2>/dev/null && break
	sleep 0.1
done
t_rmmod_busy() {
	local refs
	refs=$(awk '$1 == "tcp_hpcc" { print $3 }' /proc/modules)
	echo "refcount with a socket: $refs"
	[ "${refs:-0}" -ge 1 ] || return 1
	if rmmod tcp_hpcc 2>&1; then echo "rmmod succeeded while in use"; return 1; fi
	grep -q '^tcp_hpcc ' /proc/modules
}
ktap_check "rmmod_refused_while_socket_uses_hpcc" t_rmmod_busy
kill $holder 2>/dev/null
wait $holder 2>/dev/null
t_rmmod_ok() {
	unload_module || return 1
	! grep -qw hpcc /proc/sys/net/ipv4/tcp_available_congestion_control
}
ktap_check "rmmod_succeeds_after_socket_closes" t_rmmod_ok

ktap_finished
