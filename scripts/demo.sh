#!/usr/bin/env bash
# The main job: a GPT-2 style model written in PyTorch and exported to ONNX
# (examples/gpt/gpt2.onnx, made by examples/gpt/export_gpt2.py: byte vocabulary
# 256, 4 pre-LN transformer blocks, d 64, LM head tied to the token embedding,
# cross-entropy loss in the graph) compiled for 4 pipeline stages with the
# automatic zero-bubble schedule (zb-auto, 8 microbatches of 4 sequences of
# 32 bytes) and trained on 4 MPI ranks on the CPU with AdamW on the
# Shakespeare text shipped in examples/gpt. The tied embedding lives on the
# first and the last stage; their gradients are exchanged after the last W.
# Prints the losses, the predicted and the realized bubble rate, and writes
# the trace (Perfetto) and the schedule picture. Installs and builds what is
# missing first.
#
# Environment: ZB_BUILD_DIR (default build), ZB_DEMO_OUT (default out/gpt),
# ZB_DEMO_STEPS (default 200).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" zb-compile zb-run
BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
OUT="${ZB_DEMO_OUT:-$root/out/gpt}"
STEPS="${ZB_DEMO_STEPS:-200}"
export OPENBLAS_NUM_THREADS=1

mkdir -p "$OUT"
"$BUILD_DIR/bin/zb-compile" "$root/examples/gpt/gpt2.onnx" --stages 4 --microbatches 8 \
  --schedule zb-auto --optimizer adamw --lr 0.003 \
  --data "$root/examples/gpt/shakespeare.txt" -o "$OUT"
"$BUILD_DIR/bin/zb-run" "$OUT" --ranks 4 --steps "$STEPS" --print-every 10 \
  --trace "$OUT/trace.json"
echo "[zb] schedule picture: $OUT/schedule.svg   trace (Perfetto): $OUT/trace.json"
