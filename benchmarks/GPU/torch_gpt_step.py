#!/usr/bin/env python3
"""PyTorch's training step of the GPT of examples/gpt/make_model.py, for
comparing zb's step time on the same GPU (issues 30 and 38;
scripts/gpu-check.sh).

    torch_gpt_step.py PLAN_DIR --data TEXT [--mode eager|fast|bf16|compile]
                      [--steps N] [--params FILE] [--device cuda|cpu]
                      [--seed K] [--peak-tflops P]

The model is read from a zb-compile output of that model (plan.json: the
parameters' names and shapes, the microbatches and their size, the sequence
length, the optimizer) and its parameters start from the plan's params.bin
(or --params), so the first step's loss is the same number zb-run prints
for the plan: a check that both train the same model on the same data.
Architecture (test/Dialect/ZB/Inputs/gen_gpt2.py, make_model.py: untied
LM head, or with --tie-lm-head the LM head is wte, as in GPT-2 124M):
x = wte[tokens] + wpe; per block x += proj(attn(ln1(x))),
x += fc2(gelu(fc(ln2(x)))) with the fused QKV projection h @ attn_w
(+ attn_b; weights stored [in, out]), causal attention scaled by
1/sqrt(head_dim), exact (erf) GELU, layer_norm eps 1e-5; then
logits = ln_f(x) @ lm_head^T (wte^T when tied) and the mean cross-entropy.
The data: zb-run's text batches (docs/plan-json.md; step k, k = 0, 1, ...,
sequence j at splitmix64(seed * 0x9E3779B97F4A7C15 + k * 1000003 + j)
mod (len - seq)), microbatch i = sequences i*B .. i*B+B-1.
A step: for each of the M microbatches forward, (loss / M).backward()
(gradient accumulation), then AdamW (plan.json's lr, betas, eps, weight
decay) and zero_grad. Modes:
  eager  fp32, attention written out (matmul, mask, softmax, matmul),
         torch.optim.AdamW's default implementation
  fast   F.scaled_dot_product_attention(is_causal=True), TF32 matmuls,
         AdamW(fused=True)
  bf16   fast inside torch.autocast(DEVICE, dtype=torch.bfloat16) (float32
         master weights): what zb-compile --precision bf16 is compared with
  compile  bf16 with the forward and loss under torch.compile (default
         mode, Inductor; the backward is compiled with it by AOTAutograd);
         the first step compiles
Timing: torch.cuda.synchronize() before and after each step; prints one
JSON line: mode, device, losses, step_ms, median_step_ms and mean_step_ms
over steps 2..N, and the throughput: tokens_per_step (M x B x T),
tokens_per_s (over the median step), flops_per_token and mfu
(benchmarks/GPU/gpu_check_report.py's model_flops: 6N + 6LCT as llm.c
counts, N the parameters without the position embedding; mfu against
--peak-tflops, default 989.4: the H200's dense bf16 tensor-core peak).
--device cpu runs the same on the CPU (autocast on the CPU, fused AdamW
on the CPU's kernels): with a tiny plan (make_model.py's defaults) it
checks the script without a GPU (test/Tools/gpu-check-report.test's
comment says how).
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check_report import PEAK_TFLOPS, model_flops  # noqa: E402

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def text_batch(data, seed, step, count, seq):
    span = len(data) - seq
    rows = []
    for j in range(count):
        off = splitmix64((seed * 0x9E3779B97F4A7C15 + step * 1000003 + j)
                         & MASK) % span
        rows.append(list(data[off:off + seq + 1]))
    t = torch.tensor(rows, dtype=torch.int64)
    return t[:, :-1], t[:, 1:]


def load_params(plan_dir, plan, path, device):
    raw = open(path or os.path.join(plan_dir, "params.bin"), "rb").read()
    params = {}
    for p in plan["params"]:
        n = math.prod(p["shape"]) if p["shape"] else 1
        t = torch.frombuffer(bytearray(raw[p["offset_bytes"]:
                                           p["offset_bytes"] + 4 * n]),
                             dtype=torch.float32).reshape(p["shape"])
        params[p["name"]] = t.to(device).requires_grad_(True)
    return params


def layers_of(params):
    return sorted({int(k[1:].split(".")[0]) for k in params
                   if k.startswith("h") and "." in k})


def forward(P, layers, heads, tokens, targets, fast):
    B, T = tokens.shape
    D = P["wte"].shape[1]
    hd = D // heads
    x = P["wte"][tokens] + P["wpe"][None]
    if not fast:
        causal = torch.ones(T, T, dtype=torch.bool,
                            device=x.device).triu(1)
    for l in layers:
        g = lambda n: P[f"h{l}.{n}"]  # noqa: E731
        h = F.layer_norm(x, (D,), g("ln1_w"), g("ln1_b"), 1e-5)
        qkv = h @ g("attn_w") + g("attn_b")
        q, k, v = (t.view(B, T, heads, hd).transpose(1, 2)
                   for t in qkv.split(D, dim=-1))
        if fast:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            s = s.masked_fill(causal, float("-inf"))
            o = torch.softmax(s, dim=-1) @ v
        o = o.transpose(1, 2).reshape(B, T, D)
        x = x + o @ g("proj_w") + g("proj_b")
        h = F.layer_norm(x, (D,), g("ln2_w"), g("ln2_b"), 1e-5)
        f = F.gelu(h @ g("fc_w") + g("fc_b"))
        x = x + f @ g("fc2_w") + g("fc2_b")
    h = F.layer_norm(x, (D,), P["lnf_w"], P["lnf_b"], 1e-5)
    logits = h @ P.get("lm_head", P["wte"]).t()
    return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan_dir")
    ap.add_argument("--data", required=True)
    ap.add_argument("--mode", choices=["eager", "fast", "bf16", "compile"],
                    default="eager")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--params")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peak-tflops", type=float, default=PEAK_TFLOPS)
    a = ap.parse_args()
    plan = json.load(open(os.path.join(a.plan_dir, "plan.json")))
    fast = a.mode in ("fast", "bf16", "compile")
    dev = torch.device(a.device)
    autocast = (torch.autocast(dev.type, dtype=torch.bfloat16)
                if a.mode in ("bf16", "compile") else contextlib.nullcontext())
    fwd = torch.compile(forward) if a.mode == "compile" else forward
    torch.backends.cuda.matmul.allow_tf32 = fast
    torch.backends.cudnn.allow_tf32 = fast
    P = load_params(a.plan_dir, plan, a.params, dev)
    layers = layers_of(P)
    M, B = plan["num_microbatches"], plan["microbatch_size"]
    T = plan["inputs"][0]["sample_shape"][0]
    o = plan["optimizer"]
    if o["name"] != "adamw":
        sys.exit(f"torch_gpt_step.py: optimizer {o['name']}; expected adamw")
    kw = {"fused": True} if fast else {}
    opt = torch.optim.AdamW(list(P.values()), lr=o["lr"],
                            betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                            weight_decay=o["weight_decay"], **kw)
    data = open(a.data, "rb").read()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    losses, times = [], []
    for step in range(a.steps):
        toks, tgts = text_batch(data, a.seed, step, M * B, T)
        toks, tgts = toks.to(dev), tgts.to(dev)
        sync()
        t0 = time.perf_counter()
        total = torch.zeros((), device=dev)
        for i in range(M):
            with autocast:
                loss = fwd(P, layers, a.heads, toks[i * B:(i + 1) * B],
                           tgts[i * B:(i + 1) * B], fast) / M
            loss.backward()
            total += loss.detach()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(total))
    tail = times[1:] or times
    median = statistics.median(tail)
    flops = model_flops(plan)
    tokens = M * B * T
    tps = tokens / (median / 1e3)
    print(json.dumps({"mode": a.mode, "device": str(dev),
                      "gpu": torch.cuda.get_device_name(dev)
                      if dev.type == "cuda" else "cpu",
                      "torch": torch.__version__, "losses": losses,
                      "step_ms": [round(t, 3) for t in times],
                      "median_step_ms": median,
                      "mean_step_ms": statistics.fmean(tail),
                      "microbatches": M, "microbatch_size": B, "seq": T,
                      "tokens_per_step": tokens, "tokens_per_s": tps,
                      "params_counted": flops["n"],
                      "flops_per_token": flops["per_token"],
                      "peak_mem_gib": torch.cuda.max_memory_allocated(dev)
                      / 2**30 if dev.type == "cuda" else None,
                      "peak_tflops": a.peak_tflops,
                      "mfu": tps * flops["per_token"]
                      / (a.peak_tflops * 1e12)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
