#!/usr/bin/env bash
# The cost of synchronising the optimizer, predicted by the simulator
# (lib/Schedule/OptimizerSync, zb-sched --optimizer-sync) for the paper's
# Table 7 runs (Appendix E: ZB-2p with post-validation versus with an
# all-reduce before the optimizer step), with the profiled T_F/T_B/T_W/T_comm
# and M_B/M_W of the paper's Table 5 (Inputs/zb_paper_table5.csv; the
# columns and cost conventions: docs/references.md), memory limit 2p * M_B.
# Prints the steady-state iteration time of each mode and the all-reduce's
# slowdown next to the paper's measured throughput ratio.
#
#   benchmarks/Schedule/optimizer_sync.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$root/build}"
CSV="$root/benchmarks/Schedule/Inputs/zb_paper_table5.csv"
printf "%-6s %3s %3s  %12s %12s %12s  %9s  %s\n" model p m "none (ms)" \
  "all-reduce" "post-valid." "AR / PV" "paper: PV / AR throughput (Table 7)"
# model p m paper-post-validation paper-all-reduce (samples/GPU/s)
while read -r model p m pv ar; do
  row=$(grep -E "^$model,[0-9]+,[0-9]+,[0-9]+,$p,$m," "$CSV" | head -1)
  IFS=, read -r _ _ _ _ _ _ tf tb tw tc mb mw _ <<<"$row"
  json=$("$BUILD/bin/zb-sched" --stages "$p" --microbatches "$m" \
    --cost-f "$tf" --cost-b "$tb" --cost-w "$tw" --cost-comm "$tc" \
    --mem-b "$mb" --mem-w "$mw" --memory-limit 2p --schedule zb-2p \
    --optimizer-sync post-validation --verify-comm=false --format json)
  /usr/bin/python3 -c '
import json, sys
model, p, m, pv, ar = sys.argv[1:6]
s = json.loads(sys.stdin.read())["optimizer_sync"]["steady_state"]
none, a, v = (s[k]["period_ms"] for k in ("none", "all-reduce", "post-validation"))
print(f"{model:<6} {p:>3} {m:>3}  {none:12.1f} {a:12.1f} {v:12.1f}  {a / v:9.3f}"
      f"  {float(pv) / float(ar):.3f} ({pv} / {ar})")' "$model" "$p" "$m" "$pv" "$ar" <<<"$json"
done <<'ROWS'
1.5B 8 24 14.5 13.11
6.2B 8 24 4.32 4.00
14.6B 16 48 1.81 1.68
28.3B 32 96 0.99 0.91
ROWS
