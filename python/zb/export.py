"""Export helpers: write exactly what zb's importers read.

torch_to_onnx: torch.onnx.export with the legacy TorchScript exporter
(dynamo=False), opset 17, constant folding off, weights inside the file
(zb-translate --import-onnx reads one self-contained .onnx).
jax_to_stablehlo: the StableHLO text of jax.jit(fn).lower(*args) in the
generic op form (zb-translate --import-stablehlo).

torch and jax are imported on use; neither is a dependency of zb. numpy
arrays are accepted where tensors cross.
"""

from __future__ import annotations

import os


def torch_to_onnx(module, example_inputs, path: str, *,
                  input_names=None, output_names=("loss",),
                  opset: int = 17) -> str:
    """Exports ``module(*example_inputs)`` (its forward and loss) to
    ``path`` for ``zb-compile``/``zb.compile``. Parameters become ONNX
    initializers (trainable in zb); numpy arrays are converted to tensors.
    Returns the path."""
    import torch  # noqa: PLC0415
    inputs = tuple(torch.as_tensor(x) if not isinstance(x, torch.Tensor)
                   else x for x in (example_inputs if isinstance(
                       example_inputs, (tuple, list)) else (example_inputs,)))
    kwargs = dict(export_params=True, do_constant_folding=False,
                  opset_version=opset, output_names=list(output_names))
    if input_names is not None:
        kwargs["input_names"] = list(input_names)
    try:
        torch.onnx.export(module, inputs, os.fspath(path), dynamo=False,
                          **kwargs)
    except TypeError:  # torch < 2.5 has no `dynamo` argument
        torch.onnx.export(module, inputs, os.fspath(path), **kwargs)
    return os.fspath(path)


def jax_to_stablehlo(fn, *args, path: str) -> str:
    """Writes the StableHLO of ``jax.jit(fn).lower(*args)`` in the generic
    op form to ``path`` (``fn(params, batch...) -> scalar loss``; the
    parameters are the leaves of the first argument's pytree). Returns the
    path."""
    import jax  # noqa: PLC0415
    lowered = jax.jit(fn).lower(*args)
    module = lowered.compiler_ir("stablehlo")
    text = module.operation.get_asm(print_generic_op_form=True,
                                    large_elements_limit=None)
    with open(path, "w") as f:
        f.write(text)
    return os.fspath(path)
