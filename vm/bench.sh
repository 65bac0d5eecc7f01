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
"$root/vm/run" -k "$kdir" -w "$out" -- "$root/selftests/bench.sh"
/usr/bin/python3 "$root/selftests/bench_plot.py" "$out"
