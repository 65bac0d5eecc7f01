#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest: what an operator does with tcp_hpcc on a host.
#
#  1. the tree `make install INSTALL_MOD_PATH=DIR` produced on the host
#     (vm/check.sh puts it in $HPCC_RESULTS/install) loads with
#     `modprobe -d DIR`;
#  2. /proc/net/hpcc_flows lists a running flow with the values of its
#     last tcp_hpcc:hpcc_sample record (U, W, Wc, T, incStage, hops, the
#     most loaded hop) and what `ss -ti` shows (cwnd, pacing rate);
#  3. a netns without hpcc flows lists none, while another has one;
#  4. the listing and the counters are unreadable to an unprivileged user;
#  5. a closed flow leaves the listing;
#  6. the README's perf and bpftrace one-liners see the flow's samples.
#
# KTAP on stdout; exit 0 pass, 1 fail, 4 skip. Runs inside the test VM.

set -u
. "$(dirname "$0")/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"

INSTALL_ROOT=${HPCC_INSTALL_ROOT:-$RESULTS/install}
PORT=9100

ktap_begin 6 ip tc bpftool python3 modprobe modinfo rmmod setpriv ss perf bpftrace
PIDS=()
PERF_DIR=
trap 'kill "${PIDS[@]}" 2>/dev/null; intsw_cleanup; [ -z "$PERF_DIR" ] || rm -rf "$PERF_DIR"' EXIT

