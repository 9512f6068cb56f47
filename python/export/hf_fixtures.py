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
  --dtype float32|bfloat16
                        bfloat16: the same random model as for float32,
                        then `model.bfloat16()` (parameters and floating-
                        point buffers), exported the same way: model.onnx
                        holds BFLOAT16 initializers and computes in bfloat16
                        as the model does (transformers' own float32 upcasts
                        included). The references are then those of the
                        bfloat16 weights: "loss"/"grad_norms" from
                        `model.double()` (the bfloat16 values widened
                        exactly, float64 compute), "loss_f32"/
                        "grad_norms_f32" from `model.float()`, "bf16" the
                        autocast numbers below with `model.float()` as the
                        float32 master weights (training a bfloat16
                        checkpoint with float32 master weights),
                        expected.json says "dtype": "bfloat16", and
                        "onnx_f64": {"how", "loss", "grad_norms"} are the
                        numbers of model.onnx itself in float64 (its
                        bfloat16 constants widened exactly: the exporter
                        rounds the attention scale, GELU constants, rotary
                        tables to bfloat16, which "loss" from the torch
                        model does not; see onnx_f64_reference). Default
                        float32 (no "dtype" in expected.json).
  --bf16-reference-only add the "bf16" entry (below) to the existing fixture
                        in OUTDIR and change nothing else: rebuilds the torch
                        model from its expected.json ("family", "size",
                        "seed", "attn", "dtype" if any; the README's
                        --layers if any; the
                        model options above are then ignored), reads the
                        committed OUTDIR/input_<i>.pb, refuses (exit 1)
                        unless its float32 loss equals "loss_f32" within 1e-6
                        relative (the same model), and rewrites expected.json
                        with "bf16" added (FAMILY all: OUTDIR/<family>).
                        model.onnx, model.onnx.data, the inputs and
                        README.txt are left alone.

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
                  "opset", "bf16"}; the float64 numbers from a float64 copy
                  of the same float32 weights (--dtype bfloat16: of the
                  bfloat16 weights, and "dtype").
                  "bf16": PyTorch's mixed precision (automatic mixed precision,
                  torch.autocast) on the same float32 weights (master weights)
                  and inputs, one forward in torch.autocast("cpu",
                  dtype=torch.bfloat16) and the backward after it:
                    {"policy": "torch.autocast('cpu', dtype=torch.bfloat16)",
                     "loss", "grad_norms" (norms of the float32 gradients,
                     same names as "grad_norms"), "torch": version,
                     "cuda_policy": {"policy", "loss", "grad_norms"}}
                  CPU autocast runs matmul-type ops (mm, bmm, addmm, baddbmm,
                  matmul, linear, scaled_dot_product_attention, conv) in
                  bfloat16 (float32 accumulation) and the losses (nll_loss,
                  cross_entropy_loss, mse_loss, ...) in float32, but leaves
                  softmax, log_softmax, layer_norm, exp, pow, sum, ... at
                  their inputs' type. "cuda_policy" is the same computation
                  with CUDA's autocast op lists (torch/include/ATen/
                  autocast_mode.h: additionally softmax, log_softmax,
                  layer_norm, rms_norm, group_norm, exp, log, pow, rsqrt,
                  sum, cumsum, prod, logsumexp, norm, ... in float32; einsum,
                  addmv, mv, addr, ... in bfloat16; index_put, addcmul, ...
                  at the widest input type) emulated on the CPU: see
                  CudaAutocastPolicy. Both keep the blocks that transformers
                  runs under torch.autocast(enabled=False) (rotary
                  frequencies) in float32, as autocast does. The kernels
                  are the CPU's (bfloat16 GEMMs with float32 accumulation,
                  each output rounded to bfloat16; sdpa: the CPU's flash
                  attention), not cuBLAS's or FlashAttention's.
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


BF16_POLICY = "torch.autocast('cpu', dtype=torch.bfloat16)"
CUDA_POLICY = ("torch.autocast('cpu', dtype=torch.bfloat16) with CUDA's op "
               "lists (hf_fixtures.py CudaAutocastPolicy)")


