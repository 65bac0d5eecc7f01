# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of tcp_hpcc.ko plus the project's entry points.
#
#   make            build the module against KDIR (default: the cached test kernel)
#   make run        set up the host if needed, build, boot the VM, run an hpcc flow
#   make check      set up the host if needed, run every test (host + VM)
#   make bench      hpcc vs dctcp, cubic and bbr on the emulated bottleneck, with plots
#   make closed-loop  the closed-loop HPCC++ acceptance test in the VM
#   make stress     the stress run on a debug kernel (KASAN, lockdep, kmemleak, ...)
#   make scale      50,000 concurrent hpcc connections in the VM
#   make incast     N:1 incast, hpcc/dctcp/cubic with Source Flow Control off and on, with a plot
#
# KDIR may point at any Rust-enabled kernel build tree (LLVM=1).

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
KDIR ?= $(shell $(ROOT)/vm/build-kernel.sh)

.PHONY: all modules clean setup kernel run check bench closed-loop stress scale incast

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(ROOT) LLVM=1 modules

clean:
	rm -f $(ROOT)/*.ko $(ROOT)/*.mod $(ROOT)/*.mod.c $(ROOT)/Module.symvers $(ROOT)/modules.order
	find $(ROOT)/rust $(ROOT)/probe_tx -name '*.o' -o -name '.*.cmd' -o -name '.*.d' -o -name '*.rmeta' | xargs rm -f
	rm -f $(ROOT)/.*.cmd $(ROOT)/*.o $(ROOT)/rust/tcp_hpcc/bindings_generated.rs

setup:
	$(ROOT)/vm/setup-host.sh

kernel: setup
	$(ROOT)/vm/build-kernel.sh

run:
	$(ROOT)/vm/run-main.sh

check:
	$(ROOT)/selftests/run-all.sh

bench:
	$(ROOT)/vm/bench.sh

incast:
	$(ROOT)/vm/incast.sh

# The closed-loop acceptance test of HPCC++ on the INT switch emulator
# (selftests/hpcc_closed_loop.sh), in virtual time unless HPCC_VM_ICOUNT=0
# (vm/run: the TCG host's stalls are not the network under test); not part
# of `make check` (about 24 min), see README.
closed-loop:
	HPCC_VM_ICOUNT=$${HPCC_VM_ICOUNT:-1} HPCC_TESTS=hpcc_closed_loop.sh $(ROOT)/selftests/run-all.sh

# The debug-kernel stress run (selftests/hpcc_stress.sh, vm/stress.sh): its
# own cached kernel, at least 10 min in the VM; not part of `make check`.
stress:
	$(ROOT)/vm/stress.sh

# The flow table at 50,000 concurrent connections (selftests/hpcc_scale.sh;
# `make check` runs it with 5,000).
scale:
	HPCC_VM_MEM=$${HPCC_VM_MEM:-4G} HPCC_SCALE_FLOWS=$${HPCC_SCALE_FLOWS:-50000} HPCC_TESTS=hpcc_scale.sh $(ROOT)/selftests/run-all.sh
