"""zb: zero-bubble pipeline-parallel schedules, compiler and runtime from Python.

Schedules (the Zero Bubble paper, Qi et al., ICLR 2024, and the V-shape
family of "Pipeline Parallelism with Controllable Memory"):

    >>> import zb
    >>> p = zb.Problem(stages=4, microbatches=8, cost_f=1, cost_b=1, cost_w=1,
    ...                mem_b=1, mem_w=0.5)
    >>> s = zb.schedule(p, "zb-h2")
    >>> round(s.bubble_rate, 4)
    0.0

Units: times (``cost_*``, ``makespan``, ``start``/``end``) in ms (or any one
consistent unit); memory (``mem_*``, ``memory_limit``, ``peak_memory``) in the
unit of ``mem_b`` (bytes for compiled models). Every error of the C++ library
is raised as ``ValueError`` with its message.
"""

from __future__ import annotations

import json as _json
import os as _os
import shutil as _shutil
import subprocess as _subprocess
from dataclasses import dataclass as _dataclass, field as _field
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Sequence, Union

from . import _zb

if TYPE_CHECKING:
    import numpy

    from . import data as data
    from . import export as export

__all__ = [
    "Problem", "Schedule", "IlpReport", "Plan", "RunReport",
    "schedule", "simulate", "schedule_names", "compile", "run",
    "plot", "plot_memory", "plot_run", "load_params", "load_into_torch",
    "IncompatibleKeys", "Metrics", "read_metrics", "plot_metrics",
]

Number = Union[int, float]


def _as_list(name: str, value) -> list[float]:
    """A scalar or a sequence of numbers as a list of floats."""
    if value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a list of numbers, "
                         f"got {value!r}") from None


def schedule_names() -> list[str]:
    """Names ``schedule()`` accepts: gpipe, 1f1b, 1f1b-i, zb-h1, zb-h2,
    zb-auto, zb-1p, zb-2p, ilp, zb-v, v-half, v-min, v-auto, dualpipev,
    dualpipe."""
    return list(_zb.schedule_names())


class Problem:
    """A scheduling problem.

    Args:
        stages: p, the pipeline ranks (>= 1).
        microbatches: m, microbatches per iteration (>= 1).
        cost_f, cost_b, cost_w: T_F, T_B, T_W in ms: one number for every
            rank, or one per rank (or per global stage, p*V values).
        cost_comm: T_comm in ms, the latency of one message between ranks.
        mem_b, mem_w: M_B (kept by F until B) and M_W (kept by B until W),
            in any memory unit (None: no memory model).
        memory_limit: activation memory limit per rank in that unit: one
            number for every rank, or a list with one per rank; 0 or None =
            unlimited.
        virtual_stages: V, chunks per rank (None: the schedule's default,
            2 for 1f1b-i and the V-shape schedules, else 1).
        fb_overlap: alpha in [0, 1] for the overlapped F&B pairs of
            dualpipe and dualpipev (``Schedule.fb_pairs``): a pair takes
            max(T_F, T_B) + (1 - alpha) min(T_F, T_B) ms (zb-sched
            --fb-overlap); 0: its passes one after the other.
    """

    def __init__(self, stages: int, microbatches: int, cost_f: Number |
                 Sequence[Number] = 1.0, cost_b: Number | Sequence[Number] =
                 1.0, cost_w: Number | Sequence[Number] = 1.0,
                 cost_comm: Number | Sequence[Number] = 0.0,
                 mem_b: Number | Sequence[Number] | None = None,
                 mem_w: Number | Sequence[Number] | None = None,
                 memory_limit: Number | Sequence[Number] | None = None,
                 virtual_stages: int | None = None,
                 fb_overlap: float = 0.0) -> None:
        if not isinstance(stages, int) or not isinstance(microbatches, int):
            raise ValueError("stages and microbatches must be integers")
        self.stages = stages
        self.microbatches = microbatches
        self.cost_f = _as_list("cost_f", cost_f)
        self.cost_b = _as_list("cost_b", cost_b)
        self.cost_w = _as_list("cost_w", cost_w)
        self.cost_comm = _as_list("cost_comm", cost_comm)
        self.mem_b = _as_list("mem_b", mem_b)
        self.mem_w = _as_list("mem_w", mem_w)
        self.memory_limit = memory_limit
        self.virtual_stages = virtual_stages
        self.fb_overlap = float(fb_overlap)

    def _native(self, chunks: int) -> _zb.Problem:
        p = _zb.Problem()
        p.stages = self.stages
        p.microbatches = self.microbatches
        p.virtual_stages = chunks
        p.cost_f, p.cost_b, p.cost_w = self.cost_f, self.cost_b, self.cost_w
        p.cost_comm = self.cost_comm
        p.mem_b, p.mem_w = self.mem_b, self.mem_w
        p.fb_overlap = self.fb_overlap
        limit = self.memory_limit
        if limit is None:
            pass
        elif isinstance(limit, (int, float)):
            p.memory_limit = float(limit)
        else:
            p.memory_limits = _as_list("memory_limit", limit)
        p.validate()
        return p

    def __repr__(self) -> str:
        return (f"Problem(stages={self.stages}, microbatches="
                f"{self.microbatches}, cost_f={self.cost_f}, cost_b="
                f"{self.cost_b}, cost_w={self.cost_w}, cost_comm="
                f"{self.cost_comm}, mem_b={self.mem_b}, mem_w={self.mem_w}, "
                f"memory_limit={self.memory_limit}, virtual_stages="
                f"{self.virtual_stages}"
                + (f", fb_overlap={self.fb_overlap}" if self.fb_overlap
                   else "") + ")")


