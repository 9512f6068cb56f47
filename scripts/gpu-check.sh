#!/usr/bin/env bash
# gpu-check.sh - the GPU checks of issues 29, 30 and 38 as one command, for
# a session that has a GPU machine for a few minutes (no LLVM, no MPI there).
#
#   scripts/gpu-check.sh prepare OUT       here (no GPU): plans, references,
#                                          bundle: OUT/ and OUT.tar.gz
#   scripts/gpu-check.sh run OUT[.tar.gz]  there, from the checkout's root
#
# prepare (build/ built: zb-compile, zb-run, zbrt; ZB_BUILD_DIR overrides)
# compiles, with --target cuda --gpu-arch sm_90 (H100 and H200):
#   gpt2-p{1,2,4}        examples/gpt/gpt2.onnx, 1/2/4 stages, 4 microbatches,
#                        AdamW lr 0.003 (scripts/demo.sh's settings)
#   demo-p{1,2,4}        make_model.py's defaults (the demo-size GPT), 8
#                        microbatches; demo-cpu: the same for --target cpu
#   onnx-{gpt2,llama,bert}-p{1,2,4}  the ONNX fixtures with constant tensors
#                        of test/Integration/cuda-emu-onnx-models.test (1
#                        microbatch, 1f1b), checked against their expected.json
#   g8-fp32, g8-tf32,    the GPT of issue 30 (make_model.py --layers 8 --dim
#   g8-bf16              512 --heads 8 --seq 128 --batch 8; 8 microbatches,
#                        AdamW lr 3e-4), without and with --allow-tf32, and
#                        with --precision bf16 (issue 37)
#   g124-p{1,2}-b{B}     GPT-2 124M (issue 38: make_model.py --layers 12 --dim
#                        768 --heads 12 --vocab 50257 --seq 1024 --tie-lm-head
#                        --batch B), --precision bf16, AdamW lr 6e-4, 8
#                        microbatches of B sequences, 1 and 2 stages, for each
#                        candidate B in ZB_GPU_CHECK_G124_BATCHES (default
#                        "8 16"; ZB_GPU_CHECK_G124=0: none); 60-80 s each
#                        here, ZB_GPU_CHECK_JOBS (default 2) at a time
#   g124-k1-b{B}         the first candidate on 1 stage with
#                        --gpu-attention-kernel=false (attention decomposed
#                        into GEMMs and row kernels; the others run the fused
#                        tensor-core kernel of zb-gpu-attention-kernels), run
#                        after PyTorch
#   g124-u1-b{B}         the first candidate on 1 stage with
#                        --fuse-attention=false (the exported attention ops;
#                        the others fuse it: zb-fuse-attention), run last
#   g124-c1-b{B}         the same with --fuse-cross-entropy=false (the
#                        plain cross-entropy: its backward recomputes the
#                        softmax from a float32 copy of the logits), last
# runs the CPU references here (ref/*.json: gpt2-cpu and demo-cpu 10 steps,
# g8-cpu 2 steps), and writes OUT with scripts/gpu-bundle.sh (zb-run, libzbrt,
# Open MPI, env.sh) plus bin/zbrt-cuda-smoke. The g8 and g124 plans travel
# without params.bin (97 MiB and 475 MiB): `run` writes it there with
# benchmarks/GPU/make_params.py (zb-compile's initialisation, checked against
# ref/g8.params.sha256 and ref/g124.params.sha256; every g124 plan has the
# same parameters). OUT.tar.gz: carry that one (the device tool carries 64
# MiB with the checkout: keep it under ~45 MiB); `run OUT.tar.gz` unpacks
# it beside itself.
#
# run prints one block: (1) zbrt-cuda-smoke; (2) every model on 1, 2 and 4
# ranks on one GPU (--backend cuda, --deterministic): losses against the CPU
# reference (max |diff|), bit-identity across rank counts, the fixtures
# against PyTorch's float64 numbers; (4) speed: the g8 GPT fp32 and TF32 with
# CUDA graphs on and off (20 steps), PyTorch eager fp32 and SDPA + TF32 +
# fused AdamW on the same model (benchmarks/GPU/torch_gpt_step.py), the
# demo-size GPT on the GPU against --backend cpu on one core; (5) measured
# T_F/T_B/T_W (zb-run --profile) against plan.json's predicted ones; (7)
# GPT-2 124M bf16: zb on 1 rank and on 2 ranks sharing the GPU, each with
# the largest candidate microbatch that fits (tried largest first, each in
# its own process under a time limit: out of memory, a time-out or a
# failure is a row of the table and the next smaller one is tried), PyTorch
# eager (autocast bf16, SDPA, fused AdamW) and torch.compile of the same
# model at zb's 1-rank batch; one table of tokens/s and MFU
# (gpu_check_report.py gpt-table: 6N + 6LCT FLOPs per token against the
# H200's 989.4 TFLOP/s), and T_F/T_B/T_W measured against the plan's; (6)
# ncu's time of every generated kernel of microbatch 0's F, B and W of the
# g8 TF32 GPT against its roofline (gpu_report.json), per pass, and the
# kernels furthest above it; then (3) compute-sanitizer memcheck on one
# step of each 1-rank model (last: its time is the hardest to foresee).
# Every run is under `timeout`, the whole within ZB_GPU_CHECK_BUDGET_S
# seconds (default 560); (1)-(5) may spend all of it but
# ZB_GPU_CHECK_G124_S (default 240), which (7) keeps; (6) and (3) take
# what is left. A failure or a skip is printed and the rest goes on.
# Reports and logs: OUT/results/ (or $ZB_GPU_CHECK_RESULTS), written as the
# run goes: gpu-check.log (all that run prints), g124.jsonl (the rows of
# (7)'s table).
#   ZB_GPU_CHECK_PARTS    the parts to run (default: smoke losses speed passes
#                         gpt124m kernels sanitizer; e.g. "gpt124m" alone)
#   ZB_GPU_CHECK_FAKE=1   run against the host-memory stand-in
#                         (build/lib/libzb_fake_cuda.so, no-op kernels; no
#                         sanitizer, no PyTorch): the plumbing, not the numbers
#   ZB_GPU_CHECK_PYTHON   the Python for make_params.py / PyTorch (default: the
#                         first python3 on PATH or /usr/bin/python3 that has
#                         NumPy, resp. torch)
# benchmarks/README.md, "GPU check for a session with a device".
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${ZB_BUILD_DIR:-$root/build}
text=$root/examples/gpt/shakespeare.txt
fixtures=$root/test/Frontend/Inputs/onnx
report=$root/benchmarks/GPU/gpu_check_report.py
gpt8=(--layers 8 --dim 512 --heads 8 --seq 128 --batch 8)
# GPT-2 124M (issue 38): make_model.py with GPT-2's tied LM head; the
# candidate microbatch sizes (sequences of 1024 tokens) that prepare compiles.
g124=(--layers 12 --dim 768 --heads 12 --vocab 50257 --seq 1024 --tie-lm-head)
g124_batches=${ZB_GPU_CHECK_G124_BATCHES:-8 16}

