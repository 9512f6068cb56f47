#!/usr/bin/env bash
# DualPipeV (zb-sched --schedule dualpipev) beside ZB-V and V-Half: bubble
# rate and peak activation memory per rank (unit M_B, one microbatch's
# activations of a whole rank's layers), for T_F = T_B = T_W = 1 and for
# the paper's ratio T_F : T_B : T_W = 1 : 1 : 1 with M_W = M_B / 2; and
# DeepSeek's bubble formula for DualPipeV, (PP/2 - 1)(F&B + B - 3W) with
# PP = 2p chunks, in the same time unit (F&B = F + B: zb issues the overlapped
# pair back to back). Usage: benchmarks/Schedule/dualpipev.sh [BUILD_DIR]
set -euo pipefail
build="${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
sched="$build/bin/zb-sched"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%4s %5s  %-16s %-16s %-16s %s\n' p m "zb-v bubble/peak" \
  "v-half" "dualpipev" "DeepSeek bubble (time)  zb dualpipev bubble (time)"
for pm in "4 8" "4 16" "8 16" "8 32" "16 32" "16 64"; do
  set -- $pm
  p=$1 m=$2
  row=()
  for s in zb-v v-half dualpipev; do
    "$sched" --stages "$p" --microbatches "$m" --cost-f 1 --cost-b 1 \
      --cost-w 1 --mem-b 1 --mem-w 0.5 --schedule "$s" --format json > "$tmp"
    row+=("$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f / %.2f" % (d["bubble_rate"], max(d["peak_memory"])))' "$tmp")")
    if [[ $s == dualpipev ]]; then
      span=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["makespan"])' "$tmp")
    fi
  done
  # Each rank runs 3m unit passes of 0.5 per chunk: 3m; the bubble is the span minus that.
  formula=$((p - 1))
  bubble=$(python3 -c "print('%.1f' % ($span - 3 * $m))")
  printf '%4s %5s  %-16s %-16s %-16s %-23s %s\n' "$p" "$m" "${row[0]}" \
    "${row[1]}" "${row[2]}" "$formula" "$bubble"
done
