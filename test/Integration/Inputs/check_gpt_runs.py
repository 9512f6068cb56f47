"""Checks zb-run GPT runs: bit-identical losses and final parameters across
all runs, and the losses and final parameters against the float64 NumPy
reference (gpt_reference.py; SGD or AdamW as plan.json says) within --tol
(absolute).

usage: check_gpt_runs.py --layers L --heads H --steps S (--text FILE [--seed K]
                         | --data DIR) [--tol 1e-4] RUN_DIR...
Each RUN_DIR is a zb-compile output directory next to RUN_DIR.json
(zb-run --report-format json) and RUN_DIR.params (zb-run --save-params).
The reference starts from the first run's params.bin.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_reference as ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--text")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--grad-clip", type=float, default=0.0,
                    help="the reference clips as zb-run --grad-clip does")
    ap.add_argument("--skip-steps", default="",
                    help="1-based steps the reference does not apply "
                         "(zb-run skipped them: non-finite gradients)")
    ap.add_argument("--params-rel-tol", type=float, default=None,
                    help="instead of bit-identical final parameters across "
                         "runs: max |a - b| / max(|a|, 1) across runs")
    ap.add_argument("--runs-tol", type=float, default=None,
                    help="with --params-rel-tol: the losses' bound across "
                         "runs (absolute; default --tol)")
    ap.add_argument("--no-decay", default="1d,embeddings",
                    help="zb-run --no-decay of the runs (AdamW's groups)")
    ap.add_argument("--lr-schedule", default=None,
                    help="zb-run --lr-schedule with --warmup-steps, "
                         "--decay-steps, --min-lr")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--decay-steps", type=int, default=0)
    ap.add_argument("--min-lr", type=float, default=0.0)
    ap.add_argument("--weight-decay", type=float, default=None)
    ap.add_argument("--betas", default=None)
    ap.add_argument("--val-split", type=float, default=0.0,
                    help="zb-run --val-split: train on the first 1 - F of "
                         "--text; with --eval-every N and --eval-steps K "
                         "check the runs' \"evals\"")
    ap.add_argument("--val-data", default=None,
                    help="zb-run --val-data DIR (input_<i>.pb) for the "
                         "evaluations, instead of --val-split")
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--eval-steps", type=int, default=10)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()

    losses, params = [], []
    for run in a.runs:
        with open(run + ".json") as f:
            losses.append([s["loss"] for s in json.load(f)["steps"]])
        with open(run + ".params", "rb") as f:
            params.append(f.read())
        print(os.path.basename(run), " ".join(f"{l:.9f}" for l in losses[-1]))
    same_loss = all(l == losses[0] for l in losses)
    if a.params_rel_tol is None:
        print(f"{len(a.runs)} runs losses bit-identical:",
              "yes" if same_loss else "no")
    else:  # runs that differ by rounding (e.g. post-validation's rollback)
        tol = a.tol if a.runs_tol is None else a.runs_tol
        worst = max(abs(x - y) for l in losses for x, y in zip(l, losses[0]))
        same_loss = worst <= tol
        print(f"{len(a.runs)} runs losses within {tol:g}:",
              "yes" if same_loss else "no", f"(max {worst:.1e})")
    if a.params_rel_tol is None:
        same_params = all(p == params[0] for p in params)
        print(f"{len(a.runs)} runs final parameters bit-identical:",
              "yes" if same_params else "no")
    else:
        first = np.frombuffer(params[0], dtype="<f4").astype(np.float64)
        worst = max(float(np.max(np.abs(np.frombuffer(p, dtype="<f4") -
                                        first) /
                                 np.maximum(np.abs(first), 1.0)))
                    for p in params)
        same_params = worst <= a.params_rel_tol
        print(f"{len(a.runs)} runs final parameters within "
              f"{a.params_rel_tol:g} relative: "
              f"{'yes' if same_params else 'no'} (max {worst:.1e})")
    skip = {int(s) for s in a.skip_steps.split(",") if s}

    # Float64 reference from the first run's initial parameters.
    plan_dir = a.runs[0]
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    p = ref.load_params(plan_dir, plan)
    part = ("train", a.val_split) if a.val_split else None
    batches = ref.batch_source(plan, a.text, a.data, a.seed, part)
    opt = dict(plan["optimizer"])
    if a.weight_decay is not None:
        opt["weight_decay"] = a.weight_decay
    if a.betas:
        opt["beta1"], opt["beta2"] = (float(b) for b in a.betas.split(","))
    optimizer = ref.Optimizer(opt, p, infos=plan["params"],
                              no_decay=a.no_decay)
    if a.lr_schedule:
        optimizer.schedule = (a.lr_schedule, a.warmup_steps, a.decay_steps,
                              a.min_lr)
    evals = {}
    if a.eval_every:
        with open(a.runs[0] + ".json") as f:
            evals = {e["step"]: e["val_loss"]
                     for e in json.load(f).get("evals", [])}
        val_batches = (ref.batch_source(plan, None, a.val_data) if a.val_data
                       else ref.batch_source(plan, a.text, None, a.seed,
                                             ("val", a.val_split)))
    ok = same_loss and same_params
    for step in range(a.steps):
        total, grads = ref.step_loss_and_grads(p, a.layers, a.heads, plan,
                                               *batches(step))
        if step + 1 not in skip:
            optimizer.step(p, grads, a.grad_clip, train_step=step + 1)
        diff = abs(losses[0][step] - total)
        good = diff <= a.tol
        ok = ok and good
        print(f"step {step + 1}: zb {losses[0][step]:.7f} reference "
              f"{total:.7f} diff {diff:.1e} {'ok' if good else 'MISMATCH'}")
        if a.eval_every and ((step + 1) % a.eval_every == 0 or
                             step + 1 == a.steps):
            val = sum(ref.step_loss_and_grads(p, a.layers, a.heads, plan,
                                              *val_batches(k))[0]
                      for k in range(a.eval_steps)) / a.eval_steps
            got = evals.get(step + 1)
            good = got is not None and abs(got - val) <= a.tol
            ok = ok and good
            print(f"eval after step {step + 1}: zb {got} reference "
                  f"{val:.7f} {'ok' if good else 'MISMATCH'}")
    # Final parameters against the reference (float32 vs float64).
    final = np.frombuffer(params[0], dtype="<f4")
    worst = 0.0
    for info, x in zip(plan["params"], p):
        n = x.size
        got = final[info["offset_bytes"] // 4:info["offset_bytes"] // 4 + n]
        worst = max(worst, float(np.abs(got - x.reshape(-1)).max()))
    good = worst <= a.tol
    ok = ok and good
    print(f"final parameters: max |zb - reference| {worst:.1e} "
          f"{'ok' if good else 'MISMATCH'}")
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
