#!/usr/bin/env python3
"""Hugging Face transformers models exported the way a user exports them, with
PyTorch's loss and gradient norms, as fixtures for zb's ONNX importer tests.

A tiny random config of each family (transformers' own classes, nothing
written for zb), wrapped the usual way so that the graph returns the loss:

  class Wrapper(nn.Module):                  # causal LMs
      def forward(self, input_ids, labels):
          return self.model(input_ids=input_ids, labels=labels).loss
  class Wrapper(nn.Module):                  # masked LMs
      def forward(self, input_ids, attention_mask, labels):
          return self.model(input_ids=input_ids, attention_mask=attention_mask,
                            labels=labels).loss

and exported with `torch.onnx.export(wrapper, args, "model.onnx")` (torch
2.x's defaults: the dynamo exporter, optimize=True, external data). The
causal LMs get `labels = input_ids` (transformers shifts them inside the
graph: `F.pad(labels, (0, 1), value=-100)[..., 1:]`, the last position
ignored); the masked LMs get -100 on the positions not to predict and an
attention mask with padding at the end of the second sequence.

Needs PyPI's torch 2.x, transformers, onnx, onnxscript and numpy in a venv
outside the repository (docs/frontends.md says how on a CPU-only machine):

  /work/hfenv/bin/python python/export/hf_fixtures.py FAMILY OUTDIR [options]
  FAMILY: gpt2 | llama | qwen2 | mistral | gemma | phi | gpt_neox | opt |
          gemma2 | qwen3 | phi3 | gptj | falcon | bloom | stablelm |
          gpt_bigcode | olmo2 | bert | roberta | distilbert | all
          (OUTDIR/<family> for each)
  --attn sdpa|eager     attention implementation (default: sdpa, the
                        transformers default)
  --no-optimize         torch.onnx.export(..., optimize=False)
  --torchscript         torch.onnx.export(..., dynamo=False, opset_version=17,
                        do_constant_folding=False)
  --seed N              parameters and data (default 0)
  --size tiny|small     tiny: d 16, 2 layers, 2 heads (1 key/value head
                        where the family has grouped-query attention), vocab
                        64, batch 2, sequence 12 (default); small: d 64, 3
                        layers, 4 heads (2 key/value), vocab 128, batch 2,
                        sequence 24; gpt2-124m: transformers' default
                        GPT2Config, batch 1, sequence 1024; llama-1b: the
                        shape of Llama 3.2 1B, batch 1, sequence 256
  --layers N            override the number of layers (real sizes)
  --no-reference        export only (expected.json without PyTorch's numbers)

Writes into OUTDIR (the layout of onnx_dynamo_fixtures.py, read by
test/Frontend/Inputs/check_expected.py):
  model.onnx, model.onnx.data   what the exporter wrote
  input_0.pb ...  the graph inputs in graph-input order (int64)
  expected.json   {"loss", "loss_f32", "grad_norms" (float64, state_dict
                  names of the wrapper: "model." + the model's), "grad_norms_f32",
                  "aliases" (a tied parameter's other state_dict names: the
                  ONNX file may hold it under any of them), "inputs",
                  "buffers", "family",
                  "config", "attn", "optimize", "torch", "transformers",
                  "opset"}; the float64 numbers from a float64 copy of the
                  same float32 weights.
  README.txt      the command and versions.
Dropout is off (eval mode and zero dropout probabilities in the config:
zb imports Dropout only in inference mode).
"""

import argparse
import copy
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zb_export  # noqa: E402

CAUSAL = ["gpt2", "llama", "qwen2", "mistral", "gemma", "phi", "gpt_neox", "opt",
          "gemma2", "qwen3", "phi3", "gptj", "falcon", "bloom", "stablelm",
          "gpt_bigcode", "olmo2"]
MASKED = ["bert", "roberta", "distilbert"]
FAMILIES = CAUSAL + MASKED

