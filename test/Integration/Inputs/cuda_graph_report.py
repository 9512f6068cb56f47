"""Prints what the CUDA graph tests check, one fact per line (FileCheck).

usage: cuda_graph_report.py steady SHORT.json LONG.json STEPS_SHORT STEPS_LONG
         the steady-state counts per step of rank 0: the LONG run's counters
         minus the SHORT run's, over the step difference
       cuda_graph_report.py ranks RUN.json STEPS
         per rank: the graphs' state, captures, replays, divergences
       cuda_graph_report.py digests FAKE_PREFIX RANKS [OTHER_PREFIX]
         per rank, from the stand-in's report (ZB_FAKE_CUDA_REPORT): whether
         steps 2.. ran the same launches as each other (step_digests, one
         value per step variant) and, with OTHER_PREFIX, whether every step
         ran launches of the same shape as the other run's (step_shapes)
"""
import json
import sys


def steady(short, long_, n_short, n_long):
    a = json.load(open(short))["cuda"][0]
    b = json.load(open(long_))["cuda"][0]
    steps = int(n_long) - int(n_short)
    per = lambda k: (b[k] - a[k]) / steps
    name = lambda k: (b["driver_calls_by_name"].get(k, 0) -
                      a["driver_calls_by_name"].get(k, 0)) / steps
    print(f"graphs {b['graphs']}")
    print(f"driver calls per step: {per('driver_calls'):.0f}")
    print(f"at most 50 driver calls per step: {per('driver_calls') <= 50}")
    print(f"kernel launches per step: {per('kernel_launches'):.0f}")
    print(f"graph launches per step: {per('graph_launches'):.0f}")
    print(f"host synchronizations at most 4: {per('host_synchronizations') <= 4}")
    print("resolved or created in a steady step:",
          name("cuModuleGetFunction") + name("cuStreamCreate") +
          name("cuEventCreate") + name("cuModuleLoadData") +
          name("cuStreamBeginCapture_v2"))
    print(f"divergences {b['graph_divergences']}")


def ranks(run, steps):
    for r, c in enumerate(json.load(open(run))["cuda"]):
        print(f"rank {r}: graphs {c['graphs']}, "
              f"captured+replayed {c['graph_captures'] + c['graph_replays']} "
              f"of {steps}, divergences {c['graph_divergences']}, "
              f"by name {c['driver_calls'] == sum(c['driver_calls_by_name'].values())}")


def read(prefix, rank):
    fields = {}
    for line in open(f"{prefix}.rank{rank}"):
        key, *values = line.split()
        fields[key] = values
    return fields


def digests(prefix, nranks, other=None):
    for r in range(int(nranks)):
        mine = read(prefix, r)
        steps = mine["step_digests"]
        # Steps 2.. alternate at most between two buffer sets (variants).
        later = steps[1:]
        periodic = all(later[i] == later[i % 2] for i in range(len(later)))
        line = (f"rank {r}: {len(steps)} steps, steps 2.. repeat "
                f"{'yes' if periodic and len(later) >= 3 else 'no'}")
        if other:
            theirs = read(other, r)["step_shapes"]
            line += (", shapes as the other run: "
                     f"{'yes' if theirs == mine['step_shapes'] else 'no'}")
        print(line)


if __name__ == "__main__":
    {"steady": steady, "ranks": ranks, "digests": digests}[sys.argv[1]](
        *sys.argv[2:])
