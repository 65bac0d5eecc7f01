#!/usr/bin/env bash
# Idempotent host set-up for building and testing tcp_hpcc.
#
# Installs the Debian packages, the Rust pieces (rust-src, bindgen-cli) and
# virtme-ng. A second run on a ready machine only checks and changes nothing.
set -euo pipefail

BINDGEN_VERSION=0.73.0
VIRTME_NG_VERSION=1.42

DEB_PKGS=(
	clang-19 lld-19 llvm-19 libclang-19-dev
	qemu-system-x86 busybox-static udev
	flex bison bc libelf-dev libssl-dev cpio kmod make
	iproute2 iperf3 bpftool libbpf-dev nftables tcpdump
	linux-source-6.12
	python3-pip python3-matplotlib xz-utils ethtool procps
	dkms util-linux bpftrace linux-perf python3-scapy python3-pyroute2
	libns3-dev ns3 cmake g++ libgsl-dev libxml2-dev python3-dev
)

log() { printf 'setup-host: %s\n' "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi

missing=()
for p in "${DEB_PKGS[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Tool names without the -19 suffix, for LLVM=1 kernel builds.
for t in clang ld.lld llvm-ar llvm-nm llvm-objcopy llvm-objdump llvm-readelf llvm-strip; do
	if ! command -v "$t" >/dev/null 2>&1 || [ "$(readlink -f "$(command -v "$t")")" != "$(readlink -f "/usr/bin/$t-19")" ]; then
		$SUDO ln -sf "/usr/bin/$t-19" "/usr/local/bin/$t"
	fi
done

# rust-src for the kernel's core/alloc build.
# (Outputs are captured first: with pipefail, `cmd | grep -q` fails when
# grep exits early and cmd gets SIGPIPE.)
components=$(rustup component list --installed 2>/dev/null || true)
if ! grep -q '^rust-src' <<<"$components"; then
	log "adding rust-src"
	rustup component add rust-src >/dev/null
fi

# bindgen-cli, pinned.
have_bindgen=$(bindgen --version 2>/dev/null || true)
if [ "$have_bindgen" != "bindgen $BINDGEN_VERSION" ]; then
	log "installing bindgen-cli $BINDGEN_VERSION"
	LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
fi

# virtme-ng, pinned.
have_vng=$(python3 -m pip show virtme-ng 2>/dev/null || true)
if ! grep -qx "Version: $VIRTME_NG_VERSION" <<<"$have_vng"; then
	log "installing virtme-ng $VIRTME_NG_VERSION"
	python3 -m pip install --quiet --disable-pip-version-check "virtme-ng==$VIRTME_NG_VERSION"
fi

log "host ready"
