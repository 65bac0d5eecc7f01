# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shared helpers for the tcp_hpcc kselftests: KTAP output, module install,
# and netns topologies. Sourced by the tests, which run inside the VM.

HPCC_ROOT=${HPCC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# The tests' helpers (selftests/lib/, as the kernel's net/lib/): shell
# libraries in sh/, Python tools in py/, the switch emulator in bpf/.
HPCC_LIB=$HPCC_ROOT/selftests/lib
# Every netns a test creates is named ${HPCC_NS}-<role> (hpcc-XXXXXX-s1,
# -sw1, -rcv, ...), random per test run as the kernel's net/lib.sh names
# them, so tests can run side by side; exported, so the scripts a test
# starts use the same names.
export HPCC_NS=${HPCC_NS:-$(mktemp -u hpcc-XXXXXX)}
# The module's parameters and defaults, as the core's knob table declares
# them (selftests/lib/knob_defaults, checked against it by a host test): tests
# read defaults here, never as literals.
HPCC_KNOB_DEFAULTS=${HPCC_KNOB_DEFAULTS:-$HPCC_LIB/knob_defaults}
knob_default() { # knob_default NAME: its default (empty for a text knob)
	awk -F= -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }' "$HPCC_KNOB_DEFAULTS"
}
knobs_reset() { # knobs_reset NAME...: each parameter back to its default
	local k
	for k in "$@"; do
		knob_default "$k" >"$P/$k" 2>/dev/null
	done
}
knob_names() { # every parameter's name, in table order
	awk -F= '!/^#/ { print $1 }' "$HPCC_KNOB_DEFAULTS"
}
# What every kselftest shares: where it writes (RESULTS, and OUT, its own
# folder, named after the test), the module's parameters (P) and the
# Python tools it drives.
RESULTS=${HPCC_RESULTS:-/tmp}
OUT=$RESULTS/$(basename "$0" .sh)
P=/sys/module/tcp_hpcc/parameters
FLOW=$HPCC_LIB/py/hpcc_flow.py
SIG=$HPCC_LIB/py/sfc_signal.py
MANY=$HPCC_LIB/py/hpcc_many.py
# KTAP output with the names, variables and output of the kernel's
# tools/testing/selftests/kselftest/ktap_helpers.sh (not sourced: a test host
# need not have the kernel's source), plus a reason on SKIP and FAIL lines.
KSFT_PASS=0
KSFT_FAIL=1
KSFT_XFAIL=2
KSFT_XPASS=3
KSFT_SKIP=4

KTAP_TESTNO=1
KTAP_CNT_PASS=0
KTAP_CNT_FAIL=0
KTAP_CNT_SKIP=0
KSFT_NUM_TESTS=0

ktap_print_header() { echo "TAP version 13"; }
ktap_set_plan() { KSFT_NUM_TESTS=$1; echo "1..$1"; }
ktap_skip_all() { echo "1..0 # SKIP $*"; }

ktap_print_msg() { printf '# %s\n' "$*"; }
ktap_print_msg_lines() { local l; while IFS= read -r l; do [ -n "$l" ] && ktap_print_msg "$l"; done; } # stdin

__ktap_test() { # __ktap_test <result> <description> [directive]
	echo "$1 $KTAP_TESTNO $2${3:+ # $3}"
	KTAP_TESTNO=$((KTAP_TESTNO + 1))
}

ktap_test_pass() { __ktap_test ok "$1"; KTAP_CNT_PASS=$((KTAP_CNT_PASS + 1)); }
ktap_test_fail() { __ktap_test "not ok" "$1" "${2:-}"; KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1)); } # [reason]
ktap_test_skip() { __ktap_test ok "$1" "SKIP ${2:-}"; KTAP_CNT_SKIP=$((KTAP_CNT_SKIP + 1)); } # <reason>

ktap_print_totals() {
	echo "# Totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL xfail:0 xpass:0 skip:$KTAP_CNT_SKIP error:0"
}

# ktap_check <name> <command...>: one test result from a command's status.
ktap_check() {
	local name=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		ktap_test_pass "$name"
	else
		ktap_print_msg_lines <<<"$out"
		ktap_test_fail "$name"
	fi
}

# ktap_check_v <name> <command...>: the same, with the command's output as
# diagnostics whether it passes or not (for checks that report numbers).
ktap_check_v() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	ktap_print_msg_lines <<<"$out"
	if [ $rc -eq 0 ]; then ktap_test_pass "$name"; else ktap_test_fail "$name"; fi
}

