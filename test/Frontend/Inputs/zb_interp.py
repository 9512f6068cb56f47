#!/usr/bin/python3
"""A NumPy (float64) interpreter of the zb dialect in MLIR's generic op form,
independent of zb's own lowering: the one reference evaluator of the
frontend tests (ONNX and StableHLO fixtures, make_onnx.py models, the
example MLP, libonnx-testdata node tests).

Usage:
  zb_interp.py FILE.mlir (--inputs DIR | --batch FILE.npz | --seed N)
               [--leading-rows] [--json | --fixed DIGITS] [--func main]
      FILE.mlir printed with --mlir-print-op-generic (e.g. from
      `zb-translate --import-onnx / --import-stablehlo`, optionally through
      `zb-opt --zb-autodiff`); dense values in hex
      (--mlir-print-elementsattrs-with-hex-if-larger=1) or as literals.
      Graph inputs (arguments without zb.param), in argument order, come from
        --inputs DIR   DIR/input_<i>.pb (serialized onnx TensorProto), or
        --batch NPZ    the arrays arr_0, arr_1, ... of a NumPy .npz file
                       (integers widened to int64), or
        --seed N       make_onnx.random_input(N, i, shape) (float64 normal).
      --leading-rows takes the leading rows of an input, as many as the
      argument's first dimension needs (a data file holding more rows than
      one batch, e.g. examples/mlp/data); without it the shape must match.
      Parameters come from the module attribute zb.param_values.
  Prints `loss %.10g` and, for every result marked zb.grad_of (after
  zb-autodiff), `grad NAME %.10g` with the L2 norm of the gradient of the
  parameter NAME (--fixed D: `%.Df` instead); with --json one object
  {"loss": .., "grad_norms": {..}} for check_expected.py.

As a module: evaluate(text, inputs) -> (list of results, list of result
attribute dicts, list of argument names) for use by other test scripts.
All arithmetic is float64 (the f32 types of the IR are ignored), so the
numbers are a float64 reference of the computation the IR describes;
a value whose IR type is bf16 (zb-compile --precision bf16, zb-autocast)
is rounded to bfloat16 where it is produced (through float32, round to
nearest even: the value zb's float32 compute then stores), so an autocast
module evaluates as bfloat16 storage with exact arithmetic between.
Unknown ops, a missing @func or text not in generic op form are errors
(exit status 1 with a message naming the op / function), not a crash.
"""

import argparse
import json
import math
import os
import re
import sys

import numpy as np

FLOAT_TYPES = {"f16": np.float16, "bf16": np.float32, "f32": np.float32,
               "f64": np.float64}
INT_TYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
             "i64": np.int64}


def parse_type(text):
    """'16x4xf32' -> ((16, 4), 'f32'); 'f32' -> ((), 'f32')."""
    parts = text.split("x")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def np_dtype(elt):
    return FLOAT_TYPES.get(elt) or INT_TYPES[elt]


def parse_scalar(text, elt):
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("0x"):  # a float printed by its bits (inf, nan)
        bits = int(text, 16)
        if elt == "f64":
            return np.frombuffer(bits.to_bytes(8, "little"), np.float64)[0]
        if elt == "f16":
            return np.frombuffer(bits.to_bytes(2, "little"), np.float16)[0]
        if elt == "bf16":
            return np.frombuffer((bits << 16).to_bytes(4, "little"),
                                 np.float32)[0]
        return np.frombuffer(bits.to_bytes(4, "little"), np.float32)[0]
    return float(text) if elt in FLOAT_TYPES else int(text)


def parse_dense(body, type_text):
    """The value of dense<BODY> : tensor<TYPE> as a float64 / int array."""
    shape, elt = parse_type(type_text)
    dtype = np_dtype(elt)
    count = int(np.prod(shape)) if shape else 1
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        if elt == "i1":
            data = np.frombuffer(raw, np.uint8)
            if data.size != count:  # bit-packed
                data = np.unpackbits(data, bitorder="little")[:count]
            data = data.astype(np.bool_)
        elif elt == "bf16":  # the top 16 bits of a float32
            data = (np.frombuffer(raw, np.uint16).astype(np.uint32)
                    << 16).view(np.float32)
        else:
            data = np.frombuffer(raw, dtype)
        if data.size == 1:
            data = np.full(count, data[0])
        value = data.reshape(shape)
    elif body.startswith("["):
        flat = [parse_scalar(v, elt)
                for v in re.split(r"[\[\],\s]+", body) if v]
        value = np.array(flat, dtype=dtype).reshape(shape)
    else:
        value = np.full(shape, parse_scalar(body, elt), dtype=dtype)
    return as_compute(value)


