#!/usr/bin/env python3
"""Writes the main job's GPT (zb dialect) to stdout: the GPT-2 style model of
test/Dialect/ZB/Inputs/gen_gpt2.py with a byte vocabulary (256), an untied
LM head, and every parameter and input named (zb.name), so that plan.json
and the gradient reports carry the model's names (wte, wpe, lm_head,
h<l>.attn_w, ...).

    make_model.py [--layers 4] [--batch 4] [--seq 32] [--dim 64] [--heads 4]
                  [--tie-lm-head] [any other gen_gpt2.py option] > gpt.mlir

--tie-lm-head: the LM head is the token embedding (wte), as in GPT-2 (the
124M shape: --layers 12 --dim 768 --heads 12 --vocab 50257 --seq 1024).
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "test", "Dialect", "ZB", "Inputs",
                   "gen_gpt2.py")
DEFAULTS = {"--layers": "4", "--batch": "4", "--seq": "32", "--vocab": "256",
            "--dim": "64", "--heads": "4", "--dtype": "f32"}


def main():
    args = sys.argv[1:]
    for k, v in DEFAULTS.items():
        if k not in args:
            args += [k, v]
    if "--tie-lm-head" in args:
        args.remove("--tie-lm-head")
    elif "--untie-lm-head" not in args:
        args.append("--untie-lm-head")
    text = subprocess.run([sys.executable, GEN] + args, check=True,
                          capture_output=True, text=True).stdout

    def name(m):
        var, ty, attrs = m.group(1), m.group(2), m.group(3)
        pretty = re.sub(r"^(.*?)(\d+)$", r"h\2.\1", var)  # ln1_w0 -> h0.ln1_w
        inner = (attrs.strip()[1:-1].strip() + ", ") if attrs else ""
        return f'%{var}: {ty} {{{inner}zb.name = "{pretty}"}}'

    head, sep, rest = text.partition(") -> ")
    head = re.sub(r"%(\w+): (tensor<[^>]*>)( \{[^}]*\})?", name, head)
    sys.stdout.write(head + sep + rest)


if __name__ == "__main__":
    main()
