#!/usr/bin/python3
"""Checks framework-exported fixtures (model.onnx, input_<i>.pb,
expected.json: python/export/hf_fixtures.py's layout; or a JAX export,
model.stablehlo.mlir with input_<i>.pb: python/export/export_jax_gpt.py's)
against zb, one line per fixture, with the one checker of the frontend tests
(check_expected.py).

Usage:
  check_fixtures.py ir  --bin DIR [--tmp DIR] FIXTURE...
      zb-translate --import-onnx, zb-opt --zb-autodiff, then the IR
      evaluated in float64 by zb_interp.py (NumPy): loss and every gradient
      norm against the framework's float64 numbers (1e-5 / 1e-4 relative).
  check_fixtures.py run --bin DIR [--tmp DIR] [--stages S] [--target T]
                    FIXTURE...
      zb-compile --stages S --microbatches 1 [--target T: cuda-emu runs the
      GPU kernels emulated on the CPU], zb-run --ranks S
      --report-gradients (float32, zb's lowering and runtime): the same
      comparison.
  --fuse-attention (ir mode): zb-opt --zb-fuse-attention before autodiff,
      zb.attention and zb.attention_grad evaluated by zb_interp.py (NumPy,
      from ZBOps.td's formulas, the probabilities recomputed from q and k
      rather than from the saved lse); the line
      ends with the number of attentions fused. (zb-compile fuses by
      default: run mode checks the fused lowering.)
  --fuse-cross-entropy (ir mode): zb-opt --zb-fuse-cross-entropy (after
      autocast) before autodiff: the cross-entropy keeps its lse and its
      gradient reads it; the line ends with the number of cross-entropies
      given an lse. (zb-compile does it by default, as above.)
  --precision bf16 (both modes): the same with torch.autocast's bfloat16
      policy (zb-opt --zb-autocast; zb-compile --precision bf16), against
      PyTorch's bfloat16 autocast numbers (expected.json "bf16") within
      BF16_LOSS_RTOL / BF16_GRAD_RTOL (below: two bfloat16 computations that
      round at different points differ by the noise of either); `run` also
      checks zb's lowering against the IR's own bfloat16 semantics
      (zb_interp.py rounds every bf16 value, exact arithmetic between) within
      BF16_RUN_RTOL, and that bfloat16 is in effect (some gradient norm off
      the float64 one by more than float32's 1e-4).
Prints `NAME: OK loss ...` or `NAME: FAIL <step>: <first error line>` per
fixture (NAME: the fixture's directory name) and exits 1 if one failed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# bfloat16 tolerances against PyTorch's autocast. bfloat16 keeps 8
# significant bits (unit roundoff 2^-9 = 2e-3). Measured on the 25 fixtures
# of Inputs/hf (hf_fixtures.py --bf16-reference-only, torch 2.15):
# PyTorch's own bfloat16 loss is within 1.2e-3 of float64 and its gradient
# norms within 2.2e-2 (median 1e-3; the worst are small attention biases);
# gradients that are zero in exact arithmetic come out below 1e-6. zb
# rounds at other points (one op per zb op, not per fused torch kernel), so
# the two differ by up to the sum of both deviations: 2.5x the worst
# observed deviation.
BF16_LOSS_RTOL = 3e-3
BF16_GRAD_RTOL = 5.5e-2
BF16_GRAD_ATOL = 1e-6
# zb's lowering against the IR's bfloat16 semantics in float64 (every zb op
# computes in float32 and rounds its bf16 result once; zb_interp.py in
# float64, rounding at the same points): they differ where float32 and
# float64 (and the order of a sum) round a value to different bfloat16
# neighbours. Such a flip moves that element by 2^-8 (3.9e-3), a gradient
# norm summed over N >= 16 tokens by at most about 2.4e-4; 1e-3 allows a few
# to coincide. Measured: the Hugging Face fixtures (d 16) within 1.4e-7
# (loss) and 1.7e-6 (gradient norms), the JAX GPT (d 32) within 2.1e-4.
BF16_RUN_RTOL = 1e-3


def run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        errors = [l for l in lines if "error" in l.lower()] or lines or [""]
        raise RuntimeError("%s: %s" % (what, errors[0]))
    return proc.stdout


def model_file(fixture):
    """The fixture's model: model.onnx, else model.stablehlo.mlir (JAX)."""
    onnx = os.path.join(fixture, "model.onnx")
    return onnx if os.path.exists(onnx) else \
        os.path.join(fixture, "model.stablehlo.mlir")


