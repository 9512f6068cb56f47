#!/usr/bin/python3
"""Evaluates the function @main printed by `zb-translate --import-onnx` with
NumPy (float64), to check the importer's semantics independently of zb's
own lowering. Knows exactly the ops the ONNX importer emits.

Usage: eval_zb.py FILE.mlir [--inputs DIR | --seed N]
  The module must be printed with --mlir-print-elementsattrs-with-hex-if-larger=1
  (parameter values as hex). Graph inputs come from DIR/input_<i>.pb (the
  leading rows, as many as the argument's shape needs) or, with --seed, from
  make_onnx.random_inputs. Parameters come from zb.param_values.
Prints `loss %.6f`.
"""

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def parse_type(text):
    """'16x4xf32' -> ((16, 4), float32 dtype)."""
    parts = text.split("x")
    return tuple(int(p) for p in parts[:-1]), DTYPES[parts[-1]]


def parse_dense(body, type_text):
    shape, dtype = parse_type(type_text)
    if body.startswith('"0x'):
        data = np.frombuffer(bytes.fromhex(body[3:-1]), dtype=dtype)
        if data.size == 1:
            return np.full(shape, data[0], dtype=np.float64)
        return data.reshape(shape).astype(np.float64)
    return np.full(shape, float(body), dtype=np.float64)


def parse_ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


def evaluate(text, inputs):
    params = {}
    header = text[:text.index("func.func")]
    for m in re.finditer(r'("[^"]*"|[\w.]+) = dense<("0x[0-9A-F]*"|[^>]*)> : '
                         r'tensor<([^>]*)>', header):
        params[m.group(1).strip('"')] = parse_dense(m.group(2), m.group(3))

    env = {}
    signature = re.search(r"func\.func @main\((.*)\) -> ", text).group(1)
    graph_inputs = 0
    for m in re.finditer(r'%(\w+): tensor<([^>]*)> \{([^}]*)\}', signature):
        shape, _ = parse_type(m.group(2))
        name = re.search(r'zb\.name = "([^"]*)"', m.group(3)).group(1)
        if "zb.param" in m.group(3).replace("zb.param_values", ""):
            value = params[name]
        else:
            value = inputs(graph_inputs, shape)
            graph_inputs += 1
        assert value.shape == shape, (name, value.shape, shape)
        env["%" + m.group(1)] = value

    body = text[text.index("func.func"):]
    for line in body.splitlines()[1:]:
        line = line.strip()
        if line.startswith("return"):
            return env[line.split()[1]]
        m = re.match(r"(%\w+) = zb\.(\w+) (.*) : (?:.* -> )?tensor<([^>]*)>$",
                     line)
        if not m:
            continue
        res, op, rest, result_type = m.groups()
        shape, _ = parse_type(result_type)
        args = [env[a] for a in re.findall(r"%\w+", rest)]
        if op == "constant":
            value = parse_dense(re.match(r"dense<(.*)>", rest).group(1),
                                result_type)
        elif op == "matmul":
            a, b = args
            if "transpose_lhs" in rest:
                a = a.T
            if "transpose_rhs" in rest:
                b = b.T
            value = a @ b
        elif op == "broadcast_in_dim":
            dims = parse_ints(re.search(r"dims \[([^\]]*)\]", rest).group(1))
            expanded = [1] * len(shape)
            for i, d in enumerate(dims):
                expanded[d] = args[0].shape[i]
            value = np.broadcast_to(args[0].reshape(expanded), shape)
        elif op in ("reduce_sum", "reduce_mean"):
            axes = tuple(parse_ints(
                re.search(r"axes \[([^\]]*)\]", rest).group(1)))
            fn = np.sum if op == "reduce_sum" else np.mean
            value = fn(args[0], axis=axes)
        elif op == "reshape":
            value = args[0].reshape(shape)
        else:
            fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                  "div": np.divide, "neg": np.negative, "exp": np.exp,
                  "log": np.log, "tanh": np.tanh,
                  "relu": lambda x: np.maximum(x, 0.0)}[op]
            value = fn(*args)
        value = np.asarray(value, dtype=np.float64)
        assert value.shape == shape, (line, value.shape, shape)
        env[res] = value
    raise SystemExit("no return in @main")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--inputs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.inputs:
        import onnx
        from onnx import numpy_helper

        def inputs(i, shape):
            t = onnx.TensorProto()
            with open(os.path.join(args.inputs, "input_%d.pb" % i), "rb") as f:
                t.ParseFromString(f.read())
            a = numpy_helper.to_array(t).astype(np.float64)
            return a[:shape[0]] if shape else a
    else:
        import make_onnx

        def inputs(i, shape):
            return make_onnx.random_input(args.seed, i, shape)

    with open(args.file) as f:
        loss = evaluate(f.read(), inputs)
    print("loss %.6f" % float(loss))


if __name__ == "__main__":
    main()
