#!/usr/bin/env bash
# Hugging Face models at real size through zb (issue 35): export with
# python/export/hf_fixtures.py (PyTorch's float64 loss and gradient norms
# with it), zb-compile for 1, 4 and 8 stages (wall time and peak memory, GNU
# time), and one step on the CPU with --report-gradients on 1 and 4 ranks
# compared with PyTorch (check_expected.py). Prints one line per measurement.
#
# Usage: benchmarks/Compiler/hf_real_size.sh PYTHON [BUILD_DIR] [WORK_DIR]
#   PYTHON: a python with torch, transformers, onnx, onnxscript (a venv;
#           docs/frontends.md says how on a CPU-only machine)
# Models (ZB_HF_MODELS, default all):
#   gpt2-124m   GPT2LMHeadModel, transformers' default GPT2Config, T 1024
#   llama-4l    the shape of Llama 3.2 1B with 4 layers (506M), T 256
#   llama-1b    the shape of Llama 3.2 1B, 16 layers (1.24B), T 256: export
#               and compile only (PyTorch's float64 reference needs more
#               memory than 24 GiB holds next to it)
set -euo pipefail
py="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${2:-$root/build}"
work="${3:-$root/out/hf-real-size}"
models="${ZB_HF_MODELS:-gpt2-124m llama-4l llama-1b}"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
measure() { # LABEL CMD...: wall seconds and peak RSS of CMD
  local label="$1"; shift
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > "$work/out.txt" 2> "$work/err.txt" \
    || { echo "$label: FAILED: $(grep -m1 -i error "$work/err.txt")"; return 1; }
  read -r secs kb < "$work/time.txt"
  printf '%-34s %8.1f s %8.2f GB\n' "$label" "$secs" "$(echo "$kb/1048576" | bc -l)"
}
for m in $models; do
  case $m in
    gpt2-124m) args=(gpt2 --size gpt2-124m); stages_run="1 4" ;;
    llama-4l) args=(llama --size llama-1b --layers 4); stages_run="1" ;;
    llama-1b) args=(llama --size llama-1b --no-reference); stages_run="" ;;
  esac
  measure "$m: export (PyTorch)" "$py" "$root/python/export/hf_fixtures.py" \
    "${args[0]}" "$work/$m" "${args[@]:1}"
  for s in 1 4 8; do
    measure "$m: zb-compile --stages $s" "$build/bin/zb-compile" \
      "$work/$m/model.onnx" --stages "$s" --microbatches 1 --schedule 1f1b \
      -o "$work/$m-p$s" --quiet
  done
  for s in $stages_run; do
    measure "$m: zb-run step, $s rank(s)" "$build/bin/zb-run" "$work/$m-p$s" \
      --ranks "$s" --inputs "$work/$m" --steps 1 --report-gradients \
      --report-format json
    cp "$work/out.txt" "$work/$m-p$s.json"
    echo "  $(/usr/bin/python3 "$root/test/Frontend/Inputs/check_expected.py" \
      "$work/$m-p$s.json" "$work/$m/expected.json" --grad-atol 1e-8 | head -1)"
  done
done
