"""JAX idioms that the StableHLO importer used to refuse (issue 19): exact
GELU (chlo.erf / chlo.erfc), jnp.var (a select with a scalar predicate),
jax.nn.logsumexp (stablehlo.is_finite), jnp.abs on activations. Each model
is exported with zb.export.jax_to_stablehlo, compiled, evaluated by zb-run
on a text batch (--report-gradients), and compared with JAX in float64 on
the same batch: loss and every parameter's gradient norm."""
import json
import os

import numpy as np
import pytest

import zb
from conftest import EXAMPLES

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

V, D, T = 256, 8, 8

IDIOMS = {
    "gelu_exact": lambda h: jnp.mean(jax.nn.gelu(h, approximate=False)),
    "erfc": lambda h: jnp.mean(jax.scipy.special.erfc(h)),
    "var": lambda h: jnp.mean(jnp.var(h, axis=-1)),
    "logsumexp": lambda h: jnp.mean(jax.nn.logsumexp(h, axis=-1)),
    "abs": lambda h: jnp.mean(jnp.abs(h)),
}


def make_loss(idiom):
    def loss(params, tokens, targets):
        h = params["emb"][tokens] @ params["w"]            # [B, T, D]
        # The targets take part (jax.jit would drop an unused argument).
        return IDIOMS[idiom](h) + 1e-3 * jnp.mean(
            params["emb"][targets][..., 0])
    return loss


@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_idiom_matches_jax(tmp_path, mpi_env, idiom):
    rng = np.random.default_rng(1)
    params = {"emb": rng.normal(0, 0.5, (V, D)).astype(np.float32),
              "w": rng.normal(0, 0.5, (D, D)).astype(np.float32)}
    tokens = np.zeros((2, T), np.int32)
    loss = make_loss(idiom)
    path = zb.export.jax_to_stablehlo(loss, params, tokens, tokens,
                                      path=str(tmp_path / "m.mlir"))
    plan = zb.compile(path, tmp_path / "plan", stages=1, microbatches=1)
    dump = tmp_path / "batch.json"
    report = zb.run(plan, ranks=1, data=os.path.join(EXAMPLES, "gpt",
                                                     "shakespeare.txt"),
                    extra_args=["--report-gradients", "--dump-batch",
                                str(dump)])
    inputs = json.load(open(dump))["inputs"]
    tok = np.asarray(inputs["batch0"], np.int64)
    tgt = np.asarray(inputs["batch1"], np.int64)
    jax.config.update("jax_enable_x64", True)
    try:
        p64 = {k: jnp.asarray(v, jnp.float64) for k, v in params.items()}
        ref, grads = jax.value_and_grad(loss)(p64, tok, tgt)
    finally:
        jax.config.update("jax_enable_x64", False)
    assert report.losses[0] == pytest.approx(float(ref), rel=2e-5, abs=1e-6)
    for k, g in grads.items():
        assert report.raw["grad_norm"][f"params.{k}"] == pytest.approx(
            float(jnp.linalg.norm(g)), rel=1e-4, abs=1e-7), k
