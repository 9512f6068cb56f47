#!/usr/bin/env bash
# Creates (once) the virtual environment of the zb Python package's build and
# tests: Debian's /usr/bin/python3 (whose headers python3-dev provides) with
# nanobind, numpy, matplotlib, pytest, scikit-build-core and jax (with
# absl-py and flatbuffers, which jax.export needs) from PyPI, pinned, and
# NVIDIA's cuobjdump and nvdisasm wheels when PyPI has them.
# Never Debian's python3-numpy/torch in it (docs/toolchain.md). Prints the venv's
# python on stdout; exits non-zero (and prints nothing) when PyPI cannot be
# reached, so that the build goes on without the Python package.
# Usage: scripts/python-venv.sh VENV_DIR
set -euo pipefail
venv="$1"
stamp="$venv/.zb-requirements-4"
if [[ ! -f "$stamp" ]]; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check \
    nanobind==2.4.0 numpy==2.1.3 matplotlib==3.9.2 pyparsing==3.1.4 pytest==8.3.3 \
    scikit-build-core==0.10.7 "jax[cpu]==0.4.35" \
    absl-py==2.1.0 flatbuffers==24.3.25 >&2
  touch "$stamp"
fi
# NVIDIA's cuobjdump and nvdisasm (the CUDA toolkit here ships without them):
# test/Target/CUDA/kernel-sass.test reads the SASS of zb's kernels with them
# (no GPU needed). Optional: without them that test is unsupported.
tools_stamp="$venv/.zb-cuda-tools-1"
if [[ ! -f "$tools_stamp" ]]; then
  if "$venv/bin/pip" install -q --disable-pip-version-check \
      nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 >&2; then
    touch "$tools_stamp"
  else
    echo "python-venv.sh: no cuobjdump from PyPI (kernel-sass.test stays unsupported)" >&2
  fi
fi
echo "$venv/bin/python"
