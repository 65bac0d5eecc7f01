# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# One measured scenario on the INT switch emulator: a topology, N bulk
# flows of one congestion control, and the bottleneck's own counters.
# Source after lib.sh and int_switch.sh. Used by the closed-loop kselftest
# and by the side-by-side benchmark (bench/bench.sh).
#
#   bench_scenario ALGO NFLOWS TOPO SECONDS [key=value ...]
#       TOPO: single (one switch; N senders fan in) | twohop (bottleneck at
#       hop 2) | parallel (route change at half time; 1 flow)
#       keys: rate_mbit=100 rtt_us=2000 buffer=<4 BDP> ecn_k=<BDP/4> tag=NAME
#       select=sysctl (the netns default picks ALGO, not setsockopt)
#       inject=N (N forged responses of each kind toward flow 1, after 1 s)
#       maxrate_mbit=M (each sender's pacing capped at M/N Mbit/s with
#       SO_MAX_PACING_RATE: with cubic, an open-loop fixed-rate reference)
#       sender_gso=0 (senders' devices without TSO/GSO and with
#       gso_max_segs 1: one packet per skb from TCP on)
#       sender_fq=1 (sch_fq on the senders, for every algorithm: how paced
#       congestion controls are deployed) tso_rtt_log=N (the senders'
#       net.ipv4.tcp_tso_rtt_log; unset: the kernel's, as users run it.
#       hpcc sizes its TSO bursts from its pacing rate whatever it is)
#   Prints one JSON object (also appended to $BENCH_JSON if set):
#       algo, flows, topo, rate_mbit, rtt_us, bdp_bytes, secs,
#       util (bottleneck departures / B over the flows' steady part),
#       goodput_mbps, per_flow_mbps, jain,
#       q_p50_bytes, q_p99_bytes, q_max_bytes, q_mean_bytes (per-packet
#       samples of the bottleneck queue, whole run), q_steady_p50_bytes,
#       q_steady_p99_bytes (the same from about 0.5 s after the last flow
#       started, when the start-up is over; null for parallel), drops,
#       drops_late
#       (drops later than 10 base RTTs after the last flow's connection was
#       up; the port's first packet may be the topology's reachability
#       check, much earlier), last_drop_after_start_ms (from the same
#       instant), flows_started_ms (first and last connection, ms after the
#       senders were launched: python under TCG takes 0.3-2 s), ce_marks,
#       probes_stamped, arrivals (intsw.py arrivals: the bottleneck's arrival
#       rate per 1 ms and per 10 ms, fractions of B), hpcc (tcp_hpcc stats
#       deltas), eta, u_updates, u_p25, u_p50, u_p75 (hpcc: the law's
#       target, and its U after each update over the arrivals' window, from
#       the tcp_hpcc:hpcc_sample tracepoint; null otherwise), and for
#       parallel the per-switch probe counts.

BENCH_FLOW=$HPCC_LIB/py/hpcc_flow.py
BENCH_PY=${INTSW_PY:-python3}

_bench_kv() { _intsw_kv "$@"; }

# bench_hpcc_knobs RATE_MBIT RTT_US NFLOWS: tcp_hpcc's deployment knobs for
# the emulated link, as the drafts size them (section 5):
#   init_window_bytes = B*T, "line rate" times the base RTT. The drafts'
#       line-rate start on a datacenter host (10-25 Gbit/s, 20-50 us) is
#       about 64 KiB, 2.6 BDP of this link: each new flow would start well
#       above its share.
#   expected_flows = NFLOWS, the most flows sharing a link (N).
#   wai_bytes = 64 KiB*(1-eta)/N, the W_ai of a 64 KiB initial window,
#       819 B with N = 4. The rule's W_init*(1-eta)/N with W_init = B*T
#       (312 B) leaves flows unfair for seconds: Jain 0.54 and 0.84 in two
#       same-boot 4-flow runs, against 0.96 and 0.98 with 819 B.
# Optional: WAI_BASE, the window the W_ai rule is applied to (default
# 65536, as above; "winit" for the drafts' own rule W_init*(1-eta)/N), and
# PACING_SHIFT (default: the module's).
# Prints the settings.
bench_hpcc_knobs() {
	local rate=$1 rtt=$2 n=$3 base=${4:-65536} shift=${5:-} p=/sys/module/tcp_hpcc/parameters eta winit
	eta=$(cat $p/eta_ppm)
	winit=$((rate * 1000000 / 8 * rtt / 1000000))
	[ "$base" != winit ] || base=$winit
	echo "$n" >$p/expected_flows &&
		echo $winit >$p/init_window_bytes &&
		echo $((base * (1000000 - eta) / 1000000 / n)) >$p/wai_bytes || return 1
	[ -z "$shift" ] || echo "$shift" >$p/pacing_shift || return 1
	echo "tcp_hpcc: init_window_bytes $(cat $p/init_window_bytes), expected_flows $(cat $p/expected_flows), wai_bytes $(cat $p/wai_bytes), pacing_shift $(cat $p/pacing_shift)"
}

