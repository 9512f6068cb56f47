"""same_losses.py REPORT.json... : prints whether every zb-run JSON report
has the same per-step losses (bit for bit) as the first."""
import json
import sys

runs = [[s["loss"] for s in json.load(open(p))["steps"]] for p in sys.argv[1:]]
for path, losses in zip(sys.argv[1:], runs):
    same = losses == runs[0]
    print(path.rsplit("/", 1)[-1], "same losses" if same else "DIFFERENT losses",
          " ".join(f"{l:.7f}" for l in losses))
