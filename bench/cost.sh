#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# What each congestion control costs the host, guest side of `make cost`
# (bench/run cost boots one VM in virtual time and runs this): hpcc, dctcp,
# cubic and bbr, one bulk flow each through the emulated 100 Mbit/s, 2 ms
# bottleneck of `make bench` (sch_fq on the sender, CE marking at BDP/4
# for dctcp), first with TSO/GSO as the kernel does it ("tso"), then with
# one packet per skb for every algorithm ("one"), so that the cost of
# smaller bursts shows apart from the cost of the algorithm.
#
# In virtual time (QEMU -icount shift=0) the guest's clock advances one ns
# per instruction, so CPU time is an instruction count: cache misses,
# branch mispredictions and memory stalls are invisible here.
#
# Per run (one JSON line in $HPCC_RESULTS/cost.jsonl):
#   - instructions per GB for the whole guest: the busy time of every
#     vCPU in /proc/stat (user, nice, system, irq, softirq, steal; ticks
#     of 10 ms) over the transfer, per byte delivered. Sender and receiver
#     share the guest, and veth hands a packet to the other side's
#     softirq on the same CPU, so this figure cannot be split by host;
#   - the sender's and the receiver's processes (/proc/PID/stat utime and
#     stime): the system calls and what ran in their context, not the
#     softirq work of either side (ACK processing, GRO, the emulated
#     switch), which runs in whatever context the CPU was in;
#   - the mean segments per skb at the bottleneck (the emulator's log) and
#     the ACKs the sender received (TCP_INFO segs_in);
#   - with KPROBES=1 (the default), the instructions per ACK of all the
#     algorithm's tcp_congestion_ops callbacks together (and for hpcc its
#     netfilter hooks, where responses are taken in and probes answered):
#     a kprobe at each callback's entry and a kretprobe at its return,
#     both tracefs events, whose timestamps in virtual time are
#     instruction counts. The events' own cost between the two timestamps
#     is calibrated in the same run: two entry events on one callback
#     (the same call) are one event's cost apart, subtracted once per
#     call. Nested calls (a softirq on the same CPU) are paired per CPU.
#     In the same run: hpcc's per-probe steps (probe_steps), and the
#     emulated switch's egress program's mean run per packet (bpf_stats).
#     This run is separate from the per-GB one, whose figures the probes
#     would inflate.
set -u
. "$(dirname "$0")/../selftests/lib.sh"
. "$HPCC_LIB/sh/int_switch.sh"
. "$HPCC_LIB/sh/bench_lib.sh"

SECS=${SECS:-4}
RATE_MBIT=${RATE_MBIT:-100}
RTT_US=${RTT_US:-2000}
ALGOS=${ALGOS:-hpcc dctcp cubic bbr}
SEGS=${SEGS-tso one}
KPROBES=${KPROBES:-1}
JSON=$RESULTS/cost.jsonl
: >"$JSON"
TR=/sys/kernel/tracing

load_module || { echo "cost: cannot load tcp_hpcc"; exit 1; }
intsw_build >/dev/null || { echo "cost: cannot build the switch emulator"; exit 1; }
hpcc_tracefs
trap 'intsw_cleanup; echo 0 >$TR/events/kprobes/enable 2>/dev/null; echo >$TR/kprobe_events 2>/dev/null' EXIT

# The tcp_congestion_ops callbacks of each algorithm (net/ipv4/tcp_cubic.c,
# tcp_dctcp.c, tcp_bbr.c; get_info and sndbuf_expand are not on the data
# path), and for hpcc the Rust adapter's callbacks (rust/tcp_hpcc/cong)
# and its netfilter hooks (rust/tcp_hpcc/probe_tx), from /proc/kallsyms.
callbacks() {
	# The first is called on every ACK: the events' cost is calibrated on it.
	case $1 in
	cubic) echo cubictcp_acked cubictcp_init cubictcp_recalc_ssthresh cubictcp_cong_avoid cubictcp_state \
		tcp_reno_undo_cwnd cubictcp_cwnd_event ;;
	dctcp) echo dctcp_update_alpha dctcp_init dctcp_cwnd_event dctcp_ssthresh tcp_reno_cong_avoid \
		dctcp_cwnd_undo dctcp_state ;;
	bbr) echo bbr_main bbr_init bbr_undo_cwnd bbr_cwnd_event bbr_ssthresh bbr_min_tso_segs bbr_set_state ;;
	hpcc) awk '$4 == "[tcp_hpcc]" && ($3 ~ /Adapter.*_cb/ || $3 ~ /hpcc_nf_(local_in|post_routing)$/) { print $3 }' \
		/proc/kallsyms | sort -u | awk '/cong_control_cb/ { print; next } { rest = rest " " $0 } END { print rest }' |
		tr '\n' ' ' ;;
	esac
}

