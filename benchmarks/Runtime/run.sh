#!/usr/bin/env bash
# Runtime benchmark (benchmarks/README.md, Runtime): the examples/gpt GPT
# (4 blocks, dim 64, 4 heads, sequences of 32, microbatches of 4 sequences,
# 8 microbatches, byte vocabulary) on 2 ranks with 1F1B, ZB-H1 and ZB-2p:
# mean step time (steps 2..S), predicted and realized bubble rate per rank;
# then one single-process PyTorch CPU step of the same model (1 thread).
#
#   benchmarks/Runtime/run.sh [BUILD_DIR] [STEPS]
#
# ZB_BENCH_PROFILE=1: the paper's profile-then-schedule loop first: a 1F1B
# run measures T_F/T_B/T_W/T_comm per stage (zb-run --profile), and every
# schedule is then compiled with zb-compile --profile, so the predicted bubble
# comes from measured costs instead of the cost model's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-20}"
PY=/usr/bin/python3
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
MODEL=(--layers 4 --batch 4 --seq 32 --dim 64 --heads 4)
"$PY" "$root/examples/gpt/make_model.py" "${MODEL[@]}" > "$OUT/gpt.mlir"
TEXT="$root/examples/gpt/shakespeare.txt"
PROFILE_ARGS=()
if [ "${ZB_BENCH_PROFILE:-0}" = 1 ]; then
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --stages 2 --microbatches 8 \
    --schedule 1f1b -o "$OUT/profile-run" --quiet
  "$BUILD/bin/zb-run" "$OUT/profile-run" --ranks 2 --steps "$STEPS" \
    --data "$TEXT" --profile "$OUT/profile.json" > /dev/null
  PROFILE_ARGS=(--profile "$OUT/profile.json")
  echo "costs measured by a 1F1B run: $(tr -d '\n ' < "$OUT/profile.json" | cut -c1-300)"
fi
printf "%-7s %12s %10s %22s\n" schedule "step (ms)" predicted "realized rank0/rank1"
for s in 1f1b zb-h1 zb-2p; do
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --stages 2 --microbatches 8 \
    --schedule "$s" "${PROFILE_ARGS[@]}" -o "$OUT/$s" --quiet
  "$BUILD/bin/zb-run" "$OUT/$s" --ranks 2 --steps "$STEPS" --data "$TEXT" \
    --report-format json > "$OUT/$s.json"
  "$PY" - "$OUT/$s.json" "$s" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); s = sys.argv[2]
pred = r["predicted"][s]["bubble_rate"]
real = "/".join(f"{b:.3f}" for b in r["realized_bubble_rate"])
print(f"{s:7s} {r['mean_step_time_ms']:12.2f} {pred:10.3f} {real:>22s}")
PYEOF
done
"$PY" "$root/benchmarks/Runtime/torch_step.py" --layers 4 --batch 4 --seq 32 \
  --vocab 256 --dim 64 --heads 4 --microbatches 8 --steps "$STEPS"
