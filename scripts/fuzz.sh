#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, ZB_ENABLE_FUZZ with clang-22 and
# ZB_SANITIZE=address,undefined) in $ZB_FUZZ_BUILD_DIR (default build-fuzz)
# and runs each for a fixed budget from its seed corpus, two at a time.
# Prints per target: executions, coverage, new corpus entries and whether it
# found a crash (crash-*/leak-*/timeout-* files under the output directory).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]
#   targets: onnx stablehlo plan params schedule profile data (default: all)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUDGET="${1:-60}"; shift || true
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(onnx stablehlo plan params schedule profile data)
BUILD="${ZB_FUZZ_BUILD_DIR:-$root/build-fuzz}"
# compiler-rt (libFuzzer, ASan, UBSan) for clang-22.
if [[ ! -d /usr/lib/llvm-22/lib/clang/22/lib/linux ]] ||
   ! ls /usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.fuzzer* >/dev/null 2>&1; then
  apt_prefix=(); [[ $(id -u) -ne 0 ]] && apt_prefix=(sudo)
  "${apt_prefix[@]}" apt-get install -y libclang-rt-22-dev >/dev/null
fi
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DLLVM_USE_LINKER=lld \
    -DZB_ENABLE_FUZZ=ON -DZB_SANITIZE=address,undefined >/dev/null
fi
ninja -C "$BUILD" "${TARGETS[@]/#/zb-fuzz-}" >/dev/null
OUT="$BUILD/fuzz-runs"
mkdir -p "$OUT"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
run() {
  local t="$1" dir="$OUT/$1"
  rm -rf "$dir"; mkdir -p "$dir/corpus"
  cp -r "$root/fuzz/corpus/$t/." "$dir/corpus/"
  (cd "$dir" && "$BUILD/bin/zb-fuzz-$t" -max_total_time="$BUDGET" \
      -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 corpus \
      > log.txt 2>&1) || true
  local execs cov crashes
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log.txt" | grep -o '[0-9]*$' || echo ?)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log.txt" | tail -1 | grep -o '[0-9]*' || echo ?)
  crashes=$(ls "$dir" | grep -cE '^(crash|leak|timeout|oom)-' || true)
  printf "%-10s %10s execs  cov %6s  corpus %5s -> %5s  findings %s\n" "$t" \
    "$execs" "$cov" "$(ls "$root/fuzz/corpus/$t" | wc -l)" \
    "$(ls "$dir/corpus" | wc -l)" "$crashes"
}
echo "target          executions  coverage  corpus (seed -> end)  findings (${BUDGET} s each)"
for ((i = 0; i < ${#TARGETS[@]}; i += 2)); do
  run "${TARGETS[$i]}" & 
  [[ $((i + 1)) -lt ${#TARGETS[@]} ]] && run "${TARGETS[$((i + 1))]}" &
  wait
done