@_dataclass
class IlpReport:
    """CBC's report for ``schedule(problem, "ilp")``: status ("optimal",
    "time limit (feasible)", ...), objective and bounds in ms, gap as a
    fraction, solve time in s."""
    status: str
    proven_optimal: bool
    objective: float
    best_bound: float
    gap: float
    analytic_bound: float
    cbc_bound: float
    seconds: float


class Schedule:
    """Per-rank orders of F/B/W passes with their simulated timing.

    ``actions[r]`` is rank r's run order as (kind, stage, microbatch) with
    kind 'F', 'B' (input gradient) or 'W' (weight gradient).
    """

    def __init__(self, problem: _zb.Problem, native: _zb.Schedule,
                 ilp: IlpReport | None = None) -> None:
        self._problem = problem
        self._native = native
        self.ilp = ilp
        self._sim = _zb.simulate(problem, native)

    # -- contents ---------------------------------------------------------
    @property
    def name(self) -> str:
        return self._native.name

    @property
    def actions(self) -> list[list[tuple[str, int, int]]]:
        return self._native.actions

    @property
    def stage_to_rank(self) -> list[int]:
        return self._native.stage_to_rank

    @property
    def directions(self) -> int:
        """1, or 2 for DualPipe: stages 0..L-1 carry microbatches
        0..m/2-1 down the ranks, stages L..2L-1 (the same model stages on
        the mirrored ranks) the rest up; L = len(stage_to_rank) / 2."""
        return self._native.directions

    @property
    def fb_pairs(self) -> list[list[int]]:
        """Per rank: the indices i of overlapped F&B pairs, actions i (an F)
        and i+1 (a B of another microbatch) issued together (dualpipe,
        dualpipev, PyTorch's OVERLAP_F_B); empty when there are none."""
        return [list(r) for r in self._native.fb_pairs]

    @property
    def stages(self) -> int:
        return self._problem.stages

    @property
    def microbatches(self) -> int:
        return self._problem.microbatches

    # -- simulated timing -------------------------------------------------
    @property
    def bubble_rate(self) -> float:
        """(cost - ideal) / cost, the paper's bubble rate (Section 5.3)."""
        return self._sim.bubble_rate

    @property
    def cost(self) -> float:
        """The schedule's cost in ms in the paper's convention for it."""
        return self._sim.cost

    @property
    def makespan(self) -> float:
        """End of the last pass, ms from t = 0."""
        return self._sim.makespan

    @property
    def stage_span(self) -> float:
        """Largest span over ranks from its first pass to its last, ms."""
        return self._sim.stage_span

    @property
    def peak_memory(self) -> list[float]:
        """Peak activation memory per rank (unit of mem_b)."""
        return list(self._sim.peak_memory)

    @property
    def memory_limits(self) -> list[float]:
        """The problem's limit per rank (0 = none)."""
        p = self._problem
        if p.memory_limits:
            return list(p.memory_limits)
        return [p.memory_limit] * p.stages

    @property
    def timeline(self) -> list[list[tuple[str, int, int, float, float]]]:
        """Per rank: (kind, stage, microbatch, start ms, end ms)."""
        return self._sim.timeline

    def verify(self) -> None:
        """Raises ValueError naming the first violated rule (counts,
        dependencies, deadlock, memory limit)."""
        _zb.verify(self._problem, self._native)

    # -- formats ----------------------------------------------------------
    def to_json(self) -> str:
        """The zb-schedule JSON (docs/schedule-json.md)."""
        return _zb.to_json(self._problem, self._native)

    def to_csv(self) -> str:
        """torch.distributed.pipelining compute-only CSV: one row per rank,
        cells like 0F3 (stage 0, forward, microbatch 3), I = B, W."""
        return _zb.to_csv(self._native)

    def to_trace(self) -> str:
        """Chrome / Perfetto trace JSON (times in us)."""
        return _zb.to_trace(self._problem, self._native)

    def to_svg(self) -> str:
        """SVG Gantt chart in the style of the paper's figures."""
        return _zb.to_svg(self._problem, self._native)

    def __str__(self) -> str:
        return _zb.to_text(self._problem, self._native)

    def __repr__(self) -> str:
        return (f"<zb.Schedule {self.name!r}: p={self.stages} "
                f"m={self.microbatches} bubble_rate={self.bubble_rate:.4f}>")

    @classmethod
    def from_json(cls, text: str) -> "Schedule":
        """Reads a zb-schedule JSON document (problem and orders); the
        timing is simulated again. Not verified: call verify()."""
        problem, native = _zb.from_json(text)
        return cls(problem, native)

    @classmethod
    def from_csv(cls, text: str, problem: Problem) -> "Schedule":
        """Reads a torch.distributed.pipelining CSV for ``problem`` (its
        costs time the passes). Not verified: call verify()."""
        native = _zb.from_csv(text, problem.stages)
        chunks = max(1, len(native.stage_to_rank) // max(1, problem.stages))
        return cls(problem._native(chunks), native)


def schedule(problem: Problem, name: str = "zb-auto", *,
             time_limit: float = 60.0, local_search: bool = False,
             evaluations: int = 4000, threads: int = 1,
             verbose: bool = False) -> Schedule:
    """Builds and verifies the named schedule (see schedule_names()).

    Args:
        time_limit: ILP only, seconds for the whole call.
        local_search: widen the search beyond the paper (zb-1p/2p/auto and
            the V-shape family): local search on the order, at most
            ``evaluations`` simulations.
        threads: CBC threads (ILP).
        verbose: CBC's log on stderr (ILP).
    Raises:
        ValueError: bad problem or parameters, infeasible memory limit; the
            message names the minimum that would work.
    """
    chunks = problem.virtual_stages or _zb.default_chunks(name)
    native_problem = problem._native(chunks)
    native, report = _zb.build_schedule(native_problem, name, time_limit,
                                        local_search, evaluations, threads,
                                        verbose)
    ilp = None
    if report is not None:
        ilp = IlpReport(report.status, report.proven_optimal,
                        report.objective, report.best_bound, report.gap,
                        report.analytic_bound, report.cbc_bound,
                        report.seconds)
    return Schedule(native_problem, native, ilp)


def simulate(schedule: Schedule, costs: Problem | None = None) -> Schedule:
    """The same orders timed again, with ``costs`` (a Problem with the same
    stages and microbatches) instead of the schedule's own."""
    if costs is None:
        return Schedule(schedule._problem, schedule._native, schedule.ilp)
    if (costs.stages != schedule.stages or
            costs.microbatches != schedule.microbatches):
        raise ValueError("simulate: costs must have the schedule's stages "
                         f"({schedule.stages}) and microbatches "
                         f"({schedule.microbatches})")
    chunks = len(schedule.stage_to_rank) // schedule.stages
    return Schedule(costs._native(chunks), schedule._native, schedule.ilp)


# -- the compiler and the runtime ------------------------------------------

@_dataclass
class Plan:
    """A compiled plan directory (plan.json, params.bin, rank<R>.so, ...)."""
    path: str
    ranks: int
    schedule: str

    @property
    def plan(self) -> dict[str, Any]:
        with open(_os.path.join(self.path, "plan.json")) as f:
            return _json.load(f)


def compile(model: str, output: str, *, stages: int = 2,
            microbatches: int = 8, schedule: str = "zb-h1",
            virtual_stages: int | None = None,
            memory_limit: Number | Sequence[Number] | None = None,
            data_args: Sequence[str] = (),
            target: str = "cpu", optimizer: str = "sgd", lr: float = 0.05,
            data: str = "", profile: str = "", opt_level: int = 1,
            jobs: int = 0, verbose: bool = False,
            precision: str = "fp32", data_parallel: int = 1,
            dp_bucket_bytes: int = 4 << 20,
            fuse_attention: bool = True,
            fuse_cross_entropy: bool = True,
            gpu_attention_kernel: bool = True,
            gpu_norm_kernel: bool = True,
            gpu_attention_token_major: bool = True) -> Plan:
    """Compiles a model (.onnx, JAX StableHLO text, or zb .mlir) as
    zb-compile does, into ``output``.

    Args:
        memory_limit: activation memory limit in bytes, one number or one
            per rank.
        data_args: StableHLO models: arguments that are batch inputs, not
            parameters (names or prefixes ending in '.'; integer arguments
            are always data).
        target: "cpu", "cuda" (GPU kernels), "cuda-emu" (the GPU kernels
            emulated on the CPU, to check them) or "h100" (CPU code, H100
            costs).
        precision: "fp32", or "bf16": torch.autocast's bfloat16 policy
            (bfloat16 matmuls with float32 accumulation and activations,
            float32 master weights, gradients and optimizer;
            docs/precision.md).
        data_parallel: D copies of the pipeline, each on ``microbatches``
            of the step's D x microbatches, gradients all-reduced across
            them (zb.run then needs ranks = D x stages; docs/training.md,
            "Data parallelism").
        dp_bucket_bytes: the least gradient bytes of one all-reduce bucket
            that a stage's last W announces as soon as it is computed (the
            Zero Bubble paper's Appendix A; 0: one bucket per independent
            group of gradients; default 4 MiB).
        fuse_attention: each attention of the model as one zb.attention
            whose backward pass recomputes the probabilities from the saved
            log-sum-exp instead of keeping them (zb-compile
            --fuse-attention; default on).
        fuse_cross_entropy: each cross-entropy keeps its log-sum-exp (one
            float per token) and reads the logits in the precision they
            were computed in: its backward pass is one elementwise pass
            without the probabilities, and a bfloat16 model keeps bfloat16
            logits between F and B (zb-compile --fuse-cross-entropy;
            default on).
        gpu_attention_kernel: with target "cuda"/"cuda-emu", each bfloat16
            attention (head dims multiples of 16 up to 128, masked or not)
            as fused FlashAttention-2 kernels on tensor cores (zb-compile
            --gpu-attention-kernel; default on; off: decomposed into GEMMs
            and softmax kernels).
        gpu_norm_kernel: with target "cuda"/"cuda-emu", each float32 layer
            norm and RMS norm as one kernel, a warp per row (zb-compile
            --gpu-norm-kernel; default on; off: five kernels).
        gpu_attention_token_major: with the attention kernels, q, k and v
            read and the result and its gradients written in place in the
            [B T, H D] projections the model's head transposes are views
            of (zb-compile --gpu-attention-token-major; default on; off:
            each transpose a copy kernel).
    Raises:
        ValueError: with zb-compile's diagnostics (file, op, node).
    """
    _zb.compile(_os.fspath(model), _os.fspath(output), stages,
                virtual_stages or 0, microbatches, schedule,
                _as_list("memory_limit", memory_limit),
                [str(d) for d in data_args], target, optimizer,
                lr, data, profile, opt_level, jobs, verbose, precision,
                data_parallel, dp_bucket_bytes, fuse_attention,
                fuse_cross_entropy, gpu_attention_kernel, gpu_norm_kernel,
                gpu_attention_token_major)
    with open(_os.path.join(output, "plan.json")) as f:
        plan = _json.load(f)
        ranks = plan["num_ranks"] * plan.get("data_parallel", 1)
    return Plan(_os.fspath(output), ranks, schedule)


@_dataclass
class RunReport:
    """What zb-run reported: per-step losses, step times (ms), predicted and
    realized bubble rates (see docs/plan-json.md), the raw JSON."""
    losses: list[float]
    step_ms: list[float]
    raw: dict[str, Any] = _field(repr=False)


def _tool(name: str) -> str:
    env = _os.environ.get("ZB_TOOLS_BIN_DIR")
    candidates = [env] if env else []
    try:
        from . import _config
        candidates.append(_config.TOOLS_BIN_DIR)
    except ImportError:
        pass
    candidates.append(_os.path.join(_os.path.dirname(__file__), "bin"))
    for d in candidates:
        path = _os.path.join(d, name)
        if d and _os.access(path, _os.X_OK):
            return path
    found = _shutil.which(name)
    if found:
        return found
    raise ValueError(f"{name} not found (set ZB_TOOLS_BIN_DIR to the "
                     "directory of the zb tools)")


def run(plan: Plan | str, *, ranks: int | None = None, steps: int = 10,
        data: str | None = None, deterministic: bool = False,
        extra_args: Iterable[str] = ()) -> RunReport:
    """Trains with the plan's rank programs on MPI ranks (zb-run) and
    returns the losses and the bubble report.

    Raises:
        ValueError: with zb-run's one-line error.
    """
    path = plan.path if isinstance(plan, Plan) else _os.fspath(plan)
    if ranks is None:
        with open(_os.path.join(path, "plan.json")) as f:
            p = _json.load(f)
            ranks = p["num_ranks"] * p.get("data_parallel", 1)
    cmd = [_tool("zb-run"), path, "--ranks", str(ranks), "--steps",
           str(steps), "--report-format", "json"]
    if data:
        cmd += ["--data", _os.fspath(data)]
    if deterministic:
        cmd.append("--deterministic")
    cmd += list(extra_args)
    env = dict(_os.environ)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = _subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise ValueError(msg[-1] if msg else f"zb-run exited with "
                         f"{proc.returncode}")
    report = _json.loads(proc.stdout)
    if "loss" in report:  # --report-gradients: one evaluated batch
        return RunReport([report["loss"]], [], report)
    steps_json = report.get("steps", [])
    return RunReport([s["loss"] for s in steps_json],
                     [s.get("time_ms", 0.0) for s in steps_json], report)


# -- trained parameters back (safetensors, params.bin) ---------------------

# safetensors dtype -> NumPy dtype (little-endian), for the NumPy reader.
_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
              "I32": "<i4", "I16": "<i2", "I8": "i1", "U64": "<u8",
              "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}


def _load_safetensors_numpy(path: str) -> dict:
    """A safetensors file read with NumPy alone (the format of
    https://huggingface.co/docs/safetensors: u64 little-endian header length
    N, N bytes of JSON, the tensors' bytes with data_offsets relative to the
    end of the header, contiguous). Raises ValueError naming the file and
    what is wrong."""
    import numpy as np
    with open(path, "rb") as f:
        data = bytearray(f.read())

    def bad(why: str):
        return ValueError(f"{path}: not a safetensors file: {why}")

    if len(data) < 8:
        raise bad(f"{len(data)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise bad(f"header length {n} exceeds the {len(data) - 8} bytes "
                  "after it")
    try:
        header = _json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise bad(f"header is not UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad("header is not a JSON object")
    header.pop("__metadata__", None)
    body = len(data) - 8 - n
    spans = []
    for name, t in header.items():
        if (not isinstance(t, dict) or
                not isinstance(t.get("shape"), list) or
                not all(isinstance(d, int) and d >= 0 for d in t["shape"]) or
                not isinstance(t.get("data_offsets"), list) or
                len(t["data_offsets"]) != 2 or
                not all(isinstance(o, int) for o in t["data_offsets"])):
            raise bad(f"tensor '{name}': needs \"dtype\", \"shape\" (list of "
                      "sizes) and \"data_offsets\" ([begin, end])")
        if t.get("dtype") not in _ST_DTYPES:
            raise bad(f"tensor '{name}': dtype {t.get('dtype')!r} is not one "
                      f"of {', '.join(_ST_DTYPES)}")
        begin, end = t["data_offsets"]
        dtype = np.dtype(_ST_DTYPES[t["dtype"]])
        count = int(np.prod(t["shape"], dtype=np.int64))
        if end - begin != count * dtype.itemsize:
            raise bad(f"tensor '{name}': data_offsets [{begin}, {end}] hold "
                      f"{end - begin} bytes, shape {t['shape']} of "
                      f"{t['dtype']} needs {count * dtype.itemsize}")
        spans.append((begin, end, name, dtype, count, t["shape"]))
    spans.sort(key=lambda s: (s[0], s[1]))
    at = 0
    for begin, end, name, *_ in spans:
        if begin != at:
            raise bad(f"tensor '{name}' starts at byte {begin} of the data, "
                      f"expected {at} (a hole or an overlap)")
        at = end
    if at != body:
        raise bad(f"the tensors end at byte {at} of the data, the file has "
                  f"{body}")
    out = {}
    for begin, _end, name, dtype, count, shape in spans:
        out[name] = np.frombuffer(data, dtype, count,
                                  8 + n + begin).reshape(shape)
    return out


def _plan_json(plan) -> dict:
    """plan.json's contents from a Plan, a plan directory, a plan.json path
    or the dict itself."""
    if isinstance(plan, dict):
        return plan
    p = plan.path if isinstance(plan, Plan) else _os.fspath(plan)
    if _os.path.isdir(p):
        p = _os.path.join(p, "plan.json")
    with open(p) as f:
        return _json.load(f)


def _load_params_bin(path: str, plan) -> dict:
    import numpy as np
    if plan is None:
        plan = _os.path.join(_os.path.dirname(_os.path.abspath(path)),
                             "plan.json")
        if not _os.path.exists(plan):
            raise ValueError(
                f"{path}: a params.bin-layout file holds no names: pass "
                "plan= (a zb.Plan, a plan directory or its plan.json); no "
                "plan.json next to the file")
    params = _plan_json(plan).get("params", [])
    size = _os.path.getsize(path)
    end = max((p["offset_bytes"] + 4 * int(np.prod(p["shape"], dtype=np.int64))
               for p in params), default=0)
    if size != end:
        raise ValueError(f"{path}: {size} bytes, but plan.json's parameters "
                         f"end at byte {end} (a file of another model?)")
    data = np.fromfile(path, dtype="<f4")
    out = {}
    for p in params:
        first = p["offset_bytes"] // 4
        count = int(np.prod(p["shape"], dtype=np.int64))
        out[p["name"]] = data[first:first + count].reshape(p["shape"])
    return out


def load_params(path: str, plan: Plan | str | dict[str, Any] | None = None
                ) -> dict[str, numpy.ndarray]:
    """The parameters of a file zb wrote, as {name: numpy.ndarray}.

    ``path`` ending in ``.safetensors`` (``zb-run --save-params
    FILE.safetensors``, a checkpoint's ``model.safetensors``) is read with
    ``safetensors.numpy.load_file`` when the ``safetensors`` package is
    importable, else by a NumPy reader of the format; names are the plan's
    (the model's state_dict names for ONNX exported from PyTorch), a tied
    parameter once. Any other file is read in params.bin's layout (float32
    little-endian at each parameter's ``offset_bytes``, docs/plan-json.md:
    zb-compile's params.bin, ``zb-run --save-params FILE``, a checkpoint's
    params.bin / adam_m.bin / adam_v.bin) with the names and shapes of
    ``plan`` (a zb.Plan, a plan directory, its plan.json or its parsed
    dict; default: the plan.json next to the file). The arrays are
    writable.

    Raises:
        ValueError: a malformed safetensors file (naming what is wrong), a
            params.bin whose size is not the plan's, no plan for a
            params.bin.
        OSError: the file cannot be read.
    """
    path = _os.fspath(path)
    if not path.endswith(".safetensors"):
        return _load_params_bin(path, plan)
    try:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file
    except ImportError:
        return _load_safetensors_numpy(path)
    try:
        out = load_file(path)
    except SafetensorError as e:
        raise ValueError(f"{path}: not a safetensors file: {e}") from None
    for name, value in out.items():
        if not value.flags.writeable:
            out[name] = value.copy()
    return out


class IncompatibleKeys(NamedTuple):
    """What ``load_into_torch`` did not match (fields as torch's
    ``load_state_dict`` result)."""
    missing_keys: list[str]
    unexpected_keys: list[str]


def _named_parameters_with_ties(module) -> list:
    """(name, parameter) of every parameter name of a torch module, tied
    names included (named_parameters drops them by default)."""
    try:
        return list(module.named_parameters(remove_duplicate=False))
    except TypeError:  # torch < 2.0
        return [(f"{prefix}.{name}" if prefix else name, p)
                for prefix, sub in module.named_modules(remove_duplicate=False)
                for name, p in sub._parameters.items() if p is not None]


def _name_list(names: list[str], limit: int = 10) -> str:
    more = f" ... and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def load_into_torch(module: Any, path: str, strict: bool = True, *,
                    plan: Plan | str | dict[str, Any] | None = None,
                    prefix: str = "") -> IncompatibleKeys:
    """Loads a file of trained parameters (``load_params``: safetensors or
    params.bin with ``plan``) into a torch.nn.Module by
    ``module.load_state_dict(..., strict=False)``; values are converted to
    the module's dtypes and devices by the copy.

    With ``strict``, first checks the names (and raises before loading
    anything): every name of the file must be in the module's state_dict,
    and every parameter of the module (not buffers) must be in the file,
    where a parameter tied to another (the same tensor under two names,
    e.g. ``lm_head.weight`` is ``transformer.wte.weight``) counts as present
    when one of its names is.

    ``prefix``: removed from the start of the file's names that have it, e.g.
    ``prefix="model."`` loads what zb trained through a wrapper module
    (``self.model = hf_model``, the graph that returns the loss) into the
    bare transformers model.

    Returns:
        IncompatibleKeys(missing_keys, unexpected_keys), by the rule above.
    Raises:
        ValueError: with ``strict``, naming the file's parameters the module
            lacks and the module's parameters the file lacks; or from
            ``load_params``. torch's RuntimeError for a shape that differs.
    """
    import torch
    params = load_params(path, plan)
    if prefix:
        params = {k[len(prefix):] if k.startswith(prefix) else k: v
                  for k, v in params.items()}
    state_keys = set(module.state_dict().keys())
    unexpected = sorted(k for k in params if k not in state_keys)
    tied: dict[int, list[str]] = {}
    for name, p in _named_parameters_with_ties(module):
        tied.setdefault(id(p), []).append(name)
    missing = sorted(n for names in tied.values()
                     if not any(n in params for n in names) for n in names)
    if strict and (missing or unexpected):
        parts = []
        if unexpected:
            parts.append(f"the module has no parameter named "
                         f"{_name_list(unexpected)} ({len(unexpected)} of the "
                         "file's)")
        if missing:
            parts.append(f"the file lacks the module's parameters "
                         f"{_name_list(missing)} ({len(missing)})")
        raise ValueError(f"load_into_torch: {_os.fspath(path)}: "
                         + "; ".join(parts))
    module.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()},
                           strict=False)
    return IncompatibleKeys(missing, unexpected)


from ._plot import plot, plot_memory, plot_run  # noqa: E402
from ._metrics import Metrics, plot_metrics, read_metrics  # noqa: E402


def __getattr__(name):
    # zb.export and zb.data on first use (so that `python3 -m zb.export`
    # runs it once).
    if name in ("export", "data"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'zb' has no attribute {name!r}")
