#!/usr/bin/python3
"""Checks framework-exported fixtures (model.onnx, input_<i>.pb,
expected.json: python/export/hf_fixtures.py's layout) against zb, one line per
fixture, with the one checker of the frontend tests (check_expected.py).

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
Prints `NAME: OK loss ...` or `NAME: FAIL <step>: <first error line>` per
fixture (NAME: the fixture's directory name) and exits 1 if one failed.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        errors = [l for l in lines if "error" in l.lower()] or lines or [""]
        raise RuntimeError("%s: %s" % (what, errors[0]))
    return proc.stdout


def check_ir(bindir, fixture, tmp):
    mlir = os.path.join(tmp, "model.mlir")
    grad = os.path.join(tmp, "grad.mlir")
    run([os.path.join(bindir, "zb-translate"), "--import-onnx",
         os.path.join(fixture, "model.onnx"), "-o", mlir], "import")
    run([os.path.join(bindir, "zb-opt"), "--zb-autodiff", mlir,
         "--mlir-print-op-generic",
         "--mlir-print-elementsattrs-with-hex-if-larger=1", "-o", grad],
        "autodiff")
    got = os.path.join(tmp, "got.json")
    with open(got, "w") as f:
        f.write(run([sys.executable, os.path.join(HERE, "zb_interp.py"), grad,
                     "--inputs", fixture, "--json"], "evaluation"))
    return got


def check_run(bindir, fixture, tmp, stages, target):
    out = os.path.join(tmp, "plan")
    run([os.path.join(bindir, "zb-compile"),
         os.path.join(fixture, "model.onnx"), "--stages", str(stages),
         "--microbatches", "1", "--schedule", "1f1b", "--target", target,
         "-o", out, "--quiet"],
        "zb-compile")
    got = os.path.join(tmp, "got.json")
    with open(got, "w") as f:
        f.write(run([os.path.join(bindir, "zb-run"), out, "--ranks",
                     str(stages), "--inputs", fixture, "--steps", "1",
                     "--report-gradients", "--report-format", "json"],
                    "zb-run"))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["ir", "run"])
    ap.add_argument("fixtures", nargs="+")
    ap.add_argument("--bin", required=True, help="zb's tools directory")
    ap.add_argument("--tmp", help="scratch directory (default: a temporary)")
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--target", default="cpu",
                    help="zb-compile --target (cpu, cuda-emu, ...)")
    args = ap.parse_args()
    failed = 0
    for fixture in args.fixtures:
        name = os.path.basename(os.path.normpath(fixture))
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            try:
                got = (check_ir(args.bin, fixture, tmp) if args.mode == "ir"
                       else check_run(args.bin, fixture, tmp, args.stages,
                                      args.target))
                proc = subprocess.run(
                    [sys.executable, os.path.join(HERE, "check_expected.py"),
                     got, os.path.join(fixture, "expected.json")] +
                    # float32: a norm that is zero in exact arithmetic (an
                    # attention key bias) is roundoff
                    # (and float64 torch can leave 1e-10 where exact is 0)
                    ["--grad-atol", "1e-8" if args.mode == "run" else "1e-9"],
                    capture_output=True, text=True)
                text = proc.stdout.strip().replace("\n", "; ")
                ok = proc.returncode == 0
                print("%s: %s" % (name, text if ok else "FAIL " + text))
            except RuntimeError as e:
                ok = False
                print("%s: FAIL %s" % (name, e))
        failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
