#!/usr/bin/python3
"""PyTorch's training trajectory of the GPT-2 importer fixture, the reference
for zb's pipelined training of the same exported model
(test/Integration/onnx-gpt2-trajectory.test).

    /usr/bin/python3 python/export/onnx_train_trajectory.py \
        test/Frontend/Inputs/onnx/gpt2 [--steps 3] [--lr 0.1] [--microbatches 2]

Rebuilds the model exactly as python/export/onnx_fixtures.py exported it
(torch.manual_seed(0), same perturbation), reads the fixture's training set
(train/input_0.pb tokens, train/input_1.pb targets, [256, 16] int64) and runs
`steps` steps of plain SGD (p -= lr * grad, no momentum or weight decay) in
float64 and in float32. Step s (0-based) uses rows [s*B, (s+1)*B) with
B = microbatches * 4, the rows zb-run feeds to step s; the loss is the mean
cross-entropy over all B x 16 positions, which equals zb's mean over
`microbatches` equal microbatches of their mean losses. Writes
DIR/train_expected.json: {"lr", "microbatches", "losses" (float64),
"losses_f32"}.
"""
import argparse
import copy
import json
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_fixtures as fx  # noqa: E402


def trajectory(model, tokens, targets, steps, lr, rows, dtype):
    model = model.to(dtype)
    losses = []
    for s in range(steps):
        t = torch.from_numpy(tokens[s * rows:(s + 1) * rows])
        y = torch.from_numpy(targets[s * rows:(s + 1) * rows])
        model.zero_grad()
        loss = model(t, y)
        loss.backward()
        losses.append(float(loss))
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--microbatches", type=int, default=2)
    a = ap.parse_args()
    tokens = onnx.numpy_helper.to_array(
        onnx.load_tensor(os.path.join(a.dir, "train", "input_0.pb")))
    targets = onnx.numpy_helper.to_array(
        onnx.load_tensor(os.path.join(a.dir, "train", "input_1.pb")))
    model = fx.build("gpt2")
    # The exported initializers must be this model's parameters.
    inits = {t.name: onnx.numpy_helper.to_array(t)
             for t in onnx.load(os.path.join(a.dir, "model.onnx")).graph.initializer}
    for name, p in model.named_parameters():
        if not np.array_equal(inits[name], p.detach().numpy()):
            raise SystemExit("model.onnx parameter %s differs from the rebuilt model" % name)
    rows = a.microbatches * fx.BATCH
    l64 = trajectory(copy.deepcopy(model), tokens, targets, a.steps, a.lr, rows, torch.float64)
    l32 = trajectory(copy.deepcopy(model), tokens, targets, a.steps, a.lr, rows, torch.float32)
    out = {"lr": a.lr, "microbatches": a.microbatches, "optimizer": "sgd",
           "losses": l64, "losses_f32": l32}
    with open(os.path.join(a.dir, "train_expected.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("losses (float64):", " ".join("%.8f" % l for l in l64))


if __name__ == "__main__":
    main()
