#!/usr/bin/python3
"""PyTorch's training trajectory of the GPT-2 importer fixture, the reference
for zb's pipelined training of the same exported model
(test/Integration/onnx-gpt2-trajectory.test).

    python3 python/export/onnx_train_trajectory.py \
        test/Frontend/Inputs/onnx/gpt2 [--steps 3] [--lr 0.1] [--microbatches 2]
        [--optimizer adamw --betas 0.9,0.95 --eps 1e-8 --weight-decay 0.1
         --no-decay 1d,embeddings] [--lr-schedule cosine --warmup-steps 2
         --decay-steps 8 --min-lr 0.001] [--out NAME.json]

(any torch; the committed references: train_expected.json with Debian's
torch 1.13, train_expected_adamw.json with PyPI's torch 2.15.)

Rebuilds the model exactly as python/export/onnx_fixtures.py exported it
(torch.manual_seed(0), same perturbation), reads the fixture's training set
(train/input_0.pb tokens, train/input_1.pb targets, [256, 16] int64) and runs
`steps` steps in float64 and in float32. Step s (0-based) uses rows
[s*B, (s+1)*B) with B = microbatches * 4, the rows zb-run feeds to step s;
the loss is the mean cross-entropy over all B x 16 positions, which equals
zb's mean over `microbatches` equal microbatches of their mean losses.

Optimizers: sgd (default): plain SGD, p -= lr * grad (no momentum or weight
decay). adamw: torch.optim.AdamW (betas, eps; default 0.9,0.999 and 1e-8,
zb's) with two param groups: weight decay F (--weight-decay, default 0.01)
and weight decay 0 for the parameters --no-decay names. SPEC is a comma
list: `1d` = every parameter with fewer than 2 dimensions (biases, norm
weights), `embeddings` = the names matching one of the globs *emb*, *wte*,
*wpe*, any other item = a glob on the parameter name (fnmatchcase: shell
wildcards, case-sensitive); '' or `none` = decay everything. Default
1d,embeddings, zb-run's --no-decay default.
Learning-rate schedules (--lr-schedule, default constant): zb's warmup +
constant | cosine | linear decay to --min-lr at step --decay-steps (default
`steps`) as python/export/lr_schedule_fixtures.py defines them and builds
them from torch's schedulers (scheduler.step() after each optimizer.step()).

Writes DIR/NAME (default train_expected.json): {"lr", "microbatches",
"optimizer", "losses" (float64), "losses_f32"}; and unless the run is plain
SGD at a constant lr, also "steps", "lr_schedule", "warmup_steps",
"decay_steps", "min_lr", "lrs" (the lr of each step, checked against
lr_schedule_fixtures.zb_lr), "torch_version", and for adamw "betas", "eps",
"weight_decay", "no_decay" (SPEC), "decay_params" and "no_decay_params" (the
groups' parameter names, torch's order).
"""
import argparse
import copy
import fnmatch
import json
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lr_schedule_fixtures as lrs_fx  # noqa: E402
import onnx_fixtures as fx  # noqa: E402

EMBEDDING_GLOBS = ("*emb*", "*wte*", "*wpe*")


def no_decay_names(model, spec):
    """The names of the parameters --no-decay SPEC exempts (module
    docstring)."""
    items = [i.strip() for i in spec.split(",")
             if i.strip() and i.strip() != "none"]
    globs = [g for i in items if i != "1d"
             for g in (EMBEDDING_GLOBS if i == "embeddings" else (i,))]
    names = [n for n, p in model.named_parameters()
             if ("1d" in items and p.dim() < 2) or
             any(fnmatch.fnmatchcase(n, g) for g in globs)]
    for g in globs:
        if not any(fnmatch.fnmatchcase(n, g) for n, _ in model.named_parameters()):
            print("note: --no-decay %s matches no parameter" % g, file=sys.stderr)
    return names


