#!/bin/sh
# Per-update cost of the HPCC++ core, 1 and 5 hops, full-width samples and
# the Figure-4 wire path, and of the module's controller per ACK (without
# and with a new response): wall-clock ns (release build) and instructions
# under callgrind (only inside `measured_update` / `measured_ack`, i.e. one
# call including its inlined callees). Run from anywhere.
set -eu
cd "$(dirname "$0")/../../.."
CARGO_BUILD_JOBS=1 cargo build -q --release -p hpcc-bench
bin=target/release/hpcc-cost
"$bin"
if ! command -v valgrind >/dev/null; then
    echo "valgrind not found: skipping instruction counts"
    exit 0
fi
iters=200000
out=$(mktemp)
echo "hops  path    instructions/update (callgrind Ir, $iters updates)"
for hops in 1 5; do
    for mode in sample wire ack ack-wire; do
        fn=measured_update
        case $mode in ack*) fn=measured_ack ;; esac
        calls=$(valgrind -q --tool=callgrind --callgrind-out-file="$out" \
            --toggle-collect="*$fn*" \
            "$bin" --callgrind --hops "$hops" --mode "$mode" --iters "$iters" | awk '/^calls/ {print $2}')
        ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$out")
        printf '%4s  %-6s  %s\n' "$hops" "$mode" "$(awk -v a="$ir" -v b="$calls" 'BEGIN {printf "%.1f", a / b}')"
    done
done
rm -f "$out"
