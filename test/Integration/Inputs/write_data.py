"""Writes ONNX test-data inputs: write_data.py DIR SEED N,D [N,D ...]
(input_<i>.pb, float32 uniform(-1, 1) with the given shapes)."""
import os
import sys

import numpy as np
from onnx import numpy_helper

out, seed = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(seed)
for i, shape in enumerate(sys.argv[3:]):
    dims = [int(d) for d in shape.split(",")]
    a = rng.uniform(-1, 1, size=dims).astype(np.float32)
    with open(os.path.join(out, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(a).SerializeToString())
