#!/usr/bin/env bash
# --precision bf16 against float32 on the demo GPT (examples/gpt/gpt2.onnx,
# the main job's model): the same plan (2 stages, 1F1B, 4 microbatches of 4
# sequences of 32 bytes, AdamW lr 3e-3, the shipped Shakespeare text) in
# both precisions, trained STEPS steps from the same initial weights and
# batches. Prints the loss curves side by side (mean over windows of 25
# steps, their difference relative to float32), M_B and M_W of each stage
# from plan.json (bytes per microbatch), the peak heap of each rank and the
# mean step time.
#
# Usage: benchmarks/Precision/bf16_curve.sh [BUILD_DIR] [WORK_DIR] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
work="${2:-$root/out/bf16-curve}"
steps="${3:-300}"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
for precision in fp32 bf16; do
  "$build/bin/zb-compile" "$root/examples/gpt/gpt2.onnx" --stages 2 \
    --microbatches 4 --schedule 1f1b --optimizer adamw --lr 0.003 \
    --precision "$precision" -o "$work/$precision" --quiet
  "$build/bin/zb-run" "$work/$precision" --ranks 2 --steps "$steps" \
    --data "$root/examples/gpt/shakespeare.txt" --report-format json \
    > "$work/$precision.json"
done
python3 - "$work" "$steps" <<'PY'
import json, sys
work, steps = sys.argv[1], int(sys.argv[2])
runs = {p: json.load(open(f"{work}/{p}.json")) for p in ("fp32", "bf16")}
plans = {p: json.load(open(f"{work}/{p}/plan.json")) for p in ("fp32", "bf16")}
def losses(r):
    return [s["loss"] for s in r["steps"]]
f, b = losses(runs["fp32"]), losses(runs["bf16"])
print("| steps | float32 loss | bfloat16 loss | difference |")
print("|---|---|---|---|")
w = 25
for i in range(0, steps, w):
    mf = sum(f[i:i + w]) / len(f[i:i + w]); mb = sum(b[i:i + w]) / len(b[i:i + w])
    print(f"| {i + 1}-{min(i + w, steps)} | {mf:.4f} | {mb:.4f} | {100 * (mb - mf) / mf:+.2f} % |")
print()
print("| | float32 | bfloat16 | ratio |")
print("|---|---|---|---|")
for s in range(len(plans["fp32"]["stages"])):
    for key, name in (("m_b", "M_B"), ("m_w", "M_W")):
        x, y = plans["fp32"]["stages"][s][key], plans["bf16"]["stages"][s][key]
        print(f"| stage {s} {name} (bytes per microbatch) | {x:.0f} | {y:.0f} | {y / x:.2f} |")
for r, (x, y) in enumerate(zip(runs["fp32"]["peak_heap_bytes"], runs["bf16"]["peak_heap_bytes"])):
    print(f"| rank {r} peak heap (bytes) | {x} | {y} | {y / x:.2f} |")
tf, tb = runs["fp32"]["mean_step_time_ms"], runs["bf16"]["mean_step_time_ms"]
print(f"| mean step time (ms, steps 2-{steps}) | {tf:.2f} | {tb:.2f} | {tb / tf:.2f} |")
PY
