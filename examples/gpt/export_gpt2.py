#!/usr/bin/python3
"""Exports the main job's model: a GPT-2 style model written in PyTorch and
exported with torch.onnx.export (Debian's torch 1.13), the same model class as
the importer fixture test/Frontend/Inputs/onnx/gpt2 (python/export/
onnx_fixtures.py: token + position embedding, pre-LN blocks with causal
self-attention and a GELU MLP, final LayerNorm, LM head tied to the token
embedding, mean cross-entropy inside the graph), at the main job's size:

  byte vocabulary 256, sequence 32, d 64, 4 heads, 4 layers, microbatch 4.

    /usr/bin/python3 examples/gpt/export_gpt2.py [examples/gpt/gpt2.onnx]

The committed examples/gpt/gpt2.onnx was made by this command (parameters from
torch.manual_seed(0)); the main job does not need torch.

PyTorch's reference numbers for the committed gpt2.onnx (it is not
re-exported; torch 2.x with onnx, e.g. the venv of python/export/
hf_fixtures.py):

    /work/hfenv/bin/python examples/gpt/export_gpt2.py --reference \\
        [examples/gpt/gpt2_expected.json] [--seed K] [--microbatches M]

rebuilds the model, refuses (exit 1) unless every parameter equals the
initializer of the same name in gpt2.onnx bit for bit, and computes the loss
and per-parameter gradient norms of the first training step of

    zb-run PLAN --data examples/gpt/shakespeare.txt --seed K   (M microbatches)

(docs/plan-json.md, "A text file": sequence j = 0 .. 4M-1 of step 1 is the
bytes [off, off + 32) of the text, the targets the next bytes, off =
splitmix64(K * 0x9E3779B97F4A7C15 + 0 * 1000003 + j) mod (len - 32), as
test/Integration/Inputs/gpt_reference.py cuts it; the step's loss is the mean
of the M microbatch losses, the gradients the mean of theirs). It writes the
layout of the frontend fixtures' expected.json (test/Frontend/Inputs/
check_expected.py): "loss", "grad_norms" (float64 copy of the float32
weights), "loss_f32", "grad_norms_f32", "bf16" (torch.autocast bfloat16 with
float32 master weights: CPU autocast and "cuda_policy", as
python/export/hf_fixtures.py documents), "aliases" (none: the LM head is
wte.weight itself), "inputs", "tokens" and "targets" (the batch, to compare
with zb-run --dump-batch), "data", "model", "torch". Parameter names are
gpt2.onnx's initializer names.
"""
import argparse
import copy
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "export"))
import onnx_fixtures as fx  # noqa: E402

# The fixture's model reads its sizes from module globals at construction and
# in forward(): set the main job's sizes before building it.
fx.BATCH, fx.SEQ, fx.D, fx.HEADS, fx.LAYERS = 4, 32, 64, 4, 4
fx.GPT2.vocab = 256

MASK = (1 << 64) - 1


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def text_batch(data, seed, step, batch, seq):
    """zb-run --data FILE.txt (bytes): step `step` (0 = the first) of `batch`
    sequences, as test/Integration/Inputs/gpt_reference.py cuts it."""
    toks = np.zeros((batch, seq), np.int64)
    tgts = np.zeros((batch, seq), np.int64)
    for j in range(batch):
        key = (seed * 0x9E3779B97F4A7C15 + step * 1000003 + j) & MASK
        off = splitmix64(key) % (len(data) - seq)
        toks[j] = data[off:off + seq]
        tgts[j] = data[off + 1:off + seq + 1]
    return toks, tgts


def step_loss_and_grads(model, toks, tgts, microbatches, dtype=None,
                        autocast=None):
    """The mean loss and mean gradients' norms over the microbatches (float64
    or float32: dtype; bfloat16 autocast: autocast = "cpu" or "cuda_policy")."""
    import hf_fixtures
    model = model.to(dtype or torch.float32)
    model.zero_grad()
    B = fx.BATCH
    total = 0.0
    for i in range(microbatches):
        args = (torch.from_numpy(toks[i * B:(i + 1) * B]),
                torch.from_numpy(tgts[i * B:(i + 1) * B]))
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                if autocast == "cuda_policy":
                    with hf_fixtures.CudaAutocastPolicy():
                        loss = model(*args)
                else:
                    loss = model(*args)
        else:
            loss = model(*args)
        (loss / microbatches).backward()
        total += float(loss.detach()) / microbatches
    norms = {}
    for n, p in model.named_parameters():
        if autocast and p.grad.dtype != torch.float32:
            raise SystemExit("%s: %s gradient under autocast" % (n, p.grad.dtype))
        norms[n] = float(p.grad.double().norm())
    return total, norms


