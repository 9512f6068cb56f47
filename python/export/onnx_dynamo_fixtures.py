#!/usr/bin/env python3
"""Tiny models exported by PyTorch 2.x's default ONNX exporter (dynamo,
`torch.onnx.export(model, args, f)` with nothing else), with PyTorch's loss and
gradient norms, as fixtures for zb's ONNX importer tests.

Needs PyPI's torch 2.x, onnx, onnxscript and numpy (never Debian's torch in
the same environment), e.g. in a venv outside the repository:

  python3 -m venv /work/venv-torch
  /work/venv-torch/bin/pip install torch onnx onnxscript numpy
  /work/venv-torch/bin/python python/export/onnx_dynamo_fixtures.py MODEL OUTDIR
  MODEL: gpt2 | llama | mlp | split | split-noopt | all (OUTDIR/<model>
         for each; `all` is how test/Frontend/Inputs/onnx-dynamo was made)

(The CPU-only use of PyPI's CUDA wheel works without the nvidia-* packages
except nvidia-cusparselt, nvidia-nvshmem, nvidia-cufile and nvidia-nccl,
which torch 2.15 loads at import; see docs/frontends.md.)

The export uses the exporter's defaults, which is what a user gets:
dynamo=True, opset 20 (torch 2.15), optimize=True (constant folding: a
transposed weight becomes a new initializer `val_N`), external_data=True
(weights larger than a threshold in `model.onnx.data`). Writes into OUTDIR:

  model.onnx, model.onnx.data   what the exporter wrote
  input_0.pb ...  the graph inputs in graph-input order (serialized onnx
                  TensorProto, the layout of onnx's backend test data); token
                  ids and targets int64, float data float32.
  expected.json   {"loss": float64 loss, "loss_f32": float32 loss,
                   "grad_norms": {name: L2 norm of d loss / d name (float64)},
                   "grad_norms_f32": {...}, "inputs": [names],
                   "buffers": [names of the module's buffers],
                   "opset": ..., "torch": version}
                  (the layout of python/export/onnx_fixtures.py, read by
                  test/Frontend/Inputs/check_expected.py). Parameter names
                  are the state_dict names; the float64 numbers come from a
                  float64 copy of the model (same float32 values, widened).
  train_expected.json  (models with float buffers: llama, split*) PyTorch's
                  losses of 4 steps of plain SGD, lr 0.5, on the fixture's
                  batch every step (the buffers are not trained):
                  {"lr", "microbatches": 1, "steps", "losses" (float64),
                  "losses_f32"}, the layout of onnx_train_trajectory.py, read
                  by test/Integration/Inputs/trajectory_vs_framework.py.
  README.txt      the command and versions.

gpt2:  token + position embedding, 2 pre-LN blocks (causal self-attention
  with a boolean `attn.bias` tril buffer as in HF GPT-2, 2 heads, exact GELU
  MLP), final LayerNorm, LM head tied to the token embedding, mean
  cross-entropy.
llama: token embedding, 2 blocks of RMSNorm, attention with rotary position
  embeddings from float buffers `rope_cos` / `rope_sin` and an additive float
  causal-mask buffer `causal_mask`, SwiGLU MLP, final RMSNorm, untied LM head,
  mean cross-entropy.
mlp:   float input [8, 12] -> Linear 12x24 -> exact GELU -> Linear 24x24 ->
  tanh GELU -> Linear 24x4, MSE loss against float targets [8, 4].
split: a Linear whose output is cut with torch.split (unequal sizes) and
  torch.chunk, the pieces recombined (products, sigmoid, repeat, a cat), a
  float buffer `scale` multiplied in, mean cross-entropy over 5 classes.
split-noopt: the same model exported with optimize=False (the one option
  that is not the default: the exporter's graph before its optimizer, with
  SplitToSequence/SequenceAt, CastLike and Constant nodes).
Sizes: batch 4, sequence 8, vocab 64, d 16, 2 heads, 2 layers.
Seeds: torch.manual_seed(0) for parameters, numpy default_rng(1) for data.
"""

