#!/usr/bin/python3
"""Writes small ONNX models for the importer's lit tests.

Usage: make_onnx.py CASE OUT.onnx   (run with %python, Debian's python3 + onnx)
       make_onnx.py --expect CASE SEED   prints `loss %.6f`, the case's loss in
                    NumPy float64 for the inputs random_input(SEED, i, shape)

Each case is one function below; the list is printed by `make_onnx.py --list`.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def model(nodes, inputs, output, initializers=(), opset=17):
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, F32, s) for n, s in inputs],
        [helper.make_tensor_value_info(output, F32, [])],
        initializer=list(initializers))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)],
        producer_name="zb-test")


def init(name, shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def unsupported_op():
    # node #3 is an op the importer does not know
    return model([
        helper.make_node("Relu", ["x"], ["a"], name="Relu_0"),
        helper.make_node("Neg", ["a"], ["b"], name="Neg_1"),
        helper.make_node("Exp", ["b"], ["c"], name="Exp_2"),
        helper.make_node("Softplus", ["c"], ["d"], name="Softplus_3"),
        helper.make_node("ReduceMean", ["d"], ["loss"], keepdims=0,
                         name="ReduceMean_4"),
    ], [("x", [4, 8])], "loss")


def unsupported_pow():
    # a computed exponent of another shape than the base
    return model([
        helper.make_node("ReduceMean", ["x"], ["e"], axes=[1], keepdims=0,
                         name="mean"),
        helper.make_node("Pow", ["x", "e"], ["c"], name="cube"),
        helper.make_node("ReduceSum", ["c"], ["loss"], keepdims=0, name="sum"),
    ], [("x", [4, 8])], "loss")


def valid_small():
    # also the source of the truncated / corrupt files
    return model([
        helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, name="fc"),
        helper.make_node("ReduceMean", ["y"], ["loss"], keepdims=0, name="mean"),
    ], [("x", [4, 8])], "loss", [init("w", [16, 8]), init("b", [16], 1)])


def broadcast_add():
    # [2,3,4] + [3,1] -> [2,3,4]; [4] * scalar constant; keepdims reduction
    return model([
        helper.make_node("Add", ["x", "y"], ["s"], name="add"),
        helper.make_node("Constant", [], ["half"], name="half",
                         value=helper.make_tensor("v", F32, [], [0.5])),
        helper.make_node("Mul", ["z", "half"], ["zh"], name="scale"),
        helper.make_node("Sub", ["s", "zh"], ["d"], name="sub"),
        helper.make_node("ReduceSum", ["d", "axes"], ["r"], keepdims=1,
                         name="sum"),
        helper.make_node("Div", ["r", "d"], ["q"], name="div"),
        helper.make_node("ReduceMean", ["q"], ["loss"], axes=[0, -1, 1],
                         keepdims=0, name="mean"),
    ], [("x", [2, 3, 4]), ("y", [3, 1]), ("z", [4])], "loss",
        [numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")])


def gemm_transb():
    # Y = 0.5 * A B^T + 2 * C with C [1, 16] broadcast over the rows
    return model([
        helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5,
                         beta=2.0, name="gemm"),
        helper.make_node("MatMul", ["y", "v"], ["z"], name="matmul"),
        helper.make_node("Tanh", ["z"], ["t"], name="tanh"),
        helper.make_node("Identity", ["t"], ["u"], name="identity"),
        helper.make_node("ReduceMean", ["u"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("a", [4, 8])], "loss",
        [init("w", [16, 8]), init("c", [1, 16], 1), init("v", [16, 2], 2)])


def undefined_value():
    return model([
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Add", ["a", "nowhere"], ["b"], name="add"),
        helper.make_node("ReduceMean", ["b"], ["loss"], keepdims=0, name="m"),
    ], [("x", [4])], "loss")


def dynamic_shape():
    return model([
        helper.make_node("ReduceMean", ["x"], ["loss"], keepdims=0, name="m"),
    ], [("x", ["batch", 4])], "loss")


def not_scalar():
    return model([helper.make_node("Relu", ["x"], ["loss"], name="relu")],
                 [("x", [4, 2])], "loss")


def shape_mismatch():
    return model([
        helper.make_node("Gemm", ["x", "w"], ["y"], name="fc"),
        helper.make_node("ReduceMean", ["y"], ["loss"], keepdims=0, name="m"),
    ], [("x", [4, 8])], "loss", [init("w", [16, 8])])


def wrong_output_type():
    m = model([
        helper.make_node("ReduceMean", ["x"], ["loss"], keepdims=1, name="m"),
    ], [("x", [4, 2])], "loss")
    m.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 1
    return m


def int_loss():
    m = model([
        helper.make_node("Add", ["i", "i"], ["j"], name="add_ints"),
        helper.make_node("ReduceMean", ["j"], ["loss"], keepdims=0, name="m"),
    ], [("i", [4])], "loss")
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
    return m


def opset18_reduce():
    # ReduceMean-18 takes its axes as an input; keepdims=1; loss of shape [1, 1]
    m = onnx.helper.make_model(onnx.helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "axes"], ["loss"], keepdims=1,
                          name="mean")], "test",
        [helper.make_tensor_value_info("x", F32, [4, 8])],
        [helper.make_tensor_value_info("loss", F32, [1, 1])],
        initializer=[numpy_helper.from_array(np.array([0, 1], np.int64),
                                             "axes")]),
        opset_imports=[helper.make_opsetid("", 18)])
    return m


def computed_cos():
    # Cos is only folded (rotary tables); on a computed tensor it is an error
    return model([
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Cos", ["r"], ["c"], name="cos"),
        helper.make_node("ReduceMean", ["c"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss")


def bad_reshape():
    # 32 elements cannot be [5, -1]
    return model([
        helper.make_node("Constant", [], ["shape"], name="shape",
                         value=numpy_helper.from_array(
                             np.array([5, -1], dtype=np.int64), "v")),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
        helper.make_node("ReduceMean", ["y"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss")


# Raw bytes rather than models.
def truncated():
    return valid_small().SerializeToString()[:200]


def empty():
    return b""


def not_onnx():
    return b"func.func @main() {\n  return\n}\n"


def float64_param():
    # a float32 graph whose weight initializer is float64 (Cast to float32)
    w = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal([16, 8]), "w")
    return model([
        helper.make_node("Cast", ["w"], ["w32"], to=F32, name="cast"),
        helper.make_node("MatMul", ["x", "w32"], ["y"], name="mm"),
        helper.make_node("ReduceMean", ["y"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 16])], "loss", [w])


def _gelu(approximate):
    # Gelu is an ONNX op since opset 20 (torch.onnx.export from opset 20)
    return model([
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Gelu", ["h"], ["g"], approximate=approximate,
                         name="gelu"),
        helper.make_node("ReduceMean", ["g"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss", [init("w", [8, 8])], opset=20)


def opset99():
    # an opset newer than zb knows
    m = valid_small()
    m.opset_import[0].version = 99
    return m


def layernorm_opset11():
    # LayerNormalization is an ONNX op since opset 17
    return model([
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["h"],
                         name="ln"),
        helper.make_node("ReduceMean", ["h"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss", [init("g", [8]), init("b", [8], 1)], opset=11)


def legacy_broadcast():
    # opset 6: Add broadcasts b [8] along axis 1 of h [4, 8] only with
    # broadcast=1
    return model([
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["y"], broadcast=1, axis=1,
                         name="add"),
        helper.make_node("ReduceMean", ["y"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss", [init("w", [8, 8]), init("b", [8], 1)],
        opset=6)


def gelu_opset19():
    # Gelu is an ONNX op since opset 20; zb's handler starts there too
    m = _gelu("none")
    m.opset_import[0].version = 19
    return m


def gelu_none():
    return _gelu("none")


def gelu_tanh():
    return _gelu("tanh")


def _ref_attr(name, ref, type_):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, type_
    return a


def local_function():
    # Model-local functions (as exporters write modules): LinearTanh(x, w)
    # = tanh(x @ w) * alpha (alpha an attribute reference; absent -> the
    # Constant... default is not allowed, so every call passes it), Block(x,
    # w1, w2) = LinearTanh(LinearTanh(x, w1), w2) nested, called twice.
    scale = helper.make_node("Constant", [], ["alpha_c"], name="alpha")
    scale.attribute.append(_ref_attr("value_float", "alpha",
                                     onnx.AttributeProto.FLOAT))
    linear = helper.make_function(
        "zb.test", "LinearTanh", ["x", "w"], ["y"], [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Tanh", ["h"], ["t"], name="tanh"),
            scale,
            helper.make_node("Mul", ["t", "alpha_c"], ["y"], name="scale"),
        ], [helper.make_opsetid("", 17)], ["alpha"])
    block = helper.make_function(
        "zb.test", "Block", ["x", "w1", "w2"], ["y"], [
            helper.make_node("LinearTanh", ["x", "w1"], ["h"], alpha=2.0,
                             domain="zb.test", name="first"),
            helper.make_node("LinearTanh", ["h", "w2"], ["y"], alpha=0.5,
                             domain="zb.test", name="second"),
        ], [helper.make_opsetid("", 17), helper.make_opsetid("zb.test", 1)])
    m = model([
        helper.make_node("Block", ["x", "w1", "w2"], ["a"], domain="zb.test",
                         name="block_0"),
        helper.make_node("Block", ["a", "w3", "w3"], ["b"], domain="zb.test",
                         name="block_1"),
        helper.make_node("ReduceMean", ["b"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss",
        [init("w1", [8, 8], 1), init("w2", [8, 8], 2), init("w3", [8, 8], 3)])
    m.opset_import.append(helper.make_opsetid("zb.test", 1))
    m.functions.extend([linear, block])
    return m


def recursive_function():
    # A local function that calls itself: refused, not inlined forever.
    loop = helper.make_function(
        "zb.test", "Loop", ["x"], ["y"], [
            helper.make_node("Loop", ["x"], ["y"], domain="zb.test",
                             name="again")],
        [helper.make_opsetid("zb.test", 1)])
    m = model([
        helper.make_node("Loop", ["x"], ["a"], domain="zb.test", name="start"),
        helper.make_node("ReduceMean", ["a"], ["loss"], keepdims=0,
                         name="mean"),
    ], [("x", [4, 8])], "loss")
    m.opset_import.append(helper.make_opsetid("zb.test", 1))
    m.functions.extend([loop])
    return m


def _mean_loss(x):
    return helper.make_node("ReduceMean", [x], ["loss"], keepdims=0,
                            name="mean")


def pad_reflect():
    # a Pad mode zb does not implement
    return model([
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect",
                         name="pad_reflect"),
        _mean_loss("p"),
    ], [("x", [4, 8])], "loss",
        [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "pads")])


def pad_crop_too_much():
    # negative pads that remove more than the axis holds
    return model([
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad_crop"),
        _mean_loss("p"),
    ], [("x", [4, 8])], "loss",
        [numpy_helper.from_array(np.array([0, -5, 0, -5], np.int64), "pads")])


def _with_int_input(nodes, extra_inits=()):
    graph = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info("x", F32, [4, 8]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [4, 8])],
        [helper.make_tensor_value_info("loss", F32, [])],
        initializer=list(extra_inits))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)],
        producer_name="zb-test")


def gathernd_data_indices():
    # GatherND whose indices are computed from data
    return _with_int_input([
        helper.make_node("Unsqueeze", ["ids", "axes"], ["idx"], name="unsq"),
        helper.make_node("GatherND", ["x", "idx"], ["g"], name="gather_nd"),
        _mean_loss("g"),
    ], [numpy_helper.from_array(np.array([-1], np.int64), "axes")])


def gather_elements_out_of_range():
    # a constant index outside the data
    return model([
        helper.make_node("GatherElements", ["x", "idx"], ["g"], axis=1,
                         name="gather_el"),
        _mean_loss("g"),
    ], [("x", [4, 8])], "loss",
        [numpy_helper.from_array(np.full((4, 2), 9, np.int64), "idx")])


def cumsum_bool():
    # a cumulative sum of booleans
    return _with_int_input([
        helper.make_node("Cast", ["ids"], ["b"], to=TensorProto.BOOL,
                         name="to_bool"),
        helper.make_node("CumSum", ["b", "axis"], ["c"], name="cumsum_bool"),
        helper.make_node("Cast", ["c"], ["f"], to=F32, name="to_float"),
        helper.make_node("Mul", ["x", "f"], ["y"], name="mul"),
        _mean_loss("y"),
    ], [numpy_helper.from_array(np.array(1, np.int64), "axis")])


def and_on_floats():
    # a logic op on float tensors
    return model([
        helper.make_node("And", ["x", "x"], ["a"], name="and_floats"),
        helper.make_node("Cast", ["a"], ["f"], to=F32, name="to_float"),
        _mean_loss("f"),
    ], [("x", [4, 8])], "loss")


def hf_ops():
    # the ops of Hugging Face exports on data, in one valid model (a fuzz
    # seed): a padding mask and position ids from integer data, a label
    # shift, sdpa's NaN guard, logic, GatherElements/GatherND
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    return _with_int_input([
        helper.make_node("Equal", ["ids", "zero"], ["is_pad"], name="eq"),
        helper.make_node("Not", ["is_pad"], ["keep"], name="not"),
        helper.make_node("Cast", ["keep"], ["keep_i"], to=TensorProto.INT64,
                         name="to_int"),
        helper.make_node("CumSum", ["keep_i", "one"], ["pos"], name="cumsum"),
        helper.make_node("Mul", ["pos", "keep_i"], ["pos_m"], name="mul_int"),
        helper.make_node("GatherElements", ["table", "pos_m"], ["pe"], axis=1,
                         name="gather_el"),
        helper.make_node("Pad", ["ids", "pads", "ignore"], ["padded"],
                         name="label_pad"),
        helper.make_node("Slice", ["padded", "one1", "end", "one1"],
                         ["shifted"], name="label_shift"),
        helper.make_node("GreaterOrEqual", ["shifted", "zero"], ["valid"],
                         name="ge"),
        helper.make_node("GatherND", ["valid", "nd"], ["valid_t"],
                         name="gather_nd"),
        helper.make_node("Xor", ["keep", "valid_t"], ["x1"], name="xor"),
        helper.make_node("And", ["x1", "keep"], ["both"], name="and"),
        helper.make_node("IsNaN", ["x"], ["nan"], name="isnan"),
        helper.make_node("Where", ["nan", "fzero", "x"], ["clean"],
                         name="nan_guard"),
        helper.make_node("Where", ["both", "clean", "pe"], ["y"],
                         name="select"),
        _mean_loss("y"),
    ], [i64("zero", 0), i64("one", 1), i64("one1", [1]), i64("end", [9]),
        i64("pads", [0, 0, 0, 1]), i64("ignore", -100),
        numpy_helper.from_array(np.array(0.0, np.float32), "fzero"),
        init("table", [4, 9]),
        i64("nd", [[[r, c] for c in range(8)] for r in range(4)])])


CASES = {f.__name__: f for f in [
    unsupported_op, unsupported_pow, valid_small, broadcast_add, gemm_transb,
    undefined_value, dynamic_shape, not_scalar, shape_mismatch, int_loss,
    opset18_reduce, wrong_output_type, computed_cos, bad_reshape, truncated,
    empty, not_onnx, float64_param, gelu_none, gelu_tanh, opset99,
    local_function, recursive_function, layernorm_opset11, gelu_opset19, legacy_broadcast,
    pad_reflect, pad_crop_too_much, gathernd_data_indices,
    gather_elements_out_of_range, cumsum_bool, and_on_floats, hf_ops]}


def random_input(seed, index, shape):
    """Graph input #index for numerical checks (float64)."""
    return np.random.default_rng(1000 * seed + index).standard_normal(shape)