def as_compute(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a


def round_bf16(a):
    """float64 -> float32 -> bfloat16 (round to nearest even, NaN kept), as
    float64: the value zb stores for a bf16 result it computed in float32."""
    f = np.asarray(a, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    # uint64 constants: NumPy 1.x promotes a 0-d uint64 with a Python int
    # to float64, which has no shifts.
    c16, one = np.uint64(16), np.uint64(1)
    r = (((u + np.uint64(0x7FFF) + ((u >> c16) & one)) >> c16)
         << c16).astype(np.uint32)
    return np.where(np.isnan(f), f, r.view(np.float32)).astype(np.float64)


def ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


def prop(props, name):
    m = re.search(r"\b%s = ([^,}]*(?:<[^>]*>)?)" % re.escape(name), props)
    return m.group(1).strip() if m else None


def prop_array(props, name):
    m = re.search(r"\b%s = array<i64(?:: ([^>]*))?>" % re.escape(name), props)
    return ints(m.group(1) or "") if m else None


def prop_int(props, name):
    m = re.search(r"\b%s = (-?\d+) : i64" % re.escape(name), props)
    return int(m.group(1)) if m else None


def prop_float(props, name):
    m = re.search(r"\b%s = ([-+0-9.eEinfa]+|0x[0-9A-F]+) : f64" %
                  re.escape(name), props)
    return float(parse_scalar(m.group(1), "f64")) if m else None


_erf = np.vectorize(math.erf, otypes=[np.float64])


def softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def run_op(op, props, args, result_types):
    """Evaluates one zb op; returns the list of its results."""
    shapes = [parse_type(t)[0] for t in result_types]
    elts = [parse_type(t)[1] for t in result_types]
    shape = shapes[0] if shapes else None
    x = args[0] if args else None
    unary = {
        "neg": np.negative, "exp": np.exp, "log": np.log, "tanh": np.tanh,
        "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v), "erf": _erf,
        "relu": lambda v: np.maximum(v, 0.0),
        "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
        "silu": lambda v: v / (1.0 + np.exp(-v)),
    }
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
              "div": np.divide, "pow": np.power, "max": np.maximum}
    if op in unary:
        return [unary[op](x)]
    if op in binary:
        return [binary[op](args[0], args[1])]
    if op == "gelu":
        if (prop(props, "approximate") or '"none"').strip('"') == "tanh":
            return [0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                           (x + 0.044715 * x ** 3)))]
        return [0.5 * x * (1 + _erf(x / math.sqrt(2)))]
    if op == "constant":
        m = re.search(r'value = dense<("0x[0-9A-Fa-f]*"|[^>]*)> : '
                      r'tensor<([^>]*)>', props)
        return [parse_dense(m.group(1), m.group(2))]
    if op == "compare":
        pred = re.search(r'predicate = "(\w+)"', props).group(1)
        fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
              "le": np.less_equal, "gt": np.greater,
              "ge": np.greater_equal}[pred]
        return [fn(args[0], args[1])]
    if op == "select":
        return [np.where(args[0], args[1], args[2])]
    if op == "cast":
        if elts[0] in ("i32", "i64"):  # float -> int truncates toward zero
            return [np.trunc(np.asarray(x, dtype=np.float64)).astype(np.int64)]
        return [np.asarray(x).astype(np.float64)]
    if op in ("matmul", "batch_matmul"):
        a, b = args
        if "transpose_lhs" in props:
            a = np.swapaxes(a, -1, -2)
        if "transpose_rhs" in props:
            b = np.swapaxes(b, -1, -2)
        return [np.matmul(a, b)]
    if op == "broadcast_in_dim":
        dims = prop_array(props, "dims")
        expanded = [1] * len(shape)
        for i, d in enumerate(dims):
            expanded[d] = x.shape[i]
        return [np.broadcast_to(x.reshape(expanded), shape).copy()]
    if op == "reshape":
        return [x.reshape(shape)]
    if op in ("reduce_sum", "reduce_mean", "reduce_max"):
        axes = tuple(prop_array(props, "axes"))
        fn = {"reduce_sum": np.sum, "reduce_mean": np.mean,
              "reduce_max": np.max}[op]
        return [fn(x, axis=axes)]
    if op == "transpose":
        return [np.transpose(x, prop_array(props, "permutation"))]
    if op == "slice":
        start, limit = prop_array(props, "start"), prop_array(props, "limit")
        strides = prop_array(props, "strides")
        return [x[tuple(slice(s, l, st) for s, l, st in
                        zip(start, limit, strides))]]
    if op == "pad":
        low, high = prop_array(props, "low"), prop_array(props, "high")
        interior = prop_array(props, "interior")
        out = np.zeros(shape, dtype=x.dtype)
        out[tuple(slice(lo, lo + (n - 1) * (i + 1) + 1 if n else lo, i + 1)
                  for lo, n, i in zip(low, x.shape, interior))] = x
        return [out]
    if op == "concat":
        return [np.concatenate(args, axis=prop_int(props, "axis"))]
    if op == "split":
        axis = prop_int(props, "axis")
        sizes = [s[axis] for s in shapes]
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    if op == "gather":
        return [args[0][args[1]]]
    if op == "scatter_add":
        upd, idx = args
        out = np.zeros(shape)
        np.add.at(out, idx, upd)
        return [out]
    if op == "one_hot":
        classes = shape[-1]
        return [(x[..., None] == np.arange(classes)).astype(np.float64)]
    if op == "softmax":
        return [softmax(x, prop_int(props, "axis"))]
    if op == "layer_norm":
        eps = prop_float(props, "epsilon")
        eps = 1e-5 if eps is None else eps
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return [(x - mean) / np.sqrt(var + eps) * args[1] + args[2]]
    if op == "rms_norm":
        eps = prop_float(props, "epsilon")
        eps = 1e-6 if eps is None else eps
        return [x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * args[1]]
    if op == "cross_entropy":
        logits, targets = args
        m = logits.max(-1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(-1)) + m[..., 0]
        ignore = prop_int(props, "ignore_index")
        valid = np.ones(targets.shape, dtype=bool) if ignore is None \
            else targets != ignore
        safe = np.where(valid, targets, 0)
        picked = np.take_along_axis(logits, safe[..., None], -1)[..., 0]
        with np.errstate(invalid="ignore"):
            loss = np.array(np.sum((lse - picked) * valid) / np.sum(valid))
        # zb-fuse-cross-entropy's second result: the log-sum-exp per position.
        return [loss, lse] if len(result_types) == 2 else [loss]
    if op in ("attention", "attention_grad"):
        return run_attention(op, props, args, elts)
    if op == "causal_mask":
        fill = prop_float(props, "fill")
        fill = -np.inf if fill is None else fill
        tq, tk = x.shape[-2], x.shape[-1]
        above = np.arange(tk)[None, :] > np.arange(tq)[:, None]
        return [np.where(above, fill, x)]
    raise SystemExit("zb_interp.py: unsupported op zb.%s" % op)


