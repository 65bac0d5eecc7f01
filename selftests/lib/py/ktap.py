# SPDX-License-Identifier: GPL-2.0
"""KTAP output for the host tests written in python (benchstat_test.py,
incast_test.py, wire_test.py): each test returns (ok, diagnostics), ok None
for a skip (what it needs is missing; diagnostics say what)."""
import sys


def run(tests):
    print("TAP version 13")
    print(f"1..{len(tests)}")
    fails = skips = 0
    for i, t in enumerate(tests, 1):
        try:
            ok, why = t()
        except Exception as e:  # a crash is a failure, reported as such
            ok, why = False, f"{type(e).__name__}: {e}"
        if ok is None:
            print(f"ok {i} {t.__name__[2:]} # SKIP {why}")
            skips += 1
            continue
        print(f"# {why}")
        print(f"{'ok' if ok else 'not ok'} {i} {t.__name__[2:]}")
        fails += not ok
    print(f"# Totals: pass:{len(tests) - fails - skips} fail:{fails} xfail:0 xpass:0 skip:{skips} error:0")
    sys.exit(1 if fails else 0)
