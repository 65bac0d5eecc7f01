# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# INT switch emulator: build, attach, configure, read, and the netns
# topologies it runs in. Source it after lib.sh:
#
#   . selftests/lib.sh; . selftests/lib/sh/int_switch.sh
#
# A port of an emulated switch is one instance of int_switch.bpf.c on the
# clsact egress hook of a device in a switch netns, with sch_fq as the root
# qdisc enforcing the departure times the program sets. Its programs and
# maps are pinned in $(intsw_dir NS DEV) = /sys/fs/bpf/$HPCC_NS/NS/DEV/
# {progs/,cfg,port,hist,sfc_cfg,sfc,...}, in
# the init mount namespace (bpftool and intsw.py read them from there; not
# from `ip netns exec`, which remounts /sys). Layouts: int_switch.h. E.g.
#   bpftool -j map dump pinned /sys/fs/bpf/hpcc-XXXXXX/hpcc-XXXXXX-sw1/rcv/port
# prints every counter by name (map BTF).
#
#   intsw_build                          compile the object (once; cached)
#   intsw_attach NS DEV [key=value ...]  load, configure, attach; keys:
#       rate_mbit=100  (or rate_bps=)    capacity B
#       buffer=BYTES   (0: unlimited)    drop-tail buffer
#       ecn_k=BYTES    (0: off)          CE-mark ECT packets above K
#       switch_id=N    (12 bits)         XORed into pathID
#       speed=CODE     (default: from the rate, 12-15 = 100M-800M)
#       delay_us=N     (0)               extra delay after departure
#       probe_dscp=N   (probe_dscp's default) DSCP of probes to stamp
#       bucket=BYTES   (512)             histogram bucket width
#   intsw_config NS DEV [key=value ...]  change/print config (same keys)
#   intsw_sfc NS DEV [key=value ...]     Source Flow Control signals from the
#                                        port (include/hpcc_sfc.h; off unless
#                                        called); keys:
#       trigger=BYTES  (ecn_k, else buffer/4)  signal at this backlog; 0: off
#       target=BYTES   (trigger/10)      drain target of the pause
#       suppress_us=N  (200)             per-flow suppression window
#       rate=N burst=N (100000/s, 64)    the port's token bucket
#       port=N         (sfc_port's default) UDP port of signals
#       addr4=A addr6=A                  the switch's own source addresses
#                                        (default 10.255.0.ID, fd00:ff::ID)
#   intsw_stats NS DEV [--json]          counters, backlog, queue mean/p50/p99/max
#   intsw_get NS DEV KEY                 one value of intsw_stats
#   intsw_reset NS DEV                   zero counters, virtual clock and histogram
#   intsw_sample NS DEV INTERVAL DURATION  periodic samples (see intsw.py sample);
#                                        to stop it early, run intsw.py sample
#                                        itself in the background and kill it
#   intsw_wait_busy NS DEV TIMEOUT_S [MIN_BACKLOG]  wait for a queue to build
#   intsw_reach NS ADDR                  IPv4 reachability without ping (TCP
#                                        connect: refused or accepted = reached)
#   intsw_detach NS DEV                  remove filter, qdiscs and pins
#
# Topologies (base RTT = netem on the first switch's ports toward the
# senders, i.e. on the ACK/response path; data packets meet only the
# emulated queues). The receiver is always 10.0.2.1 in netns hpcc-rcv.
#
#   intsw_topo_chain NSND NSW RTT_US     NSND senders hpcc-s<i> (eth0,
#       10.1.<i>.1) -> hpcc-sw1 (ports s<i>) -> ... -> hpcc-sw<NSW> -> hpcc-rcv
#       (eth0). Data-direction ports: hpcc-sw<k>/next toward the next switch,
#       hpcc-sw<NSW>/rcv toward the receiver. No emulator attached.
#   intsw_topo_single [rate_mbit= rtt_us= buffer= ecn_k= tso= split=]   (a)
#   intsw_topo_fanin N [rate_mbit= rtt_us= buffer= ecn_k= tso= split=]  (b)
#   intsw_topo_twohop N [rate_mbit= rate1_mbit= rtt_us= buffer= ecn_k= tso=]  (c)
#       defaults: 100 Mbit/s, 2000 us, buffer 4 BDP, ecn_k 0, tso on
#       (tso=off: intsw_sender_offload off on the senders).
#       chain with emulators attached: hpcc-sw<k> has switch ID 0x100+k; in
#       (c) hop 1 (hpcc-sw1/next) runs at rate1_mbit (default 2 x rate_mbit)
#       with an unlimited buffer and hop 2 (hpcc-sw2/rcv) is the bottleneck.
#       INTSW_PORTS lists the attached ports as "ns/dev" in path order and
#       INTSW_BOTTLENECK the bottleneck port.
#   intsw_topo_parallel [rate_mbit= rtt_us= buffer= ecn_k= tso=] (d)
#       sender hpcc-s1 (10.0.1.1 on lo) and receiver hpcc-rcv (10.0.2.1 on
#       lo) joined by two switches hpcc-swa (ID 0x0a1) and hpcc-swb (ID
#       0x0b2), each with its emulator on port rcv; intsw_route a|b moves
#       both directions of the route onto one of them.
#   intsw_sender_offload on|off          TSO/GSO on the senders' devices
#   intsw_cleanup                        delete every netns and pin of this run ($HPCC_NS)