# 1. The installed tree loads with modprobe -d.
t_modprobe_d() {
	local kver path
	kver=$(uname -r)
	unload_module || return 1
	modprobe --first-time -d "$INSTALL_ROOT" tcp_hpcc || return 1
	grep -q '^tcp_hpcc ' /proc/modules || { echo "not loaded"; return 1; }
	path=$(modinfo -b "$INSTALL_ROOT" -n tcp_hpcc) || return 1
	echo "loaded $path for $kver"
	case $path in "$INSTALL_ROOT"/lib/modules/"$kver"/*) ;; *) return 1 ;; esac
	unload_module
}
if [ -f "$INSTALL_ROOT/lib/modules/$(uname -r)/modules.dep" ]; then
	ktap_check_v "installed_tree_loads_with_modprobe_d" t_modprobe_d
else
	ktap_test_skip "installed_tree_loads_with_modprobe_d" "no make install tree in $INSTALL_ROOT (vm/check.sh makes it)"
fi

ktap_need emulator_builds intsw_build
ktap_need module_loads load_module
intsw_topo_fanin 1 rate_mbit=20 rtt_us=2000 >"$OUT/topo.log" 2>&1 ||
	{ ktap_print_msg_lines <"$OUT/topo.log"; ktap_test_fail "topology"; ktap_finished; }

# An hpcc flow hpcc-s1 -> hpcc-rcv that sends for 2 s, waits until all is
# acknowledged, writes "ready SPORT" to $OUT/flow.out and stays open and
# idle (no ACK, no sample: its state holds still) until killed.
ip netns exec ${HPCC_NS}-rcv python3 "$SIG" sink $PORT 900 >/dev/null &
PIDS+=($!)
wait_listening ${HPCC_NS}-rcv "sport = :$PORT" 1 || { ktap_test_fail "receiver_listens"; ktap_finished; }
hpcc_trace_start
# The README's one-liners, attached before the flow starts: bpftrace
# compiles its program first (up to several seconds under TCG), perf
# starts disabled and is enabled through its control fifo (the ack says
# its events are on).
bpftrace -e 'tracepoint:tcp_hpcc:hpcc_sample { @u_ppm = hist(args->u_ppm); }' >"$OUT/bpftrace.txt" 2>&1 &
BT_PID=$!
PIDS+=($BT_PID)
for _ in $(seq 1 600); do grep -q '^Attaching' "$OUT/bpftrace.txt" && break; sleep 0.1; done
# Its fifos and data on the guest's tmpfs (the results directory is a
# host share).
PERF_DIR=$(mktemp -d)
mkfifo "$PERF_DIR/ctl" "$PERF_DIR/ack"
perf record -q -D -1 --control "fifo:$PERF_DIR/ctl,$PERF_DIR/ack" -e tcp_hpcc:hpcc_sample -a \
	-o "$PERF_DIR/perf.data" >"$OUT/perf.log" 2>&1 &
PERF_PID=$!
PIDS+=($PERF_PID)
exec 8<>"$PERF_DIR/ack"
echo enable >"$PERF_DIR/ctl"
read -r -t 60 -u 8 PERF_ACK || PERF_ACK=
exec 8>&-
ip netns exec ${HPCC_NS}-s1 python3 - 10.0.2.1 $PORT hpcc-admin-flow >"$OUT/flow.out" 2>&1 <<'PY' &
import socket, struct, sys, time
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"hpcc")
s.connect((sys.argv[1], int(sys.argv[2])))
buf, end = b"x" * 65536, time.time() + 2
while time.time() < end:
    s.send(buf)
for _ in range(500):  # tcpi_unacked: the 5th u32, after 8 bytes of u8s
    if struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 8 + 4 * 4)[0] == 0:
        break
    time.sleep(0.01)
time.sleep(0.2)
print("ready", s.getsockname()[1], flush=True)
time.sleep(60)
PY
FLOW_PID=$!
PIDS+=($FLOW_PID)
for _ in $(seq 1 200); do grep -q '^ready' "$OUT/flow.out" && break; sleep 0.1; done
SPORT=$(awk '/^ready/ { print $2 }' "$OUT/flow.out")
ip netns exec ${HPCC_NS}-s1 cat /proc/net/hpcc_flows >"$OUT/flows.txt"
ip netns exec ${HPCC_NS}-s1 ss -tinH "sport = :${SPORT:-0}" >"$OUT/ss.txt"
ip netns exec ${HPCC_NS}-sw1 cat /proc/net/hpcc_flows >"$OUT/flows.sw1.txt"
hpcc_trace_stop "$OUT/trace.txt"
kill -INT "$PERF_PID" "$BT_PID" 2>/dev/null
wait "$PERF_PID" "$BT_PID" 2>/dev/null

# 2. The listing's line for the flow against its last sample and ss -ti.
t_listing() {
	[ -n "$SPORT" ] || { cat "$OUT/flow.out"; return 1; }
	python3 - "$OUT/flows.txt" "$OUT/trace.txt" "$OUT/ss.txt" "10.1.1.1:$SPORT" "10.0.2.1:$PORT" <<'PY'
import re, sys
flows, trace, ss, local, remote = sys.argv[1:]
lines = open(flows).read().splitlines()
print(lines[0])
cols = lines[0].split()
# A walk during a resize of the table may list a flow twice.
row = [dict(zip(cols, l.split())) for l in dict.fromkeys(lines[1:]) if l.split()[:2] == [local, remote]]
if len(row) != 1:
    sys.exit(f"{len(row)} lines for {local} -> {remote} in the listing")
row = row[0]
print(" ".join(row[c] for c in cols))
recs = [l for l in open(trace) if f"src={local} dst={remote} " in l]
if not recs:
    sys.exit("no tracepoint record for the flow")
t = dict(re.findall(r"(\w+)=(\S+)", recs[-1].split("hpcc_sample: ", 1)[1]))
print(f"last of {len(recs)} samples: " + recs[-1].split("hpcc_sample: ", 1)[1].strip())
hop, hops = t["hop"].split("/")
want = {"u_ppm": t["U"], "w": t["W"], "wc": t["Wc"], "t_us": t["T"], "stage": t["stage"], "hops": hops, "hop": hop}
bad = [f"{k}: listing {row[k]}, tracepoint {v}" for k, v in want.items() if row[k] != v]
s = open(ss).read()
cwnd = re.search(r"\bcwnd:(\d+)", s)
m = re.search(r"\bpacing_rate ([\d.]+)([KMG]?)bps", s)
if not cwnd or not m:
    sys.exit(f"no cwnd or pacing_rate in ss -ti: {s!r}")
if row["cwnd"] != cwnd.group(1):
    bad.append(f"cwnd: listing {row['cwnd']}, ss {cwnd.group(1)}")
ss_bps = float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
ours = 8 * int(row["pacing_Bps"])
print(f"ss: cwnd {cwnd.group(1)}, pacing {ss_bps:.0f} bit/s; listing pacing {ours} bit/s")
# ss prints one decimal of its unit.
if abs(ours - ss_bps) > 0.051 * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] * 2:
    bad.append(f"pacing: listing {ours} bit/s, ss {ss_bps:.0f}")
if row["age_us"] == "-" or int(row["age_us"]) <= 0 or int(row["hops"]) < 1 or row["pause_us"] != "0":
    bad.append(f"age_us {row['age_us']}, hops {row['hops']}, pause_us {row['pause_us']}")
if bad:
    sys.exit("; ".join(bad))
PY
}
ktap_check_v "flow_listing_matches_tracepoint_and_ss" t_listing

# 3. Per netns: the switch's netns has no hpcc flow and lists none.
t_per_netns() {
	echo "sender lists $(($(wc -l <"$OUT/flows.txt") - 1)) flows, switch netns $(($(wc -l <"$OUT/flows.sw1.txt") - 1))"
	[ "$(wc -l <"$OUT/flows.txt")" -ge 2 ] && [ "$(wc -l <"$OUT/flows.sw1.txt")" -eq 1 ]
}
ktap_check_v "netns_without_hpcc_flows_lists_none" t_per_netns

# 4. Root only.
t_root_only() {
	local f
	for f in hpcc_flows hpcc_stat; do
		if ip netns exec ${HPCC_NS}-s1 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
			cat "/proc/net/$f" >/dev/null 2>&1; then
			echo "an unprivileged user read /proc/net/$f"; return 1
		fi
		ip netns exec ${HPCC_NS}-s1 cat "/proc/net/$f" >/dev/null || return 1
	done
	ls -l /proc/net/hpcc_flows /proc/net/hpcc_stat
}
ktap_check_v "listing_and_counters_root_only" t_root_only

# 5. A closed flow leaves the listing.
t_closed() {
	[ -n "$SPORT" ] && grep -q ":$SPORT " "$OUT/flows.txt" || { echo "the flow was never listed"; return 1; }
	kill "$FLOW_PID" 2>/dev/null
	wait "$FLOW_PID" 2>/dev/null
	local n try
	for try in $(seq 1 50); do
		n=$(ip netns exec ${HPCC_NS}-s1 cat /proc/net/hpcc_flows | grep -c ":$SPORT ")
		[ "$n" -eq 0 ] && return 0
		sleep 0.1
	done
	echo "still listed 5 s after close"
	return 1
}
ktap_check "closed_flow_leaves_the_listing" t_closed

# 6. perf and bpftrace see the same samples as the trace buffer.
t_tools() {
	local n_trace n_perf n_bt
	n_trace=$(grep -c "src=10.1.1.1:$SPORT " "$OUT/trace.txt")
	n_perf=$(perf script -i "$PERF_DIR/perf.data" 2>/dev/null | grep -c "hpcc_sample: src=10.1.1.1:$SPORT ")
	# Histogram lines: "[512K, 1M)    123 |@@@@     |".
	n_bt=$(sed -n 's/^\[[^)]*) *\([0-9][0-9]*\) .*/\1/p' "$OUT/bpftrace.txt" | awk '{ n += $1 } END { print n + 0 }')
	echo "samples of the flow: trace buffer $n_trace, perf script $n_perf (enabled: ${PERF_ACK:-no ack}); bpftrace histogram (all flows) $n_bt"
	[ "$n_trace" -ge 10 ] && [ "$n_perf" -eq "$n_trace" ] && [ "$n_bt" -ge "$n_trace" ] || {
		tail -n 5 "$OUT/bpftrace.txt" "$OUT/perf.log"; return 1; }
}
ktap_check_v "perf_and_bpftrace_see_the_samples" t_tools

ktap_finished
