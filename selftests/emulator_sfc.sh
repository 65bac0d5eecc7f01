#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: Source Flow Control signals of the eBPF INT switch emulator
# (int_switch.bpf.c, intsw_sfc; the signal: include/hpcc_sfc.h). No module:
# the switch alone. One sender, one 10 Mbit/s port, base RTT 20 ms split
# (half after the port, half on the way back), buffer 100 kB, SFC trigger
# 20 kB, drain target 2 kB; UDP (and TCP) traffic above the port's rate:
#
#  1. off until configured: a congested port sends no signal;
#  2. signals are valid packets: from the switch's own address, TTL 255,
#     IPv4 header and UDP checksums, UDP to the SFC port, every field of the header
#     as the triggering packet and the port say;
#  3. pause = time to drain the reported queue down to the target;
#  4. one flow is signalled at most once per suppression window;
#  5. the port's token bucket bounds the signals of many flows;
#  6. a signal reaches the sender in about half the base RTT (the median
#     over 8 flows from the switch's decision to the arrival; under plain
#     TCG the VM's timer lateness adds to it, so the bound is below a full
#     base RTT);
#  7. data packets leave the switch byte for byte as they arrived (but
#     TTL and header checksum) while it signals;
#  8. a TCP data packet's signal carries its sequence number;
#  9. IPv6: hop limit 255, valid UDP checksum, the same fields.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

PORT=9000
RATE=10000000
RTT=20000
TRIGGER=20000
TARGET=2000

ktap_begin 9 ip tc bpftool python3
trap intsw_cleanup EXIT
ktap_need emulator_builds intsw_build
intsw_topo_fanin 1 rate_mbit=10 rtt_us=$RTT split=1 buffer=100000 >"$OUT/topo.log" 2>&1 &&
	intsw_ipv6 1 1 >>"$OUT/topo.log" 2>&1 || { ktap_print_msg_lines <"$OUT/topo.log"; ktap_test_fail "topology"; ktap_finished; }
D=$(intsw_dir ${HPCC_NS}-sw1 rcv)

sfc_stat() { intsw_get ${HPCC_NS}-sw1 rcv "sfc_$1"; }

# run_blast NAME SECS [blast options]: captures signals at the sender while
# hpcc-s1 blasts UDP to the receiver; signals in $OUT/NAME.sig (JSON lines).
run_blast() {
	local name=$1 secs=$2 fam=4 dst=10.0.2.1
	shift 2
	[ "${FAMILY:-4}" = 6 ] && { fam=6; dst=fd00:2::1; }
	start_capture "$name" --family $fam
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" blast $dst $PORT "$secs" "$@" >"$OUT/$name.blast"
	stop_capture
}

# start_capture NAME [capture options]: signals at the sender into
# $OUT/NAME.sig, from when the socket is open; stop_capture ends it once
# the last signals (half an RTT behind, plus the VM's jitter) are in.
start_capture() {
	local name=$1 i
	shift
	rm -f "$OUT/$name.ready"
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" capture 600 --ready "$OUT/$name.ready" "$@" >"$OUT/$name.sig" &
	CAP=$!
	for i in $(seq 1 300); do [ -e "$OUT/$name.ready" ] && break; sleep 0.1; done
}
stop_capture() {
	sleep 2
	kill $CAP 2>/dev/null
	wait $CAP 2>/dev/null
}

# check_sigs NAME PYTHON: runs assertions over the signals `s` (a list of
# dicts) of NAME; prints what it found.
check_sigs() {
	python3 - "$OUT/$1.sig" <<<"import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
$2"
}

# 1. Off until configured.
t_off() {
	intsw_reset ${HPCC_NS}-sw1 rcv
	run_blast off 2 --mbit 20
	echo "port: drops $(intsw_get ${HPCC_NS}-sw1 rcv drops), max queue $(intsw_get ${HPCC_NS}-sw1 rcv qlen_max_bytes) B," \
		"triggered $(sfc_stat triggered), sent $(sfc_stat signals_sent); captured $(wc -l <"$OUT/off.sig")"
	[ "$(intsw_get ${HPCC_NS}-sw1 rcv qlen_max_bytes)" -ge $TRIGGER ] &&
		[ "$(sfc_stat triggered)" -eq 0 ] && [ ! -s "$OUT/off.sig" ]
}
ktap_check "off_until_configured" t_off

intsw_sfc ${HPCC_NS}-sw1 rcv trigger=$TRIGGER target=$TARGET suppress_us=5000 rate=1000 burst=10 \
	>"$OUT/sfc.log" 2>&1 || { ktap_print_msg_lines <"$OUT/sfc.log"; ktap_test_fail "sfc_configures"; ktap_finished; }

