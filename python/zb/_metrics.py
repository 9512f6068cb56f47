"""The metrics file of ``zb-run --metrics FILE.jsonl``: reading and plotting.

The file is JSON lines, one object per line, written by rank 0 and flushed
after each line:

    {"step": 3, "loss": 4.61, "lr": 0.0006, "grad_norm": 1.2,
     "tokens_per_s": 51200.0, "time_ms": 80.0, "skipped": false}
    {"step": 100, "val_loss": 3.9, "val_batches": 20}

a training step (step 1-based; null where a value is not finite or not
known) or an evaluation. Unknown keys are ignored, as are lines with neither
"loss" nor "val_loss". A resumed run appends to the same file, so a step can
appear twice: the later line wins.

read_metrics(path):          the file as a Metrics (lists sorted by step).
plot_metrics(path_or_metrics): training and validation loss against the step,
                             the learning rate on a twin axis (matplotlib,
                             imported on first use).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# The per-step fields of a training line besides "step" and "skipped".
_TRAIN_FIELDS = ("loss", "lr", "grad_norm", "tokens_per_s", "time_ms")


@dataclass
class Metrics:
    """A metrics file's contents, one list entry per step (sorted by step;
    None where the file has null or lacks the value).

    step: training steps (1-based); loss: the mean training loss of each;
    lr: the learning rate the optimizer used; grad_norm: the global L2 norm
    of the gradients (before clipping); tokens_per_s: throughput; time_ms:
    the step's wall time in ms; skipped: True where the step's update was
    skipped (a non-finite loss or gradient). val_step, val_loss: the
    evaluations, the step after which each ran and its mean loss.
    """
    step: list[int] = field(default_factory=list)
    loss: list[Optional[float]] = field(default_factory=list)
    lr: list[Optional[float]] = field(default_factory=list)
    grad_norm: list[Optional[float]] = field(default_factory=list)
    tokens_per_s: list[Optional[float]] = field(default_factory=list)
    time_ms: list[Optional[float]] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)
    val_loss: list[Optional[float]] = field(default_factory=list)


def _number(where: str, obj: dict, key: str) -> Optional[float]:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: \"{key}\" must be a number or null, got "
                         f"{value!r}")
    return float(value)


def _after_truncated(line: str) -> Optional[dict]:
    """The object a resumed run appended to a truncated last line (the two
    on one line: ``{"loss": 4.1, "st{"loss": 4.0, ...}``), or None."""
    at = line.find("{", 1)
    while at > 0:
        try:
            obj = json.loads(line[at:])
            if isinstance(obj, dict):
                return obj
        except ValueError:
            pass
        at = line.find("{", at + 1)
    return None


def read_metrics(path: Union[str, os.PathLike]) -> Metrics:
    """Reads a metrics file of ``zb-run --metrics`` (the module docstring
    gives its lines) into a Metrics, sorted by step; where a step appears
    more than once (a resumed run appends), its last line wins.

    A last line that is not valid JSON and has no newline after it (a run
    killed while writing it) is skipped with a ``warnings.warn``; so is such
    a line's start where a resumed run appended its first line to it.

    Raises:
        ValueError: naming the file and the line (1-based): a line that is
            not valid JSON (other than such a last line), not a JSON
            object, without an integer "step", or with a value that is not
            a number or null.
        OSError: the file cannot be read.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    train: dict[int, dict] = {}
    val: dict[int, Optional[float]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except ValueError as e:
            if number == len(lines) and not line.endswith("\n"):
                warnings.warn(f"{where}: skipped a truncated last line "
                              f"({e})", stacklevel=2)
                continue
            obj = _after_truncated(line)
            if obj is None:
                raise ValueError(f"{where}: not valid JSON: {e}") from None
            warnings.warn(f"{where}: skipped a truncated line's start (a "
                          "resumed run appended after it)", stacklevel=2)
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: not a JSON object")
        if "loss" not in obj and "val_loss" not in obj:
            continue
        step = obj.get("step")
        if isinstance(step, bool) or not isinstance(step, int):
            raise ValueError(f"{where}: \"step\" must be an integer, got "
                             f"{step!r}")
        if "loss" in obj:
            record = {k: _number(where, obj, k) for k in _TRAIN_FIELDS}
            record["skipped"] = bool(obj.get("skipped", False))
            train[step] = record  # the later line wins
        if "val_loss" in obj:
            val[step] = _number(where, obj, "val_loss")  # likewise
    m = Metrics()
    for step in sorted(train):
        m.step.append(step)
        for key in _TRAIN_FIELDS + ("skipped",):
            getattr(m, key).append(train[step][key])
    for step in sorted(val):
        m.val_step.append(step)
        m.val_loss.append(val[step])
    return m


def _nan(values: list) -> list[float]:
    return [math.nan if v is None else v for v in values]


def plot_metrics(metrics: Union[str, os.PathLike, Metrics],
                 ax: Optional[Axes] = None, *, logy: bool = False,
                 save: Union[str, os.PathLike, None] = None,
                 title: Optional[str] = None) -> tuple[Axes, Axes]:
    """Training loss (line) and validation loss (dots) against the step on
    ``ax`` (default: a new figure), the learning rate on a twin axis at the
    right (dashed); steps whose update was skipped are marked with a red x
    at their loss. Null values leave gaps.

    Args:
        metrics: a Metrics or the path of a metrics file (read_metrics).
        ax: the Axes of the losses; the learning rate goes on ax.twinx().
        logy: a logarithmic loss axis.
        save: a path: the figure is also written there (PNG, or the format
            its suffix names).
        title: the axes' title (default: the file's name, or none).
    Returns:
        (loss_ax, lr_ax).
    Raises:
        ValueError, OSError: from read_metrics.
    """
    from ._plot import _pyplot
    plt = _pyplot()
    if not isinstance(metrics, Metrics):
        if title is None:
            title = os.path.basename(os.fspath(metrics))
        metrics = read_metrics(metrics)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    loss_line, = ax.plot(metrics.step, _nan(metrics.loss), color="C0",
                         linewidth=1.0, label="training loss")
    handles = [loss_line]
    if metrics.val_step:
        val_line, = ax.plot(metrics.val_step, _nan(metrics.val_loss),
                            color="C1", marker="o", markersize=4,
                            linewidth=1.0, label="validation loss")
        handles.append(val_line)
    skipped = [(s, v) for s, v, k in zip(metrics.step, metrics.loss,
                                         metrics.skipped)
               if k and v is not None]
    if skipped:
        handles.append(ax.scatter([s for s, _ in skipped],
                                  [v for _, v in skipped], color="red",
                                  marker="x", zorder=3, label="skipped step"))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(True, linewidth=0.3)
    lr_ax = ax.twinx()
    lr_line, = lr_ax.plot(metrics.step, _nan(metrics.lr), color="C2",
                          linestyle="--", linewidth=1.0, label="learning rate")
    handles.append(lr_line)
    lr_ax.set_ylabel("learning rate")
    lr_ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    # Below the axes, on the twin (drawn last) so that no line crosses it.
    lr_ax.legend(handles=handles, loc="upper center", ncol=len(handles),
                 bbox_to_anchor=(0.5, -0.12), frameon=False, fontsize=8)
    if title:
        ax.set_title(title)
    if save is not None:
        ax.figure.savefig(os.fspath(save), dpi=100, bbox_inches="tight")
    return ax, lr_ax
