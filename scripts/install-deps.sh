#!/usr/bin/env bash
# Installs the system packages zb needs (Debian 12 + LLVM/MLIR 22), only those that are missing.
# Idempotent and non-interactive. See docs/toolchain.md for why each package is here.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config ccache
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22
  coinor-libcbc-dev libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev libtomlplusplus-dev
  python3-dev python3-venv python3-numpy python3-onnx python3-psutil libxxhash0
)
# Optional extras (exporting fixtures): ZB_WITH_TORCH=1 installs Debian's torch 1.13.
if [[ "${ZB_WITH_TORCH:-0}" == 1 ]]; then PKGS+=(python3-torch); fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "[zb] all system packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "[zb] installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