# ktap_check_unless <reason> <name> <command...>: SKIP with the reason if it
# is not empty, else ktap_check.
ktap_check_unless() {
	if [ -n "$1" ]; then
		ktap_test_skip "$2" "$1"
	else
		shift
		ktap_check "$@"
	fi
}

# ---- can this VM carry B? ----------------------------------------------------
#
# Throughput assertions (utilization of B, throughput kept under load) only
# mean something if the VM itself is not the bottleneck. Under TCG that
# depends on the host, and on a shared host it changes within one run
# (docs/testing.md, "Throughput checks on an emulated host").
#
# The reference: Linux cubic (iperf3, 4 s) through a 100 Mbit/s tbf
# bottleneck with a 2 BDP drop-tail buffer and a 2 ms base RTT must reach
# 88 Mbit/s of goodput (91% of the 96.5 Mbit/s a 1448-byte MSS allows). It
# is independent of tcp_hpcc and of the eBPF switch, and runs in namespaces
# of its own (hpcc-ref-*), so it can be taken beside any test topology.
#
# ktap_perf_check uses it the way the kernel's net selftests treat
# KSFT_MACHINE_SLOW, but measured instead of declared:
#   - measured once per boot before the first check (perf_gate): if the VM
#     cannot carry B, the throughput checks are SKIPs with the number;
#   - measured again right after a throughput check fails: if the host has
#     slowed down since, the check is a SKIP with both numbers; if not, the
#     scenario is run once more (when the check names how), and a second
#     failure on a host that still carries B is a FAIL.
# Every other check runs everywhere.

PERF_GATE_FILE=${PERF_GATE_FILE:-/tmp/hpcc-perf-gate.$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)}
PERF_GATE_MIN_MBPS=${PERF_GATE_MIN_MBPS:-88}

perf_gate() { # prints "" if the VM can carry B, else the reason; cached per boot
	if [ ! -f "$PERF_GATE_FILE" ]; then
		local mbps
		mbps=$(perf_reference_mbps)
		if [ -z "$mbps" ]; then
			echo "perf gate: reference flow did not run" >"$PERF_GATE_FILE"
		elif perf_mbps_ok "$mbps"; then
			echo "" >"$PERF_GATE_FILE"
		else
			echo "VM too slow for throughput checks: Linux cubic reaches $mbps Mbit/s through a 100 Mbit/s tbf bottleneck (< $PERF_GATE_MIN_MBPS)" >"$PERF_GATE_FILE"
		fi
		echo "$mbps" >"$PERF_GATE_FILE.mbps"
	fi
	cat "$PERF_GATE_FILE"
}

perf_mbps_ok() { # perf_mbps_ok MBPS: does the reference reach the bar?
	[ -n "$1" ] && python3 -c "import sys; sys.exit(0 if float('$1') >= $PERF_GATE_MIN_MBPS else 1)"
}

perf_reference_mbps() { # Mbit/s of the reference flow, now; "" if it did not run
	(
		NS_SND=${HPCC_NS}-ref-snd NS_SW=${HPCC_NS}-ref-sw NS_RCV=${HPCC_NS}-ref-rcv
		trap 'ip netns pids "$NS_RCV" 2>/dev/null | xargs -r kill 2>/dev/null; topo_cleanup' EXIT
		topo_line && topo_shape 100 1000 50000 || exit 1
		ip netns exec "$NS_RCV" iperf3 -s -D -1 -p 5299 || exit 1
		local i
		for i in $(seq 20); do	# until the server listens
			ip netns exec "$NS_RCV" ss -Hltn 'sport = :5299' | grep -q . && break
			sleep 0.1
		done
		ip netns exec "$NS_SND" timeout 20 iperf3 -c 10.0.2.1 -p 5299 -t 4 -O 1 -C cubic -J |
			python3 -c 'import json, sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6, 1))'
	) 2>/dev/null
}

# _ktap_out RC OUTPUT: what a check printed goes to the log as diagnostics,
# by default only when it failed (a test may redefine this).
_ktap_out() {
	[ "$1" -eq 0 ] || ktap_print_msg_lines <<<"$2"
}

