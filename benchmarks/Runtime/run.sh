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
#   benchmarks/Runtime/run.sh [BUILD_DIR] [STEPS]   (ZB_BENCH_ROUNDS=5 rounds)
#
# By default the paper's profile-then-schedule loop runs first: a 1F1B run
# measures T_F/T_B/T_W/T_comm and their jitter per stage (zb-run --profile)
# and every schedule is compiled with zb-compile --profile.
# ZB_BENCH_PROFILE=0 schedules with the cost model instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-20}"
ROUNDS="${ZB_BENCH_ROUNDS:-5}"
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
for s in 1f1b zb-h1 zb-2p; do
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --stages 2 --microbatches 8 \
    --schedule "$s" "${PROFILE_ARGS[@]}" -o "$OUT/$s" --quiet
done
# ROUNDS rounds, the three schedules interleaved in each, so that a slow
# phase of the machine hits every schedule alike.
for round in $(seq 1 "$ROUNDS"); do
  for s in 1f1b zb-h1 zb-2p; do
    if ! "$BUILD/bin/zb-run" "$OUT/$s" --ranks 2 --steps "$STEPS" --data "$TEXT" \
      --report-format json > "$OUT/$s.$round.json" 2> "$OUT/$s.err"; then
      cat "$OUT/$s.err" >&2
      exit 1
    fi
  done
done
"$PY" - "$OUT" "$ROUNDS" <<'PYEOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
print(f"{rounds} rounds; step time: median over rounds of the mean of steps 2..S; "
      "bubble columns: mean over rounds")
print("%-6s %9s %5s %9s %9s %17s %17s" % ("schedule", "step(ms)", "rank", "realized",
      "replayed", "at-run (jitter)", "predicted (jitter)"))
for s in ["1f1b", "zb-h1", "zb-2p"]:
    runs = [json.load(open(f"{out}/{s}.{i}.json")) for i in range(1, rounds + 1)]
    mean = lambda f: [statistics.mean(f(r)[k] for r in runs) for k in range(2)]
    p = runs[0]["predicted"][s]
    real = mean(lambda r: r["realized_bubble_rate"])
    rep = mean(lambda r: r["replayed_bubble_rate"])
    at = mean(lambda r: r["at_measured_costs"]["rank_bubble_rate"])
    atj = mean(lambda r: r["at_measured_costs"]["jitter_rank_bubble_rate"])
    pj = p.get("jitter", {}).get("rank_bubble_rate")
    step = statistics.median(r["mean_step_time_ms"] for r in runs)
    rows[s] = dict(step=step, real=real, atj=atj, pj=pj or p["rank_bubble_rate"],
                   bubble=p["bubble_rate"])
    for k in range(2):
        pred = "%.3f" % p["rank_bubble_rate"][k] + (" (%.3f)" % pj[k] if pj else "")
        print("%-6s %9s %5d %9.3f %9.3f %17s %17s" % (
            s if k == 0 else "", "%9.2f" % step if k == 0 else "", k, real[k], rep[k],
            "%.3f (%.3f)" % (at[k], atj[k]), pred))
a, b = rows["1f1b"], rows["zb-2p"]
speed = 1 - b["step"] / a["step"]
pred = a["bubble"] - b["bubble"]
print(f"ZB-2p vs 1F1B: step {100 * speed:.1f} % shorter; predicted bubble difference "
      f"{100 * pred:.1f} points; ratio {speed / pred if pred > 0 else float('nan'):.2f} (bar: >= 0.70)")
for key, name in [("atj", "at this run's pass times with jitter"), ("pj", "zb-compile's prediction")]:
    gap = max(abs(r["real"][k] - r[key][k]) for r in rows.values() for k in range(2))
    print(f"largest |realized - {name}|: {100 * gap:.1f} points (bar: <= 3)")
PYEOF
"$PY" "$root/benchmarks/Runtime/torch_step.py" --layers 4 --batch 4 --seq 32 \
  --vocab 256 --dim 64 --heads 4 --microbatches 8 --steps "$STEPS"
