#!/usr/bin/env bash
# The attention kernels reading and writing the token-major projections in
# place (--gpu-attention-token-major, the default; issue 38) against head
# views copied to [B, H, T, D] (=false) on the CUDA target: a GPT with
# GPT-2 124M's width (d 768, 12 heads of 64, vocabulary 50257;
# examples/gpt/make_model.py), LAYERS layers (default 2), BATCH sequences
# of 1024 tokens per microbatch (default 4), 1 stage, --precision bf16,
# --target cuda --gpu-report. Prints, per microbatch, the kernel report's
# kernels and GEMMs, bytes (read + written, GEMMs included) and predicted
# time on an H100 (roofline + 3 us per launch) of F and of B (W is the
# same either way), and M_B (plan.json: the activation bytes a microbatch
# keeps from F to B).
#
# Usage: benchmarks/Compiler/attention_layout.sh [BUILD_DIR] [LAYERS] [BATCH]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
layers="${2:-2}"
batch="${3:-4}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
python3 "$root/examples/gpt/make_model.py" --layers "$layers" --dim 768 \
  --heads 12 --vocab 50257 --seq 1024 --batch "$batch" > "$tmp/gpt.mlir"
printf '| heads | F kernels | F bytes (MB) | T_F (ms) | B kernels | B bytes (MB) | T_B (ms) | M_B (MB) |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for layout in copied token-major; do
  flag=true; [[ $layout == copied ]] && flag=false
  "$build/bin/zb-compile" "$tmp/gpt.mlir" --stages 1 --microbatches 1 \
    --precision bf16 --target cuda --gpu-report \
    --gpu-attention-token-major=$flag --quiet -o "$tmp/plan-$layout" \
    > "$tmp/report.txt" 2>&1
  python3 - "$tmp/plan-$layout" "$layout" <<'PY'
import json, sys
plan_dir, layout = sys.argv[1], sys.argv[2]
report = json.load(open(f"{plan_dir}/gpu_report.json"))
plan = json.load(open(f"{plan_dir}/plan.json"))
passes = {p["pass"]: p for p in report["ranks"][0]["passes"]}
row = [layout]
for name in ("F", "B"):
    p = passes[name]
    row += [str(p["kernels"] + p["gemms"]), f"{p['bytes'] / 1e6:.1f}",
            f"{p['time_ms']:.3f}"]
row.append(f"{plan['stages'][0]['m_b'] / 1e6:.1f}")
print("| " + " | ".join(row) + " |")
PY
done
