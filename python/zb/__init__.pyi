"""Type stubs of the zb package (units: ms for times, the unit of mem_b for
memory; every C++ error is a ValueError with its message)."""
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Sequence, Union

import numpy

from matplotlib.axes import Axes

from . import _zb, export as export

Number = Union[int, float]

def schedule_names() -> list[str]: ...

class Problem:
    stages: int
    microbatches: int
    cost_f: list[float]
    cost_b: list[float]
    cost_w: list[float]
    cost_comm: list[float]
    mem_b: list[float]
    mem_w: list[float]
    memory_limit: Number | Sequence[Number] | None
    virtual_stages: int | None
    def __init__(self, stages: int, microbatches: int,
                 cost_f: Number | Sequence[Number] = ...,
                 cost_b: Number | Sequence[Number] = ...,
                 cost_w: Number | Sequence[Number] = ...,
                 cost_comm: Number | Sequence[Number] = ...,
                 mem_b: Number | Sequence[Number] | None = ...,
                 mem_w: Number | Sequence[Number] | None = ...,
                 memory_limit: Number | Sequence[Number] | None = ...,
                 virtual_stages: int | None = ...) -> None: ...

@dataclass
class IlpReport:
    status: str
    proven_optimal: bool
    objective: float
    best_bound: float
    gap: float
    analytic_bound: float
    cbc_bound: float
    seconds: float

class Schedule:
    ilp: IlpReport | None
    def __init__(self, problem: _zb.Problem, native: _zb.Schedule,
                 ilp: IlpReport | None = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def actions(self) -> list[list[tuple[str, int, int]]]: ...
    @property
    def stage_to_rank(self) -> list[int]: ...
    @property
    def stages(self) -> int: ...
    @property
    def microbatches(self) -> int: ...
    @property
    def bubble_rate(self) -> float: ...
    @property
    def cost(self) -> float: ...
    @property
    def makespan(self) -> float: ...
    @property
    def stage_span(self) -> float: ...
    @property
    def peak_memory(self) -> list[float]: ...
    @property
    def memory_limits(self) -> list[float]: ...
    @property
    def timeline(self) -> list[list[tuple[str, int, int, float, float]]]: ...
    def verify(self) -> None: ...
    def to_json(self) -> str: ...
    def to_csv(self) -> str: ...
    def to_trace(self) -> str: ...
    def to_svg(self) -> str: ...
    @classmethod
    def from_json(cls, text: str) -> Schedule: ...
    @classmethod
    def from_csv(cls, text: str, problem: Problem) -> Schedule: ...

def schedule(problem: Problem, name: str = ..., *, time_limit: float = ...,
             local_search: bool = ..., evaluations: int = ...,
             threads: int = ..., verbose: bool = ...) -> Schedule: ...
def simulate(schedule: Schedule, costs: Problem | None = ...) -> Schedule: ...

@dataclass
class Plan:
    path: str
    ranks: int
    schedule: str
    @property
    def plan(self) -> dict[str, Any]: ...

def compile(model: str, output: str, *, stages: int = ...,
            microbatches: int = ..., schedule: str = ...,
            virtual_stages: int | None = ...,
            memory_limit: Number | Sequence[Number] | None = ...,
            data_args: Sequence[str] = ...,
            target: str = ..., optimizer: str = ..., lr: float = ...,
            data: str = ..., profile: str = ..., opt_level: int = ...,
            jobs: int = ..., verbose: bool = ...,
            precision: str = ...) -> Plan: ...

@dataclass
class RunReport:
    losses: list[float]
    step_ms: list[float]
    raw: dict[str, Any]

def run(plan: Plan | str, *, ranks: int | None = ..., steps: int = ...,
        data: str | None = ..., deterministic: bool = ...,
        extra_args: Iterable[str] = ...) -> RunReport: ...

def load_params(path: str, plan: Plan | str | dict[str, Any] | None = ...
                ) -> dict[str, numpy.ndarray]:
    """The parameters of a file zb wrote, as {name: array}: a
    ``.safetensors`` file (``zb-run --save-params FILE.safetensors``, a
    checkpoint's ``model.safetensors``; read by ``safetensors.numpy`` when
    installed, else by NumPy) or any other file in params.bin's layout
    (float32 at each parameter's ``offset_bytes``) named and shaped by
    ``plan`` (a Plan, a plan directory, its plan.json or its dict; default:
    the plan.json next to the file). Names are the plan's (state_dict names
    for ONNX models exported from PyTorch), a tied parameter once.
    Raises ValueError for a malformed safetensors file, a params.bin of
    another size than the plan's, or no plan for a params.bin."""
    ...

class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

def load_into_torch(module: Any, path: str, strict: bool = ..., *,
                    plan: Plan | str | dict[str, Any] | None = ...,
                    prefix: str = ...) -> IncompatibleKeys:
    """``module.load_state_dict`` (strict=False) of ``load_params(path,
    plan)`` as torch tensors. With ``strict``, raises ValueError before
    loading when the file has a name the module's state_dict lacks or the
    module has a parameter (not a buffer) the file lacks; a parameter tied
    to another (one tensor, two names: ``lm_head.weight`` is
    ``transformer.wte.weight``) is present when either name is. Returns the
    missing and unexpected names by that rule. ``prefix`` is removed from
    the file's names that start with it (``"model."``: weights trained
    through a wrapper, loaded into the bare model). Imports torch on
    call."""
    ...

def plot(schedule: Schedule, ax: Axes | None = ...,
         title: str | None = ...) -> Axes: ...
def plot_memory(schedule: Schedule, ax: Axes | None = ...) -> Axes: ...
def plot_run(trace: str | dict[str, Any], schedule: Schedule | None = ...,
             axes: Sequence[Axes] | None = ...) -> Sequence[Axes]: ...
