"""The Zero Bubble paper's Figure 3: ZB-H1 and ZB-H2 for p = 4 (T_F = T_B =
T_W, T_comm = 0), as Gantt charts, next to 1F1B. Writes figure3.png.

    python figure3.py [OUTPUT_DIR]
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import zb  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "."
problem = zb.Problem(stages=4, microbatches=8, cost_f=1, cost_b=1, cost_w=1,
                     mem_b=1, mem_w=0.5)
names = ["1f1b", "zb-h1", "zb-h2"]
fig, axes = plt.subplots(len(names), 1, figsize=(12, 7))
for ax, name in zip(axes, names):
    s = zb.schedule(problem, name)
    zb.plot(s, ax=ax, title=f"{name}: bubble rate {s.bubble_rate:.3f}, "
                            f"peak memory {max(s.peak_memory):g} M_B")
fig.tight_layout()
path = os.path.join(out, "figure3.png")
fig.savefig(path, dpi=110)
print(path)
