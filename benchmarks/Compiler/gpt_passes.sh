#!/usr/bin/env bash
# Benchmark (issue 4): the compiler front half (zb-autodiff, zb-split-backward,
# zb-partition-stages, zb-schedule, zb-lower-pipeline) on a 24-layer GPT-2
# style model (d=1024, 16 heads, sequence 1024, vocab 50304) cut into 8
# stages (tied LM head: a copy in the first and the last stage), with the
# per-stage report. Prints wall time of 3 runs.
# usage: benchmarks/Compiler/gpt_passes.sh [build dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$root/test/Dialect/ZB/Inputs/gen_gpt2.py" --layers 24 --batch 1 \
  --seq 1024 --vocab 50304 --dim 1024 --heads 16 --dtype f32 > "$tmp/gpt.mlir"
opts='--zb-pipeline-parallel=num-stages=8 microbatches=24 schedule=zb-h1 target=h100'
"$build/bin/zb-opt" "$tmp/gpt.mlir" "$opts" --zb-report -o /dev/null
echo "| run | wall time (s) |"
echo "|---|---|"
for i in 1 2 3; do
  s=$(date +%s.%N)
  "$build/bin/zb-opt" "$tmp/gpt.mlir" "$opts" -o /dev/null
  e=$(date +%s.%N)
  printf "| %d | %.3f |\n" "$i" "$(echo "$e - $s" | bc)"
done
