"""Compares the per-step losses of zb-run JSON reports (--report-format json).

usage: compare_losses.py [--rel-tol R] [--first-step-tol F]
                         KERNEL.json DECOMPOSED.json FLOAT32.json

Prints "kernel vs decomposed: N steps, worst relative X ok" when every
step's loss of the first run is within R (relative) of the second's, and
"step 1 vs float32: A vs B ok" when the first step's loss (the forward pass
alone, before any update) of the first run is within F (relative) of the
third's. Exits 1 (after printing FAILED) when either check fails or the
runs have different numbers of steps.
"""
import argparse
import json
import math
import sys


def losses(path):
    return [s["loss"] for s in json.load(open(path))["steps"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rel-tol", type=float, default=5e-4)
    ap.add_argument("--first-step-tol", type=float, default=2e-2)
    ap.add_argument("kernel")
    ap.add_argument("decomposed")
    ap.add_argument("float32")
    a = ap.parse_args()
    k, d, f = losses(a.kernel), losses(a.decomposed), losses(a.float32)
    ok = True
    if not k or len(k) != len(d) or len(k) != len(f):
        print(f"step counts differ: {len(k)}, {len(d)}, {len(f)} FAILED")
        sys.exit(1)
    worst = max(abs(x - y) / abs(y) for x, y in zip(k, d))
    good = all(math.isfinite(x) for x in k) and worst <= a.rel_tol
    ok &= good
    print(f"kernel vs decomposed: {len(k)} steps, worst relative {worst:.2e} "
          f"(bound {a.rel_tol:g}; {k} vs {d}) {'ok' if good else 'FAILED'}")
    first = abs(k[0] - f[0]) / abs(f[0])
    good = first <= a.first_step_tol
    ok &= good
    print(f"step 1 vs float32: {k[0]:.6f} vs {f[0]:.6f}, relative "
          f"{first:.2e} (bound {a.first_step_tol:g}) {'ok' if good else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
