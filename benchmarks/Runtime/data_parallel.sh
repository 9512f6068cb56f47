#!/usr/bin/env bash
# Data parallelism against pipeline parallelism for the same global batch
# (issue 39): the examples/gpt GPT (4 blocks, dim 64, 4 heads, sequences of
# 32, byte vocabulary; microbatches of 4 sequences), 16 microbatches a step,
# AdamW, on the Shakespeare text, run as
#   1 rank          (m = 16),
#   2 pipelines x 1 rank  (--data-parallel 2, m = 8 each),
#   the same with all-reduce buckets of 128 KiB and of one parameter each
#     (--dp-bucket-bytes 131072 and 0: started inside the last W),
#   1 pipeline x 2 ranks  (zb-h1, m = 16),
#   2 pipelines x 2 ranks (zb-h1, m = 8 each; oversubscribed below 4 cores).
# Step time: median over ROUNDS runs of the median of steps 2..S. For the
# data-parallel runs, from the --trace of the last step: the all-reduces
# per rank, and the exposed all-reduce time (the end of the rank's last
# all-reduce minus the end of its last pass), against zb-compile's
# prediction (plan.json predicted.<schedule>.data_parallel at
# --dp-bandwidth BW GB/s, default 5, and --dp-latency 0.02 ms).
# Usage: benchmarks/Runtime/data_parallel.sh [BUILD_DIR] [STEPS] [ROUNDS] [BW]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-30}"
ROUNDS="${3:-3}"
BW="${4:-5}"
PY=/usr/bin/python3
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
export OPENBLAS_NUM_THREADS=1
text="$root/examples/gpt/shakespeare.txt"
"$PY" "$root/examples/gpt/make_model.py" --layers 4 --dim 64 --heads 4 \
  --seq 32 --batch 4 > "$OUT/gpt.mlir"
common=(--optimizer adamw --lr 0.001 --quiet --dp-bandwidth "$BW")
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 1 --microbatches 16 -o "$OUT/p1"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 1 --microbatches 8 --data-parallel 2 -o "$OUT/d2p1"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 1 --microbatches 8 --data-parallel 2 --dp-bucket-bytes 131072 -o "$OUT/d2p1k"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 1 --microbatches 8 --data-parallel 2 --dp-bucket-bytes 0 -o "$OUT/d2p1z"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 2 --microbatches 16 --schedule zb-h1 -o "$OUT/p2"
"$BUILD/bin/zb-compile" "$OUT/gpt.mlir" "${common[@]}" --stages 2 --microbatches 8 --schedule zb-h1 --data-parallel 2 -o "$OUT/d2p2"
for ((r = 1; r <= ROUNDS; ++r)); do
  for cfg in "p1 1" "d2p1 2" "d2p1k 2" "d2p1z 2" "p2 2" "d2p2 4"; do
    set -- $cfg
    "$BUILD/bin/zb-run" "$OUT/$1" --ranks "$2" --steps "$STEPS" --data "$text" \
      --report-format json --trace "$OUT/$1.$r.trace.json" > "$OUT/$1.$r.json" 2> "$OUT/err.log" ||
      { cat "$OUT/err.log" >&2; exit 1; }
  done
done
"$PY" - "$OUT" "$ROUNDS" "$(nproc)" <<'PY'
import json, statistics, sys
out, rounds, cores = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = {"p1": "1 rank", "d2p1": "2 pipelines x 1 rank",
         "d2p1k": "2 pipelines x 1 rank, 128 KiB buckets",
         "d2p1z": "2 pipelines x 1 rank, a bucket per parameter",
         "p2": "1 pipeline x 2 ranks (zb-h1)",
         "d2p2": "2 pipelines x 2 ranks (zb-h1)"}
plan = json.load(open(f"{out}/p1/plan.json"))
tokens = 16 * plan["microbatch_size"] * plan["inputs"][0]["sample_shape"][0]
print(f"{cores} cores; {tokens} tokens per step in every configuration")
print("| configuration | ranks | step (ms) | tokens/s | all-reduces per rank | exposed all-reduce, measured (ms) | predicted (ms) | after backward, predicted (ms) |")
print("|---|---|---|---|---|---|---|---|")
for tag, name in names.items():
    runs = [json.load(open(f"{out}/{tag}.{r}.json")) for r in range(1, rounds + 1)]
    step = statistics.median(statistics.median(s["time_ms"] for s in run["steps"][1:]) for run in runs)
    p = json.load(open(f"{out}/{tag}/plan.json"))
    ranks = p["num_ranks"] * p.get("data_parallel", 1)
    cells = ["", "", "", ""]
    if p.get("data_parallel", 1) > 1:
        exposed, counts = [], []
        for r in range(1, rounds + 1):
            ev = [e for e in json.load(open(f"{out}/{tag}.{r}.trace.json"))["traceEvents"] if e.get("ph") == "X"]
            worst = 0.0
            for k in range(p["num_ranks"]):
                passes = [e for e in ev if e["tid"] == k and e["cat"] in ("F", "B", "W")]
                ars = [e for e in ev if e["tid"] == p["num_ranks"] + k and e["cat"] == "all-reduce"]
                counts.append(len(ars))
                worst = max(worst, max(e["ts"] + e["dur"] for e in ars) - max(e["ts"] + e["dur"] for e in passes))
            exposed.append(max(worst, 0.0) / 1000)
        dp = p["predicted"][p["schedule"]]["data_parallel"]
        cells = [f"{max(counts)}", f"{statistics.median(exposed):.3f}",
                 f"{dp['exposed_ms']:.3f}", f"{dp['after_backward_exposed_ms']:.3f}"]
    print(f"| {name} | {ranks} | {step:.2f} | {1000 * tokens / step:,.0f} | " + " | ".join(cells) + " |")
PY
