#!/usr/bin/env bash
# The main job: compile the PyTorch-exported MLP (examples/mlp/mlp.onnx) for 2
# pipeline stages and 8 microbatches with the ZB-H1 schedule, then train it for
# 20 steps on 2 MPI ranks on the CPU with the embedded dataset
# (examples/mlp/data). Installs and builds what is missing first.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" zb-compile zb-run
BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
OUT="${ZB_DEMO_OUT:-$root/out/mlp}"
export OPENBLAS_NUM_THREADS=1

"$BUILD_DIR/bin/zb-compile" "$root/examples/mlp/mlp.onnx" \
  --stages 2 --microbatches 8 --schedule zb-h1 --lr 0.5 -o "$OUT"
"$BUILD_DIR/bin/zb-run" "$OUT" --ranks 2 --steps 20 --trace "$OUT/trace.json"
echo "[zb] schedule picture: $OUT/schedule.svg   trace (Perfetto): $OUT/trace.json"
