#!/usr/bin/env bash
# Installs missing system packages, configures and builds zb into ./build.
# Usage: scripts/build.sh [extra ninja targets...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
"$root/scripts/install-deps.sh"

BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
JOBS="${ZB_JOBS:-$(nproc)}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  echo "[zb] configuring $BUILD_DIR"
  # The Python package (python/) builds when its venv can be made (PyPI).
  python_args=()
  if py=$("$root/scripts/python-venv.sh" "$BUILD_DIR/python-venv"); then
    python_args=(-DZB_PYTHON_EXECUTABLE="$py")
  else
    echo "[zb] no Python venv (PyPI unreachable?): building without the zb Python package"
  fi
  # ccache, with paths under the source root hashed relative to the build
  # directory: the wheel build of the Python package (ctest ZBPythonInstall,
  # a sibling directory) then reuses this build's objects.
  launcher=()
  if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache"
              -DCMAKE_C_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache")
  fi
  cmake -G Ninja -S "$root" -B "$BUILD_DIR" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld "${python_args[@]}"
fi
echo "[zb] building ($JOBS jobs)"
ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
