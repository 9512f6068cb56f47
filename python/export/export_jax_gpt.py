#!/usr/bin/env python3
"""Exports a small JAX GPT (or Llama-style) loss as StableHLO for zb.

Needs JAX (CPU) from PyPI, e.g.
  /usr/bin/python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax numpy
  /tmp/jaxenv/bin/python python/export/export_jax_gpt.py --model gpt \
      --out test/Frontend/Inputs/stablehlo/gpt

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


def make_loss_fn(cfg):
    import jax
    import jax.numpy as jnp

    heads = cfg.heads

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
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(hd)
        mask = jnp.tril(jnp.ones((t, t), dtype=bool))
        scores = jnp.where(mask, scores, jnp.asarray(-1e9, scores.dtype))
        probs = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhqk,bhkd->bhqd", probs, v)
        b = out.shape[0]
        return out.transpose(0, 2, 1, 3).reshape(b, t, -1)

    def gpt_block(x, p):
        h = layer_norm(x, p["ln1"])
        qkv = h @ p["attn"]["w_qkv"] + p["attn"]["b_qkv"]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        a = attention(split_heads(q), split_heads(k), split_heads(v))
        x = x + a @ p["attn"]["w_out"] + p["attn"]["b_out"]
        h = layer_norm(x, p["ln2"])
        h = jax.nn.gelu(h @ p["mlp"]["w_in"] + p["mlp"]["b_in"],
                        approximate=True)
        return x + h @ p["mlp"]["w_out"] + p["mlp"]["b_out"]

    def llama_block(x, p):
        h = rms_norm(x, p["attn_norm"])
        q = rotary(split_heads(h @ p["attn"]["wq"]))
        k = rotary(split_heads(h @ p["attn"]["wk"]))
        v = split_heads(h @ p["attn"]["wv"])
        x = x + attention(q, k, v) @ p["attn"]["wo"]
        h = rms_norm(x, p["mlp_norm"])
        g = jax.nn.silu(h @ p["mlp"]["w_gate"]) * (h @ p["mlp"]["w_up"])
        return x + g @ p["mlp"]["w_down"]

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
        logits = x @ params["lm_head"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        onehot = jax.nn.one_hot(targets, logits.shape[-1], dtype=logp.dtype)
        return -jnp.mean(jnp.sum(onehot * logp, axis=-1))

    return loss_fn


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
    loss_fn = make_loss_fn(cfg)

    # float32: the exported program.
    lowered = jax.jit(loss_fn).lower(params, batch)
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

    def reference(dtype):
        p = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), params)
        b = {k: jnp.asarray(v) for k, v in batch.items()}
        loss, grads = jax.jit(jax.value_and_grad(loss_fn))(p, b)
        norms = {}
        for path, g in jax.tree_util.tree_flatten_with_path(grads)[0]:
            norms["params." + keystr_to_name(path)] = float(
                np.linalg.norm(np.asarray(g, np.float64).ravel()))
        return {"loss": float(loss), "grad_norms": norms}

    f32 = reference(jnp.float32)
    jax.config.update("jax_enable_x64", True)
    f64 = reference(jnp.float64)
    jax.config.update("jax_enable_x64", False)
    expected = {"loss": f64["loss"], "grad_norms": f64["grad_norms"],
                "loss_f32": f32["loss"], "grad_norms_f32": f32["grad_norms"],
                "jax_version": jax.__version__, "model": cfg.model}
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


if __name__ == "__main__":
    main()
