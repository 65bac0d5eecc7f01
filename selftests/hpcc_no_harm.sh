#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: tcp_hpcc does no harm. On a host that carries other traffic,
# with the module loaded:
#
#  1. traffic that is not exactly ours passes: cubic flows marked with the
#     probe or the response DSCP (IPv4 TOS, IPv6 traffic class) run at the
#     throughput of an unmarked one; and the hook's cost on foreign traffic
#     is measured (cubic over an unshaped path, one packet per skb, module
#     absent and loaded, interleaved);
#  2. the DSCP parameters refuse 0 and equal values;
#  3. a lying receiver, answering every probe with an idle path while the
#     real 100 Mbit/s bottleneck (2 BDP buffer) drops, leaves the hpcc flow
#     no worse than cubic in drops and retransmissions;
#  4. probes follow their flow: an L4-hashed multipath route (IPv4 and
#     IPv6) sends every probe through the switch its flow's data crosses,
#     IPv6 probes carry their data's flow label, and a flow routed by
#     fwmark policy routing gets its probes on its own path;
#  5. an IPsec-protected flow never sends a probe in clear;
#  6. with conntrack, an input and an output chain dropping invalid packets,
#     and the README's notrack rule, telemetry still works;
#  7. a 20 ms RTT flow still gets telemetry;
#  8. a new connection on the 4-tuple of one that was reset (and not yet
#     closed by its application) gets its own telemetry;
#  9. a flow driven to a small window by a burst regains 90% of its rate
#     within 50 base RTTs once the link is idle again.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

PY=$INTSW_PY

ktap_begin 19 ip tc "$PY" modprobe nft iperf3 nstat bpftool ethtool tcpdump
cleanup() {
	pkill -f hpcc_flow.py 2>/dev/null
	pkill iperf3 2>/dev/null
	intsw_cleanup
	topo_cleanup
}
trap cleanup EXIT
ktap_need emulator_builds intsw_build

# serve_once NS PORT [serve options]: a receiver for one connection, in the
# background; waits until it listens.
serve_once() {
	local ns=$1 port=$2
	shift 2
	ip netns exec "$ns" "$PY" "$FLOW" serve "$port" --once --bind :: "$@" >/dev/null 2>&1 &
	wait_listening "$ns" "sport = :$port" 1
}

# send_mbps NS DST PORT SECS [send options]: one flow's goodput (Mbit/s).
send_mbps() {
	local ns=$1 dst=$2 port=$3 secs=$4
	shift 4
	serve_once "$(rcv_ns_of "$dst")" "$port" || { echo 0; return; }
	timeout $((${secs%.*} + 30)) ip netns exec "$ns" "$PY" "$FLOW" send "$dst" "$port" "$secs" "$@" |
		"$PY" -c 'import json, sys; print(json.load(sys.stdin)["mbps"])' 2>/dev/null || echo 0
}
rcv_ns_of() { echo ${HPCC_NS}-rcv; }

ge_ratio() { # ge_ratio A B R: A >= R * B
	"$PY" -c "import sys; sys.exit(0 if float('$1') >= float('$3') * float('$2') else 1)"
}

# ---- 1. foreign traffic ---------------------------------------------------------

