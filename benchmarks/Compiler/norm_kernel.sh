#!/usr/bin/env bash
# The one-kernel layer norm (zb-gpu-norm-kernels, issue 38) against the
# decomposed norm (--gpu-norm-kernel=false) on the CUDA target: a GPT with
# GPT-2 124M's width (d 768, 12 heads of 64, vocabulary 50257;
# examples/gpt/make_model.py), LAYERS layers (default 2), BATCH sequences
# of 1024 tokens per microbatch (default 4), 1 stage, --target cuda
# --gpu-report, in float32 and with --precision bf16. Prints, per
# microbatch, the kernel report's F: kernels and GEMMs, bytes (read +
# written, GEMMs included), the predicted T_F on an H100 (roofline + 3 us
# per launch) and the norms' part of it. The norm's backward is decomposed
# either way (B is the same).
#
# Usage: benchmarks/Compiler/norm_kernel.sh [BUILD_DIR] [LAYERS] [BATCH]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
layers="${2:-2}"
batch="${3:-4}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
python3 "$root/examples/gpt/make_model.py" --layers "$layers" --dim 768 \
  --heads 12 --vocab 50257 --seq 1024 --batch "$batch" > "$tmp/gpt.mlir"
printf '| precision | norm | F kernels | F bytes (MB) | T_F (ms) | of it the norms (ms) |\n'
printf '|---|---|---|---|---|---|\n'
for precision in fp32 bf16; do
  for kind in decomposed kernel; do
    flag=true; [[ $kind == decomposed ]] && flag=false
    "$build/bin/zb-compile" "$tmp/gpt.mlir" --stages 1 --microbatches 1 \
      --precision "$precision" --target cuda --gpu-report \
      --gpu-norm-kernel=$flag --quiet -o "$tmp/plan-$kind" > "$tmp/report.txt" 2>&1
    python3 - "$tmp/plan-$kind/gpu_report.json" "$precision" "$kind" <<'PY'
import json, sys
report, precision, kind = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
norms = sum(k["time_ms"] * k["launches"] for k in report["ranks"][0]["kernels"]
            if k["pass"] == "F" and k["kind"] == "row-norm")
f = {p["pass"]: p for p in report["ranks"][0]["passes"]}["F"]
print(f"| {precision} | {kind} | {f['kernels'] + f['gemms']} | "
      f"{f['bytes'] / 1e6:.1f} | {f['time_ms']:.3f} | "
      f"{f'{norms:.3f}' if norms else '-'} |")
PY
  done
done
