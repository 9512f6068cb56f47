#!/usr/bin/env python3
"""Independent reference for zb-run's text training data (docs/plan-json.md,
"A text file"): what `zb-run --data FILE --text-vocab bytes|chars` must feed
the model, computed with Python's own UTF-8 decoder, sorted(set(text)) and
the splitmix64 rule written out here.

    text_reference.py make FILE             writes a mixed UTF-8 text (1-, 2-,
                                            3- and 4-byte characters, CR LF)
    text_reference.py check --text FILE --mode bytes|chars --seed K
        --batch B --seq T --dump BATCH.json [--vocab-json V.json]
        [--stdout OUT.txt]
Prints one "ok ..." line per comparison that holds, "MISMATCH ..." otherwise
(exit status 1).
"""
import argparse
import json
import random
import sys

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(x):
    # Steele, Lea, Flood (OOPSLA 2014); Vigna's splitmix64.c next().
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def offset(seed, step, j, n, seq):
    key = (seed * GOLDEN + step * 1000003 + j) & MASK
    return splitmix64(key) % (n - seq)


def make(path):
    rng = random.Random(11)
    alphabet = list("abcdefgh XYZ,.!\t") + ["\r\n", "\u00e9", "\u00df",
                                            "\u20ac", "\u4e2d", "\U0001f600",
                                            "\U00010348"]
    text = "".join(rng.choice(alphabet) for _ in range(600))
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


def check(a):
    data = open(a.text, "rb").read()  # bytes: no newline translation
    if a.mode == "chars":
        text = data.decode("utf-8")  # strict: raises on invalid UTF-8
        vocab = sorted(set(text))
        index = {c: i for i, c in enumerate(vocab)}
        tokens = [index[c] for c in text]
        unit = "characters"
    else:
        vocab = None
        tokens = list(data)
        unit = "bytes"
    n = len(tokens)
    want = {"tokens": [], "targets": []}
    for j in range(a.batch):
        off = offset(a.seed, 0, j, n, a.seq)
        want["tokens"].append(tokens[off:off + a.seq])
        want["targets"].append(tokens[off + 1:off + a.seq + 1])
    got = json.load(open(a.dump))
    bad = 0

    def report(ok, what):
        nonlocal bad
        print(("ok " if ok else "MISMATCH ") + what)
        bad += not ok

    report(got.get("step") == 1, "dump of step 1")
    for name in ("tokens", "targets"):
        report(got["inputs"].get(name) == want[name],
               f"{name}: {a.batch} sequences of {a.seq}")
    if a.vocab_json:
        report(json.load(open(a.vocab_json, encoding="utf-8")) == vocab,
               f"vocabulary json: {len(vocab)} characters")
    if a.stdout:
        line = "text %s: %d %s, vocabulary %d" % (
            a.text, n, unit, len(vocab) if vocab else 256)
        lines = open(a.stdout, encoding="utf-8").read().splitlines()
        report(line in lines, "printed line: " + line.replace(a.text, "FILE"))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("file")
    c = sub.add_parser("check")
    c.add_argument("--text", required=True)
    c.add_argument("--mode", choices=["bytes", "chars"], required=True)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--batch", type=int, required=True)
    c.add_argument("--seq", type=int, required=True)
    c.add_argument("--dump", required=True)
    c.add_argument("--vocab-json")
    c.add_argument("--stdout")
    a = p.parse_args()
    if a.cmd == "make":
        make(a.file)
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