# The hook's cost on traffic that is not ours: cubic through an unshaped
# path, one packet per skb (senders without TSO/GSO, receiver without GRO),
# so the hook runs once per packet; CPU-bound, so throughput is the cost.
cost_run() { # cost_run TAG -> "mbps cpu_sender cpu_receiver"
	ip netns exec "$NS_RCV" iperf3 -s -D -1 -p 5299 >/dev/null 2>&1
	wait_listening "$NS_RCV" "sport = :5299" 1
	ip netns exec "$NS_SND" timeout 30 iperf3 -c 10.0.2.1 -p 5299 -t 3 -C cubic -J 2>/dev/null |
		"$PY" -c '
import json, sys
e = json.load(sys.stdin)["end"]
print(round(e["sum_received"]["bits_per_second"] / 1e6, 1),
      round(e["cpu_utilization_percent"]["host_total"], 1),
      round(e["cpu_utilization_percent"]["remote_total"], 1))' || echo "0 0 0"
}
# cost_measure: two rounds of module absent / loaded, alternating, on a
# fresh topology; sets COST_OUT and COST_RC and prints the result.
cost_measure() {
	modprobe -r tcp_hpcc 2>/dev/null
	topo_line
	for ns_dev in "$NS_SND veth0" "$NS_SW sw-snd" "$NS_SW sw-rcv" "$NS_RCV veth0"; do
		set -- $ns_dev
		ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1
	done
	ip -n "$NS_SND" link set veth0 gso_max_segs 1
	COST_OFF=()
	COST_ON=()
	local rep
	for rep in 1 2; do
		COST_OFF+=("$(cost_run off)")
		modprobe tcp_hpcc && hpcc_allow
		COST_ON+=("$(cost_run on)")
		[ $rep = 2 ] || modprobe -r tcp_hpcc
	done
	topo_cleanup
	COST_OUT=$(t_cost)
	COST_RC=$?
	ktap_print_msg "$COST_OUT"
	echo "$COST_OUT" >"$OUT/foreign_cost.txt"
}
t_cost() {
	"$PY" - "${COST_OFF[@]}" "${COST_ON[@]}" <<-'EOF'
	import sys
	runs = [list(map(float, a.split())) for a in sys.argv[1:]]
	off, on = runs[:2], runs[2:]
	m = lambda rs, i: sum(r[i] for r in rs) / len(rs)
	print(f"cubic, one packet per skb, unshaped: module absent {m(off, 0):.1f} Mbit/s "
	      f"(CPU sender {m(off, 1):.1f}%, receiver {m(off, 2):.1f}%), loaded {m(on, 0):.1f} Mbit/s "
	      f"(CPU sender {m(on, 1):.1f}%, receiver {m(on, 2):.1f}%): ratio {m(on, 0) / max(m(off, 0), 1e-9):.3f}")
	# CPU-bound: a hook that cost more than a few percent would show here.
	sys.exit(0 if m(off, 0) > 0 and m(on, 0) >= 0.8 * m(off, 0) else 1)
	EOF
}
declare -a COST_OFF COST_ON
install_module >/dev/null 2>&1 || { ktap_test_fail "module_installs"; ktap_finished; }
cost_measure
# A throughput check like the others: skipped when the VM is too slow for
# them, and measured once more if it fails on a host that carries B (plain
# TCG on a busy host has shown ratios from 0.59 to 1.32 for the same
# module; in virtual time it is 0.99, see docs/history.md).
t_cost_ok() { [ $COST_RC -eq 0 ]; }
ktap_perf_check "foreign_traffic_cost_measured" t_cost_ok cost_measure

{ lsmod | grep -q '^tcp_hpcc' || modprobe tcp_hpcc; } && hpcc_allow || { ktap_test_fail "module_loads"; ktap_finished; }
DEF_PROBE_DSCP=$(cat $P/probe_dscp)
DEF_RESPONSE_DSCP=$(cat $P/response_dscp)

intsw_topo_single >/dev/null 2>&1 && intsw_ipv6 1 1 || { ktap_test_fail "topology"; ktap_finished; }
t_dscp_marked() { # t_dscp_marked DST: cubic with DSCP 0, 11 and 15
	local dst=$1 base m tos ok=0
	base=$(send_mbps ${HPCC_NS}-s1 "$dst" 5301 2 --cc cubic)
	echo "DSCP 0: $base Mbit/s"
	for tos in $((DEF_PROBE_DSCP << 2)) $((DEF_RESPONSE_DSCP << 2)); do
		m=$(send_mbps ${HPCC_NS}-s1 "$dst" 5301 2 --cc cubic --tos $tos)
		echo "DSCP $((tos >> 2)): $m Mbit/s"
		ge_ratio "$m" "$base" 0.8 && ge_ratio "$base" 1 20 || ok=1
	done
	return $ok
}
ktap_check "foreign_dscp_passes_ipv4" t_dscp_marked 10.0.2.1
ktap_check "foreign_dscp_passes_ipv6" t_dscp_marked fd00:2::1

# ---- 2. DSCP parameters -----------------------------------------------------

