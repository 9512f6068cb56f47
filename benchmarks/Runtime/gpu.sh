#!/usr/bin/env bash
# The CUDA backend on GPUs (issue 15; benchmarks/README.md, "CUDA runtime"):
# a GPT (examples/gpt/make_model.py: LAYERS blocks, dim DIM, 8 heads,
# sequences of 128, 8 microbatches of 8) compiled with --target cuda for
# sm_90 and run with zb-run --backend cuda on min(4, GPUs) ranks, per
# schedule: mean step time (steps 2..S), tokens per second, predicted
# (H100 roofline costs) and realized bubble per rank, and the CUDA
# backend's per-rank counters (NCCL messages, host synchronisations).
# Without a usable GPU it prints why and exits 0 (no numbers).
# ZB_BENCH_FAKE_CUDA=1 checks the script itself without a GPU: --target
# cuda-emu plans on the host-memory stand-in (libzb_fake_cuda.so; the
# numbers then mean nothing).
#
#   benchmarks/Runtime/gpu.sh [BUILD_DIR] [STEPS] [LAYERS] [DIM]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
STEPS="${2:-20}"
LAYERS="${3:-8}"
DIM="${4:-512}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1
target=cuda
if [[ "${ZB_BENCH_FAKE_CUDA:-0}" == 1 ]]; then
  fake="$BUILD/lib/libzb_fake_cuda.so"
  export ZBRT_CUDA_DRIVER="$fake" ZBRT_CUBLAS="$fake" ZBRT_NCCL="$fake"
  target=cuda-emu
fi
gpus=$(/usr/bin/python3 - "$BUILD/lib/libzbrt.so" <<'PY'
import ctypes, re, sys
zbrt = ctypes.CDLL(sys.argv[1])
why = ctypes.create_string_buffer(256)
if zbrt.zbrt_cuda_available(why, ctypes.c_int64(256)) != 0:
    print("0 " + why.value.decode())
else:
    print(re.match(r"(\d+)", why.value.decode()).group(1))
PY
)
if [[ "$gpus" == 0* ]]; then
  echo "no GPU: ${gpus#0 } -- nothing measured"
  exit 0
fi
ranks=$(( gpus >= 4 ? 4 : gpus ))
/usr/bin/python3 "$root/examples/gpt/make_model.py" --layers "$LAYERS" \
  --batch 8 --seq 128 --dim "$DIM" --heads 8 > "$OUT/gpt.mlir"
echo "GPT $LAYERS layers, dim $DIM, 8 microbatches of 8 x 128 tokens, $ranks ranks on $gpus GPU(s)"
echo "schedule   step ms  tokens/s   predicted bubble per rank   realized bubble per rank"
for schedule in 1f1b zb-h1 zb-2p zb-v; do
  "$BUILD/bin/zb-compile" "$OUT/gpt.mlir" --microbatches 8 --stages "$ranks" \
    --schedule "$schedule" --target "$target" --quiet \
    -o "$OUT/$schedule" || { echo "$schedule: compile failed"; continue; }
  "$BUILD/bin/zb-run" "$OUT/$schedule" --backend cuda --ranks "$ranks" \
    --steps "$STEPS" --data "$root/examples/gpt/shakespeare.txt" \
    --report-format json > "$OUT/$schedule.json"
  /usr/bin/python3 - "$OUT/$schedule.json" "$schedule" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = d["mean_step_time_ms"]
tokens = 8 * 8 * 128
predicted = " ".join(f"{b:.3f}" for b in d["predicted"][sys.argv[2]]["rank_bubble_rate"])
realized = " ".join(f"{b:.3f}" for b in d["realized_bubble_rate"])
print(f"{sys.argv[2]:<9} {ms:8.2f} {tokens / ms * 1e3:9.0f}   {predicted:>23}   {realized}")
for r, c in enumerate(d.get("cuda", [])):
    print(f"    rank {r}: device {c['device']}, {c['gemms']} GEMMs, "
          f"{c['nccl_sends']}/{c['nccl_recvs']} NCCL sends/receives, "
          f"{c['host_synchronizations']} host synchronisations")
PY
done
