#!/usr/bin/python3
"""Exports the example MLP regression model (forward + MSE loss) to ONNX and
writes a synthetic regression dataset.

Run with Debian's python (torch 1.13): /usr/bin/python3 examples/mlp/export_mlp.py

Writes, next to this script:
  mlp.onnx          opset 17; graph inputs x [16,16], target [16,4]; output
                    the scalar loss; parameters as initializers named
                    fc1.weight, fc1.bias, ..., fc3.bias (torch's names).
  data/input_0.pb   x, float32 [1024,16]   (serialized onnx TensorProto)
  data/input_1.pb   target, float32 [1024,4] = teacher(x) + small noise

Model: Linear(16,64) - ReLU - Linear(64,64) - ReLU - Linear(64,4);
loss = mean over all elements of (y - target)^2 (torch.mean((y - target) ** 2):
aten::mse_loss is not exportable to ONNX by torch 1.13). Init: torch.manual_seed(0).
Data: numpy seed 0, x ~ N(0,1); teacher(x) = tanh(x A) + 0.5 sin(x B) with
fixed A, B drawn from the same generator; noise ~ 0.01 N(0,1).
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "export"))
import zb_export  # noqa: E402

MICROBATCH = 16
IN_FEATURES = 16
HIDDEN = 64
OUT_FEATURES = 4
NUM_SAMPLES = 1024


class MLPWithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN_FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, OUT_FEATURES)

    def forward(self, x, target):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        y = self.fc3(h)
        # MSE written out: aten::mse_loss has no ONNX symbolic in torch 1.13.
        return torch.mean((y - target) ** 2)


def make_dataset():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_SAMPLES, IN_FEATURES))
    a = rng.standard_normal((IN_FEATURES, OUT_FEATURES)) / np.sqrt(IN_FEATURES)
    b = rng.standard_normal((IN_FEATURES, OUT_FEATURES)) / np.sqrt(IN_FEATURES)
    noise = 0.01 * rng.standard_normal((NUM_SAMPLES, OUT_FEATURES))
    target = np.tanh(x @ a) + 0.5 * np.sin(x @ b) + noise
    return x.astype(np.float32), target.astype(np.float32)


def main():
    torch.manual_seed(0)
    model = MLPWithLoss()
    x, target = make_dataset()
    onnx_path = os.path.join(HERE, "mlp.onnx")
    example = (torch.from_numpy(x[:MICROBATCH]),
               torch.from_numpy(target[:MICROBATCH]))
    zb_export.export_training_graph(model, example, ["x", "target"], onnx_path)
    zb_export.save_inputs(os.path.join(HERE, "data"), [x, target])
    with torch.no_grad():
        loss = model(*example).item()
    print(zb_export.describe(onnx_path))
    print("torch loss of the first microbatch: %.6f" % loss)


if __name__ == "__main__":
    main()