def run_attention(op, props, args, elts):
    """zb.attention and zb.attention_grad in float64, as ZBOps.td defines
    them: the forward as written (softmax, P v); the gradient with the
    probabilities recomputed from q and k (not from the saved lse) and
    dS = P (dP - Di + d lse), Di = rowsum(dO O) (the op's definition: in
    exact arithmetic rowsum(dP P); with bfloat16 values the two round
    differently, and the gradients that are zero in exact arithmetic, key
    biases, are their roundoff). Values typed bf16 are rounded where the op
    rounds them: the products' results (q k^T, P for P v, dP, dS for dq and
    dk)."""
    bf16 = elts[0] == "bf16"
    rnd = round_bf16 if bf16 else (lambda a: a)
    if op == "attention":
        q, k, v = args[:3]
        mask = args[3] if len(args) > 3 else None
        p, lse = attention_probs_rounded(props, q, k, mask, bf16)
        return [np.matmul(rnd(p), v), lse]
    seg = re.search(r"operandSegmentSizes = array<i32: ([^>]*)>", props)
    seg = ints(seg.group(1)) if seg else [1] * 6 + [0, 0]
    q, k, v, o, _lse, do = args[:6]
    rest = list(args[6:])
    mask = rest.pop(0) if seg[6] else None
    dlse = rest.pop(0) if seg[7] else None
    scale = prop_float(props, "scale")
    p, _ = attention_probs_rounded(props, q, k, mask, bf16)
    dv = np.matmul(np.swapaxes(rnd(p), -1, -2), do)
    dp = rnd(np.matmul(do, np.swapaxes(v, -1, -2)))
    di = np.sum(do * o, axis=-1, keepdims=True)
    if dlse is not None:
        di = di - dlse[..., None]
    ds = p * (dp - di)
    ds = rnd(ds * scale)
    return [np.matmul(ds, k), np.matmul(np.swapaxes(ds, -1, -2), q), dv]


