#!/usr/bin/python3
"""Compares a loss and per-parameter gradient norms with a fixture's
expected.json (PyTorch's numbers, python/export/onnx_fixtures.py).

Usage: check_expected.py GOT.json EXPECTED.json [--loss-rtol 1e-5]
                         [--grad-rtol 1e-4] [--grad-atol 1e-12] [--f32]
                         [--loss-only]
  GOT.json: {"loss": x, "grad_norms": {name: norm}} (zb_interp.py --json,
  or zb-run --report-gradients --report-format json; a "gradients" /
  "grad_norm" layout is accepted too). --f32 compares with PyTorch's float32
  numbers instead of the float64 ones. Every parameter of EXPECTED must be
  present. Prints one line per failure and exits 1, or `OK <n> gradients`.
"""

import argparse
import json
import sys


def read_got(path):
    with open(path) as f:
        got = json.load(f)
    norms = got.get("grad_norms", got.get("grad_norm"))  # zb-run: grad_norm
    if norms is None and "gradients" in got:  # zb-run style
        g = got["gradients"]
        if isinstance(g, dict):
            norms = {k: (v["norm"] if isinstance(v, dict) else v)
                     for k, v in g.items()}
        else:
            norms = {e["name"]: e.get("norm", e.get("grad_norm")) for e in g}
    return float(got["loss"]), norms or {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("got")
    ap.add_argument("expected")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--grad-atol", type=float, default=1e-12,
                    help="absolute tolerance for gradients that are zero in "
                         "exact arithmetic (e.g. an attention key bias: "
                         "softmax is invariant to it), both sides roundoff")
    ap.add_argument("--f32", action="store_true")
    ap.add_argument("--loss-only", action="store_true")
    args = ap.parse_args()
    loss, norms = read_got(args.got)
    with open(args.expected) as f:
        exp = json.load(f)
    want_loss = exp["loss_f32" if args.f32 else "loss"]
    want = exp["grad_norms_f32" if args.f32 else "grad_norms"]
    errors = []
    rel = abs(loss - want_loss) / abs(want_loss)
    if rel > args.loss_rtol:
        errors.append("loss %.10g, expected %.10g (relative error %.2e > %g)"
                      % (loss, want_loss, rel, args.loss_rtol))
    worst = 0.0
    if not args.loss_only:
        for name, w in sorted(want.items()):
            if name not in norms:
                errors.append("no gradient for parameter '%s'" % name)
                continue
            rel = abs(norms[name] - w) / max(abs(w), 1e-30)
            if abs(norms[name] - w) > args.grad_atol:
                worst = max(worst, rel)
            if rel > args.grad_rtol and abs(norms[name] - w) > args.grad_atol:
                errors.append("gradient norm of '%s' is %.10g, expected %.10g "
                              "(relative error %.2e > %g)"
                              % (name, norms[name], w, rel, args.grad_rtol))
        for name in sorted(set(norms) - set(want)):
            errors.append("unexpected gradient for '%s'" % name)
    for e in errors:
        print("FAIL: " + e)
    if errors:
        sys.exit(1)
    print("OK loss %.8g (relative error %.1e), %d gradients (worst relative "
          "error %.1e)" % (loss, abs(loss - want_loss) / abs(want_loss),
                           0 if args.loss_only else len(want), worst))


if __name__ == "__main__":
    main()
