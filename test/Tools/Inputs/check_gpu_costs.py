"""Compares the per-stage T_F/T_B/T_W of plan.json files with the per-pass
times (roofline + launch overheads) of a zb-compile --gpu-report
(gpu_report.json "passes" "time_ms").

usage: check_gpu_costs.py REPORT_DIR GPU_PLAN_DIR MODEL_PLAN_DIR PROFILED_DIR
"""
import json
import sys

report_dir, gpu, model, profiled = sys.argv[1:5]
report = {}
full = json.load(open(report_dir + "/gpu_report.json"))
launch_ms = full["gpu"]["launch_seconds"] * 1e3
launches_priced = True
for rank in full["ranks"]:
    for p in rank["passes"]:
        report[(p["stage"], p["pass"])] = p["time_ms"]
        # time = roofline + one launch overhead per kernel and GEMM.
        expected = p["roofline_ms"] + (p["kernels"] + p["gemms"]) * launch_ms
        launches_priced &= abs(p["time_ms"] - expected) <= 1e-12 * expected


def costs(d):
    return [(s["t_f"], s["t_b"], s["t_w"])
            for s in json.load(open(d + "/plan.json"))["stages"]]


kernels = [(report[(s, "F")], report[(s, "B")], report[(s, "W")])
           for s in range(len(costs(gpu)))]


def close(a, b):
    return all(abs(x - y) <= 1e-12 * max(abs(x), 1e-30)
               for u, v in zip(a, b) for x, y in zip(u, v))


print("launch overhead", launch_ms * 1e3, "us per launch, priced:",
      launches_priced)
print("gpu plan uses the kernel costs:", close(costs(gpu), kernels))
print("cost-model plan differs:", not close(costs(model), kernels))
print("profile is the same costs:", close(costs(profiled), kernels))