def check_ir(bindir, fixture, tmp, precision="fp32", fuse_attention=False,
             fuse_cross_entropy=False):
    mlir = os.path.join(tmp, "model.mlir")
    grad = os.path.join(tmp, "grad.mlir")
    flag = "--import-onnx" if model_file(fixture).endswith(".onnx") \
        else "--import-stablehlo"
    run([os.path.join(bindir, "zb-translate"), flag, model_file(fixture),
         "-o", mlir], "import")
    autocast = ["--zb-autocast"] if precision == "bf16" else []
    fuse = ["--zb-fuse-attention"] if fuse_attention else []
    fuse_ce = ["--zb-fuse-cross-entropy"] if fuse_cross_entropy else []
    run([os.path.join(bindir, "zb-opt")] + fuse + autocast + fuse_ce +
        ["--zb-autodiff", mlir,
         "--mlir-print-op-generic",
         "--mlir-print-elementsattrs-with-hex-if-larger=1", "-o", grad],
        "autodiff")
    got = os.path.join(tmp, "got_ir.json")
    with open(got, "w") as f:
        f.write(run([sys.executable, os.path.join(HERE, "zb_interp.py"), grad,
                     "--inputs", fixture, "--json"], "evaluation"))
    return got


def check_run(bindir, fixture, tmp, stages, target, precision="fp32",
              compile_args=()):
    out = os.path.join(tmp, "plan")
    run([os.path.join(bindir, "zb-compile"),
         model_file(fixture), "--stages", str(stages),
         "--microbatches", "1", "--schedule", "1f1b", "--target", target,
         "--precision", precision, "-o", out, "--quiet"] + list(compile_args),
        "zb-compile")
    got = os.path.join(tmp, "got.json")
    with open(got, "w") as f:
        f.write(run([os.path.join(bindir, "zb-run"), out, "--ranks",
                     str(stages), "--inputs", fixture, "--steps", "1",
                     "--report-gradients", "--report-format", "json"],
                    "zb-run"))
    return got


def compare(got, expected, options):
    """check_expected.py GOT EXPECTED OPTIONS -> (ok, its one-line text)."""
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "check_expected.py"), got,
         expected] + options, capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout.strip().replace("\n", "; ")


def bf16_in_effect(got, fixture):
    """An error text unless some gradient norm of GOT is off the float64
    one by more than float32's roundoff (1e-4 relative)."""
    import json
    with open(got) as f:
        norms = json.load(f).get("grad_norm") or {}
    with open(os.path.join(fixture, "expected.json")) as f:
        want = json.load(f)["grad_norms"]
    worst = max([abs(v - want[k]) / abs(want[k]) for k, v in norms.items()
                 if k in want and abs(want[k]) > 1e-6] or [0.0])
    if worst <= 1e-4:
        return ("bfloat16 not in effect: every gradient norm within %.1e of "
                "float64" % worst)
    return None


