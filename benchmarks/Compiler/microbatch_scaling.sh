#!/usr/bin/env bash
# Compile time, compiler memory and training memory against the microbatch
# count (issue 18: "compile time stays near linear in microbatches"). The
# GPT-2 example (examples/gpt/gpt2.onnx), 2 ranks, ZB-H1, M microbatches:
# zb-compile wall time and peak RSS (/usr/bin/time), and for M <= 64 the
# peak heap per rank of a 3-step zb-run (memory pool, bytes) next to the
# schedule's predicted peak activation memory (schedule.json peak_memory).
# Prints a markdown table.
# usage: benchmarks/Compiler/microbatch_scaling.sh [build dir] [M ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(4 16 64 128 256 512)
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
model="$root/examples/gpt/gpt2.onnx"
text="$root/examples/gpt/shakespeare.txt"
echo "| microbatches | zb-compile wall | zb-compile peak RSS | peak heap per rank (zb-run) | predicted peak activations per rank |"
echo "|---|---|---|---|---|"
for m in "${counts[@]}"; do
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$build/bin/zb-compile" "$model" \
    --stages 2 --microbatches "$m" --schedule zb-h1 --quiet -j 2 -o "$tmp/m$m"
  read -r wall rss < "$tmp/time"
  heap="-"
  if [ "$m" -le 64 ]; then
    OPENBLAS_NUM_THREADS=1 "$build/bin/zb-run" "$tmp/m$m" --ranks 2 --steps 3 \
      --data "$text" --report-format json > "$tmp/m$m.json" 2>/dev/null
    heap=$(/usr/bin/python3 -c "import json,sys; print(' / '.join('%.1f MB' % (b / 1e6) for b in json.load(open(sys.argv[1]))['peak_heap_bytes']))" "$tmp/m$m.json")
  fi
  predicted=$(/usr/bin/python3 -c "import json,sys; print(' / '.join('%.1f MB' % (b / 1e6) for b in json.load(open(sys.argv[1]))['peak_memory']))" "$tmp/m$m/schedule.json")
  printf "| %s | %.1f s | %.2f GB | %s | %s |\n" "$m" "$wall" "$(/usr/bin/python3 -c "print($rss / 1048576)")" "$heap" "$predicted"
  rm -rf "$tmp/m$m"
done
