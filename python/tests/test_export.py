"""zb.export.jax_to_stablehlo: a JAX model (embedding + projection,
cross-entropy over bytes) exported, compiled on 2 ranks and evaluated by
zb-run on a text batch matches JAX's own loss and gradient norms on the same
batch (JAX in float64 as the reference; the batch recomputed from the
text rule and checked against zb-run --dump-batch)."""
import json
import os

import numpy as np
import pytest

import zb
from conftest import EXAMPLES, jax_value_and_grad_f64, text_batch

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", False)
import jax.numpy as jnp  # noqa: E402

V, D, B, T = 256, 8, 4, 8


def loss_fn(params, tokens, targets):
    h = jnp.tanh(params["emb"][tokens])                 # [B, T, D]
    logits = h @ params["w"] + params["b"]              # [B, T, V]
    logp = jax.nn.log_softmax(logits, axis=-1)
    onehot = jax.nn.one_hot(targets, V, dtype=logp.dtype)
    return -jnp.mean(jnp.sum(onehot * logp, axis=-1))


def test_jax_export_compile_run_matches_jax(tmp_path, mpi_env):
    rng = np.random.default_rng(0)
    params = {"emb": rng.normal(0, 0.5, (V, D)).astype(np.float32),
              "w": rng.normal(0, 0.5, (D, V)).astype(np.float32),
              "b": np.zeros(V, np.float32)}
    tokens = np.zeros((B, T), np.int32)
    path = zb.export.jax_to_stablehlo(loss_fn, params, tokens, tokens,
                                      path=str(tmp_path / "m.mlir"))
    plan = zb.compile(path, tmp_path / "plan", stages=2, microbatches=2)
    dump = tmp_path / "batch.json"
    report = zb.run(plan, steps=1, data=os.path.join(EXAMPLES, "gpt",
                                                     "shakespeare.txt"),
                    extra_args=["--report-gradients", "--dump-batch",
                                str(dump)])
    with open(dump) as f:
        inputs = json.load(f)["inputs"]
    # Rank 0 feeds the tokens (the targets go to the last stage's rank); the
    # traced batch (B sequences) is one microbatch: a step is 2 x B. The
    # targets are the next bytes of the text (docs/plan-json.md).
    tok = np.asarray(inputs["batch0"], np.int64).reshape(-1, T)
    assert tok.shape == (2 * B, T)
    # The first step's sequences, written out independently of zb-run's
    # C++ (docs/plan-json.md; seed 0).
    expect, tgt = text_batch(2 * B, T)
    np.testing.assert_array_equal(tok, expect)
    ref, grads = jax_value_and_grad_f64(loss_fn, params, tok, tgt)
    assert report.losses == [pytest.approx(float(ref), rel=1e-5)]
    norms = report.raw["grad_norm"]
    assert sorted(norms) == ["params.b", "params.emb", "params.w"]
    for k, g in grads.items():
        assert norms[f"params.{k}"] == pytest.approx(
            float(jnp.linalg.norm(g)), rel=1e-4)


def test_custom_form_text_converts(tmp_path):
    """jax's as_text() prints the custom op form: zb-translate says how to
    convert it, `python3 -m zb.export to-generic` does, and the result
    compiles."""
    import subprocess
    import sys

    from conftest import tool

    def loss(p, x):
        return jnp.mean(jnp.tanh(x @ p["w"]))

    p = {"w": np.ones((4, 3), np.float32)}
    x = np.ones((2, 4), np.float32)
    custom = tmp_path / "custom.mlir"
    custom.write_text(jax.jit(loss).lower(p, x).as_text())
    r = subprocess.run([tool("zb-translate"), "--import-stablehlo",
                        str(custom)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "custom op form" in r.stderr and "to-generic" in r.stderr
    generic = tmp_path / "generic.mlir"
    subprocess.run([sys.executable, "-m", "zb.export", "to-generic",
                    str(custom), str(generic)], check=True)
    plan = zb.compile(generic, tmp_path / "plan", stages=1, microbatches=1,
                      data_args=["arg1"])
    assert [q["name"] for q in plan.plan["params"]] == ["arg0"]


def test_unused_parameters_are_kept(tmp_path):
    """keep_unused: a parameter the loss does not use stays a parameter."""
    def loss(p, tokens, targets):
        return jnp.mean(p["used"][tokens]) + 0.0 * jnp.mean(
            p["used"][targets])

    rng = np.random.default_rng(0)
    params = {"used": rng.normal(size=(V, 4)).astype(np.float32),
              "unused": rng.normal(size=(3,)).astype(np.float32)}
    t = np.zeros((2, T), np.int32)
    path = zb.export.jax_to_stablehlo(loss, params, t, t,
                                      path=str(tmp_path / "m.mlir"))
    plan = zb.compile(path, tmp_path / "plan", stages=1, microbatches=1)
    assert sorted(q["name"] for q in plan.plan["params"]) == [
        "params.unused", "params.used"]


def test_serialized_jax_export_converts(tmp_path, mpi_env):
    """jax.export.export(jax.jit(f))(...).serialize() bytes: zb-translate
    names them and the conversion command; `python3 -m zb.export
    to-generic IN OUT --params P.npz` converts them (arguments named by
    their pytree path, the weights from the .npz) and the result compiles
    and matches JAX's loss and gradient norms on zb-run's text batch."""
    import subprocess
    import sys

    from conftest import tool
    export = pytest.importorskip("jax.export")
    pytest.importorskip("flatbuffers")

    def loss(params, tokens, targets):
        logp = jax.nn.log_softmax(jnp.tanh(params["emb"][tokens])
                                  @ params["w"], axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None],
                                             axis=-1))

    rng = np.random.default_rng(0)
    params = {"emb": rng.normal(0, 0.5, (V, D)).astype(np.float32),
              "w": rng.normal(0, 0.5, (D, V)).astype(np.float32)}
    t = np.zeros((B, T), np.int32)
    blob = tmp_path / "model.jax-export"
    blob.write_bytes(export.export(jax.jit(loss))(params, t, t).serialize())
    r = subprocess.run([tool("zb-translate"), "--import-stablehlo",
                        str(blob)], capture_output=True, text=True)
    assert r.returncode != 0
    assert "serialized jax.export artifact" in r.stderr
    assert "python3 -m zb.export to-generic" in r.stderr
    np.savez(tmp_path / "params.npz",
             **{f"params.{k}": v for k, v in params.items()})
    generic = tmp_path / "generic.mlir"
    subprocess.run([sys.executable, "-m", "zb.export", "to-generic",
                    str(blob), str(generic), "--params",
                    str(tmp_path / "params.npz")], check=True)
    plan = zb.compile(generic, tmp_path / "plan", stages=1, microbatches=1)
    assert sorted(q["name"] for q in plan.plan["params"]) == [
        "params.emb", "params.w"]
    dump = tmp_path / "batch.json"
    report = zb.run(plan, steps=1, data=os.path.join(EXAMPLES, "gpt",
                                                     "shakespeare.txt"),
                    extra_args=["--report-gradients", "--dump-batch",
                                str(dump)])
    inputs = json.load(open(dump))["inputs"]
    tok = np.asarray(inputs["batch0"], np.int64).reshape(-1, T)
    tgt = np.asarray(inputs["batch1"], np.int64).reshape(-1, T)
    ref, grads = jax_value_and_grad_f64(loss, params, tok, tgt)
    assert report.losses == [pytest.approx(float(ref), rel=1e-5)]
    for k, g in grads.items():
        assert report.raw["grad_norm"][f"params.{k}"] == pytest.approx(
            float(jnp.linalg.norm(g)), rel=1e-5)
