"""Checks zb-report numbers against the shape of the Zero Bubble paper's
Table 1 (FLOPs and activation memory per transformer layer):
  F: sbh(24h + 4s)   B: sbh(24h + 8s), M_B = sb(34h + 5as)   W: sbh(24h), M_W = 32sbh
so T_W < T_F < T_B and T_B + T_W = 2 T_F (matmul FLOPs only), M_W < M_B.

usage: table1_check.py attention|matmul STAGES < zb-report output
  STAGES: comma-separated stage numbers to check (e.g. the middle stages,
  which hold only transformer blocks).
  attention: requires T_W < T_F < T_B and M_W < M_B, and
             1.5 <= (T_B + T_W) / T_F <= 2.5 (the roofline adds memory-bound
             attention work to F and B that the FLOP formula leaves out);
  matmul:    requires |(T_B + T_W) / T_F - 2| <= 0.2 (the FLOP formula's 2
             within 10 %) and M_W <= M_B.
Prints one line per stage and exits 1 on the first violated relation.
"""
import re
import sys

mode, stages = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
pat = re.compile(r"stage\s+(\d+): T_F=([\d.]+) ms T_B=([\d.]+) ms T_W=([\d.]+) ms "
                 r"T_comm=([\d.]+) ms M_B=(\d+) bytes M_W=(\d+) bytes")
rows = {}
for line in sys.stdin:
    m = pat.search(line)
    if m:
        s = int(m.group(1))
        rows[s] = tuple(float(x) for x in m.groups()[1:])
ok = True
for s in stages:
    if s not in rows:
        print(f"stage {s}: missing from the report")
        sys.exit(1)
    tf, tb, tw, _, mb, mw = rows[s]
    ratio = (tb + tw) / tf
    checks = []
    if mode == "attention":
        checks = [("T_W < T_F", tw < tf), ("T_F < T_B", tf < tb),
                  ("M_W < M_B", mw < mb), ("1.5 <= (T_B+T_W)/T_F <= 2.5", 1.5 <= ratio <= 2.5)]
    else:
        checks = [("|(T_B+T_W)/T_F - 2| <= 0.2", abs(ratio - 2) <= 0.2), ("M_W <= M_B", mw <= mb)]
    bad = [name for name, good in checks if not good]
    print(f"stage {s}: T_B/T_F={tb / tf:.3f} T_W/T_F={tw / tf:.3f} (T_B+T_W)/T_F={ratio:.3f} "
          f"M_W/M_B={mw / mb:.3f}: " + ("ok" if not bad else "VIOLATED " + ", ".join(bad)))
    ok = ok and not bad
sys.exit(0 if ok else 1)
