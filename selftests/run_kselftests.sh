#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest-side runner: runs every kselftest of tcp_hpcc in order, like the
# kselftest runner does, and keeps each test's KTAP in $HPCC_RESULTS.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
results=${HPCC_RESULTS:-/tmp}
tests=(${HPCC_TESTS:-hpcc_basic.sh hpcc_probe.sh hpcc_ipv6.sh int_switch_test.sh int_switch_sfc.sh hpcc_sfc.sh hpcc_no_harm.sh hpcc_scale.sh})

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	echo "# selftests: tcp_hpcc: $t"
	"$dir/$t" 2>&1 | tee "$results/${t%.sh}.ktap" | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	case $rc in
	0) echo "ok $n selftests: tcp_hpcc: $t" ;;
	4) echo "ok $n selftests: tcp_hpcc: $t # SKIP" ;;
	*) echo "not ok $n selftests: tcp_hpcc: $t # exit=$rc" ;;
	esac
done
