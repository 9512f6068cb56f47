"""Pictures of schedules with matplotlib (imported on first use).

plot(schedule):        the paper's Gantt chart (Figure 3 style): one row per
                       rank, F / B / W in the paper's colours with the
                       microbatch number, idle time left grey.
plot_memory(schedule): activation memory per rank over time against the
                       rank's limit.
plot_run(report):      the realized timeline of a zb-run trace next to the
                       predicted one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from . import Schedule

# The paper's colours: F blue, B teal, W green (lighter for the second
# chunk of V-shape and interleaved schedules).
_COLORS = {"F": ("#8fb4e3", "#c5d8f1"), "B": ("#9ad0c2", "#cbe8e0"),
           "W": ("#b9d98a", "#dcecc4")}


def _pyplot():
    import matplotlib
    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps"):
        try:
            import matplotlib.pyplot  # noqa: F401
        except Exception:  # no display
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _chunk(schedule, rank: int, stage: int) -> int:
    stages = [s for s, r in enumerate(schedule.stage_to_rank) if r == rank]
    return stages.index(stage) if stage in stages else 0


def _gantt(ax, timeline, schedule, title: str, label_every: int = 1):
    ranks = len(timeline)
    end = max((t[4] for row in timeline for t in row), default=1.0)
    for r, row in enumerate(timeline):
        y = ranks - 1 - r
        ax.broken_barh([(0, end)], (y - 0.4, 0.8), facecolors="#eeeeee")
        for kind, stage, mb, start, stop in row:
            color = _COLORS[kind][min(1, _chunk(schedule, r, stage))]
            ax.broken_barh([(start, stop - start)], (y - 0.4, 0.8),
                           facecolors=color, edgecolors="#555555",
                           linewidth=0.4)
            if mb % label_every == 0 and stop - start > end / 400:
                ax.text((start + stop) / 2, y, str(mb), ha="center",
                        va="center", fontsize=6)
    ax.set_yticks(range(ranks))
    ax.set_yticklabels([f"rank {ranks - 1 - y}" for y in range(ranks)])
    ax.set_xlim(0, end)
    ax.set_xlabel("time (ms)")
    ax.set_title(title)


def plot(schedule: Schedule, ax: Axes | None = None,
         title: str | None = None) -> Axes:
    """Gantt chart of ``schedule`` (a zb.Schedule): F, B, W boxes with
    their microbatch numbers; grey where a rank idles. Returns the Axes."""
    plt = _pyplot()
    if ax is None:
        width = min(24, 4 + 0.15 * schedule.microbatches * 3)
        _, ax = plt.subplots(figsize=(width, 0.45 * schedule.stages + 1.2))
    label = title or (f"{schedule.name}: p={schedule.stages} "
                      f"m={schedule.microbatches}, bubble rate "
                      f"{schedule.bubble_rate:.4f}")
    every = 1 if schedule.microbatches <= 32 else 4
    _gantt(ax, schedule.timeline, schedule, label, every)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=_COLORS[k][0], label=k) for k in "FBW"],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    return ax


def plot_memory(schedule: Schedule, ax: Axes | None = None) -> Axes:
    """Activation memory per rank over time (steps at each pass start: F
    adds M_B, B adds M_W - M_B, W frees M_W) with each rank's limit dashed.
    Returns the Axes."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    problem = schedule._problem
    chunks = max(1, len(schedule.stage_to_rank) // schedule.stages)

    def per_stage(values):
        values = list(values)
        if not values:
            return [0.0] * len(schedule.stage_to_rank)
        if len(values) == 1:
            values = values * schedule.stages
        if len(values) == schedule.stages:  # per rank: split over chunks
            return [values[r] / chunks for r in schedule.stage_to_rank]
        return values

    mem_b, mem_w = per_stage(problem.mem_b), per_stage(problem.mem_w)
    delta = {"F": lambda s: mem_b[s], "B": lambda s: mem_w[s] - mem_b[s],
             "W": lambda s: -mem_w[s]}
    limits = schedule.memory_limits
    for r, row in enumerate(schedule.timeline):
        times, values, mem = [0.0], [0.0], 0.0
        for kind, stage, _, start, _end in row:
            mem += delta[kind](stage)
            times.append(start)
            values.append(mem)
        line, = ax.step(times, values, where="post", label=f"rank {r}")
        if limits[r] > 0:
            ax.axhline(limits[r], color=line.get_color(), linestyle="--",
                       linewidth=0.8)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("activation memory")
    ax.set_title(f"{schedule.name}: memory per rank (dashed: limit)")
    ax.legend(fontsize=7)
    return ax


def plot_run(trace: str | dict[str, Any], schedule: Schedule | None = None,
             axes: Sequence[Axes] | None = None) -> Sequence[Axes]:
    """The realized timeline of a zb-run Perfetto trace (the path of
    ``zb-run --trace FILE`` or its parsed JSON) above the predicted one of
    ``schedule`` (optional). Returns the Axes."""
    plt = _pyplot()
    if isinstance(trace, str):
        with open(trace) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    rows: dict[int, list] = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        kind = e.get("cat", "")
        if kind not in ("F", "B", "W"):
            continue
        args = e.get("args", {})
        # One thread per rank (tid), as zb-run and zb-sched write them.
        rows.setdefault(int(e.get("tid", 0)), []).append(
            (kind, int(args.get("stage", 0)), int(args.get("microbatch", 0)),
             e["ts"] / 1000.0, (e["ts"] + e.get("dur", 0)) / 1000.0))
    if not rows:
        raise ValueError("plot_run: the trace has no F/B/W events")
    t0 = min(t[3] for row in rows.values() for t in row)
    timeline = [[(k, s, m, a - t0, b - t0) for k, s, m, a, b in
                 sorted(rows[r], key=lambda t: t[3])] for r in sorted(rows)]
    n = 2 if schedule is not None else 1
    if axes is None:
        _, axes = plt.subplots(n, 1, figsize=(12, 1.2 + 0.9 * n *
                                              len(timeline)), squeeze=False)
        axes = [a[0] for a in axes]

    class _Ranks:  # stage -> rank for the colours
        stage_to_rank = (schedule.stage_to_rank if schedule is not None
                         else list(range(len(timeline))))
    _gantt(axes[0], timeline, _Ranks, "realized (zb-run trace)", 1)
    if schedule is not None:
        _gantt(axes[1], schedule.timeline, schedule,
               f"predicted ({schedule.name})", 1)
    return axes
