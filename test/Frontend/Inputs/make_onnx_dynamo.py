#!/usr/bin/python3
"""Writes small ONNX models in the shape of what torch.onnx.export (PyTorch 2.x,
dynamo exporter) writes, for the importer's tests of external data and of the
exporter's metadata, where the committed fixtures (Inputs/onnx-dynamo/) are
the wrong size or would have to be broken by hand.

Usage: make_onnx_dynamo.py CASE OUTDIR   (Debian's python3 + onnx 1.12)
Writes OUTDIR/model.onnx and whatever data files the case needs.

The model of every case: loss = mean((x @ W)^2) with x [4, 8] a graph input
and W [8, 2] an initializer (named `fc.weight`), stored as the case says.

External data (W's bytes outside model.onnx):
  ext_ok          location "model.onnx.data", offset 64 (after 64 bytes of
                  another tensor's), length 64
  ext_subdir      location "weights/w.bin" (a subdirectory is fine)
  ext_missing     location "model.onnx.data", no such file
  ext_short       the file holds 100 bytes, W needs [64, 128)
  ext_length      length 32 (W needs 64 bytes)
  ext_offset      offset "-8"
  ext_parent      location "../w.data" (outside the model's directory)
  ext_absolute    location "/etc/hostname"
  ext_symlink     location "link.data", a symbolic link to ../w.data
  ext_nolocation  no location entry
Exporter metadata (metadata_props that libonnx 1.12 does not know, added
as the unknown fields protobuf keeps):
  meta_buffer     W's value_info says InputSpec.kind BUFFER: a constant
  meta_folded_two W is an initializer `val_3` folded from the parameters
                  `a.weight` and `b.weight` (graph signature): an error
  meta_folded_bad `val_3` (2 * P) folded from parameter `p.weight` that
                  the model also uses directly: no transpose/reshape of it
  meta_folded_zero `val_3` [2, 8] folded from an all-zero `p.weight`
                  [8, 2] that the model also uses: transpose and reshape
                  fit, a warning, one parameter
  opset22         the model at opset 22 (newer than zb knows)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
W = (np.arange(16, dtype=np.float32).reshape(8, 2) - 7.5) / 8.0


def graph(w_name="fc.weight", extra_nodes=(), extra_inits=(), x_uses=None):
    nodes = [
        helper.make_node("MatMul", ["x", x_uses or w_name], ["y"], name="mm"),
        helper.make_node("Mul", ["y", "y"], ["y2"], name="sq"),
        helper.make_node("ReduceMean", ["y2"], ["loss"], keepdims=0,
                         name="mean"),
    ]
    return helper.make_graph(
        list(extra_nodes) + nodes, "dynamo_like",
        [helper.make_tensor_value_info("x", F32, [4, 8])],
        [helper.make_tensor_value_info("loss", F32, [])],
        initializer=list(extra_inits))


def make_model(g, opset=20):
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="zb-test", ir_version=8)


def external(tensor, location, offset=None, length=None):
    """Marks `tensor` as stored in `location` (its raw_data cleared)."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entries = [("location", location)] if location is not None else []
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = tensor.external_data.add()
        e.key, e.value = k, v
    return tensor


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def with_metadata(message, field, props):
    """`message` with metadata_props (field number `field`) appended as raw
    protobuf fields: onnx 1.12's classes do not have them."""
    data = message.SerializeToString()
    for k, v in props:
        entry = onnx.StringStringEntryProto(key=k, value=v).SerializeToString()
        data += varint(field << 3 | 2) + varint(len(entry)) + entry
    copy = type(message)()
    copy.ParseFromString(data)
    return copy


def signature(lines):
    return ("pkg.torch.export.ExportedProgram.graph_signature",
            "\n# inputs\n" + "".join(l + "\n" for l in lines) +
            "x: USER_INPUT\n\n# outputs\nloss: USER_OUTPUT\n")


def set_graph_metadata(model, props):
    model.graph.CopyFrom(with_metadata(model.graph, 16, props))


def value_info(name, shape, props):
    return with_metadata(helper.make_tensor_value_info(name, F32, shape), 4,
                         props)


def write(out, model, files=()):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for name, data in files:
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def ext_case(case, out):
    other = np.full(16, 9.0, np.float32).tobytes()  # someone else's bytes
    w = W.tobytes()
    t = numpy_helper.from_array(W, "fc.weight")
    files = [("model.onnx.data", other + w)]
    if case == "ext_ok":
        external(t, "model.onnx.data", 64, 64)
    elif case == "ext_subdir":
        external(t, "weights/w.bin", 0, 64)
        files = [("weights/w.bin", w)]
    elif case == "ext_missing":
        external(t, "model.onnx.data", 64, 64)
        files = []
    elif case == "ext_short":
        external(t, "model.onnx.data", 64, 64)
        files = [("model.onnx.data", (other + w)[:100])]
    elif case == "ext_length":
        external(t, "model.onnx.data", 64, 32)
    elif case == "ext_offset":
        external(t, "model.onnx.data", -8, 64)
    elif case == "ext_parent":
        external(t, "../w.data", 0, 64)
        files = [("../w.data", w)]
    elif case == "ext_absolute":
        external(t, "/etc/hostname", 0, 64)
    elif case == "ext_symlink":
        external(t, "link.data", 0, 64)
        files = [("../w.data", w)]
    elif case == "ext_nolocation":
        external(t, None, 0, 64)
    write(out, make_model(graph(extra_inits=[t])), files)
    if case == "ext_symlink":
        link = os.path.join(out, "link.data")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink("../w.data", link)