# hpcc's per-probe steps, which run inside the callbacks and hooks above
# (so apart from their sum): building and sending a probe (hpcc::probe),
# the receiver building (build_response) and sending (hpcc_reply) the
# answer.
probe_steps() {
	awk '$4 == "[tcp_hpcc]" && ($3 ~ /4hpcc5probe$/ || $3 ~ /5probe14build_response$/ || $3 == "hpcc_reply") { print $3 }' \
		/proc/kallsyms | sort -u | tr '\n' ' '
}

busy_ticks() { # all vCPUs: user nice system irq softirq steal (no fork)
	local c u n sy id io irq sirq st _
	read -r c u n sy id io irq sirq st _ </proc/stat
	echo $((u + n + sy + irq + sirq + st))
}
proc_ticks() { # PID: utime + stime, or nothing once it has exited (no fork)
	local f
	read -r -a f <"/proc/$1/stat" 2>/dev/null && echo $((f[13] + f[14]))
}
uptime_ns() { # CLOCK_BOOTTIME in ns, 10 ms resolution (no fork)
	local u _
	read -r u _ </proc/uptime
	echo $((${u%.*} * 1000000000 + 10#${u#*.} * 10000000))
}

# kprobes_on ALGO: an entry and a return event per callback, and a second
# entry event on the first one (the calibration pair).
kprobes_on() {
	local i=0 f
	echo >$TR/kprobe_events
	for f in $(callbacks "$1"); do
		echo "c$i $f" >>"$2.names"
		echo "p:kprobes/cb$i $f" >>$TR/kprobe_events 2>/dev/null &&
			echo "r:kprobes/cr$i $f" >>$TR/kprobe_events 2>/dev/null ||
			echo "cost: no kprobe on $f" >&2
		[ $i = 0 ] && echo "p:kprobes/cal $f" >>$TR/kprobe_events 2>/dev/null
		i=$((i + 1))
	done
	i=0
	[ "$1" != hpcc ] || for f in $(probe_steps); do
		echo "p:kprobes/nb$i $f" >>$TR/kprobe_events 2>/dev/null &&
			echo "r:kprobes/nr$i $f" >>$TR/kprobe_events 2>/dev/null
		echo "n$i $f" >>"$2.names"
		i=$((i + 1))
	done
	# x86-tsc: the trace prints raw counts, where other clocks print
	# microseconds; under -icount the TSC follows the virtual clock, and
	# tsc_mhz converts it (dmesg's "tsc: ... MHz", else 1000).
	echo x86-tsc >$TR/trace_clock 2>/dev/null || echo local >$TR/trace_clock
	dmesg | sed -n 's/.*tsc: .*[^0-9.]\([0-9][0-9.]*\) MHz.*/\1/p' | tail -n1 >"$2.tsc_mhz"
	echo 65536 >$TR/buffer_size_kb
	echo >$TR/trace
	# The emulated switch's programs' run time per packet (bpf_stats:
	# instructions in virtual time), only in this run: it costs two clock
	# reads per program run.
	sysctl -qw kernel.bpf_stats_enabled=1
	echo 1 >$TR/events/kprobes/enable
}
kprobes_off() { # FILE
	echo 0 >$TR/events/kprobes/enable 2>/dev/null
	bpftool -j prog show >"$1.bpf" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled=0
	grep -E ' (cb|cr|nb|nr)[0-9]+: | cal: ' $TR/trace >"$1"
	cat $TR/per_cpu/cpu*/stats | awk '/^overrun:/ { n += $2 } END { print n + 0 }' >"$1.overrun"
	echo >$TR/trace
	echo >$TR/kprobe_events
}

# one_run ALGO SEG MODE: MODE plain (the per-GB figures) or kprobes.
one_run() {
	local algo=$1 seg=$2 mode=$3 rate rtt bdp buffer ecn_k
	_bench_link rate_mbit="$RATE_MBIT" rtt_us="$RTT_US"
	local out=$RESULTS/cost-$algo-$seg-$mode
	intsw_topo_fanin 1 rate_mbit="$rate" rtt_us="$rtt" buffer="$buffer" ecn_k="$ecn_k" >/dev/null ||
		{ echo "cost: topology failed" >&2; return 1; }
	_bench_fq ${HPCC_NS}-s1
	[ "$seg" = tso ] || _bench_one_packet_per_skb ${HPCC_NS}-s1
	ip netns exec ${HPCC_NS}-rcv "$BENCH_PY" "$BENCH_FLOW" serve 5301 --once --cc "$algo" >"$out.srv.json" &
	local srv=$!
	wait_listening ${HPCC_NS}-rcv 'sport = :5301' 1
	rm -f "$out.kp.names"
	[ "$mode" = kprobes ] && kprobes_on "$algo" "$out.kp"
	local b0 b1 t0 t1 s_pid r0 s0 r1 s1 v
	rm -f "$out.started"
	ip netns exec ${HPCC_NS}-s1 "$BENCH_PY" "$BENCH_FLOW" send 10.0.2.1 5301 "$SECS" --cc "$algo" \
		--tcp-info 1 --started "$out.started" >"$out.flow.json" &
	s_pid=$!
	# The window: from the connection (python's start-up is not the
	# algorithm's) to the sender's exit. `ip netns exec` execs python, so
	# the PIDs are the processes'; each is read while it lives.
	_bench_wait_file "$out.started" 30
	b0=$(busy_ticks)
	t0=$(uptime_ns)
	s0=$(proc_ticks $s_pid)
	r0=$(proc_ticks $srv)
	s1=$s0
	r1=$r0
	while kill -0 $s_pid 2>/dev/null; do
		v=$(proc_ticks $s_pid) && s1=$v
		v=$(proc_ticks $srv) && r1=$v
		sleep 0.5
	done
	b1=$(busy_ticks)
	t1=$(uptime_ns)
	wait $s_pid
	wait $srv
	[ "$mode" = kprobes ] && kprobes_off "$out.kp"
	"$BENCH_PY" "$INTSW_DIR/intsw.py" log "$(intsw_dir "${INTSW_BOTTLENECK%%/*}" "${INTSW_BOTTLENECK##*/}")" >"$out.log"
	intsw_cleanup
	"$BENCH_PY" - "$algo" "$seg" "$mode" "$out" "$((b1 - b0))" "$((s1 - s0))" "$((r1 - r0))" \
		"$(getconf CLK_TCK)" "$(nproc)" "$RATE_MBIT" "$RTT_US" "$t0" "$t1" <<-'EOF'
	import json, sys
	algo, seg, mode, out = sys.argv[1:5]
	busy, snd, rcv, hz, ncpu, rate, rtt, t0, t1 = map(int, sys.argv[5:14])
	f = json.load(open(out + ".flow.json"))
	ns = 1e9 / hz
	# The flow's payload through the bottleneck within the window, and its
	# skbs (the emulator logs one line per skb: wire bytes of all its
	# segments, 66 B of headers each).
	skbs = segs = payload = departed = 0
	qs = []
	for l in open(out + ".log"):
	    t, q, sport, wire, drop = map(int, l.split())
	    if drop or not t0 <= t < t1:
	        continue
	    departed += wire
	    qs.append(q)
	    if wire > 200:  # data, not probes, responses or ACKs
	        n = -(-wire // 1514)
	        skbs += 1
	        segs += n
	        payload += wire - 66 * n
	secs = (t1 - t0) / 1e9
	per_gb = lambda ticks: round(ticks * ns / payload * 1e9) if payload else None
	r = {"algo": algo, "seg": seg, "mode": mode, "rate_mbit": rate, "rtt_us": rtt,
	     "bytes": f["bytes"], "window_s": round(secs, 2), "window_bytes": payload,
	     "mbps": round(payload * 8 / secs / 1e6, 2) if secs else None, "vcpus": ncpu,
	     # The bottleneck's departures (every packet, headers included)
	     # over B, as the bench's utilization.
	     "util": round(departed * 8 / secs / (rate * 1e6), 3) if secs else None,
	     # The bottleneck's backlog each packet found, over the window.
	     "q_p99_bytes": sorted(qs)[int(0.99 * (len(qs) - 1))] if qs else None,
	     "pacing_shift": int(open("/sys/module/tcp_hpcc/parameters/pacing_shift").read()) if algo == "hpcc" else None,
	     "acks": f.get("segs_in"), "data_segs": f.get("data_segs_out"),
	     "segs_per_skb": round(segs / skbs, 2) if skbs else None,
	     "guest_instr_per_gb": per_gb(busy),
	     "guest_busy_frac": round(busy * ns / (secs * 1e9 * ncpu), 3) if secs else None,
	     "sender_proc_instr_per_gb": per_gb(snd),
	     "receiver_proc_instr_per_gb": per_gb(rcv)}
	if mode == "kprobes":
	    import collections, re
	    stack = collections.defaultdict(list)
	    per = collections.Counter()
	    calls = collections.Counter()
	    prev = {}
	    cal = []
	    pat = re.compile(r"\[(\d+)\].*?\s(\d+)(\.\d+)?: (cb\d+|cr\d+|nb\d+|nr\d+|cal): ")
	    try:
	        mhz = float(open(out + ".kp.tsc_mhz").read().strip() or 1000)
	    except (OSError, ValueError):
	        mhz = 1000.0
	    for l in open(out + ".kp"):
	        m = pat.search(l)
	        if not m:
	            continue
	        # x86-tsc: raw counts; another clock: seconds with microseconds.
	        if m.group(3):
	            ts = round(float(m.group(2) + m.group(3)) * 1e9)
	        else:
	            ts = round(int(m.group(2)) * 1000 / mhz)
	        cpu, ev = m.group(1), m.group(4)
	        # The calibration: the two entry events of one call, back to
	        # back on a CPU (in either order).
	        p = prev.get(cpu)
	        prev[cpu] = (ev, ts)
	        if {ev, p and p[0]} == {"cb0", "cal"}:
	            cal.append(ts - p[1])
	        if ev == "cal":
	            continue
	        i = ev[:1] + ev[2:]  # c0.. callbacks, n0.. probe steps
	        if ev[1] == "b":
	            stack[(cpu, i)].append(ts)
	        elif stack[(cpu, i)]:
	            per[i] += ts - stack[(cpu, i)].pop()
	            calls[i] += 1
	    cal.sort()
	    o = cal[len(cal) // 2] if cal else 0
	    # The switch's egress program (int_switch_egress, 15 characters in
	    # bpftool), data and probes alike: its mean run per packet.
	    egress = None
	    try:
	        progs = [p for p in json.load(open(out + ".kp.bpf")) if p.get("name", "").startswith("int_switch_egre")]
	        rt, rc = sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs)
	        egress = round(rt / rc) if rc else None
	    except (OSError, ValueError):
	        pass
	    cb = [k for k in calls if k[0] == "c"]
	    n = sum(calls[k] for k in cb)
	    raw = sum(per[k] for k in cb)
	    acks = f.get("segs_in") or 0
	    names = {}
	    try:
	        names = dict(l.split() for l in open(out + ".kp.names") if l.strip())
	    except OSError:
	        pass
	    short = lambda sym: "hpcc_reply" if sym == "hpcc_reply" else ("build_response" if "build_response" in sym else "probe")
	    steps = {short(names[k]): {"calls": calls[k], "instr_per_call": round(per[k] / calls[k] - o)}
	             for k in calls if k[0] == "n" and k in names}
	    # A readable name: the Rust symbol's last path element.
	    def name(sym):
	        if not sym.startswith("_R"):
	            return sym
	        tail = re.sub(r"B\d*_$", "", sym)
	        for m in re.finditer(r"\d+", tail):
	            n = int(m.group())
	            if n and m.end() + n == len(tail):
	                return tail[m.end():]
	        return sym
	    each = {name(names.get(k, k)): {"calls": calls[k], "instr_per_ack": round((per[k] - o * calls[k]) / acks, 1)}
	            for k in cb} if acks else {}
	    r.update(callback_calls=n, callback_overhead_per_call=o,
	             callback_instr_per_ack=round((raw - o * n) / acks, 1) if acks else None,
	             callback_raw_per_ack=round(raw / acks, 1) if acks else None,
	             callbacks=each, probe_steps=steps,
	             switch_egress_instr_per_packet=egress,
	             tsc_mhz=mhz, overrun=int(open(out + ".kp.overrun").read() or 0))
	print(json.dumps(r))
	EOF
}

# SCALES="100 200 ..." (`make timescale`): the plain runs at each rate in
# Mbit/s, with the base RTT scaled so that the BDP stays the bench's 25 kB
# (bench_lib.sh bench_scaled_rtt_us), instead of RATE_MBIT and RTT_US.
for scale in ${SCALES:-0}; do
	if [ "$scale" != 0 ]; then
		RATE_MBIT=$scale
		RTT_US=$(bench_scaled_rtt_us "$scale")
	fi
	for seg in $SEGS; do
		for algo in $ALGOS; do
			echo "cost: $algo, $seg, ${RATE_MBIT} Mbit/s, ${RTT_US} us, ${SECS}s" >&2
			one_run "$algo" "$seg" plain >>"$JSON" || echo "cost: $algo $seg failed" >&2
		done
	done
done
# PACING_SHIFTS="12 11 10": hpcc again with each `pacing_shift` knob
# (TSO bursts and skbs of 2^-shift s of the pacing rate), TSO: what larger
# skbs save per GB, and the queue they add.
for shift in ${PACING_SHIFTS:-}; do
	echo "$shift" >/sys/module/tcp_hpcc/parameters/pacing_shift
	echo "cost: hpcc, tso, pacing_shift $shift, ${SECS}s" >&2
	one_run hpcc tso plain >>"$JSON" || echo "cost: hpcc pacing_shift $shift failed" >&2
done
[ -z "${PACING_SHIFTS:-}" ] || knobs_reset pacing_shift
if [ "$KPROBES" = 1 ]; then
	for algo in $ALGOS; do
		echo "cost: $algo, callbacks (kprobes), ${SECS}s" >&2
		one_run "$algo" tso kprobes >>"$JSON" || echo "cost: $algo kprobes failed" >&2
	done
fi
cat "$JSON"
