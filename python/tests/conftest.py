"""Shared helpers of the zb Python tests (run by ctest ZBPython)."""
import os
import subprocess

import pytest

import zb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def text_batch(sequences, seq, path=None):
    """The tokens and targets [sequences, seq] of zb-run's first step (seed
    0) on the text at `path` (default examples/gpt/shakespeare.txt):
    sequence j starts at splitmix64(j) mod (n - seq) (docs/plan-json.md:
    splitmix64(seed * G + k * 1000003 + j) with seed 0 and step k = 0), the
    targets are the next bytes; written out independently of zb-run's
    C++."""
    import numpy as np
    text = open(path or os.path.join(EXAMPLES, "gpt", "shakespeare.txt"),
                "rb").read()
    mask, golden = (1 << 64) - 1, 0x9E3779B97F4A7C15

    def splitmix64(x):
        z = (x + golden) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    offs = [splitmix64(j & mask) % (len(text) - seq)
            for j in range(sequences)]
    tok = np.asarray([list(text[o:o + seq]) for o in offs], np.int64)
    tgt = np.asarray([list(text[o + 1:o + seq + 1]) for o in offs], np.int64)
    return tok, tgt


def jax_value_and_grad_f64(loss, params, *args):
    """loss(params, *args) and its gradients in float64 (JAX with x64 on for
    the call, off again after): the independent reference of the JAX
    tests."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    try:
        p64 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float64), params)
        return jax.value_and_grad(loss)(p64, *args)
    finally:
        jax.config.update("jax_enable_x64", False)


def tool(name):
    return zb._tool(name)


def run_tool(*args, check=True):
    proc = subprocess.run([str(a) for a in args], capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args}: {proc.stderr}")
    return proc


@pytest.fixture
def mpi_env(monkeypatch):
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    monkeypatch.setenv("OMPI_MCA_rmaps_base_oversubscribe", "1")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
