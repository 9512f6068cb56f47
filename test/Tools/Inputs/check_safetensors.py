"""Checks safetensors files zb-run wrote against the format's rules and
against a params.bin of the same parameters, with NumPy only (no zb code, no
safetensors package).

Usage: check_safetensors.py PLAN.json INITIAL_PARAMS.bin TRAINED.bin
                            FILE.safetensors...

The format (https://huggingface.co/docs/safetensors): u64 little-endian N,
N bytes of a UTF-8 JSON object header (zb pads it with spaces to a multiple
of 8 bytes), then the tensors' bytes; each tensor's "data_offsets"
[begin, end) count from the first byte after the header, and the tensors
cover the rest of the file contiguously (no holes, no overlaps). zb writes
each plan parameter once (a tied one too) under its plan name, dtype F32, the
plan's shape, "__metadata__" {"format": "pt", "producer": "zb"}. Prints one
line per file; exits 1 with the first violated rule.
"""
import json
import os
import struct
import sys

import numpy as np


def fail(path, why):
    print(f"{os.path.basename(path)}: FAIL: {why}")
    sys.exit(1)


def check(path, plan, trained, initial):
    data = open(path, "rb").read()
    if len(data) < 8:
        fail(path, "shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if n % 8 != 0:
        fail(path, f"header length {n} is not a multiple of 8")
    if 8 + n > len(data):
        fail(path, f"header length {n} beyond the file ({len(data)} bytes)")
    text = data[8:8 + n].decode("utf-8")
    body = text.rstrip(" ")
    if len(text) - len(body) >= 8:
        fail(path, "more than 7 bytes of padding")
    header = json.loads(body)
    meta = header.pop("__metadata__", None)
    if meta != {"format": "pt", "producer": "zb"}:
        fail(path, f"__metadata__ is {meta!r}")
    params = {p["name"]: p for p in plan["params"]}
    if sorted(header) != sorted(params) or len(params) != len(plan["params"]):
        fail(path, f"names {sorted(header)} differ from the plan's "
                   f"{sorted(params)}")
    spans = sorted((t["data_offsets"], name) for name, t in header.items())
    at = 0
    for (begin, end), name in spans:
        t, p = header[name], params[name]
        if t["dtype"] != "F32":
            fail(path, f"{name}: dtype {t['dtype']}")
        if t["shape"] != p["shape"]:
            fail(path, f"{name}: shape {t['shape']}, plan {p['shape']}")
        size = 4 * int(np.prod(p["shape"], dtype=np.int64))
        if begin != at or end - begin != size:
            fail(path, f"{name}: data_offsets [{begin}, {end}], expected "
                       f"[{at}, {at + size}]")
        at = end
    if 8 + n + at != len(data):
        fail(path, f"tensors end at {8 + n + at}, the file at {len(data)}")
    changed = 0
    for name, t in header.items():
        begin, end = t["data_offsets"]
        got = data[8 + n + begin:8 + n + end]
        off = params[name]["offset_bytes"]
        if got != trained[off:off + end - begin]:
            fail(path, f"{name}: differs from the params.bin")
        changed += got != initial[off:off + end - begin]
        # The values read back as the format's little-endian float32.
        a = np.frombuffer(got, "<f4").reshape(t["shape"])
        if not np.all(np.isfinite(a)):
            fail(path, f"{name}: not finite")
    tied = [p["name"] for p in plan["params"] if p.get("tied_copies")]
    print(f"{os.path.basename(path)}: {len(header)} tensors of the plan, "
          f"F32, plan shapes, contiguous offsets, header {n} bytes; tied "
          f"{', '.join(tied)} once; equal to params.bin bit for bit; "
          f"{changed} changed by training")


def main():
    plan = json.load(open(sys.argv[1]))
    initial = open(sys.argv[2], "rb").read()
    trained = open(sys.argv[3], "rb").read()
    for path in sys.argv[4:]:
        check(path, plan, trained, initial)


if __name__ == "__main__":
    main()