t_dscp_zero() {
	local k ok=0
	for k in probe_dscp response_dscp; do
		if echo 0 >$P/$k 2>/dev/null; then echo "$k accepted 0"; ok=1; fi
	done
	[ "$(cat $P/probe_dscp)" = "$DEF_PROBE_DSCP" ] && [ "$(cat $P/response_dscp)" = "$DEF_RESPONSE_DSCP" ] || ok=1
	echo "$DEF_PROBE_DSCP" >$P/probe_dscp 2>/dev/null
	echo "$DEF_RESPONSE_DSCP" >$P/response_dscp 2>/dev/null
	return $ok
}
t_dscp_equal() {
	local ok=0
	if echo "$DEF_PROBE_DSCP" >$P/response_dscp 2>/dev/null; then echo "response_dscp = probe_dscp accepted"; ok=1; fi
	echo "$DEF_RESPONSE_DSCP" >$P/response_dscp 2>/dev/null
	# A valid change is still taken.
	echo 12 >$P/probe_dscp && [ "$(cat $P/probe_dscp)" = 12 ] || ok=1
	echo "$DEF_PROBE_DSCP" >$P/probe_dscp
	return $ok
}
ktap_check "dscp_zero_refused" t_dscp_zero
ktap_check "dscp_equal_refused" t_dscp_equal

# ---- 3. a lying receiver ---------------------------------------------------------

# FLOW_STATS ALGO [hostile]: a 6 s flow through a 2-BDP buffer; prints
# "drops retrans outsegs forged applied capped".
flow_stats() {
	local algo=$1 hostile=${2:-} port=5302 before_r before_o forged=0 a0 c0 liar=
	intsw_topo_single buffer=50000 >/dev/null 2>&1 || return 1
	if [ -n "$hostile" ]; then
		# The module's own answer never happens: its probes are dropped
		# before the hook, and the liar answers from the wire.
		ip netns exec ${HPCC_NS}-rcv nft -f - <<-EOF
			table inet liar {
				chain in {
					type filter hook input priority 0;
					ip dscp $DEF_PROBE_DSCP drop
				}
			}
		EOF
		# The flow starts once the liar listens and the liar answers until
		# the flow has ended (python's start-up under TCG takes seconds,
		# for the liar, the server and the sender alike); its socket
		# filter passes probes only, so it keeps up however slow the VM.
		rm -f "$OUT/liar.ready"
		timeout 90 ip netns exec ${HPCC_NS}-rcv "$PY" "$FLOW" hostile eth0 80 \
			--probe-dscp "$DEF_PROBE_DSCP" --ready "$OUT/liar.ready" >"$OUT/hostile.json" 2>&1 &
		liar=$!
		wait_files 20 "$OUT/liar.ready" || return 1
	fi
	a0=$(hpcc_stat samples_applied)
	c0=$(hpcc_stat telemetry_capped_by_delivery)
	before_r=$(netns_nstat ${HPCC_NS}-s1 TcpRetransSegs)
	before_o=$(netns_nstat ${HPCC_NS}-s1 TcpOutSegs)
	send_mbps ${HPCC_NS}-s1 10.0.2.1 $port 6 --cc "$algo" >"$OUT/$algo$hostile.mbps"
	[ -z "$liar" ] || kill -TERM "$liar"
	wait
	[ -n "$hostile" ] && forged=$("$PY" -c 'import json; print(json.load(open("'"$OUT/hostile.json"'"))["forged"])' 2>/dev/null)
	echo "$(intsw_get ${HPCC_NS}-sw1 rcv drops) $(($(netns_nstat ${HPCC_NS}-s1 TcpRetransSegs) - before_r))" \
		"$(($(netns_nstat ${HPCC_NS}-s1 TcpOutSegs) - before_o)) ${forged:-0}" \
		"$(($(hpcc_stat samples_applied) - a0)) $(($(hpcc_stat telemetry_capped_by_delivery) - c0))"
}
# The law at its extremes: no window validation, no bound on growth per
# update (the drafts' own law): nothing in HPCC++ itself holds the liar back.
WV=$(cat $P/window_validation)
MI=$(cat $P/max_increase_pct)
echo 0 >$P/window_validation
echo 0 >$P/max_increase_pct
LIAR=$(flow_stats hpcc -hostile)
echo "$WV" >$P/window_validation
echo "$MI" >$P/max_increase_pct
CUBIC=$(flow_stats cubic)
read -r L_DROPS L_RETR L_OUT L_FORGED L_APPLIED L_CAPPED <<<"$LIAR"
read -r C_DROPS C_RETR C_OUT _ _ _ <<<"$CUBIC"
ktap_print_msg "lying receiver, hpcc (window_validation 0, max_increase_pct 0): $L_DROPS drops, $L_RETR of $L_OUT segments retransmitted, $(cat "$OUT/hpcc-hostile.mbps") Mbit/s; $L_FORGED forged responses, $L_APPLIED samples applied, $L_CAPPED ACKs capped by the delivered-BDP bound"
ktap_print_msg "cubic, same path: $C_DROPS drops, $C_RETR of $C_OUT segments retransmitted, $(cat "$OUT/cubic.mbps") Mbit/s"
echo "{\"hpcc_liar\": {\"drops\": $L_DROPS, \"retrans\": $L_RETR, \"out\": $L_OUT, \"forged\": $L_FORGED, \"applied\": $L_APPLIED}, \"cubic\": {\"drops\": $C_DROPS, \"retrans\": $C_RETR, \"out\": $C_OUT}}" >"$OUT/liar.json"
t_liar_applied() { [ "${L_FORGED:-0}" -ge 100 ] && [ "${L_APPLIED:-0}" -ge 50 ]; }
t_liar_drops() { [ "$L_DROPS" -le "$C_DROPS" ]; }
t_liar_retrans() { "$PY" -c "import sys; sys.exit(0 if $L_RETR / max($L_OUT, 1) <= $C_RETR / max($C_OUT, 1) else 1)"; }
ktap_check "liar_responses_were_applied" t_liar_applied
ktap_check "liar_drops_no_worse_than_cubic" t_liar_drops
ktap_check "liar_retransmissions_no_worse_than_cubic" t_liar_retrans

