#!/usr/bin/env python3
"""PyTorch's learning rates for zb's schedules (issue 41), the reference of
zb-run's --lr-schedule unit test.

Needs torch (any 2.x; CPU), e.g.

  /work/hfenv/bin/python python/export/lr_schedule_fixtures.py \
      [unittests/Runtime/Inputs/lr_schedules_torch.json]

zb's definition: base lr L, warmup W >= 0 steps, decay end D (the step at
which the lr reaches min_lr m), training step s = 1, 2, ... (the lr the
optimizer uses at step s):

  s <= W:  lr = L * s / W
  s > W:   t = s - W - 1, T = D - W - 1, f = min(t, T) / T (1 if T = 0)
    constant: lr = L
    cosine:   lr = m + (L - m) * (1 + cos(pi * f)) / 2
    linear:   lr = L + (m - L) * f

so the lr is L at step W + 1 and m from step D on (the fixtures have
D >= W + 2: torch's schedulers divide by T = 0). In torch
(schedulers()): warmup LinearLR(start_factor=1/W, end_factor=1,
total_iters=W-1) (W = 1: ConstantLR(factor=1), the lr L at step 1; W = 0: no
warmup), then, from step W + 1 (SequentialLR milestone W), ConstantLR(
factor=1) | CosineAnnealingLR(T_max=T, eta_min=m) | LinearLR(start_factor=1,
end_factor=m/L, total_iters=T). LinearLR stays at m after T; the cosine one
would rise again after T_max (its recursive form continues the period), so a
third phase from step D + 1 (milestone D), LambdaLR(m/L), holds it at m as
zb does (and nanoGPT's get_lr: min_lr after lr_decay_iters). The lrs are a
real torch.optim.AdamW's over one dummy parameter: param_groups[0]["lr"]
before each optimizer.step(), then scheduler.step().

Before writing, checks that the closed form above (float64) agrees with
torch within 1e-12 relative (absolute where torch's lr is 0) and prints the
largest difference. Writes [{"schedule", "lr", "warmup_steps",
"decay_steps", "min_lr", "steps", "lrs": [lr at s = 1..steps]}] under
"schedules", with "torch_version", "generated_by", "max_rel_diff" (torch vs
the closed form) and "definition".
"""
import json
import math
import os
import sys
import warnings

import torch

# (schedule, L, W, D, m, N): cosine, linear, constant; W in {0, 1, 5, 10};
# D = 7..100; m = 0 and L/10; L = 6e-4 and 1e-2; N > D reaches the floor.
SETTINGS = [
    ("cosine", 6e-4, 10, 100, 6e-5, 100),   # nanoGPT's shape, shorter
    ("cosine", 1e-2, 0, 20, 0.0, 20),
    ("cosine", 1e-2, 1, 30, 1e-3, 40),      # past D: held at m
    ("cosine", 6e-4, 5, 50, 0.0, 60),       # past D: held at 0
    ("cosine", 1e-2, 5, 7, 1e-3, 10),       # T = 1
    ("linear", 6e-4, 10, 60, 6e-5, 70),     # past D
    ("linear", 1e-2, 0, 20, 0.0, 25),       # past D, m = 0
    ("linear", 1e-2, 5, 40, 1e-3, 40),
    ("linear", 6e-4, 1, 25, 6e-5, 30),
    ("constant", 6e-4, 10, 30, 0.0, 30),
    ("constant", 1e-2, 0, 10, 0.0, 10),
    ("constant", 1e-2, 1, 8, 0.0, 8),
]
SCHEDULES = ("constant", "cosine", "linear")


def zb_lr(s, schedule, lr, warmup, decay, min_lr):
    """zb's closed form (the module docstring), float64."""
    if s <= warmup:
        return lr * s / warmup
    if schedule == "constant":
        return lr
    t, T = s - warmup - 1, decay - warmup - 1
    f = min(t, T) / T if T > 0 else 1.0  # D = W + 1: m right after warmup
    if schedule == "cosine":
        return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * f)) / 2
    return lr + (min_lr - lr) * f