import copy
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zb_export  # noqa: E402

BATCH, SEQ, D, HEADS, LAYERS, VOCAB = 4, 8, 16, 2, 2, 64


# --------------------------------------------------------------------------
# GPT-2 style
# --------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.register_buffer(
            "bias", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        hd = d // HEADS
        q = q.view(b, t, HEADS, hd).transpose(1, 2)
        k = k.view(b, t, HEADS, hd).transpose(1, 2)
        v = v.view(b, t, HEADS, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.bias[:t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(y)


class GPT2Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.fc_proj = nn.Linear(4 * D, D)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.h = nn.ModuleList([GPT2Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)
        nn.init.normal_(self.wte.weight, std=0.1)
        nn.init.normal_(self.wpe.weight, std=0.1)

    def forward(self, tokens, targets):
        b, t = tokens.shape
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


# --------------------------------------------------------------------------
# Llama style
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(D) + 0.1 * torch.randn(D))

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, D, bias=False)
        self.k_proj = nn.Linear(D, D, bias=False)
        self.v_proj = nn.Linear(D, D, bias=False)
        self.o_proj = nn.Linear(D, D, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        hd = d // HEADS
        q = self.q_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
        att = F.softmax(att + mask, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        return self.o_proj(y)


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = RMSNorm()
        hidden = 32
        self.gate_proj = nn.Linear(D, hidden, bias=False)
        self.up_proj = nn.Linear(D, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, D, bias=False)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([LlamaBlock() for _ in range(LAYERS)])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        hd = D // HEADS
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.arange(SEQ).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        # Float buffers: constants of the model, not parameters.
        self.register_buffer("rope_cos", emb.cos())
        self.register_buffer("rope_sin", emb.sin())
        self.register_buffer(
            "causal_mask", torch.full((SEQ, SEQ), float("-inf")).triu(1))

    def forward(self, tokens, targets):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x, self.rope_cos, self.rope_sin, self.causal_mask)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


# --------------------------------------------------------------------------
# MLP with exact and tanh GELU; a model cut with split/chunk
# --------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 24)
        self.fc3 = nn.Linear(24, 4)

    def forward(self, x, y):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h), approximate="tanh")
        return F.mse_loss(self.fc3(h), y)


