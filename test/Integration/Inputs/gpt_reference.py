"""Float64 NumPy reference of the GPT written by gen_gpt2.py, trained the
way zb-run trains a zb-compile output directory (docs/plan-json.md).

    gpt_reference.py PLAN_DIR --layers L --heads H --steps S [--data DIR]
                     [--text FILE --seed K] [--grads] [--lr F]

Reads PLAN_DIR/plan.json and params.bin (the initial parameters, in the
model's parameter order: wte, wpe, lm_head, per block ln1_w, ln1_b, attn_w,
attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b, then lnf_w,
lnf_b), the data (DIR/input_0.pb tokens and input_1.pb targets, or a text
file cut as `zb-run --data FILE.txt` documents it), and prints one line per
step: "step <k> loss <mean loss over the batch>", computed in float64 NumPy with
a hand-written backward pass, independently of the zb compiler. With --grads it prints
"grad_norm <name> <L2 norm>" of the step-1 mean gradient instead of training.

Semantics (the zb ops' definitions in ZBOps.td): layer_norm eps 1e-5, exact
(erf) GELU, causal mask -inf above the diagonal, attention scale
1/sqrt(head_dim), untied LM head logits = h @ lm_head^T, mean cross entropy.
Each step feeds num_microbatches microbatches of microbatch_size sequences;
the step's loss is the mean of the microbatch losses and the optimizer sees
the mean of the microbatch gradients (SGD p -= lr * g, or AdamW as torch.optim.AdamW).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(x).astype(np.float64)


def load_params(plan_dir, plan):
    raw = open(os.path.join(plan_dir, "params.bin"), "rb").read()
    out = []
    for p in plan["params"]:
        n = int(np.prod(p["shape"])) if p["shape"] else 1
        a = np.frombuffer(raw, dtype="<f4", count=n, offset=p["offset_bytes"])
        out.append(a.astype(np.float64).reshape(p["shape"]))
    return out


def read_pb(path):
    from onnx import numpy_helper, TensorProto
    t = TensorProto()
    t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)


MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def text_batches(data, seed, step, batch, seq):
    """zb-run's text data (docs/plan-json.md): step k's sequence j starts at
    splitmix64(seed * 0x9E3779B97F4A7C15 + k * 1000003 + j) mod (len - seq);
    the targets are the next bytes."""
    span = len(data) - seq
    toks = np.zeros((batch, seq), np.int64)
    tgts = np.zeros((batch, seq), np.int64)
    for j in range(batch):
        key = (seed * 0x9E3779B97F4A7C15 + step * 1000003 + j) & MASK
        off = splitmix64(key) % span
        toks[j] = data[off:off + seq]
        tgts[j] = data[off + 1:off + seq + 1]
    return toks, tgts


EPS = 1e-5


def ln_fwd(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + EPS)
    xhat = (x - mu) * rstd
    return xhat * w + b, (xhat, rstd, w)


def ln_bwd(dy, cache):
    xhat, rstd, w = cache
    dw = (dy * xhat).sum(0)
    db = dy.sum(0)
    dxh = dy * w
    dx = rstd * (dxh - dxh.mean(-1, keepdims=True)
                 - xhat * (dxh * xhat).mean(-1, keepdims=True))
    return dx, dw, db


def loss_and_grads(params, layers, heads, tokens, targets):
    """Mean cross-entropy of one microbatch and its gradient w.r.t. every
    parameter (hand-written backward pass, float64)."""
    it = iter(params)
    wte, wpe, lm_head = next(it), next(it), next(it)
    blocks = [[next(it) for _ in range(12)] for _ in range(layers)]
    lnf_w, lnf_b = next(it), next(it)
    B, T = tokens.shape
    D = wte.shape[1]
    H, hd, N = heads, D // heads, B * T
    c = 1.0 / math.sqrt(hd)
    mask = np.triu(np.ones((T, T), bool), 1)

    def to_heads(a):  # [N, D] -> [B, H, T, hd]
        return a.reshape(B, T, H, hd).transpose(0, 2, 1, 3)

    def from_heads(a):
        return a.transpose(0, 2, 1, 3).reshape(N, D)

    x = (wte[tokens] + wpe[None]).reshape(N, D)
    caches = []
    for (l1w, l1b, aw, ab, pw, pb, l2w, l2b, fw, fb, f2w, f2b) in blocks:
        h, c1 = ln_fwd(x, l1w, l1b)
        qkv = h @ aw + ab
        q, k, v = (to_heads(qkv[:, i * D:(i + 1) * D]) for i in range(3))
        s = (q @ k.transpose(0, 1, 3, 2)) * c
        s = np.where(mask, -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        o = from_heads(p @ v)
        x1 = x + o @ pw + pb
        h2, c2 = ln_fwd(x1, l2w, l2b)
        f = h2 @ fw + fb
        g = 0.5 * f * (1 + erf(f / math.sqrt(2)))
        x2 = x1 + g @ f2w + f2b
        caches.append((c1, h, q, k, v, p, o, c2, h2, f, g))
        x = x2
    hf, cf = ln_fwd(x, lnf_w, lnf_b)
    logits = hf @ lm_head.T
    tg = targets.reshape(-1)
    m = logits.max(-1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(logits - m).sum(-1))
    loss = (lse - logits[np.arange(N), tg]).mean()

    prob = np.exp(logits - lse[:, None])
    prob[np.arange(N), tg] -= 1
    dlogits = prob / N
    g_lm = dlogits.T @ hf
    dx, g_lnf_w, g_lnf_b = ln_bwd(dlogits @ lm_head, cf)
    grads_blocks = []
    for (l1w, l1b, aw, ab, pw, pb, l2w, l2b, fw, fb, f2w, f2b), cache in \
            reversed(list(zip(blocks, caches))):
        c1, h, q, k, v, p, o, c2, h2, f, g = cache
        g_f2w, g_f2b = g.T @ dx, dx.sum(0)
        dg = dx @ f2w.T
        df = dg * (0.5 * (1 + erf(f / math.sqrt(2)))
                   + f * np.exp(-0.5 * f * f) / math.sqrt(2 * math.pi))
        g_fw, g_fb = h2.T @ df, df.sum(0)
        dx1h, g_l2w, g_l2b = ln_bwd(df @ fw.T, c2)
        dx1 = dx + dx1h
        g_pw, g_pb = o.T @ dx1, dx1.sum(0)
        do = to_heads(dx1 @ pw.T)
        dp = do @ v.transpose(0, 1, 3, 2)
        dv = p.transpose(0, 1, 3, 2) @ do
        ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * c
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        dqkv = np.concatenate([from_heads(dq), from_heads(dk),
                               from_heads(dv)], axis=1)
        g_aw, g_ab = h.T @ dqkv, dqkv.sum(0)
        dxh, g_l1w, g_l1b = ln_bwd(dqkv @ aw.T, c1)
        dx = dx1 + dxh
        grads_blocks.append([g_l1w, g_l1b, g_aw, g_ab, g_pw, g_pb, g_l2w,
                             g_l2b, g_fw, g_fb, g_f2w, g_f2b])
    d3 = dx.reshape(B, T, D)
    g_wpe = d3.sum(0)
    g_wte = np.zeros_like(wte)
    np.add.at(g_wte, tokens.reshape(-1), dx)
    grads = [g_wte, g_wpe, g_lm]
    for gb in reversed(grads_blocks):
        grads += gb
    grads += [g_lnf_w, g_lnf_b]
    return loss, grads


# zb-run's validation batches use the seed XOR this (Tokens.h, RankProgram.cpp).
VALIDATION_SEED_SALT = 0x76616c6964617465


def batch_source(plan, text=None, data=None, seed=0, part=None):
    """step -> (tokens, targets) of that step's M * B sequences: text cut by
    text_batches (zb-run --data FILE.txt), or rows step*M*B.. of the
    input_0.pb / input_1.pb of directory `data` (wrapping around).
    part: None (the whole text), ("train", F) or ("val", F): the first
    1 - F or the last F of the text as zb-run --val-split F cuts it (the
    validation batches with the seed XOR VALIDATION_SEED_SALT)."""
    M, B = plan["num_microbatches"], plan["microbatch_size"]
    T = plan["inputs"][0]["sample_shape"][0]
    if text:
        raw = np.frombuffer(open(text, "rb").read(), dtype=np.uint8)
        if part:
            split = len(raw) - int(len(raw) * part[1])
            if part[0] == "train":
                raw = raw[:split]
            else:
                raw, seed = raw[split:], seed ^ VALIDATION_SEED_SALT
        return lambda step: text_batches(raw, seed, step, M * B, T)
    toks_all, tgts_all = (read_pb(os.path.join(data, f"input_{i}.pb"))
                          for i in range(2))

    def rows(step):
        idx = [(step * M * B + t) % len(toks_all) for t in range(M * B)]
        return toks_all[idx], tgts_all[idx]
    return rows


def step_loss_and_grads(params, layers, heads, plan, toks, tgts):
    """Mean loss and mean gradients over the step's M microbatches of B."""
    M, B = plan["num_microbatches"], plan["microbatch_size"]
    total = 0.0
    grads = [np.zeros_like(p) for p in params]
    for j in range(M):
        loss, g = loss_and_grads(params, layers, heads,
                                 toks[j * B:(j + 1) * B],
                                 tgts[j * B:(j + 1) * B])
        total += loss / M
        for acc, gi in zip(grads, g):
            acc += gi / M
    return total, grads