class CudaAutocastPolicy:
    """Inside torch.autocast("cpu", dtype=torch.bfloat16): CUDA's autocast
    policy instead of the CPU's, so that a CPU-only machine computes what
    torch.autocast("cuda", dtype=torch.bfloat16) computes up to the kernels.

    Autocast is a dispatcher key (AutocastCPU, AutocastCUDA) with a kernel
    per listed aten op that casts the op's floating-point tensor arguments
    and redispatches with the key excluded (so a composite op's inner ops
    are not cast again), and a fallthrough for every other op (whose inner
    ops, for a composite op such as cross_entropy_loss, meet the key
    again). While this context is active (torch.library, process-wide):
    every op that the CPU policy lists falls through, and every op that the
    CUDA policy lists (this torch's registrations for AutocastCUDA, sorted
    into ATen's lists as in torch/include/ATen/autocast_mode.h) gets a
    Python kernel at AutocastCPU that does what the CUDA kernel does:
      lower precision (LOWER): eligible tensors (floating point, not
          float64) to bfloat16, float32 leaf parameters once per autocast
          region (the cast cache, as cached_cast: a weight used twice has
          one bfloat16 copy whose gradient is accumulated in bfloat16);
      FP32: eligible tensors to float32;
      FP32_SET_OPT_DTYPE (softmax, sum, ...): dtype=float32 unless the
          caller gave a dtype, when the first tensor is eligible;
      FP32_APPEND_DTYPE (norm): the dtype overload with float32;
      PROMOTE: eligible tensors to the widest of their types.
    The casts are ordinary autograd ops, so the backward is the one that
    CUDA autocast records. Ops that the CUDA registrations have beyond
    those lists (in torch 2.15: _cudnn_rnn, cudnn_convolution[_transpose],
    linalg_matrix_sqrth, and binary_cross_entropy, which CUDA autocast
    refuses) just fall through; a listed op without an AutocastCUDA kernel
    in the installed torch is an error (the lists changed: update them).
    Uses torch internals (torch._C._dispatch_get_registrations_for_dispatch_key,
    torch._C._ExcludeDispatchKeyGuard). One consequence worth knowing, true
    of CUDA autocast itself: F.cross_entropy is a composite op that calls
    log_softmax(x, dtype=x.dtype), so on bfloat16 logits (transformers'
    masked LMs; its causal LMs upcast the logits first) the log_softmax
    runs in bfloat16 and only nll_loss in float32, where CPU autocast runs
    the whole cross_entropy_loss in float32.
    """

    LOWER = {
        "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
        "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "einsum",
        "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
        "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell",
        "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell",
        "rnn_relu_cell", "_scaled_dot_product_flash_attention",
        "scaled_dot_product_attention"}
    FP32 = {
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10",
        "log2", "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow",
        "softplus", "layer_norm", "native_layer_norm", "rms_norm",
        "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity",
        "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss",
        "huber_loss", "mse_loss", "margin_ranking_loss",
        "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
        "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d",
        "_upsample_nearest_exact1d", "upsample_nearest2d",
        "_upsample_nearest_exact2d", "upsample_nearest3d",
        "_upsample_nearest_exact3d", "upsample_linear1d",
        "upsample_bilinear2d", "_upsample_bilinear2d_aa",
        "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa"}
    FP32_SET_OPT_DTYPE = {"prod", "softmax", "log_softmax", "cumprod",
                          "cumsum", "linalg_vector_norm", "linalg_matrix_norm",
                          "sum"}
    FP32_APPEND_DTYPE = {"norm.Scalar": "ScalarOpt_dtype",
                         "norm.ScalarOpt_dim": "ScalarOpt_dim_dtype"}
    PROMOTE = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
               "vdot", "grid_sampler", "index_put", "tensordot", "scatter_add"}

    LOW = torch.bfloat16

    def __enter__(self):
        if torch.get_autocast_dtype("cpu") != self.LOW or \
                not torch.is_autocast_enabled("cpu"):
            raise RuntimeError("CudaAutocastPolicy: use it inside "
                               "torch.autocast('cpu', dtype=torch.bfloat16)")
        C = torch._C
        self.cache = {}
        self.no_autocast = C.DispatchKeySet(C.DispatchKey.AutocastCPU)
        cpu = {n.split("::")[1] for n in
               C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")
               if n.startswith("aten::")}
        cuda = {n.split("::")[1] for n in
                C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA")
                if n.startswith("aten::")}
        kernels = {}
        for name in sorted(cuda):
            base = name.split(".")[0]
            op = getattr(getattr(torch.ops.aten, base),
                         name.split(".")[1] if "." in name else "default")
            if base in self.LOWER:
                kernels[name] = self.cast_kernel(op, lambda ts: self.LOW)
            elif base in self.FP32:
                kernels[name] = self.cast_kernel(op, lambda ts: torch.float32)
            elif base in self.PROMOTE:
                kernels[name] = self.cast_kernel(op, self.widest)
            elif base in self.FP32_SET_OPT_DTYPE:
                kernels[name] = self.set_dtype_kernel(op)
            elif name in self.FP32_APPEND_DTYPE:
                kernels[name] = self.append_dtype_kernel(
                    op, getattr(torch.ops.aten.norm,
                                self.FP32_APPEND_DTYPE[name]))
        listed = self.LOWER | self.FP32 | self.FP32_SET_OPT_DTYPE | \
            self.PROMOTE | {n.split(".")[0] for n in self.FP32_APPEND_DTYPE}
        missing = listed - {n.split(".")[0] for n in kernels}
        if missing:  # another torch whose lists differ: say so
            raise RuntimeError("CudaAutocastPolicy: no AutocastCUDA kernel "
                               "for %s in torch %s" % (sorted(missing),
                                                       torch.__version__))
        self.lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():  # "Overriding a previously registered kernel"
            warnings.simplefilter("ignore")
            for name in sorted(cpu - set(kernels)):
                self.lib.impl(name, torch.library.fallthrough_kernel,
                              "AutocastCPU")
            for name, kernel in sorted(kernels.items()):
                self.lib.impl(name, kernel, "AutocastCPU")
        return self

    def __exit__(self, *exc):
        self.lib._destroy()  # the CPU policy again
        self.cache.clear()
        return False

    @staticmethod
    def eligible(t):
        return (isinstance(t, torch.Tensor) and t.is_floating_point()
                and t.dtype != torch.float64)

    def tensors(self, args):
        for a in args:
            if isinstance(a, (list, tuple)):
                yield from self.tensors(a)
            elif self.eligible(a):
                yield a

    def widest(self, ts):
        return torch.float32 if any(t.dtype == torch.float32 for t in ts) \
            else self.LOW

    def cast(self, a, dtype):
        if isinstance(a, (list, tuple)):
            return type(a)(self.cast(x, dtype) for x in a)
        if not self.eligible(a) or a.dtype == dtype:
            return a
        if (dtype == self.LOW and a.dtype == torch.float32 and a.requires_grad
                and a.is_leaf and not a._is_view()):  # cached_cast
            hit = self.cache.get(id(a))
            if hit is None or hit[0] is not a:
                hit = self.cache[id(a)] = (a, a.to(dtype))
            return hit[1]
        return a.to(dtype)

    def cast_kernel(self, op, to):
        def kernel(*args, **kwargs):
            with torch._C._ExcludeDispatchKeyGuard(self.no_autocast):
                dtype = to(list(self.tensors(list(args) +
                                             list(kwargs.values()))))
                return op(*self.cast(args, dtype),
                          **{k: self.cast(v, dtype) for k, v in kwargs.items()})
        return kernel

    def first_eligible(self, args):
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        return self.eligible(first)

    def set_dtype_kernel(self, op):
        names = [a.name for a in op._schema.arguments]
        i = names.index("dtype")

        def kernel(*args, **kwargs):
            with torch._C._ExcludeDispatchKeyGuard(self.no_autocast):
                given = args[i] if len(args) > i else kwargs.get("dtype")
                if given is None and self.first_eligible(args):
                    if len(args) > i:
                        args = args[:i] + (torch.float32,) + args[i + 1:]
                    else:
                        kwargs = dict(kwargs, dtype=torch.float32)
                return op(*args, **kwargs)
        return kernel

    def append_dtype_kernel(self, op, dtype_op):
        def kernel(*args, **kwargs):
            with torch._C._ExcludeDispatchKeyGuard(self.no_autocast):
                if self.first_eligible(args):
                    return dtype_op(*args, **kwargs, dtype=torch.float32)
                return op(*args, **kwargs)
        return kernel