# ktap_perf_check NAME CHECK [RERUN]: a throughput check. CHECK asserts
# (exit status; 4: it cannot measure here, its last line says why, a
# skip); RERUN, if given, runs the scenario CHECK looks at once more, in
# this shell so that it can set the variables CHECK reads (":" when CHECK
# runs its own scenario). See the section comment above.
ktap_perf_check() {
	local name=$1 check=$2 rerun=${3:-} why out rc now try
	why=$(perf_gate)
	if [ -n "$why" ]; then
		ktap_test_skip "$name" "$why"
		return
	fi
	for try in 1 2; do
		out=$("$check" 2>&1)
		rc=$?
		if [ $rc -eq $KSFT_SKIP ]; then
			ktap_test_skip "$name" "$(tail -n1 <<<"$out")"
			return
		fi
		_ktap_out $rc "$out"
		if [ $rc -eq 0 ]; then
			[ "$try" -eq 1 ] || ktap_print_msg "$name: passed on the second run"
			ktap_test_pass "$name"
			return
		fi
		now=$(perf_reference_mbps)
		if ! perf_mbps_ok "$now"; then
			ktap_test_skip "$name" "host slowed down during the check: Linux cubic reference ${now:-did not run} Mbit/s now, $(cat "$PERF_GATE_FILE.mbps") at the start (bar $PERF_GATE_MIN_MBPS)"
			return
		fi
		[ -n "$rerun" ] && [ "$try" -eq 1 ] || break
		ktap_print_msg "$name: failed with the reference at $now Mbit/s; running the scenario once more"
		"$rerun" >"$PERF_GATE_FILE.rerun" 2>&1
		ktap_print_msg_lines <"$PERF_GATE_FILE.rerun"
	done
	ktap_test_fail "$name" "reference cubic $now Mbit/s: the host carries B"
}

# Exit: 1 if a test failed, 4 (skip) if all were skipped, else 0.
ktap_finished() {
	ktap_print_totals
	if [ "$KTAP_CNT_FAIL" -gt 0 ]; then
		exit $KSFT_FAIL
	elif [ "$KTAP_CNT_PASS" -eq 0 ] && [ "$KTAP_CNT_SKIP" -gt 0 ]; then
		exit $KSFT_SKIP
	fi
	exit $KSFT_PASS
}

require_root_and_vm() {
	if [ "$(id -u)" -ne 0 ]; then
		ktap_print_header
		ktap_set_plan 1
		ktap_test_skip "environment" "needs root"
		ktap_finished
	fi
}

# require_tools TOOL...: the whole test is a KTAP skip (exit 4) if one is missing.
require_tools() {
	local tool
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			ktap_print_header
			ktap_set_plan 1
			ktap_test_skip "environment" "missing $tool"
			ktap_finished
		fi
	done
}
# ktap_need NAME COMMAND...: the test cannot go on without COMMAND (its
# output goes to stderr, the log): when it fails, check NAME fails and the
# test ends there.
ktap_need() {
	local name=$1
	shift
	"$@" >&2 || { ktap_test_fail "$name"; ktap_finished; }
}
# ktap_begin PLAN TOOL...: a kselftest's start: as root in a VM or test
# host, with every TOOL (else the whole test is skipped), the KTAP header
# and plan, and its OUT folder.
ktap_begin() {
	local plan=$1
	shift
	require_root_and_vm
	require_tools "$@"
	ktap_print_header
	ktap_set_plan "$plan"
	mkdir -p "$OUT"
}

# The module's tracepoint, tcp_hpcc:hpcc_sample. hpcc_tracefs mounts
# tracefs if needed and tells whether the event is there; hpcc_trace_start
# also clears the buffer and enables the event; hpcc_trace_stop FILE
# disables it and writes the event's lines to FILE. They return 1 (FILE
# left empty) where tracefs or the event is missing.
HPCC_TR=/sys/kernel/tracing
HPCC_TR_EVENT=$HPCC_TR/events/tcp_hpcc/hpcc_sample/enable
hpcc_tracefs() {
	grep -qs tracefs /proc/mounts || mount -t tracefs nodev $HPCC_TR 2>/dev/null
	[ -w $HPCC_TR_EVENT ]
}
hpcc_trace_start() {
	hpcc_tracefs || return 1
	echo >$HPCC_TR/trace
	echo 1 >$HPCC_TR_EVENT
}
hpcc_trace_stop() { # hpcc_trace_stop FILE
	: >"$1"
	[ -w $HPCC_TR_EVENT ] || return 1
	echo 0 >$HPCC_TR_EVENT
	grep 'hpcc_sample: ' $HPCC_TR/trace >"$1"
	return 0
}

