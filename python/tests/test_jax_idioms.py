"""JAX idioms that the StableHLO importer used to refuse (issue 19), each a
small model as JAX users write it: exact GELU (chlo.erf / chlo.erfc),
jnp.var (a select with a scalar predicate), jax.nn.logsumexp
(stablehlo.is_finite), jnp.abs; cross-entropy with jnp.take_along_axis
(a gather with operand_batching_dims and the bounds mask JAX builds around
it: compares, `and`, a reduce with an `and` body, a select) and with
logp[jnp.arange(n), targets] (iota index components), jax.nn.one_hot
(iota compared with data), jnp.take embedding lookups; jax.lax.scan and
fori_loop over stacked layer weights (stablehlo.while unrolled at import,
dynamic_slice / dynamic_update_slice with the loop index); jnp.clip
(clamp), boolean masks on data (and / or / not, jnp.any / jnp.all), max /
min reductions, padding masks (select with a broadcast predicate).

Each model is exported with zb.export.jax_to_stablehlo, compiled at 1 and
2 stages, evaluated by zb-run on a text batch (--report-gradients), and
compared with JAX in float64 on the same batch: the loss and every
parameter's gradient norm within 1e-5 (relative)."""
import json
import os

import numpy as np
import pytest

import zb
from conftest import EXAMPLES, jax_value_and_grad_f64, text_batch

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

V, D, T, B, L = 256, 8, 8, 2, 3
TEXT = os.path.join(EXAMPLES, "gpt", "shakespeare.txt")


def cross_entropy(logits, targets):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


# Activations h = emb[tokens] @ w ([B, T, D]) through one idiom.
IDIOMS = {
    "gelu_exact": lambda h: jnp.mean(jax.nn.gelu(h, approximate=False)),
    "erfc": lambda h: jnp.mean(jax.scipy.special.erfc(h)),
    "var": lambda h: jnp.mean(jnp.var(h, axis=-1)),
    "logsumexp": lambda h: jnp.mean(jax.nn.logsumexp(h, axis=-1)),
    "abs": lambda h: jnp.mean(jnp.abs(h)),
    "clip": lambda h: jnp.mean(jnp.clip(h, -0.5, 0.7) ** 2),
    "bool_masks": lambda h: jnp.mean(jnp.where(
        ((h > 0) & (h < 1)) | ~(h > -0.5), h, 0.1 * h)),
    "any_all": lambda h: jnp.mean(
        jnp.where(jnp.any(h > 1.0, axis=-1, keepdims=True), 0.5 * h, h)
        + jnp.where(jnp.all(h > -1.0, axis=-1, keepdims=True), h * h, 0.0)),
    "max_min": lambda h: jnp.mean(jnp.max(h, axis=-1) - jnp.min(h, axis=1)),
}


def idiom_model(name):
    def loss(params, tokens, targets):
        h = params["emb"][tokens] @ params["w"]            # [B, T, D]
        # The targets take part (jax.jit would drop an unused argument).
        return IDIOMS[name](h) + 1e-3 * jnp.mean(
            params["emb"][targets][..., 0])
    params = {"emb": (V, D), "w": (D, D)}
    return loss, params


def ce_take_along_axis(params, tokens, targets):
    h = jnp.tanh(params["emb"][tokens])
    return cross_entropy(h @ params["out"], targets)


def ce_one_hot(params, tokens, targets):
    h = jnp.tanh(params["emb"][tokens])
    logp = jax.nn.log_softmax(h @ params["out"], axis=-1)
    return -jnp.mean(jnp.sum(jax.nn.one_hot(targets, V) * logp, axis=-1))


def ce_arange_index(params, tokens, targets):
    # The NumPy-style pick of the target's log-probability per row.
    h = jnp.tanh(params["emb"][tokens])
    logp = jax.nn.log_softmax(h @ params["out"], axis=-1).reshape(-1, V)
    return -jnp.mean(logp[jnp.arange(tokens.size), targets.reshape(-1)])