# ---- 4. probes follow their flow --------------------------------------------------

# Two switches in parallel (int_switch.sh topology d), IPv6 added, and an
# L4-hashed multipath route on the sender over both.
intsw_topo_parallel >/dev/null 2>&1 || { ktap_test_fail "parallel_topology"; ktap_finished; }
# IPv6 senders: fd00:1::1 .. fd00:1::c, one per flow (IPv6 TCP routes in
# connect() before it has a source port: flows from one address to one
# port all hash alike).
for i in $(seq 1 12); do ip -n ${HPCC_NS}-s1 addr add "fd00:1::$(printf %x "$i")/128" dev lo; done
ip -n ${HPCC_NS}-rcv addr add fd00:2::1/128 dev lo
for x in a b; do
	n=1; [ $x = b ] && n=2
	ip -n ${HPCC_NS}-s1 addr add "fd00:3:$n::1/64" dev "eth-$x" nodad
	ip -n "${HPCC_NS}-sw$x" addr add "fd00:3:$n::2/64" dev snd nodad
	ip -n "${HPCC_NS}-sw$x" addr add "fd00:4:$n::2/64" dev rcv nodad
	ip -n ${HPCC_NS}-rcv addr add "fd00:4:$n::1/64" dev "eth-$x" nodad
	ip -n "${HPCC_NS}-sw$x" route add fd00:1::/64 via "fd00:3:$n::1"
	ip -n "${HPCC_NS}-sw$x" route add fd00:2::1/128 via "fd00:4:$n::1"
	ip netns exec "${HPCC_NS}-sw$x" sysctl -qw net.ipv6.conf.all.forwarding=1
done
ip -n ${HPCC_NS}-rcv route replace fd00:1::/64 via fd00:4:1::2 src fd00:2::1
ip netns exec ${HPCC_NS}-s1 sysctl -qw net.ipv4.fib_multipath_hash_policy=1 net.ipv6.fib_multipath_hash_policy=1
ip -n ${HPCC_NS}-s1 route replace 10.0.2.1/32 src 10.0.1.1 nexthop via 10.3.1.2 dev eth-a nexthop via 10.3.2.2 dev eth-b
ip -n ${HPCC_NS}-s1 -6 route replace fd00:2::1/128 nexthop via fd00:3:1::2 dev eth-a nexthop via fd00:3:2::2 dev eth-b
# An IPv6 host takes a multipath sibling only if its neighbour is known
# (rt6_score_route() with RT6_LOOKUP_F_REACHABLE): both next hops known.
for x in a b; do
	n=1; [ $x = b ] && n=2
	ip -n ${HPCC_NS}-s1 -6 neigh replace "fd00:3:$n::2" dev "eth-$x" nud permanent \
		lladdr "$(ip -n "${HPCC_NS}-sw$x" link show snd | awk '/link\/ether/ { print $2 }')"
done

