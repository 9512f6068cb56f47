"""Checks a zb-compile --target cuda output directory: plan.json names the
target, architectures, ranks and schedule; every rank<R>.so (R < ranks)
embeds exactly one fatbin (zb-gpu-merge-kernel-modules: one kernel module
per rank program) with a cubin per architecture plus the first one's PTX;
every symbol a rank program leaves undefined is defined by libzbrt.so (the
program links against the runtime zb-run loads it with: nothing else is
needed). Prints one line, or the problems and exits 1.

usage: check_cuda_plan.py DIR RANKS SCHEDULE ARCHS LIBZBRT
  ARCHS: comma-separated, e.g. sm_80,sm_90
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Tools", "Inputs"))
from list_fatbins import fatbins  # noqa: E402

out, ranks, schedule, archs, libzbrt = sys.argv[1:6]
ranks, archs = int(ranks), archs.split(",")
problems = []


def symbols(path, kind):
    text = subprocess.run(["nm", "-D", kind, path], capture_output=True,
                          text=True, check=True).stdout
    return {line.split()[-1] for line in text.splitlines()
            if line.split() and line.split()[-2] in ("U", "T", "W", "B", "D",
                                                      "R", "V", "i")}


plan = json.load(open(os.path.join(out, "plan.json")))
for key, want in (("target", "cuda"), ("gpu_archs", archs),
                  ("num_ranks", ranks), ("schedule", schedule)):
    if plan.get(key) != want:
        problems.append(f"plan.json {key} = {plan.get(key)!r}, want {want!r}")
runtime = symbols(libzbrt, "--defined-only")
expected = ", ".join(sorted(f"elf {a}" for a in archs) + [f"ptx {archs[0]}"])
needed = set()
for r in range(ranks):
    so = os.path.join(out, f"rank{r}.so")
    if not os.path.exists(so):
        problems.append(f"rank{r}.so missing")
        continue
    images = fatbins(so)
    if images != [expected]:
        problems.append(f"rank{r}.so fatbins {images}, want [{expected!r}]")
    undefined = symbols(so, "--undefined-only")
    missing = sorted(undefined - runtime)
    if missing:
        problems.append(f"rank{r}.so needs {missing}, not in libzbrt")
    needed |= undefined
if os.path.exists(os.path.join(out, f"rank{ranks}.so")):
    problems.append(f"rank{ranks}.so exists: more programs than ranks")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{schedule} on {ranks} ranks: {ranks} rank programs, one fatbin each "
      f"({expected}), {len(needed)} runtime symbols all in libzbrt")
