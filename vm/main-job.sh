#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make run`: load tcp_hpcc with modprobe, allow it
# (tcp_allowed_congestion_control), select hpcc with sysctl, and run one
# flow through an emulated INT switch (100 Mbit/s, 2 ms base RTT), so
# HPCC++ runs on telemetry from the switch; then cubic through the same
# link in this boot, printed beside it: the first figure a user sees is
# the algorithm's, next to what this host carries.
set -eu
. "$(dirname "$0")/../selftests/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"
. "$HPCC_LIB/sh/bench_lib.sh"

SECS=${SECS:-10}

install_module
modprobe tcp_hpcc
# hpcc is restricted like dctcp: allow it for every netns, as an admin would.
hpcc_allow
echo "loaded: $(grep '^tcp_hpcc ' /proc/modules)"
echo "available: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control)"
intsw_build >/dev/null
trap 'intsw_cleanup' EXIT
# ss -ti of the flow every second until the run is over (the topology's
# set-up takes from seconds under TCG to tens of seconds of virtual time:
# loading the emulator's programs is instruction-heavy); the middle sample
# that shows the flow is reported.
: >"$RESULTS/main_job.ss.txt"
(
	set +e # the namespace appears only once bench_scenario builds it
	while :; do
		{ echo "--"; ip netns exec ${HPCC_NS}-s1 ss -tinH dst 10.0.2.1:5301 2>/dev/null; } >>"$RESULTS/main_job.ss.txt"
		sleep 1
	done
) &
sampler=$!
r=$(bench_scenario hpcc 1 single "$SECS" select=sysctl tag=main)
kill "$sampler" 2>/dev/null || true
wait || true
# The same link with cubic, in this boot: what the host itself carries.
ref=$(bench_scenario cubic 1 single "$SECS" tag=main-cubic)
python3 - "$r" "$RESULTS/main_job.ss.txt" "$ref" "$RESULTS/bench-main.trace" <<'PY'
import json, re, statistics, sys
r = json.loads(sys.argv[1])
seen = [b for b in open(sys.argv[2]).read().split("--\n") if "cwnd:" in b]
ss = seen[len(seen) // 2] if seen else ""
algo = re.search(r"\s(hpcc|cubic|bbr|dctcp|reno)\s", ss)
ref = json.loads(sys.argv[3])
# cwnd as hpcc set it, from the telemetry samples of the flow's middle half.
cw = [int(m.group(1)) for m in re.finditer(r"hpcc_sample:.* cwnd=(\d+)", open(sys.argv[4]).read())]
cw = cw[len(cw) // 4: 3 * len(cw) // 4]
cwnd = statistics.median(cw) if cw else None
h = r["hpcc"]
print(f"algorithm (selected by sysctl, seen by ss -ti): {algo.group(1) if algo else '?'}")
print(f"bottleneck: {r['rate_mbit']} Mbit/s INT switch, base RTT {r['rtt_us']} us, BDP {r['bdp_bytes']} B")
print(f"throughput: {r['goodput_mbps']} Mbit/s goodput, link utilization {100 * r['util']:.1f}%"
      f" (cubic through the same link in this boot: {ref['goodput_mbps']} Mbit/s, {100 * ref['util']:.1f}%)")
print(f"queue: p50 {r['q_p50_bytes']:.0f} B ({r['q_p50_bytes'] / r['bdp_bytes']:.2f} BDP), "
      f"p99 {r['q_p99_bytes']:.0f} B ({r['q_p99_bytes'] / r['bdp_bytes']:.2f} BDP), drops {r['drops']}")
print(f"telemetry: {h.get('probes_sent', 0)} probes, {h.get('responses_accepted', 0)} responses accepted, "
      f"{h.get('samples_applied', 0)} samples applied; mid-flow cwnd {cwnd if cwnd is not None else '?'} segs")
PY
