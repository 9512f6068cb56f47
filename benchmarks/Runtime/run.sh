#!/usr/bin/env bash
# Runtime benchmark (benchmarks/README.md, Runtime): the examples/gpt GPT
# (4 blocks, dim 64, 4 heads, sequences of 32, microbatches of 4 sequences,
# 8 microbatches, byte vocabulary) on 2 ranks with 1F1B, ZB-H1 and ZB-2p:
# mean step time (steps 2..S), and per rank the bubble rate
#   realized   measured from the trace (idle share of the rank's span),
#   replayed   the schedule simulated with the pass times traced in the
#              same steps and T_comm = 0 (realized - replayed = what the
#              runtime adds: communication, synchronisation),
#   at-run     the schedule simulated at this run's mean pass times, and its
#              expectation under this run's pass-to-pass jitter (Monte Carlo),
#   predicted  zb-compile's prediction for this plan, and under the jitter
#              measured by the profiling run;
# then one single-process PyTorch CPU step of the same model (1 thread).
#
#   benchmarks/Runtime/run.sh [BUILD_DIR] [STEPS]
#
# By default the paper's profile-then-schedule loop runs first: a 1F1B run
# measures T_F/T_B/T_W/T_comm and their jitter per stage (zb-run --profile)
# and every schedule is compiled with zb-compile --profile.
# ZB_BENCH_PROFILE=0 schedules with the cost model instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-40}"
PY=/usr/bin/python3
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
MODEL=(--layers 4 --batch 4 --seq 32 --dim 64 --heads 4)
"$PY" "$root/examples/gpt/make_model.py" "${MODEL[@]}" > "$OUT/gpt.mlir"
TEXT="$root/examples/gpt/shakespeare.txt"
PROFILE_ARGS=()
if [ "${ZB_BENCH_PROFILE:-1}" = 1 ]; then
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --stages 2 --microbatches 8 \
    --schedule 1f1b -o "$OUT/profile-run" --quiet
  "$BUILD/bin/zb-run" "$OUT/profile-run" --ranks 2 --steps "$STEPS" \
    --data "$TEXT" --profile "$OUT/profile.json" > /dev/null
  PROFILE_ARGS=(--profile "$OUT/profile.json")
  "$PY" - "$OUT/profile.json" <<'PYEOF'
import json, sys
for s in json.load(open(sys.argv[1]))["stages"]:
    print("profile stage %d: T_F %.3f T_B %.3f T_W %.3f T_comm %.3f ms, cv %.2f %.2f %.2f"
          % (s["stage"], s["t_f"], s["t_b"], s["t_w"], s["t_comm"], s["cv_f"], s["cv_b"], s["cv_w"]))
PYEOF
fi
printf "%-6s %9s %5s %9s %9s %17s %17s\n" schedule "step(ms)" rank realized replayed "at-run (jitter)" "predicted (jitter)"
for s in 1f1b zb-h1 zb-2p; do
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --stages 2 --microbatches 8 \
    --schedule "$s" "${PROFILE_ARGS[@]}" -o "$OUT/$s" --quiet
  if ! "$BUILD/bin/zb-run" "$OUT/$s" --ranks 2 --steps "$STEPS" --data "$TEXT" \
    --report-format json > "$OUT/$s.json" 2> "$OUT/$s.err"; then
    cat "$OUT/$s.err" >&2
    exit 1
  fi
  "$PY" - "$OUT/$s.json" "$s" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); s = sys.argv[2]
p = r["predicted"][s]
for k, real in enumerate(r["realized_bubble_rate"]):
    jit = p.get("jitter", {}).get("rank_bubble_rate")
    pred = "%.3f" % p["rank_bubble_rate"][k] + (" (%.3f)" % jit[k] if jit else "")
    at = r["at_measured_costs"]
    atrun = "%.3f (%.3f)" % (at["rank_bubble_rate"][k], at["jitter_rank_bubble_rate"][k])
    step = "%9.2f" % r["mean_step_time_ms"] if k == 0 else " " * 9
    print("%-6s %s %5d %9.3f %9.3f %17s %17s" % (s if k == 0 else "", step, k, real,
          r["replayed_bubble_rate"][k], atrun, pred))
PYEOF
done
"$PY" "$root/benchmarks/Runtime/torch_step.py" --layers 4 --batch 4 --seq 32 \
  --vocab 256 --dim 64 --heads 4 --microbatches 8 --steps "$STEPS"
