#!/usr/bin/env python3
"""Exports the small JAX models of the StableHLO idiom fixtures (issue 19).

Needs JAX (CPU) from PyPI, e.g. the build's venv:
  build/python-venv/bin/python python/export/export_jax_idioms.py \\
      --out test/Frontend/Inputs/stablehlo/idioms

Writes one directory per model into --out, the layout of the GPT fixture
(python/export/export_jax_gpt.py): model.stablehlo.mlir (generic op form
with jax.arg_info and zb.param_values, written by zb.export.jax_to_stablehlo),
batch.npz (tokens, targets: int32, in argument order) and expected.json
(JAX's loss and every parameter's gradient L2 norm in float64 on the same
float32 weights, and in float32).

Models (vocab 32, d 8, seq 8, batch 2, 3 layers), each as JAX users write it:
  take_along_axis  cross-entropy with jnp.take_along_axis(logp, t[..., None])
  arange_index     cross-entropy with logp[jnp.arange(n), t]
  embed_take       jnp.take(emb, tokens, axis=0) and a padding mask
                   (jnp.where on tokens != 0, a broadcast boolean predicate)
  scan             jax.lax.scan over stacked layer weights, stacked outputs
  fori             jax.lax.fori_loop indexing stacked weights by the counter
  neighbours       jnp.clip, &, |, ~ on masks, jnp.any / jnp.all, max / min
                   reductions, jax.nn.one_hot
"""

import argparse
import importlib.util
import json
import os

import numpy as np

V, D, T, B, L = 32, 8, 8, 2, 3


def load_zb_export():
    """python/zb/export.py on its own (the zb package needs its compiled
    module; the export helpers need only JAX)."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "zb_export", os.path.join(here, "..", "zb", "export.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def models():
    import jax
    import jax.numpy as jnp

    def cross_entropy(logits, targets):
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None],
                                             axis=-1))

    def take_along_axis(params, tokens, targets):
        h = jnp.tanh(params["emb"][tokens])
        return cross_entropy(h @ params["out"], targets)

    def arange_index(params, tokens, targets):
        h = jnp.tanh(params["emb"][tokens])
        logp = jax.nn.log_softmax(h @ params["out"], axis=-1).reshape(-1, V)
        return -jnp.mean(logp[jnp.arange(B * T), targets.reshape(-1)])

    def embed_take(params, tokens, targets):
        h = jnp.take(params["emb"], tokens, axis=0)
        h = jnp.where((tokens != 0)[..., None], h, 0.0)
        return cross_entropy(h @ params["out"], targets)

    def scan(params, tokens, targets):
        def layer(h, w):
            h = h + jnp.tanh(h @ w["w"] + w["b"])
            return h, jnp.mean(h * h)
        h, norms = jax.lax.scan(layer, params["emb"][tokens],
                                params["layers"])
        return cross_entropy(h @ params["out"], targets) + 1e-2 * jnp.sum(
            norms)

    def fori(params, tokens, targets):
        def body(i, h):
            return h + jnp.tanh(h @ params["layers"]["w"][i]
                                + params["layers"]["b"][i])
        h = jax.lax.fori_loop(0, L, body, params["emb"][tokens])
        return cross_entropy(h @ params["out"], targets)

    def neighbours(params, tokens, targets):
        h = params["emb"][tokens] @ params["w"]
        h = jnp.where(((h > 0) & (h < 1)) | ~(h > -0.5), h, 0.1 * h)
        h = jnp.clip(h, -0.8, 0.9)
        h = jnp.where(jnp.any(h > 0.5, axis=-1, keepdims=True), 0.5 * h, h)
        h = h + jnp.where(jnp.all(h > -0.7, axis=-1, keepdims=True), h * h,
                          0.0)
        logits = h @ params["out"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        ce = -jnp.mean(jnp.sum(jax.nn.one_hot(targets, V) * logp, axis=-1))
        return ce + 0.1 * jnp.mean(jnp.max(h, axis=-1) - jnp.min(h, axis=1))

    layers = {"w": (L, D, D), "b": (L, D)}
    return {
        "take_along_axis": (take_along_axis, {"emb": (V, D), "out": (D, V)}),
        "arange_index": (arange_index, {"emb": (V, D), "out": (D, V)}),
        "embed_take": (embed_take, {"emb": (V, D), "out": (D, V)}),
        "scan": (scan, {"emb": (V, D), "layers": layers, "out": (D, V)}),
        "fori": (fori, {"emb": (V, D), "layers": layers, "out": (D, V)}),
        "neighbours": (neighbours, {"emb": (V, D), "w": (D, D),
                                    "out": (D, V)}),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    cfg = ap.parse_args()

    import jax
    import jax.numpy as jnp

    export = load_zb_export()
    for name, (loss, shapes) in models().items():
        out = os.path.join(cfg.out, name)
        os.makedirs(out, exist_ok=True)
        rng = np.random.default_rng(cfg.seed)
        params = jax.tree.map(
            lambda s: rng.normal(0, 0.5, s).astype(np.float32), shapes,
            is_leaf=lambda s: isinstance(s, tuple))
        tokens = rng.integers(0, V, (B, T), dtype=np.int32)
        targets = rng.integers(0, V, (B, T), dtype=np.int32)
        export.jax_to_stablehlo(loss, params, tokens, targets,
                                path=os.path.join(out, "model.stablehlo.mlir"))
        np.savez(os.path.join(out, "batch.npz"), tokens, targets)

        def reference(dtype):
            p = jax.tree.map(lambda v: jnp.asarray(v, dtype), params)
            value, grads = jax.value_and_grad(loss)(p, tokens, targets)
            flat = jax.tree_util.tree_flatten_with_path(grads)[0]
            norms = {"params" + "".join(f".{k.key}" for k in kp):
                     float(jnp.linalg.norm(g)) for kp, g in flat}
            return float(value), norms

        jax.config.update("jax_enable_x64", True)
        try:
            loss64, norms64 = reference(jnp.float64)
        finally:
            jax.config.update("jax_enable_x64", False)
        loss32, norms32 = reference(jnp.float32)
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump({"loss": loss64, "grad_norms": norms64,
                       "loss_f32": loss32, "grad_norms_f32": norms32,
                       "jax_version": jax.__version__, "model": name,
                       "seed": cfg.seed}, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{name}: loss {loss64:.8f}")


if __name__ == "__main__":
    main()
