#!/usr/bin/env bash
# The main job: a GPT-2 style model written in PyTorch and exported to ONNX
# (examples/gpt/gpt2.onnx, made by examples/gpt/export_gpt2.py: byte vocabulary
# 256, 4 pre-LN transformer blocks, d 64, LM head tied to the token embedding,
# cross-entropy loss in the graph), trained with AdamW on the Shakespeare
# text shipped in examples/gpt, on as many pipeline ranks as the machine has
# cores (2 to 4; MPI ranks on the CPU), 4 microbatches of 4 sequences of 32
# bytes. The paper's loop (Section 3 and 5):
#   1. compile for 1F1B and train a few steps with --profile, three times:
#      the measured T_F, T_B, T_W and T_comm of every stage (medians of the
#      three; a pass's cost includes its rank's own work on the messages it
#      receives and sends, docs/plan-json.md);
#   2. compile the automatic zero-bubble schedule (zb-auto) from that
#      profile: its plan predicts the bubble of 1F1B and of zb-auto from the
#      measured costs;
#   3. train both and print predicted and realized bubble rate per rank side
#      by side, and the measured speedup of zb-auto over 1F1B against the
#      predicted one.
# Writes the zero-bubble run's trace (Perfetto) and the schedule pictures.
# Installs and builds what is missing first.
#
# On a machine with a usable NVIDIA GPU (libzbrt's probe: driver and device)
# the stages are compiled with --target cuda and trained by the CUDA backend
# (ranks share the GPUs when there are fewer; CUDA graphs on), the profile
# measuring the device; without one, on the CPU as above. ZB_DEMO_TARGET=cpu
# or cuda forces the choice. Either way the summary gives the step time,
# tokens per second and the predicted and realized bubble.
#
# The two schedules run alternately, ZB_DEMO_ROUNDS times each (default 3),
# so that a change in the machine's load hits both; the medians over the
# rounds are reported.
#
# Environment: ZB_BUILD_DIR (default build), ZB_DEMO_OUT (default out/gpt),
# ZB_DEMO_STEPS (steps of each run, default 100), ZB_DEMO_ROUNDS (default 3),
# ZB_DEMO_MICROBATCHES (default 4), ZB_DEMO_RANKS (default: the cores, 2 to
# 4), ZB_DEMO_TARGET (cpu or cuda; default: cuda when a GPU is usable).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" zb-compile zb-run
BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
OUT="${ZB_DEMO_OUT:-$root/out/gpt}"
STEPS="${ZB_DEMO_STEPS:-100}"
ROUNDS="${ZB_DEMO_ROUNDS:-3}"
cores="$(nproc)"
RANKS="${ZB_DEMO_RANKS:-$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))}"
export OPENBLAS_NUM_THREADS=1
bin="$BUILD_DIR/bin"
model="$root/examples/gpt/gpt2.onnx"
text="$root/examples/gpt/shakespeare.txt"
MICROBATCHES="${ZB_DEMO_MICROBATCHES:-4}"
# The target: cuda where libzbrt finds a usable driver and device.
TARGET="${ZB_DEMO_TARGET:-}"
if [[ -z "$TARGET" ]]; then
  TARGET=cpu
  if /usr/bin/python3 - "$BUILD_DIR/lib/libzbrt.so" <<'PY' 2>/dev/null
import ctypes, sys
why = ctypes.create_string_buffer(256)
sys.exit(ctypes.CDLL(sys.argv[1]).zbrt_cuda_available(why, ctypes.c_int64(256)))
PY
  then TARGET=cuda; fi
fi
case "$TARGET" in
  cpu|cuda) ;;
  *) echo "demo.sh: ZB_DEMO_TARGET='$TARGET': expected cpu or cuda" >&2; exit 2 ;;
esac
common=(--stages "$RANKS" --microbatches "$MICROBATCHES" --optimizer adamw --lr 0.003
        --target "$TARGET" --data "$text" --quiet)