# 2-4, 6. One UDP flow at twice the port's rate.
intsw_reset ${HPCC_NS}-sw1 rcv
run_blast one 3 --mbit 20
SENT_ONE=$(sfc_stat signals_sent)

t_valid() {
	check_sigs one "
print(f'{len(s)} signals captured, switch sent $SENT_ONE; first: {s[0] if s else None}')
assert s and len(s) == $SENT_ONE
for x in s:
    assert x['src'] == '10.255.0.1' and x['ttl'] == 255 and x['ip_csum_ok'] and x['udp_csum_ok'], x
    assert x['udp_sport'] == $(knob_default sfc_port) and x['udp_len'] == 8 + 68 and x['len'] == 68, x
    assert (x['version'], x['family'], x['l4proto'], x['len_field']) == (1, 4, 17, 68), x
    assert (x['speed'], x['switch_id'], x['reserved2'], x['seq']) == (12, 0x101, 0, 0), x
    assert x['saddr'] == '10.1.1.1' and x['daddr'] == '10.0.2.1' and x['dport'] == $PORT, x
    assert x['addr_pad_zero'] and x['port_id'] > 0, x
assert len({x['sport'] for x in s}) == 1
"
}
ktap_check "signals_are_valid_packets" t_valid

t_pause() {
	check_sigs one "
bad = [x for x in s if x['qlen'] < $TRIGGER or abs(x['pause_ns'] - (x['qlen'] - $TARGET) * 8 * 10**9 // $RATE) > 1]
q = sorted(x['qlen'] for x in s)
print(f'queue at the signals {q[0]}..{q[-1]} B, pauses {min(x[\"pause_ns\"] for x in s)}..{max(x[\"pause_ns\"] for x in s)} ns; {len(bad)} off')
assert s and not bad, bad[:3]
"
}
ktap_check "pause_is_drain_time_to_target" t_pause

t_suppress() {
	local supp
	supp=$(sfc_stat suppressed)
	echo "suppressed $supp"
	# Arrival times carry the VM's timer jitter (signals that wait in the
	# return delay can bunch), so the bound is on their number over the span.
	check_sigs one "
t = sorted(x['t_ns'] for x in s)
span = (t[-1] - t[0]) / 1e6
print(f'{len(t)} signals over {span:.1f} ms of arrivals; at most {span / 5 + 3:.0f} with one per 5 ms')
assert len(t) >= 2 and len(t) <= span / 5 + 3
" && [ "$supp" -gt 0 ]
}
ktap_check "one_signal_per_flow_per_window" t_suppress

# 8 flows: each flow's last signal decision (sfc_flows, the switch's clock)
# against the arrival of its last signal at the sender.
t_half_rtt() {
	intsw_reset ${HPCC_NS}-sw1 rcv
	run_blast lat 2 --mbit 12 --flows 8
	bpftool -j map dump pinned "$D/sfc_flows" >"$OUT/lat.flows" 2>&1
	python3 - "$OUT/lat.flows" "$OUT/lat.sig" <<-'EOF'
		import json, sys
		sigs = [json.loads(l) for l in open(sys.argv[2])]
		lat = []
		for f in json.load(open(sys.argv[1])):
		    k, t = f["formatted"]["key"], int(f["formatted"]["value"])
		    arr = [x["t_ns"] for x in sigs if x["sport"] == k["sport"]]
		    if arr and max(arr) >= t:
		        lat.append((max(arr) - t) / 1e6)
		lat.sort()
		print(f"decision to arrival, per flow: {[round(x, 2) for x in lat]} ms (base RTT 20 ms)")
		assert len(lat) >= 4
		med = lat[len(lat) // 2]
		assert 9 <= med < 20, med
	EOF
}
# Checked in virtual time (HPCC_VM_ICOUNT=1), where the guest's clocks
# are the emulated network's; reported only under plain TCG, where
# neither the capturing process's clock (it reads late, by up to 1.8 s
# under load) nor the kernel's receive timestamp (2-13 ms, below the
# 10 ms return delay: not the arrival) measures the arrival.
if [ "${HPCC_VM_ICOUNT:-0}" = 1 ]; then
	ktap_check_v "signal_reaches_sender_in_half_rtt" t_half_rtt
else
	t_half_rtt >"$OUT/lat.txt" 2>&1
	ktap_print_msg_lines <"$OUT/lat.txt"
	ktap_test_skip "signal_reaches_sender_in_half_rtt" "arrival time measured in virtual time only (HPCC_VM_ICOUNT=1)"
fi

# 5. Many flows, no suppression: the bucket (50/s, burst 5) bounds them.
t_bucket() {
	intsw_sfc ${HPCC_NS}-sw1 rcv trigger=$TRIGGER target=$TARGET suppress_us=0 rate=50 burst=5 || return 1
	intsw_reset ${HPCC_NS}-sw1 rcv
	local t0 t1
	t0=$(date +%s%N)
	run_blast many 3 --mbit 20 --flows 64
	t1=$(date +%s%N)
	local sent limited
	sent=$(sfc_stat signals_sent)
	limited=$(sfc_stat rate_limited)
	echo "sent $sent, rate-limited $limited over $(((t1 - t0) / 1000000)) ms; captured $(wc -l <"$OUT/many.sig")"
	[ "$sent" -ge 5 ] && [ "$limited" -gt 0 ] &&
		[ "$sent" -le $((5 + 50 * (t1 - t0) / 1000000000 + 1)) ]
}
ktap_check "token_bucket_bounds_signals" t_bucket
intsw_sfc ${HPCC_NS}-sw1 rcv trigger=$TRIGGER target=$TARGET suppress_us=1000 rate=1000 burst=10 >/dev/null

# 7. Data leaves as it arrived while the port signals.
t_data() {
	intsw_reset ${HPCC_NS}-sw1 rcv
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" frames eth0 $PORT 6 --out >"$OUT/data.out" &
	local a=$!
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" frames eth0 $PORT 6 --in >"$OUT/data.in" &
	local b=$!
	sleep 1.5
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" blast 10.0.2.1 $PORT 2 --mbit 20 --flows 4 >/dev/null
	wait $a $b
	# The captures miss frames when python falls behind: compare the
	# datagrams (flow, sequence number) seen at both ends.
	python3 - "$OUT/data.out" "$OUT/data.in" "$(sfc_stat signals_sent)" <<-'EOF'
		import sys
		rd = lambda f: dict(l.split() for l in open(f) if l.strip())
		out, inn = rd(sys.argv[1]), rd(sys.argv[2])
		both = [k for k in inn if k in out]
		diff = [k for k in both if inn[k] != out[k]]
		print(f"{len(out)} datagrams captured leaving the sender, {len(inn)} arriving at the receiver, "
		      f"{len(both)} at both ends, {len(diff)} changed; signals sent meanwhile {sys.argv[3]}")
		assert int(sys.argv[3]) > 0 and len(both) >= 50 and not diff
	EOF
}
ktap_check "data_unchanged_while_signalling" t_data

# 8. TCP: the signal carries the data packet's sequence number.
t_tcp() {
	intsw_reset ${HPCC_NS}-sw1 rcv
	ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 60 >"$OUT/tcp.sink" &
	local k=$!
	wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || return 1
	start_capture tcp
	ip netns exec ${HPCC_NS}-s1 python3 "$SIG" tcpsend 10.0.2.1 $PORT 4 >"$OUT/tcp.send"
	stop_capture
	kill $k 2>/dev/null
	python3 - "$OUT/tcp.sig" "$OUT/tcp.send" <<-'EOF'
		import json, sys
		s = [json.loads(l) for l in open(sys.argv[1])]
		snd = json.loads(open(sys.argv[2]).read().split("\n")[-2])
		# What the flow sent: the SYN (isn), data (isn + 1 ..), the FIN
		# (isn + bytes + 1) and, after it, pure ACKs at isn + bytes + 2.
		# Any of them may meet a queue over the trigger.
		off = lambda x: (x["seq"] - snd["isn"]) % 2**32
		inwin = [x for x in s if off(x) <= snd["bytes"] + 2]
		print(f"{len(s)} signals for the TCP flow (port {snd['sport']}), {len(inwin)} with a sequence "
		      f"number the flow sent; sent {snd['bytes']} bytes; outside, from the ISN: "
		      f"{[off(x) for x in s if x not in inwin][:5]}")
		assert s and all(x["l4proto"] == 6 and x["sport"] == snd["sport"] for x in s)
		assert len(inwin) == len(s)
	EOF
}
ktap_check "tcp_signal_carries_sequence_number" t_tcp

# 9. IPv6.
t_ipv6() {
	intsw_reset ${HPCC_NS}-sw1 rcv
	FAMILY=6 run_blast v6 2 --mbit 20
	check_sigs v6 "
print(f'{len(s)} IPv6 signals; first: {s[0] if s else None}')
assert s
for x in s:
    assert x['src'] == 'fd00:ff::1' and x['ttl'] == 255 and x['udp_csum_ok'], x
    assert (x['family'], x['l4proto'], x['len_field']) == (6, 17, 68), x
    assert x['saddr'] == 'fd00:1:1::1' and x['daddr'] == 'fd00:2::1' and x['dport'] == $PORT, x
"
}
ktap_check "ipv6_signals" t_ipv6

ktap_finished