def check_bf16(args, fixture, tmp):
    """--precision bf16: (ok, text)."""
    torch_tol = ["--bf16", "--loss-rtol", str(BF16_LOSS_RTOL), "--grad-rtol",
                 str(BF16_GRAD_RTOL), "--grad-atol", str(BF16_GRAD_ATOL)]
    expected = os.path.join(fixture, "expected.json")
    # zb-compile fuses attention unless told not to: the run is compared
    # with the IR that has the same ops.
    fuse = args.fuse_attention or (
        args.mode == "run" and "--fuse-attention=false" not in args.compile_arg)
    fuse_ce = args.fuse_cross_entropy or (
        args.mode == "run" and
        "--fuse-cross-entropy=false" not in args.compile_arg)
    ir = check_ir(args.bin, fixture, tmp, "bf16", fuse, fuse_ce)
    if args.mode == "ir":
        return compare(ir, expected, torch_tol)
    got = check_run(args.bin, fixture, tmp, args.stages, args.target, "bf16",
                    compile_args=args.compile_arg)
    # The IR's numbers as an expected.json (check_expected.py's layout).
    import json
    with open(ir) as f:
        ir_numbers = json.load(f)
    ir_expected = os.path.join(tmp, "ir_expected.json")
    with open(ir_expected, "w") as f:
        json.dump({"loss": ir_numbers["loss"],
                   "grad_norms": ir_numbers["grad_norms"]}, f)
    ok, text = compare(got, ir_expected,
                       ["--loss-rtol", str(args.ir_rtol), "--grad-rtol",
                        str(args.ir_rtol), "--grad-atol", str(args.ir_atol)])
    if not ok:
        return False, "against the IR's bf16 semantics: " + text
    error = bf16_in_effect(got, fixture)
    if error:
        return False, error
    ok, torch_text = compare(got, expected, torch_tol)
    if not ok:
        return False, "against PyTorch autocast: " + torch_text
    return True, "%s; IR: %s" % (torch_text, text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["ir", "run"])
    ap.add_argument("fixtures", nargs="+")
    ap.add_argument("--bin", required=True, help="zb's tools directory")
    ap.add_argument("--tmp", help="scratch directory (default: a temporary)")
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--target", default="cpu",
                    help="zb-compile --target (cpu, cuda-emu, ...)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--fuse-attention", action="store_true",
                    help="ir mode: run zb-fuse-attention before autodiff")
    ap.add_argument("--fuse-cross-entropy", action="store_true",
                    help="ir mode: run zb-fuse-cross-entropy before autodiff")
    ap.add_argument("--ir-rtol", type=float, default=BF16_RUN_RTOL,
                    help="run mode, bf16: the run against the IR's bfloat16 "
                    "semantics within this relative error (default "
                    "BF16_RUN_RTOL; the GPU attention kernels round where "
                    "FlashAttention does, not where the IR's ops do)")
    ap.add_argument("--ir-atol", type=float, default=1e-8,
                    help="run mode, bf16: the absolute part of --ir-rtol's "
                    "comparison of gradient norms (default 1e-8)")
    ap.add_argument("--compile-arg", action="append", default=[],
                    help="one more zb-compile argument (run mode; repeat)")
    args = ap.parse_args()
    failed = 0
    for fixture in args.fixtures:
        name = os.path.basename(os.path.normpath(fixture))
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            try:
                if args.precision == "bf16":
                    ok, text = check_bf16(args, fixture, tmp)
                else:
                    got = (check_ir(args.bin, fixture, tmp,
                                    fuse_attention=args.fuse_attention,
                                    fuse_cross_entropy=args.fuse_cross_entropy)
                           if args.mode == "ir"
                           else check_run(args.bin, fixture, tmp, args.stages,
                                          args.target,
                                          compile_args=args.compile_arg))
                    # float32: a norm that is zero in exact arithmetic (an
                    # attention key bias) is roundoff
                    # (and float64 torch can leave 1e-10 where exact is 0)
                    ok, text = compare(
                        got, os.path.join(fixture, "expected.json"),
                        ["--grad-atol",
                         "1e-8" if args.mode == "run" else "1e-9"])
                if args.fuse_attention and args.mode == "ir":
                    with open(os.path.join(tmp, "grad.mlir")) as f:
                        fused = f.read().count('"zb.attention"(')
                    text += " (%d attentions fused)" % fused
                if args.fuse_cross_entropy and args.mode == "ir":
                    with open(os.path.join(tmp, "grad.mlir")) as f:
                        grad_text = f.read()
                    # generic form: a cross-entropy with its lse has two
                    # results ("%a:2 = ...").
                    fused = len(re.findall(
                        r':2 = "zb.cross_entropy"\(', grad_text))
                    text += " (%d zb.cross_entropy with lse)" % fused
                print("%s: %s" % (name, text if ok else "FAIL " + text))
            except RuntimeError as e:
                ok = False
                print("%s: FAIL %s" % (name, e))
        failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
