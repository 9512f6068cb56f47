"""Compares the per-step losses of zb-run JSON reports with the exporting
framework's float64 trajectory (train_expected.json "losses").

usage: trajectory_vs_framework.py TOL EXPECTED.json RUN.json...
Prints `<run> <n> steps within <TOL> of the framework (worst <err>)` per run,
or a FAIL line; exits 1 on any failure.
"""
import json
import os
import sys

tol = float(sys.argv[1])
with open(sys.argv[2]) as f:
    ref = json.load(f)["losses"]
bad = False
for path in sys.argv[3:]:
    with open(path) as f:
        losses = [s["loss"] for s in json.load(f)["steps"]]
    name = os.path.basename(path)
    if len(losses) != len(ref):
        print(f"FAIL {name}: {len(losses)} steps, reference has {len(ref)}")
        bad = True
        continue
    errs = [abs(a - b) / abs(b) for a, b in zip(losses, ref)]
    worst = max(errs)
    print(" ".join(f"{l:.8f}" for l in losses), "| framework",
          " ".join(f"{l:.8f}" for l in ref))
    if worst <= tol:
        print(f"{name} {len(ref)} steps within {tol:.0e} of the framework (worst {worst:.2e})")
    else:
        print(f"FAIL {name}: worst relative error {worst:.2e} > {tol:g}")
        bad = True
sys.exit(1 if bad else 0)
