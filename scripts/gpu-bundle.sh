#!/usr/bin/env bash
# gpu-bundle.sh - a relocatable zb runtime for a machine without the compiler.
#
#   scripts/gpu-bundle.sh [--build DIR] [--system-mpi] OUT [PLAN_DIR...]
#
# Writes the directory OUT, which can be copied or moved anywhere (on this
# machine or another x86-64 Linux whose glibc and libstdc++ are at least as
# new), and needs there only the NVIDIA driver and the CUDA libraries
# (cuBLAS, NCCL) for --backend cuda, nothing for --backend cpu:
#   bin/      zb-run, and Open MPI's mpirun and orted
#   lib/      libzbrt.so and every shared library these load beyond glibc,
#             libstdc++ and libgcc_s (Open MPI, PMIx, OpenBLAS, protobuf, ...);
#             lib/openmpi and lib/pmix: Open MPI's and PMIx's components
#   share/    Open MPI's and PMIx's help texts; etc/: Open MPI's settings
#   include/  the runtime headers (zbrt/)
#   plans/    a copy of each PLAN_DIR (a zb-compile output), by its name
#   env.sh    source it (bash): PATH, LD_LIBRARY_PATH, OPAL_PREFIX and the
#             other Open MPI/PMIx relocation variables, Open MPI's run-as-root
#             settings, and ZBRT_CUBLAS / ZBRT_NCCL / ZBRT_CUDA_DRIVER where
#             the machine has those libraries (a value already set is kept)
# On the other machine:
#   source OUT/env.sh && zb-run OUT/plans/NAME --backend cuda --ranks 2 ...
#
# zb-run and libzbrt come from `cmake --install DIR --component runtime`
# (RUNPATH $ORIGIN/../lib and $ORIGIN, so no build path is baked in); the
# libraries copied from this machine are found through that RUNPATH and
# env.sh's LD_LIBRARY_PATH (no patchelf needed). Open MPI and PMIx are told
# where they now live by OPAL_PREFIX and the OPAL_*/PMIX_* directory
# variables. With --system-mpi no MPI is copied: the other machine's own
# Open MPI 4 (libmpi.so.40, mpirun on PATH) is used.
#   --build DIR   the configured and built zb tree (default: $ZB_BUILD_DIR,
#                 else build/ beside scripts/); zb-run and zbrt must be built
# Test: test/Tools/gpu-bundle.test. docs/cuda.md, "Shipping a plan to a GPU machine".
set -euo pipefail

die() { echo "gpu-bundle.sh: error: $*" >&2; exit 1; }
usage() { echo "usage: $(sed -n '4p' "$0" | sed 's/^#  *//')" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${ZB_BUILD_DIR:-$here/../build}
system_mpi=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    --system-mpi) system_mpi=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1'" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
out=$1; shift
for tool in cmake readelf ldd; do
  command -v "$tool" >/dev/null || die "'$tool' not found on PATH"
done

# ---- The runtime: zb-run, libzbrt and the headers (cmake --install) --------
# OUT is made afresh; an existing OUT is replaced only if it is a bundle.
prepare_out() {
  if [ -e "$out" ]; then
    [ -f "$out/.zb-bundle" ] || [ -z "$(ls -A "$out" 2>/dev/null)" ] ||
      die "'$out' exists and is not a zb bundle: refusing to replace it"
    rm -rf "$out"
  fi
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  touch "$out/.zb-bundle"
}

install_runtime() {
  [ -f "$build/CMakeCache.txt" ] || die "'$build' is not a configured zb build (--build DIR)"
  build=$(cd "$build" && pwd)
  local zbrun=$build/bin/zb-run
  [ -x "$zbrun" ] || die "$zbrun is not built (ninja -C $build zb-run zbrt)"
  if readelf -d "$zbrun" | grep -qE 'NEEDED.*lib(LLVM|MLIR)'; then
    die "$zbrun needs an LLVM shared library; rebuild it (ninja -C $build zb-run)"
  fi
  cmake --install "$build" --component runtime --prefix "$out" >/dev/null ||
    die "cmake --install $build --component runtime failed"
}

# ---- Open MPI and PMIx -------------------------------------------------------
# Open MPI's directories (ompi_info --path all), as "name:dir" lines.
ompi_paths=
ompi_path() {
  echo "$ompi_paths" | awk -F: -v k="$1" '!n && $2 == k {print $3; n = 1}'
}