class SplitModel(nn.Module):
    classes = 5

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.fc = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D + D // 2, self.classes)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, D + D // 2))

    def forward(self, tokens, labels):
        x = self.embed(tokens).mean(dim=1)  # [B, D]
        a, b, c = torch.split(self.fc(x), [D, D // 2, 3 * D // 2], dim=-1)
        c1, c2, c3 = torch.chunk(c, 3, dim=-1)  # 3 x [B, D/2]
        h = torch.cat([a * torch.sigmoid(b.repeat(1, 2)),
                       c1 * c2 + torch.tanh(c3)], dim=-1)
        return F.cross_entropy(self.out(h * self.scale), labels)


# --------------------------------------------------------------------------

MODELS = ("gpt2", "llama", "mlp", "split", "split-noopt")


def build(name):
    torch.manual_seed(0)
    model = {"gpt2": GPT2, "llama": Llama, "mlp": MLP,
             "split": SplitModel, "split-noopt": SplitModel}[name]()
    # Perturb the LayerNorm weights (ones) and biases (zeros): equal
    # initializers are merged by some exporters, and it tests them better.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
    return model


def make_inputs(name):
    rng = np.random.default_rng(1)
    if name == "mlp":
        x = rng.standard_normal((8, 12)).astype(np.float32)
        y = rng.standard_normal((8, 4)).astype(np.float32)
        return ["x", "y"], [x, y]
    tokens = rng.integers(0, VOCAB, size=(BATCH, SEQ), dtype=np.int64)
    if name.startswith("split"):
        labels = rng.integers(0, SplitModel.classes, size=(BATCH,),
                              dtype=np.int64)
        return ["tokens", "labels"], [tokens, labels]
    targets = rng.integers(0, VOCAB, size=(BATCH, SEQ), dtype=np.int64)
    return ["tokens", "targets"], [tokens, targets]


def loss_and_grads(model, inputs, dtype):
    model = model.to(dtype)
    model.zero_grad()
    tensors = [torch.from_numpy(a) for a in inputs]
    tensors = [t.to(dtype) if t.is_floating_point() else t for t in tensors]
    loss = model(*tensors)
    loss.backward()
    return float(loss), {n: float(p.grad.double().norm())
                         for n, p in model.named_parameters()}


TRAIN_LR, TRAIN_STEPS = 0.5, 4


def trajectory(model, inputs, dtype):
    """Losses of TRAIN_STEPS steps of plain SGD (p -= lr * grad) on the
    fixture's batch, every step the same batch (what zb-run --inputs DIR
    --steps N does with one microbatch of the exported batch size); the
    buffers are the model's and stay as they are."""
    model = model.to(dtype)
    tensors = [torch.from_numpy(a) for a in inputs]
    tensors = [t.to(dtype) if t.is_floating_point() else t for t in tensors]
    losses = []
    for _ in range(TRAIN_STEPS):
        model.zero_grad()
        loss = model(*tensors)
        loss.backward()
        losses.append(float(loss))
        with torch.no_grad():
            for p in model.parameters():
                p -= TRAIN_LR * p.grad
    return losses


def export(name, out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    model = build(name)
    input_names, inputs = make_inputs(name)
    path = os.path.join(out, "model.onnx")
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The defaults, as a user calls it (dynamo exporter, optimize,
        # external data); only the input names are ours. split-noopt: the
        # graph before onnxscript's optimizer (SplitToSequence/SequenceAt,
        # CastLike, Constant nodes), what optimize=False gives.
        extra = {"optimize": False} if name.endswith("-noopt") else {}
        torch.onnx.export(model, tuple(torch.from_numpy(a) for a in inputs),
                          path, input_names=input_names, **extra)
    import onnx
    proto = onnx.load(path)  # loads model.onnx.data too
    onnx.checker.check_model(proto)
    graph_inputs = [i.name for i in proto.graph.input]
    if graph_inputs != input_names:
        raise SystemExit("graph inputs %s, expected %s" % (graph_inputs,
                                                           input_names))
    zb_export.save_inputs(out, inputs)

    loss32, g32 = loss_and_grads(copy.deepcopy(model), inputs, torch.float32)
    loss64, g64 = loss_and_grads(copy.deepcopy(model), inputs, torch.float64)
    opset = max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    buffers = sorted(n for n, _ in model.named_buffers())
    expected = {"model": name, "exporter": "torch.onnx.export (dynamo, defaults)",
                "torch": torch.__version__, "opset": opset,
                "inputs": input_names, "buffers": buffers,
                "loss": loss64, "loss_f32": loss32,
                "grad_norms": g64, "grad_norms_f32": g32}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    if any(b.is_floating_point() for b in model.buffers()):
        train = {"lr": TRAIN_LR, "microbatches": 1, "steps": TRAIN_STEPS,
                 "losses": trajectory(copy.deepcopy(model), inputs,
                                      torch.float64),
                 "losses_f32": trajectory(copy.deepcopy(model), inputs,
                                          torch.float32)}
        with open(os.path.join(out, "train_expected.json"), "w") as f:
            json.dump(train, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write("Generated by: python/export/onnx_dynamo_fixtures.py %s <this dir>\n"
                "(torch %s, onnx %s, onnxscript %s; opset %d; the exporter's "
                "defaults). See that script's docstring.\n" % (
                    name, torch.__version__, onnx.__version__,
                    __import__("onnxscript").__version__, opset))
    print("%s: opset %d, loss %.8f (float32 %.8f), %d parameters, buffers %s" % (
        name, opset, loss64, loss32, len(g64), buffers))


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    name, out = sys.argv[1], sys.argv[2]
    if name == "all":
        for m in MODELS:
            export(m, os.path.join(out, m))
    elif name in MODELS:
        export(name, out)
    else:
        raise SystemExit("unknown model %r (%s, all)" % (name, " | ".join(MODELS)))


if __name__ == "__main__":
    main()
