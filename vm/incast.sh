#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make incast`: set up, build (cached), boot one VM, run the incast
# benchmark and its checks (selftests/hpcc_incast.sh, which runs
# selftests/incast.sh) and plot it (results/incast/incast_queue.png).
# INCAST_SENDERS (16 in virtual time, 8 under plain TCG), INCAST_REPS (3),
# INCAST_ALGOS, INCAST_FAMILY (4|6), INCAST_FAMILY_SENDERS (the IPv4 against
# IPv6 check's fan-in: 4 in virtual time, 0 = skipped under plain TCG, whose
# timing is the host's); HPCC_VM_ICOUNT=1 (the default here) runs it in
# virtual time (vm/run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/results/incast
export HPCC_VM_ICOUNT=${HPCC_VM_ICOUNT:-1}
# 18 runs of 17 connections each in virtual time take longer than vm/run's
# default 30 min.
export HPCC_VM_TIMEOUT=${HPCC_VM_TIMEOUT:-7200}
if [ "$HPCC_VM_ICOUNT" = 1 ]; then n=${INCAST_SENDERS:-16} fn=${INCAST_FAMILY_SENDERS:-4}
else n=${INCAST_SENDERS:-8} fn=${INCAST_FAMILY_SENDERS:-0}; fi
"$root/vm/setup-host.sh"
kdir=$("$root/vm/build-kernel.sh" | tail -n1)
make -C "$root" KDIR="$kdir" modules >/dev/null
make -C "$root/selftests" >/dev/null
rm -rf "$out"
mkdir -p "$out"
rc=0
"$root/vm/run" -k "$kdir" -w "$out" -- env INCAST_SENDERS="$n" \
	INCAST_REPS="${INCAST_REPS:-3}" INCAST_ALGOS="${INCAST_ALGOS:-hpcc dctcp cubic}" \
	INCAST_FAMILY="${INCAST_FAMILY:-4}" INCAST_FAMILY_SENDERS="$fn" \
	make -s -C "$root/selftests" run_tests TEST_PROGS=hpcc_incast.sh kselftest_override_timeout=0 || rc=$?
/usr/bin/python3 "$root/selftests/incast_plot.py" "$out"
exit $rc
