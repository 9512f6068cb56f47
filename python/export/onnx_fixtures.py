#!/usr/bin/python3
"""Tiny GPT-2, Llama and BERT style models exported by torch.onnx.export, with
PyTorch's loss and gradient norms, as fixtures for zb's ONNX importer tests.

Run with Debian's python (torch 1.13, onnx 1.12):

  /usr/bin/python3 python/export/onnx_fixtures.py MODEL OUTDIR
  MODEL: gpt2 | gpt2-logits | llama | bert

Writes into OUTDIR:
  model.onnx      opset 17 (llama: 15, bert: 14), static shapes, parameters
                  as initializers under their torch names (e.g.
                  `h.0.attn.qkv.weight`), exported with do_constant_folding=
                  False so that no weight is renamed (`onnx::MatMul_12`) or
                  pre-transposed: zb's importer folds the shape plumbing.
  input_0.pb ...  the graph inputs in graph-input order (serialized onnx
                  TensorProto, the layout of onnx's backend test data); token
                  ids, targets, labels and masks are int64.
  expected.json   {"loss": float64 loss, "loss_f32": float32 loss,
                   "grad_norms": {name: L2 norm of d loss / d name (float64)},
                   "grad_norms_f32": {... float32}, "inputs": [names],
                   "targets": name of the targets input (gpt2-logits)}
                  (the layout of every frontend fixture, also the StableHLO
                  ones of export_jax_gpt.py; read by
                  test/Frontend/Inputs/check_expected.py)
                  computed by PyTorch on the same inputs: the float64 numbers
                  come from a float64 copy of the model (same float32 initial
                  values, widened), the float32 ones from the exported model.
  README.txt      what the model is and the command that made it.
  train/          (gpt2, llama) a training set in the same layout, 256
                  sequences: input_0.pb tokens [256, 16], input_1.pb targets
                  [256, 16] (int64); each sequence is an arithmetic
                  progression mod vocab (random start, step 1..3) and the
                  targets are the next tokens, so a model can learn it
                  (microbatches of 4 rows, as the exported batch).

gpt2: token + position embedding, 2 pre-LN blocks (causal self-attention, 4
  heads, GELU MLP), final LayerNorm, LM head tied to the token embedding,
  mean cross-entropy over all positions inside the graph (output `loss`).
gpt2-logits: the same model ending in the logits [B, T, V] (output `logits`);
  the loss in expected.json is the mean cross-entropy with the `targets` input
  (zb-translate --loss cross-entropy --targets targets appends it).
llama: token embedding, 2 blocks of RMSNorm, attention with rotary position
  embeddings (rotate-half form, cos/sin computed in forward), SwiGLU MLP,
  final RMSNorm, untied LM head, mean cross-entropy.
bert: token + position + token-type embedding, LayerNorm, 2 post-LN encoder
  blocks (bidirectional attention with an additive padding mask from the int64
  `attention_mask` input, GELU MLP), classification head on token 0 (dense +
  tanh pooler, linear), mean cross-entropy with `labels` [B].
Sizes: batch 4, sequence 16, vocab 96 (bert 80), d 32, 4 heads, 2 layers.
Seeds: torch.manual_seed(0) for parameters, numpy default_rng(1) for data.
"""

import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zb_export  # noqa: E402

BATCH, SEQ, D, HEADS, LAYERS = 4, 16, 32, 4, 2


# --------------------------------------------------------------------------
# GPT-2 style
# --------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        hd = d // HEADS
        q = q.view(b, t, HEADS, hd).transpose(1, 2)
        k = k.view(b, t, HEADS, hd).transpose(1, 2)
        v = v.view(b, t, HEADS, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
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
    vocab = 96

    def __init__(self, with_loss=True):
        super().__init__()
        self.with_loss = with_loss
        self.wte = nn.Embedding(self.vocab, D)
        self.wpe = nn.Embedding(SEQ, D)
        self.h = nn.ModuleList([GPT2Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)
        nn.init.normal_(self.wte.weight, std=0.1)
        nn.init.normal_(self.wpe.weight, std=0.1)

    def forward(self, tokens, targets=None):
        b, t = tokens.shape
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.t()  # tied LM head
        if not self.with_loss:
            return logits
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

    def forward(self, x):
        b, t, d = x.shape
        hd = d // HEADS
        q = self.q_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, HEADS, hd).transpose(1, 2)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.arange(t).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
        mask = torch.full((t, t), float("-inf")).triu(1).to(x.dtype)
        att = F.softmax(att + mask, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        return self.o_proj(y)


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = LlamaAttention()
        self.post_attention_layernorm = RMSNorm()
        hidden = 64
        self.gate_proj = nn.Linear(D, hidden, bias=False)
        self.up_proj = nn.Linear(D, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, D, bias=False)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    vocab = 96

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(self.vocab, D)
        self.layers = nn.ModuleList([LlamaBlock() for _ in range(LAYERS)])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(D, self.vocab, bias=False)

    def forward(self, tokens, targets):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, self.vocab), targets.view(-1))


# --------------------------------------------------------------------------
# BERT style
# --------------------------------------------------------------------------

class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(D, D)
        self.key = nn.Linear(D, D)
        self.value = nn.Linear(D, D)
        self.attn_out = nn.Linear(D, D)
        self.attn_ln = nn.LayerNorm(D, eps=1e-12)
        self.intermediate = nn.Linear(D, 4 * D)
        self.output = nn.Linear(4 * D, D)
        self.out_ln = nn.LayerNorm(D, eps=1e-12)

    def forward(self, x, ext_mask):
        b, t, d = x.shape
        hd = d // HEADS

        def heads(y):
            return y.view(b, t, HEADS, hd).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + ext_mask
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        x = self.attn_ln(self.attn_out(y) + x)
        return self.out_ln(self.output(F.gelu(self.intermediate(x))) + x)