SIZES = {
    "tiny": dict(d=16, layers=2, heads=2, kv_heads=1, vocab=64, batch=2, seq=12),
    "small": dict(d=64, layers=3, heads=4, kv_heads=2, vocab=128, batch=2, seq=24),
    # Real sizes: GPT-2 124M is transformers' default GPT2Config (vocab
    # 50257, 1024 positions, d 768, 12 layers, 12 heads); Llama 1B the shape
    # of Llama 3.2 1B (d 2048, 16 layers, 32 heads, 8 key/value heads, MLP
    # 8192, vocab 128256, tied embeddings); --layers overrides the layers.
    "gpt2-124m": dict(full=True, batch=1, seq=1024),
    "llama-1b": dict(full=True, batch=1, seq=256),
}


def make_config(family, s):
    import transformers as tf
    if s.get("full"):
        if family == "gpt2":
            return tf.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                 **({"n_layer": s["layers"]} if s.get("layers") else {}))
        if family == "llama":
            return tf.LlamaConfig(vocab_size=128256, hidden_size=2048,
                                  intermediate_size=8192,
                                  num_hidden_layers=s.get("layers") or 16,
                                  num_attention_heads=32, num_key_value_heads=8,
                                  max_position_embeddings=131072,
                                  rope_theta=500000.0, tie_word_embeddings=True,
                                  attention_dropout=0.0)
        raise SystemExit("size %s: only gpt2 and llama" % s)
    d, L, H, V, F = s["d"], s["layers"], s["heads"], s["vocab"], 2 * s["d"]
    if family == "gpt2":
        return tf.GPT2Config(vocab_size=V, n_embd=d, n_layer=L, n_head=H,
                             n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
                             attn_pdrop=0.0)
    if family in ("llama", "qwen2", "mistral", "gemma"):
        cls = {"llama": tf.LlamaConfig, "qwen2": tf.Qwen2Config,
               "mistral": tf.MistralConfig, "gemma": tf.GemmaConfig}[family]
        extra = {}
        if family == "gemma":
            extra = dict(head_dim=d // H)
        return cls(vocab_size=V, hidden_size=d, intermediate_size=F,
                   num_hidden_layers=L, num_attention_heads=H,
                   num_key_value_heads=s["kv_heads"], max_position_embeddings=64,
                   attention_dropout=0.0, **extra)
    if family == "phi":
        return tf.PhiConfig(vocab_size=V, hidden_size=d, intermediate_size=F,
                            num_hidden_layers=L, num_attention_heads=H,
                            max_position_embeddings=64, resid_pdrop=0.0,
                            embd_pdrop=0.0, attention_dropout=0.0)
    if family == "gpt_neox":
        return tf.GPTNeoXConfig(vocab_size=V, hidden_size=d, intermediate_size=F,
                                num_hidden_layers=L, num_attention_heads=H,
                                max_position_embeddings=64, attention_dropout=0.0,
                                hidden_dropout=0.0)
    if family == "opt":
        return tf.OPTConfig(vocab_size=V, hidden_size=d, ffn_dim=F,
                            num_hidden_layers=L, num_attention_heads=H,
                            word_embed_proj_dim=d, max_position_embeddings=64,
                            dropout=0.0, attention_dropout=0.0,
                            activation_dropout=0.0, pad_token_id=1)
    if family in ("gemma2", "qwen3", "olmo2", "stablelm", "phi3"):
        cls = {"gemma2": tf.Gemma2Config, "qwen3": tf.Qwen3Config,
               "olmo2": tf.Olmo2Config, "stablelm": tf.StableLmConfig,
               "phi3": tf.Phi3Config}[family]
        extra = {"head_dim": d // H} if family in ("gemma2", "qwen3") else {}
        if family == "phi3":
            extra["pad_token_id"] = 0
        return cls(vocab_size=V, hidden_size=d, intermediate_size=F,
                   num_hidden_layers=L, num_attention_heads=H,
                   num_key_value_heads=s["kv_heads"], max_position_embeddings=64,
                   **extra)
    if family == "gptj":
        return tf.GPTJConfig(vocab_size=V, n_embd=d, n_layer=L, n_head=H,
                             rotary_dim=d // H // 2, n_positions=64,
                             resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    if family == "falcon":
        return tf.FalconConfig(vocab_size=V, hidden_size=d, num_hidden_layers=L,
                               num_attention_heads=H, hidden_dropout=0.0,
                               attention_dropout=0.0)
    if family == "bloom":
        return tf.BloomConfig(vocab_size=V, hidden_size=d, n_layer=L, n_head=H,
                              hidden_dropout=0.0, attention_dropout=0.0)
    if family == "gpt_bigcode":
        return tf.GPTBigCodeConfig(vocab_size=V, n_embd=d, n_layer=L, n_head=H,
                                   n_positions=64, resid_pdrop=0.0,
                                   embd_pdrop=0.0, attn_pdrop=0.0)
    if family in ("bert", "roberta"):
        cls = tf.BertConfig if family == "bert" else tf.RobertaConfig
        return cls(vocab_size=V, hidden_size=d, intermediate_size=F,
                   num_hidden_layers=L, num_attention_heads=H,
                   max_position_embeddings=64 + 2, hidden_dropout_prob=0.0,
                   attention_probs_dropout_prob=0.0, pad_token_id=1)
    if family == "distilbert":
        return tf.DistilBertConfig(vocab_size=V, dim=d, hidden_dim=F, n_layers=L,
                                   n_heads=H, max_position_embeddings=64,
                                   dropout=0.0, attention_dropout=0.0,
                                   pad_token_id=1)
    raise SystemExit("unknown family %r" % family)


def make_model(family, s, attn):
    import transformers as tf
    config = make_config(family, s)
    cls = tf.AutoModelForMaskedLM if family in MASKED else tf.AutoModelForCausalLM
    try:
        model = cls.from_config(config, attn_implementation=attn)
    except ValueError as e:  # a family without sdpa (Gemma2, Bloom): eager
        if attn != "sdpa" or "does not support an attention" not in str(e):
            raise
        model = cls.from_config(config, attn_implementation="eager")
    # Random weights, also where transformers initialises constants (norm
    # weights of ones, zero biases): a test must see every parameter's own
    # gradient, and the exporter merges initializers with equal contents.
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.02 * torch.randn_like(p))
    print("%s: %.1fM parameters" % (type(model).__name__,
                                    sum(p.numel() for p in model.parameters()) / 1e6),
          flush=True)
    return model


class CausalWrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


class MaskedWrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, labels):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          labels=labels).loss


