#!/usr/bin/env bash
# The fused attention kernels (zb-gpu-attention-kernels, issue 38)
# against the decomposed attention (--gpu-attention-kernel=false), in
# bfloat16 on the CUDA target: a GPT with GPT-2 124M's width (d 768, 12
# heads of 64, vocabulary 50257; examples/gpt/make_model.py), LAYERS layers
# (default 2), T tokens, one sequence per microbatch, 1 stage, --precision
# bf16, --target cuda --gpu-report. Prints, per microbatch, the kernel
# report's F and B: kernels and GEMMs, bytes (read + written, GEMMs
# included) and the predicted T_F, T_B on an H100 (roofline + 3 us per
# launch), with the fused attention kernels' part of each. The roofline
# times the kernels at the bfloat16 tensor cores' peak or at memory
# bandwidth, which these first kernels (operands straight from global
# memory, no shared memory) do not reach: the measured time is for a GPU
# run (scripts/gpu-check.sh).
#
# Usage: benchmarks/Compiler/attention_kernel.sh [BUILD_DIR] [LAYERS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
layers="${2:-2}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
printf '| T | attention | F kernels | F bytes (MB) | T_F (ms) | of it attention (ms) | B kernels | B bytes (MB) | T_B (ms) | of it attention (ms) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for seq in 256 1024 2048; do
  python3 "$root/examples/gpt/make_model.py" --layers "$layers" --dim 768 \
    --heads 12 --vocab 50257 --seq "$seq" --batch 1 --dtype f32 > "$tmp/gpt.mlir"
  for kind in decomposed kernel; do
    flag=true; [[ $kind == decomposed ]] && flag=false
    "$build/bin/zb-compile" "$tmp/gpt.mlir" --stages 1 --microbatches 1 \
      --precision bf16 --target cuda --gpu-report --gpu-attention-kernel=$flag \
      --quiet -o "$tmp/plan-$kind" > "$tmp/report.txt" 2>&1
    python3 - "$tmp/plan-$kind/gpu_report.json" "$seq" "$kind" <<'PY'
import json, sys
report, seq, kind = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
def attention(pass_):
    t = sum(k["time_ms"] * k["launches"] for k in report["ranks"][0]["kernels"]
            if k["pass"] == pass_ and k["kind"] == "attention")
    return f"{t:.3f}" if t else "-"
passes = {p["pass"]: p for p in report["ranks"][0]["passes"]}
f, b = passes["F"], passes["B"]
print(f"| {seq} | {kind} | {f['kernels'] + f['gemms']} | {f['bytes'] / 1e6:.1f} | "
      f"{f['time_ms']:.3f} | {attention('F')} | {b['kernels'] + b['gemms']} | "
      f"{b['bytes'] / 1e6:.1f} | {b['time_ms']:.3f} | {attention('B')} |")
PY
  done
done