_bench_devs() { # _bench_devs NS -> the netns' devices but lo
	ip -n "$1" -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2 }'
}

# _bench_one_packet_per_skb NS...: the netns' devices without TSO/GSO and
# with gso_max_segs 1 (the open-loop references' sender_gso=0).
_bench_one_packet_per_skb() {
	local ns dev
	for ns in "$@"; do
		for dev in $(_bench_devs "$ns"); do
			# TCP builds GSO skbs whatever the device offers
			# (sk_setup_caps), segmented in software after the
			# qdisc: without gso_max_segs 1 a "paced" skb still
			# leaves as a burst of 1 ms of data.
			ip netns exec "$ns" ethtool -K "$dev" tso off gso off >/dev/null
			ip -n "$ns" link set dev "$dev" gso_max_segs 1
		done
	done
}

# bench_paced_reference NFLOWS TOPO SECONDS [key=value ...]: the open-loop
# reference, cubic capped at pct=90 percent of B in total
# (SO_MAX_PACING_RATE) with one packet per skb. It needs no feedback and
# sends no bursts, so the queue it sees is what the host stack adds. Same
# output as bench_scenario.
bench_paced_reference() {
	local n=$1 topo=$2 secs=$3 rate pct
	shift 3
	rate=$(_bench_kv rate_mbit 100 "$@")
	pct=$(_bench_kv pct 90 "$@")
	bench_scenario cubic "$n" "$topo" "$secs" "$@" maxrate_mbit=$((rate * pct / 100)) sender_gso=0
}

# bench_fct_fair_reference SECONDS [key=value ...]: the flow completion
# mix's fair-share reference, cubic with each sender capped at half of
# pct=95 percent of B, one packet per skb. A short flow gets its fair share
# next to the bulk flow from its first byte, with no queue: the slowdowns
# of any controller that shares the port fairly, on this host. Same output
# as bench_fct.
bench_fct_fair_reference() {
	local secs=$1 rate pct
	shift
	rate=$(_bench_kv rate_mbit 100 "$@")
	pct=$(_bench_kv pct 95 "$@")
	bench_fct cubic "$secs" "$@" maxrate_mbit=$((rate * pct / 100)) sender_gso=0
}

# The module's tracepoint (lib.sh hpcc_trace_start/stop) during an hpcc
# run, on CLOCK_MONOTONIC like the emulator and the senders' start stamps,
# in a 4 MB buffer; the trace clock and buffer size are restored after.
_bench_trace_start() {
	hpcc_tracefs || return 0
	_BENCH_TR_CLOCK=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $HPCC_TR/trace_clock)
	_BENCH_TR_KB=$(awk '{ print $1; exit }' $HPCC_TR/buffer_size_kb)
	echo mono >$HPCC_TR/trace_clock
	echo 4096 >$HPCC_TR/buffer_size_kb
	hpcc_trace_start
}
_bench_trace_stop() { # _bench_trace_stop FILE
	hpcc_trace_stop "$1" || return 0
	echo >$HPCC_TR/trace
	echo "${_BENCH_TR_CLOCK:-local}" >$HPCC_TR/trace_clock
	case ${_BENCH_TR_KB:-} in
	[0-9]*) echo "$_BENCH_TR_KB" >$HPCC_TR/buffer_size_kb ;;
	esac
}

_bench_hpcc_stats() {
	hpcc_stats | awk '{ printf "%s\"%s\": %s", (NR > 1 ? ", " : ""), $1, $2 } BEGIN { printf "{" } END { print "}" }'
}

