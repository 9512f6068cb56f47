"""Compares the gradients of one SGD step (lr 1) of three runs of a plan.

usage: compare_gradients.py [--ratio Q] [--slack S]
                            PLAN_DIR KERNEL.params DECOMPOSED.params FLOAT32.params

PLAN_DIR/params.bin is the initial parameters (zb-compile's) and
PLAN_DIR/plan.json names them (name, offset_bytes, shape); the others are
zb-run --save-params after one step of --optimizer sgd --lr 1: each run's
gradient is params0 - params (float32 arrays of the same layout). For
every parameter tensor, the relative distance |g_a - g_b| / |g_b|
(2-norms over the tensor) of kernel vs decomposed (kd), kernel vs
float32 (kf) and decomposed vs float32 (df). "ok" when, for every tensor,
kf <= Q df + S (the kernel is no further from float32 than the
decomposed bfloat16 attention) and kd <= 2 df + 2 S (the two bfloat16
paths differ by no more than bfloat16's own error). A tensor whose
float32 gradient is below 1e-6 of the largest tensor's (the key bias's,
which softmax makes exactly 0) is skipped. The fused QKV projection (a tensor named *.attn_w or
*.attn_b, make_model.py's, last axis q | k | v) is compared as its three
parts, so that each of dQ, dK and dV is checked on its own. Prints the
worst tensor of each; exits 1 otherwise.
"""
import json
import os
import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratio", type=float, default=1.25)
    ap.add_argument("--slack", type=float, default=1e-3)
    ap.add_argument("plan")
    ap.add_argument("kernel")
    ap.add_argument("decomposed")
    ap.add_argument("float32")
    a = ap.parse_args()
    p0 = np.fromfile(os.path.join(a.plan, "params.bin"), dtype=np.float32)
    params = json.load(open(os.path.join(a.plan, "plan.json")))["params"]
    g = {}
    for name in ("kernel", "decomposed", "float32"):
        p = np.fromfile(getattr(a, name), dtype=np.float32)
        if p.shape != p0.shape:
            sys.exit(f"compare_gradients.py: {name}: {p.size} floats, "
                     f"params.bin has {p0.size}")
        g[name] = p0.astype(np.float64) - p

    # (name, index array) per checked part.
    parts = []
    for t in params:
        lo = t["offset_bytes"] // 4
        n = int(np.prod(t["shape"]))
        idx = np.arange(lo, lo + n).reshape(t["shape"])
        if t["name"].endswith((".attn_w", ".attn_b")) and t["shape"][-1] % 3 == 0:
            for i, which in enumerate("qkv"):
                w = t["shape"][-1] // 3
                parts.append((f"{t['name']}[{which}]",
                              idx[..., i * w:(i + 1) * w].ravel()))
        else:
            parts.append((t["name"], idx.ravel()))

    def dist(x, y, ix):
        return float(np.linalg.norm(g[x][ix] - g[y][ix]) /
                     max(np.linalg.norm(g[y][ix]), 1e-30))

    largest = max(np.linalg.norm(g["float32"][ix]) for _, ix in parts)
    ok, worst, skipped = True, {}, []
    for name, ix in parts:
        if np.linalg.norm(g["float32"][ix]) < 1e-6 * largest:
            skipped.append(name)
            continue
        kd, kf, df = (dist("kernel", "decomposed", ix),
                      dist("kernel", "float32", ix),
                      dist("decomposed", "float32", ix))
        good = kf <= a.ratio * df + a.slack and kd <= 2 * df + 2 * a.slack
        if not good:
            print(f"  {name}: kernel vs decomposed {kd:.2e}, kernel vs "
                  f"float32 {kf:.2e}, decomposed vs float32 {df:.2e} FAILED")
        ok &= good
        for key, v in (("kd", kd - 2 * df), ("kf", kf - a.ratio * df)):
            if key not in worst or v > worst[key][0]:
                worst[key] = (v, name, kd, kf, df)
    kd, kf = worst["kd"], worst["kf"]
    print(f"gradients of {len(parts) - len(skipped)} tensors and parts "
          f"(skipped, 0 in float32: {', '.join(skipped) or 'none'}): closest "
          f"to the bounds {kf[1]} (kernel vs float32 {kf[3]:.2e}, decomposed "
          f"vs float32 {kf[4]:.2e}, bound x{a.ratio:g} + {a.slack:g}) and "
          f"{kd[1]} (kernel vs decomposed {kd[2]:.2e}, bound 2 x {kd[4]:.2e} "
          f"+ {2 * a.slack:g}) {'ok' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
