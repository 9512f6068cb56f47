"""Checks zb-run results of the example MLP against each other and against the
NumPy float64 reference (examples/mlp/reference.py).

usage: check_mlp_runs.py --steps S --microbatches M --lr LR RUN.json... \
           [--grads GRADS.json...]

- Every RUN.json (zb-run --report-format json) must have bit-identical losses
  (same float32 values) for every step: schedules and rank counts must not
  change the arithmetic.
- The losses must match the float64 reference within 1e-4 relative.
- Every GRADS.json (zb-run --report-gradients --report-format json) must have
  bit-identical gradient norms, within 1e-4 relative of the reference's.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples", "mlp")
sys.path.insert(0, os.path.abspath(EXAMPLES))
import reference  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--microbatches", type=int, required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--grads", nargs="*", default=[])
    args = ap.parse_args()

    model = os.path.join(EXAMPLES, "mlp.onnx")
    data = os.path.join(EXAMPLES, "data")
    params = reference.load_params(model)
    x = reference.load_tensor(os.path.join(data, "input_0.pb"))
    t = reference.load_tensor(os.path.join(data, "input_1.pb"))

    # Reference gradient norms of the first step (mean over microbatches).
    rows = np.arange(reference.MICROBATCH * args.microbatches) % x.shape[0]
    acc = {k: np.zeros_like(v) for k, v in params.items()}
    for j in range(args.microbatches):
        mb = rows[j * reference.MICROBATCH:(j + 1) * reference.MICROBATCH]
        _, g = reference.loss_and_grads(params, x[mb], t[mb])
        for k in g:
            acc[k] += g[k]
    ref_norms = {k: float(np.linalg.norm(v / args.microbatches))
                 for k, v in acc.items()}
    ref_losses = reference.train(dict(params), x, t, args.steps,
                                 args.microbatches, args.lr)

    failures = 0
    losses = []
    for path in args.runs:
        with open(path) as f:
            doc = json.load(f)
        losses.append([s["loss"] for s in doc["steps"]])
        if len(losses[-1]) != args.steps:
            print(f"FAIL {path}: {len(losses[-1])} steps, expected {args.steps}")
            failures += 1
    for path, l in zip(args.runs[1:], losses[1:]):
        if l != losses[0]:
            print(f"FAIL {path}: losses differ from {args.runs[0]}: {l} vs {losses[0]}")
            failures += 1
    for k, (ours, ref) in enumerate(zip(losses[0], ref_losses)):
        rel = abs(ours - ref) / abs(ref)
        status = "ok" if rel <= 1e-4 else "FAIL"
        failures += status == "FAIL"
        print(f"step {k + 1}: zb {ours:.9f} reference {ref:.9f} rel {rel:.2e} {status}")

    norms = []
    for path in args.grads:
        with open(path) as f:
            norms.append(json.load(f)["grad_norm"])
    for path, n in zip(args.grads[1:], norms[1:]):
        if n != norms[0]:
            print(f"FAIL {path}: gradient norms differ from {args.grads[0]}")
            failures += 1
    if norms:
        for name, ref in ref_norms.items():
            ours = norms[0][name]
            rel = abs(ours - ref) / abs(ref)
            status = "ok" if rel <= 1e-4 else "FAIL"
            failures += status == "FAIL"
            print(f"grad_norm {name}: zb {ours:.9f} reference {ref:.9f} rel {rel:.2e} {status}")

    print(f"{len(args.runs)} runs bit-identical: {'yes' if failures == 0 else 'no'}")
    print("ALL OK" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
