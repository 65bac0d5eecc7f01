#!/bin/sh
# Compiles the no_std core in release with overflow checks on (as a kernel
# with CONFIG_RUST_OVERFLOW_CHECKS would) and lists every call to a panic
# routine or a u128 division intrinsic left in the generated code.
# Prints the count; exits non-zero if any remain.
set -eu
cd "$(dirname "$0")/../../.."
dir=${CARGO_TARGET_DIR:-target}/panic-check
# A fresh build each time: cargo does not re-emit the assembly of a crate
# it considers up to date, so removing only the old .s would leave none.
cargo clean -q --release -p hpcc-core --target-dir "$dir"
CARGO_BUILD_JOBS=1 RUSTFLAGS="-C overflow-checks=on -C panic=abort" \
    cargo rustc -q --release -p hpcc-core --lib --target-dir "$dir" -- --emit=asm
asm=$(ls "$dir"/release/deps/hpcc_core-*.s)
hits=$(grep -E 'call.*(panic|unwrap_failed|expect_failed|slice_(start|end)_index|index_out_of_bounds|__udivti3|__umodti3|__divti3|__modti3|__multi3|__muloti4)' "$asm" || true)
n=$(printf '%s' "$hits" | grep -c . || true)
echo "panic/u128-intrinsic call sites in hpcc_core (release, overflow checks on): $n"
[ "$n" -eq 0 ] || { printf '%s\n' "$hits"; exit 1; }