class Optimizer:
    """plan.json's optimizer on float64 parameters, updated in place: SGD, or
    AdamW in the form of torch.optim.AdamW (Loshchilov & Hutter, ICLR 2019,
    Algorithm 2: decoupled weight decay, bias-corrected moments)."""

    def __init__(self, opt, params, lr=None, infos=None,
                 no_decay="1d,embeddings"):
        """infos: plan.json's "params" (names and shapes), for zb-run's
        weight-decay groups: with no_decay "1d,embeddings" (zb-run's default
        --no-decay) parameters of fewer than 2 dimensions and those named
        like *emb*, *wte*, *wpe* are not decayed; other comma items are
        fnmatch globs; "" decays everything."""
        self.opt = opt
        self.lr = lr if lr is not None else opt["lr"]
        self.decay = [decayed(info, no_decay) if infos else True
                      for info in (infos or params)]
        self.schedule = None
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def lr_at(self, step):
        """The learning rate of step `step` (1-based); self.schedule is
        (kind, warmup W, decay end D, floor m) or None (constant):
        warmup L*s/W for s <= W, then with t = s-W-1, T = D-W-1 and
        f = min(t, T)/T: cosine m + (L-m)(1+cos(pi f))/2, linear
        L + (m-L) f (docs/training.md)."""
        import math
        if not self.schedule:
            return self.lr
        kind, w, d, m = self.schedule
        if step <= w:
            return self.lr * step / w
        if kind == "constant":
            return self.lr
        t, total = step - w - 1, d - w - 1
        f = 1.0 if total <= 0 else min(t, total) / total
        if kind == "cosine":
            return m + (self.lr - m) * (1 + math.cos(math.pi * f)) / 2
        return self.lr + (m - self.lr) * f

    def step(self, params, grads, clip=0.0, train_step=None):
        """One step; with clip > 0 the gradients are first scaled by
        clip / norm when their global L2 norm exceeds clip (zb-run
        --grad-clip). Returns the norm."""
        opt = self.opt
        norm = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads)))
        if clip > 0 and norm > clip:
            grads = [g * (clip / norm) for g in grads]
        self.t += 1
        # The lr of the training step (1-based; skipped steps count).
        lr = self.lr_at(train_step if train_step is not None else self.t)
        for i, (p, g) in enumerate(zip(params, grads)):
            if opt["name"] == "adamw":
                b1, b2 = opt["beta1"], opt["beta2"]
                if self.decay[i]:
                    p *= 1 - lr * opt["weight_decay"]
                self.m[i] = b1 * self.m[i] + (1 - b1) * g
                self.v[i] = b2 * self.v[i] + (1 - b2) * g * g
                mhat = self.m[i] / (1 - b1 ** self.t)
                vhat = self.v[i] / (1 - b2 ** self.t)
                p -= lr * mhat / (np.sqrt(vhat) + opt["eps"])
            else:
                p -= lr * g
        return norm


