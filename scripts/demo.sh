#!/usr/bin/env bash
# The main job: a GPT-2 style model (examples/gpt: byte vocabulary 256, 4
# transformer blocks, untied LM head) compiled for 4 pipeline stages with the
# automatic zero-bubble schedule (zb-auto) and trained on 4 MPI ranks on the
# CPU for 100 steps of AdamW on the Shakespeare text shipped in examples/gpt.
# Prints the losses, the predicted and the realized bubble rate, and writes
# the trace (Perfetto) and the schedule picture. Installs and builds what is
# missing first.
#
# Environment: ZB_BUILD_DIR (default build), ZB_DEMO_OUT (default out/gpt),
# ZB_DEMO_STEPS (default 100).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" zb-compile zb-run
BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
OUT="${ZB_DEMO_OUT:-$root/out/gpt}"
STEPS="${ZB_DEMO_STEPS:-100}"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
export OPENBLAS_NUM_THREADS=1

mkdir -p "$OUT"
"$PYTHON" "$root/examples/gpt/make_model.py" > "$OUT/gpt.mlir"
"$BUILD_DIR/bin/zb-compile" "$OUT/gpt.mlir" --stages 4 --microbatches 8 \
  --schedule zb-auto --optimizer adamw --lr 0.003 \
  --data "$root/examples/gpt/shakespeare.txt" -o "$OUT"
"$BUILD_DIR/bin/zb-run" "$OUT" --ranks 4 --steps "$STEPS" --print-every 10 \
  --trace "$OUT/trace.json"
echo "[zb] schedule picture: $OUT/schedule.svg   trace (Perfetto): $OUT/trace.json"