def schedulers(optimizer, schedule, lr, warmup, decay, min_lr):
    """The torch scheduler of zb's schedule on ``optimizer`` (every param
    group's initial lr is ``lr``). Step it once after each optimizer.step()."""
    from torch.optim import lr_scheduler as S
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r}: not one of {SCHEDULES}")
    if warmup < 0 or (schedule != "constant" and decay < warmup + 2):
        raise ValueError(f"warmup {warmup}, decay end {decay}: need "
                         "warmup >= 0 and decay >= warmup + 2")
    phases, milestones = [], []
    if warmup >= 2:
        phases.append(S.LinearLR(optimizer, start_factor=1 / warmup,
                                 end_factor=1.0, total_iters=warmup - 1))
    elif warmup == 1:
        phases.append(S.ConstantLR(optimizer, factor=1.0, total_iters=1))
    if warmup:
        milestones.append(warmup)
    T = decay - warmup - 1
    if schedule == "constant":
        phases.append(S.ConstantLR(optimizer, factor=1.0, total_iters=1))
    elif schedule == "cosine":
        phases.append(S.CosineAnnealingLR(optimizer, T_max=T, eta_min=min_lr))
        phases.append(S.LambdaLR(optimizer, lambda _: min_lr / lr))
        milestones.append(decay)
    else:
        phases.append(S.LinearLR(optimizer, start_factor=1.0,
                                 end_factor=min_lr / lr, total_iters=T))
    if len(phases) == 1:
        return phases[0]
    return S.SequentialLR(optimizer, phases, milestones=milestones)


def torch_lrs(schedule, lr, warmup, decay, min_lr, steps):
    p = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    opt = torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    with warnings.catch_warnings():
        # SequentialLR steps the next phase with an epoch (deprecated).
        warnings.simplefilter("ignore", UserWarning)
        sched = schedulers(opt, schedule, lr, warmup, decay, min_lr)
        lrs = []
        for _ in range(steps):
            lrs.append(opt.param_groups[0]["lr"])
            opt.zero_grad()
            (p * p).sum().add(p.sum()).backward()
            opt.step()
            sched.step()
    return lrs


def rel_diff(a, b):
    return abs(a - b) / abs(b) if b else abs(a - b)


def main():
    out = (sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "unittests",
        "Runtime", "Inputs", "lr_schedules_torch.json"))
    rows, worst = [], 0.0
    for schedule, lr, warmup, decay, min_lr, steps in SETTINGS:
        lrs = torch_lrs(schedule, lr, warmup, decay, min_lr, steps)
        diff = max(rel_diff(zb_lr(s, schedule, lr, warmup, decay, min_lr),
                            lrs[s - 1]) for s in range(1, steps + 1))
        print(f"{schedule:8} L={lr:g} W={warmup} D={decay} m={min_lr:g} "
              f"N={steps}: max rel diff vs zb's closed form {diff:.3g}")
        if diff > 1e-12:
            raise SystemExit(f"torch and zb's closed form differ by {diff:g}")
        worst = max(worst, diff)
        rows.append({"schedule": schedule, "lr": lr, "warmup_steps": warmup,
                     "decay_steps": decay, "min_lr": min_lr, "steps": steps,
                     "lrs": lrs})
    print(f"max rel diff over all: {worst:.3g}")
    doc = {"torch_version": torch.__version__,
           "generated_by": "python/export/lr_schedule_fixtures.py",
           "definition": "lr at training step s = 1..steps: s <= W: L*s/W; "
                         "else t = s-W-1, T = D-W-1: constant L, cosine "
                         "m+(L-m)(1+cos(pi*min(t,T)/T))/2, linear "
                         "L+(m-L)*min(t,T)/T (W warmup_steps, D decay_steps, "
                         "m min_lr); held at m after D",
           "max_rel_diff": worst, "schedules": rows}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
