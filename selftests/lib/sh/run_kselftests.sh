#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# run_kselftests.sh TEST...: runs tcp_hpcc kselftests the way the kernel's
# kselftest runner (tools/testing/selftests/kselftest/runner.sh) does, for
# `make -C selftests run_tests`: a KTAP plan, each test's own KTAP nested
# under "# selftests: tcp_hpcc: TEST" and prefixed "# ", then "ok N ...",
# "ok N ... # SKIP" (exit 4), "not ok N ... # TIMEOUT S seconds" (the
# `settings` file's timeout, or $kselftest_override_timeout; 0 = none) or
# "not ok N ... # exit=RC". Each test's KTAP is also kept in
# $HPCC_RESULTS/TEST.ktap (default /tmp), which vm/check.sh counts.
set -u
dir=$(cd "$(dirname "$0")/../.." && pwd) # selftests/
results=${HPCC_RESULTS:-/tmp}
limit=$(sed -n 's/^timeout=//p' "$dir/settings" 2>/dev/null)
limit=${kselftest_override_timeout:-${limit:-45}}
[ $# -gt 0 ] || { echo "usage: $0 TEST..." >&2; exit 2; }

echo "TAP version 13"
echo "1..$#"
n=0
for t in "$@"; do
	n=$((n + 1))
	echo "# timeout set to $limit"
	echo "# selftests: tcp_hpcc: $t"
	# Each test's netns and emulator pins are named after its own HPCC_NS
	# (lib.sh); whatever a killed or failed test left is reaped after it.
	HPCC_NS=$(mktemp -u hpcc-XXXXXX)
	export HPCC_NS
	timeout --kill-after=30 "$limit" "$dir/$t" 2>&1 | tee "$results/${t%.sh}.ktap" | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		case $ns in "$HPCC_NS"-*) ip netns del "$ns" 2>/dev/null ;; esac
	done
	rm -rf "/sys/fs/bpf/$HPCC_NS" 2>/dev/null
	case $rc in
	0) echo "ok $n selftests: tcp_hpcc: $t" ;;
	4) echo "ok $n selftests: tcp_hpcc: $t # SKIP" ;;
	124) echo "not ok $n selftests: tcp_hpcc: $t # TIMEOUT $limit seconds" ;;
	*) echo "not ok $n selftests: tcp_hpcc: $t # exit=$rc" ;;
	esac
done
