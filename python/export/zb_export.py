"""Helpers to export PyTorch training graphs (forward + loss) to ONNX for zb.

Run with Debian's /usr/bin/python3 (torch 1.13, onnx 1.12, numpy 1.24).

  export_training_graph(module, example_inputs, input_names, path)
      exports `module(*example_inputs)` (which must return the scalar loss)
      with the parameters as named initializers (their torch names, e.g.
      `fc1.weight`), static shapes, constant folding on, opset 17.
  save_inputs(directory, arrays)
      writes input_0.pb, input_1.pb, ... (serialized onnx TensorProto, the
      layout of onnx's backend test data), one per graph input, in order.
  load_inputs(directory) -> list of numpy arrays (the reverse).
  describe(path) -> str: the graph inputs, initializers and node list.
"""

import os

import numpy as np
import onnx
from onnx import numpy_helper

OPSET = 17


def export_training_graph(module, example_inputs, input_names, path,
                          opset=OPSET):
    import torch

    module.eval()
    with torch.no_grad():
        torch.onnx.export(
            module,
            tuple(example_inputs),
            path,
            input_names=list(input_names),
            output_names=["loss"],
            opset_version=opset,
            do_constant_folding=True,
            keep_initializers_as_inputs=False,
            export_params=True,
        )
    model = onnx.load(path)
    onnx.checker.check_model(model)
    return model


def save_inputs(directory, arrays):
    os.makedirs(directory, exist_ok=True)
    for i, array in enumerate(arrays):
        tensor = numpy_helper.from_array(np.ascontiguousarray(array))
        with open(os.path.join(directory, "input_%d.pb" % i), "wb") as f:
            f.write(tensor.SerializeToString())


def load_inputs(directory):
    arrays = []
    i = 0
    while True:
        name = os.path.join(directory, "input_%d.pb" % i)
        if not os.path.exists(name):
            return arrays
        tensor = onnx.TensorProto()
        with open(name, "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(numpy_helper.to_array(tensor))
        i += 1


def describe(path):
    model = onnx.load(path)
    g = model.graph
    lines = ["opset %s" % ", ".join("%s:%d" % (o.domain or "ai.onnx", o.version)
                                    for o in model.opset_import)]
    init_names = {t.name for t in g.initializer}
    for vi in g.input:
        if vi.name in init_names:
            continue
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        lines.append("input  %s %s" % (vi.name, dims))
    for t in g.initializer:
        lines.append("param  %s %s" % (t.name, list(t.dims)))
    for i, n in enumerate(g.node):
        attrs = ", ".join("%s=%s" % (a.name, onnx.helper.get_attribute_value(a))
                          for a in n.attribute if a.type != onnx.AttributeProto.TENSOR)
        lines.append("node #%d %s %s(%s) -> %s %s" % (
            i, n.name, n.op_type, ", ".join(n.input), ", ".join(n.output),
            "{" + attrs + "}" if attrs else ""))
    for vi in g.output:
        lines.append("output %s" % vi.name)
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    for p in sys.argv[1:]:
        print(describe(p))
