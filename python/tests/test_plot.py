"""Pictures: the PNGs exist and are real images (not blank), and the Gantt
chart draws one box per pass."""
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import zb  # noqa: E402
from conftest import EXAMPLES, run_tool, tool  # noqa: E402


def nontrivial_png(path, min_width=300):
    assert os.path.getsize(path) > 5000
    img = mpimg.imread(path)
    assert img.shape[1] >= min_width
    # Many distinct colours: boxes, labels, axes.
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3),
                        axis=0)
    assert len(colours) > 20


def test_plot_and_plot_memory(tmp_path):
    p = zb.Problem(stages=4, microbatches=8, mem_b=1, mem_w=0.5,
                   memory_limit=[8, 6, 4, 4])
    s = zb.schedule(p, "zb-auto")
    ax = zb.plot(s)
    # One bar collection per pass plus one idle background per rank.
    assert len(ax.collections) == 4 * 8 * 3 + 4
    ax.figure.savefig(tmp_path / "gantt.png", dpi=80)
    nontrivial_png(tmp_path / "gantt.png")
    ax = zb.plot_memory(s)
    ax.figure.savefig(tmp_path / "memory.png", dpi=80)
    nontrivial_png(tmp_path / "memory.png")
    # The plotted peak per rank is the schedule's.
    for r, line in enumerate(ax.get_lines()[::2]):
        assert max(line.get_ydata()) == s.peak_memory[r]
    plt.close("all")


def test_plot_run_from_a_trace(tmp_path, mpi_env):
    mlp = os.path.join(EXAMPLES, "mlp", "mlp.onnx")
    plan = zb.compile(mlp, tmp_path / "plan", stages=2, microbatches=4)
    trace = tmp_path / "trace.json"
    zb.run(plan, steps=2, extra_args=["--trace", str(trace)])
    predicted = zb.schedule(zb.Problem(stages=2, microbatches=4), "zb-h1")
    axes = zb.plot_run(str(trace), predicted)
    assert len(axes) == 2
    axes[0].figure.savefig(tmp_path / "run.png", dpi=80)
    nontrivial_png(tmp_path / "run.png")
    plt.close("all")
