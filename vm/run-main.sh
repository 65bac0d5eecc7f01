#!/usr/bin/env bash
# The main job, from a fresh machine: set up the host, build the kernel (or
# reuse the cached one) and the module, boot the VM, load tcp_hpcc with
# modprobe, select hpcc with sysctl, run a flow through a shaped bottleneck
# (and cubic through the same one) in virtual time, and print what it saw.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/vm/setup-host.sh"
kdir=$("$root/vm/build-kernel.sh" | tail -n1)
make -C "$root" KDIR="$kdir" modules
make -C "$root/selftests" >/dev/null
# In virtual time by default (QEMU -icount, TCG): the emulated network's
# timing is then the emulation's, not a shared or slow host's. HPCC_VM_ICOUNT=0
# runs in real time.
export HPCC_VM_ICOUNT=${HPCC_VM_ICOUNT:-1}
[ "$HPCC_VM_ICOUNT" = 0 ] || export HPCC_VM_ACCEL=${HPCC_VM_ACCEL:-tcg}
exec "$root/vm/run" -k "$kdir" -w "$root/results" -- "$root/vm/main-job.sh"
