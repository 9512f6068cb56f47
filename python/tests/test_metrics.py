"""The metrics file of zb-run --metrics: read back (nulls, a step repeated by
a resumed run, a truncated last line, a bad line) and plotted."""
import json
import math

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import zb  # noqa: E402
from test_plot import nontrivial_png  # noqa: E402

LINES = [
    {"step": 1, "loss": 4.5, "lr": 0.0003, "grad_norm": 2.0,
     "tokens_per_s": None, "time_ms": 120.0, "skipped": False},
    {"step": 2, "loss": 4.25, "lr": 0.0006, "grad_norm": 1.5,
     "tokens_per_s": 1000.0, "time_ms": 80.0, "skipped": False},
    {"step": 3, "loss": None, "lr": 0.0006, "grad_norm": None,
     "tokens_per_s": 990.0, "time_ms": 81.0, "skipped": True},
    {"step": 4, "loss": 4.0, "lr": 0.0005, "grad_norm": 1.25,
     "tokens_per_s": 1010.0, "time_ms": 79.0, "skipped": False,
     "future_key": [1, 2]},
    {"step": 4, "val_loss": 4.1, "val_batches": 2},
    {"step": 5, "note": "neither loss nor val_loss: ignored"},
    # Resumed from the checkpoint of step 3: step 4 again (this one wins).
    {"step": 4, "loss": 3.5, "lr": 0.0005, "grad_norm": 1.0,
     "tokens_per_s": 1020.0, "time_ms": 78.0, "skipped": False},
    {"step": 4, "val_loss": 3.75, "val_batches": 2},
    {"step": 5, "loss": 3.25, "lr": 0.0004, "grad_norm": 0.5,
     "tokens_per_s": 1030.0, "time_ms": 77.0, "skipped": False},
]


def write(path, lines, tail=""):
    with open(path, "w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line))
                    + "\n")
        f.write(tail)
    return path


def test_read_metrics(tmp_path):
    path = write(tmp_path / "m.jsonl", LINES[:5] + [""] + LINES[5:],
                 tail='{"step": 6, "loss": 3.1, "lr"')
    with pytest.warns(UserWarning, match=r"m\.jsonl:11: skipped a truncated"):
        m = zb.read_metrics(path)
    assert m.step == [1, 2, 3, 4, 5]
    assert m.loss == [4.5, 4.25, None, 3.5, 3.25]
    assert m.lr == [0.0003, 0.0006, 0.0006, 0.0005, 0.0004]
    assert m.grad_norm == [2.0, 1.5, None, 1.0, 0.5]
    assert m.tokens_per_s == [None, 1000.0, 990.0, 1020.0, 1030.0]
    assert m.time_ms == [120.0, 80.0, 81.0, 78.0, 77.0]
    assert m.skipped == [False, False, True, False, False]
    assert m.val_step == [4]
    assert m.val_loss == [3.75]
    # Out of order in the file: sorted by step.
    m = zb.read_metrics(write(tmp_path / "r.jsonl", LINES[::-1]))
    assert m.step == [1, 2, 3, 4, 5] and m.loss[3] == 4.0


def test_read_metrics_errors(tmp_path):
    bad = write(tmp_path / "bad.jsonl", [LINES[0], '{"step": 2, "loss": 4',
                                         LINES[1]])
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: not valid JSON"):
        zb.read_metrics(bad)
    # A bad last line that ends in a newline was written whole: an error.
    bad = write(tmp_path / "bad2.jsonl", [LINES[0], '{"step": 2,'])
    with pytest.raises(ValueError, match=r"bad2\.jsonl:2: not valid JSON"):
        zb.read_metrics(bad)
    # A run killed mid-line, then resumed: its first line follows the
    # fragment on the same line.
    glued = write(tmp_path / "glued.jsonl", [
        LINES[0], '{"loss": 4.25, "lr": 0.0006, "st' + json.dumps(LINES[1]),
        LINES[2]])
    with pytest.warns(UserWarning, match=r"glued\.jsonl:2: skipped a trunc"):
        m = zb.read_metrics(glued)
    assert m.step == [1, 2, 3] and m.loss == [4.5, 4.25, None]
    bad = write(tmp_path / "bad3.jsonl", [LINES[0], "[1, 2]"])
    with pytest.raises(ValueError, match=r"bad3\.jsonl:2: not a JSON object"):
        zb.read_metrics(bad)
    bad = write(tmp_path / "bad4.jsonl", ['{"step": "1", "loss": 4.0}'])
    with pytest.raises(ValueError, match=r"bad4\.jsonl:1: \"step\" must be"):
        zb.read_metrics(bad)
    bad = write(tmp_path / "bad5.jsonl", ['{"step": 1, "loss": "4.0"}'])
    with pytest.raises(ValueError, match=r"bad5\.jsonl:1: \"loss\" must be"):
        zb.read_metrics(bad)
    with pytest.raises(OSError):
        zb.read_metrics(tmp_path / "missing.jsonl")


def test_plot_metrics(tmp_path):
    lines = []
    for s in range(1, 101):
        lines.append({"step": s, "loss": 5 * math.exp(-s / 30) + 1,
                      "lr": 1e-3 * min(1.0, s / 10), "grad_norm": 1.0,
                      "tokens_per_s": 1e4, "time_ms": 10.0,
                      "skipped": s == 50})
        if s % 20 == 0:
            lines.append({"step": s, "val_loss": 5 * math.exp(-s / 30) + 1.2,
                          "val_batches": 4})
    path = write(tmp_path / "metrics.jsonl", lines)
    loss_ax, lr_ax = zb.plot_metrics(str(path), save=tmp_path / "m.png")
    nontrivial_png(tmp_path / "m.png")
    assert loss_ax.get_title() == "metrics.jsonl"
    train, val = loss_ax.get_lines()[:2]
    assert list(train.get_xdata()) == list(range(1, 101))
    assert list(val.get_xdata()) == [20, 40, 60, 80, 100]
    assert max(lr_ax.get_lines()[0].get_ydata()) == pytest.approx(1e-3)
    # From a Metrics, on given axes, log scale.
    _, ax = plt.subplots()
    got = zb.plot_metrics(zb.read_metrics(path), ax, logy=True)
    assert got[0] is ax and ax.get_yscale() == "log"
    ax.figure.savefig(tmp_path / "log.png", dpi=80)
    nontrivial_png(tmp_path / "log.png")
    plt.close("all")
