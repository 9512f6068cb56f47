"""Independent check of zb-run's replay and measured-cost prediction.

Usage: replay_trace.py PLAN_DIR TRACE.json REPORT.json

Re-implements, without any zb code, the event-driven simulation of the
Zero Bubble paper (F(s,i) after F(s-1,i); B(s,i) after F(s,i) and B(s+1,i),
or W(s+1,i) when the backward is fused; W(s,i) after B(s,i); one serial
stream per rank in the schedule's order) and applies it to the trace of a
one-step zb-run:
  - replay: every action takes its traced cost, T_comm = 0;
  - measured costs: every action takes the mean traced cost of its
    (stage, kind), T_comm = the shortest wait of a receive of the stage's
    rank (its duration less its "work_us").
An action's cost is its traced duration plus its rank's own work on messages
("work_us" of a send or receive, the CPU backend's copy and MPI call once the
message is there): the receives since the rank's previous action and the
sends before its next one. The per-rank bubble is 1 - busy / (end of last
action - start of first); the realized one counts the actions and, within
that span, the message work as busy.
Compares with the report's "replayed_bubble_rate",
"at_measured_costs.rank_bubble_rate" and "realized_bubble_rate" (within 1e-3:
the trace rounds times to nanoseconds) and prints "OK replay" on success;
exits 1 otherwise.
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
    min_recv, worked = {}, 0
    realized = []
    for r in range(len(order)):
        # The rank's events in time order: a pass costs its duration plus the
        # rank's own work on messages ("work_us") received since its previous
        # pass and sent before its next one.
        mine = sorted((e for e in events if e["tid"] == r),
                      key=lambda e: e["ts"])
        received, last, last_end = 0.0, None, -1e300
        busy = []  # intervals (us) the rank worked: passes and message work
        for e in mine:
            m = re.match(r"([FBW]) s(\d+) mb(\d+)$", e["name"])
            if m:
                last = (m.group(1), int(m.group(2)), int(m.group(3)))
                dur[last] = e["dur"] / 1000.0 + received
                received, last_end = 0.0, e["ts"] + e["dur"]
                busy.append((e["ts"], last_end))
                continue
            work = e["args"].get("work_us")
            if e["name"].startswith("recv"):
                wait = e["dur"] - (work if work is not None else 0.0)
                min_recv[r] = min(min_recv.get(r, 1e300), wait / 1000.0)
            if work is None or e["ts"] < last_end:
                continue
            worked += 1
            end = e["ts"] + e["dur"]
            busy.append((end - work, end))
            if e["name"].startswith("send") and last is not None:
                dur[last] += work / 1000.0
            else:
                received += work / 1000.0
        # Realized bubble: 1 - busy / span, the span from the first pass's
        # begin to the last pass's end, message work clipped to it.
        passes = [e for e in mine if re.match(r"[FBW] s", e["name"])]
        first = min(e["ts"] for e in passes)
        end = max(e["ts"] + e["dur"] for e in passes)
        clipped = sorted((max(a, first), min(b, end)) for a, b in busy
                         if min(b, end) > max(a, first))
        total, cur = 0.0, None
        for a, b in clipped:
            if cur is None or a > cur[1]:
                total += cur[1] - cur[0] if cur else 0.0
                cur = [a, b]
            else:
                cur[1] = max(cur[1], b)
        total += cur[1] - cur[0]
        realized.append(max(0.0, 1 - total / (end - first)))
    for a, d in dur.items():
        per_kind.setdefault((a[0], a[1]), []).append(d)
    if not worked:
        sys.exit("replay_trace.py: no message work (work_us) in the trace")
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
             report["at_measured_costs"]["rank_bubble_rate"]),
            ("realized_bubble_rate", realized,
             report["realized_bubble_rate"])]:
        for r, (a, b) in enumerate(zip(mine, theirs)):
            if abs(a - b) > 1e-3:
                print(f"MISMATCH {name} rank {r}: python {a:.6f} zb-run {b:.6f}")
                ok = False
    if not ok:
        sys.exit(1)
    print("OK replay " + " ".join(f"{b:.4f}" for b in replay))


if __name__ == "__main__":
    main()
