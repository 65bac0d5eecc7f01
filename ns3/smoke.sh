#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The datacenter simulation's smoke scenario (KTAP; make check runs it):
# the 32-host leaf-spine, 1 ms of WebSearch arrivals at 30% load plus
# 31:1 incasts of 250 KB started within 1 us, and a 200 KB buffer per switch port
# so that the incasts overflow and TCP's loss hooks run too. hpcc (through
# the C ABI) and dctcp run the same flow list. It asserts that ns-3 ran the
# module's controller:
#   - every flow of both runs completes;
#   - the controller trace replays through the core with 0 mismatches
#     (hpcc-replay --ctl) and holds every hook kind;
#   - each ACK's cwnd is the one the previous decision set (ns-3 applied
#     it), unless TCP's own loss recovery ran in between;
#   - probes were stamped by the switches, answered, and no response had a
#     malformed INT stack;
#   - on flows over 1 MB, at least 90% of ACKs were decided by telemetry;
# and that it behaves as HPCC++ should: hpcc's p99 switch queue is below
# dctcp's on the same flows. A third run, hpcc with Source Flow Control at
# the switches and the hosts, asserts that every signal the switches sent
# was accepted and applied and cut the window, that its controller trace
# (SFC cells included) replays with 0 mismatches, and that the incasts
# leave a lower p99 queue and fewer drops than without SFC.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
workloads=${HPCC_WORKLOADS:-$root/../shared/workloads}
out=${HPCC_DC_SMOKE_OUT:-$root/results/dc-smoke}
build=${HPCC_NS3_BUILD:-$root/target/ns3}
n=0
plan=12
echo "TAP version 13"
echo "1..$plan"
pass=0
fail=0
ok() { # ok STATUS NAME
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n $2"; pass=$((pass + 1)); else echo "not ok $n $2"; fail=$((fail + 1)); fi
}
skip_rest() {
	while [ "$n" -lt "$plan" ]; do n=$((n + 1)); echo "ok $n $1 # SKIP"; done
	echo "# Totals: pass:0 fail:0 skip:$plan"
	exit 4
}

[ -r "$workloads/WebSearch_distribution.txt" ] || skip_rest "no workloads in $workloads (set HPCC_WORKLOADS)"
command -v cmake >/dev/null && [ -r /usr/lib/x86_64-linux-gnu/cmake/ns3/ns3Config.cmake ] ||
	skip_rest "ns-3 (libns3-dev, cmake) is not installed: run vm/setup-host.sh"
rm -rf "$out"
mkdir -p "$out"
t0=$SECONDS
HPCC_NS3_BUILD=$build "$root/ns3/run" build >"$out/build.log" 2>&1
rc=$?
[ $rc -eq 0 ] || tail -n 20 "$out/build.log" | sed 's/^/# /'
ok $rc "dc-sim builds against libns3-dev and libhpcc_ffi.a ($((SECONDS - t0)) s)"
if [ $rc -ne 0 ]; then
	while [ "$n" -lt "$plan" ]; do ok 1 "(not run: dc-sim did not build)"; done
	echo "# Totals: pass:$pass fail:$fail skip:0"
	exit 1
fi

flows=$out/flows.txt
python3 "$root/ns3/flows.py" "$workloads/WebSearch_distribution.txt" --hosts 32 --load 0.3 --window-us 1000 \
	--incast 31:250000:0.08:1 >"$flows"
common=(--flows="$flows" --workload=WebSearch --load=0.3 --window-us=1000 --buffer=200000 --progress-us=100000)
t0=$SECONDS
"$build/dc-sim" --algo=hpcc "${common[@]}" --name=hpcc --ctl-trace="$out/ctl.trace" --fct="$out/hpcc.fct" \
	--out="$out/dc.jsonl" 2>"$out/hpcc.log"
hrc=$?
"$build/dc-sim" --algo=dctcp "${common[@]}" --name=dctcp --fct="$out/dctcp.fct" --out="$out/dc.jsonl" 2>"$out/dctcp.log"
drc=$?
"$build/dc-sim" --algo=hpcc --sfc=1 "${common[@]}" --name=hpcc-sfc --ctl-trace="$out/ctl-sfc.trace" \
	--out="$out/sfc.jsonl" 2>"$out/hpcc-sfc.log"
src=$?
echo "# $(grep -vc '^#' "$flows") flows; three runs in $((SECONDS - t0)) s"
/usr/bin/python3 - "$out" "$hrc" "$drc" <<'EOF'
import json, sys
out, hrc, drc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
runs = {}
for line in open(f"{out}/dc.jsonl"):
    r = json.loads(line)
    runs[r["algo"]] = r
h, d = runs.get("hpcc"), runs.get("dctcp")
for name, r in (("hpcc", h), ("dctcp", d)):
    if r:
        b = r["buckets"]
        print(f"# {name}: " + " ".join(f"{k} p99 {b[k]['p99']}" for k in b) +
              f"; queue p99 {r['q_p99_bytes']} B, drops {r['drops']}, incomplete {r['incomplete']}, wall {r['wall_s']} s")
json.dump({"hpcc_ok": hrc == 0 and h is not None and h["incomplete"] == 0,
           "dctcp_ok": drc == 0 and d is not None and d["incomplete"] == 0,
           "probes": h["probes"] if h else {},
           "q": [h["q_p99_bytes"] if h else None, d["q_p99_bytes"] if d else None]},
          open(f"{out}/summary.json", "w"))
EOF
sum() { /usr/bin/python3 -c "import json; d=json.load(open('$out/summary.json')); print($1)"; }
[ "$(sum "int(d['hpcc_ok'] and d['dctcp_ok'])")" = 1 ]
ok $? "every flow of the hpcc and the dctcp run completed"

