"""zb.schedule & co. against the C++ tool zb-sched (an independent code path:
the command line, its own option parsing and JSON writer) and the paper."""
import json
import subprocess

import pytest

import zb
from conftest import run_tool, tool

CASES = [
    # (problem keyword arguments, zb-sched flags, schedule names)
    (dict(stages=4, microbatches=8, cost_f=2, cost_b=3, cost_w=1,
          cost_comm=0.5, mem_b=1, mem_w=0.5, memory_limit=8),
     ["--stages", 4, "--microbatches", 8, "--cost-f", 2, "--cost-b", 3,
      "--cost-w", 1, "--cost-comm", 0.5, "--mem-b", 1, "--mem-w", 0.5,
      "--memory-limit", 8],
     ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-auto", "zb-1p", "zb-2p",
      "zb-v", "v-half", "v-min", "v-auto", "1f1b-i", "dualpipev",
      "dualpipe"]),
    (dict(stages=6, microbatches=18, cost_f=[3, 2, 2, 2, 2, 4], cost_b=3.5,
          cost_w=1.5, cost_comm=0.2, mem_b=2, mem_w=1,
          memory_limit=[24, 20, 18, 14, 12, 12]),
     ["--stages", 6, "--microbatches", 18, "--cost-f", "3,2,2,2,2,4",
      "--cost-b", 3.5, "--cost-w", 1.5, "--cost-comm", 0.2, "--mem-b", 2,
      "--mem-w", 1, "--memory-limit", "24,20,18,14,12,12"],
     ["zb-auto", "zb-1p", "zb-v", "v-auto"]),
]


def cli(flags, name):
    out = run_tool(tool("zb-sched"), *flags, "--schedule", name, "--format",
                   "json").stdout
    return json.loads(out)


@pytest.mark.parametrize("kwargs,flags,names", CASES)
def test_python_equals_cli(kwargs, flags, names):
    problem = zb.Problem(**kwargs)
    for name in names:
        s = zb.schedule(problem, name)
        ref = cli(flags, name)
        assert s.bubble_rate == pytest.approx(ref["bubble_rate"], abs=1e-12)
        assert s.makespan == pytest.approx(ref["makespan"], abs=1e-9)
        assert s.peak_memory == pytest.approx(ref["peak_memory"], abs=1e-9)
        assert s.stage_to_rank == ref["stage_to_rank"]
        assert s.directions == ref.get("directions", 1)
        assert s.actions == [[(a["kind"], a["stage"], a["microbatch"])
                              for a in r["actions"]] for r in ref["ranks"]]
        s.verify()


def test_paper_figure3_zero_bubble():
    # Figure 3 / Section 2.2: with T_F = T_B = T_W, ZB-H2 has no bubble in
    # the stage-span convention and ZB-H1 keeps 1F1B's memory (p M_B).
    p = zb.Problem(stages=4, microbatches=8, mem_b=1, mem_w=0.5)
    assert zb.schedule(p, "zb-h2").bubble_rate == 0
    h1 = zb.schedule(p, "zb-h1")
    assert max(h1.peak_memory) == 4
    # Section 2.2: ZB-H1's bubble is (p-1)(T_F + T_B - T_W) = 3 of 27.
    assert h1.bubble_rate == pytest.approx(3 / 27)


def test_csv_and_json_round_trip():
    p = zb.Problem(stages=4, microbatches=8, cost_f=2, cost_b=3, cost_w=1,
                   cost_comm=0.5, mem_b=1, mem_w=0.5)
    for name in ("zb-h1", "zb-2p", "1f1b"):
        s = zb.schedule(p, name)
        back = zb.Schedule.from_csv(s.to_csv(), p)
        assert back.actions == s.actions
        back.verify()
        assert back.bubble_rate == pytest.approx(s.bubble_rate)
        again = zb.Schedule.from_json(s.to_json())
        assert again.actions == s.actions
        assert again.to_json() == s.to_json()