# _wait_ss TRIES N NS SS_ARGS...: up to TRIES x 0.1 s until `ss -tnH
# SS_ARGS` in NS lists at least N sockets.
_wait_ss() {
	local tries=$1 n=$2 ns=$3 try
	shift 3
	for try in $(seq 1 "$tries"); do
		[ "$(ip netns exec "$ns" ss -tnH "$@" | wc -l)" -ge "$n" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_listening NS FILTER N: up to 10 s until NS has N TCP listeners
# matching the ss FILTER (python under TCG can take a while to get there).
wait_listening() { _wait_ss 100 "$3" "$1" -l "$2"; }

# wait_connected NS FILTER: up to 20 s until NS has an established TCP
# connection matching the ss FILTER (a python client under a loaded TCG
# host can take seconds to start).
wait_connected() { _wait_ss 200 1 "$1" state established "$2"; }

# wait_files SECS FILE...: until every FILE exists (a process's "ready"
# mark), at most SECS seconds; 1 if one is still missing.
wait_files() {
	local secs=$1 f _
	shift
	for _ in $(seq 1 $((secs * 20))); do
		for f in "$@"; do [ -e "$f" ] || { sleep 0.05; continue 2; }; done
		return 0
	done
	return 1
}

# hpcc_stats: tcp_hpcc's counters (/proc/net/hpcc_stat, one file per
# netns) summed over this netns and every one of this test run, as "name
# value" lines.
hpcc_stats() {
	{
		cat /proc/net/hpcc_stat 2>/dev/null
		local ns
		for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
			case $ns in "$HPCC_NS"-*) ;; *) continue ;; esac
			ip netns exec "$ns" cat /proc/net/hpcc_stat 2>/dev/null
		done
	} | awk '{ v[$1] += $2; if (!($1 in o)) { o[$1] = n++ } }
		END { for (k in o) r[o[k]] = k; for (i = 0; i < n; i++) print r[i], v[r[i]] }'
}

# hpcc_stat KEY [NS]: one of tcp_hpcc's counters, summed over all netns
# (hpcc_stats), or of netns NS only; 0 for a counter this build of the
# module does not have.
hpcc_stat() {
	if [ -n "${2:-}" ]; then
		ip netns exec "$2" cat /proc/net/hpcc_stat 2>/dev/null
	else
		hpcc_stats
	fi | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'
}

# sfc_counts NS: the sfc_* counters of netns NS as "name=value" lines, for
# sfc_delta.
sfc_counts() { ip netns exec "$1" cat /proc/net/hpcc_stat | awk '/^sfc_/ { print $1 "=" $2 }'; }

# sfc_delta BEFORE_FILE AFTER_FILE NAME: how much counter NAME grew
# between two sfc_counts.
sfc_delta() {
	local a b
	a=$(awk -F= -v k="$3" '$1 == k { print $2 }' "$1")
	b=$(awk -F= -v k="$3" '$1 == k { print $2 }' "$2")
	echo $((${b:-0} - ${a:-0}))
}

# netns_nstat NS KEY: a SNMP/netstat counter of a netns (absolute, 0 if unset).
netns_nstat() {
	ip netns exec "$1" nstat -az "$2" 2>/dev/null | awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }'
}

# tcp_untouched NS...: no RST sent and no TCP checksum error in any of the
# netns (probes and responses carry a TCP checksum that is never valid,
# hpcc_core::probe: one reaching TCP would count as a checksum error, or
# draw an RST). Prints the counters.
tcp_untouched() {
	local ns rsts csum
	for ns in "$@"; do
		rsts=$(netns_nstat "$ns" TcpOutRsts)
		csum=$(netns_nstat "$ns" TcpInCsumErrors)
		echo "$ns: TcpOutRsts=$rsts TcpInCsumErrors=$csum"
		[ "$rsts" -eq 0 ] && [ "$csum" -eq 0 ] || return 1
	done
}

