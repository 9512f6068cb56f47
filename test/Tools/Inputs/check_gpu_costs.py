"""Compares the per-stage T_F/T_B/T_W of plan.json files with the per-pass
roofline sums of a zb-compile --gpu-report (gpu_report.json "passes").

usage: check_gpu_costs.py REPORT_DIR GPU_PLAN_DIR MODEL_PLAN_DIR PROFILED_DIR
"""
import json
import sys

report_dir, gpu, model, profiled = sys.argv[1:5]
report = {}
for rank in json.load(open(report_dir + "/gpu_report.json"))["ranks"]:
    for p in rank["passes"]:
        report[(p["stage"], p["pass"])] = p["roofline_ms"]


def costs(d):
    return [(s["t_f"], s["t_b"], s["t_w"])
            for s in json.load(open(d + "/plan.json"))["stages"]]


kernels = [(report[(s, "F")], report[(s, "B")], report[(s, "W")])
           for s in range(len(costs(gpu)))]


def close(a, b):
    return all(abs(x - y) <= 1e-12 * max(abs(x), 1e-30)
               for u, v in zip(a, b) for x, y in zip(u, v))


print("gpu plan uses the kernel costs:", close(costs(gpu), kernels))
print("cost-model plan differs:", not close(costs(model), kernels))
print("profile is the same costs:", close(costs(profiled), kernels))
