#!/usr/bin/env bash
# The main job, from a fresh machine: set up the host, build the kernel (or
# reuse the cached one) and the module, boot the VM, load tcp_hpcc with
# modprobe, select hpcc with sysctl, run a flow through a shaped bottleneck
# and print what it saw.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/vm/setup-host.sh"
kdir=$("$root/vm/build-kernel.sh" | tail -n1)
make -C "$root" KDIR="$kdir" modules
make -C "$root/selftests" >/dev/null
exec "$root/vm/run" -k "$kdir" -w "$root/results" -- "$root/selftests/main_job.sh"