# Makes tcp_hpcc.ko visible to modprobe: under extra/ of the running
# kernel's module tree, then depmod. Where that tree is not writable (the
# VM sees the host's root read-only) a private tmpfs holds it, with the
# tree's module indexes.
install_module() {
	local ko=${HPCC_KO:-$HPCC_ROOT/tcp_hpcc.ko}
	local kver moddir
	kver=$(uname -r)
	moddir=/lib/modules/$kver
	[ -f "$ko" ] || { echo "no module at $ko"; return 1; }
	[ -e "$moddir" ] || [ ! -w /lib/modules ] || mkdir -p "$moddir"
	if ! { [ -d "$moddir" ] && [ ! -L "$moddir" ] && [ -w "$moddir" ]; }; then
		local prev=
		[ -e "$moddir" ] && prev=$(readlink -f "$moddir")
		mount -t tmpfs -o mode=0755 hpcc-modules /lib/modules || return 1
		mkdir -p "$moddir"
		if [ -n "$prev" ] && [ -d "$prev" ]; then
			cp -a "$prev"/modules.* "$moddir"/ 2>/dev/null || true
		fi
	fi
	mkdir -p "$moddir/extra"
	cp "$ko" "$moddir/extra/tcp_hpcc.ko"
	depmod -a "$kver" 2>/dev/null
}

# hpcc is restricted, like dctcp: only CAP_NET_ADMIN may pick it per
# socket, and a netns cannot make it its default. hpcc_allow does what an
# admin does to let every socket and netns choose it: add it to the global
# net.ipv4.tcp_allowed_congestion_control (from the init netns). Loading
# the module again restricts it again.
hpcc_allow() {
	local cur
	cur=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control) || return 1
	case " $cur " in *" hpcc "*) return 0 ;; esac
	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$cur hpcc"
}

# unload_module: rmmod tcp_hpcc, retried for up to 10 s while the last
# sockets that hold it go away; fails if it stays loaded.
unload_module() {
	local try
	for try in $(seq 1 50); do
		grep -q '^tcp_hpcc ' /proc/modules || return 0
		rmmod tcp_hpcc 2>/dev/null
		sleep 0.2
	done
	! grep -q '^tcp_hpcc ' /proc/modules || { echo "tcp_hpcc still loaded (in use) after 10 s"; return 1; }
}

# load_module: install_module, modprobe tcp_hpcc and hpcc_allow.
load_module() {
	install_module >/dev/null 2>&1 && modprobe tcp_hpcc && hpcc_allow
}

# ---- netns topologies -------------------------------------------------------
#
# Line topology used by the basic tests:
#
#   [snd] veth0 10.0.1.1 ---- 10.0.1.2 [sw] 10.0.2.2 ---- 10.0.2.1 veth0 [rcv]
#
# The switch namespace forwards; its egress toward rcv is the bottleneck.

NS_SND=${HPCC_NS}-snd
NS_SW=${HPCC_NS}-sw
NS_RCV=${HPCC_NS}-rcv

topo_cleanup() {
	local ns
	for ns in "$NS_SND" "$NS_SW" "$NS_RCV"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}

topo_line() {
	topo_cleanup
	ip netns add "$NS_SND" && ip netns add "$NS_SW" && ip netns add "$NS_RCV" || return 1
	ip link add veth0 netns "$NS_SND" type veth peer name sw-snd netns "$NS_SW" || return 1
	ip link add veth0 netns "$NS_RCV" type veth peer name sw-rcv netns "$NS_SW" || return 1
	ip -n "$NS_SND" addr add 10.0.1.1/24 dev veth0
	ip -n "$NS_SW" addr add 10.0.1.2/24 dev sw-snd
	ip -n "$NS_SW" addr add 10.0.2.2/24 dev sw-rcv
	ip -n "$NS_RCV" addr add 10.0.2.1/24 dev veth0
	local ns
	for ns in "$NS_SND" "$NS_SW" "$NS_RCV"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NS_SND" link set veth0 up
	ip -n "$NS_RCV" link set veth0 up
	ip -n "$NS_SW" link set sw-snd up
	ip -n "$NS_SW" link set sw-rcv up
	ip -n "$NS_SND" route add default via 10.0.1.2
	ip -n "$NS_RCV" route add default via 10.0.2.2
	ip netns exec "$NS_SW" sysctl -qw net.ipv4.ip_forward=1
}

# topo_shape <rate_mbit> <one_way_delay_us> <buffer_bytes>
# Bottleneck: tbf at <rate> with a drop-tail buffer on sw -> rcv; the
# propagation delay is a netem on the reverse path sw -> snd (ACKs), so the
# bottleneck queue is the only queue data packets meet.
topo_shape() {
	local rate=$1 delay_us=$2 buf=$3
	ip netns exec "$NS_SW" tc qdisc replace dev sw-rcv root tbf \
		rate "${rate}mbit" burst 16k limit "$buf" || return 1
	ip netns exec "$NS_SW" tc qdisc replace dev sw-snd root netem \
		delay "$((2 * delay_us))us" limit 100000 || return 1
}