def optimizer(model, a, no_decay):
    """(torch optimizer or None for plain SGD, its scheduler or None)."""
    if a.optimizer == "sgd":
        return None, None
    params = dict(model.named_parameters())
    groups = [{"params": [p for n, p in params.items() if n not in no_decay],
               "weight_decay": a.weight_decay},
              {"params": [params[n] for n in no_decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=a.lr,
                            betas=a.betas, eps=a.eps)
    with warnings.catch_warnings():  # SequentialLR's step(epoch)
        warnings.simplefilter("ignore", UserWarning)
        return opt, lrs_fx.schedulers(opt, a.lr_schedule, a.lr,
                                      a.warmup_steps, a.decay_steps, a.min_lr)


def trajectory(model, tokens, targets, a, rows, dtype, no_decay=(),
               sgd_lrs=None):
    """(losses, lrs) of `a.steps` steps; plain SGD at the lrs `sgd_lrs`."""
    model = model.to(dtype)
    opt, sched = optimizer(model, a, no_decay)
    losses, lrs = [], []
    for s in range(a.steps):
        t = torch.from_numpy(tokens[s * rows:(s + 1) * rows])
        y = torch.from_numpy(targets[s * rows:(s + 1) * rows])
        model.zero_grad()
        loss = model(t, y)
        loss.backward()
        losses.append(float(loss))
        if opt is None:
            lrs.append(sgd_lrs[s])
            with torch.no_grad():
                for p in model.parameters():
                    p -= sgd_lrs[s] * p.grad
        else:
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                sched.step()
    return losses, lrs


def pair(text):
    try:
        b1, b2 = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected B1,B2, got %r" % text)
    return b1, b2


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--microbatches", type=int, default=2)
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    ap.add_argument("--betas", type=pair, default=(0.9, 0.999))
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=None,
                    help="adamw only (default 0.01)")
    ap.add_argument("--no-decay", default=None, metavar="SPEC",
                    help="adamw only: 1d, embeddings, globs (comma list; "
                    "default 1d,embeddings)")
    ap.add_argument("--lr-schedule", choices=lrs_fx.SCHEDULES,
                    default="constant")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--decay-steps", type=int, default=None,
                    help="the step at which the lr reaches --min-lr "
                    "(default --steps)")
    ap.add_argument("--min-lr", type=float, default=0.0)
    ap.add_argument("--out", default="train_expected.json",
                    help="the file written in DIR")
    a = ap.parse_args()
    if a.optimizer == "sgd" and (a.weight_decay is not None or
                                 a.no_decay is not None):
        ap.error("--weight-decay and --no-decay are adamw's (zb's SGD has no "
                 "weight decay)")
    if a.weight_decay is None:
        a.weight_decay = 0.01
    if a.no_decay is None:
        a.no_decay = "1d,embeddings"
    if a.decay_steps is None:
        a.decay_steps = a.steps
    tokens = onnx.numpy_helper.to_array(
        onnx.load_tensor(os.path.join(a.dir, "train", "input_0.pb")))
    targets = onnx.numpy_helper.to_array(
        onnx.load_tensor(os.path.join(a.dir, "train", "input_1.pb")))
    model = fx.build("gpt2")
    # The exported initializers must be this model's parameters.
    inits = {t.name: onnx.numpy_helper.to_array(t)
             for t in onnx.load(os.path.join(a.dir, "model.onnx")).graph.initializer}
    for name, p in model.named_parameters():
        if not np.array_equal(inits[name], p.detach().numpy()):
            raise SystemExit("model.onnx parameter %s differs from the rebuilt model" % name)
    rows = a.microbatches * fx.BATCH
    no_decay = no_decay_names(model, a.no_decay) if a.optimizer == "adamw" else []
    sgd_lrs = None
    if a.optimizer == "sgd":  # zb's schedule, the lr of plain SGD
        sgd_lrs = lrs_fx.torch_lrs(a.lr_schedule, a.lr, a.warmup_steps,
                                   a.decay_steps, a.min_lr, a.steps)
    l64, lrs = trajectory(copy.deepcopy(model), tokens, targets, a, rows,
                          torch.float64, no_decay, sgd_lrs)
    l32, _ = trajectory(copy.deepcopy(model), tokens, targets, a, rows,
                        torch.float32, no_decay, sgd_lrs)
    for s, lr in enumerate(lrs, 1):  # torch's schedule is zb's
        want = lrs_fx.zb_lr(s, a.lr_schedule, a.lr, a.warmup_steps,
                            a.decay_steps, a.min_lr)
        if lrs_fx.rel_diff(want, lr) > 1e-12:
            raise SystemExit("step %d: torch's lr %r, zb's %r" % (s, lr, want))
    out = {"lr": a.lr, "microbatches": a.microbatches,
           "optimizer": a.optimizer, "losses": l64, "losses_f32": l32}
    if a.optimizer != "sgd" or a.lr_schedule != "constant" or a.warmup_steps:
        out.update({"steps": a.steps, "lr_schedule": a.lr_schedule,
                    "warmup_steps": a.warmup_steps,
                    "decay_steps": a.decay_steps, "min_lr": a.min_lr,
                    "lrs": lrs, "torch_version": torch.__version__})
    if a.optimizer == "adamw":
        out.update({"betas": list(a.betas), "eps": a.eps,
                    "weight_decay": a.weight_decay, "no_decay": a.no_decay,
                    "decay_params": [n for n, _ in model.named_parameters()
                                     if n not in no_decay],
                    "no_decay_params": no_decay})
    with open(os.path.join(a.dir, a.out), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("losses (float64):", " ".join("%.8f" % l for l in l64))


if __name__ == "__main__":
    main()
