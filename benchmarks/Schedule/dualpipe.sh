#!/usr/bin/env bash
# DualPipe (zb-sched --schedule dualpipe) beside 1F1B and ZB-1p on the same
# p ranks and p model stages, against DeepSeek's table (the DualPipe
# repository's README, after the DeepSeek-V3 report's Table 2): bubbles
# 1F1B (PP-1)(F+B), ZB1P (PP-1)(F+B-2W), DualPipe (PP/2-1)(F&B+B-3W), with
# PP = p, F = T_F, B = the whole backward T_B + T_W, W = T_W and F&B = F + B
# (zb issues the overlapped pair back to back). Per stage T_F = T_B = T_W =
# 1, M_B = 1, M_W = 0.5; bubble = span - 3m in time units, peak activation
# memory per rank in M_B (DualPipe also holds 2x the parameters).
# Usage: benchmarks/Schedule/dualpipe.sh [BUILD_DIR]
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
sched="$build/bin/zb-sched"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%4s %5s  %-22s %-22s %-22s %s\n' p m "1f1b bubble/peak (DS)" \
  "zb-1p bubble/peak (DS)" "dualpipe bubble/peak (DS)" "dualpipev p/2 ranks"
for pm in "4 8" "4 16" "8 16" "8 32" "16 32" "16 64"; do
  set -- $pm
  p=$1 m=$2
  row=()
  for s in 1f1b zb-1p dualpipe; do
    "$sched" --stages "$p" --microbatches "$m" --cost-f 1 --cost-b 1 \
      --cost-w 1 --mem-b 1 --mem-w 0.5 --schedule "$s" --format json > "$tmp"
    case $s in
      1f1b) ds=$((3 * (p - 1))) ;;
      zb-1p) ds=$((p - 1)) ;;
      dualpipe) ds=$((p / 2 - 1 > 0 ? 2 * (p / 2 - 1) : 0)) ;;
    esac
    row+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.1f / %.2f (%s)" % (d["stage_span"] - 3 * int(sys.argv[2]), max(d["peak_memory"]), sys.argv[3]))' "$tmp" "$m" "$ds")")
  done
  # DualPipeV on p/2 ranks with m/2 microbatches (its chunks half a rank's
  # share: per-rank costs 2): the same span, DualPipe cut in half.
  "$sched" --stages $((p / 2)) --microbatches $((m / 2)) --cost-f 2 --cost-b 2 \
    --cost-w 2 --mem-b 2 --mem-w 1 --schedule dualpipev --format json > "$tmp"
  v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.1f / %.2f" % (d["stage_span"] - 3 * int(sys.argv[2]), max(d["peak_memory"])))' "$tmp" "$m")
  printf '%4s %5s  %-22s %-22s %-25s %s\n' "$p" "$m" "${row[0]}" "${row[1]}" \
    "${row[2]}" "$v"
done
