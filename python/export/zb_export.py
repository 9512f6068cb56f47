"""The fixture scripts' view of zb's exporter (python/zb/export.py).

The scripts here run with a Python that may lack the built zb package (its
compiled module), so this file loads python/zb/export.py on its own, as
export_jax_idioms.py does, and re-exports what they use. There is one
PyTorch exporter: zb.export.torch_to_onnx.

  export_training_graph(module, example_inputs, input_names, path)
      zb.export.torch_to_onnx with the TorchScript exporter, opset 17 and
      constant folding ON (what the committed fixtures were made with; the
      package's default is off), under torch.no_grad(), the module left in
      eval mode; checks the file with onnx.checker and returns the model.
  save_inputs(directory, arrays), load_inputs(directory): zb.export's.
  describe(path) -> str: zb.export.describe_onnx.

    python3 python/export/zb_export.py MODEL.onnx...   # prints describe()
"""

import importlib.util
import os


def _load_zb_export():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "_zb_export_impl", os.path.join(here, "..", "zb", "export.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_impl = _load_zb_export()

OPSET = 17
save_inputs = _impl.save_inputs
load_inputs = _impl.load_inputs
describe = _impl.describe_onnx


def export_training_graph(module, example_inputs, input_names, path,
                          opset=OPSET):
    import onnx
    import torch

    module.eval()
    with torch.no_grad():
        _impl.torch_to_onnx(module, tuple(example_inputs), path,
                            input_names=list(input_names),
                            output_names=("loss",), opset=opset,
                            dynamo=False, constant_folding=True)
    model = onnx.load(path)
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    import sys
    for p in sys.argv[1:]:
        print(describe(p))