# The emulator's program in selftests/lib/bpf/, its Python tools in
# selftests/lib/py/ (INTSW_DIR).
HPCC_ROOT=${HPCC_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
INTSW_DIR=$HPCC_ROOT/selftests/lib/py
INTSW_BPF_DIR=$HPCC_ROOT/selftests/lib/bpf
: "${HPCC_NS:?int_switch.sh: source lib.sh first}"
INTSW_PIN_ROOT=${INTSW_PIN_ROOT:-/sys/fs/bpf/$HPCC_NS}
INTSW_BUILD_DIR=${INTSW_BUILD_DIR:-/tmp/hpcc-intsw}
INTSW_SRC=$INTSW_BPF_DIR/int_switch.bpf.c
INTSW_OBJ=${INTSW_OBJ:-}
if [ -z "${INTSW_PY:-}" ]; then
	# The distribution's python starts faster than a pyenv shim under TCG.
	if [ -x /usr/bin/python3 ]; then INTSW_PY=/usr/bin/python3; else INTSW_PY=python3; fi
fi
INTSW_PORTS=()
INTSW_BOTTLENECK=

_intsw_log() { echo "int_switch: $*" >&2; }

# intsw_build: compiles int_switch.bpf.c unless an up-to-date object exists
# next to it (make -C selftests) or in $INTSW_BUILD_DIR; sets INTSW_OBJ.
intsw_build() {
	local deps=("$INTSW_SRC" "$INTSW_BPF_DIR/int_switch.h" "$HPCC_ROOT/include/hpcc_int.h"
		"$HPCC_ROOT/include/hpcc_probe.h" "$HPCC_ROOT/include/hpcc_sfc.h")
	local cand d fresh
	for cand in ${INTSW_OBJ:+"$INTSW_OBJ"} "$INTSW_BPF_DIR/int_switch.bpf.o" "$INTSW_BUILD_DIR/int_switch.bpf.o"; do
		[ -f "$cand" ] || continue
		fresh=1
		for d in "${deps[@]}"; do
			[ "$d" -nt "$cand" ] && fresh=0
		done
		if [ $fresh = 1 ]; then INTSW_OBJ=$cand; return 0; fi
	done
	local clang=${CLANG:-clang}
	command -v "$clang" >/dev/null || { _intsw_log "no $clang"; return 1; }
	local multiarch
	multiarch=$(gcc -dumpmachine 2>/dev/null || echo "$(uname -m)-linux-gnu")
	mkdir -p "$INTSW_BUILD_DIR" || return 1
	INTSW_OBJ=$INTSW_BUILD_DIR/int_switch.bpf.o
	"$clang" -O2 -g --target=bpf -Wall -Werror -I"$HPCC_ROOT/include" -I"$INTSW_BPF_DIR" \
		-I"/usr/include/$multiarch" -c "$INTSW_SRC" -o "$INTSW_OBJ.tmp" &&
		mv "$INTSW_OBJ.tmp" "$INTSW_OBJ"
}

intsw_dir() { echo "$INTSW_PIN_ROOT/$1/$2"; }

_intsw_bpffs() {
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
}

# Default speed code for a rate in bit/s: the slowest code at least as fast
# (hpcc_wire.py reads the codes from include/hpcc_int.h).
intsw_speed_code() {
	"$INTSW_PY" "$INTSW_DIR/hpcc_wire.py" speed-code "$1"
}

# Translates the friendly keys into cfg map fields (intsw.py config keys).
_intsw_cfg_args() {
	local a k v out=() speed_set=0 rate=
	for a in "$@"; do
		k=${a%%=*}
		v=${a#*=}
		case $k in
		rate_mbit) rate=$((v * 1000000)); out+=("rate_bps=$rate") ;;
		rate_bps) rate=$v; out+=("rate_bps=$v") ;;
		buffer) out+=("buffer_bytes=$v") ;;
		ecn_k) out+=("ecn_k_bytes=$v") ;;
		delay_us) out+=("delay_ns=$((v * 1000))") ;;
		switch_id) out+=("switch_id=$v") ;;
		speed) speed_set=1; out+=("speed_code=$v") ;;
		probe_dscp) out+=("probe_dscp=$v") ;;
		bucket) out+=("hist_bucket_bytes=$v") ;;
		rate_bps | buffer_bytes | ecn_k_bytes | delay_ns | speed_code | hist_bucket_bytes)
			out+=("$a") ;;
		*) _intsw_log "unknown key $k"; return 1 ;;
		esac
	done
	if [ -n "$rate" ] && [ $speed_set = 0 ]; then
		out+=("speed_code=$(intsw_speed_code "$rate")")
	fi
	printf '%s\n' "${out[@]}"
}