def make_inputs(family, s, seed, vocab=None):
    rng = np.random.default_rng(seed + 1)
    B, T, V = s["batch"], s["seq"], vocab or s["vocab"]
    ids = rng.integers(3, V, size=(B, T), dtype=np.int64)
    if family in CAUSAL:
        return ["input_ids", "labels"], [ids, ids.copy()]
    mask = np.ones((B, T), dtype=np.int64)
    mask[-1, T - T // 4:] = 0  # padding at the end of the last sequence
    ids[-1, T - T // 4:] = 1   # the pad token
    labels = np.full((B, T), -100, dtype=np.int64)
    pick = rng.random((B, T)) < 0.3
    pick[:, 1] = True          # at least one predicted position per sequence
    pick &= mask.astype(bool)
    labels[pick] = ids[pick]
    return ["input_ids", "attention_mask", "labels"], [ids, mask, labels]


def loss_and_grads(model, inputs, dtype):
    model = model.to(dtype)
    model.zero_grad()
    loss = model(*[torch.from_numpy(a) for a in inputs])
    loss.backward()
    return float(loss.detach()), {n: float(p.grad.double().norm())
                         for n, p in model.named_parameters()}


def export(family, out, args):
    import onnx
    import transformers
    s = dict(SIZES[args.size])
    if args.layers:
        s["layers"] = args.layers
    torch.manual_seed(args.seed)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    model = make_model(family, s, args.attn)
    wrapper = (MaskedWrapper if family in MASKED else CausalWrapper)(model).eval()
    input_names, inputs = make_inputs(family, s, args.seed,
                                      model.config.vocab_size)
    path = os.path.join(out, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extra = {} if args.optimize else {"optimize": False}
        if args.torchscript:  # the TorchScript exporter, as docs/frontends.md says
            extra = {"dynamo": False, "do_constant_folding": False,
                     "opset_version": 17}
        torch.onnx.export(wrapper, tuple(torch.from_numpy(a) for a in inputs),
                          path, input_names=input_names, **extra)
    proto = onnx.load(path)
    graph_inputs = [i.name for i in proto.graph.input]
    if graph_inputs != input_names:
        raise SystemExit("graph inputs %s, expected %s" % (graph_inputs, input_names))
    zb_export.save_inputs(out, inputs)
    if args.no_reference:  # export only (a model too large for float64)
        loss32 = loss64 = float("nan")
        g32 = g64 = {}
    else:
        loss32, g32 = loss_and_grads(copy.deepcopy(wrapper), inputs,
                                     torch.float32)
        loss64, g64 = loss_and_grads(copy.deepcopy(wrapper), inputs,
                                     torch.float64)
    opset = max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    ops = sorted({n.op_type for n in proto.graph.node})
    # Tied weights (GPT-2's lm_head.weight is transformer.wte.weight): every
    # state_dict name of one tensor, the first (named_parameters') first.
    names = {}
    for n, p in wrapper.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(n)
    aliases = {ns[0]: ns[1:] for ns in names.values() if len(ns) > 1}
    expected = {"family": family, "model": type(model).__name__,
                "exporter": "torch.onnx.export (%s)" % (
                    "TorchScript, opset 17" if args.torchscript else
                    "dynamo" if args.optimize else "dynamo, optimize=False"),
                "attn": model.config._attn_implementation,
                "optimize": args.optimize, "size": args.size,
                "seed": args.seed, "torch": torch.__version__,
                "transformers": transformers.__version__, "opset": opset,
                "inputs": input_names,
                "buffers": sorted(n
                                  for n, _ in wrapper.named_buffers()),
                "onnx_ops": ops, "aliases": aliases,
                "loss": loss64, "loss_f32": loss32,
                "grad_norms": g64, "grad_norms_f32": g32}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write("Generated by: python/export/hf_fixtures.py %s <this dir> --attn %s"
                "%s%s --size %s --seed %d\n(torch %s, transformers %s, onnx %s, "
                "onnxscript %s; opset %d). See that script's docstring.\n" % (
                    family, args.attn, "" if args.optimize else " --no-optimize",
                    " --torchscript" if args.torchscript else "", args.size, args.seed, torch.__version__,
                    transformers.__version__, onnx.__version__,
                    __import__("onnxscript").__version__, opset))
    print("%s: %s, opset %d, loss %.8f (float32 %.8f), %d parameters, ops %s" % (
        family, type(model).__name__, opset, loss64, loss32, len(g64), " ".join(ops)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("family", choices=FAMILIES + ["all"])
    p.add_argument("out")
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    p.add_argument("--no-optimize", dest="optimize", action="store_false")
    p.add_argument("--torchscript", action="store_true",
                   help="the TorchScript exporter (dynamo=False, opset 17, "
                        "no constant folding)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", default="tiny", choices=sorted(SIZES))
    p.add_argument("--layers", type=int, help="override the number of layers")
    p.add_argument("--no-reference", action="store_true",
                   help="export only: no PyTorch loss and gradients")
    args = p.parse_args()
    for family in FAMILIES if args.family == "all" else [args.family]:
        out = os.path.join(args.out, family) if args.family == "all" else args.out
        try:
            export(family, out, args)
        except Exception as e:  # noqa: BLE001 (report and go on with `all`)
            if args.family != "all":
                raise
            print("%s: FAILED %s: %s" % (family, type(e).__name__, e))


if __name__ == "__main__":
    main()
