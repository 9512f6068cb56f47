#!/usr/bin/env bash
# SASS instructions per kernel of `zb-compile --target cuda` (sm_90), read
# from the fatbin in rank0.o through cuobjdump -sass: no GPU needed. For the
# MLP and GPT-2 examples on one stage: the kernel count, the instructions in
# all kernels, the median per kernel, the median per element (a kernel with
# float4 accesses handles 4 elements per thread, the others 1), the MLP's
# bias-add kernel, the kernels with float4 (LDG/STG.E.128) accesses, and how
# many kernels divide in
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
print("| model | kernels | instructions | median per kernel | median per element | bias-add kernel | float4 kernels | kernels with integer division |")
print("|---|---|---|---|---|---|---|---|")
for name in ("mlp", "gpt2"):
    rows = {}
    for line in open(f"{sys.argv[1]}/{name}.txt"):
        m = re.match(r"(\S+) instructions=(\d+) div64=(\d+) mulhi64=(\d+) div32=(\d+) v128=(\d+)", line)
        if m:
            rows[m.group(1)] = [int(x) for x in m.groups()[1:]]
    counts = [r[0] for r in rows.values()]
    bias = rows["stage0_forward_kernel"][0] if name == "mlp" else "-"
    divides = sum(1 for r in rows.values() if sum(r[1:4]))
    per_element = [r[0] / (4 if r[4] else 1) for r in rows.values()]
    wide = sum(1 for r in rows.values() if r[4])
    print(f"| {name} | {len(rows)} | {sum(counts)} | {statistics.median(counts):g} | "
          f"{statistics.median(per_element):g} | {bias} | {wide} | {divides} |")
PY
