#!/usr/bin/python3
"""Runs ONNX's single-op node tests (Debian package libonnx-testdata,
/usr/include/onnx/backend/test/data/node/<test>/model.onnx with
test_data_set_0/{input,output}_<i>.pb) through zb's importer and checks the
outputs, evaluated by zb_interp.py (NumPy float64), against ONNX's expected
outputs.

Usage:
  onnx_node_tests.py --translator PATH --list onnx-node-tests.txt [--data DIR]
      runs every test marked `use` in the list; prints one line per test and
      `N passed, M failed`; exits 1 on a failure.
  onnx_node_tests.py --translator PATH --discover > onnx-node-tests.txt
      tries every node test whose ops are all in SUPPORTED and writes the
      list: `use NAME` for the tests that pass, `skip NAME: REASON` for the
      others (the importer's error, or the mismatch).

Inputs that are integer or boolean tensors (shapes, axes, indices, masks),
and every input of the ops zb only folds (Range, ConstantOfShape, Cos, ...),
become initializers: zb's importer needs them as constants known at import
(that is how exporters produce them). Float inputs stay graph inputs. The
model is imported with --onnx-keep-outputs (all graph outputs as results).
Tolerance: |got - want| <= 1e-5 + 1e-4 |want| (ONNX's data is float32).
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zb_interp  # noqa: E402

DATA = "/usr/include/onnx/backend/test/data/node"

# The ops docs/frontends.md claims (default domain).
SUPPORTED = {
    "Add", "Sub", "Mul", "Div", "Pow", "Relu", "Tanh", "Exp", "Log", "Neg",
    "Erf", "Sqrt", "Sigmoid", "Reciprocal", "Cos", "Sin", "Not", "Equal",
    "Less", "Greater", "And", "Or", "Max", "Min", "Range", "ConstantOfShape",
    "Trilu", "MatMul", "Gemm", "ReduceMean", "ReduceSum", "Softmax",
    "LayerNormalization", "SoftmaxCrossEntropyLoss", "Gather", "Where", "Cast",
    "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Transpose", "Expand",
    "Concat", "Slice", "Split", "Shape", "Identity", "Constant", "Dropout",
    "IsNaN", "IsInf", "LessOrEqual", "GreaterOrEqual", "Xor", "Pad",
    "GatherElements", "GatherND", "CumSum",
}
FOLD_ONLY = {"Cos", "Sin", "Range", "ConstantOfShape", "Trilu", "Max", "Min"}
# Inputs that must be constants known at import (shapes, axes, pads,
# indices); every other integer or boolean input of these ops can be data.
STATIC_INPUTS = {
    "Pad": {1, 2, 3}, "GatherElements": {1}, "GatherND": {1}, "CumSum": {1},
    "Reshape": {1}, "Expand": {1}, "Slice": {1, 2, 3, 4}, "Unsqueeze": {1},
    "Squeeze": {1}, "Split": {1}, "Tile": {1}, "ReduceMean": {1},
    "ReduceSum": {1}, "Gather": {1}, "SoftmaxCrossEntropyLoss": {1, 2},
    "Dropout": {1, 2},
}
# Ops that compute on integer or boolean data (not only fold it).
DATA_OPS = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
            "And", "Or", "Xor", "Not", "Where", "Cast", "Pad",
            "GatherElements", "GatherND", "CumSum", "Identity"}


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def prepare(test_dir, out_path, int_data=False):
    """Writes the rewritten model; returns (data inputs, expected outputs).
    With int_data, integer and boolean inputs that the ops compute on
    (DATA_OPS, not a STATIC_INPUTS position) stay graph inputs (data), so
    that the importer's code for data, not its constant folds, is tested."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    g = model.graph
    data_dir = os.path.join(test_dir, "test_data_set_0")
    init_names = {t.name for t in g.initializer}
    graph_inputs = [vi for vi in g.input if vi.name not in init_names]
    inputs = [load(os.path.join(data_dir, "input_%d.pb" % i))
              for i in range(len(graph_inputs))]
    outputs = [load(p) for p in sorted(
        glob.glob(os.path.join(data_dir, "output_*.pb")),
        key=lambda p: int(re.search(r"(\d+)\.pb$", p).group(1)))]
    fold_only_inputs = {name for n in g.node if n.op_type in FOLD_ONLY
                        for name in n.input}
    static = {name for n in g.node for i, name in enumerate(n.input)
              if n.op_type not in DATA_OPS or
              i in STATIC_INPUTS.get(n.op_type, ())}
    static_pos = {name for n in g.node for i, name in enumerate(n.input)
                  if i in STATIC_INPUTS.get(n.op_type, ())}
    keep, floats, consts = [], [], []
    for vi, value in zip(graph_inputs, inputs):
        as_data = int_data and vi.name not in static and value.size > 0
        if (value.dtype.kind in "iub" and not as_data) or \
                vi.name in fold_only_inputs or vi.name in static_pos:
            consts.append(onnx.helper.make_node(
                "Constant", [], [vi.name], name="input_" + vi.name,
                value=numpy_helper.from_array(value, vi.name)))
        else:
            keep.append(vi)
            floats.append(value)
    del g.input[:]
    g.input.extend(keep)
    nodes = consts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(model, out_path)
    return floats, outputs