intsw_config() { # intsw_config NS DEV [key=value ...]
	local ns=$1 dev=$2 args
	shift 2
	args=$(_intsw_cfg_args "$@") || return 1
	# shellcheck disable=SC2086
	"$INTSW_PY" "$INTSW_DIR/intsw.py" config "$(intsw_dir "$ns" "$dev")" $args
}

intsw_attach() { # intsw_attach NS DEV [key=value ...]
	local ns=$1 dev=$2 d a k v args
	shift 2
	[ -n "$INTSW_OBJ" ] || intsw_build || return 1
	_intsw_bpffs || return 1
	d=$(intsw_dir "$ns" "$dev")
	rm -rf "$d"
	mkdir -p "$d" || return 1
	bpftool prog loadall "$INTSW_OBJ" "$d/progs" type classifier pinmaps "$d" || {
		_intsw_log "bpftool prog loadall failed for $ns/$dev"; return 1; }
	# struct int_sw_cfg (int_switch.h, through intsw.py), written whole: the maps are new.
	local -A c=([rate_bps]=0 [buffer_bytes]=0 [ecn_k_bytes]=0 [delay_ns]=0 [switch_id]=0
		[speed_code]=-1 [probe_dscp]=${HPCC_PROBE_DSCP:-$(knob_default probe_dscp)} [hist_bucket_bytes]=512)
	args=$(_intsw_cfg_args "$@") || return 1
	for a in $args; do
		k=${a%%=*}
		v=${a#*=}
		c[$k]=$((v))
	done
	[ "${c[speed_code]}" -ge 0 ] || c[speed_code]=$(intsw_speed_code "${c[rate_bps]}")
	local kv=()
	for k in "${!c[@]}"; do kv+=("$k=${c[$k]}"); done
	"$INTSW_PY" "$INTSW_DIR/intsw.py" config "$d" "${kv[@]}" >/dev/null || return 1
	# sch_fq releases each packet at its skb->tstamp; it must never drop or
	# pace on its own: no per-flow or total packet limit that the emulated
	# buffer could reach, a horizon far beyond any queue, no socket pacing.
	# The filter is added from the init mount namespace (nsenter, not tc -n,
	# which remounts /sys and so hides /sys/fs/bpf).
	nsenter --net="/run/netns/$ns" tc -b - <<-EOF || return 1
		qdisc replace dev $dev root fq limit 1000000 flow_limit 1000000 horizon 10s horizon_cap nopacing
		qdisc replace dev $dev clsact
		filter replace dev $dev egress pref 1 handle 1 bpf da pinned $d/progs/int_switch_egress
	EOF
}

intsw_sfc() { # intsw_sfc NS DEV [key=value ...]
	local ns=$1 dev=$2 d a k v
	shift 2
	d=$(intsw_dir "$ns" "$dev")
	local cfg id ecn_k buffer
	cfg=$("$INTSW_PY" "$INTSW_DIR/intsw.py" config "$d") || return 1
	id=$(($(echo "$cfg" | tr ' ' '\n' | awk -F= '$1 == "switch_id" { print $2 }') & 0xff))
	ecn_k=$(echo "$cfg" | tr ' ' '\n' | awk -F= '$1 == "ecn_k_bytes" { print $2 }')
	buffer=$(echo "$cfg" | tr ' ' '\n' | awk -F= '$1 == "buffer_bytes" { print $2 }')
	local -A c=([trigger]=$((ecn_k > 0 ? ecn_k : buffer / 4)) [target]= [suppress_us]=200
		[rate]=100000 [burst]=64 [port]=$(knob_default sfc_port) [addr4]=10.255.0.$id [addr6]=fd00:ff::$id)
	for a in "$@"; do
		k=${a%%=*}
		v=${a#*=}
		[ -n "${c[$k]+x}" ] || { _intsw_log "unknown SFC key $k"; return 1; }
		c[$k]=$v
	done
	[ -n "${c[target]}" ] || c[target]=$((c[trigger] / 10))
	"$INTSW_PY" "$INTSW_DIR/intsw.py" sfc "$d" trigger_bytes="${c[trigger]}" \
		target_bytes="${c[target]}" suppress_ns=$((c[suppress_us] * 1000)) rate="${c[rate]}" \
		burst="${c[burst]}" ifindex="$(
			ip netns exec "$ns" cat "/sys/class/net/$dev/ifindex")" udp_port="${c[port]}" \
		addr4="${c[addr4]}" addr6="${c[addr6]}" >/dev/null || return 1
	# The clone of a triggering packet comes back in on the port's ingress.
	nsenter --net="/run/netns/$ns" tc filter replace dev "$dev" ingress pref 1 handle 1 \
		bpf da pinned "$d/progs/int_switch_sfc"
}

intsw_detach() { # intsw_detach NS DEV
	local ns=$1 dev=$2
	tc -n "$ns" filter del dev "$dev" egress 2>/dev/null
	tc -n "$ns" filter del dev "$dev" ingress 2>/dev/null
	tc -n "$ns" qdisc del dev "$dev" clsact 2>/dev/null
	tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null
	rm -rf "$(intsw_dir "$ns" "$dev")"
	return 0
}

intsw_stats() { # intsw_stats NS DEV [--json]
	"$INTSW_PY" "$INTSW_DIR/intsw.py" stats "$(intsw_dir "$1" "$2")" ${3:+"$3"}
}

intsw_get() { # intsw_get NS DEV KEY
	intsw_stats "$1" "$2" | awk -F= -v k="$3" '$1 == k { print $2; found = 1 } END { exit !found }'
}

intsw_reset() { # intsw_reset NS DEV
	"$INTSW_PY" "$INTSW_DIR/intsw.py" reset "$(intsw_dir "$1" "$2")"
}

intsw_sample() { # intsw_sample NS DEV INTERVAL DURATION
	"$INTSW_PY" "$INTSW_DIR/intsw.py" sample "$(intsw_dir "$1" "$2")" "$1" "$2" "$3" "$4"
}

intsw_wait_busy() { # intsw_wait_busy NS DEV TIMEOUT_S [MIN_BACKLOG]
	"$INTSW_PY" "$INTSW_DIR/intsw.py" wait-busy "$(intsw_dir "$1" "$2")" "$3" ${4:+"$4"}
}

intsw_reach() { # intsw_reach NS ADDR
	ip netns exec "$1" "$INTSW_PY" -c '
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), 3).close()
except ConnectionRefusedError:
    pass