die() { echo "gpu-check.sh: error: $*" >&2; exit 1; }
usage() { echo "usage: scripts/gpu-check.sh prepare|run OUT" >&2; exit 2; }

# ---- prepare ------------------------------------------------------------------
compile() { # NAME DIR MODEL ARGS...
  local name=$1 dir=$2 model=$3; shift 3
  echo "  zb-compile $name"
  "$build/bin/zb-compile" "$model" --quiet -o "$dir/$name" "$@" \
    > "$tmp/$name.compile.log" 2>&1 ||
    { tail -5 "$tmp/$name.compile.log" >&2; die "zb-compile $name failed"; }
}

compile_plans() {
  local cuda=(--target cuda --gpu-arch sm_90) p m
  local gpt2=(--microbatches 4 --optimizer adamw --lr 0.003)
  local demo=(--microbatches 8 --optimizer adamw --lr 0.003)
  local g8=(--stages 1 --microbatches 8 --optimizer adamw --lr 3e-4)
  if ! /usr/bin/env python3 "$root/examples/gpt/make_model.py" > "$tmp/demo.mlir" ||
     ! /usr/bin/env python3 "$root/examples/gpt/make_model.py" "${gpt8[@]}" \
       > "$tmp/g8.mlir"; then
    die "make_model.py failed"
  fi
  for p in 1 2 4; do
    compile "gpt2-p$p" "$plans" "$root/examples/gpt/gpt2.onnx" --stages "$p" \
      "${gpt2[@]}" "${cuda[@]}"
    compile "demo-p$p" "$plans" "$tmp/demo.mlir" --stages "$p" "${demo[@]}" \
      "${cuda[@]}"
    for m in gpt2 llama bert; do
      compile "onnx-$m-p$p" "$plans" "$fixtures/$m/model.onnx" --stages "$p" \
        --microbatches 1 --schedule 1f1b "${cuda[@]}"
    done
  done
  compile demo-cpu "$plans" "$tmp/demo.mlir" --stages 1 "${demo[@]}"
  compile gpt2-cpu "$tmp/cpu" "$root/examples/gpt/gpt2.onnx" --stages 1 \
    "${gpt2[@]}"
  compile g8-fp32 "$plans" "$tmp/g8.mlir" "${g8[@]}" "${cuda[@]}"
  compile g8-tf32 "$plans" "$tmp/g8.mlir" "${g8[@]}" "${cuda[@]}" --allow-tf32 \
    --gpu-report
  compile g8-bf16 "$plans" "$tmp/g8.mlir" "${g8[@]}" "${cuda[@]}" \
    --precision bf16
  compile g8-cpu "$tmp/cpu" "$tmp/g8.mlir" "${g8[@]}"
  compile_g124
}