# multipath_run DST PROBE_WIRE [SRC_PREFIX]: 12 paced flows at once (from
# SRC_PREFIX1 .. SRC_PREFIXc if given); then, from both switches' packet
# logs, per source port: data packets and probes per switch.
multipath_run() {
	local dst=$1 wire=$2 src=${3:-} i bind
	for x in a b; do intsw_reset "${HPCC_NS}-sw$x" rcv; done
	ip netns exec ${HPCC_NS}-rcv "$PY" "$FLOW" serve 5303 --bind :: --quiet >/dev/null 2>&1 &
	wait_listening ${HPCC_NS}-rcv "sport = :5303" 1
	for i in $(seq 1 12); do
		bind=()
		[ -n "$src" ] && bind=(--bind "$src$(printf %x "$i")" --sport 0)
		timeout 30 ip netns exec ${HPCC_NS}-s1 "$PY" "$FLOW" send "$dst" 5303 3 --cc hpcc --maxrate 4 "${bind[@]}" >/dev/null 2>&1 &
	done
	wait_children_but_server
	for x in a b; do
		"$PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir "${HPCC_NS}-sw$x" rcv)" >"$OUT/mp-$x.log"
	done
	"$PY" - "$OUT/mp-a.log" "$OUT/mp-b.log" "$wire" <<-'EOF'
	import sys
	wire = int(sys.argv[3])
	flows = {}
	for sw, path in (("a", sys.argv[1]), ("b", sys.argv[2])):
	    for line in open(path):
	        t, q, sport, w, drop = map(int, line.split())
	        if sport < 1024:
	            continue
	        kind = "probe" if w == wire else ("data" if w > 200 else None)
	        if kind:
	            f = flows.setdefault(sport, {})
	            f[(sw, kind)] = f.get((sw, kind), 0) + 1
	bad, used = 0, set()
	for sport, f in sorted(flows.items()):
	    data_sw = {sw for (sw, k) in f if k == "data"}
	    probe_sw = {sw for (sw, k) in f if k == "probe"}
	    used |= data_sw
	    ok = len(data_sw) == 1 and probe_sw == data_sw
	    bad += not ok
	    print(f"port {sport}: " + ", ".join(f"{k} via {sw}: {n}" for (sw, k), n in sorted(f.items())) + ("" if ok else "  <- probes off the data's path"))
	print(f"{len(flows)} flows, switches carrying data: {sorted(used)}")
	sys.exit(0 if bad == 0 and len(flows) >= 10 and used == {"a", "b"} else 1)
	EOF
}
wait_children_but_server() {
	local p
	for p in $(jobs -p); do
		ps -o args= -p "$p" 2>/dev/null | grep -q ' serve ' && continue
		wait "$p" 2>/dev/null
	done
	sleep 1
	pkill -f "hpcc_flow.py serve" 2>/dev/null
	wait 2>/dev/null
	return 0
}
ktap_check "multipath_probes_follow_data_ipv4" multipath_run 10.0.2.1 138

t_mp6() {
	local x
	for x in a b; do
		ip netns exec ${HPCC_NS}-rcv timeout 40 tcpdump -i "eth-$x" -s 96 -w "$OUT/mp6-$x.pcap" \
			'ip6 and tcp and src net fd00:1::/64' >/dev/null 2>&1 &
	done
	sleep 1
	multipath_run fd00:2::1 158 fd00:1::
	local rc=$?
	pkill tcpdump
	sleep 0.5
	return $rc
}
# From the receiver's captures: per source port, the flow labels of data
# packets (payload > 104 bytes) and of probes (IPv6 payload 104 bytes:
# TCP 20 + 84).
t_labels() {
	local x
	for x in a b; do tcpdump -r "$OUT/mp6-$x.pcap" -nn -v 2>/dev/null; done | "$PY" -c '
import re, sys
flows = {}
for line in sys.stdin:
    # tcpdump -v: "IP6 (class 0x2c, flowlabel 0x42552, hlim ...": no
    # "class" for traffic class 0, no "flowlabel" for label 0
    m = re.search(r"IP6 \((?:class 0x[0-9a-f]+, )?(?:flowlabel (0x[0-9a-f]+), )?.*payload length: (\d+)\) fd00:1::[0-9a-f]+\.(\d+) >", line)
    if not m:
        continue
    label, plen, sport = int(m.group(1) or "0", 16), int(m.group(2)), m.group(3)
    kind = "probe" if plen == 104 else ("data" if plen > 104 else None)
    if kind:
        flows.setdefault(sport, {}).setdefault(kind, set()).add(label)
bad = checked = 0
for sport, k in sorted(flows.items()):
    if "probe" not in k or "data" not in k:
        continue
    checked += 1
    if k["probe"] != k["data"] or 0 in k["data"]:
        bad += 1
        d, q = sorted(map(hex, k["data"])), sorted(map(hex, k["probe"]))
        print(f"port {sport}: data labels {d}, probe labels {q}")
print(f"{checked} flows with data and probes captured, {bad} with probes off the data label")
sys.exit(0 if checked >= 8 and bad == 0 else 1)'
}
ktap_check "multipath_probes_follow_data_ipv6" t_mp6
ktap_check "ipv6_probes_carry_the_data_flow_label" t_labels