def bf16_loss_and_grads(model, inputs, cuda_policy=False):
    """One forward in torch.autocast("cpu", dtype=torch.bfloat16) with the
    float32 parameters (master weights), the backward after it (outside
    autocast, as PyTorch recommends): the loss and the float32 gradients'
    norms. cuda_policy: CUDA's op lists (CudaAutocastPolicy)."""
    model = model.to(torch.float32)
    model.zero_grad()
    tensors = [torch.from_numpy(a) for a in inputs]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        if cuda_policy:
            with CudaAutocastPolicy():
                loss = model(*tensors)
        else:
            loss = model(*tensors)
    if loss.dtype != torch.float32:
        raise RuntimeError("autocast loss is %s, not float32" % loss.dtype)
    loss.backward()
    norms = {}
    for n, p in model.named_parameters():
        if p.grad is None or p.grad.dtype != torch.float32:
            raise RuntimeError("%s: gradient %s" % (
                n, None if p.grad is None else p.grad.dtype))
        norms[n] = float(p.grad.double().norm())
    return float(loss.detach()), norms


def bf16_reference(wrapper, inputs):
    """expected.json's "bf16" entry for the float32 model `wrapper`."""
    loss, norms = bf16_loss_and_grads(copy.deepcopy(wrapper), inputs)
    cuda_loss, cuda_norms = bf16_loss_and_grads(copy.deepcopy(wrapper),
                                                inputs, cuda_policy=True)
    return {"policy": BF16_POLICY, "loss": loss, "grad_norms": norms,
            "torch": torch.__version__,
            "cuda_policy": {"policy": CUDA_POLICY, "loss": cuda_loss,
                            "grad_norms": cuda_norms}}