# GPT-2 124M (issue 38): bf16, AdamW, 8 microbatches, 1 and 2 stages, one
# plan per candidate microbatch size (sequences of 1024 tokens): `run` takes
# the largest that fits. Every plan has the same params.bin (the parameters
# do not depend on the batch): it travels once as a SHA-256. A plan takes
# 60-80 s to compile here (mostly one thread): ZB_GPU_CHECK_JOBS (default
# 2) of them at a time.
compile_g124() {
  local b p name pid t0=$SECONDS jobs=${ZB_GPU_CHECK_JOBS:-2} pids=() names=()
  [ "${ZB_GPU_CHECK_G124:-1}" = 0 ] && { echo "  GPT-2 124M: skipped (ZB_GPU_CHECK_G124=0)"; return; }
  local opts=(--microbatches 8 --optimizer adamw --lr 6e-4 --precision bf16
              --target cuda --gpu-arch sm_90)
  for b in $g124_batches; do
    /usr/bin/env python3 "$root/examples/gpt/make_model.py" "${g124[@]}" \
      --batch "$b" > "$tmp/g124-b$b.mlir" || die "make_model.py (GPT-2 124M) failed"
    local variants=("p1" "p2")
    # The first candidate once more with the exported attention ops
    # (--fuse-attention=false): what zb-fuse-attention changes on a GPU.
    # The same with the plain cross-entropy (--fuse-cross-entropy=false),
    # and with the attention decomposed (--gpu-attention-kernel=false).
    [ "$b" = "${g124_batches%% *}" ] && variants+=("k1" "u1" "c1")
    for p in "${variants[@]}"; do
      name=g124-$p-b$b
      local extra=(--stages "${p#?}")
      [ "${p:0:1}" = u ] && extra+=(--fuse-attention=false)
      [ "${p:0:1}" = c ] && extra+=(--fuse-cross-entropy=false)
      [ "${p:0:1}" = k ] && extra+=(--gpu-attention-kernel=false)
      compile "$name" "$plans" "$tmp/g124-b$b.mlir" "${extra[@]}" "${opts[@]}" &
      pids+=($!); names+=("$name")
      if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || die "zb-compile ${names[0]} failed"
        pids=("${pids[@]:1}"); names=("${names[@]:1}")
      fi
    done
  done
  for pid in "${!pids[@]}"; do
    wait "${pids[$pid]}" || die "zb-compile ${names[$pid]} failed"
  done
  rm -f "$tmp"/g124-b*.mlir
  echo "  GPT-2 124M plans (microbatches of $g124_batches sequences; 1 and 2 stages)" \
       "compiled in $(( SECONDS - t0 ))s"
}