def has_int_data(test_dir):
    """True if the test has integer or boolean inputs that int_data keeps as
    data (so its data variant differs from the constant one)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        try:
            floats, _ = prepare(test_dir, path, int_data=True)
        except Exception:  # noqa: BLE001
            return False
        return any(np.asarray(f).dtype.kind in "iub" for f in floats)


def run_test(name, zb_translate, data, int_data=False):
    test_dir = os.path.join(data, name)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        try:
            floats, outputs = prepare(test_dir, path, int_data)
        except Exception as e:  # noqa: BLE001
            return False, "test data not readable as tensors: %s" % (
                str(e).splitlines()[0],)
        proc = subprocess.run(
            [zb_translate, "--import-onnx", "--onnx-keep-outputs", path,
             "--mlir-print-op-generic",
             "--mlir-print-elementsattrs-with-hex-if-larger=1"],
            capture_output=True, text=True)
        if proc.returncode != 0:
            err = proc.stderr.strip().splitlines()
            msg = err[0] if err else "exit %d" % proc.returncode
            return False, "import: " + msg.split("error: ", 1)[-1]
    try:
        results, _, _ = zb_interp.evaluate(
            proc.stdout, lambda i, shape, elt: floats[i])
    except BaseException as e:  # noqa: BLE001 (SystemExit of the interpreter)
        return False, "evaluation: %s" % (e,)
    if len(results) != len(outputs):
        return False, "%d results, expected %d" % (len(results), len(outputs))
    for k, (got, want) in enumerate(zip(results, outputs)):
        got = np.asarray(got)
        if got.shape != want.shape:
            return False, "output #%d has shape %s, expected %s" % (
                k, got.shape, want.shape)
        w = want.astype(np.float64)
        if not np.allclose(got.astype(np.float64), w, rtol=1e-4, atol=1e-5,
                           equal_nan=True):
            err = np.max(np.abs(got - w))
            return False, "output #%d differs (max abs error %.3g)" % (k, err)
    return True, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--translator", required=True)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--list")
    ap.add_argument("--discover", action="store_true")
    ap.add_argument("--summary", action="store_true",
                    help="print the passing tests per op")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print("no ONNX node test data at %s (apt install libonnx-testdata)"
              % args.data)
        sys.exit(2)
    if args.discover:
        for name in sorted(os.listdir(args.data)):
            model = onnx.load(os.path.join(args.data, name, "model.onnx"))
            ops = {n.op_type for n in model.graph.node}
            if not ops or not ops <= SUPPORTED or any(
                    n.domain not in ("", "ai.onnx") for n in model.graph.node):
                continue
            ok, why = run_test(name, args.translator, args.data)
            print("use %s" % name if ok else "skip %s: %s" % (name, why))
            if ok and has_int_data(os.path.join(args.data, name)):
                ok, why = run_test(name, args.translator, args.data, True)
                print("use-data %s" % name if ok else
                      "skip-data %s: %s" % (name, why))
        return
    passed = failed = 0
    per_op = {}
    with open(args.list) as f:
        for line in f:
            m = re.match(r"(use|use-data) (\S+)", line)
            if not m:
                continue
            name, int_data = m.group(2), m.group(1) == "use-data"
            ok, why = run_test(name, args.translator, args.data, int_data)
            label = name + (" (integer/boolean inputs as data)"
                            if int_data else "")
            print("%s %s%s" % ("PASS" if ok else "FAIL", label,
                               "" if ok else ": " + why))
            passed += ok
            failed += not ok
            model = onnx.load(os.path.join(args.data, name, "model.onnx"))
            for op in {n.op_type for n in model.graph.node}:
                counts = per_op.setdefault(op, [0, 0])
                counts[int_data] += ok
    if args.summary:
        print("per op: tests passed (constant inputs / data inputs)")
        for op in sorted(per_op):
            print("  %s: %d / %d" % (op, per_op[op][0], per_op[op][1]))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