# fwmark policy routing: marked flows through switch b, the rest through a.
t_fwmark() {
	ip -n ${HPCC_NS}-s1 route replace 10.0.2.1/32 via 10.3.1.2 src 10.0.1.1
	ip -n ${HPCC_NS}-s1 route add 10.0.2.1/32 via 10.3.2.2 src 10.0.1.1 table 100
	ip -n ${HPCC_NS}-s1 rule add fwmark 7 table 100
	local a0 b0 a1 b1
	a0=$(intsw_get ${HPCC_NS}-swa rcv probes_stamped)
	b0=$(intsw_get ${HPCC_NS}-swb rcv probes_stamped)
	send_mbps ${HPCC_NS}-s1 10.0.2.1 5304 2 --cc hpcc --mark 7 >/dev/null
	a1=$(($(intsw_get ${HPCC_NS}-swa rcv probes_stamped) - a0))
	b1=$(($(intsw_get ${HPCC_NS}-swb rcv probes_stamped) - b0))
	echo "marked flow: probes through switch a $a1, through switch b (its route) $b1"
	[ "$a1" -eq 0 ] && [ "$b1" -ge 10 ]
}
ktap_check "fwmark_flow_probes_take_its_route" t_fwmark
intsw_cleanup

# ---- 5. IPsec ----------------------------------------------------------------------

# ipsec_pair NS LOCAL REMOTE PORT: ESP transport between two addresses for
# TCP to and from server port PORT only (port-selective policies, in and
# out), from NS's point of view.
ipsec_pair() {
	local ns=$1 l=$2 r=$3 port=$4 key=0x0123456789abcdef0123456789abcdef01234567 lp rp
	if [ "$ns" = ${HPCC_NS}-s1 ]; then lp=sport; rp=dport; else lp=dport; rp=sport; fi
	ip -n "$ns" xfrm policy add src "$l" dst "$r" proto tcp $rp "$port" dir out \
		tmpl src "$l" dst "$r" proto esp reqid 1 mode transport || return 1
	ip -n "$ns" xfrm policy add src "$r" dst "$l" proto tcp $lp "$port" dir in \
		tmpl src "$r" dst "$l" proto esp reqid 1 mode transport || return 1
}
ipsec_states() { # ipsec_states A B SPI: both directions, in both netns
	local ns key=0x0123456789abcdef0123456789abcdef01234567
	for ns in ${HPCC_NS}-s1 ${HPCC_NS}-rcv; do
		ip -n $ns xfrm state add src "$1" dst "$2" proto esp spi "$3" reqid 1 mode transport \
			aead 'rfc4106(gcm(aes))' $key 128 || return 1
		ip -n $ns xfrm state add src "$2" dst "$1" proto esp spi $(($3 + 1)) reqid 1 mode transport \
			aead 'rfc4106(gcm(aes))' $key 128 || return 1
	done
}
t_ipsec() {
	intsw_topo_single >/dev/null 2>&1 && intsw_ipv6 1 1 || return 1
	ipsec_states 10.1.1.1 10.0.2.1 0x1000 && ipsec_states fd00:1:1::1 fd00:2::1 0x2000 || return 1
	ipsec_pair ${HPCC_NS}-s1 10.1.1.1 10.0.2.1 5305 && ipsec_pair ${HPCC_NS}-rcv 10.0.2.1 10.1.1.1 5305 || return 1
	ipsec_pair ${HPCC_NS}-s1 fd00:1:1::1 fd00:2::1 5305 && ipsec_pair ${HPCC_NS}-rcv fd00:2::1 fd00:1:1::1 5305 || return 1
	local dst s0 st0 ps0 mb sent held stamped ok=0
	: >"$OUT/ipsec.txt"
	for dst in 10.0.2.1 fd00:2::1; do
		s0=$(hpcc_stat probes_sent)
		ps0=$(hpcc_stat probes_ipsec)
		st0=$(intsw_get ${HPCC_NS}-sw1 rcv probes_stamped)
		mb=$(send_mbps ${HPCC_NS}-s1 $dst 5305 2 --cc hpcc)
		sent=$(($(hpcc_stat probes_sent) - s0))
		held=$(($(hpcc_stat probes_ipsec) - ps0))
		stamped=$(($(intsw_get ${HPCC_NS}-sw1 rcv probes_stamped) - st0))
		echo "ESP transport flow to $dst: $mb Mbit/s; probes sent $sent, held back (IPsec) $held, seen in clear by the switch $stamped"
		echo "$mb" >>"$OUT/ipsec.txt"
		[ "$sent" -eq 0 ] && [ "$stamped" -eq 0 ] && [ "$held" -ge 5 ] || ok=1
	done
	return $ok
}
t_ipsec_flow() { local mb; while read -r mb; do ge_ratio "$mb" 1 5 || return 1; done <"$OUT/ipsec.txt"; [ -s "$OUT/ipsec.txt" ]; }
ktap_check "ipsec_no_probe_in_clear" t_ipsec
ktap_check "ipsec_flow_runs_on_the_fallback" t_ipsec_flow