# _bench_link [key=value ...]: sets the caller's rate, rtt, bdp, buffer and
# ecn_k (declared local there) from rate_mbit, rtt_us, buffer and ecn_k.
_bench_link() {
	rate=$(_bench_kv rate_mbit 100 "$@")
	rtt=$(_bench_kv rtt_us 2000 "$@")
	bdp=$((rate * 1000000 / 8 * rtt / 1000000))
	buffer=$(_bench_kv buffer $((4 * bdp)) "$@")
	ecn_k=$(_bench_kv ecn_k $((bdp / 4)) "$@")
}

# bench_scaled_rtt_us RATE_MBIT: the base RTT in us at which a link of
# RATE_MBIT has the bench's BDP, 100 Mbit/s x 2 ms = 25 kB (800 Mbit/s:
# 250 us), so that a run at another rate is the same network, faster.
bench_scaled_rtt_us() {
	echo $((100 * 2000 / $1))
}

# _bench_wait_file FILE SECONDS: until FILE is non-empty (a sender's
# --started stamp), at most SECONDS; the caller goes on either way (and
# then reads what the sender wrote, or not).
_bench_wait_file() {
	local _
	for _ in $(seq 1 $(($2 * 20))); do [ -s "$1" ] && break; sleep 0.05; done
	return 0
}

# _bench_fq NS...: sch_fq at the root of every device of each netns.
_bench_fq() {
	local ns dev
	for ns in "$@"; do
		for dev in $(_bench_devs "$ns"); do tc -n "$ns" qdisc replace dev "$dev" root fq; done
	done
}

# _bench_inject N SENDER_NS SENDER_ADDR: N forged responses toward the
# sender's flow to port 5301, from the receiver's netns (0: none).
_bench_inject() {
	local n=$1 ns=$2 addr=$3 port= try
	[ "$n" -gt 0 ] || return 0
	sleep 1
	# Under TCG the connection may take a moment: wait for it (5 s).
	for try in $(seq 1 50); do
		port=$(ip netns exec "$ns" ss -tnH state established dst 10.0.2.1:5301 |
			awk '{ n = split($3, a, ":"); print a[n]; exit }')
		[ -n "$port" ] && break
		sleep 0.1
	done
	ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" inject all "$n" \
		--src 10.0.2.1 --dst "$addr" --sport 5301 --dport "${port:-1}" >/dev/null
}

# _bench_move_route STARTED_FILE SECS: moves the parallel topology's route
# to path b half way through the flow, counted from its connection (not
# from the sender's start: python's start-up under TCG takes seconds, and
# the route must not move before the flow has run on path a). Sets the
# caller's `moved` to `"stamped_a_at_move": N`, the probes path a had
# stamped by then (not in a subshell: intsw_route sets INTSW_BOTTLENECK).
_bench_move_route() {
	local sa
	_bench_wait_file "$1" "$2"
	sleep "$(echo "$2 / 2" | bc -l)"
	intsw_route b
	sa=$(intsw_get ${HPCC_NS}-swa rcv probes_stamped)
	moved="\"stamped_a_at_move\": $sa"
}

