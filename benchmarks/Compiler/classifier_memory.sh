#!/usr/bin/env bash
# The classifier (LM head + cross-entropy) with and without
# zb-fuse-cross-entropy (issue 38), in bfloat16 on the CUDA target: a GPT
# with GPT-2 124M's width and vocabulary (examples/gpt/make_model.py: d 768,
# 12 heads, vocabulary 50257, T tokens, one sequence per microbatch) but
# LAYERS layers (default 2: the classifier is what differs, and compiling
# 12 layers for the GPU takes minutes), 1 stage, --precision bf16,
# --target cuda --gpu-report. Prints, per microbatch: M_B (plan.json: what
# F keeps for B), and the kernel report's kernels and bytes of F and B
# (the roofline's bytes read + written, GEMMs included) and its predicted
# T_F and T_B on an H100.
#
# Usage: benchmarks/Compiler/classifier_memory.sh [BUILD_DIR] [LAYERS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
layers="${2:-2}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
printf '| T | cross-entropy | M_B (MB) | F kernels | F bytes (MB) | B kernels | B bytes (MB) | T_F (ms) | T_B (ms) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for seq in 256 1024; do
  python3 "$root/examples/gpt/make_model.py" --layers "$layers" --dim 768 \
    --heads 12 --vocab 50257 --seq "$seq" --batch 1 --dtype f32 > "$tmp/gpt.mlir"
  for fuse in plain fused; do
    flag=true; [[ $fuse == plain ]] && flag=false
    "$build/bin/zb-compile" "$tmp/gpt.mlir" --stages 1 --microbatches 1 \
      --precision bf16 --target cuda --gpu-report --fuse-cross-entropy=$flag \
      --quiet -o "$tmp/plan-$fuse" > "$tmp/report.txt" 2>&1
    mb=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['stages'][0]['m_b'])" \
      "$tmp/plan-$fuse/plan.json")
    awk -v seq="$seq" -v fuse="$fuse" -v mb="$mb" '
      / T_F = / { tf = $5; fk = substr($9, 2); fb = $13 }
      / T_B = / { tb = $5; bk = substr($9, 2); bb = $13 }
      END { printf "| %d | %s | %.1f | %d | %.1f | %d | %.1f | %.3f | %.3f |\n",
                   seq, fuse, mb / 1e6, fk, fb / 1e6, bk, bb / 1e6, tf, tb }' \
      "$tmp/report.txt"
  done
done