# Copies the files of directory $1 matching glob $3 into $2 (dereferenced).
copy_dir() {
  local from=$1 to=$2 pattern=${3:-*} f
  [ -d "$from" ] || return 0
  mkdir -p "$to"
  for f in "$from"/$pattern; do
    [ -e "$f" ] && cp -rL "$f" "$to/"
  done
  return 0
}

copy_mpi() {
  command -v ompi_info >/dev/null ||
    die "Open MPI's ompi_info not found (install openmpi-bin, or --system-mpi)"
  local bindir pkglibdir pkgdatadir sysconfdir pmixlib
  ompi_paths=$(ompi_info --parsable --path all)
  bindir=$(ompi_path bindir); pkglibdir=$(ompi_path pkglibdir)
  pkgdatadir=$(ompi_path pkgdatadir); sysconfdir=$(ompi_path sysconfdir)
  [ -x "$bindir/orterun" ] || die "no orterun (mpirun) in $bindir"
  cp -L "$bindir/orterun" "$out/bin/mpirun"
  [ -x "$bindir/orted" ] && cp -L "$bindir/orted" "$out/bin/orted"
  copy_dir "$pkglibdir" "$out/lib/openmpi" '*.so'
  copy_dir "$pkgdatadir" "$out/share/openmpi"
  copy_dir "$sysconfdir" "$out/etc/openmpi" '*.conf'
  # PMIx (Debian: an external libpmix.so.2 with its own components/texts).
  pmixlib=$(ldd "$out/bin/mpirun" "$out"/lib/openmpi/mca_pmix_*.so 2>/dev/null |
            awk '!n && $1 ~ /^libpmix\.so/ && $3 ~ /^\// {print $3; n = 1}')
  if [ -n "$pmixlib" ]; then
    pmixlib=$(dirname "$(realpath "$pmixlib")")
    copy_dir "$pmixlib/pmix" "$out/lib/pmix" '*.so'
    copy_dir "$pmixlib/../share/pmix" "$out/share/pmix"
  fi
}

# ---- Every shared library the bundle loads, beside libzbrt ------------------
# Not copied: glibc, the C++ runtime (every machine has them, and they must
# match its loader), the NVIDIA driver and CUDA libraries (the machine's own),
# and with --system-mpi libmpi and everything it loads (the machine's MPI
# brings its own). ldd lists the whole closure, so one pass is enough.
skip_re='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libstdc\+\+|libgcc_s|libcuda|libnvidia.*|libcublas(Lt)?|libcudart|libnccl|libzbrt)\.so'

# The files whose dependencies the bundle carries (all ELF: bin/ and lib/).
bundle_elves() {
  find "$out/bin" "$out/lib" -type f
}

# "soname path" of every library the files named on stdin load.
dependencies() {
  xargs -r ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u
}

copy_dependencies() {
  local so path mpi_closure=" "
  if [ "$system_mpi" -eq 1 ]; then
    path=$(echo "$out/bin/zb-run" | dependencies | awk '$1 ~ /^libmpi\.so/ {print $2}')
    [ -n "$path" ] && mpi_closure=" libmpi.so.40 $(echo "$path" | dependencies | cut -d' ' -f1 | tr '\n' ' ')"
  fi
  while read -r so path; do
    [[ "$so" =~ $skip_re ]] && continue
    [[ "$mpi_closure" == *" $so "* ]] && continue
    [ -e "$out/lib/$so" ] || cp -L "$path" "$out/lib/$so"
  done < <(bundle_elves | dependencies)
}

# ---- Plans --------------------------------------------------------------------
check_plans() {
  local plan names=" " name
  for plan in "$@"; do
    [ -f "$plan/plan.json" ] || die "'$plan' is not a zb-compile output (no plan.json)"
    name=$(basename "$(cd "$plan" && pwd)")
    [[ "$names" != *" $name "* ]] || die "two plans named '$name'"
    names="$names$name "
  done
}

copy_plans() {
  local plan
  mkdir -p "$out/plans"
  for plan in "$@"; do
    cp -rL "$plan" "$out/plans/$(basename "$(cd "$plan" && pwd)")"
  done
}