bench_scenario() {
	local algo=$1 n=$2 topo=$3 secs=$4
	shift 4
	local rate rtt bdp buffer ecn_k tag
	_bench_link "$@"
	tag=$(_bench_kv tag "$algo-$n-$topo" "$@")
	local out=${HPCC_RESULTS:-/tmp}/bench-$tag
	local common=(rate_mbit="$rate" rtt_us="$rtt" buffer="$buffer" ecn_k="$ecn_k")

	case $topo in
	single) intsw_topo_fanin "$n" "${common[@]}" ;;
	twohop) intsw_topo_twohop "$n" "${common[@]}" ;;
	parallel) intsw_topo_parallel "${common[@]}" ;;
	*) echo "bench: unknown topology $topo" >&2; return 1 ;;
	esac || { echo "bench: topology $topo failed" >&2; return 1; }

	local senders=() src=() i
	if [ "$topo" = parallel ]; then
		senders=(${HPCC_NS}-s1); src=(10.0.1.1)
	else
		for i in $(seq 1 "$n"); do senders+=("${HPCC_NS}-s$i"); src+=("10.1.$i.1"); done
	fi
	local ns rtt_log
	rtt_log=$(_bench_kv tso_rtt_log "" "$@")
	# ECN stays at the kernel default (tcp_ecn=2: accepted when asked):
	# dctcp asks for it, the other algorithms do not, so CE marking at K
	# only ever acts on dctcp.
	local sender_fq
	sender_fq=$(_bench_kv sender_fq 1 "$@")
	for ns in "${senders[@]}" ${HPCC_NS}-rcv; do
		[ -z "$rtt_log" ] || ip netns exec "$ns" sysctl -qw net.ipv4.tcp_tso_rtt_log="$rtt_log"
	done
	if [ "$sender_fq" = 1 ]; then
		# Hosts pace in sch_fq, as recommended for paced congestion controls.
		_bench_fq "${senders[@]}"
	fi
	[ "$(_bench_kv sender_gso 1 "$@")" != 0 ] || _bench_one_packet_per_skb "${senders[@]}"
	local bns=${INTSW_BOTTLENECK%%/*} bdev=${INTSW_BOTTLENECK##*/}
	local before
	before=$(_bench_hpcc_stats)

	# select=sysctl: the netns default (net.ipv4.tcp_congestion_control)
	# picks the algorithm; otherwise each socket sets it (TCP_CONGESTION).
	local select ccopt=(--cc "$algo")
	select=$(_bench_kv select sockopt "$@")
	if [ "$select" = sysctl ]; then
		for ns in "${senders[@]}" ${HPCC_NS}-rcv; do
			ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$algo"
		done
		ccopt=()
	fi
	# The pacing cap is the sender's alone (SO_MAX_PACING_RATE).
	local pids=() srv=() sendopt=("${ccopt[@]}") maxrate
	maxrate=$(_bench_kv maxrate_mbit "" "$@")
	[ -z "$maxrate" ] || sendopt+=(--maxrate "$(echo "$maxrate / ${#senders[@]}" | bc -l)")
	for i in "${!senders[@]}"; do
		timeout $((secs + 30)) ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" serve $((5301 + i)) --once "${ccopt[@]}" \
			>"$out.srv$i.json" &
		srv+=($!)
	done
	wait_listening ${HPCC_NS}-rcv 'sport >= :5301' "${#senders[@]}"
	intsw_sample "$bns" "$bdev" "${BENCH_SAMPLE_S:-0.2}" $((secs + 2)) >"$out.samples" 2>/dev/null &
	local sampler=$!
	[ "$algo" != hpcc ] || _bench_trace_start
	sleep 0.3
	# CLOCK_MONOTONIC, the emulator's clock (bpf_ktime_get_ns)
	local t_start
	t_start=$("$BENCH_PY" -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
	# Each sender writes when its connection is up: under TCG python takes
	# 0.3 to 2 s to get there, so t_start is not when the flows started.
	local started=() warm=""
	for i in "${!senders[@]}"; do
		started+=("$out.started$i")
		rm -f "$out.started$i"
	done
	# The queue from 0.5 s after the last flow started (the arrivals' window
	# below): the histogram then, subtracted from the one at the end, leaves
	# out the start-up, when each flow starts at its initial window. The
	# reader starts before the flows: a python start 0.5 s into the run
	# stalled the senders, and hpcc, reading the idle port, grew its windows
	# into a queue of about 1 BDP (docs/results.md#the-benchs-own-stall).
	if [ "$topo" != parallel ]; then
		"$BENCH_PY" "$INTSW_DIR/intsw.py" hist "$(intsw_dir "$bns" "$bdev")" --after 0.5 "$secs" "${started[@]}" \
			>"$out.hist-warm.json" &
		warm=$!
	fi
	for i in "${!senders[@]}"; do
		timeout $((secs + 30)) ip netns exec "${senders[$i]}" "$BENCH_PY" "$BENCH_FLOW" send 10.0.2.1 $((5301 + i)) \
			"$secs" "${sendopt[@]}" --started "$out.started$i" >"$out.flow$i.json" &
		pids+=($!)
	done
	_bench_inject "$(_bench_kv inject 0 "$@")" "${senders[0]}" "${src[0]}"
	local moved=""
	[ "$topo" != parallel ] || _bench_move_route "${started[0]}" "$secs"
	for i in "${pids[@]}" "${srv[@]}" $warm; do wait "$i"; done
	wait $sampler
	if [ "$algo" = hpcc ]; then _bench_trace_stop "$out.trace"; else : >"$out.trace"; fi
	local after
	after=$(_bench_hpcc_stats)
	# After a route change the bottleneck is the new path's port.
	bns=${INTSW_BOTTLENECK%%/*} bdev=${INTSW_BOTTLENECK##*/}
	intsw_stats "$bns" "$bdev" --json >"$out.port.json"
	if [ -n "$warm" ] && [ -s "$out.hist-warm.json" ]; then
		"$BENCH_PY" "$INTSW_DIR/intsw.py" hist "$(intsw_dir "$bns" "$bdev")" --since "$out.hist-warm.json" \
			>"$out.queue-steady.json" 2>/dev/null || echo null >"$out.queue-steady.json"
	else
		echo null >"$out.queue-steady.json"
	fi
	# When the flows started: the first and the last connection (t_start if
	# a sender never connected).
	local t_first=$t_start t_all=$t_start ts
	if ts=$(cat "${started[@]}" 2>/dev/null) && ts=$(sort -n <<<"$ts"); then
		t_first=${ts%%$'\n'*}
		t_all=${ts##*$'\n'}
	fi
	# Arrival rates at the bottleneck over the flows' steady part (from
	# 0.5 s after the last flow started to the first one's planned end),
	# from its packet log.
	"$BENCH_PY" "$INTSW_DIR/intsw.py" arrivals "$(intsw_dir "$bns" "$bdev")" $((rate * 1000000)) \
		$((t_all + 500000000)) $((t_first + ${secs%.*} * 1000000000)) >"$out.arrivals.json" 2>/dev/null ||
		echo null >"$out.arrivals.json"
	if [ "$topo" = parallel ]; then
		intsw_stats ${HPCC_NS}-swa rcv --json >"$out.port-a.json"
	fi

	"$BENCH_PY" "$INTSW_DIR/benchstat.py" scenario "$out" "$algo" "$n" "$topo" "$rate" "$rtt" "$bdp" "$secs" \
		"${#senders[@]}" "$before" "$after" "$moved" "$t_start" "$t_first" "$t_all"
}

# bench_join ALGO SECS [key=value ...]: incumbents=N flows (default 3) of
# ALGO into the single bottleneck, and one more that joins join_s seconds
# (default 2) after the last of them started; each sends for SECS from
# its start, the joiner until the incumbents end. Prints one JSON line: `benchstat.py join` over the
# bottleneck's packet log from the joiner's first byte to its end (Jain
# over 10-RTT windows, when it reaches 0.95, utilization, median
# backlog), with the run's parameters. The log holds the port's last
# 65,536 packets: keep SECS - join_s within about 6 s at 100 Mbit/s.
bench_join() {
	local algo=$1 secs=$2
	shift 2
	local rate rtt bdp buffer ecn_k n join_s
	_bench_link "$@"
	n=$(_bench_kv incumbents 3 "$@")
	join_s=$(_bench_kv join_s 2 "$@")
	local out=${HPCC_RESULTS:-/tmp}/bench-join-$algo
	intsw_topo_fanin $((n + 1)) rate_mbit="$rate" rtt_us="$rtt" buffer="$buffer" ecn_k="$ecn_k" ||
		{ echo "bench: topology failed" >&2; return 1; }
	local senders=() i
	for i in $(seq 1 $((n + 1))); do senders+=("${HPCC_NS}-s$i"); done
	[ "$(_bench_kv sender_fq 1 "$@")" != 1 ] || _bench_fq "${senders[@]}"
	local bns=${INTSW_BOTTLENECK%%/*} bdev=${INTSW_BOTTLENECK##*/}
	local srv=() pids=()
	for i in "${!senders[@]}"; do
		timeout $((secs + 30)) ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" serve $((5301 + i)) --once \
			--cc "$algo" >"$out.srv$i.json" &
		srv+=($!)
	done
	wait_listening ${HPCC_NS}-rcv 'sport >= :5301' "${#senders[@]}"
	for i in $(seq 0 $((n - 1))); do
		rm -f "$out.started$i"
		timeout $((secs + 30)) ip netns exec "${senders[$i]}" "$BENCH_PY" "$BENCH_FLOW" send 10.0.2.1 $((5301 + i)) \
			"$secs" --cc "$algo" --started "$out.started$i" >"$out.flow$i.json" &
		pids+=($!)
	done
	for i in $(seq 0 $((n - 1))); do _bench_wait_file "$out.started$i" "$secs"; done
	sleep "$join_s"
	rm -f "$out.started$n"
	timeout $((secs + 30)) ip netns exec "${senders[$n]}" "$BENCH_PY" "$BENCH_FLOW" send 10.0.2.1 $((5301 + n)) \
		"$(echo "$secs - $join_s" | bc -l)" --cc "$algo" --started "$out.started$n" >"$out.flow$n.json" &
	pids+=($!)
	for i in "${pids[@]}" "${srv[@]}"; do wait "$i"; done
	"$BENCH_PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir "$bns" "$bdev")" >"$out.log"
	# From the joiner's connection to 0.2 s before the first incumbent's
	# planned end (each sends SECS from its own start; closing is not the
	# steady state).
	local t_join t_first t_end
	t_join=$(cat "$out.started$n" 2>/dev/null) || t_join=0
	t_first=$(cat "$out.started"[0-9]* 2>/dev/null | sort -n | head -n1)
	t_end=$(echo "${t_first:-0} + ($secs - 0.2) * 1000000000" | bc | cut -d. -f1)
	"$BENCH_PY" "$INTSW_DIR/benchstat.py" join "$out.log" "${t_join:-0}" "${t_end:-0}" "$rtt" "$rate" $((n + 1)) |
		"$BENCH_PY" -c 'import json, sys
r = json.load(sys.stdin)
r.update(algo=sys.argv[1], incumbents=int(sys.argv[2]), rate_mbit=int(sys.argv[3]), rtt_us=int(sys.argv[4]),
         secs=float(sys.argv[5]), join_s=float(sys.argv[6]))
print(json.dumps(r))' "$algo" "$n" "$rate" "$rtt" "$secs" "$join_s"
}

# bench_fct ALGO SECONDS [key=value ...]: flow completion times of short
# flows under load, all flows of ALGO. One switch, two senders: sender 1
# runs one bulk flow (the background load), sender 2 opens short flows one
# after another (hpcc_flow.py fct: sizes in turn, gap_ms=10 apart, each a
# new connection) to a `serve --reply` on the receiver, from 0.5 s after
# the bulk flow started until it ends. The default sizes, four 8 KiB, two
# 64 KiB, one 256 KiB and one 1 MiB per round, make small flows the most
# common, as in datacenter workloads.
# Other keys as bench_scenario (rate_mbit, rtt_us, buffer, ecn_k, tag,
# sender_fq, sender_gso, maxrate_mbit: each of the two senders capped at
# M/2 with SO_MAX_PACING_RATE, so with cubic every short flow gets exactly
# half of M from its first byte next to a bulk flow that never takes more:
# bench_fct_fair_reference). Prints one JSON object: algo, kind "fct",
# rate_mbit, rtt_us, bdp_bytes, secs, background_mbps, q_p50_bytes, q_p99_bytes, drops,
# ce_marks, flows_failed (short flows without a correct reply; null if the
# client failed), and sizes: {size: {n, ideal_ms, p50_ms, p90_ms, p50_slowdown,
# p90_slowdown}} (tens of flows per size in 10 s: p90, not p99), and phases:
# where the mix loses the port, from the bottleneck's packet log (left in
# OUT.log; benchstat.py mix_phases; a ring of the port's last 131,072
# packets, about 9 s of the mix at 200 Mbit/s).
# ideal_ms is the flow alone on an idle link with no host delay: the
# handshake's RTT, the bytes at B with their headers (1514 B on the wire
# per 1448 B segment), and one more RTT for the last segment out and the
# reply back (benchstat.py). Slowdown is a flow's FCT over ideal_ms; the
# host's own delay (see paced90) is in every algorithm's numbers alike.
bench_fct() {
	local algo=$1 secs=$2
	shift 2
	local rate rtt bdp buffer ecn_k tag sizes gap
	_bench_link "$@"
	tag=$(_bench_kv tag "fct-$algo" "$@")
	sizes=$(_bench_kv sizes 8192,8192,8192,8192,65536,65536,262144,1048576 "$@")
	gap=$(_bench_kv gap_ms 10 "$@")
	local out=${HPCC_RESULTS:-/tmp}/bench-$tag
	intsw_topo_fanin 2 rate_mbit="$rate" rtt_us="$rtt" buffer="$buffer" ecn_k="$ecn_k" ||
		{ echo "bench: topology failed" >&2; return 1; }
	[ "$(_bench_kv sender_fq 1 "$@")" != 1 ] || _bench_fq ${HPCC_NS}-s1 ${HPCC_NS}-s2
	[ "$(_bench_kv sender_gso 1 "$@")" != 0 ] || _bench_one_packet_per_skb ${HPCC_NS}-s1 ${HPCC_NS}-s2
	local maxrate cap=()
	maxrate=$(_bench_kv maxrate_mbit "" "$@")
	[ -z "$maxrate" ] || cap=(--maxrate "$(echo "$maxrate / 2" | bc -l)")
	local bns=${INTSW_BOTTLENECK%%/*} bdev=${INTSW_BOTTLENECK##*/}
	timeout $((secs + 30)) ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" serve 5301 --once --cc "$algo" \
		>"$out.srv0.json" &
	local srv_bulk=$!
	timeout $((secs + 30)) ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" serve 5302 --reply --quiet --cc "$algo" &
	local srv_fct=$!
	wait_listening ${HPCC_NS}-rcv 'sport >= :5301' 2
	rm -f "$out.started0"
	timeout $((secs + 30)) ip netns exec ${HPCC_NS}-s1 "$BENCH_PY" "$BENCH_FLOW" send 10.0.2.1 5301 "$secs" \
		--cc "$algo" "${cap[@]}" --started "$out.started0" >"$out.flow0.json" &
	local bulk=$!
	_bench_wait_file "$out.started0" "$secs"
	sleep 0.5
	timeout $((secs + 30)) ip netns exec ${HPCC_NS}-s2 "$BENCH_PY" "$BENCH_FLOW" fct 10.0.2.1 5302 \
		"$(echo "$secs - 1" | bc -l)" --sizes "$sizes" --gap-ms "$gap" --cc "$algo" "${cap[@]}" >"$out.fct.json"
	wait $bulk $srv_bulk
	kill $srv_fct 2>/dev/null
	wait $srv_fct 2>/dev/null
	intsw_stats "$bns" "$bdev" --json >"$out.port.json"
	"$BENCH_PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir "$bns" "$bdev")" >"$out.log" 2>/dev/null || : >"$out.log"
	"$BENCH_PY" - "$out" "$algo" "$rate" "$rtt" "$bdp" "$secs" "$INTSW_DIR" <<'PY'
import json, sys
out, algo, rate, rtt, bdp, secs, here = sys.argv[1:]
rate, rtt, bdp, secs = int(rate), int(rtt), int(bdp), float(secs)
sys.path.insert(0, here)
import benchstat  # noqa: E402
port = json.load(open(f"{out}.port.json"))
try:
    bg = json.load(open(f"{out}.flow0.json"))["mbps"]
except Exception:
    bg = 0.0
try:
    fj = json.load(open(f"{out}.fct.json"))
except Exception:
    fj = {}
sizes = benchstat.fct_sizes(fj.get("fct", []), rate, rtt)
# The bottleneck's utilization over the whole mix: every byte the port
# sent (bulk, short flows, probes; the port is new with the topology)
# over the bulk flow's duration, in fractions of B.
util = round(port["tx_bytes"] * 8 / (secs * rate * 1e6), 4)
# Where the mix loses the port (benchstat.mix_phases), over what the
# packet log (a ring) still holds.
rows = benchstat.read_log(f"{out}.log")
print(json.dumps({"algo": algo, "kind": "fct", "rate_mbit": rate, "rtt_us": rtt, "bdp_bytes": bdp,
                  "secs": secs, "util": util, "background_mbps": bg, "q_p50_bytes": port["qlen_p50_bytes"],
                  "q_p99_bytes": port["qlen_p99_bytes"], "drops": port["drops"],
                  "ce_marks": port["ce_marks"], "flows_failed": fj.get("failed"), "sizes": sizes,
                  "phases": benchstat.mix_phases(rows, rate * 1_000_000)}))
PY
}