def ce_arange_index_3d(params, tokens, targets):
    h = jnp.tanh(params["emb"][tokens])
    logp = jax.nn.log_softmax(h @ params["out"], axis=-1)
    b = tokens.shape[0]
    return -jnp.mean(logp[jnp.arange(b)[:, None], jnp.arange(T)[None, :],
                          targets])


def embed_take(params, tokens, targets):
    # jnp.take (mode "fill": a bounds mask around the gather) and a
    # padding mask on the token ids (a select with a broadcast predicate).
    h = jnp.take(params["emb"], tokens, axis=0)
    h = jnp.where((tokens != 32)[..., None], h, 0.0)
    return cross_entropy(h @ params["out"], targets)


def scan_layers(params, tokens, targets):
    def layer(h, w):
        h = h + jnp.tanh(h @ w["w"] + w["b"])
        return h, jnp.mean(h * h)
    h, norms = jax.lax.scan(layer, params["emb"][tokens], params["layers"])
    return cross_entropy(h @ params["out"], targets) + 1e-2 * jnp.sum(norms)


def fori_layers(params, tokens, targets):
    def body(i, h):
        return h + jnp.tanh(h @ params["layers"]["w"][i]
                            + params["layers"]["b"][i])
    h = jax.lax.fori_loop(0, L, body, params["emb"][tokens])
    return cross_entropy(h @ params["out"], targets)


LAYERS = {"w": (L, D, D), "b": (L, D)}
MODELS = {
    "ce_take_along_axis": (ce_take_along_axis, {"emb": (V, D),
                                                "out": (D, V)}),
    "ce_one_hot": (ce_one_hot, {"emb": (V, D), "out": (D, V)}),
    "ce_arange_index": (ce_arange_index, {"emb": (V, D), "out": (D, V)}),
    "ce_arange_index_3d": (ce_arange_index_3d, {"emb": (V, D),
                                                "out": (D, V)}),
    "embed_take": (embed_take, {"emb": (V, D), "out": (D, V)}),
    "scan_layers": (scan_layers, {"emb": (V, D), "layers": LAYERS,
                                  "out": (D, V)}),
    "fori_layers": (fori_layers, {"emb": (V, D), "layers": LAYERS,
                                  "out": (D, V)}),
}
MODELS.update({f"idiom_{k}": idiom_model(k) for k in IDIOMS})


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_idiom_matches_jax(tmp_path, mpi_env, name, stages):
    loss, shapes = MODELS[name]
    rng = np.random.default_rng(1)
    params = jax.tree.map(
        lambda s: rng.normal(0, 0.5, s).astype(np.float32), shapes,
        is_leaf=lambda s: isinstance(s, tuple))
    tokens = np.zeros((B, T), np.int32)
    path = zb.export.jax_to_stablehlo(loss, params, tokens, tokens,
                                      path=str(tmp_path / "m.mlir"))
    # One microbatch of B sequences per stage: a step is stages x B.
    plan = zb.compile(path, tmp_path / "plan", stages=stages,
                      microbatches=stages)
    dump = tmp_path / "batch.json"
    report = zb.run(plan, steps=1, data=TEXT,
                    extra_args=["--report-gradients", "--dump-batch",
                                str(dump)])
    tok, tgt = text_batch(stages * B, T)
    fed = json.load(open(dump))["inputs"]["batch0"]
    np.testing.assert_array_equal(np.asarray(fed).reshape(-1, T), tok)
    ref, grads = jax_value_and_grad_f64(loss, params, tok, tgt)
    assert report.losses[0] == pytest.approx(float(ref), rel=1e-5, abs=1e-7)
    norms = report.raw["grad_norm"]
    flat = jax.tree_util.tree_flatten_with_path(grads)[0]
    assert sorted(norms) == sorted(
        "params" + "".join(f".{k.key}" for k in kp) for kp, _ in flat)
    for kp, g in flat:
        k = "params" + "".join(f".{p.key}" for p in kp)
        assert norms[k] == pytest.approx(float(jnp.linalg.norm(g)),
                                         rel=1e-5, abs=1e-7), k