# ---- env.sh -------------------------------------------------------------------
write_env() {
  cat > "$out/env.sh" <<'ENV'
# Source this file (bash) to run the zb bundle it sits in:
#   source env.sh && zb-run plans/NAME --ranks N [--backend cuda] ...
# Written by scripts/gpu-bundle.sh; nothing in it names the machine it was
# made on: every path is relative to this file or found on this machine.
# LD_LIBRARY_PATH puts the bundle's libraries (Open MPI's dependencies,
# protobuf, OpenBLAS, ...) first for every program started from this shell:
# source it where zb-run runs, not in a shell that also runs PyTorch.
ZB_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZB_BUNDLE
export PATH="$ZB_BUNDLE/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$ZB_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -x "$ZB_BUNDLE/bin/mpirun" ]; then
  # Open MPI and PMIx moved from where they were built: OPAL_PREFIX is Open
  # MPI's relocation variable, the others name this layout's directories.
  export OPAL_PREFIX="$ZB_BUNDLE" OPAL_EXEC_PREFIX="$ZB_BUNDLE"
  export OPAL_BINDIR="$ZB_BUNDLE/bin" OPAL_LIBDIR="$ZB_BUNDLE/lib"
  export OPAL_PKGLIBDIR="$ZB_BUNDLE/lib/openmpi"
  export OPAL_DATAROOTDIR="$ZB_BUNDLE/share" OPAL_DATADIR="$ZB_BUNDLE/share"
  export OPAL_PKGDATADIR="$ZB_BUNDLE/share/openmpi"
  export OPAL_SYSCONFDIR="$ZB_BUNDLE/etc/openmpi"
  export PMIX_PREFIX="$ZB_BUNDLE" PMIX_EXEC_PREFIX="$ZB_BUNDLE"
  export PMIX_LIBDIR="$ZB_BUNDLE/lib" PMIX_PKGLIBDIR="$ZB_BUNDLE/lib/pmix"
  export PMIX_DATADIR="$ZB_BUNDLE/share" PMIX_PKGDATADIR="$ZB_BUNDLE/share/pmix"
  export PMIX_SYSCONFDIR="$ZB_BUNDLE/etc/openmpi"
fi
# hwloc's optional plugins (PCI, OpenCL, X) are not carried: look for them in
# the bundle only, so that a run here behaves as it will there.
export HWLOC_PLUGINS_PATH="$ZB_BUNDLE/lib/hwloc"
# Open MPI refuses root unless told (containers run as root), and more ranks
# than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# The CUDA libraries libzbrt opens with dlopen: the loader's cache, then the
# usual CUDA and pip (nvidia-*) locations. A value already set is kept.
zb_find_lib() {
  local found
  found=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}')
  if [ -n "$found" ]; then echo "$found"; return; fi
  for found in /usr/local/cuda*/targets/*/lib/"$1" /usr/local/cuda*/lib64/"$1" \
               /usr/lib/x86_64-linux-gnu/"$1" /usr/lib64/"$1" \
               /usr/local/lib/python3*/dist-packages/nvidia/*/lib/"$1" \
               /usr/lib/python3*/site-packages/nvidia/*/lib/"$1" \
               /opt/conda/lib/python3*/site-packages/nvidia/*/lib/"$1"; do
    if [ -e "$found" ]; then echo "$found"; return; fi
  done
}
[ -n "${ZBRT_CUDA_DRIVER:-}" ] || ZBRT_CUDA_DRIVER=$(zb_find_lib libcuda.so.1)
[ -n "${ZBRT_CUBLAS:-}" ] || ZBRT_CUBLAS=$(zb_find_lib libcublas.so.13)
[ -n "${ZBRT_NCCL:-}" ] || ZBRT_NCCL=$(zb_find_lib libnccl.so.2)
for zb_var in ZBRT_CUDA_DRIVER ZBRT_CUBLAS ZBRT_NCCL; do
  if [ -n "${!zb_var}" ]; then export "${zb_var?}"; else unset "$zb_var"; fi
done
unset zb_var
unset -f zb_find_lib
ENV
}

# ---- Check: nothing refers to this build ----------------------------------
check_relocatable() {
  local bad
  bad=$({ bundle_elves; find "$out/plans" -name '*.so'; } |
        xargs -r readelf -d 2>/dev/null |
        awk -v b="$build" '/^File: / {f = $2} /R(UN)?PATH/ && index($0, b) {print f}')
  [ -z "$bad" ] || die "RUNPATH names $build in: $bad"
}

check_plans "$@"
prepare_out
install_runtime
[ "$system_mpi" -eq 1 ] || copy_mpi
copy_dependencies
copy_plans "$@"
write_env
check_relocatable
echo "gpu-bundle.sh: wrote $out ($(du -sh "$out" | cut -f1); $# plan(s));" \
     "there: source $(basename "$out")/env.sh && zb-run $(basename "$out")/plans/NAME ..."