class Bert(nn.Module):
    vocab = 80
    classes = 3

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(self.vocab, D)
        self.position_embeddings = nn.Embedding(SEQ, D)
        self.token_type_embeddings = nn.Embedding(2, D)
        self.emb_ln = nn.LayerNorm(D, eps=1e-12)
        self.layer = nn.ModuleList([BertLayer() for _ in range(LAYERS)])
        self.pooler = nn.Linear(D, D)
        self.classifier = nn.Linear(D, self.classes)

    def forward(self, tokens, attention_mask, labels):
        b, t = tokens.shape
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0).expand(b, t)
        types = torch.zeros_like(tokens)
        x = (self.word_embeddings(tokens) + self.position_embeddings(pos) +
             self.token_type_embeddings(types))
        x = self.emb_ln(x)
        ext = attention_mask[:, None, None, :].to(x.dtype)
        ext = (1.0 - ext) * -10000.0
        for layer in self.layer:
            x = layer(x, ext)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return F.cross_entropy(self.classifier(pooled), labels)


# --------------------------------------------------------------------------

def make_inputs(name, vocab):
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, vocab, size=(BATCH, SEQ), dtype=np.int64)
    if name == "bert":
        lengths = np.array([SEQ, 12, 9, 5])
        mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int64)
        labels = rng.integers(0, Bert.classes, size=(BATCH,), dtype=np.int64)
        return ["tokens", "attention_mask", "labels"], [tokens, mask, labels]
    targets = rng.integers(0, vocab, size=(BATCH, SEQ), dtype=np.int64)
    return ["tokens", "targets"], [tokens, targets]


def build(name):
    torch.manual_seed(0)
    if name in ("gpt2", "gpt2-logits"):
        model = GPT2(with_loss=name == "gpt2")
    elif name == "llama":
        model = Llama()
    elif name == "bert":
        model = Bert()
    else:
        raise SystemExit("unknown model %r" % name)
    # Perturb the LayerNorm weights (ones) and biases (zeros): torch.onnx
    # merges initializers with equal values into one (plus Identity nodes),
    # which would merge distinct parameters; it also tests them better.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
    return model


OPSETS = {"gpt2": 17, "gpt2-logits": 17, "llama": 15, "bert": 14}


def loss_and_grads(model, inputs, dtype, logits_only):
    model = model.to(dtype)
    model.zero_grad()
    tensors = [torch.from_numpy(a) for a in inputs]
    if logits_only:
        logits = model(tensors[0])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tensors[1].reshape(-1))
    else:
        loss = model(*tensors)
    loss.backward()
    norms = {}
    for pname, p in model.named_parameters():
        norms[pname] = float(p.grad.double().norm())
    return float(loss), norms


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    name, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    model = build(name)
    model.train()  # no dropout anywhere; train() only matters for nothing
    vocab = model.vocab
    input_names, inputs = make_inputs(name, vocab)
    logits_only = name == "gpt2-logits"
    export_inputs = inputs[:1] if logits_only else inputs
    export_names = input_names[:1] if logits_only else input_names
    path = os.path.join(out, "model.onnx")
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, tuple(torch.from_numpy(a) for a in export_inputs),
                          path, input_names=export_names,
                          output_names=["logits" if logits_only else "loss"],
                          opset_version=OPSETS[name],
                          do_constant_folding=False,
                          keep_initializers_as_inputs=False,
                          export_params=True)
    import onnx
    onnx.checker.check_model(onnx.load(path))
    # The data: all inputs (gpt2-logits: the targets too, for --targets).
    zb_export.save_inputs(out, inputs)

    import copy
    loss32, g32 = loss_and_grads(copy.deepcopy(model), inputs, torch.float32,
                                 logits_only)
    loss64, g64 = loss_and_grads(copy.deepcopy(model), inputs, torch.float64,
                                 logits_only)
    # Parameter names are the ONNX initializer names (checked here).
    inits = {t.name for t in onnx.load(path).graph.initializer}
    missing = [n for n in g64 if n not in inits]
    if missing:
        raise SystemExit("parameters without an initializer: %s" % missing)
    expected = {"model": name, "opset": OPSETS[name], "inputs": input_names,
                "loss": loss64, "loss_f32": loss32,
                "grad_norms": g64, "grad_norms_f32": g32}
    if logits_only:
        expected["targets"] = "targets"
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    if name in ("gpt2", "llama"):
        rng = np.random.default_rng(2)
        n = 256
        start = rng.integers(0, vocab, size=(n, 1))
        step = rng.integers(1, 4, size=(n, 1))
        seq = (start + step * np.arange(SEQ + 1)[None, :]) % vocab
        zb_export.save_inputs(os.path.join(out, "train"),
                              [seq[:, :-1].astype(np.int64),
                               seq[:, 1:].astype(np.int64)])
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write("Generated by: /usr/bin/python3 python/export/onnx_fixtures.py "
                "%s <this dir>\n(torch %s, opset %d). See that script's "
                "docstring.\n" % (name, torch.__version__, OPSETS[name]))
    print("%s: loss %.8f (float32 %.8f), %d parameters" % (
        name, loss64, loss32, len(g64)))


if __name__ == "__main__":
    main()
