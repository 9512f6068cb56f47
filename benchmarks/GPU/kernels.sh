#!/usr/bin/env bash
# Benchmark (issue 14): the CUDA target's kernels per training step, fused
# (zb-fuse-elementwise, the default) vs unfused, the step's compute time
# predicted by zb-compile --gpu-report (roofline on an H100 SXM: 3.35 TB/s,
# 67 TFLOP/s fp32; GEMMs at the fp32 peak; and with 3 us per launch, the
# report's default) and the compile time, for
#  - the demo GPT (examples/gpt/gpt2.onnx: 4 blocks, d 64, 4 ranks, 8
#    microbatches, zb-auto), and
#  - a 24-layer GPT-2 style model (d 1024, 16 heads, sequence 1024, vocab
#    50304; test/Dialect/ZB/Inputs/gen_gpt2.py) at 8 stages, 8 microbatches
#    (skipped with --small).
# Compiles with --target cuda-emu (the same kernels as --target cuda, no
# toolkit needed; the fatbin step is not timed). Prints a Markdown table.
# usage: benchmarks/GPU/kernels.sh [--small] [build dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
small=0
if [[ "${1:-}" == "--small" ]]; then small=1; shift; fi
build="${1:-$root/build}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1

row() { # name model stages microbatches schedule fuse
  local name=$1 model=$2 p=$3 m=$4 sched=$5 fuse=$6 out="$tmp/$1-$6"
  local s e
  s=$(date +%s.%N)
  "$build/bin/zb-compile" "$model" --stages "$p" --microbatches "$m" \
    --schedule "$sched" --target cuda-emu --gpu-report \
    --fuse-elementwise="$fuse" --opt-level 0 -o "$out" --quiet > /dev/null
  e=$(date +%s.%N)
  /usr/bin/python3 - "$out/gpu_report.json" "$name" "$fuse" \
      "$(echo "$e - $s" | bc)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
steps = [k["step"] for k in r["ranks"]]
kinds = {}
for rank in r["ranks"]:
    for k in rank["kernels"]:
        n = k["launches"] * k["calls_per_step"]
        kinds[k["kind"]] = kinds.get(k["kind"], 0) + n
busiest = max(s["roofline_ms"] for s in steps)
busiest_launch = max(s["time_ms"] for s in steps)
print(f"| {sys.argv[2]} | {'fused' if sys.argv[3] == 'true' else 'unfused'} "
      f"| {sum(s['kernel_launches'] for s in steps)} "
      f"| {kinds.get('elementwise', 0)} / {kinds.get('block-reduction', 0)} / "
      f"{kinds.get('column-reduction', 0)} / {kinds.get('serial-reduction', 0)} "
      f"| {sum(s['gemms'] for s in steps)} "
      f"| {sum(s['bytes'] for s in steps) / 1e9:.3f} "
      f"| {busiest:.3f} | {busiest_launch:.3f} | {float(sys.argv[4]):.1f} |")
PY
}

echo "| model | elementwise fusion | kernel launches per step (all ranks) | elementwise / block (row) / column / thread-per-output reductions | GEMMs per step | bytes per step (GB) | busiest rank's compute per step, H100 roofline (ms) | the same + 3 us per launch (ms) | compile time (s) |"
echo "|---|---|---|---|---|---|---|---|---|"
for fuse in true false; do
  row "demo GPT (4 ranks, 8 mb)" "$root/examples/gpt/gpt2.onnx" 4 8 zb-auto $fuse
done
if [[ $small == 0 ]]; then
  /usr/bin/python3 "$root/test/Dialect/ZB/Inputs/gen_gpt2.py" --layers 24 \
    --batch 1 --seq 1024 --vocab 50304 --dim 1024 --heads 16 --dtype f32 \
    > "$tmp/gpt24.mlir"
  row "GPT 24 x d1024 (8 ranks, 8 mb)" "$tmp/gpt24.mlir" 8 8 zb-h1 true
fi