# ---- 6. conntrack and a firewall that drops invalid packets -------------------------

# The rule the README gives operators: probes and responses untracked
# (notrack in the raw table, before conntrack), matched exactly: our
# DSCPs, TCP, and the magic right after a 20-byte TCP header.
t_conntrack() {
	intsw_topo_single >/dev/null 2>&1 || return 1
	local ns a0 rc
	for ns in ${HPCC_NS}-s1 ${HPCC_NS}-rcv; do
		ip netns exec $ns nft -f - <<-EOF || return 1
			table inet hpcc_fw {
				chain raw {
					type filter hook prerouting priority raw;
					ip dscp { $DEF_PROBE_DSCP, $DEF_RESPONSE_DSCP } meta l4proto tcp @th,160,32 0x48504343 notrack
					ip6 dscp { $DEF_PROBE_DSCP, $DEF_RESPONSE_DSCP } meta l4proto tcp @th,160,32 0x48504343 notrack
				}
				chain in {
					type filter hook input priority filter;
					ct state invalid counter drop
				}
				chain out {
					type filter hook output priority filter;
					ct state invalid counter drop
				}
			}
		EOF
	done
	a0=$(hpcc_stat samples_applied)
	send_mbps ${HPCC_NS}-s1 10.0.2.1 5306 2 --cc hpcc >/dev/null
	local applied=$(($(hpcc_stat samples_applied) - a0))
	for ns in ${HPCC_NS}-s1 ${HPCC_NS}-rcv; do
		echo "$ns: $(ip netns exec $ns nft list ruleset | grep -o 'counter packets [0-9]* bytes [0-9]* drop' | tr '\n' ';')"
	done
	echo "samples applied with conntrack and invalid-drop chains: $applied"
	[ "$applied" -ge 20 ]
}
ktap_check "conntrack_invalid_drop_keeps_telemetry" t_conntrack

# ---- 7. a long RTT -------------------------------------------------------------------

t_long_rtt() {
	intsw_topo_single rtt_us=20000 buffer=1000000 >/dev/null 2>&1 || return 1
	local a0 l0
	a0=$(hpcc_stat samples_applied)
	l0=$(hpcc_stat responses_late)
	send_mbps ${HPCC_NS}-s1 10.0.2.1 5307 3 --cc hpcc >/dev/null
	local applied=$(($(hpcc_stat samples_applied) - a0)) late=$(($(hpcc_stat responses_late) - l0))
	echo "20 ms base RTT: $applied samples applied, $late responses late"
	[ "$applied" -ge 20 ] && [ "$late" -eq 0 ]
}
ktap_check "long_rtt_gets_telemetry" t_long_rtt

# ---- 8. a reset connection's 4-tuple, reused ------------------------------------------

