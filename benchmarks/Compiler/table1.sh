#!/usr/bin/env bash
# The cost model against the Zero Bubble paper's Table 1: per transformer
# layer of the 24-layer GPT-2 style model (d=1024, 16 heads, seq 1024, vocab
# 50304, gen_gpt2.py --names), 8 stages cut at layer boundaries
# (balance=layers, 3 layers per stage), target h100 (bf16), microbatch size
# b = 1..4; stage 3 (only transformer blocks) divided by 3. Paper Table 1:
# F = sbh(24h+4s), B = sbh(24h+8s), W = 24sbh^2 FLOPs (times at 989 TFLOP/s),
# M_B = sb(34h+5as), M_W = 32sbh bytes. Also a matmul-only MLP (4 layers
# 8192x8192, batch 8192), stage 1. Prints a markdown table.
# usage: benchmarks/Compiler/table1.sh [build dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
for b in 1 2 3 4; do
  $py "$root/test/Dialect/ZB/Inputs/gen_gpt2.py" --layers 24 --batch $b --seq 1024 \
    --vocab 50304 --dim 1024 --heads 16 --dtype f32 --names > "$tmp/gpt.mlir"
  "$build/bin/zb-opt" "$tmp/gpt.mlir" -zb-autodiff -zb-split-backward \
    -zb-partition-stages="num-stages=8 balance=layers target=h100" -zb-report \
    -o /dev/null 2> "$tmp/report$b.txt"
done
$py "$root/test/Transforms/Inputs/gen_mlp.py" --layers 4 --batch 8192 --dim 8192 > "$tmp/mlp.mlir"
"$build/bin/zb-opt" "$tmp/mlp.mlir" -zb-autodiff -zb-split-backward \
  -zb-partition-stages="num-stages=4 balance=layers target=h100" -zb-report \
  -o /dev/null 2> "$tmp/mlp.txt"
$py - "$tmp" <<'PY'
import re, sys
tmp = sys.argv[1]
pat = re.compile(r"stage\s+(\d+): T_F=([\d.]+) ms T_B=([\d.]+) ms T_W=([\d.]+) ms "
                 r"T_comm=([\d.]+) ms M_B=(\d+) bytes M_W=(\d+) bytes")
def stage(path, k):
    for line in open(path):
        m = pat.search(line)
        if m and int(m.group(1)) == k:
            return [float(x) for x in m.groups()[1:]]
print("| model | b | T_F ms | T_B ms | T_W ms | T_B/T_F | T_W/T_F | (T_B+T_W)/T_F | M_B MB | M_W MB | M_W/M_B |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
s, h, a, peak = 1024, 1024, 16, 989e12
for b in (1, 2, 3, 4):
    tf, tb, tw, _, mb, mw = stage(f"{tmp}/report{b}.txt", 3)
    tf, tb, tw, mb, mw = tf / 3, tb / 3, tw / 3, mb / 3, mw / 3
    print(f"| GPT ours (zb cost model, h100) | {b} | {tf:.4f} | {tb:.4f} | {tw:.4f} | {tb/tf:.3f} | {tw/tf:.3f} | "
          f"{(tb+tw)/tf:.3f} | {mb/1e6:.1f} | {mw/1e6:.1f} | {mw/mb:.3f} |")
    F, B, W = s*b*h*(24*h + 4*s), s*b*h*(24*h + 8*s), s*b*h*24*h
    MB, MW = s*b*(34*h + 5*a*s), 32*s*b*h
    tf, tb, tw = 1e3*F/peak, 1e3*B/peak, 1e3*W/peak
    print(f"| GPT paper Table 1 (FLOPs at 989 TFLOP/s) | {b} | {tf:.4f} | {tb:.4f} | {tw:.4f} | {tb/tf:.3f} | {tw/tf:.3f} | "
          f"{(tb+tw)/tf:.3f} | {MB/1e6:.1f} | {MW/1e6:.1f} | {MW/MB:.3f} |")
tf, tb, tw, _, mb, mw = stage(f"{tmp}/mlp.txt", 1)
print(f"| MLP 8192x8192 ours (per layer) | 8192 rows | {tf:.4f} | {tb:.4f} | {tw:.4f} | {tb/tf:.3f} | {tw/tf:.3f} | "
      f"{(tb+tw)/tf:.3f} | {mb/1e6:.1f} | {mw/1e6:.1f} | {mw/mb:.3f} |")
PY