def decayed(info, no_decay):
    """Whether zb-run's AdamW decays the plan.json parameter `info` under
    --no-decay `no_decay` (docs/training.md)."""
    import fnmatch
    for item in (i.strip() for i in no_decay.split(",")):
        if item in ("", "none"):
            continue
        if item == "1d":
            if len(info["shape"]) < 2:
                return False
            continue
        globs = ["*emb*", "*wte*", "*wpe*"] if item == "embeddings" else [item]
        if any(fnmatch.fnmatchcase(info["name"], g) for g in globs):
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan_dir")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--data")
    ap.add_argument("--text")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--grads", action="store_true")
    a = ap.parse_args()
    plan = json.load(open(os.path.join(a.plan_dir, "plan.json")))
    params = load_params(a.plan_dir, plan)
    batches = batch_source(plan, a.text, a.data, a.seed)
    optimizer = Optimizer(plan["optimizer"], params, a.lr, plan["params"])
    for step in range(1 if a.grads else a.steps):
        total, grads = step_loss_and_grads(params, a.layers, a.heads, plan,
                                           *batches(step))
        if a.grads:
            print(f"loss {total:.9g}")
            for p, g in zip(plan["params"], grads):
                print(f"grad_norm {p['name']} {np.linalg.norm(g):.9g}")
            return 0
        print(f"step {step + 1} loss {total:.9f}")
        optimizer.step(params, grads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