def test_simulate_with_other_costs_equals_cli():
    p = zb.Problem(stages=4, microbatches=8, cost_f=2, cost_b=3, cost_w=1,
                   mem_b=1, mem_w=0.5)
    s = zb.schedule(p, "zb-2p")
    other = zb.Problem(stages=4, microbatches=8, cost_f=1, cost_b=4,
                       cost_w=2, cost_comm=0.3, mem_b=1, mem_w=0.5)
    resim = zb.simulate(s, costs=other)
    doc = json.loads(s.to_json())
    doc["problem"].update(cost_f=[1], cost_b=[4], cost_w=[2], cost_comm=[0.3])
    proc = subprocess.run([tool("zb-sched"), "--input", "/dev/stdin",
                           "--format", "json"], input=json.dumps(doc),
                          capture_output=True, text=True, check=True)
    ref = json.loads(proc.stdout)
    assert resim.bubble_rate == pytest.approx(ref["bubble_rate"], abs=1e-12)
    assert resim.makespan == pytest.approx(ref["makespan"], abs=1e-9)
    assert resim.actions == s.actions


def test_ilp_report():
    p = zb.Problem(stages=3, microbatches=4, cost_f=5, cost_b=6, cost_w=3,
                   cost_comm=1, mem_b=1, mem_w=0.5, memory_limit=3)
    s = zb.schedule(p, "ilp", time_limit=20)
    assert s.ilp is not None and s.ilp.proven_optimal
    assert s.ilp.gap == 0
    assert s.ilp.objective == pytest.approx(s.stage_span)
    assert s.ilp.best_bound <= s.stage_span + 1e-9
    h = zb.schedule(p, "zb-auto")
    assert s.stage_span <= h.stage_span + 1e-9


@pytest.mark.parametrize("call,message", [
    (lambda: zb.schedule(zb.Problem(stages=4, microbatches=2), "zb-h1"),
     "zb-h1 needs at least p=4 microbatches, got m=2"),
    (lambda: zb.schedule(zb.Problem(stages=4, microbatches=8), "nope"),
     "unknown schedule 'nope'"),
    (lambda: zb.schedule(zb.Problem(stages=4, microbatches=8, mem_b=1,
                                    memory_limit=[4, 4, 4]), "zb-auto"),
     "memory-limit: 3 per-rank values for p=4 ranks"),
    (lambda: zb.schedule(zb.Problem(stages=4, microbatches=8, mem_b=1,
                                    mem_w=0.5, memory_limit=[8, 8, 0.5, 8]),
                         "zb-auto"),
     "memory limit 0.50 of rank 2 is below what any schedule needs there"),
    (lambda: zb.Problem(stages=4, microbatches=8, cost_f="x"),
     "cost_f must be a number or a list of numbers"),
    (lambda: zb.schedule(zb.Problem(stages=0, microbatches=8), "1f1b"),
     "stages"),
])
def test_errors_are_value_errors_with_the_cpp_message(call, message):
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert message in str(info.value)


def test_verify_names_the_problem():
    p = zb.Problem(stages=2, microbatches=2, mem_b=1, mem_w=0.5)
    s = zb.schedule(p, "1f1b")
    bad = zb.Schedule(s._problem, s._native)
    acts = bad.actions
    acts[0] = list(reversed(acts[0]))
    bad._native.actions = acts
    with pytest.raises(ValueError, match="dependency"):
        bad.verify()


def test_formats_are_nonempty():
    s = zb.schedule(zb.Problem(stages=2, microbatches=4), "zb-h1")
    assert s.to_svg().startswith("<svg") or "<svg" in s.to_svg()[:200]
    trace = json.loads(s.to_trace())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert sum(1 for e in events if e.get("ph") == "X") == 2 * 4 * 3
    assert "bubble rate" in str(s)


def test_fb_overlap_pairs():
    # DualPipeV p = 2, m = 4, unit costs: PyTorch's OVERLAP_F_B cells as
    # pairs (test/Schedule/fb-overlap.test); alpha = 0.5 makes a pair 0.75
    # ms instead of 1 and the stage span 11.75 instead of 12.5.
    p = zb.Problem(stages=2, microbatches=4)
    s = zb.schedule(p, "dualpipev")
    assert s.fb_pairs == [[7, 10, 15], [7, 10, 13]]
    assert s.stage_span == pytest.approx(12.5)
    q = zb.Problem(stages=2, microbatches=4, fb_overlap=0.5)
    assert zb.schedule(q, "dualpipev").stage_span == pytest.approx(11.75)
    with pytest.raises(ValueError, match="fb-overlap"):
        zb.schedule(zb.Problem(stages=2, microbatches=4, fb_overlap=2),
                    "dualpipev")