ONNX_F64_HOW = ("model.onnx as exported, evaluated in float64 by "
                "hf_fixtures.py onnx_f64_reference: every floating-point "
                "initializer and constant widened exactly (bfloat16 values "
                "kept, e.g. the rounded attention scale, GELU constants, "
                "rotary tables), every Cast to a floating type a Cast to "
                "float64; gradients of the initializers that hold a parameter "
                "(or its transpose, reshape or leading slice) summed into "
                "that parameter")


def _onnx_op(op, a, x, dtype):
    """One ONNX node on torch tensors (floating values in `dtype`): the ops
    that the exported transformers graphs use; others raise."""
    import torch.nn.functional as F
    from onnx import TensorProto as T
    floats = (T.FLOAT, T.BFLOAT16, T.FLOAT16, T.DOUBLE)
    ints = {T.INT64: torch.int64, T.INT32: torch.int32, T.BOOL: torch.bool}
    unary = {"Neg": torch.neg, "Sqrt": torch.sqrt, "Reciprocal": torch.reciprocal,
             "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Erf": torch.erf,
             "Exp": torch.exp, "Log": torch.log, "Relu": torch.relu,
             "Sin": torch.sin, "Cos": torch.cos, "IsNaN": torch.isnan,
             "Not": torch.logical_not, "Abs": torch.abs}
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
              "Div": torch.div, "Pow": torch.pow, "MatMul": torch.matmul,
              "Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt,
              "And": torch.logical_and, "Or": torch.logical_or,
              "Max": torch.maximum, "Min": torch.minimum}

    def ints_of(t):
        return [int(v) for v in t.reshape(-1)]

    if op in unary:
        return unary[op](x[0])
    if op in binary:
        if op == "Div" and not x[0].is_floating_point():
            return torch.div(x[0], x[1], rounding_mode="trunc")
        return binary[op](x[0], x[1])
    if op == "Cast":
        return x[0].to(dtype if a["to"] in floats else ints[a["to"]])
    if op == "Where":
        return torch.where(x[0], x[1], x[2])
    if op == "Gemm":
        A = x[0].T if a.get("transA") else x[0]
        B = x[1].T if a.get("transB") else x[1]
        y = a.get("alpha", 1.0) * (A @ B)
        return y if len(x) < 3 or x[2] is None else y + a.get("beta", 1.0) * x[2]
    if op == "Gather":
        ax = a.get("axis", 0) % x[0].dim()
        idx = x[1] % x[0].shape[ax]
        y = torch.index_select(x[0], ax, idx.reshape(-1))
        return y.reshape(*x[0].shape[:ax], *idx.shape, *x[0].shape[ax + 1:])
    if op == "Reshape":
        shape = ints_of(x[1])
        if not a.get("allowzero", 0):
            shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return x[0].reshape(shape)
    if op == "Transpose":
        return x[0].permute(*(a.get("perm") or reversed(range(x[0].dim()))))
    if op in ("Unsqueeze", "Squeeze"):
        axes = ints_of(x[1]) if len(x) > 1 and x[1] is not None else None
        if op == "Squeeze":
            return x[0].squeeze() if axes is None else x[0].squeeze(axes)
        y, rank = x[0], x[0].dim() + len(axes)
        for ax in sorted(v % rank for v in axes):
            y = y.unsqueeze(ax)
        return y
    if op == "Expand":
        return x[0].expand(torch.broadcast_shapes(x[0].shape, ints_of(x[1])))
    if op == "Concat":
        return torch.cat(x, dim=a["axis"])
    if op == "Split":
        ax = a.get("axis", 0)
        if len(x) > 1 and x[1] is not None:
            sizes = ints_of(x[1])
        else:
            n = a["num_outputs"]
            sizes = [-(-x[0].shape[ax] // n)] * n
            sizes[-1] = x[0].shape[ax] - sum(sizes[:-1])
        return list(torch.split(x[0], sizes, dim=ax))
    if op == "Slice":
        y = x[0]
        starts, ends = ints_of(x[1]), ints_of(x[2])
        axes = ints_of(x[3]) if len(x) > 3 and x[3] is not None else \
            list(range(len(starts)))
        steps = ints_of(x[4]) if len(x) > 4 and x[4] is not None else \
            [1] * len(axes)
        idx = [slice(None)] * y.dim()
        for s, e, ax, st in zip(starts, ends, axes, steps):
            if st != 1:
                raise NotImplementedError("Slice with step %d" % st)
            D = y.shape[ax]
            s = max(0, min(D, s + D if s < 0 else s))
            e = max(0, min(D, e + D if e < 0 else e))
            idx[ax] = slice(s, e)
        return y[tuple(idx)]
    if op == "Pad":
        if a.get("mode", b"constant") not in (b"constant", "constant") or \
                (len(x) > 3 and x[3] is not None):
            raise NotImplementedError("Pad %s" % a)
        p = ints_of(x[1])
        r = len(p) // 2
        pads = []
        for i in reversed(range(r)):
            pads += [p[i], p[i + r]]
        value = x[2].item() if len(x) > 2 and x[2] is not None else 0
        return F.pad(x[0], pads, value=value)
    if op in ("Softmax", "LogSoftmax"):
        f = torch.softmax if op == "Softmax" else torch.log_softmax
        return f(x[0], dim=a.get("axis", -1))
    if op in ("ReduceMean", "ReduceSum", "ReduceMax"):
        axes = ints_of(x[1]) if len(x) > 1 and x[1] is not None else []
        keep = bool(a.get("keepdims", 1))
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return x[0]
            axes = list(range(x[0].dim()))
        if op == "ReduceMax":
            return torch.amax(x[0], dim=axes, keepdim=keep)
        f = torch.mean if op == "ReduceMean" else torch.sum
        return f(x[0], dim=axes, keepdim=keep)
    if op == "LayerNormalization":
        ax = a.get("axis", -1) % x[0].dim()
        return F.layer_norm(x[0], x[0].shape[ax:], x[1],
                            x[2] if len(x) > 2 else None,
                            eps=a.get("epsilon", 1e-5))
    if op == "SoftmaxCrossEntropyLoss":
        if len(x) > 2 and x[2] is not None:
            raise NotImplementedError("SoftmaxCrossEntropyLoss with weights")
        red = a.get("reduction", b"mean")
        red = red.decode() if isinstance(red, bytes) else red
        return F.cross_entropy(x[0], x[1], reduction=red,
                               ignore_index=a.get("ignore_index", -100))
    raise NotImplementedError("ONNX op %s" % op)


def onnx_f64_reference(out, wrapper):
    """expected.json's "onnx_f64" (--dtype bfloat16): the loss and the
    parameters' gradient norms of OUT/model.onnx itself, in float64 with its
    bfloat16 values widened exactly (ONNX_F64_HOW). The torch model's
    float64 numbers ("loss") use the exact constants (1/sqrt(head_dim),
    0.044715, the rotary tables) where the exported graph holds them rounded
    to bfloat16. None (and a message) where the graph has an op that
    _onnx_op lacks or an initializer of a parameter is not found."""
    import onnx
    from onnx import numpy_helper, TensorProto as T
    floats = (T.FLOAT, T.BFLOAT16, T.FLOAT16, T.DOUBLE)
    dtype = torch.float64
    m = onnx.load(os.path.join(out, "model.onnx"))
    params = {n: p.detach().to(dtype) for n, p in wrapper.named_parameters()}

    def find(v):  # (name, how) of the parameter that initializer v holds
        for n, p in params.items():
            if p.shape == v.shape and torch.equal(p, v):
                return n, "same"
        for n, p in params.items():
            if p.dim() == 2 and p.T.shape == v.shape and torch.equal(p.T, v):
                return n, "transpose"
        for n, p in params.items():
            if p.numel() == v.numel() and torch.equal(p.reshape(-1), v.reshape(-1)):
                return n, "reshape"
        w = v
        while w.dim() > 1 and w.shape[0] == 1:
            w = w[0]
        for n, p in params.items():
            if w.dim() == p.dim() and w.shape[1:] == p.shape[1:] and \
                    0 < w.shape[0] < p.shape[0] and torch.equal(p[:w.shape[0]], w):
                return n, "slice"
        return None, None

    env, held = {}, []
    for init in m.graph.initializer:
        arr = numpy_helper.to_array(init)
        if init.data_type in floats:
            t = torch.from_numpy(np.array(arr.astype(np.float64)))
            n, how = find(t)
            if n is not None:
                t.requires_grad_(True)
                held.append((t, n, how))
            env[init.name] = t
        else:
            env[init.name] = torch.from_numpy(np.array(arr))
    missing = set(params) - {n for _, n, _ in held}
    if missing:
        print("onnx_f64: no initializer holds %s; no \"onnx_f64\" entry"
              % sorted(missing))
        return None
    for gi, arr in zip(m.graph.input, zb_export.load_inputs(out)):
        env[gi.name] = torch.from_numpy(np.array(arr))
    try:
        for node in m.graph.node:
            a = {at.name: onnx.helper.get_attribute_value(at)
                 for at in node.attribute}
            if node.op_type in ("Constant", "ConstantOfShape"):
                t = a.get("value")
                if t is not None:
                    arr = numpy_helper.to_array(t)
                    if t.data_type in floats:
                        arr = arr.astype(np.float64)
                elif node.op_type == "ConstantOfShape":
                    arr = np.zeros(1, np.float64)
                elif "value_float" in a or "value_floats" in a:
                    arr = np.array(a.get("value_float", a.get("value_floats")),
                                   np.float64)
                elif "value_int" in a or "value_ints" in a:
                    arr = np.array(a.get("value_int", a.get("value_ints")),
                                   np.int64)
                else:
                    raise NotImplementedError("Constant %s" % sorted(a))
                y = torch.from_numpy(np.array(arr))
                if node.op_type == "ConstantOfShape":
                    y = y.reshape(()).expand(
                        [int(v) for v in env[node.input[0]]]).clone()
            else:
                y = _onnx_op(node.op_type, a, [env[i] if i else None
                                               for i in node.input], dtype)
            for o, v in zip(node.output, y if isinstance(y, list) else [y]):
                env[o] = v
    except Exception as e:  # noqa: BLE001 (an op this evaluator gets wrong)
        print("onnx_f64: node %s (%s): %s: %s; no \"onnx_f64\" entry" % (
            node.name, node.op_type, type(e).__name__, e))
        return None
    loss = env[m.graph.output[0].name]
    loss.backward()
    grads = {n: torch.zeros_like(p) for n, p in params.items()}
    for t, n, how in held:
        if t.grad is None:
            continue
        g = t.grad
        if how == "transpose":
            grads[n] += g.T
        elif how == "reshape":
            grads[n] += g.reshape(grads[n].shape)
        elif how == "slice":
            g = g.reshape(-1, *grads[n].shape[1:])
            grads[n][:g.shape[0]] += g
        else:
            grads[n] += g
    return {"how": ONNX_F64_HOW, "loss": float(loss.detach()),
            "grad_norms": {n: float(g.norm()) for n, g in grads.items()}}


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
    if args.dtype == "bfloat16":
        model = model.bfloat16()
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
        bf16 = None
    else:
        loss32, g32 = loss_and_grads(copy.deepcopy(wrapper), inputs,
                                     torch.float32)
        loss64, g64 = loss_and_grads(copy.deepcopy(wrapper), inputs,
                                     torch.float64)
        bf16 = bf16_reference(wrapper, inputs)
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
    if bf16 is not None:
        expected["bf16"] = bf16
    if args.dtype != "float32":
        expected["dtype"] = args.dtype
        if not args.no_reference:
            onnx_f64 = onnx_f64_reference(out, wrapper)
            if onnx_f64 is not None:
                expected["onnx_f64"] = onnx_f64
    write_expected(out, expected)
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write("Generated by: python/export/hf_fixtures.py %s <this dir> --attn %s"
                "%s%s --size %s%s --seed %d%s\n(torch %s, transformers %s, onnx %s, "
                "onnxscript %s; opset %d). See that script's docstring.\n" % (
                    family, args.attn, "" if args.optimize else " --no-optimize",
                    " --torchscript" if args.torchscript else "", args.size,
                    " --layers %d" % args.layers if args.layers else "",
                    args.seed, "" if args.dtype == "float32" else
                    " --dtype " + args.dtype, torch.__version__,
                    transformers.__version__, onnx.__version__,
                    __import__("onnxscript").__version__, opset))
    print("%s: %s, opset %d, loss %.8f (float32 %.8f), %d parameters, ops %s" % (
        family, type(model).__name__, opset, loss64, loss32, len(g64), " ".join(ops)))
    if bf16 is not None:
        print_bf16(family, expected)
    if "onnx_f64" in expected:
        o = expected["onnx_f64"]
        rel = max(abs(o["grad_norms"][n] - w) / abs(w)
                  for n, w in expected["grad_norms"].items() if abs(w) > 1e-9)
        print("%s: model.onnx in float64 (onnx_f64): loss %.10f (relative to "
              "\"loss\" %.2e), gradient norms vs \"grad_norms\": max %.2e" % (
                  family, o["loss"], abs(o["loss"] - expected["loss"]) /
                  abs(expected["loss"]), rel), flush=True)


def write_expected(out, expected):
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


def print_bf16(family, expected):
    """The bfloat16 losses and how far the bfloat16 gradient norms are
    from the float64 ones (relative; norms under 1e-9, zero in exact
    arithmetic, left out)."""
    def spread(norms):
        rel = sorted(abs(norms[n] - w) / abs(w)
                     for n, w in expected["grad_norms"].items() if abs(w) > 1e-9)
        return "max %.2e median %.2e" % (rel[-1], rel[len(rel) // 2])
    b = expected["bf16"]
    print("%s: loss %.8f float32 %.8f bf16 %.8f bf16-cuda-policy %.8f; "
          "gradient norms vs float64: bf16 %s, bf16-cuda-policy %s" % (
              family, expected["loss"], expected["loss_f32"], b["loss"],
              b["cuda_policy"]["loss"], spread(b["grad_norms"]),
              spread(b["cuda_policy"]["grad_norms"])), flush=True)


def add_bf16_reference(family, out):
    """--bf16-reference-only: expected.json's "bf16" entry for the fixture
    in `out`, from the same model (checked on the float32 loss) and the
    committed inputs; nothing else changes."""
    path = os.path.join(out, "expected.json")
    with open(path) as f:
        text = f.read()
    expected = json.loads(text)
    if json.dumps(expected, indent=1, sort_keys=True) + "\n" != text:
        raise SystemExit("%s: not in this script's layout (json.dump indent 1, "
                         "sorted keys); not rewriting it" % path)
    if expected.get("family") != family:
        raise SystemExit("%s: family %r, not %s" % (path, expected.get("family"),
                                                   family))
    s = dict(SIZES[expected["size"]])
    readme = os.path.join(out, "README.txt")
    layers = None
    if os.path.exists(readme):
        with open(readme) as f:
            words = f.readline().split()
        if "--layers" in words:
            layers = int(words[words.index("--layers") + 1])
    if layers:
        s["layers"] = layers
    torch.manual_seed(expected["seed"])
    model = make_model(family, s, expected["attn"])
    if expected.get("dtype", "float32") == "bfloat16":
        model = model.bfloat16()
    wrapper = (MaskedWrapper if family in MASKED else CausalWrapper)(model).eval()
    inputs = [np.array(a) for a in zb_export.load_inputs(out)]  # writable
    if len(inputs) != len(expected["inputs"]):
        raise SystemExit("%s: %d input_<i>.pb, expected.json names %d inputs"
                         % (out, len(inputs), len(expected["inputs"])))
    loss32, g32 = loss_and_grads(copy.deepcopy(wrapper), inputs, torch.float32)
    want = expected.get("loss_f32")
    rel = abs(loss32 - want) / abs(want) if want else float("nan")
    if not rel <= 1e-6 or set(g32) != set(expected["grad_norms_f32"]):
        raise SystemExit("%s: the rebuilt model is not the fixture's: float32 "
                         "loss %.10g, expected.json loss_f32 %r (relative "
                         "difference %.2e > 1e-6), parameters %s" % (
                             out, loss32, want, rel,
                             "the same" if set(g32) == set(
                                 expected["grad_norms_f32"]) else "differ"))
    worst = max(abs(g32[n] - w) / max(abs(w), 1e-30)
                for n, w in expected["grad_norms_f32"].items())
    print("%s: rebuilt: float32 loss %.10g (stored %.10g, relative %.1e), "
          "float32 gradient norms within %.1e" % (out, loss32, want, rel, worst),
          flush=True)
    expected["bf16"] = bf16_reference(wrapper, inputs)
    write_expected(out, expected)
    print_bf16(family, expected)


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
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                   help="bfloat16: export model.bfloat16() (see the docstring)")
    p.add_argument("--bf16-reference-only", action="store_true",
                   help="add the bfloat16 autocast reference (\"bf16\") to "
                        "the existing fixture's expected.json, nothing else")
    args = p.parse_args()
    if args.bf16_reference_only and args.no_reference:
        p.error("--bf16-reference-only with --no-reference")
    for family in FAMILIES if args.family == "all" else [args.family]:
        out = os.path.join(args.out, family) if args.family == "all" else args.out
        try:
            if args.bf16_reference_only:
                add_bf16_reference(family, out)
            else:
                export(family, out, args)
        except Exception as e:  # noqa: BLE001 (report and go on with `all`)
            if args.family != "all":
                raise
            print("%s: FAILED %s: %s" % (family, type(e).__name__, e))


if __name__ == "__main__":
    main()
