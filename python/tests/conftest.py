"""Shared helpers of the zb Python tests (run by ctest ZBPython)."""
import os
import subprocess

import pytest

import zb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


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
