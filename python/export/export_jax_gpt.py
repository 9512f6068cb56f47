#!/usr/bin/env python3
"""Exports a small JAX GPT (or Llama-style) loss as StableHLO for zb.

Needs JAX (CPU) from PyPI, e.g.
  /usr/bin/python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax numpy
  /tmp/jaxenv/bin/python python/export/export_jax_gpt.py --model gpt \
      --out test/Frontend/Inputs/stablehlo/gpt
  /tmp/jaxenv/bin/python python/export/export_jax_gpt.py --model gpt \
      --compute-dtype bfloat16 --out test/Frontend/Inputs/stablehlo/gpt-bf16

Writes into --out:
  model.stablehlo.mlir  `jax.jit(loss_fn).lower(params, batch)` printed in
                        generic op form (`get_asm(print_generic_op_form=True)`),
                        with one addition: the module attribute
                        `zb.param_values`, a dictionary from each parameter's
                        pytree path name (e.g. "params.blocks.0.attn.w_qkv")
                        to its initial value (float32), so that zb evaluates
                        the model with the same weights as JAX;
  batch.npz             the batch arrays (int32), in argument order;
  input_<i>.pb          the same arrays as ONNX TensorProto (ONNX test-data
                        layout), written with /usr/bin/python3 (onnx) when
                        available;
  expected.json         {"loss": L, "grad_norms": {name: |g|_2},
                         "loss_f32": .., "grad_norms_f32": {..},
                         "jax_version": .., "model": ..} from JAX (the
                        layout of every frontend fixture, read by
                        test/Frontend/Inputs/check_expected.py): float64
                        with jax_enable_x64 and the float32 weights widened
                        to float64, `_f32` as exported (float32).
                        With --compute-dtype bfloat16 also "compute_dtype"
                        and "bf16" (below); "loss"/"grad_norms" and their
                        `_f32` are then those of the same model WITHOUT the
                        bfloat16 casts (the exact reference);
  README.txt            (--compute-dtype bfloat16 only) the command.

--compute-dtype bfloat16 (default float32: no casts, the program above):
the usual mixed-precision JAX style (flax's dtype=jnp.bfloat16 with
param_dtype=jnp.float32): the parameters stay float32 (zb.param_values and
the arguments of @main are float32) and the loss casts inside it:
  dense(x, w, b):  x.astype(bf16) @ w.astype(bf16) + b.astype(bf16)
                   (a bfloat16 dot_general and a bfloat16 result);
  attention:       einsum(q.astype(bf16), k.astype(bf16)) -> scores cast
                   back .astype(float32) for the scale, mask and softmax;
                   probs.astype(bf16) einsum v.astype(bf16);
  the activation after a dense layer (tanh-GELU; Llama's SiLU * up) runs
  on the bfloat16 values, as flax does; every dense output is cast back
  .astype(float32) where it meets the float32 residual stream, layer norm
  / RMSNorm, rotary embedding, softmax and the loss (the LM head's logits
  too). Gradients are float32 through the converts.
  expected.json "bf16": {"policy": "JAX bfloat16 casts in the model",
  "loss", "grad_norms", "jax": version}: JAX's own numbers (jax.jit of
  jax.value_and_grad of the exported loss, float32 parameters, XLA:CPU
  with its default flags) for the program with the casts, and "strict":
  {"policy", "loss", "grad_norms"}, the same with
  XLA_FLAGS=--xla_allow_excess_precision=false (computed in a child
  process): XLA's default lets a fused bfloat16 elementwise chain (bias add,
  GELU) keep float32 intermediates, "strict" rounds every bfloat16 value as
  the program says (what an interpreter that rounds each bf16 op computes).

Model (sizes from the command line; defaults 2 layers, d 32, vocab 64,
seq 16, batch 4, 4 heads):
  gpt:   token + position embeddings, pre-LayerNorm blocks, causal attention,
         tanh-GELU MLP (4d), final LayerNorm, untied LM head, mean
         cross-entropy with integer targets (one-hot * log_softmax).
  llama: token embedding, RMSNorm, rotary position embedding (half split),
         causal attention, SwiGLU MLP, RMSNorm, LM head, same loss.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np


def keystr_to_name(path):
    """JAX key path -> dotted name: ('params', 'blocks', 0, 'w') ->
    'params.blocks.0.w' (the name the zb importer derives from
    jax.arg_info = "params['blocks'][0]['w']")."""
    import jax
    parts = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            parts.append(str(k.key))
        elif isinstance(k, jax.tree_util.SequenceKey):
            parts.append(str(k.idx))
        elif isinstance(k, jax.tree_util.GetAttrKey):
            parts.append(str(k.name))
        else:
            parts.append(str(k))
    return ".".join(parts)


def init_params(rng, cfg):
    d, v, t, layers = cfg.d, cfg.vocab, cfg.seq, cfg.layers
    ff = 4 * d

    def w(*shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def vec(n, mean=0.0, scale=0.1):
        return (mean + rng.standard_normal(n) * scale).astype(np.float32)

    blocks = []
    for _ in range(layers):
        if cfg.model == "gpt":
            blocks.append({
                "ln1": {"scale": vec(d, 1.0), "bias": vec(d)},
                "attn": {"w_qkv": w(d, 3 * d), "b_qkv": vec(3 * d),
                         "w_out": w(d, d), "b_out": vec(d)},
                "ln2": {"scale": vec(d, 1.0), "bias": vec(d)},
                "mlp": {"w_in": w(d, ff), "b_in": vec(ff),
                        "w_out": w(ff, d), "b_out": vec(d)},
            })
        else:
            blocks.append({
                "attn_norm": {"scale": vec(d, 1.0)},
                "attn": {"wq": w(d, d), "wk": w(d, d), "wv": w(d, d),
                         "wo": w(d, d)},
                "mlp_norm": {"scale": vec(d, 1.0)},
                "mlp": {"w_gate": w(d, ff), "w_up": w(d, ff),
                        "w_down": w(ff, d)},
            })
    params = {"wte": w(v, d, scale=1.0), "blocks": blocks,
              "lm_head": w(d, v)}
    if cfg.model == "gpt":
        params["wpe"] = w(t, d, scale=0.5)
        params["ln_f"] = {"scale": vec(d, 1.0), "bias": vec(d)}
    else:
        params["norm_f"] = {"scale": vec(d, 1.0)}
    return params


def make_loss_fn(cfg, compute_dtype=None):
    """The loss; compute_dtype (jnp.bfloat16) casts the matmul inputs (see
    --compute-dtype), None: no casts at all."""
    import jax
    import jax.numpy as jnp

    heads = cfg.heads

    def low(a):  # a matmul input
        return a if compute_dtype is None else a.astype(compute_dtype)

    def f32(a):  # back to float32 before norms, softmax, residual, loss
        return a if compute_dtype is None else a.astype(jnp.float32)

    def dense(x, w, b=None):
        y = low(x) @ low(w)
        return y if b is None else y + low(b)

    def residual(x, a, w, b):  # x + dense(a, w, b), float32 as exported
        if compute_dtype is None:
            return x + a @ w + b  # (x + a @ w) + b, the float32 program
        return x + f32(dense(a, w, b))

    def layer_norm(x, p, eps=1e-5):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + eps) * p["scale"] + p["bias"]

    def rms_norm(x, p, eps=1e-6):
        ms = jnp.mean(x * x, axis=-1, keepdims=True)
        return x * jax.lax.rsqrt(ms + eps) * p["scale"]

    def split_heads(x):
        b, t, d = x.shape
        return x.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

    def rotary(x):
        # x: [B, H, T, hd]; half-split rotation (Llama / GPT-NeoX style).
        t, hd = x.shape[-2], x.shape[-1]
        inv = 1.0 / (10000.0 ** (jnp.arange(0, hd, 2, dtype=x.dtype) / hd))
        ang = jnp.arange(t, dtype=x.dtype)[:, None] * inv[None, :]
        cos = jnp.concatenate([jnp.cos(ang)] * 2, axis=-1)
        sin = jnp.concatenate([jnp.sin(ang)] * 2, axis=-1)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        rot = jnp.concatenate([-x2, x1], axis=-1)
        return x * cos + rot * sin

    def attention(q, k, v):
        t, hd = q.shape[-2], q.shape[-1]
        scores = f32(jnp.einsum("bhqd,bhkd->bhqk", low(q), low(k))) / np.sqrt(hd)
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        scores = jnp.where(mask, scores, jnp.asarray(-1e9, scores.dtype))
        probs = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhqk,bhkd->bhqd", low(probs), low(v))
        b = out.shape[0]
        return out.transpose(0, 2, 1, 3).reshape(b, t, -1)

    def gpt_block(x, p):
        h = layer_norm(x, p["ln1"])
        qkv = dense(h, p["attn"]["w_qkv"], p["attn"]["b_qkv"])
        q, k, v = jnp.split(qkv, 3, axis=-1)
        a = attention(split_heads(q), split_heads(k), split_heads(v))
        x = residual(x, a, p["attn"]["w_out"], p["attn"]["b_out"])
        h = layer_norm(x, p["ln2"])
        h = jax.nn.gelu(dense(h, p["mlp"]["w_in"], p["mlp"]["b_in"]),
                        approximate=True)
        return residual(x, h, p["mlp"]["w_out"], p["mlp"]["b_out"])

    def llama_block(x, p):
        h = rms_norm(x, p["attn_norm"])
        q = rotary(f32(split_heads(dense(h, p["attn"]["wq"]))))
        k = rotary(f32(split_heads(dense(h, p["attn"]["wk"]))))
        v = split_heads(dense(h, p["attn"]["wv"]))
        x = x + f32(dense(attention(q, k, v), p["attn"]["wo"]))
        h = rms_norm(x, p["mlp_norm"])
        g = jax.nn.silu(dense(h, p["mlp"]["w_gate"])) * dense(h, p["mlp"]["w_up"])
        return x + f32(dense(g, p["mlp"]["w_down"]))

    def loss_fn(params, batch):
        tokens, targets = batch["tokens"], batch["targets"]
        t = tokens.shape[1]
        x = params["wte"][tokens]
        if cfg.model == "gpt":
            x = x + params["wpe"][:t][None, :, :]
            for p in params["blocks"]:
                x = gpt_block(x, p)
            x = layer_norm(x, params["ln_f"])
        else:
            for p in params["blocks"]:
                x = llama_block(x, p)
            x = rms_norm(x, params["norm_f"])
        logits = f32(dense(x, params["lm_head"]))
        logp = jax.nn.log_softmax(logits, axis=-1)
        onehot = jax.nn.one_hot(targets, logits.shape[-1], dtype=logp.dtype)
        return -jnp.mean(jnp.sum(onehot * logp, axis=-1))

    return loss_fn


STRICT_FLAG = "--xla_allow_excess_precision=false"
STRICT_POLICY = ("the same program, XLA_FLAGS=%s: every bfloat16 value "
                 "rounded as the program says (XLA's default lets fused "
                 "bfloat16 elementwise chains keep float32 intermediates)"
                 % STRICT_FLAG)


def bf16_strict_reference(cfg):
    """The "bf16" numbers with XLA's excess precision off (a fresh process:
    XLA reads XLA_FLAGS once)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "strict.json")
        argv = [sys.executable, os.path.abspath(__file__)]
        for k, v in sorted(vars(cfg).items()):
            if k not in ("strict_json",):
                argv += ["--" + k.replace("_", "-"), str(v)]
        argv += ["--strict-json", path]
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + STRICT_FLAG).strip()
        subprocess.run(argv, env=env, check=True)
        with open(path) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["gpt", "llama"], default="gpt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compute-dtype", default="float32",
                    choices=["float32", "bfloat16"],
                    help="bfloat16: cast the matmul inputs to bfloat16 inside "
                         "the loss (float32 parameters); see the docstring")
    ap.add_argument("--strict-json", help=argparse.SUPPRESS)  # internal
    cfg = ap.parse_args()

    import jax
    import jax.numpy as jnp
    from jax._src.lib.mlir import ir

    os.makedirs(cfg.out, exist_ok=True)
    rng = np.random.default_rng(cfg.seed)
    params = init_params(rng, cfg)
    batch = {
        "tokens": rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq),
                               dtype=np.int32),
        "targets": rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq),
                                dtype=np.int32),
    }
    loss_fn = make_loss_fn(cfg)  # no casts: the float32/float64 references
    bf16 = cfg.compute_dtype == "bfloat16"
    exported_fn = make_loss_fn(cfg, jnp.bfloat16) if bf16 else loss_fn

    def reference(dtype, fn=loss_fn):
        p = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), params)
        b = {k: jnp.asarray(v) for k, v in batch.items()}
        loss, grads = jax.jit(jax.value_and_grad(fn))(p, b)
        norms = {}
        for path, g in jax.tree_util.tree_flatten_with_path(grads)[0]:
            if g.dtype != dtype:
                raise SystemExit("gradient of %s is %s, not %s" % (
                    keystr_to_name(path), g.dtype, np.dtype(dtype)))
            norms["params." + keystr_to_name(path)] = float(
                np.linalg.norm(np.asarray(g, np.float64).ravel()))
        if loss.dtype != dtype:
            raise SystemExit("loss is %s, not %s" % (loss.dtype, np.dtype(dtype)))
        return {"loss": float(loss), "grad_norms": norms}

    if cfg.strict_json:  # the child below: XLA_FLAGS set before jax started
        with open(cfg.strict_json, "w") as f:
            json.dump(reference(jnp.float32, exported_fn), f)
        return

    # float32 parameters: the exported program.
    lowered = jax.jit(exported_fn).lower(params, batch)
    module = lowered.compiler_ir("stablehlo")
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    args_flat, _ = jax.tree_util.tree_flatten_with_path((params, batch))
    with module.context:
        # JAX 0.4.x printed `jax.arg_info = "params['wte']"` on every
        # argument of @main; newer versions do not, so add it here (the zb
        # importer names arguments from it).
        main = [op for op in module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main"][0]
        arg_attrs = []
        for (path, _), old in zip(args_flat, main.attributes["arg_attrs"]):
            entries = {n.name: n.attr for n in ir.DictAttr(old)}
            top = ("params", "batch")[path[0].idx]
            entries.setdefault("jax.arg_info", ir.StringAttr.get(
                top + jax.tree_util.keystr(path[1:])))
            arg_attrs.append(ir.DictAttr.get(entries))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        values = {}
        for path, value in flat:
            name = "params." + keystr_to_name(path)
            values[name] = ir.DenseElementsAttr.get(np.ascontiguousarray(value))
        module.operation.attributes["zb.param_values"] = ir.DictAttr.get(
            values)
    text = module.operation.get_asm(print_generic_op_form=True,
                                    enable_debug_info=False)
    with open(os.path.join(cfg.out, "model.stablehlo.mlir"), "w") as f:
        f.write(text)

    f32 = reference(jnp.float32)
    low = reference(jnp.float32, exported_fn) if bf16 else None
    strict = bf16_strict_reference(cfg) if bf16 else None
    jax.config.update("jax_enable_x64", True)
    f64 = reference(jnp.float64)
    jax.config.update("jax_enable_x64", False)
    expected = {"loss": f64["loss"], "grad_norms": f64["grad_norms"],
                "loss_f32": f32["loss"], "grad_norms_f32": f32["grad_norms"],
                "jax_version": jax.__version__, "model": cfg.model}
    if bf16:
        expected["compute_dtype"] = cfg.compute_dtype
        expected["bf16"] = {"policy": "JAX bfloat16 casts in the model",
                            "loss": low["loss"],
                            "grad_norms": low["grad_norms"],
                            "jax": jax.__version__,
                            "strict": dict(strict, policy=STRICT_POLICY)}
        with open(os.path.join(cfg.out, "README.txt"), "w") as f:
            f.write("Generated by: python/export/export_jax_gpt.py --model %s "
                    "--out <this dir> --layers %d --d %d --heads %d --vocab %d "
                    "--seq %d --batch %d --seed %d --compute-dtype %s\n(jax %s, "
                    "numpy %s). See that script's docstring.\n" % (
                        cfg.model, cfg.layers, cfg.d, cfg.heads, cfg.vocab,
                        cfg.seq, cfg.batch, cfg.seed, cfg.compute_dtype,
                        jax.__version__, np.__version__))
    with open(os.path.join(cfg.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")

    # The batch in argument order (pytree order: sorted dict keys).
    arrays = [batch[k] for k in sorted(batch)]
    npz = os.path.join(cfg.out, "batch.npz")
    np.savez(npz, *arrays)
    script = (
        "import sys, numpy as np, onnx\n"
        "from onnx import numpy_helper\n"
        "d = np.load(sys.argv[1])\n"
        "for i in range(len(d.files)):\n"
        "    t = numpy_helper.from_array(d['arr_%d' % i], 'input_%d' % i)\n"
        "    open(sys.argv[2] + '/input_%d.pb' % i, 'wb').write("
        "t.SerializeToString())\n")
    if os.path.exists("/usr/bin/python3"):
        r = subprocess.run(["/usr/bin/python3", "-c", script, npz, cfg.out])
        if r.returncode != 0:
            print("warning: could not write input_<i>.pb (onnx missing?)",
                  file=sys.stderr)
    print("loss float32 %.6f float64 %.9f" % (expected["loss_f32"],
                                              expected["loss"]))
    if bf16:
        rel = sorted(abs(low["grad_norms"][n] - w) / abs(w)
                     for n, w in expected["grad_norms"].items() if abs(w) > 1e-9)
        print("loss bf16 %.6f (relative to float64 %.2e); gradient norms vs "
              "float64: max %.2e median %.2e" % (
                  low["loss"], abs(low["loss"] - expected["loss"]) /
                  abs(expected["loss"]), rel[-1], rel[len(rel) // 2]))
        rel = max(abs(strict["grad_norms"][n] - w) / abs(w)
                  for n, w in low["grad_norms"].items() if abs(w) > 1e-9)
        print("loss bf16 with %s %.6f (relative to the default %.2e); "
              "gradient norms vs the default: max %.2e" % (
                  STRICT_FLAG, strict["loss"],
                  abs(strict["loss"] - low["loss"]) / abs(low["loss"]), rel))


if __name__ == "__main__":
    main()
