"""Prints the losses of zb-run JSON reports, whether they are bit-identical
and whether every loss is within TOL relative of the first run's.

usage: same_or_close.py TOL RUN.json...   (exit 1 if not within TOL; TOL 0
       asks for bit-identical losses; a NaN loss never passes)
"""
import json
import math
import sys

tol = float(sys.argv[1])
runs = []
for path in sys.argv[2:]:
    with open(path) as f:
        runs.append([s["loss"] for s in json.load(f)["steps"]])
for path, losses in zip(sys.argv[2:], runs):
    print(path.rsplit("/", 1)[-1], " ".join(f"{l:.9f}" for l in losses))
print("bit-identical:", "yes" if all(r == runs[0] for r in runs) else "no")
worst = max((abs(a - b) / max(abs(b), 1e-30)
             if not (math.isnan(a) or math.isnan(b)) else math.inf)
            for r in runs for a, b in zip(r, runs[0]))
ok = worst <= tol and all(len(r) == len(runs[0]) for r in runs)
print(f"max relative difference {worst:.3g}")
print(f"within {tol:g} relative:", "yes" if ok else "no")
sys.exit(0 if ok else 1)
