#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: GoogleTest unit tests
# (scheduler, runtime, dialect) and the lit suite (dialect, passes, importers,
# tools, end-to-end training on MPI ranks), through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
BUILD_DIR="${ZB_BUILD_DIR:-$root/build}"
export OPENBLAS_NUM_THREADS=1
cd "$BUILD_DIR"
ctest --output-on-failure -j "${ZB_JOBS:-$(nproc)}" "$@"