except OSError as e:
    sys.exit("%s: %s" % (sys.argv[1], e))' "$2"
}

# ---- topologies ----------------------------------------------------------------

intsw_cleanup() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		case $ns in "$HPCC_NS"-*) ip netns del "$ns" 2>/dev/null ;; esac
	done
	rm -rf "$INTSW_PIN_ROOT" 2>/dev/null
	INTSW_PORTS=()
	INTSW_BOTTLENECK=
	return 0
}

# Topologies are built with one `ip -b` batch in the init namespace (netns,
# veth pairs), one per namespace (addresses, links up, routes) and one tc
# batch per namespace: every ip/tc/sysctl process costs ~0.15 s under TCG.
declare -A _INTSW_B=()
_INTSW_NS=()
_INTSW_FWD=()
_INTSW_RPF=()

_intsw_b() { _INTSW_B[$1]+="$2"$'\n'; } # _intsw_b NS|- LINE: queue a batch line

_intsw_ns() { # _intsw_ns NAME [forwarding]
	_intsw_b - "netns add $1"
	_intsw_b "$1" "link set lo up"
	_INTSW_NS+=("$1")
	[ "${2:-}" = forwarding ] && _INTSW_FWD+=("$1")
	return 0
}

_intsw_link() { # _intsw_link NS1 DEV1 ADDR1/LEN NS2 DEV2 ADDR2/LEN
	_intsw_b - "link add name $2 netns $1 type veth peer name $5 netns $4"
	_intsw_b "$1" "addr add $3 dev $2"
	_intsw_b "$1" "link set $2 up"
	_intsw_b "$4" "addr add $6 dev $5"
	_intsw_b "$4" "link set $5 up"
}