mkdir -p "$OUT"
# The machine's 1-minute load average, printed before and after the runs: a
# rank that shares its core with another process waits for it, and the
# realized bubble includes that wait.
loadavg() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
load_before="$(loadavg)"
# zb-run's stderr (the data it reads) only where a run fails.
quiet() { "$@" 2> "$OUT/stderr.log" || { cat "$OUT/stderr.log" >&2; return 1; }; }
if [[ "$TARGET" == cuda ]]; then
  echo "[zb] $RANKS pipeline ranks on the GPU(s) (--target cuda); model $model"
else
  echo "[zb] $RANKS pipeline ranks on $cores cores; model $model"
fi
echo "[zb] 1. 1F1B, profiled 3 times for 20 steps (measured T_F, T_B, T_W, T_comm per stage, medians)"
"$bin/zb-compile" "$model" "${common[@]}" --schedule 1f1b -o "$OUT/1f1b"
for ((p = 1; p <= 3; ++p)); do
  quiet "$bin/zb-run" "$OUT/1f1b" --ranks "$RANKS" --steps 20 --print-every 20 \
    --profile "$OUT/profile.$p.json" > "$OUT/profile.$p.log"
done
# Every cost the median of the three profiles, so that one profiling run
# slowed down by another process on the machine does not set the plan.
/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
runs = [json.load(open(f"{out}/profile.{p}.json")) for p in (1, 2, 3)]
merged = runs[0]
for i, stage in enumerate(merged["stages"]):
    for key in stage:
        if key.startswith(("t_", "cv_")):
            stage[key] = statistics.median(r["stages"][i][key] for r in runs)
        elif key.startswith("count_"):
            stage[key] = sum(r["stages"][i][key] for r in runs)
merged["steps"] = sum(r["steps"] for r in runs)
json.dump(merged, open(f"{out}/profile.json", "w"), indent=2)
PY
echo "[zb] 2. the zero-bubble schedule from the profile (zb-auto)"
"$bin/zb-compile" "$model" "${common[@]}" --schedule zb-auto \
  --profile "$OUT/profile.json" -o "$OUT/zb"
echo "[zb] 3. training: $ROUNDS rounds of $STEPS steps with each schedule, alternating"
echo "[zb]    (AdamW, warmup 10 steps, cosine decay to lr/10, the last 10 % of the text for validation)"
# The training loop of nanoGPT: warmup, cosine decay, weight decay on the
# matrices only (the default --no-decay), a held-out part of the text
# evaluated every 50 steps; the metrics of the zero-bubble run in
# $OUT/metrics.jsonl (zb.plot_metrics).
loop=(--lr-schedule cosine --warmup-steps 10 --min-lr 0.0003 --weight-decay 0.1
      --val-split 0.1 --eval-every 50 --eval-steps 4)
for ((round = 1; round <= ROUNDS; ++round)); do
  quiet "$bin/zb-run" "$OUT/1f1b" --ranks "$RANKS" --steps "$STEPS" "${loop[@]}" \
    --report-format json > "$OUT/1f1b.$round.json"
  quiet "$bin/zb-run" "$OUT/zb" --ranks "$RANKS" --steps "$STEPS" "${loop[@]}" \
    --metrics "$OUT/metrics.jsonl" \
    --report-format json --trace "$OUT/trace.json" > "$OUT/zb.$round.json"
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$load_before" "$(loadavg)" "$cores" "$TARGET" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
load_before, load_after, cores, target = sys.argv[3:7]
plan = json.load(open(f"{out}/zb/plan.json"))
# Tokens per step: every microbatch's sequences of the first input.
tokens = (plan["num_microbatches"] * plan["microbatch_size"] *
          plan["inputs"][0]["sample_shape"][0])
predicted = plan["predicted"]
runs = {name: [json.load(open(f"{out}/{tag}.{r}.json"))
               for r in range(1, rounds + 1)]
        for name, tag in (("1f1b", "1f1b"), ("zb-auto", "zb"))}

def median_step_ms(run):
    """The median step time of steps 2..S (step 1 warms up)."""
    return statistics.median(s["time_ms"] for s in run["steps"][1:])

evals = {e["step"]: e["val_loss"] for e in runs["zb-auto"][0].get("evals", [])}
for s in runs["zb-auto"][0]["steps"]:
    if s["step"] == 1 or s["step"] % 20 == 0 or s["step"] in evals:
        val = (f"  val loss {evals[s['step']]:.4f}" if s["step"] in evals
               else "")
        print(f"step {s['step']:4d}  loss {s['loss']:.4f}  lr {s['lr']:.2e}"
              f"{val}  (zb-auto)")
