#!/usr/bin/env bash
# Benchmark (issue 30): what the host costs per training step of a
# `--target cuda` plan, with and without CUDA graphs (zb-run --cuda-graphs),
# measured without a GPU. Each model is
# compiled with --target cuda for 1 stage and run by `zb-run --backend cuda`
# on the host-memory stand-in with no-op kernels (ZB_FAKE_CUDA_NOOP_KERNELS=1,
# unittests/Runtime/FakeKernels.cpp: every launch and GEMM is checked and
# does nothing), for 3 and for 6 steps; the steady-state counts per step are
# the 6-step run's counters (zb-run's JSON report, "cuda") minus the 3-step
# run's, over 3 (cuLaunchKernel: launches the host made; a replayed graph's
# kernels are not among them; GEMMs asked: zbrt's GEMM calls, replayed or
# not), and the host time per step is the 6-step run's mean step time (steps
# 2-6; the stand-in's own checks included). Models:
#  - the main job's examples/gpt/gpt2.onnx (8 microbatches), and
#  - the 8x512 GPT of issue 30 (examples/gpt/make_model.py --layers 8 --dim
#    512 --heads 8 --seq 128 --batch 8; 8 microbatches).
# Prints a Markdown table.
# usage: benchmarks/GPU/host_overhead.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
fake="$build/lib/libzb_fake_cuda.so"
[[ -f "$fake" ]] || fake="$build/unittests/Runtime/libzb_fake_cuda.so"
if [[ ! -f "$fake" ]]; then
  echo "host_overhead.sh: no libzb_fake_cuda.so under $build (build zb_fake_cuda)" >&2
  exit 1
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
data="$root/examples/gpt/shakespeare.txt"

run() { # plan steps graphs out
  env ZBRT_CUDA_DRIVER="$fake" ZBRT_CUBLAS="$fake" ZBRT_NCCL="$fake" \
    ZB_FAKE_CUDA_NOOP_KERNELS=1 "$build/bin/zb-run" "$1" --backend cuda \
    --steps "$2" --cuda-graphs "$3" --data "$data" --report-format json \
    > "$4" 2> "$4.err" || { cat "$4.err" >&2; exit 1; }
}

row() { # name model
  local name=$1 model=$2 plan="$tmp/$1"
  "$build/bin/zb-compile" "$model" --target cuda --stages 1 \
    --microbatches 8 --quiet -o "$plan"
  for graphs in off on; do
    run "$plan" 3 "$graphs" "$tmp/$name-3.json"
    run "$plan" 6 "$graphs" "$tmp/$name-6.json"
    /usr/bin/env python3 - "$name" "$graphs" "$tmp/$name-3.json" \
        "$tmp/$name-6.json" <<'PY'
import json, sys
name, graphs = sys.argv[1], sys.argv[2]
short, long_ = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
a, b = short["cuda"][0], long_["cuda"][0]
per = lambda k: (b[k] - a[k]) / 3
step_us = long_["mean_step_time_ms"] * 1000
print(f"| {name} | {graphs} | {per('kernel_launches'):.0f} | "
      f"{per('gemms'):.0f} | {per('graph_launches'):.0f} | "
      f"{per('driver_calls'):.0f} | {per('host_synchronizations'):.0f} | "
      f"{step_us:.0f} |")
PY
  done
}

echo "| model (1 stage, 8 microbatches) | CUDA graphs | cuLaunchKernel / step | GEMMs asked / step | cuGraphLaunch / step | driver calls / step | host syncs / step | host us / step |"
echo "|---|---|---|---|---|---|---|---|"
row gpt2.onnx "$root/examples/gpt/gpt2.onnx"
if /usr/bin/env python3 "$root/examples/gpt/make_model.py" --layers 8 --dim 512 \
    --heads 8 --seq 128 --batch 8 > "$tmp/gpt-8x512.mlir" 2> "$tmp/make.err"; then
  row "GPT 8x512 (issue 30)" "$tmp/gpt-8x512.mlir"
else
  echo "| GPT 8x512 (issue 30) | skipped: make_model.py failed ($(tail -1 "$tmp/make.err")) | | | | | | |"
fi