def meta_case(case, out):
    if case == "meta_buffer":
        g = graph(extra_inits=[numpy_helper.from_array(W, "fc.weight")])
        g.value_info.append(value_info("fc.weight", [8, 2], [
            ("pkg.torch.export.graph_signature.InputSpec.kind", "BUFFER")]))
        m = make_model(g)
        set_graph_metadata(m, [signature(["b_fc_weight: BUFFER "
                                          "target='fc.weight' "
                                          "persistent=True"])])
    elif case == "meta_folded_two":
        g = graph(w_name="val_3",
                  extra_inits=[numpy_helper.from_array(W, "val_3")])
        g.value_info.append(value_info("val_3", [8, 2], [
            ("pkg.onnxscript.optimizer.folded_from",
             "['a.weight', 'b.weight', 'mul']")]))
        m = make_model(g)
        set_graph_metadata(m, [signature([
            "p_a_weight: PARAMETER target='a.weight'",
            "p_b_weight: PARAMETER target='b.weight'"])])
    elif case == "meta_folded_bad":
        # y = x @ val_3 with val_3 = 2 * p.weight, and p.weight used too
        p = numpy_helper.from_array(W, "p.weight")
        v = numpy_helper.from_array(2 * W, "val_3")
        g = graph(w_name="val_3", extra_inits=[p, v])
        g.node.append(helper.make_node("ReduceSum", ["p.weight"], ["ps"],
                                       keepdims=0, name="psum"))
        g.node.append(helper.make_node("Add", ["loss_raw", "ps"], ["loss"],
                                       name="add"))
        g.node[-3].output[0] = "loss_raw"  # the mean
        g.value_info.append(value_info("p.weight", [8, 2], [
            ("pkg.torch.export.graph_signature.InputSpec.kind",
             "PARAMETER")]))
        g.value_info.append(value_info("val_3", [8, 2], [
            ("pkg.onnxscript.optimizer.folded_from", "['p.weight']")]))
        m = make_model(g)
        set_graph_metadata(m, [signature([
            "p_p_weight: PARAMETER target='p.weight'"])])
    elif case == "meta_folded_zero":
        # a tied copy val_3 [2, 8] of an all-zero p.weight [8, 2]: transpose
        # and reshape both fit by value
        p = numpy_helper.from_array(np.zeros((8, 2), np.float32), "p.weight")
        v = numpy_helper.from_array(np.zeros((2, 8), np.float32), "val_3")
        g = graph(w_name="p.weight", extra_inits=[p, v])
        g.node.append(helper.make_node("MatMul", ["val_3", "x2"], ["z"],
                                       name="mm2"))
        g.node.append(helper.make_node("ReduceSum", ["z"], ["zs"],
                                       keepdims=0, name="zsum"))
        g.node.append(helper.make_node("Add", ["loss_raw", "zs"], ["loss"],
                                       name="add"))
        g.node[-4].output[0] = "loss_raw"  # the mean
        g.input.append(helper.make_tensor_value_info("x2", F32, [8, 3]))
        g.value_info.append(value_info("p.weight", [8, 2], [
            ("pkg.torch.export.graph_signature.InputSpec.kind",
             "PARAMETER")]))
        g.value_info.append(value_info("val_3", [2, 8], [
            ("pkg.onnxscript.optimizer.folded_from", "['p.weight']")]))
        m = make_model(g)
        set_graph_metadata(m, [signature([
            "p_p_weight: PARAMETER target='p.weight'"])])
    elif case == "opset22":
        m = make_model(graph(extra_inits=[numpy_helper.from_array(
            W, "fc.weight")]), opset=22)
    write(out, m)


CASES = ["ext_ok", "ext_subdir", "ext_missing", "ext_short", "ext_length",
         "ext_offset", "ext_parent", "ext_absolute", "ext_symlink",
         "ext_nolocation", "meta_buffer", "meta_folded_two",
         "meta_folded_bad", "meta_folded_zero", "opset22"]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: make_onnx_dynamo.py {%s} OUTDIR" % "|".join(CASES))
    case, out = sys.argv[1], sys.argv[2]
    (ext_case if case.startswith("ext_") else meta_case)(case, out)


if __name__ == "__main__":
    main()
