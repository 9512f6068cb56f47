"""Bubble rate against the activation memory limit, like the paper's
Figure 7 and the controllable-memory V-shape family: the automatic
schedule (zb-auto, Section 3.1) and v-auto swept over limits, with 1F1B,
ZB-H1, ZB-2p, ZB-V, V-Half and V-Min as points. Costs of the paper's 1.5B
model on p = 8 (Table 5's inputs rounded). Writes memory_sweep.png.

    python memory_sweep.py [OUTPUT_DIR]
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import zb  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "."
p, m = 8, 24
costs = dict(cost_f=18.5, cost_b=18.1, cost_w=9.3, cost_comm=0.6, mem_b=1.0,
             mem_w=0.5)
unit = p * costs["mem_b"]  # 1F1B's activation memory per rank


def point(name, limit=None):
    try:
        s = zb.schedule(zb.Problem(stages=p, microbatches=m,
                                   memory_limit=limit, **costs), name)
    except ValueError:
        return None
    return max(s.peak_memory) / unit, s.bubble_rate


fig, ax = plt.subplots(figsize=(8, 5))
limits = [unit * f for f in (0.35, 0.45, 0.55, 0.7, 0.85, 1.0, 1.25, 1.5,
                             1.75, 2.0)]
for name, style in (("zb-auto", "o-"), ("v-auto", "s-")):
    pts = [pt for pt in (point(name, L) for L in limits) if pt]
    ax.plot([x for x, _ in pts], [y for _, y in pts], style, label=name)
for name in ("1f1b", "zb-h1", "zb-2p", "zb-v", "v-half", "v-min"):
    pt = point(name)
    if pt:
        ax.plot(*pt, "x", markersize=9)
        ax.annotate(name, pt, textcoords="offset points", xytext=(5, 5),
                    fontsize=8)
ax.set_xlabel("peak activation memory / 1F1B's (p M_B)")
ax.set_ylabel("bubble rate")
ax.set_title(f"bubble rate against memory, p={p} m={m}")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
path = os.path.join(out, "memory_sweep.png")
fig.savefig(path, dpi=110)
print(path)
