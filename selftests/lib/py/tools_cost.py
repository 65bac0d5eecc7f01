#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the well-kept tools cost against the hand-written pieces they did
not replace, measured where the tests run (as root; in the VM under TCG):

  - building a response: scapy against hpcc_wire.tcp_packet;
  - reading a pinned array map: a bpftool -j process against the bpf(2)
    syscall (intsw.SyscallMap), and a bpftool dump of a packet log's records (intsw.LOG_LEN);
  - reading a root qdisc's counters: intsw.RootQdisc (rtnetlink by hand)
    against pyroute2 and against a `tc -s` process;
  - starting python, and importing pyroute2 and scapy.

  tools_cost.py       one JSON line, microseconds per operation
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcc_wire as W  # noqa: E402
import intsw  # noqa: E402


def per_op_us(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return round((time.perf_counter() - t) / n * 1e6, 1)


def main():
    from scapy.layers.inet import IP, TCP
    pay = W.payload(W.T_RESPONSE, 1, 2, W.int_stack(1, 0x123, W.hop(12, 1, 2, 3)))
    out = {
        "build_hand_us": per_op_us(lambda: W.tcp_packet("10.0.1.1", "10.0.2.1", 1, 2, 15, pay), 2000),
        "build_scapy_us": per_op_us(lambda: bytes(IP(src="10.0.1.1", dst="10.0.2.1", tos=60, id=0, flags="DF", ttl=64) /
                                                  TCP(sport=1, dport=2, flags="A", window=0) / pay), 100),
    }
    pin = f"/sys/fs/bpf/hpcc-tools-cost-{os.getpid()}"
    bpftool_lookup = ["bpftool", "-j", "map", "lookup", "pinned", pin, "key", "0", "0", "0", "0"]
    subprocess.run(["bpftool", "map", "create", pin, "type", "array", "key", "4", "value", "64",
                    "entries", "1", "name", "tools_cost"], check=True)
    try:
        c = intsw.SyscallMap(pin, 64)
        out["map_bpftool_us"] = per_op_us(lambda: json.loads(subprocess.run(bpftool_lookup, capture_output=True).stdout), 20)
        out["map_syscall_us"] = per_op_us(c.lookup, 2000)
    finally:
        os.unlink(pin)
    # The emulator's packet log: LOG_LEN records of 16 bytes, in one dump.
    subprocess.run(["bpftool", "map", "create", pin, "type", "array", "key", "4", "value", str(intsw.LOG.size),
                    "entries", str(intsw.LOG_LEN), "name", "tools_cost"], check=True)
    try:
        out["log_dump_bpftool_us"] = per_op_us(
            lambda: json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "pinned", pin],
                                              capture_output=True).stdout), 1)
    finally:
        os.unlink(pin)
    ns = f"hpcc-tools-cost-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "tc0", "type", "dummy"], check=True)
        subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", "tc0", "root", "fq"], check=True)
        q = intsw.RootQdisc(ns, "tc0")
        out["qdisc_rtnetlink_us"] = per_op_us(q.read, 200)
        from pyroute2 import IPRoute
        with intsw.in_netns(ns):
            ipr = IPRoute()
            idx = ipr.link_lookup(ifname="tc0")[0]
        out["qdisc_pyroute2_us"] = per_op_us(lambda: [m.get_attr("TCA_STATS2") for m in ipr.get_qdiscs(index=idx)], 200)
        out["qdisc_tc_us"] = per_op_us(lambda: subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", "tc0"],
                                                              capture_output=True), 20)
    finally:
        subprocess.run(["ip", "netns", "del", ns])
    # Start-up: a fresh interpreter, and one that imports each tool.
    for name, code in (("python_start_us", "pass"), ("import_pyroute2_us", "import pyroute2.netns, pyroute2"),
                       ("import_scapy_us", "from scapy.layers.inet import IP, TCP"), ("import_numpy_us", "import numpy")):
        out[name] = per_op_us(lambda: subprocess.run([sys.executable, "-c", code], check=True), 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
