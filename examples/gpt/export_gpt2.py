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
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "export"))
import onnx_fixtures as fx  # noqa: E402

# The fixture's model reads its sizes from module globals at construction and
# in forward(): set the main job's sizes before building it.
fx.BATCH, fx.SEQ, fx.D, fx.HEADS, fx.LAYERS = 4, 32, 64, 4, 4
fx.GPT2.vocab = 256


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "gpt2.onnx")
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