cargo run -q --release -p hpcc-replay -- --ctl <"$out/ctl.trace" >"$out/replay.json" 2>"$out/replay.err"
rc=$?
echo "# replay: $(cat "$out/replay.json")"
[ $rc -eq 0 ] && grep -q '"mismatches":0' "$out/replay.json"
ok $? "hpcc-replay --ctl replays the ns-3 controller trace through the core with 0 mismatches"

# Hook kinds, and whether each ACK's cwnd is what the previous decision set.
/usr/bin/python3 - "$out/ctl.trace" >"$out/trace-check.txt" <<'EOF'
import sys
hooks, last, prev_red, checked, differ, recov = set(), {}, {}, 0, 0, 0
for line in open(sys.argv[1]):
    if not line.startswith("hpcc_ctl: "):
        continue
    kv = dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)
    sk, hook, flags = kv["sk"], int(kv["hook"]), int(kv["flags"], 16)
    hooks.add(hook)
    if hook == 3:  # ssthresh: TCP's loss or ECN reduction sets its own window next
        last[sk] = None
        continue
    if hook not in (0, 1):
        continue
    red = bool(flags & 0x1)
    if hook == 1 and last.get(sk) is not None:
        # TCP's own recovery owns the window while in reduction, and ends
        # it by setting cwnd to ssthresh (tcp_end_cwnd_reduction; ns-3 too).
        if red or (prev_red.get(sk) and kv["cwnd"] == kv["ssthresh"]):
            recov += 1
        else:
            checked += 1
            differ += int(kv["cwnd"]) != last[sk]
    last[sk], prev_red[sk] = int(kv["out_cwnd"]), red
print(" ".join(str(h) for h in sorted(hooks)), checked, differ, recov)
EOF
read -r -a tc <"$out/trace-check.txt"
echo "# hook kinds: ${tc[*]:0:${#tc[@]}-3}; ACKs checked ${tc[-3]}, cwnd not the previous decision's ${tc[-2]}, in recovery ${tc[-1]}"
[ "${tc[0]}" = 0 ] && [ "${tc[1]}" = 1 ] && [ "${tc[2]}" = 2 ] && [ "${tc[3]}" = 3 ]
ok $? "the trace holds every hook kind (init, ack, tx_start, ssthresh)"
[ "${tc[-3]}" -gt 1000 ] && [ "${tc[-2]}" -eq 0 ]
ok $? "each ACK's cwnd is the one the previous decision set"

echo "# probes: $(sum "d['probes']")"
[ "$(sum "int(d['probes']['sent'] > 100 and d['probes']['stamped'] >= d['probes']['received'] and d['probes']['responses_accepted'] > 0.9 * d['probes']['responses_sent'])")" = 1 ]
ok $? "probes are stamped at the switches and answered, and their responses accepted"
[ "$(sum "int(d['probes']['bad_int'] == 0 and d['probes']['too_many_hops'] == 0 and d['probes']['malformed'] == 0)")" = 1 ]
ok $? "no response had a malformed INT stack"

share=$(awk '$4 > 1000000 && $8 > 0 { a += $8; t += $9 } END { if (a) printf "%.3f %d", t / a, a; else print "0 0" }' "$out/hpcc.fct")
echo "# flows over 1 MB: telemetry decided ${share% *} of ${share#* } ACKs"
awk -v s="${share% *}" 'BEGIN { exit !(s >= 0.9) }'
ok $? "on flows over 1 MB, at least 90% of ACKs were decided by telemetry"

[ "$(sum "int(d['q'][0] is not None and d['q'][1] is not None and d['q'][0] < d['q'][1])")" = 1 ]
ok $? "hpcc's p99 switch queue is below dctcp's on the same flows ($(sum "d['q']") bytes)"

# SFC: the third run against the first.
/usr/bin/python3 - "$out" "$src" >"$out/sfc-check.txt" <<'EOF'
import json, sys
out, rc = sys.argv[1], int(sys.argv[2])
h = next(json.loads(l) for l in open(f"{out}/dc.jsonl") if json.loads(l)["algo"] == "hpcc")
try:
    s = json.loads(open(f"{out}/sfc.jsonl").readline())
except (OSError, ValueError):
    s = None
st = s["sfc_stats"] if s else {}
signalled = bool(s) and rc == 0 and s["incomplete"] == 0 and st["sent"] > 0 and \
    st["received"] == st["sent"] and st["applied"] == st["sent"] and st["window_cuts"] > 0
lower = bool(s) and s["q_p99_bytes"] <= h["q_p99_bytes"] and s["drops"] < h["drops"]
print(int(signalled), int(lower))
print(f"signals {st}" if s else "no SFC run")
if s:
    print(f"queue p99 {h['q_p99_bytes']} -> {s['q_p99_bytes']} B, drops {h['drops']} -> {s['drops']}")
EOF
read -r sig low <"$out/sfc-check.txt"
sed -n '2,$p' "$out/sfc-check.txt" | sed 's/^/# /'
[ "$sig" = 1 ]
ok $? "SFC: every signal the switches sent was accepted, paused its flow and cut its window"
cargo run -q --release -p hpcc-replay -- --ctl <"$out/ctl-sfc.trace" >"$out/replay-sfc.json" 2>>"$out/replay.err"
rc=$?
echo "# replay: $(cat "$out/replay-sfc.json")"
[ $rc -eq 0 ] && grep -q '"mismatches":0' "$out/replay-sfc.json"
ok $? "SFC: the SFC run's controller trace replays through the core with 0 mismatches"
[ "$low" = 1 ]
ok $? "SFC: the incasts leave a lower p99 switch queue and fewer drops than without SFC"

echo "# Totals: pass:$pass fail:$fail skip:0"
[ "$fail" -eq 0 ]
