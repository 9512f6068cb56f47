#!/usr/bin/python3
"""Evaluates a zb-dialect function printed in generic op form
(`--mlir-print-op-generic`) with NumPy in float64, independently of zb's own
lowering, and compares with a reference (the exporting framework's loss and
per-parameter gradient norms).

Usage:
  eval_zb_generic.py FILE.mlir --batch BATCH.npz [--expected expected.json]
                     [--loss-rtol 1e-5] [--grad-rtol 1e-4]

FILE is the output of `zb-translate --import-stablehlo` (forward: @main
returns the loss), optionally after `zb-opt --zb-autodiff` (then @main also
returns one gradient per parameter, result attribute zb.grad_of = argument
index). Data arguments (no zb.param) take the arrays of BATCH.npz in order
(arr_0, arr_1, ...); parameters take the module's zb.param_values, widened to
float64. Every op is computed in float64 (integers stay integers).

Prints `loss <value>`, then `grad <name> <L2 norm>` per gradient; with
--expected, one `ok`/`MISMATCH` line per compared quantity (relative error
against expected["float64"]) and a final `PASS` or `FAIL` (exit status 1).
"""

import argparse
import json
import math
import re
import struct
import sys

import numpy as np

INT_TYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
             "i64": np.int64}
FLOAT_BYTES = {"f32": ("<f4", 4), "f64": ("<f8", 8), "f16": ("<f2", 2)}


def parse_tensor_type(text):
    """'tensor<4x16xf32>' -> ((4, 16), 'f32')."""
    m = re.fullmatch(r"\s*tensor<([^>]*)>\s*", text)
    if not m:
        raise ValueError("not a tensor type: " + text)
    parts = m.group(1).split("x")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def split_top(text, sep=","):
    """Splits at `sep` outside (), [], {}, <> and quotes."""
    out, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        if not quote:
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>":
                depth -= 1
            elif ch == sep and depth == 0:
                out.append("".join(cur))
                cur = []
                continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [s.strip() for s in out]


def scalar_token(tok, elem):
    tok = tok.strip()
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("0x") and elem in FLOAT_BYTES:
        fmt, n = FLOAT_BYTES[elem]
        return float(np.frombuffer(int(tok, 16).to_bytes(n, "little"),
                                   dtype=fmt)[0])
    if elem in FLOAT_BYTES:
        return float(tok)
    return int(tok)


def parse_dense(body, type_text):
    shape, elem = parse_tensor_type(type_text)
    body = body.strip()
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        if elem in FLOAT_BYTES:
            data = np.frombuffer(raw, dtype=FLOAT_BYTES[elem][0])
        elif elem == "i1":
            n = int(np.prod(shape))
            data = np.frombuffer(raw, dtype=np.uint8)
            if data.size != n:  # bit-packed, least significant bit first
                data = np.unpackbits(data, bitorder="little")[:n]
            data = data.astype(bool)
        else:
            data = np.frombuffer(raw, dtype=INT_TYPES[elem]).astype("<" + np.dtype(INT_TYPES[elem]).str[1:])
    else:
        flat = re.sub(r"[\[\]]", " ", body).replace(",", " ").split()
        data = np.array([scalar_token(t, elem) for t in flat])
    if data.size == 1:
        data = np.full(shape, data.reshape(-1)[0])
    arr = data.reshape(shape)
    if elem in FLOAT_BYTES:
        return arr.astype(np.float64)
    if elem == "i1":
        return arr.astype(bool)
    return arr.astype(np.int64)


def attr_array(attrs, key):
    m = re.search(r"\b%s = array<i64(?::([^>]*))?>" % re.escape(key), attrs)
    if not m:
        raise ValueError("no attribute %s in %s" % (key, attrs))
    return [int(v) for v in (m.group(1) or "").split(",") if v.strip()]


def attr_int(attrs, key):
    return int(re.search(r"\b%s = (-?\d+)" % re.escape(key), attrs).group(1))


def attr_float(attrs, key, default):
    m = re.search(r"\b%s = ([-+0-9.eEinfa]+)" % re.escape(key), attrs)
    return float(m.group(1)) if m else default


def attr_str(attrs, key, default=None):
    m = re.search(r'\b%s = "([^"]*)"' % re.escape(key), attrs)
    return m.group(1) if m else default


def has_unit(attrs, key):
    return re.search(r"\b%s\b(?! =)" % re.escape(key), attrs) is not None


def softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                      (x + 0.044715 * x ** 3)))
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def evaluate_op(name, args, attrs, result_types):
    """Returns the list of results of one zb op."""
    shapes = [parse_tensor_type(t) for t in result_types]
    op = name[len("zb."):]
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
              "div": np.divide, "pow": np.power, "max": np.maximum}
    unary = {"neg": np.negative, "exp": np.exp, "log": np.log,
             "tanh": np.tanh, "sqrt": np.sqrt,
             "rsqrt": lambda x: 1 / np.sqrt(x),
             "erf": np.vectorize(math.erf),
             "relu": lambda x: np.maximum(x, 0),
             "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
             "silu": lambda x: x / (1 + np.exp(-x))}
    if op in binary:
        return [binary[op](*args)]
    if op in unary:
        return [unary[op](args[0])]
    if op == "gelu":
        return [gelu(args[0], attr_str(attrs, "approximate", "none"))]
    if op == "compare":
        fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
              "le": np.less_equal, "gt": np.greater,
              "ge": np.greater_equal}[attr_str(attrs, "predicate")]
        return [fn(args[0], args[1])]
    if op == "select":
        return [np.where(args[0], args[1], args[2])]
    if op == "cast":
        return [np.asarray(args[0]).astype(np.float64)]
    if op in ("matmul", "batch_matmul"):
        a, b = args
        if has_unit(attrs, "transpose_lhs"):
            a = np.swapaxes(a, -1, -2)
        if has_unit(attrs, "transpose_rhs"):
            b = np.swapaxes(b, -1, -2)
        return [np.matmul(a, b)]
    if op == "broadcast_in_dim":
        dims = attr_array(attrs, "dims")
        shape = shapes[0][0]
        expanded = [1] * len(shape)
        for i, d in enumerate(dims):
            expanded[d] = args[0].shape[i]
        return [np.broadcast_to(args[0].reshape(expanded), shape).copy()]
    if op == "reshape":
        return [args[0].reshape(shapes[0][0])]
    if op in ("reduce_sum", "reduce_mean", "reduce_max"):
        fn = {"reduce_sum": np.sum, "reduce_mean": np.mean,
              "reduce_max": np.max}[op]
        return [fn(args[0], axis=tuple(attr_array(attrs, "axes")))]
    if op == "transpose":
        return [np.transpose(args[0], attr_array(attrs, "permutation"))]
    if op == "slice":
        start, limit, strides = (attr_array(attrs, k) for k in
                                 ("start", "limit", "strides"))
        return [args[0][tuple(slice(s, l, st) for s, l, st in
                              zip(start, limit, strides))]]
    if op == "pad":
        low, high, interior = (attr_array(attrs, k) for k in
                               ("low", "high", "interior"))
        x = args[0]
        out = np.zeros(shapes[0][0])
        idx = tuple(slice(lo, lo + (n - 1) * (it + 1) + 1 if n else lo,
                          it + 1)
                    for lo, n, it in zip(low, x.shape, interior))
        out[idx] = x
        return [out]
    if op == "concat":
        return [np.concatenate(args, axis=attr_int(attrs, "axis"))]
    if op == "split":
        axis = attr_int(attrs, "axis")
        sizes = [s[0][axis] for s in shapes]
        return np.split(args[0], np.cumsum(sizes)[:-1], axis=axis)
    if op == "gather":
        return [args[0][args[1]]]
    if op == "scatter_add":
        out = np.zeros(shapes[0][0])
        np.add.at(out, args[1], args[0])
        return [out]
    if op == "one_hot":
        classes = shapes[0][0][-1]
        return [(args[0][..., None] == np.arange(classes)).astype(np.float64)]
    if op == "softmax":
        return [softmax(args[0], attr_int(attrs, "axis"))]
    if op == "layer_norm":
        x, w, b = args
        eps = attr_float(attrs, "epsilon", 1e-5)
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return [(x - mean) / np.sqrt(var + eps) * w + b]
    if op == "rms_norm":
        x, w = args
        eps = attr_float(attrs, "epsilon", 1e-6)
        return [x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w]
    if op == "cross_entropy":
        logits, targets = args
        m = logits.max(-1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(-1)) + m[..., 0]
        picked = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
        return [np.asarray(np.mean(lse - picked))]
    if op == "causal_mask":
        x = args[0].copy()
        fill = attr_float(attrs, "fill", -np.inf)
        tq, tk = x.shape[-2:]
        mask = np.triu(np.ones((tq, tk), bool), 1)
        x[..., mask] = fill
        return [x]
    raise SystemExit("eval_zb_generic.py: unsupported op " + name)


