#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make stress`: tcp_hpcc on the debug kernel (vm/build-debug-kernel.sh:
# KASAN, kmemleak, lockdep with PROVE_RCU, debug objects, DEBUG_NET, the
# netdev/netns refcount trackers, failslab, Rust overflow checks), booted
# with panic_on_warn, running selftests/hpcc_stress.sh (at least 10 min) and
# selftests/hpcc_sfc_locking.sh (2 min).
# From a fresh machine: host set-up, the debug kernel (cached like the test
# kernel), the module built against it outside the work tree. Ends with
# "splats: N" (from the test) and "N passed, N failed, N skipped".
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
results=${HPCC_RESULTS_DIR:-$root/results/stress}
cache=${HPCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tcp_hpcc}
t0=$(date +%s)
rm -rf "$results"
mkdir -p "$results"

summary() { # summary PASSED FAILED SKIPPED
	echo "stress: $(( $(date +%s) - t0 )) s in all (kernel build included)"
	echo "$1 passed, $2 failed, $3 skipped"
	[ "$2" -eq 0 ]
	exit $?
}

"$root/vm/setup-host.sh" || summary 0 1 0
kdir=$("$root/vm/build-debug-kernel.sh" | tail -n1) || summary 0 1 0
echo "debug kernel ready after $(( $(date +%s) - t0 )) s: $kdir"

# The module for the debug kernel, built from a copy of the sources so the
# work tree's build (for the test kernel) stays as it is.
build=$cache/stress-module
rm -rf "$build"
mkdir -p "$build"
(cd "$root" && mkdir -p "$build/rust" && cp -r Kbuild include "$build"/ &&
	find probe_tx rust/tcp_hpcc rust/hpcc_core -name tests -prune -o \( -name '*.rs' -o -name '*.c' \) \
		! -name bindings_generated.rs -print0 | xargs -0 cp --parents -t "$build"/)
make -C "$kdir" M="$build" LLVM=1 modules >"$results/module-build.log" 2>&1 ||
	{ tail -20 "$results/module-build.log"; summary 0 1 0; }
make -C "$root/selftests" >/dev/null || summary 0 1 0

# The phases: the stress run, then the signal path in every context
# (NFQUEUE reinjection with bottom halves on, list writes on the softirq's
# CPU, a signal storm) under lockdep; HPCC_STRESS_TESTS picks some.
tests=${HPCC_STRESS_TESTS:-hpcc_stress.sh hpcc_sfc_locking.sh}

# The guest's time limit: 3 h. Under KASAN and TCG on 2 cores, alone on the
# host: boot and set-up about 5 min; the churn's 20,000 connections done
# 24 min and the storm's 10^6 packets 54 min into the load (its first 10
# min mixed); then the reloads and kmemleak's scans: 73 min in all.
HPCC_VM_MEM=${HPCC_VM_MEM:-3G} HPCC_VM_TIMEOUT=${HPCC_VM_TIMEOUT:-10800} \
HPCC_VM_APPEND="panic_on_warn=1 kmemleak=on log_buf_len=16M" \
	"$root/vm/run" -k "$kdir" -w "$results" -- env HPCC_KO="$build/tcp_hpcc.ko" \
	${HPCC_STRESS_SECS:+HPCC_STRESS_SECS=$HPCC_STRESS_SECS} ${HPCC_STRESS_CONNS:+HPCC_STRESS_CONNS=$HPCC_STRESS_CONNS} \
	${HPCC_STRESS_HOSTILE:+HPCC_STRESS_HOSTILE=$HPCC_STRESS_HOSTILE} \
	HPCC_SFC_LOCK_SECS=${HPCC_SFC_LOCK_SECS:-120} \
	make -s -C "$root/selftests" run_tests TEST_PROGS="$tests" kselftest_override_timeout=0 2>&1 | tee "$results/vm.log"
p=0 f=0 s=0
for t in $tests; do
	k=$results/${t%.sh}.ktap
	if [ ! -f "$k" ] || ! grep -q '^# Totals:' "$k"; then
		echo "$t did not finish (a panic_on_warn splat ends the VM); see $results/vm.log"
		f=$((f + 1))
		continue
	fi
	p=$((p + $(grep -c '^ok [0-9]* [^#]*$' "$k"))) f=$((f + $(grep -c '^not ok ' "$k"))) s=$((s + $(grep -c '^ok [0-9]* .*# SKIP' "$k")))
done
summary "$p" "$f" "$s"
