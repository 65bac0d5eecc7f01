# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of tcp_hpcc.ko plus the project's entry points.
#
#   make            build the module against KDIR (see below)
#   make install    modules_install + depmod into KDIR's kernel version
#                   (honours INSTALL_MOD_PATH)
#   make run        set up the host if needed, build, boot the VM, run an hpcc flow
#   make check      set up the host if needed, run every test (host + VM)
#   make bench      hpcc vs dctcp, cubic and bbr on the emulated bottleneck, with plots
#   make closed-loop  the closed-loop HPCC++ acceptance test in the VM
#   make stress     the stress run on a debug kernel (KASAN, lockdep, kmemleak, ...)
#   make scale      50,000 concurrent hpcc connections in the VM
#   make incast     N:1 incast, hpcc/dctcp/cubic with Source Flow Control off and on, with a plot
#   make cost       what hpcc, dctcp, cubic and bbr cost the guest per GB and per ACK (virtual time)
#   make timescale  the fastest rate the VM carries (cubic at >= 95% of B, guest >= 30% idle under hpcc)
#   make dc-sim     the module's controller in ns-3 at 100 Gbit/s: a 32-host leaf-spine,
#                   WebSearch and FB_Hadoop, against dctcp (ns3/run; make dc-sim-full: more)
#
# KDIR is any Rust-enabled kernel build tree (built with LLVM=1). Unset, it
# is the running kernel's (/lib/modules/$(uname -r)/build) when that kernel
# has CONFIG_RUST=y, otherwise the project's cached test kernel (built on
# first use by vm/build-kernel.sh).

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
ifeq ($(origin KDIR),undefined)
ifneq ($(shell grep -qs '^CONFIG_RUST=y' $(RUNNING_KDIR)/include/config/auto.conf && echo y),)
KDIR := $(RUNNING_KDIR)
KDIR_WHY := the running kernel's build tree
else
# Looked up (or built) once, and only by the targets that use it.
KDIR = $(eval KDIR := $(shell $(ROOT)/vm/build-kernel.sh))$(KDIR)
KDIR_WHY := the cached test kernel: the running kernel has no Rust-enabled build tree
endif
else
KDIR_WHY := KDIR
endif

.PHONY: all modules install toolchain-check clean setup kernel run check bench closed-loop stress scale incast cost timescale dc-sim dc-sim-full

all: modules

# A Rust module links against the kernel's own `core` and `kernel` crates,
# whose metadata only the very rustc that built them can read, and its
# bindings must come from the same bindgen: both are checked against the
# versions the kernel recorded in its configuration.
toolchain-check:
	@conf=$(KDIR)/include/config/auto.conf; \
	[ -f "$$conf" ] || { echo "tcp_hpcc: $(KDIR) is not a configured kernel build tree (no include/config/auto.conf)" >&2; exit 1; }; \
	grep -q '^CONFIG_RUST=y' "$$conf" || { echo "tcp_hpcc: the kernel in $(KDIR) is built without CONFIG_RUST=y; a Rust module cannot be built for it" >&2; exit 1; }; \
	want=$$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' "$$conf"); rc=$$($${RUSTC:-rustc} --version 2>/dev/null); \
	[ "$$want" = "$$rc" ] || { echo "tcp_hpcc: the kernel was built with '$$want' but rustc is '$$rc': install that exact rustc (e.g. rustup toolchain install, with rust-src) and put it first in PATH" >&2; exit 1; }; \
	want=$$(sed -n 's/^CONFIG_BINDGEN_VERSION_TEXT="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' "$$conf"); have=$$($${BINDGEN:-bindgen} --version 2>/dev/null); \
	[ "$$want" = "$$have" ] || { echo "tcp_hpcc: the kernel was built with '$$want' but bindgen is '$$have': install that exact bindgen-cli (cargo install bindgen-cli --version ...)" >&2; exit 1; }; \
	echo "tcp_hpcc: building against $(KDIR) ($(KDIR_WHY)), $$(cat $(KDIR)/include/config/kernel.release), $$rc, $$have"

modules: toolchain-check
	$(MAKE) -C $(KDIR) M=$(ROOT) LLVM=1 modules

# The kernel's modules_install (which runs depmod) into
# $(INSTALL_MOD_PATH)/lib/modules/<KDIR's release>/updates/. It installs
# what `make` built and builds nothing (`sudo make install` may not find
# the user's rustc).
install:
	@[ -f $(ROOT)/tcp_hpcc.ko ] || { echo "tcp_hpcc: nothing to install: run make first" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT) LLVM=1 modules_install

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
	$(ROOT)/vm/check.sh

bench:
	$(ROOT)/bench/run bench

incast:
	$(ROOT)/bench/run incast

cost:
	$(ROOT)/bench/run cost

timescale:
	$(ROOT)/bench/run timescale

# The closed-loop acceptance test of HPCC++ on the INT switch emulator
# (selftests/hpcc_closed_loop.sh), in virtual time unless HPCC_VM_ICOUNT=0
# (vm/run: the TCG host's stalls are not the network under test); not part
# of `make check` (about 30 min), see README.
closed-loop:
	HPCC_VM_ICOUNT=$${HPCC_VM_ICOUNT:-1} HPCC_TESTS=hpcc_closed_loop.sh $(ROOT)/vm/check.sh

# The debug-kernel stress run (selftests/hpcc_stress.sh, vm/stress.sh): its
# own cached kernel, at least 10 min in the VM; not part of `make check`.
stress:
	$(ROOT)/vm/stress.sh

# The flow table at 50,000 concurrent connections (selftests/hpcc_scale.sh;
# `make check` runs it with 5,000).
scale:
	HPCC_VM_MEM=$${HPCC_VM_MEM:-4G} HPCC_SCALE_FLOWS=$${HPCC_SCALE_FLOWS:-50000} HPCC_TESTS=hpcc_scale.sh $(ROOT)/vm/check.sh

dc-sim dc-sim-full: setup
	$(ROOT)/ns3/run $@