def evaluate(text, batch):
    # Parameter values.
    params = {}
    m = re.search(r"zb\.param_values = \{", text)
    if m:
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        for entry in split_top(text[m.end():i - 1]):
            em = re.fullmatch(r'("[^"]*"|[\w.$-]+) = dense<(.*)> : (tensor<[^>]*>)',
                              entry, re.S)
            params[em.group(1).strip('"')] = parse_dense(em.group(2),
                                                         em.group(3))

    fm = re.search(r'"func\.func"\(\) <\{(.*?)\}> \(\{\n\s*\^bb0\((.*?)\):\n',
                   text, re.S)
    props, sig = fm.group(1), fm.group(2)
    arg_attrs = re.search(r"arg_attrs = \[(.*?)\], function_type", props,
                          re.S).group(1)
    arg_attrs = re.findall(r"\{([^{}]*)\}", arg_attrs)
    res_attrs_m = re.search(r"res_attrs = \[(.*?)\], sym_name", props, re.S)
    res_attrs = re.findall(r"\{([^{}]*)\}", res_attrs_m.group(1)) \
        if res_attrs_m else []
    env, names, data_i = {}, [], 0
    for k, arg in enumerate(split_top(sig)):
        vname, vtype = arg.split(":", 1)
        shape, _ = parse_tensor_type(vtype)
        name = re.search(r'zb\.name = "([^"]*)"', arg_attrs[k]).group(1)
        names.append(name)
        if re.search(r"zb\.param\b(?!_)", arg_attrs[k]):
            value = params[name]
        else:
            value = batch["arr_%d" % data_i]
            data_i += 1
        assert tuple(value.shape) == shape, (name, value.shape, shape)
        env[vname.strip()] = value

    body = text[fm.end():]
    for line in body.splitlines():
        line = line.strip()
        if line.startswith('"func.return"'):
            operands = re.match(r'"func\.return"\((.*?)\)', line).group(1)
            results = [env[v.strip()] for v in operands.split(",")]
            grads = {}
            for k, r in enumerate(results[1:], start=1):
                g = re.search(r"zb\.grad_of = (\d+)", res_attrs[k])
                grads[names[int(g.group(1))]] = r
            return results[0], grads
        om = re.match(r'(?:(%[\w]+)(?::(\d+))? = )?"(zb\.\w+)"\((.*?)\)(.*)$',
                      line)
        if not om:
            continue
        res, count, opname, operands, rest = om.groups()
        sig_pos = rest.rfind(" : (")
        attrs, signature = rest[:sig_pos], rest[sig_pos + 3:]
        result_text = signature.split(" -> ", 1)[1].strip()
        if result_text.startswith("("):
            result_types = split_top(result_text[1:-1])
        else:
            result_types = [result_text]
        if opname == "zb.constant":
            vm = re.search(r"value = dense<(.*)> : (tensor<[^>]*>)", attrs)
            outs = [parse_dense(vm.group(1), vm.group(2))]
        else:
            args = [env[v.strip()] for v in operands.split(",") if v.strip()]
            outs = evaluate_op(opname, args, attrs, result_types)
        for k, (o, t) in enumerate(zip(outs, result_types)):
            shape, _ = parse_tensor_type(t)
            o = np.asarray(o)
            assert o.shape == shape, (line, o.shape, shape)
            env[res if len(outs) == 1 and not count else "%s#%d" % (res, k)] = o
    raise SystemExit("eval_zb_generic.py: no func.return")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--batch", required=True)
    ap.add_argument("--expected")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    args = ap.parse_args()
    with open(args.file) as f:
        text = f.read()
    batch = dict(np.load(args.batch))
    batch = {k: v.astype(np.int64) if v.dtype.kind in "iu" else
             v.astype(np.float64) for k, v in batch.items()}
    loss, grads = evaluate(text, batch)
    loss = float(loss)
    print("loss %.9g" % loss)
    norms = {n: float(np.linalg.norm(g.ravel())) for n, g in grads.items()}
    for n in sorted(norms):
        print("grad %s %.9g" % (n, norms[n]))
    if not args.expected:
        return
    with open(args.expected) as f:
        ref = json.load(f)["float64"]
    ok = True

    def check(what, got, want, rtol):
        nonlocal ok
        rel = abs(got - want) / max(abs(want), 1e-30)
        good = rel <= rtol
        ok &= good
        print("%s %s got %.9g want %.9g rel %.2e" %
              ("ok" if good else "MISMATCH", what, got, want, rel))

    check("loss", loss, ref["loss"], args.loss_rtol)
    if grads:
        missing = sorted(set(ref["grad_norms"]) - set(norms))
        for n in missing:
            print("MISMATCH no gradient for", n)
        ok &= not missing
        for n in sorted(norms):
            if n not in ref["grad_norms"]:
                print("MISMATCH unexpected gradient", n)
                ok = False
                continue
            check("grad " + n, norms[n], ref["grad_norms"][n], args.grad_rtol)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
