# SPDX-License-Identifier: GPL-2.0
"""KTAP output for the host tests written in python (benchstat_test.py,
incast_test.py): each test returns (ok, diagnostics)."""
import sys


def run(tests):
    print("TAP version 13")
    print(f"1..{len(tests)}")
    fails = 0
    for i, t in enumerate(tests, 1):
        try:
            ok, why = t()
        except Exception as e:  # a crash is a failure, reported as such
            ok, why = False, f"{type(e).__name__}: {e}"
        print(f"# {why}")
        print(f"{'ok' if ok else 'not ok'} {i} {t.__name__[2:]}")
        fails += not ok
    print(f"# Totals: pass:{len(tests) - fails} fail:{fails} xfail:0 xpass:0 skip:0 error:0")
    sys.exit(1 if fails else 0)
