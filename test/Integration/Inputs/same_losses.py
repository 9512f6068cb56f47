"""Prints the losses of zb-run JSON reports and whether they are bit-identical.

usage: same_losses.py RUN.json...   (exit 1 if they differ)
"""
import json
import sys

runs = []
for path in sys.argv[1:]:
    with open(path) as f:
        runs.append([s["loss"] for s in json.load(f)["steps"]])
for path, losses in zip(sys.argv[1:], runs):
    print(path.rsplit("/", 1)[-1], " ".join(f"{l:.9f}" for l in losses))
same = all(r == runs[0] for r in runs)
print("bit-identical:", "yes" if same else "no")
sys.exit(0 if same else 1)
