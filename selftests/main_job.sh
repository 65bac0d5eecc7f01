#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make run`: one hpcc flow through a shaped bottleneck.
set -eu
. "$(dirname "$0")/lib.sh"

RATE_MBIT=${RATE_MBIT:-100}
DELAY_US=${DELAY_US:-1000}
DURATION=${DURATION:-10}
RESULTS=${HPCC_RESULTS:-/tmp}
BDP=$((RATE_MBIT * 1000000 / 8 * 2 * DELAY_US / 1000000))
BUF=$((2 * BDP))

install_module
modprobe tcp_hpcc
echo "loaded: $(grep '^tcp_hpcc ' /proc/modules)"
echo "available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
trap 'topo_cleanup' EXIT
topo_line
topo_shape "$RATE_MBIT" "$DELAY_US" "$BUF"
ip netns exec "$NS_SND" sysctl -qw net.ipv4.tcp_congestion_control=hpcc
echo "sender netns default: $(ip netns exec "$NS_SND" sysctl -n net.ipv4.tcp_congestion_control)"
echo "bottleneck: ${RATE_MBIT} Mbit/s tbf, base RTT $((2 * DELAY_US)) us, buffer ${BUF} B"

ip netns exec "$NS_RCV" iperf3 -s -D -1 -p 5201
sleep 0.5
(sleep $((DURATION / 2)); ip netns exec "$NS_SND" ss -tin dst 10.0.2.1 >"$RESULTS/main_job.ss.txt") &
ip netns exec "$NS_SND" iperf3 -c 10.0.2.1 -p 5201 -t "$DURATION" -O 2 -J >"$RESULTS/main_job.iperf3.json"
wait
python3 - "$RESULTS/main_job.iperf3.json" "$RESULTS/main_job.ss.txt" "$RATE_MBIT" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
ss = open(sys.argv[2]).read()
algo = re.search(r"^\s+(\w+) wscale", ss, re.M) or re.search(r"\s(hpcc|cubic|bbr|dctcp|reno)\s", ss)
cwnd = re.search(r"\bcwnd:(\d+)", ss)
rtt = re.search(r"\brtt:([\d.]+)/", ss)
rx = j["end"]["sum_received"]["bits_per_second"]
retr = j["end"]["sum_sent"].get("retransmits", 0)
rate = float(sys.argv[3]) * 1e6
print(f"algorithm (ss -ti): {algo.group(1) if algo else '?'}")
print(f"throughput: {rx/1e6:.1f} Mbit/s = {100*rx/rate:.1f}% of the {rate/1e6:.0f} Mbit/s bottleneck")
print(f"retransmits: {retr}, mid-flow cwnd: {cwnd.group(1) if cwnd else '?'} segs, rtt: {rtt.group(1) if rtt else '?'} ms")
PY
