#!/usr/bin/env python3
"""The numbers scripts/gpu-check.sh prints, read from zb-run's JSON reports
(--report-format json), profile.json files (--profile) and plan.json.
Python's standard library only (it runs on the GPU machine too).

    gpu_check_report.py losses REF.json GOT.json...   per GOT: max |loss - REF's|
                                                      over the steps both have;
                                                      whether all GOT are equal
                                                      bit for bit
    gpu_check_report.py speed REPORT.json [LABEL]     mean and median step ms
                                                      (steps 2..N), step-1 loss
    gpu_check_report.py torch TORCH.json [LABEL [REF.json]]  the same for
                                                      torch_gpt_step.py's line
                                                      (and its losses vs REF's)
    gpu_check_report.py passes PLAN_DIR PROFILE.json  measured T_F/T_B/T_W per
                                                      stage vs plan.json's
                                                      (predicted), ratios
    gpu_check_report.py compare LABEL A B             A's median step ms over
                                                      B's (zb-run reports or
                                                      torch_gpt_step.py lines)
    gpu_check_report.py kernels GPU_REPORT.json NCU.csv  per pass: the
                                                      generated kernels' times
                                                      (ncu --csv --page raw,
                                                      gpu__time_duration.sum)
                                                      against their roofline
                                                      (zb-compile --gpu-report),
                                                      the kernels furthest
                                                      above it; cuBLAS's calls
"""
import csv
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def losses_of(report):
    return [s["loss"] for s in report.get("steps", [])]


def step_times(report):
    return [s["time_ms"] for s in report.get("steps", [])]


def cmd_losses(ref_path, *got_paths):
    ref = losses_of(load(ref_path))
    lists = []
    for path in got_paths:
        name = os.path.basename(path).rsplit(".", 1)[0]
        try:
            got = losses_of(load(path))
        except (OSError, ValueError) as e:
            print(f"    {name}: no report ({e.__class__.__name__})")
            continue
        lists.append((name, got))
        n = min(len(ref), len(got))
        if n == 0:
            print(f"    {name}: no losses (reference {len(ref)}, got {len(got)})")
            continue
        diffs = [abs(a - b) for a, b in zip(ref[:n], got[:n])]
        worst = max(range(n), key=lambda i: diffs[i])
        rel = diffs[worst] / max(abs(ref[worst]), 1e-30)
        print(f"    {name}: {n} steps, loss 1 {got[0]:.7f} (CPU {ref[0]:.7f}), "
              f"loss {n} {got[n - 1]:.7f} (CPU {ref[n - 1]:.7f}), max |diff| "
              f"{diffs[worst]:.3g} (rel {rel:.3g}, step {worst + 1})")
    if len(lists) > 1:
        same = all(l == lists[0][1] and len(l) > 0 for _, l in lists)
        # Runs with the same losses, bit for bit (e.g. a tied embedding's
        # gradient is summed in another order on one stage than on several).
        groups = {}
        for name, l in lists:
            groups.setdefault(tuple(l), []).append(name)
        detail = "" if same else " (" + "; ".join(
            " = ".join(g) for g in groups.values()) + ")"
        print(f"    bit-identical across the {len(lists)} runs: "
              f"{'yes' if same else 'NO'}{detail}")
    return 0


def cmd_speed(path, label=None):
    r = load(path)
    t = step_times(r)
    tail = t[1:] or t
    loss = losses_of(r)
    graphs = ""
    for c in r.get("cuda", [])[:1]:
        graphs = (f"; graphs {c.get('graphs')}: {c.get('graph_replays')} "
                  f"replayed, {c.get('graph_divergences')} divergences, "
                  f"{c.get('kernel_launches')} launches, "
                  f"{c.get('host_synchronizations')} host syncs")
    print(f"    {label or path}: mean {statistics.fmean(tail):.2f} ms, median "
          f"{statistics.median(tail):.2f} ms per step (steps 2..{len(t)}), "
          f"loss 1 {loss[0] if loss else float('nan'):.6f}{graphs}")
    return 0


def cmd_torch(path, label=None, ref_path=None):
    with open(path) as f:
        lines = [l for l in f if l.startswith("{")]
    r = json.loads(lines[-1])
    vs = ""
    if ref_path:
        ref = losses_of(load(ref_path))
        n = min(len(ref), len(r["losses"]))
        if n:
            d = max(abs(a - b) for a, b in zip(ref[:n], r["losses"][:n]))
            vs = f", max |diff| vs zb's CPU backend over {n} steps {d:.3g}"
    print(f"    {label or r['mode']}: mean {r['mean_step_ms']:.2f} ms, median "
          f"{r['median_step_ms']:.2f} ms per step (steps 2..{len(r['step_ms'])}), "
          f"loss 1 {r['losses'][0]:.6f}{vs} ({r['gpu']}, torch {r['torch']})")
    return 0


