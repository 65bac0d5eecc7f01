#!/usr/bin/env bash
# Build (or reuse) the Rust-enabled test kernel.
#
# The build lives outside the work tree, in $HPCC_CACHE (default
# ~/.cache/tcp_hpcc), keyed by the Debian source package version, the config
# fragment, this script and the toolchain versions. A cached build is reused
# in seconds. On success the last line of stdout is the kernel build
# directory (usable as KDIR for the module build).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${HPCC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tcp_hpcc}
fragment=$here/kernel.config
tarball=/usr/src/linux-source-6.12.tar.xz
jobs=${JOBS:-$(nproc)}

log() { printf 'build-kernel: %s\n' "$*" >&2; }

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
key=$( {
	echo "linux-source-6.12 $srcver"
	cat "$fragment" "$0"
	rustc --version
	clang --version | head -n1
	ld.lld --version | head -n1
	bindgen --version
} | sha256sum | cut -c1-16)

src=$cache/src/linux-source-6.12-$srcver
obj=$cache/kernel-$key

if [ -f "$obj/.hpcc-build-ok" ]; then
	log "cached kernel $obj"
	echo "$obj"
	exit 0
fi

if [ ! -f "$src/.hpcc-extracted" ]; then
	log "extracting $tarball"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -C "$src.tmp" --strip-components=1 -xf "$tarball"
	touch "$src.tmp/.hpcc-extracted"
	mv "$src.tmp" "$src"
fi

kmake() { make -s -C "$src" O="$obj" LLVM=1 "$@"; }

start=$(date +%s)
rm -rf "$obj"
mkdir -p "$obj"
log "configuring in $obj"
kmake allnoconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" >/dev/null
kmake olddefconfig >/dev/null

# Every symbol the fragment asks for must survive olddefconfig.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n)
		sym=${line%%=*}
		if grep -q "^$sym=" "$obj/.config"; then log "wanted $line, got $(grep "^$sym=" "$obj/.config")"; bad=1; fi
		;;
	CONFIG_*=*)
		if ! grep -qx "$line" "$obj/.config"; then log "wanted $line, got $(grep "^${line%%=*}=" "$obj/.config" || echo unset)"; bad=1; fi
		;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }
		sym=${sym%% *}
		if grep -q "^$sym=" "$obj/.config"; then log "wanted $sym unset, got $(grep "^$sym=" "$obj/.config")"; bad=1; fi
		;;
	esac
done <"$fragment"
[ "$bad" -eq 0 ] || { log "config fragment not satisfied"; exit 1; }

kmake rustavailable >&2
log "building with $jobs jobs (LLVM=1)"
kmake -j"$jobs" bzImage modules >&2
kmake modules_prepare >&2
touch "$obj/.hpcc-build-ok"
log "built in $(( $(date +%s) - start )) s"
echo "$obj"
