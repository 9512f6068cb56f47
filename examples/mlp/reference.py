#!/usr/bin/python3
"""NumPy float64 reference for training the example MLP with plain SGD.

The integration tests compare zb's per-step losses against this (1e-4 relative).

Model (same as export_mlp.py): y = fc3(relu(fc2(relu(fc1(x))))), fcK(h) = h W_K^T + b_K,
per-microbatch loss = mean over all elements of (y - target)^2.
Initial weights: the initializers of mlp.onnx (float32, computed in float64).
Data: data/input_0.pb (x [1024,16]) and data/input_1.pb (target [1024,4]).

Step k (k = 0, 1, ...) uses M microbatches of 16 samples; sample t of the step
(t = 0 .. 16M-1) is row (k*16*M + t) mod 1024, microbatch j holds t = 16j .. 16j+15.
The loss of a step is the mean over its microbatches of the per-microbatch loss,
evaluated with the weights before the update; the gradient is the mean over the
microbatches of the per-microbatch gradients; then W <- W - lr * grad.

Prints `step   1  loss 0.123456` per step (steps numbered from 1), or with --json
the list of losses.
"""

import argparse
import fnmatch
import json
import os

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MICROBATCH = 16
LAYERS = ("fc1", "fc2", "fc3")


def load_params(model_path):
    model = onnx.load(model_path)
    return {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor).astype(np.float64)


def loss_and_grads(params, x, target):
    """Forward + backward of one microbatch; returns (loss, {name: grad})."""
    acts = [x]          # input of each layer
    pre = []            # pre-activation of each hidden layer
    h = x
    for i, name in enumerate(LAYERS):
        z = h @ params[name + ".weight"].T + params[name + ".bias"]
        if i + 1 < len(LAYERS):
            pre.append(z)
            h = np.maximum(z, 0.0)
            acts.append(h)
        else:
            h = z
    diff = h - target
    loss = np.mean(diff * diff)
    grads = {}
    dz = 2.0 * diff / diff.size
    for i in reversed(range(len(LAYERS))):
        name = LAYERS[i]
        grads[name + ".weight"] = dz.T @ acts[i]
        grads[name + ".bias"] = dz.sum(axis=0)
        if i > 0:
            dh = dz @ params[name + ".weight"]
            dz = dh * (pre[i - 1] > 0.0)
    return loss, grads


def train(params, x, target, steps, microbatches, lr, trains=lambda name: True):
    n = x.shape[0]
    losses = []
    for k in range(steps):
        rows = (k * MICROBATCH * microbatches
                + np.arange(MICROBATCH * microbatches)) % n
        total = 0.0
        acc = {name: np.zeros_like(v) for name, v in params.items()}
        for j in range(microbatches):
            mb = rows[j * MICROBATCH:(j + 1) * MICROBATCH]
            loss, grads = loss_and_grads(params, x[mb], target[mb])
            total += loss
            for name, g in grads.items():
                acc[name] += g
        losses.append(total / microbatches)
        for name in params:
            if trains(name):
                params[name] = params[name] - lr * acc[name] / microbatches
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--model", default=os.path.join(HERE, "mlp.onnx"))
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--trainable", action="append", default=[],
                    help="train only parameters matching these fnmatch "
                         "patterns (zb-compile --trainable)")
    ap.add_argument("--frozen", action="append", default=[],
                    help="do not train parameters matching these patterns "
                         "(zb-compile --frozen)")
    ap.add_argument("--json", action="store_true",
                    help="print the list of per-step losses as JSON")
    args = ap.parse_args()

    params = load_params(args.model)
    x = load_tensor(os.path.join(args.data, "input_0.pb"))
    target = load_tensor(os.path.join(args.data, "input_1.pb"))
    def trains(name):
        if args.trainable and not any(fnmatch.fnmatchcase(name, p)
                                      for p in args.trainable):
            return False
        return not any(fnmatch.fnmatchcase(name, p) for p in args.frozen)
    losses = train(params, x, target, args.steps, args.microbatches, args.lr,
                   trains)
    if args.json:
        print(json.dumps(losses))
    else:
        for k, loss in enumerate(losses):
            print("step %3d  loss %.6f" % (k + 1, loss))


if __name__ == "__main__":
    main()
