#!/usr/bin/env bash
# Build (or reuse) the debug flavour of the test kernel for `make stress`:
# vm/kernel.config plus vm/kernel-debug.config (KASAN, kmemleak, lockdep
# with PROVE_RCU, debug objects, DEBUG_NET, refcount trackers, failslab,
# Rust overflow checks). It is vm/build-kernel.sh run on the merged
# fragment, so it is cached the same way (its key differs by the fragment)
# and the last line of stdout is the build directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${HPCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tcp_hpcc}
stage=$cache/debug-flavour
mkdir -p "$stage"
cp "$here/build-kernel.sh" "$stage/build-kernel.sh"
# The debug fragment wins: drop the base lines of the symbols it sets.
syms=$(grep -o '^CONFIG_[A-Z0-9_]*' "$here/kernel-debug.config" | paste -sd'|')
{ grep -Ev "(^|# )($syms)[= ]" "$here/kernel.config"; cat "$here/kernel-debug.config"; } >"$stage/kernel.config.tmp"
mv "$stage/kernel.config.tmp" "$stage/kernel.config"
HPCC_CACHE=$cache exec "$stage/build-kernel.sh"
