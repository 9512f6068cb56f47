"""Checks the data-parallel all-reduces in a zb-run --trace file (Chrome
trace): for every pipeline rank r of plan.json, its all-reduce track
(tid P + r, "rank r all-reduce") holds one event per gradient of the rank
(plan.json ranks[r].args of kind grad), each parameter once, and counts the
all-reduces that started before the rank's last W began (the Zero Bubble
paper's Appendix A: a gradient's all-reduce overlaps the passes still to
run).

usage: check_allreduce_trace.py PLAN_DIR TRACE.json
prints: "rank R: N all-reduces of N gradients, K started before its last W"
"""
import json
import os
import sys


def main():
    plan_dir, trace_file = sys.argv[1:3]
    plan = json.load(open(os.path.join(plan_dir, "plan.json")))
    events = [e for e in json.load(open(trace_file))["traceEvents"]
              if e.get("ph") == "X"]
    p = plan["num_ranks"]
    ok = True
    for rank in plan["ranks"]:
        r = rank["rank"]
        grads = sorted(a["index"] for a in rank["args"] if a["kind"] == "grad")
        ws = [e for e in events if e["tid"] == r and e["cat"] == "W"]
        last_w = max(e["ts"] for e in ws)
        ars = [e for e in events
               if e["tid"] == p + r and e["cat"] == "all-reduce"]
        params = sorted(e["args"]["param"] for e in ars)
        early = sum(1 for e in ars if e["ts"] < last_w)
        same = params == grads
        ok = ok and same
        print(f"rank {r}: {len(ars)} all-reduces of {len(grads)} gradients"
              f"{'' if same else ' (MISMATCH)'}, {early} started before its "
              f"last W")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
