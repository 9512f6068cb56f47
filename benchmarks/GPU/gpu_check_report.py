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
    gpu_check_report.py gpt-row ROWS.jsonl LABEL PLAN_DIR RESULT [PROFILE.json]
                                                      one row of the GPT-2 124M
                                                      table (issue 38): RESULT
                                                      is zb-run's JSON report
                                                      or torch_gpt_step.py's
                                                      line; appended to
                                                      ROWS.jsonl and printed
    gpu_check_report.py gpt-skip ROWS.jsonl LABEL PLAN_DIR WHY
                                                      a row that did not run
                                                      (WHY: out of memory,
                                                      timed out, ...)
    gpu_check_report.py gpt-table ROWS.jsonl          the table of the rows:
                                                      system, microbatch x T,
                                                      step ms, tokens/s, MFU;
                                                      then T_F/T_B/T_W measured
                                                      against the plan's
                                                      prediction per stage

MFU (gpt-row, torch_gpt_step.py): tokens/s x FLOPs per token / peak, with
FLOPs per token = 6N + 6LCT as llm.c's train_gpt2.cu counts (6N: the weight
matmuls, forward and backward; 6LCT: the causal attention's QK^T and AV),
L layers, C = d_model, T the sequence length, and N every parameter of the
plan once (a tied wte once) except the position embedding wpe (a gather,
no matmul; llm.c keeps it in N, 0.6 % of GPT-2 124M's) and, when the LM
head is untied, the token embedding wte (a gather too); the peak is
PEAK_TFLOPS, the H200's dense bf16 tensor-core peak (989.4 TFLOP/s,
without sparsity; ZB_GPU_PEAK_TFLOPS overrides it).
"""
import csv
import json
import math
import os
import re
import statistics
import sys

# NVIDIA H200 (SXM): dense BF16 tensor-core peak, TFLOP/s (1979 with
# 2:4 sparsity). The H100 SXM's is the same.
PEAK_TFLOPS = 989.4


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


def peak_tflops():
    return float(os.environ.get("ZB_GPU_PEAK_TFLOPS") or PEAK_TFLOPS)


def model_flops(plan):
    """FLOPs per token of a make_model.py GPT (plan.json's parameters: wte,
    wpe, lm_head when untied, h<l>.*): 6N + 6LCT (the module's docstring)."""
    shapes = {p["name"]: p["shape"] for p in plan["params"]}
    size = {n: math.prod(s) if s else 1 for n, s in shapes.items()}
    excluded = [n for n in ("wpe",) if n in shapes]
    if "lm_head" in shapes and "wte" in shapes:
        excluded.append("wte")
    n = sum(size.values()) - sum(size[e] for e in excluded)
    layers = len({m.group(1) for m in (re.match(r"h(\d+)\.", k)
                                       for k in shapes) if m})
    dim = shapes["wte"][-1]
    seq = plan["inputs"][0]["sample_shape"][0]
    return {"n": n, "params": sum(size.values()), "excluded": excluded,
            "layers": layers, "dim": dim, "seq": seq,
            "per_token": 6 * n + 6 * layers * dim * seq}


def load_result(path):
    """zb-run's JSON report or torch_gpt_step.py's last JSON line, as
    (kind, object)."""
    with open(path) as f:
        text = f.read()
    if '"median_step_ms"' in text:  # torch_gpt_step.py's line
        line = [l for l in text.splitlines() if l.startswith("{")][-1]
        return "torch", json.loads(line)
    return "zb", json.loads(text)


def append_row(rows_path, row):
    with open(rows_path, "a") as f:
        f.write(json.dumps(row) + "\n")


def plan_shape(plan_dir):
    plan = load(os.path.join(plan_dir, "plan.json"))
    return plan, {"plan": os.path.basename(os.path.normpath(plan_dir)),
                  "ranks": plan["num_ranks"] * plan.get("data_parallel", 1),
                  "microbatch_size": plan["microbatch_size"],
                  "microbatches": plan["num_microbatches"]
                  * plan.get("data_parallel", 1),
                  "seq": plan["inputs"][0]["sample_shape"][0],
                  "precision": plan.get("precision", "fp32")}


def cmd_gpt_row(rows_path, label, plan_dir, result_path, profile_path=None):
    plan, row = plan_shape(plan_dir)
    kind, r = load_result(result_path)
    flops = model_flops(plan)
    if kind == "zb":
        t = step_times(r)
        median = statistics.median(t[1:] or t)
        losses = losses_of(r)
        graphs = [c.get("graphs") for c in r.get("cuda", [])]
        detail = [f"CUDA graphs {graphs[0]}"] if graphs else []
        heap = r.get("peak_heap_bytes") or []
        if heap:  # zb-run's memory pool (device memory on a GPU), per rank
            detail.append("peak heap " + " / ".join(
                f"{b / 2**30:.1f}" for b in heap) + " GiB")
        row["detail"] = ", ".join(detail)
    else:
        t, median, losses = r["step_ms"], r["median_step_ms"], r["losses"]
        row["ranks"] = 1
        row["detail"] = (f"torch {r['torch']}" + (
            f", peak {r['peak_mem_gib']:.1f} GiB"
            if r.get("peak_mem_gib") else ""))
    tokens = row["microbatches"] * row["microbatch_size"] * row["seq"]
    tps = tokens / (median / 1e3)
    row.update({"system": label, "status": "ok", "steps": len(t),
                "step_ms": median, "tokens_per_step": tokens,
                "tokens_per_s": tps, "flops_per_token": flops["per_token"],
                "params_counted": flops["n"], "params": flops["params"],
                "layers": flops["layers"], "dim": flops["dim"],
                "peak_tflops": peak_tflops(),
                "mfu": tps * flops["per_token"] / (peak_tflops() * 1e12),
                "loss1": losses[0] if losses else None})
    if profile_path:
        measured = {s["stage"]: s for s in load(profile_path)["stages"]}
        row["passes"] = [
            {"stage": s["stage"],
             **{k: [measured[s["stage"]][k], s[k]] for k in ("t_f", "t_b",
                                                            "t_w")}}
            for s in plan["stages"] if s["stage"] in measured]
    append_row(rows_path, row)
    print(f"    {label}: {row['microbatch_size']} x {row['seq']} tokens a "
          f"microbatch, {row['microbatches']} a step: median "
          f"{median:.1f} ms (steps 2..{len(t)}), {tps:,.0f} tokens/s, MFU "
          f"{100 * row['mfu']:.1f} %, loss 1 "
          f"{row['loss1'] if row['loss1'] is not None else float('nan'):.4f}")
    return 0


def cmd_gpt_skip(rows_path, label, plan_dir, why):
    _, row = plan_shape(plan_dir)
    row.update({"system": label, "status": why})
    append_row(rows_path, row)
    print(f"    {label}: {row['microbatch_size']} x {row['seq']} tokens a "
          f"microbatch: {why}")
    return 0


def cmd_gpt_table(rows_path):
    with open(rows_path) as f:
        rows = [json.loads(l) for l in f if l.strip()]
    if not rows:
        print("    (no rows)")
        return 0
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        r = ok[0]
        n, L, C, T = r["params_counted"], r["layers"], r["dim"], r["seq"]
        print(f"    FLOPs per token = 6N + 6LCT = 6 x {n:,} + 6 x {L} x {C} x "
              f"{T} = {r['flops_per_token'] / 1e9:.4f} GFLOP (N: the "
              f"{r['params']:,} parameters without wpe); MFU against "
              f"{r['peak_tflops']} TFLOP/s"
              + (" (the H200's dense bf16 peak)"
                 if r["peak_tflops"] == PEAK_TFLOPS else ""))
    print("    | system | ranks | microbatch x T | microbatches | step ms "
          "| tokens/s | MFU | loss 1 | |")
    print("    |---|---|---|---|---|---|---|---|---|")
    for r in rows:
        shape = f"{r['microbatch_size']} x {r['seq']}"
        if r["status"] != "ok":
            print(f"    | {r['system']} | {r['ranks']} | {shape} | "
                  f"{r['microbatches']} | - | - | - | - | {r['status']} |")
            continue
        loss = f"{r['loss1']:.4f}" if r["loss1"] is not None else "-"
        print(f"    | {r['system']} | {r['ranks']} | {shape} | "
              f"{r['microbatches']} | {r['step_ms']:.1f} | "
              f"{r['tokens_per_s']:,.0f} | {100 * r['mfu']:.1f} % | {loss} | "
              f"{r.get('detail', '')} |")
    zb = [r for r in ok if r.get("passes")]
    if zb:
        print("    T_F/T_B/T_W per microbatch, ms: measured (zb-run --profile,"
              " steps 2..N) / predicted (plan.json)")
        print("    | system | microbatch x T | stage | F | B | W | within 1.5x |")
        print("    |---|---|---|---|---|---|---|")
        for r in zb:
            for s in r["passes"]:
                cells = []
                for k in ("t_f", "t_b", "t_w"):
                    m, p = s[k]
                    cells.append(f"{m:.3f} / {p:.3f} (x{m / p:.2f})" if p
                                 else f"{m:.3f} / -")
                within = all(s[k][0] <= 1.5 * s[k][1]
                             for k in ("t_f", "t_b", "t_w"))
                print(f"    | {r['system']} | {r['microbatch_size']} x "
                      f"{r['seq']} | {s['stage']} | " + " | ".join(cells)
                      + f" | {'yes' if within else 'NO'} |")
    return 0


def main(argv):
    cmds = {"losses": cmd_losses, "speed": cmd_speed, "torch": cmd_torch,
            "passes": cmd_passes, "compare": cmd_compare,
            "kernels": cmd_kernels, "gpt-row": cmd_gpt_row,
            "gpt-skip": cmd_gpt_skip, "gpt-table": cmd_gpt_table}
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
