#!/usr/bin/env bash
# Builds zb with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DZB_SANITIZE=address,undefined, the system compiler) in
# $ZB_SANITIZE_BUILD_DIR (default build-asan) and runs the test suite there.
# Left out: the Python package tests (the nanobind module would need the
# sanitizer runtime preloaded into python) and ZbRun.MlirLoweredRankProgram
# (its hand-written program defines `step`, which without RTLD_DEEPBIND,
# refused by ASan, binds to libc's). MPI's own allocations are not
# leak-checked (detect_leaks=0); allow_user_poisoning=0 because LLVM's
# header-inline BumpPtrAllocator poisons memory from our instrumented code
# that the uninstrumented libLLVM/libMLIR then hand out (false
# use-after-poison). Any other sanitizer report fails the test.
#
#   scripts/test-sanitized.sh [ctest args...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ZB_SANITIZE_BUILD_DIR:-$root/build-asan}"
JOBS="${ZB_JOBS:-$(nproc)}"
"$root/scripts/install-deps.sh"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DLLVM_USE_LINKER=lld \
    -DZB_SANITIZE=address,undefined >/dev/null
fi
ninja -C "$BUILD" -j "$JOBS"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:allow_user_poisoning=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export OPENBLAS_NUM_THREADS=1
cd "$BUILD"
ctest -j "$JOBS" --output-on-failure \
  -E 'ZBPython|ZbRun.MlirLoweredRankProgram' "$@"
