"""Single-process PyTorch CPU training step of the benchmark GPT, for the
throughput comparison in benchmarks/README.md (Runtime).

    torch_step.py --layers L --batch B --seq T --vocab V --dim D --heads H
                  --microbatches M [--steps S] [--threads 1]

The same model as test/Dialect/ZB/Inputs/gen_gpt2.py --untie-lm-head
(float32): M microbatches of B sequences per step, gradients accumulated,
one SGD step. Prints the mean step time (ms) over steps 2..S and
sequences/s.
"""
import argparse
import time

import torch


class Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.attn(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2)
                   for t in (q, k, v))
        s = (q @ k.transpose(-1, -2)) * (D // self.h) ** -0.5
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        o = torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v
        x = x + self.proj(o.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(torch.nn.functional.gelu(self.fc(self.ln2(x))))


class GPT(torch.nn.Module):
    def __init__(self, layers, vocab, seq, d, h):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Parameter(torch.zeros(seq, d))
        self.blocks = torch.nn.ModuleList(Block(d, h) for _ in range(layers))
        self.lnf = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    for k in ("layers", "batch", "seq", "vocab", "dim", "heads",
              "microbatches"):
        ap.add_argument("--" + k, type=int, required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.layers, a.vocab, a.seq, a.dim, a.heads)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    times = []
    for step in range(a.steps):
        toks = torch.randint(0, a.vocab, (a.microbatches, a.batch, a.seq))
        tgts = torch.randint(0, a.vocab, (a.microbatches, a.batch, a.seq))
        t0 = time.perf_counter()
        opt.zero_grad()
        for j in range(a.microbatches):
            (model(toks[j], tgts[j]) / a.microbatches).backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1000)
    ms = sum(times[1:]) / max(1, len(times) - 1)
    seqs = a.microbatches * a.batch
    print(f"torch step {ms:.2f} ms  {seqs / ms * 1000:.1f} sequences/s "
          f"({a.threads} thread{'s' if a.threads > 1 else ''})")


if __name__ == "__main__":
    main()
