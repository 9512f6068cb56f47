#!/usr/bin/env bash
# Gradient clipping's cost (benchmarks/README.md, "Gradient clipping"): the
# examples/gpt GPT (4 blocks, dim 64, 4 heads, sequences of 32, 8
# microbatches of 4) with zb-2p and AdamW on 2 ranks, realized mean step
# time (steps 2..S) and per-rank realized bubble, for: no checks at all;
# clipping that never triggers (norm 100: only the reduction's cost) and
# clipping at every step (norm 0.01: post-validation rolls back and redoes
# every step, its worst case), each with the synchronous all-reduce and
# with post-validation.
# The predicted bubble is the plan's (the simulator does not model the
# optimizer synchronisation).
#
#   benchmarks/Runtime/grad_sync.sh [BUILD_DIR] [STEPS]   (ZB_BENCH_ROUNDS=5)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-30}"
ROUNDS="${ZB_BENCH_ROUNDS:-5}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
/usr/bin/python3 "$root/examples/gpt/make_model.py" --layers 4 --batch 4 \
  --seq 32 --dim 64 --heads 4 > "$OUT/gpt.mlir"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --optimizer adamw --lr 0.001 \
  --microbatches 8 --stages 2 --schedule zb-2p -o "$OUT/plan" --quiet
"$BUILD/bin/zb-sched" --input "$OUT/plan/schedule.json" \
  --optimizer-sync post-validation --format json > "$OUT/steady.json"
run() { # label, predicted mode, extra flags...
  local label="$1" mode="$2"; shift 2
  for ((r = 0; r < ROUNDS; ++r)); do
    "$BUILD/bin/zb-run" "$OUT/plan" --ranks 2 --steps "$STEPS" \
      --data "$root/examples/gpt/shakespeare.txt" --report-format json \
      --overlap-steps "$@" > "$OUT/$label.$r.json" 2>/dev/null
  done
  /usr/bin/python3 - "$label" "$OUT" "$ROUNDS" "$mode" <<'PY'
import json, statistics, sys
label, out, rounds, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
wall, bubbles, clipped, redone = [], [], 0, 0
for r in range(rounds):
    d = json.load(open(f"{out}/{label}.{r}.json"))
    wall.append(d["wall_step_time_ms"])
    bubbles.append(d["realized_bubble_rate"])
    clipped = len(d.get("gradient_sync", {}).get("clipped_steps", []))
    redone = d.get("gradient_sync", {}).get("redone_steps", 0)
b0 = statistics.median(b[0] for b in bubbles)
b1 = statistics.median(b[1] for b in bubbles)
steady = json.load(open(f"{out}/steady.json"))["optimizer_sync"]["steady_state"][mode]
print(f"{label:<17} {statistics.median(wall):7.2f} ms (min {min(wall):6.2f})"
      f"  {steady['period_ms']:7.3f} ms  {steady['bubble_rate']:.4f}"
      f"   {b0:.3f} {b1:.3f}   {clipped:3d} {redone:3d}")
PY
}
echo "                  realized wall/step        predicted steady state  realized bubble  clipped redone"
run no-checks none --nonfinite ignore
run all-reduce-rare all-reduce --grad-clip 100 --optimizer-sync all-reduce
run post-val-rare post-validation --grad-clip 100 --optimizer-sync post-validation
run all-reduce-every all-reduce --grad-clip 0.01 --optimizer-sync all-reduce
run post-val-every post-validation --grad-clip 0.01 --optimizer-sync post-validation