# The CPU plans' initial parameters are the GPU plans' (same model, same
# initialisation); the g8 plans lose params.bin, make_params.py rewrites it.
check_params() {
  local a b
  for a in "$tmp/cpu/gpt2-cpu:$plans/gpt2-p1" "$plans/demo-cpu:$plans/demo-p1" \
           "$tmp/cpu/g8-cpu:$plans/g8-fp32" "$plans/g8-tf32:$plans/g8-fp32" \
           "$plans/g8-bf16:$plans/g8-fp32"; do
    b=${a#*:}; a=${a%%:*}
    cmp -s "$a/params.bin" "$b/params.bin" ||
      die "$(basename "$a")'s params.bin differs from $(basename "$b")'s"
  done
  sha256sum < "$plans/g8-fp32/params.bin" | cut -d' ' -f1 > "$tmp/ref/g8.params.sha256"
  local py
  py=$(pick_python numpy) || py=python3
  echo "  make_params.py: checking that it rewrites g8's params.bin ($py)"
  "$py" "$root/benchmarks/GPU/make_params.py" "$plans/g8-fp32" \
    --out "$tmp/g8.params.bin" --sha256 "$(cat "$tmp/ref/g8.params.sha256")" \
    > /dev/null || die "make_params.py does not reproduce g8's params.bin"
  rm -f "$tmp/g8.params.bin" "$plans/g8-fp32/params.bin" "$plans/g8-tf32/params.bin" \
    "$plans/g8-bf16/params.bin"
  check_g124_params "$py"
}

# The GPT-2 124M plans' params.bin (498 MB each) are one file: its SHA-256
# travels, make_params.py writes it there.
check_g124_params() { # PYTHON
  local d first=
  for d in "$plans"/g124-*; do
    [ -d "$d" ] || continue
    if [ -z "$first" ]; then
      first=$d
      sha256sum < "$d/params.bin" | cut -d' ' -f1 > "$tmp/ref/g124.params.sha256"
    else
      cmp -s "$first/params.bin" "$d/params.bin" ||
        die "$(basename "$d")'s params.bin differs from $(basename "$first")'s"
    fi
  done
  [ -n "$first" ] || return 0
  echo "  make_params.py: checking that it rewrites the GPT-2 124M params.bin ($1)"
  "$1" "$root/benchmarks/GPU/make_params.py" "$first" --out "$tmp/g124.params.bin" \
    --sha256 "$(cat "$tmp/ref/g124.params.sha256")" > /dev/null ||
    die "make_params.py does not reproduce the GPT-2 124M params.bin"
  rm -f "$tmp/g124.params.bin" "$plans"/g124-*/params.bin
}

cpu_reference() { # NAME PLAN STEPS
  echo "  CPU reference: $1, $3 steps"
  OPENBLAS_NUM_THREADS=1 timeout 900 "$build/bin/zb-run" "$2" --backend cpu \
    --steps "$3" --data "$text" --deterministic --report-format json \
    > "$tmp/ref/$1.json" 2> "$tmp/ref/$1.err" ||
    { tail -3 "$tmp/ref/$1.err" >&2; die "the CPU reference $1 failed"; }
  rm -f "$tmp/ref/$1.err"
}

prepare() {
  local out=$1 f
  for f in zb-compile zb-run; do
    [ -x "$build/bin/$f" ] || die "$build/bin/$f is not built"
  done
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  plans=$tmp/plans
  mkdir -p "$plans" "$tmp/cpu" "$tmp/ref"
  compile_plans
  check_params
  cpu_reference gpt2-cpu "$tmp/cpu/gpt2-cpu" 10
  cpu_reference demo-cpu "$plans/demo-cpu" 10
  cpu_reference g8-cpu "$tmp/cpu/g8-cpu" 2
  "$here/gpu-bundle.sh" --build "$build" "$out" "$plans"/* ||
    die "gpu-bundle.sh failed"
  out=$(cd "$out" && pwd)
  [ -x "$build/bin/zbrt-cuda-smoke" ] && cp "$build/bin/zbrt-cuda-smoke" "$out/bin/"
  cp -r "$tmp/ref" "$out/ref"
  rm -f "$out"/plans/*/pipeline.mlir "$out"/plans/*/schedule.svg
  { echo "zb gpu-check bundle, prepared $(date -u +%FT%TZ)"
    echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "plans: $(cd "$out/plans" && echo *)"; } > "$out/manifest.txt"
  tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")" ||
    die "cannot write $out.tar.gz"
  echo "gpu-check.sh: wrote $out ($(du -sh "$out" | cut -f1)) and $out.tar.gz" \
       "($(du -sh "$out.tar.gz" | cut -f1)); carry the .tar.gz, there:" \
       "scripts/gpu-check.sh run $(basename "$out").tar.gz"
}

# ---- run: helpers ---------------------------------------------------------------
# The first of python3 and /usr/bin/python3 that imports module $1.
pick_python() {
  local c
  for c in ${ZB_GPU_CHECK_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$c" > /dev/null && "$c" -c "import $1" 2> /dev/null &&
      { echo "$c"; return 0; }
  done
  return 1
}

left() { echo $(( budget - (SECONDS - started) )); }

# Prints the seconds a command may take: min(CAP, budget left - 5), or
# fails when fewer than 15 are left.
allow() { # CAP
  local l
  l=$(( $(left) - 5 ))
  [ "$l" -ge 15 ] || return 1
  echo $(( $1 < l ? $1 : l ))
}

# Runs a command in the bundle's environment under timeout; output to
# $res/NAME.{out,err}; on failure prints the exit code and stderr's tail.
inenv() { # NAME CAP CMD...
  local name=$1 cap=$2 t rc; shift 2
  t=$(allow "$cap") || { echo "    $name: skipped (time budget spent)"; return 99; }
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout -k 10 "$t" bash -c 'source "$1/env.sh" > /dev/null; shift; exec "$@"' \
    _ "$out" "$@" > "$res/$name.out" 2> "$res/$name.err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "    $name: TIMED OUT after ${t}s"
    else
      echo "    $name: FAILED (exit $rc):"
    fi
    local tailof=$res/$name.err
    [ -s "$tailof" ] || tailof=$res/$name.out
    tail -4 "$tailof" | cut -c1-300 | sed 's/^/      | /'
  fi
  return "$rc"
}

zbrun() { # NAME CAP PLAN ARGS... (report: $res/NAME.out, JSON)
  local name=$1 cap=$2 plan=$3; shift 3
  inenv "$name" "$cap" zb-run "$out/plans/$plan" --report-format json "$@"
}

rep() { "$py" "$report" "$@"; }

# ---- run: the parts ---------------------------------------------------------------
part_smoke() {
  echo "(1) zbrt-cuda-smoke"
  if [ ! -x "$out/bin/zbrt-cuda-smoke" ]; then
    echo "    skipped: not in the bundle"; return
  fi
  local rc
  inenv smoke 60 zbrt-cuda-smoke > /dev/null
  rc=$?
  [ "$rc" -eq 99 ] && { echo "    skipped (time budget spent)"; return; }
  echo "    exit $rc: $(grep -c '^PASS' "$res/smoke.out") PASS, $(grep -c '^FAIL' "$res/smoke.out")" \
       "FAIL; last line: $(tail -1 "$res/smoke.out")"
  grep -E '^(FAIL|skipped)' "$res/smoke.out" | head -5 | sed 's/^/    /'
  [ -s "$res/smoke.err" ] && tail -3 "$res/smoke.err" | sed 's/^/      | /'
}

part_losses() { # MODEL STEPS
  local m=$1 p runs=()
  for p in 1 2 4; do
    zbrun "$m-p$p" 60 "$m-p$p" --backend cuda --ranks "$p" --steps "$2" \
      --deterministic --comm-timeout 30 --data "$text" && runs+=("$res/$m-p$p.out")
  done
  echo "  $m (1/2/4 ranks on one GPU) vs the CPU backend (ref/$m-cpu.json):"
  [ ${#runs[@]} -gt 0 ] && rep losses "$out/ref/$m-cpu.json" "${runs[@]}"
}

part_fixtures() {
  local m p extra got
  for m in gpt2 llama bert; do
    extra=(); [ "$m" = bert ] && extra=(--grad-atol 1e-6)
    echo "  ONNX fixture $m vs PyTorch float64 (expected.json):"
    for p in 1 2 4; do
      zbrun "onnx-$m-p$p" 45 "onnx-$m-p$p" --backend cuda --ranks "$p" \
        --steps 1 --deterministic --comm-timeout 30 --inputs "$fixtures/$m" \
        --report-gradients ||
        continue
      got=$("$py" "$root/test/Frontend/Inputs/check_expected.py" \
        "$res/onnx-$m-p$p.out" "$fixtures/$m/expected.json" "${extra[@]}" 2>&1)
      if [[ $got == OK* ]]; then
        echo "    p=$p: $got"
      else
        echo "    p=$p: $(grep -c '^FAIL' <<< "$got") failures, first: $(head -1 <<< "$got")"
      fi
    done
    for p in 2 4; do
      if [ ! -s "$res/onnx-$m-p1.out" ] || [ ! -s "$res/onnx-$m-p$p.out" ]; then
        continue
      fi
      if cmp -s "$res/onnx-$m-p1.out" "$res/onnx-$m-p$p.out"; then
        echo "    p=1 and p=$p reports bit-identical: yes"
      else
        echo "    p=1 and p=$p reports bit-identical: NO"
      fi
    done
  done
}

g8_params() {
  local pyn
  pyn=$(pick_python numpy) || pyn=python3
  [ -f "$out/plans/g8-tf32/params.bin" ] && [ -f "$out/plans/g8-bf16/params.bin" ] && return 0
  if ! timeout 300 "$pyn" "$root/benchmarks/GPU/make_params.py" "$out/plans/g8-fp32" \
      --sha256 "$(cat "$out/ref/g8.params.sha256")" > "$res/make_params.log" 2>&1; then
    echo "    g8: params.bin not written ($pyn): $(tail -1 "$res/make_params.log")"
    return 1
  fi
  cp "$out/plans/g8-fp32/params.bin" "$out/plans/g8-tf32/params.bin"
  cp "$out/plans/g8-fp32/params.bin" "$out/plans/g8-bf16/params.bin"
}

part_speed() {
  local v g t tpy mode
  echo "(4) speed: the g8 GPT (8 layers, d 512, 8 microbatches of 8x128), 20 steps"
  if g8_params; then
    for v in fp32 tf32 bf16; do
      for g in on off; do
        zbrun "g8-$v-graphs-$g" 150 "g8-$v" --backend cuda --steps 20 \
          --cuda-graphs "$g" --data "$text" --profile "$res/g8-$v-graphs-$g.profile.json" &&
          rep speed "$res/g8-$v-graphs-$g.out" "zb $v, CUDA graphs $g"
      done
    done
    echo "  g8 losses (2 steps) vs the CPU backend (ref/g8-cpu.json):"
    rep losses "$out/ref/g8-cpu.json" "$res/g8-fp32-graphs-on.out"
    rep losses "$out/ref/g8-cpu.json" "$res/g8-tf32-graphs-on.out"
    rep losses "$out/ref/g8-cpu.json" "$res/g8-bf16-graphs-on.out"
  fi
  if [ "$fake" = 1 ]; then
    echo "  PyTorch: skipped (ZB_GPU_CHECK_FAKE=1)"
  elif ! tpy=$(pick_python torch); then
    echo "  PyTorch: skipped (no python3 with torch)"
  elif [ ! -f "$out/plans/g8-fp32/params.bin" ]; then
    echo "  PyTorch: skipped (no params.bin for g8)"
  else
    for mode in eager fast bf16; do
      t=$(allow 120) || { echo "    PyTorch $mode: skipped (time budget spent)"; continue; }
      if timeout -k 10 "$t" "$tpy" "$root/benchmarks/GPU/torch_gpt_step.py" \
          "$out/plans/g8-fp32" --data "$text" --heads 8 --steps 20 --mode "$mode" \
          > "$res/torch-$mode.out" 2> "$res/torch-$mode.err"; then
        rep torch "$res/torch-$mode.out" "PyTorch $mode" "$out/ref/g8-cpu.json"
      else
        echo "    PyTorch $mode: FAILED"; tail -3 "$res/torch-$mode.err" | sed 's/^/      | /'
      fi
    done
    [ -s "$res/torch-eager.out" ] && [ -s "$res/g8-fp32-graphs-on.out" ] &&
      rep compare "zb fp32 (graphs on) / PyTorch eager fp32" \
        "$res/g8-fp32-graphs-on.out" "$res/torch-eager.out"
    [ -s "$res/torch-fast.out" ] && [ -s "$res/g8-tf32-graphs-on.out" ] &&
      rep compare "zb TF32 (graphs on) / PyTorch SDPA+TF32+fused AdamW" \
        "$res/g8-tf32-graphs-on.out" "$res/torch-fast.out"
    [ -s "$res/torch-bf16.out" ] && [ -s "$res/g8-bf16-graphs-on.out" ] &&
      rep compare "zb bf16 (graphs on) / PyTorch autocast bf16+SDPA+fused AdamW" \
        "$res/g8-bf16-graphs-on.out" "$res/torch-bf16.out"
  fi
  echo "  demo-size GPT (4 layers, d 64, 8 microbatches of 4x32), 20 steps:"
  zbrun demo-gpu 90 demo-p1 --backend cuda --steps 20 --data "$text" \
    --profile "$res/demo-gpu.profile.json" && rep speed "$res/demo-gpu.out" "GPU"
  zbrun demo-cpu1 90 demo-cpu --backend cpu --steps 20 --data "$text" \
    --deterministic && rep speed "$res/demo-cpu1.out" "CPU, one core"
  [ -s "$res/demo-gpu.out" ] && [ -s "$res/demo-cpu1.out" ] &&
    rep compare "demo GPU / one CPU core" "$res/demo-gpu.out" "$res/demo-cpu1.out"
}

part_passes() {
  local v g
  echo "(5) T_F/T_B/T_W per microbatch: measured (zb-run --profile, steps 2..20) / predicted (plan.json)"
  for v in fp32 tf32; do
    for g in on off; do
      [ -s "$res/g8-$v-graphs-$g.profile.json" ] || continue
      echo "  g8 $v, graphs $g:"
      rep passes "$out/plans/g8-$v" "$res/g8-$v-graphs-$g.profile.json"
    done
  done
  if [ -s "$res/demo-gpu.profile.json" ]; then
    echo "  demo GPT:"
    rep passes "$out/plans/demo-p1" "$res/demo-gpu.profile.json"
  fi
}

# GPT-2 124M (issue 38). params.bin: make_params.py writes it once (all
# the g124 plans have the same parameters), the other plans link it.
g124_params() { # FIRST_PLAN
  local pyn d t
  [ -f "$1/params.bin" ] && return 0
  pyn=$(pick_python numpy) || pyn=python3
  t=$(allow 120) || { echo "    params.bin: skipped (time budget spent)"; return 1; }
  if ! timeout "$t" "$pyn" "$root/benchmarks/GPU/make_params.py" "$1" \
      --sha256 "$(cat "$out/ref/g124.params.sha256")" > "$res/g124-make_params.log" 2>&1; then
    echo "    params.bin not written ($pyn): $(tail -1 "$res/g124-make_params.log")"
    return 1
  fi
  for d in "$out"/plans/g124-*; do
    [ "$d" = "$1" ] || ln -sf "$1/params.bin" "$d/params.bin"
  done
}

# Why a run failed: out of memory, timed out, or its exit code.
why_failed() { # NAME RC
  if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
    echo "timed out"
  elif grep -qiE 'out of ([a-z]+ )?memory|OUT_OF_MEMORY|ALLOC_FAILED' "$res/$1.err" \
       "$res/$1.out" 2> /dev/null; then
    echo "out of memory"
  else
    echo "failed (exit $2)"
  fi
}

part_gpt124m() {
  local p b name rc why t mode label tpy plan best= batches
  local rows=$res/g124.jsonl
  echo "(7) GPT-2 124M (12 layers, d 768, 12 heads, vocab 50257, T 1024; bf16, AdamW," \
       "8 microbatches a step; issue 38): the largest microbatch that fits, tokens/s, MFU"
  batches=$(cd "$out/plans" 2>/dev/null && ls -d g124-p1-b* 2>/dev/null |
            sed 's/^g124-p1-b//' | sort -rn | tr '\n' ' ')
  if [ -z "$batches" ]; then echo "    skipped: no GPT-2 124M plans in the bundle"; return; fi
  : > "$rows"
  echo "    candidates (sequences per microbatch), largest first: $batches"
  # The stand-in's device memory is host memory that its memsets and copies
  # touch (a 124M model at 4 x 1024 took 21 GB of RSS): with FAKE, 2 GiB, so
  # that every candidate runs out of memory at once, the path (7) takes when
  # one does not fit.
  if [ "$fake" = 1 ]; then
    local ZB_FAKE_CUDA_ARENA_GB=2; export ZB_FAKE_CUDA_ARENA_GB
    echo "    ZB_GPU_CHECK_FAKE=1: the stand-in's device has 2 GiB (every candidate runs out of memory)"
  fi
  g124_params "$out/plans/g124-p1-b${batches%% *}" || return
  # zb on 1 rank, then 2 ranks sharing the GPU: each candidate in its own
  # process, largest first, until one fits.
  for p in 1 2; do
    label="zb bf16, $p rank$([ "$p" = 2 ] && echo "s sharing the GPU")"
    for b in $batches; do
      name=g124-p$p-b$b
      zbrun "$name" 120 "$name" --backend cuda --ranks "$p" --steps 10 \
        --data "$text" --comm-timeout 60 --profile "$res/$name.profile.json"
      rc=$?
      if [ "$rc" -eq 0 ]; then
        rep gpt-row "$rows" "$label" "$out/plans/$name" "$res/$name.out" \
          "$res/$name.profile.json"
        [ "$p" = 1 ] && best=$b
        break
      elif [ "$rc" -eq 99 ]; then
        rep gpt-skip "$rows" "$label" "$out/plans/$name" "skipped (time budget spent)"
        break
      fi
      rep gpt-skip "$rows" "$label" "$out/plans/$name" "$(why_failed "$name" "$rc")"
    done
  done
  # PyTorch at zb's batch (1 rank's; the largest candidate if none fitted).
  plan=$out/plans/g124-p1-b${best:-${batches%% *}}
  if [ "$fake" = 1 ]; then
    echo "    PyTorch: skipped (ZB_GPU_CHECK_FAKE=1)"
  elif ! tpy=$(pick_python torch); then
    echo "    PyTorch: skipped (no python3 with torch)"
  else
    for mode in bf16 compile; do
      if [ "$mode" = bf16 ]; then
        label="PyTorch eager, autocast bf16, SDPA, fused AdamW"; t=120
      else
        label="PyTorch torch.compile, autocast bf16, SDPA, fused AdamW"; t=240
      fi
      name=torch-g124-$mode
      if ! t=$(allow "$t"); then
        rep gpt-skip "$rows" "$label" "$plan" "skipped (time budget spent)"; continue
      fi
      timeout -k 10 "$t" "$tpy" "$root/benchmarks/GPU/torch_gpt_step.py" "$plan" \
        --data "$text" --heads 12 --steps 10 --mode "$mode" \
        > "$res/$name.out" 2> "$res/$name.err"
      rc=$?
      if [ "$rc" -eq 0 ]; then
        rep gpt-row "$rows" "$label" "$plan" "$res/$name.out"
      else
        rep gpt-skip "$rows" "$label" "$plan" "$(why_failed "$name" "$rc")"
        tail -3 "$res/$name.err" | cut -c1-300 | sed 's/^/      | /'
      fi
    done
  fi
  # The same on 1 rank with the attention decomposed (no fused kernel),
  # with the exported attention (no zb-fuse-attention), then with the plain
  # cross-entropy (no zb-fuse-cross-entropy).
  for d in "$out"/plans/g124-k1-b* "$out"/plans/g124-u1-b* "$out"/plans/g124-c1-b*; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    case $name in
      g124-k1-*) label="zb bf16, 1 rank, --gpu-attention-kernel=false" ;;
      g124-u1-*) label="zb bf16, 1 rank, --fuse-attention=false" ;;
      *) label="zb bf16, 1 rank, --fuse-cross-entropy=false" ;;
    esac
    zbrun "$name" 120 "$name" --backend cuda --ranks 1 --steps 10 \
      --data "$text" --comm-timeout 60 --profile "$res/$name.profile.json"
    rc=$?
    if [ "$rc" -eq 0 ]; then
      rep gpt-row "$rows" "$label" "$d" "$res/$name.out" "$res/$name.profile.json"
    elif [ "$rc" -eq 99 ]; then
      rep gpt-skip "$rows" "$label" "$d" "skipped (time budget spent)"
    else
      rep gpt-skip "$rows" "$label" "$d" "$(why_failed "$name" "$rc")"
    fi
  done
  echo "  GPT-2 124M table (rows: $rows; \`gpu_check_report.py gpt-table\` renders it again):"
  rep gpt-table "$rows"
}

part_kernels() {
  local ncu
  echo "(6) kernel times: ncu on one eager step of g8 TF32 (the first 1000 launches: F, B, W of microbatch 0)"
  if [ "$fake" = 1 ]; then echo "    skipped (ZB_GPU_CHECK_FAKE=1)"; return; fi
  ncu=$(command -v ncu || find /usr/local/cuda*/bin /opt/nvidia -name ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "    skipped: ncu not found"; return; }
  [ -f "$out/plans/g8-tf32/params.bin" ] || { echo "    skipped (no params.bin)"; return; }
  # One metric: no kernel replay (no save and restore of memory); the
  # clocks and caches as the program leaves them.
  inenv ncu-g8-tf32 150 "$ncu" --metrics gpu__time_duration.sum \
    --cache-control none --clock-control none --launch-count 1000 --csv \
    --page raw zb-run "$out/plans/g8-tf32" --backend cuda --steps 1 \
    --cuda-graphs off --data "$text" || return
  rep kernels "$out/plans/g8-tf32/gpu_report.json" "$res/ncu-g8-tf32.out"
}

