#!/usr/bin/env bash
# Activation memory of attention with and without zb-fuse-attention (issue
# 38): GPT-2 124M's shape (examples/gpt/make_model.py: 12 layers, d 768, 12
# heads, vocabulary 50257, one sequence of T tokens per microbatch) through
# the front half (zb-fuse-attention, zb-autodiff, zb-split-backward,
# zb-partition-stages into 4 stages, h100 cost model: 2 bytes per float as
# in bfloat16 training), M_B and the predicted T_F/T_B per microbatch from
# zb-report. M_B is what a stage keeps from F to B for one microbatch: the
# unfused attention keeps its T x T probabilities per head, the fused one
# its output and a T vector per head (FlashAttention's saved lse).
#
# Usage: benchmarks/Compiler/attention_memory.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
printf '| T | attention | M_B per stage (MB) | M_B total (MB) | T_F total (ms) | T_B total (ms) |\n'
printf '|---|---|---|---|---|---|\n'
for seq in 256 1024 2048; do
  python3 "$root/examples/gpt/make_model.py" --layers 12 --dim 768 --heads 12 \
    --vocab 50257 --seq "$seq" --batch 1 --dtype f32 > "$tmp/gpt.mlir"
  for fuse in unfused fused; do
    passes=()
    [[ $fuse == fused ]] && passes+=(-zb-fuse-attention)
    "$build/bin/zb-opt" "$tmp/gpt.mlir" "${passes[@]}" -zb-autodiff \
      -zb-split-backward '-zb-partition-stages=num-stages=4 target=h100' \
      -zb-report -o /dev/null 2> "$tmp/report.txt"
    awk -v seq="$seq" -v fuse="$fuse" '
      /^stage/ { for (i = 1; i <= NF; ++i) if ($i ~ /^M_B=/) {
                   split($i, a, "="); mb = a[2] / 1e6; total += mb
                   per = per (per == "" ? "" : ", ") sprintf("%.0f", mb) } }
      /^total:/ { for (i = 1; i <= NF; ++i) {
                    if ($i ~ /^T_F=/) { split($i, a, "="); tf = a[2] }
                    if ($i ~ /^T_B=/) { split($i, a, "="); tb = a[2] } } }
      END { printf "| %d | %s | %s | %.0f | %.3f | %.3f |\n", seq, fuse, per, total, tf, tb }' \
      "$tmp/report.txt"
  done
done