# Base RTT as a netem delay on a port (the reverse direction of the data).
_intsw_delay() { # _intsw_delay NS DEV DELAY_US
	[ "$3" -gt 0 ] || return 0
	_INTSW_B["tc $1"]+="qdisc replace dev $2 root netem delay $3us limit 1000000"$'\n'
}

_intsw_commit() { # runs the queued batches
	local ns
	printf '%s' "${_INTSW_B[-]}" | ip -b - || return 1
	for ns in "${_INTSW_NS[@]}"; do
		printf '%s' "${_INTSW_B[$ns]}" | ip -n "$ns" -b - || return 1
		if [ -n "${_INTSW_B["tc $ns"]:-}" ]; then
			printf '%s' "${_INTSW_B["tc $ns"]}" | tc -n "$ns" -b - || return 1
		fi
	done
	for ns in "${_INTSW_FWD[@]}"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.all.send_redirects=0 || return 1
	done
	for ns in "${_INTSW_RPF[@]}"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0 || return 1
	done
	_INTSW_B=()
	_INTSW_NS=()
	_INTSW_FWD=()
	_INTSW_RPF=()
}

intsw_topo_chain() { # intsw_topo_chain NSND NSW RTT_US
	local nsnd=$1 nsw=$2 rtt=$3 i k
	intsw_cleanup
	for k in $(seq 1 "$nsw"); do
		_intsw_ns "${HPCC_NS}-sw$k" forwarding
		# The switch's own address: the source of its SFC signals.
		_intsw_b "${HPCC_NS}-sw$k" "addr add 10.255.0.$k/32 dev lo"
	done
	_intsw_ns ${HPCC_NS}-rcv
	for i in $(seq 1 "$nsnd"); do
		_intsw_ns "${HPCC_NS}-s$i"
		_intsw_link "${HPCC_NS}-s$i" eth0 "10.1.$i.1/24" ${HPCC_NS}-sw1 "s$i" "10.1.$i.2/24"
		_intsw_b "${HPCC_NS}-s$i" "route add default via 10.1.$i.2"
		_intsw_delay ${HPCC_NS}-sw1 "s$i" "$rtt"
	done
	for k in $(seq 1 $((nsw - 1))); do
		_intsw_link "${HPCC_NS}-sw$k" next "10.2.$k.1/24" "${HPCC_NS}-sw$((k + 1))" prev "10.2.$k.2/24"
		_intsw_b "${HPCC_NS}-sw$k" "route add 10.0.2.0/24 via 10.2.$k.2"
		_intsw_b "${HPCC_NS}-sw$((k + 1))" "route add default via 10.2.$k.1"
	done
	_intsw_link "${HPCC_NS}-sw$nsw" rcv 10.0.2.2/24 ${HPCC_NS}-rcv eth0 10.0.2.1/24
	_intsw_b ${HPCC_NS}-rcv "route add default via 10.0.2.2"
	_intsw_commit
}

