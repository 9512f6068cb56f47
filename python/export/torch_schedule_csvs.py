#!/usr/bin/env python3
"""The pipeline schedules of torch.distributed.pipelining written as PyTorch
writes them (its schedule CSV), as fixtures for zb's CSV reader, verifier,
simulator and `zb-compile --schedule-file` (issue 19).

Needs PyPI's torch 2.x (CPU import is enough; no process group, no GPU), in a
venv outside the repository, e.g.

  /work/venv-torch/bin/python python/export/torch_schedule_csvs.py OUTDIR

(`OUTDIR = test/Schedule/Inputs/pytorch` is how the committed fixtures were
made; OUTDIR/VERSION records the torch version.)

Every schedule class of torch.distributed.pipelining.schedules that has an
order is built from mock stages (the attributes the schedule constructors
read: stage_index, num_stages, group_size, group_rank), as PyTorch's own
tests do, for p = 2 and 4 ranks and m = 4 and 8 microbatches; the
multi-stage classes with 2 stages per rank (the interleaved mapping r, r + p
for Interleaved1F1B, LoopedBFS, InterleavedZeroBubble; the V mapping
r, 2p - 1 - r for ZBVZeroBubble and DualPipeV). Writes, per class and shape:

  <class>-p<P>-m<M>.csv        the compute order: `pipeline_order`, one row
                               per rank, written with csv.writer as
                               PipelineScheduleMulti._dump_csv does (empty
                               cells where PyTorch has None; the
                               single-stage classes add REDUCE_GRAD and
                               WAIT_REDUCE_GRAD)
  <class>-p<P>-m<M>-comms.csv  with communication and FSDP actions:
                               `pipeline_order_with_comms` as
                               _PipelineScheduleRuntime._dump_csv(
                               format="compute_comms") writes it. The
                               single-stage classes (GPipe, 1F1B) have no
                               lowering of their own: their compute order
                               (compute actions only) goes through
                               _PipelineScheduleRuntime._load_csv, the lowering
                               PyTorch documents for a schedule from a CSV.

A class or shape that PyTorch refuses is reported on stderr and skipped
(DualPipeV needs m >= the number of stages). Schedule1F1B's order is wrong on
the last rank in torch 2.15 (its _get_pipeline_order starts the last rank's
forwards at microbatch 1 and runs F<m> there: e.g. `1F1,1B0,...,1F4` for
m = 4); its compute CSV is written as PyTorch makes it (zb rejects it naming
the rank and action) and its comms CSV is not, since PyTorch's own lowering
(_validate_schedule) refuses the order.
"""
import csv
import io
import os
import sys
import tempfile

import torch
import torch.distributed.pipelining.schedules as S


class MockStage:
    """What the schedule constructors read from a _PipelineStageBase."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.submod = None
        self.stage_index_to_group_rank = None


def loss_fn(output, target):  # never called: the order needs a loss to have
    return output               # backward passes


SINGLE = ["ScheduleGPipe", "Schedule1F1B"]
INTERLEAVED = ["ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
               "ScheduleInterleavedZeroBubble"]
VSHAPE = ["ScheduleZBVZeroBubble", "ScheduleDualPipeV"]


def rows_to_csv(order):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for rank in order:
        writer.writerow(order[rank])
    return out.getvalue()


def lower_with_comms(order, p, m):
    """The compute actions of `order` lowered by _PipelineScheduleRuntime
    (PyTorch's _load_csv path for a compute-only CSV)."""
    compute = {r: [a for a in acts if a is not None and a.is_compute_op]
               for r, acts in order.items()}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "order.csv")
        with open(path, "w") as f:
            f.write(rows_to_csv(compute))
        runtime = S._PipelineScheduleRuntime(
            [MockStage(0, p, p, 0)], m, loss_fn=loss_fn)
        runtime._load_csv(path, format="compute_only")
        return runtime.pipeline_order_with_comms


def build(name, p, m):
    """(compute CSV, comms CSV or the exception PyTorch's lowering raised) of
    schedule class `name`; raises if PyTorch refuses the shape."""
    cls = getattr(S, name)
    if name in SINGLE:
        sched = cls(MockStage(0, p, p, 0), m, loss_fn=loss_fn)
        order = sched.pipeline_order
        try:
            comms = rows_to_csv(lower_with_comms(order, p, m))
        except Exception as e:  # an order PyTorch's own validation refuses
            comms = e
        return rows_to_csv(order), comms
    n = 2 * p
    second = p if name in INTERLEAVED else n - 1
    sched = cls([MockStage(0, n, p, 0), MockStage(second, n, p, 0)], m,
                loss_fn=loss_fn)
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
        sched._dump_csv(a, format="compute_only")
        sched._dump_csv(b, format="compute_comms")
        return open(a).read(), open(b).read()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "VERSION"), "w") as f:
        f.write(f"torch {torch.__version__}\n")
    for name in SINGLE + INTERLEAVED + VSHAPE:
        for p in (2, 4):
            for m in (4, 8):
                stem = f"{name}-p{p}-m{m}"
                try:
                    compute, comms = build(name, p, m)
                except Exception as e:  # PyTorch refuses the shape
                    first = str(e).strip().splitlines()[0] if str(e) else ""
                    print(f"{stem}: {type(e).__name__}: {first}",
                          file=sys.stderr)
                    continue
                for suffix, text in (("", compute), ("-comms", comms)):
                    if isinstance(text, Exception):
                        print(f"{stem}{suffix}: not written, PyTorch's "
                              f"lowering raises {type(text).__name__}: "
                              f"{str(text).strip().splitlines()[0]}",
                              file=sys.stderr)
                        continue
                    with open(os.path.join(outdir, stem + suffix + ".csv"),
                              "w") as f:
                        f.write(text)
                print(stem)


if __name__ == "__main__":
    main()
