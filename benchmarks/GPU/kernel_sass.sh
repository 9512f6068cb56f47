#!/usr/bin/env bash
# SASS instructions per kernel of `zb-compile --target cuda` (sm_90), read
# from the fatbin in rank0.o through cuobjdump -sass: no GPU needed. For the
# MLP and GPT-2 examples on one stage: the kernel count, the instructions in
# all kernels, the median per kernel, the MLP's bias-add kernel (one element
# per thread: its instructions per element), and how many kernels divide in
# their index arithmetic (a 64-bit division routine or multiply-high, a
# 32-bit division by a run-time value; test/Target/CUDA/Inputs/sass_stats.py).
#
# usage: benchmarks/GPU/kernel_sass.sh [BUILD_DIR]
# cuobjdump: on PATH, or ZB_CUOBJDUMP=PATH (PyPI: nvidia-cuda-cuobjdump).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
cuobjdump=${ZB_CUOBJDUMP:-$(command -v cuobjdump || true)}
if [[ -z "$cuobjdump" ]]; then
  echo "kernel_sass.sh: no cuobjdump (pip install nvidia-cuda-cuobjdump, then ZB_CUOBJDUMP=.../nvidia/cu13/bin/cuobjdump)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for model in mlp/mlp.onnx gpt/gpt2.onnx; do
  name=$(basename "$model" .onnx)
  "$build/bin/zb-compile" "$root/examples/$model" --stages 1 --microbatches 1 \
    --target cuda --keep-intermediates -o "$tmp/$name" --quiet
  python3 "$root/test/Target/CUDA/Inputs/sass_stats.py" --cuobjdump "$cuobjdump" \
    "$tmp/$name/rank0.o" > "$tmp/$name.txt"
done
python3 - "$tmp" <<'PY'
import re, statistics, sys
print("| model | kernels | instructions | median per kernel | bias-add kernel | kernels with integer division |")
print("|---|---|---|---|---|---|")
for name in ("mlp", "gpt2"):
    rows = {}
    for line in open(f"{sys.argv[1]}/{name}.txt"):
        m = re.match(r"(\S+) instructions=(\d+) div64=(\d+) mulhi64=(\d+) div32=(\d+)", line)
        if m:
            rows[m.group(1)] = [int(x) for x in m.groups()[1:]]
    counts = [r[0] for r in rows.values()]
    bias = rows["stage0_forward_kernel"][0] if name == "mlp" else "-"
    divides = sum(1 for r in rows.values() if sum(r[1:]))
    print(f"| {name} | {len(rows)} | {sum(counts)} | {statistics.median(counts):g} | {bias} | {divides} |")
PY