def _inits(m):
    return {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in m.graph.initializer}


def expected_loss(case, seed):
    """The loss of a case's model in float64, written with NumPy."""
    if case == "gemm_transb":
        p = _inits(gemm_transb())
        a = random_input(seed, 0, (4, 8))
        y = 0.5 * a @ p["w"].T + 2.0 * p["c"]
        return np.mean(np.tanh(y @ p["v"]))
    if case == "broadcast_add":
        x = random_input(seed, 0, (2, 3, 4))
        y = random_input(seed, 1, (3, 1))
        z = random_input(seed, 2, (4,))
        d = x + y - 0.5 * z
        return np.mean(d.sum(axis=1, keepdims=True) / d)
    if case == "valid_small":
        p = _inits(valid_small())
        x = random_input(seed, 0, (4, 8))
        return np.mean(x @ p["w"].T + p["b"])
    if case in ("gelu_none", "gelu_tanh"):
        import math
        p = _inits(_gelu("none"))
        h = random_input(seed, 0, (4, 8)) @ p["w"]
        if case == "gelu_none":
            erf = np.vectorize(math.erf, otypes=[np.float64])
            g = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        else:
            g = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                       (h + 0.044715 * h ** 3)))
        return np.mean(g)
    if case == "local_function":
        p = _inits(local_function())

        def block(x, w1, w2):
            return np.tanh(np.tanh(x @ w1) * 2.0 @ w2) * 0.5
        x = random_input(seed, 0, (4, 8))
        return np.mean(block(block(x, p["w1"], p["w2"]), p["w3"], p["w3"]))
    raise SystemExit("no expected loss for " + case)


# Cases newer than Debian's onnx package knows (its checker stops at opset
# 19; Gelu is opset 20): written unchecked.
NEWER_OPSET = {"gelu_none", "gelu_tanh", "opset99", "gelu_opset19"}

# Cases the ONNX checker itself rejects (the importer must too, cleanly).
INVALID = {"undefined_value", "int_loss", "opset18_reduce",
           "wrong_output_type", "recursive_function", "layernorm_opset11"}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--expect":
        print("loss %.6f" % expected_loss(sys.argv[2], int(sys.argv[3])))
        return
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: make_onnx.py {%s} OUT.onnx" % "|".join(CASES))
    m = CASES[sys.argv[1]]()
    if isinstance(m, bytes):
        with open(sys.argv[2], "wb") as f:
            f.write(m)
        return
    if sys.argv[1] not in INVALID | NEWER_OPSET:
        onnx.checker.check_model(m)
    onnx.save(m, sys.argv[2])


if __name__ == "__main__":
    main()
