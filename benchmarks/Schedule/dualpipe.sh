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

# The overlapped F&B pair (zb-sched --fb-overlap ALPHA, Problem::fbOverlap):
# a pair costs max(T_F, T_B) + (1 - ALPHA) min(T_F, T_B), both of its
# outputs at its end. DeepSeek's F&B (forward and full backward chunks
# overlapped) is then that plus T_W: with unit costs F&B = 3 - ALPHA and
# DualPipe's bound (PP/2-1)(F&B + B - 3W) = (p/2-1)(2 - ALPHA). Bubble =
# stage span - ideal time (the ideal counts each pair once).
echo
printf '%4s %5s %6s  %-12s %-12s %s\n' p m alpha "ideal" "span" "bubble (DS bound)"
for pm in "4 8" "8 16" "16 32"; do
  set -- $pm
  p=$1 m=$2
  for alpha in 0 0.5 1; do
    "$sched" --stages "$p" --microbatches "$m" --cost-f 1 --cost-b 1 \
      --cost-w 1 --mem-b 1 --mem-w 0.5 --schedule dualpipe \
      --fb-overlap "$alpha" --format json > "$tmp"
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); p=int(sys.argv[2]); a=float(sys.argv[4])
print("%4s %5s %6s  %-12.2f %-12.2f %.2f (%.2f)" % (p, sys.argv[3], sys.argv[4], d["ideal_time"], d["stage_span"], d["stage_span"] - d["ideal_time"], (p // 2 - 1) * (2 - a)))' "$tmp" "$p" "$m" "$alpha"
  done
done