part_sanitizer() {
  local cs name m args n
  echo "(3) compute-sanitizer --tool memcheck, one step of each 1-rank model"
  if [ "$fake" = 1 ]; then echo "    skipped (ZB_GPU_CHECK_FAKE=1)"; return; fi
  cs=$(command -v compute-sanitizer ||
       find /usr/local/cuda*/bin -name compute-sanitizer 2>/dev/null | head -1)
  [ -n "$cs" ] || { echo "    skipped: compute-sanitizer not found"; return; }
  for name in gpt2-p1 demo-p1 onnx-gpt2-p1 onnx-llama-p1 onnx-bert-p1 g8-fp32; do
    [ -f "$out/plans/$name/params.bin" ] || { echo "    $name: skipped (no params.bin)"; continue; }
    args=(--data "$text")
    m=${name#onnx-}
    [[ $name == onnx-* ]] && args=(--inputs "$fixtures/${m%-p1}" --report-gradients)
    inenv "memcheck-$name" 120 "$cs" --tool memcheck --launch-timeout 60 \
      --print-limit 5 zb-run "$out/plans/$name" --backend cuda --steps 1 \
      "${args[@]}"
    n=$(grep -ho 'ERROR SUMMARY: [0-9]* errors\?' "$res/memcheck-$name.out" \
        "$res/memcheck-$name.err" 2>/dev/null | head -1)
    echo "    $name: ${n:-no ERROR SUMMARY line}"
  done
}

# Whether part $1 is in ZB_GPU_CHECK_PARTS.
wanted() { [[ " $parts " == *" $1 "* ]]; }

# OUT.tar.gz (what travels) is unpacked beside itself, as OUT (whatever
# name the tarball has now).
unpack() { # TARBALL
  local dir=${1%.tar.gz}
  if [ -e "$dir" ]; then
    [ -f "$dir/manifest.txt" ] || die "'$dir' exists and is not a gpu-check.sh bundle"
    rm -rf "$dir"
  fi
  mkdir -p "$dir" || die "cannot create $dir"
  tar -C "$dir" --strip-components=1 -xzf "$1" || die "cannot unpack $1"
  echo "$dir"
}

run_checks() {
  local dir=$1
  [[ $dir == *.tar.gz ]] && { dir=$(unpack "$dir") || exit 1; }
  out=$(cd "$dir" 2>/dev/null && pwd) || die "no directory '$dir'"
  if [ ! -f "$out/env.sh" ] || [ ! -d "$out/ref" ]; then
    die "'$dir' is not a gpu-check.sh prepare output"
  fi
  res=${ZB_GPU_CHECK_RESULTS:-}
  [ -n "$res" ] || { res=$out/results; rm -rf "$res"; }
  mkdir -p "$res" || die "cannot create $res"
  res=$(cd "$res" && pwd)
  budget=${ZB_GPU_CHECK_BUDGET_S:-560}; started=$SECONDS
  parts=${ZB_GPU_CHECK_PARTS:-smoke losses speed passes gpt124m kernels sanitizer}
  # Everything printed from here on is also in $res/gpu-check.log.
  exec > >(tee "$res/gpu-check.log") 2>&1
  fake=${ZB_GPU_CHECK_FAKE:-0}
  if [ "$fake" = 1 ]; then
    local lib=$build/lib/libzb_fake_cuda.so
    [ -f "$lib" ] || die "ZB_GPU_CHECK_FAKE=1: no $lib (build zb_fake_cuda)"
    export ZBRT_CUDA_DRIVER=$lib ZBRT_CUBLAS=$lib ZBRT_NCCL=$lib ZB_FAKE_CUDA_NOOP_KERNELS=1
  fi
  py=$(pick_python json) || die "no python3"
  echo "== gpu-check.sh run $(basename "$out") ($(head -2 "$out/manifest.txt" | tail -1));" \
       "$(date -u +%FT%TZ); budget ${budget}s${ZB_GPU_CHECK_FAKE:+; FAKE=$fake}"
  command -v nvidia-smi > /dev/null &&
    echo "   $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  # (7) (GPT-2 124M) runs after (1)-(5) with time kept for it: the parts
  # before it may spend the budget less ZB_GPU_CHECK_G124_S, (6) and (3)
  # what is left after it.
  local total=$budget reserve=${ZB_GPU_CHECK_G124_S:-240}
  if ! wanted gpt124m || ! ls -d "$out"/plans/g124-p1-b* > /dev/null 2>&1; then
    reserve=0
  fi
  wanted smoke && part_smoke
  budget=$(( total - reserve ))
  if wanted losses; then
    echo "(2) losses on 1/2/4 ranks sharing one GPU (--backend cuda --deterministic)"
    part_losses gpt2 10
    part_losses demo 10
    part_fixtures
  fi
  wanted speed && part_speed
  wanted passes && part_passes
  budget=$total
  wanted gpt124m && part_gpt124m
  wanted kernels && part_kernels
  wanted sanitizer && part_sanitizer
  echo "== done in $(( SECONDS - started ))s; reports and logs in $res"
}

[ $# -eq 2 ] || usage
case "$1" in
  prepare) prepare "$2" ;;
  run) run_checks "$2" ;;
  *) usage ;;
esac
