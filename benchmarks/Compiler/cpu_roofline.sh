#!/usr/bin/env bash
# Measures this machine's single-core sgemm GFLOP/s and memory bandwidth, the
# numbers behind the "cpu" target of lib/Transforms/CostModel.cpp
# (docs/cost-model.md). usage: benchmarks/Compiler/cpu_roofline.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cc -O2 -march=native -o "$tmp/roofline" "$root/benchmarks/Compiler/cpu_roofline.c" -lopenblas
OPENBLAS_NUM_THREADS=1 "$tmp/roofline"