def reference(args):
    import onnx
    from onnx import numpy_helper
    model = fx.build("gpt2")
    model.eval()
    onnx_path = os.path.join(HERE, "gpt2.onnx")
    inits = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(onnx_path).graph.initializer}
    for n, p in model.named_parameters():
        if n not in inits or not np.array_equal(inits[n], p.detach().numpy()):
            raise SystemExit("%s: parameter %s is not the rebuilt model's (torch "
                             "%s): not the same model" % (onnx_path, n,
                                                          torch.__version__))
    text = os.path.join(HERE, "shakespeare.txt")
    with open(text, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64)
    M = args.microbatches
    toks, tgts = text_batch(data, args.seed, 0, M * fx.BATCH, fx.SEQ)
    loss32, g32 = step_loss_and_grads(copy.deepcopy(model), toks, tgts, M,
                                      torch.float32)
    loss64, g64 = step_loss_and_grads(copy.deepcopy(model), toks, tgts, M,
                                      torch.float64)
    lossb, gb = step_loss_and_grads(copy.deepcopy(model), toks, tgts, M,
                                    autocast="cpu")
    lossc, gc = step_loss_and_grads(copy.deepcopy(model), toks, tgts, M,
                                    autocast="cuda_policy")
    import hf_fixtures
    expected = {
        "model": "examples/gpt/gpt2.onnx", "torch": torch.__version__,
        "data": {"text": "examples/gpt/shakespeare.txt", "bytes": True,
                 "seed": args.seed, "step": 1, "microbatches": M,
                 "microbatch_size": fx.BATCH, "seq": fx.SEQ,
                 "rule": "zb-run --data (docs/plan-json.md, A text file)"},
        "inputs": ["tokens", "targets"],
        "tokens": toks.tolist(), "targets": tgts.tolist(), "aliases": {},
        "loss": loss64, "loss_f32": loss32,
        "grad_norms": g64, "grad_norms_f32": g32,
        "bf16": {"policy": hf_fixtures.BF16_POLICY, "loss": lossb,
                 "grad_norms": gb, "torch": torch.__version__,
                 "cuda_policy": {"policy": hf_fixtures.CUDA_POLICY,
                                 "loss": lossc, "grad_norms": gc}}}
    with open(args.reference, "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    hf_fixtures.print_bf16("examples/gpt/gpt2.onnx", expected)
    print("wrote %s" % args.reference)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", nargs="?", default=os.path.join(HERE, "gpt2.onnx"))
    p.add_argument("--reference", nargs="?", metavar="JSON",
                   const=os.path.join(HERE, "gpt2_expected.json"),
                   help="PyTorch's numbers for the committed gpt2.onnx "
                        "instead of exporting (see the docstring)")
    p.add_argument("--seed", type=int, default=0, help="zb-run --seed")
    p.add_argument("--microbatches", type=int, default=1)
    args = p.parse_args()
    if args.reference:
        return reference(args)
    out = args.out
    model = fx.build("gpt2")
    model.eval()
    tokens = torch.zeros(fx.BATCH, fx.SEQ, dtype=torch.long)
    targets = torch.zeros(fx.BATCH, fx.SEQ, dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(model, (tokens, targets), out,
                          input_names=["tokens", "targets"],
                          output_names=["loss"], opset_version=17,
                          do_constant_folding=False,
                          keep_initializers_as_inputs=False,
                          export_params=True)
    n = sum(p.numel() for p in model.parameters())
    print("wrote %s: %d parameters (%.2f MB float32)" % (out, n, n * 4 / 1e6))


if __name__ == "__main__":
    main()
