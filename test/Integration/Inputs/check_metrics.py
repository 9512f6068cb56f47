"""check_metrics.py METRICS.jsonl REPORT.json --lr L [--lr-schedule K
--warmup-steps W --decay-steps D --min-lr M]: checks zb-run's --metrics file
against its JSON report (losses, gradient norms, validation losses) and its
lr column against the schedule (gpt_reference.Optimizer.lr_at)."""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_reference as ref  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("metrics")
ap.add_argument("report")
ap.add_argument("--lr", type=float, required=True)
ap.add_argument("--lr-schedule", default="constant")
ap.add_argument("--warmup-steps", type=int, default=0)
ap.add_argument("--decay-steps", type=int, default=0)
ap.add_argument("--min-lr", type=float, default=0.0)
a = ap.parse_args()

lines = [json.loads(l) for l in open(a.metrics)]
steps = [l for l in lines if "loss" in l]
evals = [l for l in lines if "val_loss" in l]
print(f"{len(steps)} step lines, {len(evals)} eval lines")
opt = ref.Optimizer({"name": "adamw", "lr": a.lr}, [], a.lr)
opt.schedule = (a.lr_schedule, a.warmup_steps, a.decay_steps, a.min_lr)
lr_ok = all(math.isclose(l["lr"], opt.lr_at(l["step"]), rel_tol=1e-12)
            for l in steps)
print("lr of every step as the schedule:", "yes" if lr_ok else "no")
report = json.load(open(a.report))
same = ([(l["step"], l["loss"], l["grad_norm"]) for l in steps] ==
        [(s["step"], s["loss"], s["grad_norm"]) for s in report["steps"]] and
        [(l["step"], l["val_loss"]) for l in evals] ==
        [(e["step"], e["val_loss"]) for e in report.get("evals", [])])
print("losses, gradient norms and validation losses as the report:",
      "yes" if same else "no")
sys.exit(0 if lr_ok and same else 1)