# IPv6 on a chain topology built by intsw_topo_chain (or a wrapper of it),
# beside its IPv4: sender i is fd00:1:i::1, the receiver fd00:2::1, links
# between switches fd00:3:k::/64. No DAD, so addresses work at once.
intsw_ipv6() { # intsw_ipv6 NSND NSW
	local nsnd=$1 nsw=$2 i k
	for i in $(seq 1 "$nsnd"); do
		ip -n "${HPCC_NS}-s$i" addr add "fd00:1:$i::1/64" dev eth0 nodad || return 1
		ip -n ${HPCC_NS}-sw1 addr add "fd00:1:$i::2/64" dev "s$i" nodad || return 1
		ip -n "${HPCC_NS}-s$i" -6 route add default via "fd00:1:$i::2" || return 1
	done
	for k in $(seq 1 $((nsw - 1))); do
		ip -n "${HPCC_NS}-sw$k" addr add "fd00:3:$k::1/64" dev next nodad || return 1
		ip -n "${HPCC_NS}-sw$((k + 1))" addr add "fd00:3:$k::2/64" dev prev nodad || return 1
		ip -n "${HPCC_NS}-sw$k" -6 route add fd00:2::/64 via "fd00:3:$k::2" || return 1
		ip -n "${HPCC_NS}-sw$((k + 1))" -6 route add default via "fd00:3:$k::1" || return 1
	done
	ip -n "${HPCC_NS}-sw$nsw" addr add fd00:2::2/64 dev rcv nodad || return 1
	ip -n ${HPCC_NS}-rcv addr add fd00:2::1/64 dev eth0 nodad || return 1
	ip -n ${HPCC_NS}-rcv -6 route add default via fd00:2::2 || return 1
	for k in $(seq 1 "$nsw"); do
		ip netns exec "${HPCC_NS}-sw$k" sysctl -qw net.ipv6.conf.all.forwarding=1 || return 1
		ip -n "${HPCC_NS}-sw$k" addr add "fd00:ff::$k/128" dev lo nodad || return 1
	done
}