t_reuse() {
	intsw_topo_single >/dev/null 2>&1 || return 1
	local a0 r0 out
	ip netns exec ${HPCC_NS}-rcv "$PY" "$FLOW" serve 5308 --rst --quiet >/dev/null 2>&1 &
	wait_listening ${HPCC_NS}-rcv "sport = :5308" 1 || return 1
	a0=$(hpcc_stat responses_accepted)
	r0=$(hpcc_stat flows_replaced)
	out=$(timeout 30 ip netns exec ${HPCC_NS}-s1 "$PY" "$FLOW" reuse 10.0.2.1 5308 40123 2 --cc hpcc)
	pkill -f "hpcc_flow.py serve 5308"
	local acc=$(($(hpcc_stat responses_accepted) - a0)) rep=$(($(hpcc_stat flows_replaced) - r0))
	echo "$out; responses accepted $acc, flows replaced $rep"
	grep -q '"reset": true' <<<"$out" && [ "$acc" -ge 20 ] && [ "$rep" -eq 1 ]
}
ktap_check "reset_tuple_reused_gets_telemetry" t_reuse

# ---- 9. climbing back from a small window ---------------------------------------------

# One hpcc flow alone, then 1.5 s of cubic from a second sender through the
# same port (4-BDP buffer), then the link is the hpcc flow's again. From
# the bottleneck's packet log: the hpcc flow's rate before the burst, and
# over 50 base RTTs (100 ms) from 50 base RTTs after its end. Skipped
# where the flow alone carries less than 80% of B (its rate is then the
# VM's, not its window's).
t_regrowth() {
	intsw_topo_fanin 2 >/dev/null 2>&1 || return 1
	local bstart bend i
	serve_once ${HPCC_NS}-rcv 5309 || return 1
	ip netns exec ${HPCC_NS}-rcv "$PY" "$FLOW" serve 5310 --once --bind :: >/dev/null 2>&1 &
	wait_listening ${HPCC_NS}-rcv "sport = :5310" 1
	rm -f "$OUT/regrowth.started"
	timeout 60 ip netns exec ${HPCC_NS}-s1 "$PY" "$FLOW" send 10.0.2.1 5309 8 --cc hpcc --sport 41000 \
		--started "$OUT/regrowth.started" >/dev/null &
	for i in $(seq 100); do [ -f "$OUT/regrowth.started" ] && break; sleep 0.1; done
	sleep 2
	bstart=$(date +%s%N)
	timeout 30 ip netns exec ${HPCC_NS}-s2 "$PY" "$FLOW" send 10.0.2.1 5310 1.5 --cc cubic --sport 42000 >/dev/null
	bend=$(date +%s%N)
	wait
	"$PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir ${HPCC_NS}-sw1 rcv)" >"$OUT/regrowth.log"
	"$PY" - "$OUT/regrowth.log" <<-'EOF'
	import sys
	rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
	h = [(t, w) for t, q, sp, w, d in rows if sp == 41000 and not d]
	c = [t for t, q, sp, w, d in rows if sp == 42000]
	if not h or not c:
	    sys.exit("no packets logged")
	T = 2_000_000
	c0, c1 = min(c), max(c)
	rate = lambda a, b: sum(w for t, w in h if a <= t < b) * 8 / ((b - a) / 1e9) / 1e6
	# Before: up to 1 s before the burst, from 250 base RTTs after the
	# flow's first packet (its start-up is over).
	start = max(c0 - 1_000_000_000, min(t for t, w in h) + 250 * T)
	if start > c0 - 100 * T:
	    sys.exit(f"the flow started only {(c0 - min(t for t, w in h)) / 1e6:.0f} ms before the burst")
	before = rate(start, c0)
	after = rate(c1 + 50 * T, c1 + 100 * T)
	low = min(rate(t, t + 10 * T) for t in range(c0, c1, 10 * T))
	print(f"hpcc {before:.1f} Mbit/s before the burst, {low:.1f} at its lowest during it, "
	      f"{after:.1f} over 50 base RTTs from 50 base RTTs after it ({after / max(before, 1e-9):.2f} of before)")
	if before < 80:
	    # The flow alone does not fill the port: the VM, not its window,
	    # sets its rate (plain TCG sends hpcc's small paced bursts at 33-60
	    # Mbit/s where cubic's 64 KiB ones reach 90), so there is no full
	    # rate to climb back to.
	    print(f"the hpcc flow alone carried {before:.1f} of 100 Mbit/s: this VM cannot carry its B")
	    sys.exit(4)
	sys.exit(0 if after >= 0.9 * before else 1)
	EOF
}
ktap_perf_check "small_window_climbs_back_within_50_rtts" t_regrowth :

t_no_warnings() { ! dmesg | grep -E 'BUG:|WARNING:|Oops|general protection'; }
ktap_check "no_kernel_warnings" t_no_warnings
ktap_finished