def attention_probs_rounded(props, q, k, mask, bf16):
    scale = prop_float(props, "scale")
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    if bf16:
        s = round_bf16(s)
    s = s * scale
    if mask is not None:
        s = s + mask
    if re.search(r"\bcausal\b", props):
        tq, tk = s.shape[-2], s.shape[-1]
        s = np.where(np.arange(tk)[None, :] > np.arange(tq)[:, None],
                     -np.inf, s)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = np.sum(e, axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (np.log(total) + m)[..., 0]
    return e / np.where(total == 0, 1.0, total), lse


OP_RE = re.compile(
    r'^(?:(%[\w#]+)(?::(\d+))? = )?"([\w.]+)"\((.*?)\)'
    r'(?: <\{(.*)\}>)?(?: \{.*\})? : \((.*)\) -> (.*)$')


def split_types(text):
    """'(tensor<..>, tensor<..>)' or 'tensor<..>' -> ['..', '..']."""
    return re.findall(r"tensor<([^>]*)>", text)


def evaluate(text, inputs, func="main"):
    """Runs @func; `inputs(i, shape, elt)` gives graph input i. Returns
    (results, result attribute texts, argument names)."""
    params = {}
    pv = text.find("zb.param_values = {")
    if pv >= 0:  # the dictionary up to its matching brace
        begin = end = pv + len("zb.param_values = {")
        depth = 1
        while depth:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        for pm in re.finditer(r'("[^"]*"|[\w.$-]+) = dense<("0x[0-9A-Fa-f]*"|'
                              r'[^>]*)> : tensor<([^>]*)>',
                              text[begin:end - 1]):
            params[pm.group(1).strip('"')] = parse_dense(pm.group(2),
                                                         pm.group(3))
    if '"func.func"' not in text:
        raise SystemExit("zb_interp.py: the module is not in generic op form "
                         "(print it with --mlir-print-op-generic)")
    if 'sym_name = "%s"' % func not in text:
        raise SystemExit("zb_interp.py: no function @%s" % func)
    start = text.index('sym_name = "%s"' % func)
    header = text[text.rindex('"func.func"', 0, start):start + 10]
    arg_attrs = re.search(r"arg_attrs = \[(.*?)\], function_type", header,
                          re.S)
    arg_list = re.findall(r"\{([^{}]*)\}", arg_attrs.group(1)) \
        if arg_attrs else []
    res_attrs = re.search(r"res_attrs = \[(.*?)\], sym_name", header, re.S)
    res_list = re.findall(r"\{([^{}]*)\}", res_attrs.group(1)) \
        if res_attrs else []
    body = text[start:]
    bb = re.search(r"\^bb0\((.*?)\):\n", body) or \
        re.search(r"()\(\{\n", body)  # no arguments: no block header
    env = {}
    names = []
    graph_inputs = 0
    for i, am in enumerate(re.finditer(r"(%\w+): tensor<([^>]*)>",
                                       bb.group(1))):
        attrs = arg_list[i] if i < len(arg_list) else ""
        nm = re.search(r'zb\.name = "([^"]*)"', attrs)
        name = nm.group(1) if nm else am.group(1)
        names.append(name)
        shape, elt = parse_type(am.group(2))
        if re.search(r"zb\.param\b(?!_)", attrs):
            if name not in params:
                raise SystemExit("zb_interp.py: parameter '%s' has no value "
                                 "in zb.param_values" % name)
            value = params[name]
        else:
            value = as_compute(inputs(graph_inputs, shape, elt))
            graph_inputs += 1
        if tuple(value.shape) != shape:
            raise SystemExit("zb_interp.py: argument '%s' is %s, the input "
                             "has shape %s" % (name, shape, value.shape))
        env[am.group(1)] = value

    for line in body[bb.end():].splitlines():
        line = line.strip()
        line = re.sub(r" loc\(.*\)$", "", line)
        m = OP_RE.match(line)
        if not m:
            continue
        res, count, op, operands, props, in_types, out_types = m.groups()
        args = [env[a] for a in re.findall(r"%[\w#]+", operands)]
        if op == "func.return":
            return args, res_list, names
        if not op.startswith("zb."):
            raise SystemExit("zb_interp.py: unsupported op %s" % op)
        types = split_types(out_types)
        results = run_op(op[3:], props or "", args, types)
        for k, (value, t) in enumerate(zip(results, types)):
            shape, elt = parse_type(t)
            value = as_compute(value)
            if elt == "bf16":
                value = round_bf16(value)
            if tuple(value.shape) != shape:
                raise SystemExit("zb_interp.py: %s computed shape %s, the IR "
                                 "says %s" % (line, value.shape, shape))
            key = res if count is None else "%s#%d" % (res, k)
            env[key] = value
    raise SystemExit("zb_interp.py: no return in @%s" % func)


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--inputs", metavar="DIR",
                        help="graph inputs from DIR/input_<i>.pb")
    source.add_argument("--batch", metavar="NPZ",
                        help="graph inputs from arr_<i> of a .npz file")
    source.add_argument("--seed", type=int,
                        help="graph inputs make_onnx.random_input(SEED, i, "
                             "shape)")
    ap.add_argument("--leading-rows", action="store_true",
                    help="take an input's leading rows (as many as the "
                         "argument's first dimension)")
    ap.add_argument("--func", default="main")
    out = ap.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--fixed", type=int, metavar="DIGITS",
                     help="print with %%.<DIGITS>f instead of %%.10g")
    args = ap.parse_args()

    if args.batch:
        with np.load(args.batch) as npz:
            batch = {k: v.astype(np.int64) if v.dtype.kind in "iu" else v
                     for k, v in npz.items()}

    def inputs(i, shape, elt):
        if args.seed is not None:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import make_onnx
            return make_onnx.random_input(args.seed, i, shape)
        if args.batch:
            if "arr_%d" % i not in batch:
                raise SystemExit("zb_interp.py: %s has no arr_%d for graph "
                                 "input #%d" % (args.batch, i, i))
            value = batch["arr_%d" % i]
        else:
            value = load_tensor(os.path.join(args.inputs, "input_%d.pb" % i))
        if args.leading_rows and shape:
            value = value[:shape[0]]
        return value

    with open(args.file) as f:
        results, res_attrs, names = evaluate(f.read(), inputs, args.func)
    loss = float(results[0])
    grads = {}
    for k, value in enumerate(results[1:], start=1):
        attrs = res_attrs[k] if k < len(res_attrs) else ""
        g = re.search(r"zb\.grad_of = (\d+)", attrs)
        if g:
            grads[names[int(g.group(1))]] = float(np.sqrt(np.sum(value ** 2)))
    if args.json:
        json.dump({"loss": loss, "grad_norms": grads}, sys.stdout, indent=1,
                  sort_keys=True)
        print()
        return
    fmt = "%.10g" if args.fixed is None else "%%.%df" % args.fixed
    print("loss " + fmt % loss)
    for name in sorted(grads):
        print(("grad %s " + fmt) % (name, grads[name]))


if __name__ == "__main__":
    main()
