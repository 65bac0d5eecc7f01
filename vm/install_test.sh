#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test of building and installing tcp_hpcc as an operator would,
# against the kernel build tree KDIR (vm/check.sh: the test kernel):
#
#  1. `make install INSTALL_MOD_PATH=DIR` puts tcp_hpcc.ko under
#     DIR/lib/modules/<release>/updates/ with a modules.dep that lists it
#     (the VM then loads that tree with `modprobe -d`, hpcc_admin.sh);
#  2. DKMS builds the module from dkms.conf for that kernel (private DKMS
#     trees: nothing is installed on this host);
#  3. the toolchain check refuses a rustc other than the kernel's, saying
#     which one to install;
#  4. the test kernel has every option of selftests/config.
#
#   install_test.sh KDIR DIR      KTAP on stdout
set -u
. "$(dirname "$0")/../selftests/lib.sh"
KDIR=$1
DEST=$2
root=$HPCC_ROOT
rel=$(cat "$KDIR/include/config/kernel.release")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ktap_print_header
ktap_set_plan 4

t_install() {
	rm -rf "$DEST"
	make -s -C "$root" KDIR="$KDIR" install INSTALL_MOD_PATH="$DEST" 2>&1 | grep -v '^depmod: WARNING: could not open modules\.' || true
	local ko=$DEST/lib/modules/$rel/updates/tcp_hpcc.ko
	[ -f "$ko" ] || { echo "no $ko"; return 1; }
	grep -q '^updates/tcp_hpcc.ko:' "$DEST/lib/modules/$rel/modules.dep" || { echo "modules.dep does not list it"; return 1; }
	echo "installed $ko ($(stat -c %s "$ko") bytes), listed in modules.dep"
}
ktap_check_v "make_install_into_install_mod_path" t_install

t_dkms() {
	command -v dkms >/dev/null || { echo "no dkms"; return 1; }
	local src=$tmp/src/tcp_hpcc-0.1
	mkdir -p "$src" "$tmp/tree" "$tmp/inst"
	# The tree as committed (git ls-files), as a user's copy in /usr/src would be.
	(cd "$root" && git ls-files -z | xargs -0 tar -cf -) | tar -xf - -C "$src" || return 1
	dkms add -m tcp_hpcc -v 0.1 --sourcetree "$tmp/src" --dkmstree "$tmp/tree" >/dev/null || return 1
	dkms build -m tcp_hpcc -v 0.1 -k "$rel" --kernelsourcedir "$KDIR" --sourcetree "$tmp/src" \
		--dkmstree "$tmp/tree" --installtree "$tmp/inst" >"$tmp/dkms.log" 2>&1 ||
		{ tail -20 "$tmp/dkms.log"; cat "$tmp/tree/tcp_hpcc/0.1/build/make.log" 2>/dev/null | tail -20; return 1; }
	local ko
	ko=$(find "$tmp/tree/tcp_hpcc/0.1/$rel" -name tcp_hpcc.ko)
	[ -n "$ko" ] || { echo "dkms built no tcp_hpcc.ko"; return 1; }
	echo "dkms built ${ko#"$tmp"/} for $rel"
}
ktap_check_v "dkms_builds_for_the_kernel" t_dkms

t_toolchain() {
	local out
	printf '#!/bin/sh\necho "rustc 1.0.0 (00000000 2015-05-15)"\n' >"$tmp/rustc"
	chmod +x "$tmp/rustc"
	if out=$(make -s -C "$root" KDIR="$KDIR" RUSTC="$tmp/rustc" toolchain-check 2>&1); then
		echo "accepted a foreign rustc: $out"; return 1
	fi
	echo "$out" | head -1
	grep -q "install that exact rustc" <<<"$out" && make -s -C "$root" KDIR="$KDIR" toolchain-check
}
ktap_check_v "toolchain_check_names_the_kernels_rustc" t_toolchain

t_config() {
	local opt miss=0
	while IFS= read -r opt; do
		case $opt in CONFIG_*=y) ;; *) continue ;; esac
		grep -qx "$opt" "$KDIR/.config" || { echo "test kernel lacks $opt"; miss=$((miss + 1)); }
	done <"$root/selftests/config"
	echo "$(grep -c '^CONFIG_' "$root/selftests/config") options of selftests/config, $miss missing"
	[ $miss -eq 0 ]
}
ktap_check_v "test_kernel_has_every_option_of_selftests_config" t_config

ktap_finished
