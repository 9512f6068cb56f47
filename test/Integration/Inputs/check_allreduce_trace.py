"""Checks the data-parallel all-reduces in a zb-run --trace file (Chrome
trace): for every pipeline rank r of plan.json, its all-reduce track
(tid P + r, "rank r all-reduce") holds buckets (first_param .. last_param:
the rank's gradients between them) that cover every gradient of the rank
(plan.json ranks[r].args of kind grad) exactly once, and counts the
gradients whose bucket started before the rank's last W began (the Zero
Bubble paper's Appendix A: the all-reduce overlaps the passes still to
run), and those whose bucket started inside a W pass of the rank
(zb-cluster-weight-gradients: a stage's last W announces each group of
gradients as soon as it is computed, before the rest of the W runs).

usage: check_allreduce_trace.py PLAN_DIR TRACE.json
prints: "rank R: G gradients in B buckets, K started before its last W,
J inside a W"
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
        covered, early, inside_w = [], 0, 0
        for e in ars:
            lo, hi = e["args"]["first_param"], e["args"]["last_param"]
            inside = [g for g in grads if lo <= g <= hi]
            covered += inside
            if e["ts"] < last_w:
                early += len(inside)
            if any(w["ts"] <= e["ts"] <= w["ts"] + w["dur"] for w in ws):
                inside_w += len(inside)
        same = sorted(covered) == grads
        ok = ok and same
        print(f"rank {r}: {len(grads)} gradients in {len(ars)} buckets"
              f"{'' if same else ' (MISMATCH)'}, {early} started before its "
              f"last W, {inside_w} inside a W")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
