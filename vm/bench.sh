#!/usr/bin/env bash
# `make bench`: set up, build (cached), boot one VM, run the side-by-side
# benchmark (selftests/bench.sh) and plot it (results/bench/*.png).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/results/bench
"$root/vm/setup-host.sh"
kdir=$("$root/vm/build-kernel.sh" | tail -n1)
make -C "$root" KDIR="$kdir" modules >/dev/null
make -C "$root/selftests" >/dev/null
mkdir -p "$out"
# FCT=0 leaves out the flow completion times, JOIN=0 the late
# joiner; hpcc runs the module's defaults unless HPCC_BENCH_SIZING=drafts
# (with HPCC_WAI_BASE and HPCC_PACING_SHIFT, bench.sh); HPCC_VM_ICOUNT=1
# runs it in virtual time (vm/run).
"$root/vm/run" -k "$kdir" -w "$out" -- env FCT="${FCT:-1}" JOIN="${JOIN:-1}" HPCC_BENCH_SIZING="${HPCC_BENCH_SIZING:-}" HPCC_WAI_BASE="${HPCC_WAI_BASE:-}" \
	HPCC_PACING_SHIFT="${HPCC_PACING_SHIFT:-}" "$root/selftests/bench.sh"
/usr/bin/python3 "$root/selftests/bench_plot.py" "$out"
