#!/usr/bin/env bash
# `pip install ./python` in a fresh virtual environment, then the examples and
# a compile + run of the MLP with the installed package (ctest
# ZBPythonInstall). Usage: scripts/test-python-install.sh WORK_DIR [WHEEL_BUILD_DIR]
# WHEEL_BUILD_DIR (default WORK_DIR/wheel-build) is where CMake builds the
# wheel: ctest gives a sibling of the main build directory, so that ccache
# (scripts/build.sh) finds the main build's objects under the same relative
# paths and the wheel build compiles almost nothing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$1"
wheel_build="${2:-$work/wheel-build}"
rm -rf "$work" "$wheel_build" && mkdir -p "$work"
compilers=()
if command -v ccache > /dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache"
  export CMAKE_C_COMPILER_LAUNCHER="$CMAKE_CXX_COMPILER_LAUNCHER"
  # The main build's compilers by the same names (ccache hashes the name:
  # scikit-build-core would otherwise take Python's x86_64-linux-gnu-g++).
  cache="$(dirname "$work")/CMakeCache.txt"
  if [[ -f "$cache" ]]; then
    cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
    [[ -n "$cxx" ]] && export CXX="$cxx" &&
      compilers+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$cxx")
    [[ -n "$cc" ]] && export CC="$cc" &&
      compilers+=(--config-settings=cmake.define.CMAKE_C_COMPILER="$cc")
  fi
fi
/usr/bin/python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check pyparsing==3.1.4 \
  matplotlib==3.9.2 numpy==2.1.3
# The wheel builds in its own directory (not the developer's build/).
"$py" -m pip install -q --disable-pip-version-check \
  --config-settings=build-dir="$wheel_build" "${compilers[@]}" "$root/python"
cd "$work"
export MPLBACKEND=Agg OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
"$py" "$root/python/examples/figure3.py" "$work"
"$py" "$root/python/examples/memory_sweep.py" "$work"
"$py" - "$root" <<'PY'
import os, sys
import matplotlib.image as mpimg
import zb
root = sys.argv[1]
for png in ("figure3.png", "memory_sweep.png"):
    img = mpimg.imread(png)
    assert os.path.getsize(png) > 20000 and img.shape[1] > 600, png
plan = zb.compile(os.path.join(root, "examples/mlp/mlp.onnx"), "mlp-plan",
                  stages=2, microbatches=4, schedule="zb-h1")
report = zb.run(plan, steps=3, deterministic=True)
assert len(report.losses) == 3 and report.losses[2] < report.losses[0]
print("installed zb:", zb.__file__, "losses", report.losses)
PY
