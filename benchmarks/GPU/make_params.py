#!/usr/bin/env python3
"""Writes a plan's params.bin the way zb-compile does for a model without
stored parameter values (lib/Driver/Artifacts.cpp, writeParams): one
std::mt19937_64 seeded with --init-seed (default 0) runs through
plan.json's parameters in order, and each element is
float32((2u - 1) / sqrt(fan_in)), u = (next() >> 11) * 2^-53, fan_in = the
parameter's last dimension (1 for a scalar). So a big plan can travel
without its params.bin (scripts/gpu-check.sh: the 8x512 GPT's is ~100 MB)
and be written bit for bit where it runs.

    make_params.py PLAN_DIR [--seed K] [--out FILE] [--sha256 HEX]

--out defaults to PLAN_DIR/params.bin; with --sha256 the file's digest is
checked (exit 1 on a mismatch). NumPy when present (a few seconds for 25M
parameters: the generator's twist is vectorised in three slices); else pure
Python (about a minute per 10M parameters).
"""
import argparse
import array
import hashlib
import json
import math
import os
import sys

N, M = 312, 156
MATRIX_A = 0xB5026F5AA96619E9
UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF
MASK = (1 << 64) - 1


def seed_state(seed):
    mt = [seed & MASK]
    for i in range(1, N):
        prev = mt[-1]
        mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK)
    return mt


def numpy_stream(seed, count):
    """`count` outputs of mt19937_64(seed), as a uint64 array."""
    import numpy as np
    u64 = np.uint64
    mt = np.array(seed_state(seed), dtype=np.uint64)
    blocks = (count + N - 1) // N
    out = np.empty(blocks * N, dtype=np.uint64)
    up, lo, a, one = u64(UPPER), u64(LOWER), u64(MATRIX_A), u64(1)

    def mix(cur, nxt, far):
        x = (cur & up) | (nxt & lo)
        return far ^ (x >> one) ^ ((x & one) * a)

    for b in range(blocks):
        mt[:N - M] = mix(mt[:N - M], mt[1:N - M + 1], mt[M:])
        mt[N - M:N - 1] = mix(mt[N - M:N - 1], mt[N - M + 1:], mt[:M - 1])
        mt[N - 1:] = mix(mt[N - 1:], mt[:1], mt[M - 1:M])
        out[b * N:(b + 1) * N] = mt
    y = out[:count]
    y ^= (y >> u64(29)) & u64(0x5555555555555555)
    y ^= (y << u64(17)) & u64(0x71D67FFFEDA60000)
    y ^= (y << u64(37)) & u64(0xFFF7EEE000000000)
    y ^= y >> u64(43)
    return y


def python_stream(seed):
    mt, i = seed_state(seed), N
    while True:
        if i >= N:
            for k in range(N):
                x = (mt[k] & UPPER) | (mt[(k + 1) % N] & LOWER)
                mt[k] = mt[(k + M) % N] ^ (x >> 1) ^ (MATRIX_A if x & 1 else 0)
            i = 0
        y = mt[i]
        i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        yield y


def sizes(plan):
    for p in plan["params"]:
        shape = p["shape"]
        yield math.prod(shape) if shape else 1, shape[-1] if shape else 1


def write_numpy(plan, seed, f):
    import numpy as np
    total = sum(n for n, _ in sizes(plan))
    raw = numpy_stream(seed, total)
    pos = 0
    for n, fan_in in sizes(plan):
        u = (raw[pos:pos + n] >> np.uint64(11)).astype(np.float64) * 2.0**-53
        bound = 1.0 / math.sqrt(float(fan_in))
        f.write(((2 * u - 1) * bound).astype("<f4").tobytes())
        pos += n


def write_python(plan, seed, f):
    rng = python_stream(seed)
    for n, fan_in in sizes(plan):
        bound = 1.0 / math.sqrt(float(fan_in))
        vals = array.array("f", (((next(rng) >> 11) * 2.0**-53 * 2 - 1) * bound
                                 for _ in range(n)))
        if sys.byteorder != "little":
            vals.byteswap()
        f.write(vals.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--sha256")
    a = ap.parse_args()
    plan = json.load(open(os.path.join(a.plan_dir, "plan.json")))
    offset = 0
    for p, (n, _) in zip(plan["params"], sizes(plan)):
        if p["offset_bytes"] != offset:
            sys.exit(f"make_params.py: {p['name']}: offset_bytes "
                     f"{p['offset_bytes']}, expected {offset} (not laid out "
                     "in order)")
        offset += 4 * n
    out = a.out or os.path.join(a.plan_dir, "params.bin")
    with open(out, "wb") as f:
        try:
            import numpy  # noqa: F401
            write_numpy(plan, a.seed, f)
        except ImportError:
            write_python(plan, a.seed, f)
    if a.sha256:
        h = hashlib.sha256(open(out, "rb").read()).hexdigest()
        if h != a.sha256:
            sys.exit(f"make_params.py: {out}: sha256 {h}, expected {a.sha256}")
    print(f"make_params.py: wrote {out} ({offset} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
