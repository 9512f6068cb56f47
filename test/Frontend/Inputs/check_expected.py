#!/usr/bin/python3
"""Compares a loss and per-parameter gradient norms with a fixture's
expected.json: the one checker of the frontend tests.

Usage: check_expected.py GOT.json EXPECTED.json [--loss-rtol 1e-5]
                         [--grad-rtol 1e-4] [--grad-atol 1e-12] [--f32]
                         [--loss-only]
  GOT.json: {"loss": x, "grad_norms": {name: norm}} (zb_interp.py --json,
  or zb-run --report-gradients --report-format json; a "gradients" /
  "grad_norm" layout is accepted too).
  EXPECTED.json: the framework's numbers, one layout for every fixture
  (Inputs/onnx/*/ from python/export/onnx_fixtures.py with PyTorch,
  Inputs/stablehlo/*/ from python/export/export_jax_gpt.py with JAX):
    {"loss": float64 loss, "grad_norms": {name: float64 L2 norm},
     "loss_f32": float32 loss, "grad_norms_f32": {name: float32 norm},
     "aliases": {name: [other state_dict names of the same tensor]}
     (optional: tied weights), ... metadata (model, inputs, versions)}
  --f32 compares with the float32 numbers instead of the float64 ones;
  --bf16 with PyTorch's bfloat16 autocast numbers ("bf16": {"loss",
  "grad_norms", "cuda_policy": {"loss", "grad_norms"}}, from
  python/export/hf_fixtures.py): the CUDA policy's (the one zb-autocast
  implements) where the fixture has it, else CPU autocast's.
  A quantity fails if its relative error |got - want| / |want| exceeds the
  rtol; a gradient norm passes anyway if |got - want| <= --grad-atol (for
  norms that are zero in exact arithmetic; --grad-atol 0: relative only).
  NaN never passes. Every parameter of EXPECTED must have a gradient and
  every gradient a parameter of EXPECTED (unless --loss-only).
  Prints one `FAIL: ...` line per failure and exits 1, or
  `OK loss X (relative error E), N gradients (worst relative error E)`.
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
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--loss-only", action="store_true")
    args = ap.parse_args()
    loss, norms = read_got(args.got)
    with open(args.expected) as f:
        exp = json.load(f)
    keys = ("loss_f32", "grad_norms_f32") if args.f32 else ("loss",
                                                             "grad_norms")
    if args.bf16:
        if "bf16" not in exp:
            sys.exit("check_expected.py: %s has no \"bf16\" reference "
                     "(hf_fixtures.py --bf16-reference-only writes it)"
                     % args.expected)
        ref = exp["bf16"].get("cuda_policy", exp["bf16"])
        exp = dict(exp, loss=ref["loss"], grad_norms=ref["grad_norms"])
        keys = ("loss", "grad_norms")
    for key in keys:
        if key not in exp:
            sys.exit("check_expected.py: %s has no \"%s\" (layout: see "
                     "the docstring)" % (args.expected, key))
    want_loss, want = exp[keys[0]], exp[keys[1]]
    errors = []
    rel = abs(loss - want_loss) / abs(want_loss)
    if not rel <= args.loss_rtol:  # NaN fails
        errors.append("loss %.10g, expected %.10g (relative error %.2e > %g)"
                      % (loss, want_loss, rel, args.loss_rtol))
    worst = 0.0
    if not args.loss_only:
        # A tied parameter (one tensor, several state_dict names: GPT-2's
        # lm_head.weight is transformer.wte.weight) may be reported under
        # any of its names (expected.json "aliases": first name -> others).
        for name, others in exp.get("aliases", {}).items():
            if name in want and name not in norms:
                for other in others:
                    if other in norms:
                        norms[name] = norms.pop(other)
                        break
        for name, w in sorted(want.items()):
            if name not in norms:
                errors.append("no gradient for parameter '%s'" % name)
                continue
            rel = abs(norms[name] - w) / max(abs(w), 1e-30)
            beyond_atol = not abs(norms[name] - w) <= args.grad_atol
            if beyond_atol:
                worst = max(worst, rel)
            if beyond_atol and not rel <= args.grad_rtol:  # NaN fails
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
