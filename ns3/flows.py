#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The flow list of one datacenter workload, for dc-sim.

Poisson arrivals at every host, each flow to a uniformly random other host,
its size drawn from a flow-size CDF (`<bytes> <cumulative percent>` per line,
linear between points: the HPCC authors' traffic_gen format, such as
../shared/workloads/WebSearch_distribution.txt), at a load that is a fraction
of each host's link. A host's arrival rate is load * link / mean size. The
list is a pure function of its arguments (one seeded generator), so every
algorithm of a comparison runs the same flows.

    flows.py CDF --hosts 32 --load 0.3 --window-us 50000 [--seed 1] [--incast N:BYTES:LOAD:JITTER_US]

Output: `# ...` header lines, then `src dst size start_ns` sorted by start;
an incast's flows add its number (from 1) as a fifth column.
"""
import argparse
import bisect
import random
import sys


def read_cdf(path):
    pts = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                pts.append((float(parts[0]), float(parts[1]) / 100.0))
    if len(pts) < 2 or pts[0][1] != 0.0 or abs(pts[-1][1] - 1.0) > 1e-9:
        raise ValueError(f"{path}: a CDF runs from 0 to 100 percent")
    if any(b[0] < a[0] or b[1] < a[1] for a, b in zip(pts, pts[1:])):
        raise ValueError(f"{path}: sizes and percents must not decrease")
    return pts


def mean(pts):
    return sum((b[1] - a[1]) * (a[0] + b[0]) / 2 for a, b in zip(pts, pts[1:]))


def sample(pts, u):
    ps = [p for _, p in pts]
    i = max(1, bisect.bisect_left(ps, u))
    (x0, p0), (x1, p1) = pts[i - 1], pts[i]
    x = x0 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)
    return max(1, int(round(x)))


def generate(pts, hosts, load, window_ns, seed, link_bps=100e9, incast=None):
    rng = random.Random(seed)
    m = mean(pts)
    lam = load * link_bps / 8 / m / 1e9  # flows per ns per host
    flows = []
    for src in range(hosts):
        t = rng.expovariate(lam)
        while t < window_ns:
            dst = rng.randrange(hosts - 1)
            dst += dst >= src
            flows.append((src, dst, sample(pts, rng.random()), int(t)))
            t += rng.expovariate(lam)
    if incast:
        # N:1 incasts of `size` bytes from each sender, synchronized within
        # `jitter_ns`, adding `frac` of the hosts' capacity as load.
        n, size, frac, jitter_ns = incast
        per = n * size
        rate = frac * hosts * link_bps / 8 / per / 1e9  # incasts per ns
        t = rng.expovariate(rate)
        group = 0
        while t < window_ns:
            group += 1
            dst = rng.randrange(hosts)
            srcs = rng.sample([h for h in range(hosts) if h != dst], n)
            for s in srcs:
                flows.append((s, dst, size, int(t + rng.random() * jitter_ns), group))
            t += rng.expovariate(rate)
    flows.sort(key=lambda f: (f[3], f[0], f[1]))
    return flows, m


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cdf")
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--load", type=float, default=0.3)
    ap.add_argument("--window-us", type=int, default=50000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--link-gbps", type=float, default=100)
    ap.add_argument("--incast", help="N:BYTES:LOAD_FRACTION:JITTER_US, e.g. 31:250000:0.08:145")
    a = ap.parse_args(argv)
    pts = read_cdf(a.cdf)
    inc = None
    if a.incast:
        n, size, frac, jit = a.incast.split(":")
        inc = (int(n), int(size), float(frac), float(jit) * 1000)
    flows, m = generate(pts, a.hosts, a.load, a.window_us * 1000, a.seed, a.link_gbps * 1e9, inc)
    out = sys.stdout
    out.write(f"# flows.py hosts={a.hosts} load={a.load} window_us={a.window_us} seed={a.seed} "
              f"link_gbps={a.link_gbps} incast={a.incast or '-'} mean_bytes={m:.0f} flows={len(flows)}\n")
    for f in flows:
        # An incast's flows carry its number, a fifth column.
        out.write(" ".join(str(x) for x in f) + "\n")


if __name__ == "__main__":
    main()
