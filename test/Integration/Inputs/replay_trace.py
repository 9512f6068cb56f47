"""Independent check of zb-run's replay and measured-cost prediction.

Usage: replay_trace.py PLAN_DIR TRACE.json REPORT.json

Re-implements, without any zb code, the event-driven simulation of the
Zero Bubble paper (F(s,i) after F(s-1,i); B(s,i) after F(s,i) and B(s+1,i),
or W(s+1,i) when the backward is fused; W(s,i) after B(s,i); one serial
stream per rank in the schedule's order) and applies it to the trace of a
one-step zb-run:
  - replay: every action takes its traced duration, T_comm = 0;
  - measured costs: every action takes the mean traced duration of its
    (stage, kind), T_comm = the shortest traced receive of the stage's rank.
The per-rank bubble is 1 - busy / (end of last action - start of first).
Compares with the report's "replayed_bubble_rate" and
"at_measured_costs.rank_bubble_rate" (within 1e-3: the trace rounds times to
nanoseconds) and prints "OK replay" on success; exits 1 otherwise.
"""
import json
import re
import sys


def simulate(order, stage_to_rank, fused, dur, comm):
    num_stages = len(stage_to_rank)
    end, nxt = {}, [0] * len(order)
    free, first = [0.0] * len(order), [None] * len(order)
    busy = [0.0] * len(order)
    total = sum(len(o) for o in order)
    while len(end) < total:
        progress = False
        for r, acts in enumerate(order):
            while nxt[r] < len(acts):
                k, s, i = acts[nxt[r]]
                deps = []
                if k == "F" and s > 0:
                    deps.append((("F", s - 1, i), comm[s - 1] if stage_to_rank[s - 1] != r else 0.0))
                if k == "B":
                    deps.append((("F", s, i), 0.0))
                    if s + 1 < num_stages:
                        src = ("W" if fused else "B", s + 1, i)
                        deps.append((src, comm[s + 1] if stage_to_rank[s + 1] != r else 0.0))
                if k == "W":
                    deps.append((("B", s, i), 0.0))
                if any(d not in end for d, _ in deps):
                    break
                start = max([free[r]] + [end[d] + lat for d, lat in deps])
                if first[r] is None:
                    first[r] = start
                end[(k, s, i)] = start + dur[(k, s, i)]
                free[r] = end[(k, s, i)]
                busy[r] += dur[(k, s, i)]
                nxt[r] += 1
                progress = True
        if not progress:
            sys.exit("replay_trace.py: the schedule cannot be simulated")
    return [max(0.0, 1 - busy[r] / (free[r] - first[r])) if free[r] > first[r] else 0.0
            for r in range(len(order))]


def main():
    plan_dir, trace_path, report_path = sys.argv[1:4]
    sched = json.load(open(f"{plan_dir}/schedule.json"))
    stage_to_rank = sched["stage_to_rank"]
    order = [[(a["kind"], a["stage"], a["microbatch"]) for a in r["actions"]]
             for r in sched["ranks"]]
    events = [e for e in json.load(open(trace_path))["traceEvents"]
              if e.get("ph") == "X"]
    dur, per_kind = {}, {}
    min_recv = {}
    for e in events:
        m = re.match(r"([FBW]) s(\d+) mb(\d+)$", e["name"])
        if m:
            key = (m.group(1), int(m.group(2)), int(m.group(3)))
            dur[key] = e["dur"] / 1000.0
            per_kind.setdefault((key[0], key[1]), []).append(dur[key])
        elif e["name"].startswith("recv"):
            r = e["tid"]
            min_recv[r] = min(min_recv.get(r, 1e300), e["dur"] / 1000.0)
    missing = [a for o in order for a in o if a not in dur]
    if missing:
        sys.exit(f"replay_trace.py: {len(missing)} actions missing from the trace, e.g. {missing[0]}")
    num_stages = len(stage_to_rank)
    replay = simulate(order, stage_to_rank, sched["fused_backward"], dur,
                      [0.0] * num_stages)
    mean = {a: sum(per_kind[(a[0], a[1])]) / len(per_kind[(a[0], a[1])])
            for a in dur}
    comm = [min_recv.get(stage_to_rank[s], 0.0) for s in range(num_stages)]
    measured = simulate(order, stage_to_rank, sched["fused_backward"], mean,
                        comm)
    report = json.load(open(report_path))
    ok = True
    for name, mine, theirs in [
            ("replayed_bubble_rate", replay, report["replayed_bubble_rate"]),
            ("at_measured_costs", measured,
             report["at_measured_costs"]["rank_bubble_rate"])]:
        for r, (a, b) in enumerate(zip(mine, theirs)):
            if abs(a - b) > 1e-3:
                print(f"MISMATCH {name} rank {r}: python {a:.6f} zb-run {b:.6f}")
                ok = False
    if not ok:
        sys.exit(1)
    print("OK replay " + " ".join(f"{b:.4f}" for b in replay))


if __name__ == "__main__":
    main()