_intsw_kv() { # _intsw_kv KEY DEFAULT ARGS... -> value of KEY= in ARGS, else DEFAULT
	local k=$1 v=$2 a
	shift 2
	for a in "$@"; do
		[ "${a%%=*}" = "$k" ] && v=${a#*=}
	done
	echo "$v"
}

# Common keys of the wrappers, with the defaults: 100 Mbit/s, 2 ms base RTT,
# a buffer of 4 BDP, no ECN marking; split=1 puts half the base RTT after
# the bottleneck port (its delay_us) and half on the way back to the
# senders, so that an SFC signal from the bottleneck reaches its sender in
# about half the base RTT (split=0: all of it on the way back).
_intsw_common() {
	split=$(_intsw_kv split 0 "$@")
	rate=$(_intsw_kv rate_mbit 100 "$@")
	rtt=$(_intsw_kv rtt_us 2000 "$@")
	bdp=$((rate * 1000000 / 8 * rtt / 1000000))
	buffer=$(_intsw_kv buffer $((4 * bdp)) "$@")
	ecn_k=$(_intsw_kv ecn_k 0 "$@")
	tso=$(_intsw_kv tso on "$@")
}

# intsw_sender_offload on|off: TSO/GSO of every sender device (hpcc-s*).
# With "off", senders emit MTU-sized packets, so the emulator queues, drops
# and marks per packet as a real switch would (instead of per GSO skb of up
# to ~1 ms of the flow's rate); costs more CPU: at 100 Mbit/s under TCG the
# forwarding path takes about half a vCPU.
intsw_sender_offload() {
	local ns dev
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		case $ns in "$HPCC_NS"-s[0-9]*) ;; *) continue ;; esac
		for dev in $(ip -n "$ns" -o link show | awk -F': ' '$2 != "lo" { sub(/@.*/, "", $2); print $2 }'); do
			ip netns exec "$ns" ethtool -K "$dev" tso "$1" gso "$1" >/dev/null || return 1
		done
	done
}

intsw_topo_single() { # (a) one sender, one switch, one receiver
	intsw_topo_fanin 1 "$@"
}

# The first switch's delays for split=0/1 (see _intsw_common): the return
# delay on its sender ports and the bottleneck's delay_us.
_intsw_split() { # sets back_us and fwd_us from rtt and split
	if [ "$split" = 1 ]; then
		fwd_us=$((rtt / 2))
		back_us=$((rtt - fwd_us))
	else
		fwd_us=0
		back_us=$rtt
	fi
}

intsw_topo_fanin() { # (b) N senders into one bottleneck
	local n=$1 rate rtt bdp buffer ecn_k tso split fwd_us back_us
	shift
	_intsw_common "$@"
	_intsw_split
	intsw_topo_chain "$n" 1 "$back_us" || return 1
	[ "$tso" = on ] || intsw_sender_offload "$tso" || return 1
	intsw_attach ${HPCC_NS}-sw1 rcv rate_mbit="$rate" buffer="$buffer" ecn_k="$ecn_k" switch_id=0x101 \
		delay_us="$fwd_us" || return 1
	INTSW_PORTS=(${HPCC_NS}-sw1/rcv)
	INTSW_BOTTLENECK=${HPCC_NS}-sw1/rcv
}

# intsw_topo_many: two senders (hpcc-s1 10.1.1.1, hpcc-s2 10.1.2.1) into one
# 1 Gbit/s switch port toward the receiver (10.0.2.1), 1 ms base RTT, set
# up for tens of thousands of connections: the whole ephemeral port range
# and TIME_WAIT reuse on the senders, deep accept queues and no SYN
# cookies on the receiver.
intsw_topo_many() {
	intsw_topo_fanin 2 rate_mbit=1000 rtt_us=1000 || return 1
	local ns
	for ns in ${HPCC_NS}-s1 ${HPCC_NS}-s2; do
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="1024 65535" \
			net.ipv4.tcp_tw_reuse=1 || return 1
	done
	ip netns exec ${HPCC_NS}-rcv sysctl -qw net.core.somaxconn=65535 \
		net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.tcp_syncookies=0
}

