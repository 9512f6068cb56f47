"""python/examples run and write real pictures."""
import os
import subprocess
import sys

import pytest

from test_plot import nontrivial_png

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


@pytest.mark.parametrize("script,png", [("figure3.py", "figure3.png"),
                                        ("memory_sweep.py",
                                         "memory_sweep.png")])
def test_example_writes_its_png(tmp_path, script, png):
    subprocess.run([sys.executable, os.path.join(EXAMPLES, script),
                    str(tmp_path)], check=True, capture_output=True,
                   env=dict(os.environ, MPLBACKEND="Agg"))
    nontrivial_png(tmp_path / png, min_width=600)
