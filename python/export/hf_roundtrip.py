#!/usr/bin/env python3
"""Trains a Hugging Face model with zb and loads the trained weights back into
the same transformers model: the new user's path end to end, and its check.

  /work/hfenv/bin/python python/export/hf_roundtrip.py FAMILY WORKDIR \\
      --bin build/bin [--steps 5] [--stages 2] [--lr 0.05] [hf_fixtures options]

1. exports FAMILY as python/export/hf_fixtures.py does (same seed, size,
   attention, optimize), into WORKDIR/model;
2. zb-compile --stages S --optimizer sgd --lr LR, then zb-run --steps N
   --save-params WORKDIR/trained.safetensors, and a second run of N+1 steps
   whose last loss is the loss at the weights after N steps (every step
   trains on the exported batch);
3. builds the transformers model afresh (its own initial weights), loads
   trained.safetensors with zb.load_into_torch (strict: every parameter
   present, tied weights once) and evaluates the loss on the batch in
   PyTorch: it must equal zb's loss of step N+1 (float32: 1e-5 relative).
Prints both losses and exits 1 if they differ. Needs torch, transformers,
onnx, onnxscript and numpy (hf_fixtures.py), and the zb package on
PYTHONPATH (build/python) or the safetensors package.
"""

import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_fixtures  # noqa: E402


def zb_losses(text):
    report = json.loads(text)
    return [s["loss"] for s in report["steps"]] if "steps" in report else \
        [report["loss"]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("family", choices=hf_fixtures.FAMILIES)
    p.add_argument("workdir")
    p.add_argument("--bin", required=True, help="zb's tools directory")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    p.add_argument("--no-optimize", dest="optimize", action="store_false")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", default="tiny", choices=sorted(hf_fixtures.SIZES))
    p.add_argument("--layers", type=int)
    p.add_argument("--no-reference", action="store_true")
    p.add_argument("--torchscript", action="store_true")
    args = p.parse_args()
    model_dir = os.path.join(args.workdir, "model")
    hf_fixtures.export(args.family, model_dir, args)
    plan = os.path.join(args.workdir, "plan")
    tool = lambda name: os.path.join(args.bin, name)  # noqa: E731
    subprocess.run([tool("zb-compile"), os.path.join(model_dir, "model.onnx"),
                    "--stages", str(args.stages), "--microbatches", "1",
                    "--schedule", "1f1b",
                    "--optimizer", "sgd", "--lr", str(args.lr), "-o", plan,
                    "--quiet"], check=True)
    trained = os.path.join(args.workdir, "trained.safetensors")
    run = [tool("zb-run"), plan, "--ranks", str(args.stages), "--inputs",
           model_dir, "--report-format", "json"]
    subprocess.run(run + ["--steps", str(args.steps), "--save-params", trained],
                   check=True, capture_output=True)
    after = subprocess.run(run + ["--steps", str(args.steps + 1)], check=True,
                           capture_output=True, text=True).stdout
    zb_loss = zb_losses(after)[-1]

    import zb  # noqa: PLC0415
    torch.manual_seed(args.seed)
    s = dict(hf_fixtures.SIZES[args.size])
    model = hf_fixtures.make_model(args.family, s, args.attn)
    cls = hf_fixtures.MaskedWrapper if args.family in hf_fixtures.MASKED \
        else hf_fixtures.CausalWrapper
    wrapper = cls(model).eval()
    zb.load_into_torch(wrapper, trained)
    _, inputs = hf_fixtures.make_inputs(args.family, s, args.seed,
                                        model.config.vocab_size)
    with torch.no_grad():
        torch_loss = float(wrapper(*[torch.from_numpy(a) for a in inputs]))
    rel = abs(torch_loss - zb_loss) / abs(zb_loss)
    print("%s: zb's loss after %d steps %.7f, PyTorch's with the loaded "
          "weights %.7f (relative difference %.1e)" % (
              args.family, args.steps, zb_loss, torch_loss, rel))
    sys.exit(0 if rel <= 1e-5 else 1)


if __name__ == "__main__":
    main()