def cmd_passes(plan_dir, profile_path):
    plan = load(os.path.join(plan_dir, "plan.json"))
    measured = {s["stage"]: s for s in load(profile_path)["stages"]}
    for s in plan["stages"]:
        m = measured.get(s["stage"])
        if m is None:
            print(f"    stage {s['stage']}: not in the profile")
            continue
        parts = []
        for k in ("t_f", "t_b", "t_w"):
            ratio = m[k] / s[k] if s[k] else float("inf")
            parts.append(f"{k[2:].upper()} {m[k]:.3f}/{s[k]:.3f} ms "
                         f"(x{ratio:.2f})")
        within = all(m[k] <= 1.5 * s[k] for k in ("t_f", "t_b", "t_w"))
        print(f"    stage {s['stage']}: measured/predicted " + ", ".join(parts)
              + f"; within 1.5x: {'yes' if within else 'NO'}")
    return 0


def median_ms(path):
    with open(path) as f:
        text = f.read()
    if '"median_step_ms"' in text:  # torch_gpt_step.py's line
        line = [l for l in text.splitlines() if l.startswith("{")][-1]
        return json.loads(line)["median_step_ms"]
    t = step_times(json.loads(text))
    return statistics.median(t[1:] or t)


def cmd_compare(label, a, b):
    ma, mb = median_ms(a), median_ms(b)
    print(f"    {label}: {ma:.2f} / {mb:.2f} ms = {ma / mb:.3f}"
          f" ({'at most' if ma <= mb else 'SLOWER than'} the second)")
    return 0


def ncu_times(path):
    """Kernel name -> list of gpu__time_duration.sum (ns) of ncu's raw CSV
    (the lines before the header are the profiled program's output)."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], rows[2:]  # rows[1]: the units
    name = header.index("Kernel Name")
    time = header.index("gpu__time_duration.sum")
    times = {}
    for r in data:
        if len(r) > max(name, time) and r[time]:
            times.setdefault(r[name], []).append(float(r[time].replace(",", "")))
    return times


def cmd_kernels(report_path, csv_path, top="5"):
    report = load(report_path)
    kernels = [k for rank in report["ranks"] for k in rank["kernels"]]
    times = ncu_times(csv_path)
    named = {k["kernel"] for k in kernels if k["kind"] != "gemm"}
    for p in "FBW":
        mine = [k for k in kernels if k["pass"] == p and k["kind"] != "gemm"]
        seen = [k for k in mine if k["kernel"] in times]
        if not mine:
            continue
        us = sum(statistics.fmean(times[k["kernel"]]) * k["launches"]
                 for k in seen) / 1e3
        roof = sum(k["roofline_ms"] * k["launches"] for k in seen) * 1e3
        print(f"    {p}: {len(seen)} of {len(mine)} generated kernels profiled:"
              f" {us:.1f} us against a roofline of {roof:.1f} us"
              f" (x{us / roof if roof else float('inf'):.2f})")
        by = {}
        for k in seen:
            if k["roofline_ms"] > 0:
                t = statistics.fmean(times[k["kernel"]]) / 1e3
                by[k["kernel"]] = (t - k["roofline_ms"] * 1e3, t, k)
        for _, (excess, t, k) in sorted(by.items(),
                                        key=lambda e: -e[1][0])[:int(top)]:
            print(f"      {k['kernel']} ({k['kind']}, grid {k['grid'][0]}x"
                  f"{k['grid'][1]}, block {k['block'][0]}x{k['block'][1]}):"
                  f" {t:.1f} us, roofline {k['roofline_ms'] * 1e3:.1f} us")
    other = {n: t for n, t in times.items()
             if n not in named and not n.startswith("zb")}
    calls = sum(len(t) for t in other.values())
    if calls:
        total = sum(sum(t) for t in other.values()) / 1e3
        print(f"    cuBLAS and other library kernels: {calls} calls,"
              f" {total:.1f} us, {total / calls:.1f} us per call")
    return 0


def main(argv):
    cmds = {"losses": cmd_losses, "speed": cmd_speed, "torch": cmd_torch,
            "passes": cmd_passes, "compare": cmd_compare,
            "kernels": cmd_kernels}
    if len(argv) < 2 or argv[1] not in cmds:
        sys.exit(__doc__)
    try:
        return cmds[argv[1]](*argv[2:])
    except (OSError, ValueError, KeyError, IndexError, TypeError,
            ZeroDivisionError) as e:
        print(f"    {argv[1]}: cannot read the numbers: "
              f"{e.__class__.__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
