from collections.abc import Sequence


class IlpReport:
    """CBC's report for the ILP"""

    @property
    def status(self) -> str: ...

    @property
    def proven_optimal(self) -> bool: ...

    @property
    def objective(self) -> float: ...

    @property
    def best_bound(self) -> float: ...

    @property
    def gap(self) -> float: ...

    @property
    def analytic_bound(self) -> float: ...

    @property
    def cbc_bound(self) -> float: ...

    @property
    def seconds(self) -> float: ...

class Problem:
    """
    A scheduling problem: p ranks, m microbatches, V chunks per rank; per-rank (or per-stage) T_F, T_B, T_W, T_comm in ms and M_B, M_W in the memory unit
    """

    def __init__(self) -> None: ...

    @property
    def stages(self) -> int:
        """p: pipeline ranks"""

    @stages.setter
    def stages(self, arg: int, /) -> None: ...

    @property
    def microbatches(self) -> int:
        """m"""

    @microbatches.setter
    def microbatches(self, arg: int, /) -> None: ...

    @property
    def virtual_stages(self) -> int:
        """V: chunks per rank"""

    @virtual_stages.setter
    def virtual_stages(self, arg: int, /) -> None: ...

    @property
    def cost_f(self) -> list[float]:
        """T_F per rank or stage, ms"""

    @cost_f.setter
    def cost_f(self, arg: Sequence[float], /) -> None: ...

    @property
    def cost_b(self) -> list[float]:
        """T_B per rank or stage, ms"""

    @cost_b.setter
    def cost_b(self, arg: Sequence[float], /) -> None: ...

    @property
    def cost_w(self) -> list[float]:
        """T_W per rank or stage, ms"""

    @cost_w.setter
    def cost_w(self, arg: Sequence[float], /) -> None: ...

    @property
    def cost_comm(self) -> list[float]:
        """T_comm, ms"""

    @cost_comm.setter
    def cost_comm(self, arg: Sequence[float], /) -> None: ...

    @property
    def mem_b(self) -> list[float]:
        """M_B (memory unit)"""

    @mem_b.setter
    def mem_b(self, arg: Sequence[float], /) -> None: ...

    @property
    def mem_w(self) -> list[float]:
        """M_W (memory unit)"""

    @mem_w.setter
    def mem_w(self, arg: Sequence[float], /) -> None: ...

    @property
    def memory_limit(self) -> float:
        """limit for every rank (0 = none)"""

    @memory_limit.setter
    def memory_limit(self, arg: float, /) -> None: ...

    @property
    def memory_limits(self) -> list[float]:
        """per-rank limits (empty: memory_limit)"""

    @memory_limits.setter
    def memory_limits(self, arg: Sequence[float], /) -> None: ...

    @property
    def fb_overlap(self) -> float:
        """alpha in [0, 1]: an overlapped F&B pair (Schedule.fb_pairs) takes max(T_F, T_B) + (1 - alpha) min(T_F, T_B) ms"""

    @fb_overlap.setter
    def fb_overlap(self, arg: float, /) -> None: ...

    def validate(self) -> None: ...

class Schedule:
    """Per-rank orders of F/B/W passes"""

    def __init__(self) -> None: ...

    @property
    def name(self) -> str: ...

    @name.setter
    def name(self, arg: str, /) -> None: ...

    @property
    def stage_to_rank(self) -> list[int]: ...

    @stage_to_rank.setter
    def stage_to_rank(self, arg: Sequence[int], /) -> None: ...

    @property
    def fused_backward(self) -> bool: ...

    @fused_backward.setter
    def fused_backward(self, arg: bool, /) -> None: ...

    @property
    def fb_pairs(self) -> list[list[int]]:
        """per rank: indices i of overlapped F&B pairs (actions i, an F, and i+1, a B of another microbatch, issued together: dualpipe, dualpipev, PyTorch's OVERLAP_F_B); empty: none"""

    @fb_pairs.setter
    def fb_pairs(self, arg: Sequence[Sequence[int]], /) -> None: ...

    @property
    def cost_convention(self) -> str: ...

    @cost_convention.setter
    def cost_convention(self, arg: str, /) -> None: ...

    @property
    def actions(self) -> list[list[tuple[str, int, int]]]:
        """per rank: (kind 'F'|'B'|'W', stage, microbatch) in run order"""

    @actions.setter
    def actions(self, arg: Sequence[Sequence[tuple[str, int, int]]], /) -> None: ...

class SimResult:
    """Simulated timing (ms)"""

    @property
    def makespan(self) -> float: ...

    @property
    def stage_span(self) -> float: ...

    @property
    def cost(self) -> float: ...

    @property
    def ideal_time(self) -> float: ...

    @property
    def bubble_rate(self) -> float: ...

    @property
    def peak_memory(self) -> list[float]: ...

    @property
    def rank_bubble_rate(self) -> list[float]: ...

    @property
    def complete(self) -> bool: ...

    @property
    def timeline(self) -> list[list[tuple[str, int, int, float, float]]]:
        """per rank: (kind, stage, microbatch, start ms, end ms)"""

def build_schedule(problem: Problem, name: str, time_limit: float = 60.0, local_search: bool = False, evaluations: int = 4000, threads: int = 1, verbose: bool = False) -> tuple[Schedule, IlpReport | None]: ...

def compile(model: str, output: str, stages: int, virtual_stages: int, microbatches: int, schedule: str, memory_limits: Sequence[float], data_args: Sequence[str], target: str, optimizer: str, lr: float, data: str, profile: str, opt_level: int, jobs: int, verbose: bool, precision: str = 'fp32', data_parallel: int = 1, dp_bucket_bytes: int = 4194304, fuse_attention: bool = True, fuse_cross_entropy: bool = True, gpu_attention_kernel: bool = True, gpu_norm_kernel: bool = True, gpu_attention_token_major: bool = True) -> None: ...

def default_chunks(arg: str, /) -> int: ...

def from_csv(text: str, ranks: int = 0) -> Schedule: ...

def from_json(arg: str, /) -> tuple[Problem, Schedule]: ...

def schedule_names() -> list[str]: ...

def simulate(arg0: Problem, arg1: Schedule, /) -> SimResult: ...

def to_csv(arg: Schedule, /) -> str: ...

def to_json(arg0: Problem, arg1: Schedule, /) -> str: ...

def to_svg(arg0: Problem, arg1: Schedule, /) -> str: ...

def to_text(arg0: Problem, arg1: Schedule, /) -> str: ...

def to_trace(arg0: Problem, arg1: Schedule, /) -> str: ...

def verify(arg0: Problem, arg1: Schedule, /) -> None: ...