# The start of a test of many connections: the emulator and the module (or
# skip), file descriptors for them, and intsw_topo_many (or fail).
intsw_many_setup() {
	ktap_need emulator_builds intsw_build
	ktap_need module_loads load_module
	ulimit -n 1048576
	intsw_topo_many || { ktap_test_fail "topology"; ktap_finished; }
}

intsw_topo_twohop() { # (c) N senders, two switches, bottleneck at hop 2
	local n=$1 rate rtt bdp buffer ecn_k tso rate1 split
	shift
	_intsw_common "$@"
	rate1=$(_intsw_kv rate1_mbit $((2 * rate)) "$@")
	intsw_topo_chain "$n" 2 "$rtt" || return 1
	[ "$tso" = on ] || intsw_sender_offload "$tso" || return 1
	intsw_attach ${HPCC_NS}-sw1 next rate_mbit="$rate1" buffer=0 ecn_k="$ecn_k" switch_id=0x101 || return 1
	intsw_attach ${HPCC_NS}-sw2 rcv rate_mbit="$rate" buffer="$buffer" ecn_k="$ecn_k" switch_id=0x102 || return 1
	INTSW_PORTS=(${HPCC_NS}-sw1/next ${HPCC_NS}-sw2/rcv)
	INTSW_BOTTLENECK=${HPCC_NS}-sw2/rcv
}

intsw_topo_parallel() { # (d) two parallel switches; intsw_route moves the path
	local rate rtt bdp buffer ecn_k tso x n split
	_intsw_common "$@"
	intsw_cleanup
	_intsw_ns ${HPCC_NS}-s1
	_intsw_ns ${HPCC_NS}-rcv
	_intsw_b ${HPCC_NS}-s1 "addr add 10.0.1.1/32 dev lo"
	_intsw_b ${HPCC_NS}-rcv "addr add 10.0.2.1/32 dev lo"
	for x in a b; do
		n=1
		[ $x = b ] && n=2
		_intsw_ns "${HPCC_NS}-sw$x" forwarding
		_intsw_link ${HPCC_NS}-s1 "eth-$x" "10.3.$n.1/24" "${HPCC_NS}-sw$x" snd "10.3.$n.2/24"
		_intsw_link "${HPCC_NS}-sw$x" rcv "10.4.$n.2/24" ${HPCC_NS}-rcv "eth-$x" "10.4.$n.1/24"
		_intsw_b "${HPCC_NS}-sw$x" "route add 10.0.1.1/32 via 10.3.$n.1"
		_intsw_b "${HPCC_NS}-sw$x" "route add 10.0.2.1/32 via 10.4.$n.1"
		_intsw_delay "${HPCC_NS}-sw$x" snd "$rtt"
	done
	# Either end may receive on either device while the route moves.
	_INTSW_RPF+=(${HPCC_NS}-s1 ${HPCC_NS}-rcv)
	_intsw_commit || return 1
	[ "$tso" = on ] || intsw_sender_offload "$tso" || return 1
	intsw_attach ${HPCC_NS}-swa rcv rate_mbit="$rate" buffer="$buffer" ecn_k="$ecn_k" switch_id=0x0a1 || return 1
	intsw_attach ${HPCC_NS}-swb rcv rate_mbit="$rate" buffer="$buffer" ecn_k="$ecn_k" switch_id=0x0b2 || return 1
	INTSW_PORTS=(${HPCC_NS}-swa/rcv ${HPCC_NS}-swb/rcv)
	intsw_route a
}

intsw_route() { # intsw_route a|b: both directions through ${HPCC_NS}-sw<a|b>
	local n=1
	[ "$1" = b ] && n=2
	ip -n ${HPCC_NS}-s1 route replace 10.0.2.1/32 via "10.3.$n.2" src 10.0.1.1 || return 1
	ip -n ${HPCC_NS}-rcv route replace 10.0.1.1/32 via "10.4.$n.2" src 10.0.2.1 || return 1
	INTSW_BOTTLENECK=${HPCC_NS}-sw$1/rcv
}