ranks = runs["zb-auto"][0]["num_ranks"]
print()
print(f"bubble rate per rank: predicted from the profiled costs / realized "
      f"(mean over steps 2..S, median of {rounds} runs)")
print("schedule  median step" + "".join(
    f"  rank {r}: pred  real " for r in range(ranks)))
worst, step_ms = 0.0, {}
for name, group in runs.items():
    pred = predicted[name]["rank_bubble_rate"]
    step_ms[name] = statistics.median(median_step_ms(run) for run in group)
    cells = ""
    for r in range(ranks):
        real = statistics.median(run["realized_bubble_rate"][r] for run in group)
        cells += f"         {pred[r]:.3f} {real:.3f} "
        worst = max(worst, abs(pred[r] - real))
    print(f"{name:<9} {step_ms[name]:7.2f} ms{cells}")
pred_ms = {name: predicted[name]["makespan_ms"] for name in runs}
pred_saving = pred_ms["1f1b"] - pred_ms["zb-auto"]
real_saving = step_ms["1f1b"] - step_ms["zb-auto"]
overhead = statistics.mean(step_ms[n] - pred_ms[n] for n in runs)
print(f"zb-auto over 1F1B: saves {real_saving:.2f} ms per step of the "
      f"{pred_saving:.2f} ms predicted ({100 * real_saving / pred_saving:.0f} %);"
      f" speedup {step_ms['1f1b'] / step_ms['zb-auto']:.3f}x, predicted "
      f"{pred_ms['1f1b'] / pred_ms['zb-auto']:.3f}x for the pipeline alone "
      f"(a step adds {overhead:.2f} ms of optimizer and synchronisation)")
print(f"largest |predicted - realized| bubble: {100 * worst:.1f} points")
print(f"on {target}: {tokens} tokens per step; " + ", ".join(
    f"{name} {step_ms[name]:.2f} ms per step, {1000 * tokens / step_ms[name]:,.0f} tokens/s"
    for name in runs))
print(f"load average {load_before} before the runs, {load_after} after, on "
      f"{cores} cores")
PY
# Data parallelism: the zb-auto plan as 2 pipelines, each on its own
# microbatches (twice the batch per step), where the machine has a core per
# rank.
if (( cores >= 2 * RANKS )); then
  echo "[zb] 4. data parallel: the zb-auto plan as 2 pipelines of $RANKS ranks (--data-parallel 2), $STEPS steps"
  quiet "$bin/zb-run" "$OUT/zb" --ranks $(( 2 * RANKS )) --data-parallel 2 \
    --steps "$STEPS" "${loop[@]}" --report-format json > "$OUT/zb-dp2.json"
  /usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
dp = json.load(open(f"{out}/zb-dp2.json"))
one = json.load(open(f"{out}/zb.1.json"))
plan = json.load(open(f"{out}/zb/plan.json"))
tokens = (plan["num_microbatches"] * plan["microbatch_size"] *
          plan["inputs"][0]["sample_shape"][0])
ms = {k: statistics.median(s["time_ms"] for s in r["steps"][1:])
      for k, r in (("one", one), ("dp", dp))}
print(f"one pipeline: {ms['one']:.2f} ms per step of {tokens} tokens "
      f"({1000 * tokens / ms['one']:,.0f} tokens/s); 2 pipelines: "
      f"{ms['dp']:.2f} ms per step of {2 * tokens} tokens "
      f"({2000 * tokens / ms['dp']:,.0f} tokens/s); final loss "
      f"{one['steps'][-1]['loss']:.4f} vs {dp['steps'][-1]['loss']:.4f}")
PY
else
  echo "[zb] 4. data parallel: skipped (2 pipelines of $RANKS ranks need $(( 2 * RANKS )) cores, this machine has $cores)"
fi
echo "[zb] schedule pictures: $OUT/1f1b/schedule.svg $OUT/zb/schedule.svg   trace (Perfetto): $OUT/trace.json"
echo "[zb] metrics (JSON lines; zb.plot_metrics): $OUT/metrics.jsonl"
