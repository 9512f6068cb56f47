"""Export helpers: write exactly what zb's importers read.

    python3 -m zb.export to-generic IN OUT.mlir

converts what JAX writes to the generic StableHLO text form zb reads, with
the user's own jaxlib: text in the custom op form (what
``jax.jit(f).lower(...).as_text()`` prints), a serialized ``jax.export``
artifact (``jax.export.export(jax.jit(f))(...).serialize()`` bytes) or a
StableHLO portable artifact (MLIR bytecode).

torch_to_onnx: torch.onnx.export as zb reads it best: with torch >= 2.6 the
default (dynamo) exporter without its graph optimizer (optimize=False: every
weight under its state_dict name and in its shape, so that the weights zb
saves load back into the module), weights larger than 1 KB in
``<path>.data``; before, the TorchScript exporter, opset 17, constant
folding off (``constant_folding=True`` turns it on). The module is exported
in eval mode (zb trains without dropout) and put back in the mode it had.
This is zb's one PyTorch exporter: python/export/zb_export.py (the fixture
scripts' helper) calls it.
save_inputs / load_inputs: a batch as input_0.pb, input_1.pb, ... (ONNX
TensorProtos, the layout of ONNX's backend test data), what
``zb-run --inputs DIR`` reads; describe_onnx: an ONNX file's inputs,
parameters and nodes as text.
jax_to_stablehlo: the StableHLO text of jax.jit(fn).lower(*args) in the
generic op form (zb-translate --import-stablehlo).

torch, onnx and jax are imported on use; none is a dependency of zb. numpy
arrays are accepted where tensors cross.
"""

from __future__ import annotations

import os


def torch_to_onnx(module, example_inputs, path: str, *,
                  input_names=None, output_names=("loss",),
                  opset: int | None = None, dynamo: bool | None = None,
                  constant_folding: bool = False) -> str:
    """Exports ``module(*example_inputs)`` (its forward and loss: a scalar)
    to ``path`` for ``zb-compile``/``zb.compile``. Parameters become ONNX
    initializers (trainable in zb) under their ``state_dict`` names; numpy
    arrays are converted to tensors. A Hugging Face model is exported through
    a module that returns its loss, e.g. ``forward(input_ids, labels):
    return self.model(input_ids=input_ids, labels=labels).loss``.

    ``dynamo``: None picks the dynamo exporter (``optimize=False``) on torch
    >= 2.6 and the TorchScript one (constant folding off) before; ``opset``:
    None is the exporter's default (dynamo) or 17 (TorchScript).
    ``constant_folding``: the TorchScript exporter's ``do_constant_folding``
    (off by default: folding can merge a parameter into a constant that zb
    then cannot train or load back; ValueError with the dynamo exporter,
    whose optimizer is off). Returns the path. Raises what
    ``torch.onnx.export`` raises."""
    import torch  # noqa: PLC0415
    inputs = tuple(torch.as_tensor(x) if not isinstance(x, torch.Tensor)
                   else x for x in (example_inputs if isinstance(
                       example_inputs, (tuple, list)) else (example_inputs,)))
    if dynamo is None:
        version = tuple(int(v) for v in
                        torch.__version__.split("+")[0].split(".")[:2])
        dynamo = version >= (2, 6)
    if dynamo and constant_folding:
        raise ValueError("constant_folding applies to the TorchScript "
                         "exporter only (dynamo=False)")
    kwargs = dict(output_names=list(output_names))
    if input_names is not None:
        kwargs["input_names"] = list(input_names)
    was_training = getattr(module, "training", False)
    if hasattr(module, "eval"):
        module.eval()
    try:
        if dynamo:
            if opset is not None:
                kwargs["opset_version"] = opset
            torch.onnx.export(module, inputs, os.fspath(path), dynamo=True,
                              optimize=False, external_data=True, **kwargs)
        else:
            kwargs.update(export_params=True,
                          do_constant_folding=constant_folding,
                          opset_version=17 if opset is None else opset)
            try:
                torch.onnx.export(module, inputs, os.fspath(path),
                                  dynamo=False, **kwargs)
            except TypeError:  # torch < 2.5 has no `dynamo` argument
                torch.onnx.export(module, inputs, os.fspath(path), **kwargs)
    finally:
        if was_training and hasattr(module, "train"):
            module.train()
    return os.fspath(path)


def save_inputs(directory: str, arrays) -> None:
    """Writes ``arrays`` (numpy arrays, one per graph input, in order) to
    ``directory`` as input_0.pb, input_1.pb, ...: serialized ONNX
    TensorProtos, the layout of ONNX's backend test data, which
    ``zb-run --inputs DIR`` reads. Creates the directory."""
    import numpy as np  # noqa: PLC0415
    from onnx import numpy_helper  # noqa: PLC0415
    os.makedirs(directory, exist_ok=True)
    for i, array in enumerate(arrays):
        tensor = numpy_helper.from_array(np.ascontiguousarray(array))
        with open(os.path.join(directory, "input_%d.pb" % i), "wb") as f:
            f.write(tensor.SerializeToString())


def load_inputs(directory: str) -> list:
    """The arrays ``save_inputs`` wrote (input_0.pb, input_1.pb, ... until
    the first missing one), as a list of numpy arrays."""
    import onnx  # noqa: PLC0415
    from onnx import numpy_helper  # noqa: PLC0415
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


def describe_onnx(path: str) -> str:
    """An ONNX file as text, one line each: its opsets, the graph inputs
    that are not initializers (with their shapes), the initializers
    (``param``), every node with its non-tensor attributes, the outputs."""
    import onnx  # noqa: PLC0415
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
                          for a in n.attribute
                          if a.type != onnx.AttributeProto.TENSOR)
        lines.append("node #%d %s %s(%s) -> %s %s" % (
            i, n.name, n.op_type, ", ".join(n.input), ", ".join(n.output),
            "{" + attrs + "}" if attrs else ""))
    for vi in g.output:
        lines.append("output %s" % vi.name)
    return "\n".join(lines)


def _key_name(path) -> str:
    """JAX key path -> dotted name ('blocks', 0, 'w') -> 'blocks.0.w'."""
    import jax  # noqa: PLC0415
    parts = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            parts.append(str(k.key))
        elif isinstance(k, jax.tree_util.SequenceKey):
            parts.append(str(k.idx))
        elif isinstance(k, jax.tree_util.GetAttrKey):
            parts.append(str(k.name))
        else:
            parts.append(str(k))
    return ".".join(parts)


def _param_values(params) -> dict:
    """{"params.<path>": float32 array} for the leaves of the pytree
    ``params`` (a flat dict already keyed by such names is kept)."""
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    if isinstance(params, dict) and params and all(
            isinstance(k, str) and k.startswith("params.") for k in params):
        return {k: np.asarray(v) for k, v in params.items()}
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    return {".".join(p for p in ("params", _key_name(kp)) if p):
            np.asarray(v) for kp, v in leaves}


def _set_param_values(module, params) -> None:
    """Adds the module attribute zb.param_values (name -> dense value), the
    initial weights the zb importer keeps. Call inside module.context."""
    import numpy as np  # noqa: PLC0415
    from jax._src.lib.mlir import ir  # noqa: PLC0415
    values = {name: ir.DenseElementsAttr.get(np.ascontiguousarray(v))
              for name, v in _param_values(params).items()}
    module.operation.attributes["zb.param_values"] = ir.DictAttr.get(values)


def jax_to_stablehlo(fn, params, *batch, path: str) -> str:
    """Writes ``jax.jit(fn).lower(params, *batch)`` as StableHLO text in the
    generic op form to ``path``, for ``zb.compile`` / ``zb-compile``.

    ``fn(params, *batch)`` returns the scalar loss. The leaves of ``params``
    (a pytree of float arrays) are the trainable parameters, named by their
    path ("params.blocks.0.w") and stored with their values in the file, so
    the compiled model starts from them; ``batch`` holds the data (integer
    arrays are always data; float data arguments need zb-translate's
    --data-args). numpy arrays are accepted. Returns the path.
    """
    import jax  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    from jax._src.lib.mlir import ir  # noqa: PLC0415

    # keep_unused: a parameter the loss does not use stays an argument (and
    # gets a zero gradient) instead of disappearing from the export.
    lowered = jax.jit(fn, keep_unused=True).lower(params, *batch)
    module = lowered.compiler_ir("stablehlo")
    args_flat, _ = jax.tree_util.tree_flatten_with_path((params,) + batch)
    with module.context:
        main = [op for op in module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main"][0]
        arg_attrs = []
        for (kp, _), old in zip(args_flat, main.attributes["arg_attrs"]):
            entries = {n.name: n.attr for n in ir.DictAttr(old)}
            top = "params" if kp[0].idx == 0 else f"batch{kp[0].idx - 1}"
            entries.setdefault("jax.arg_info", ir.StringAttr.get(
                top + jax.tree_util.keystr(kp[1:])))
            arg_attrs.append(ir.DictAttr.get(entries))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        _set_param_values(module, params)
    text = module.operation.get_asm(print_generic_op_form=True,
                                    enable_debug_info=False)
    with open(path, "w") as f:
        f.write(text)
    return os.fspath(path)


_BYTECODE_MAGIC = b"ML\xefR"


def _arg_names(exported):
    """The pytree path names of a jax.export artifact's arguments, in the
    convention of jax_to_stablehlo: the first positional argument is
    "params", the others "batch<i>", keyword arguments their key."""
    import jax  # noqa: PLC0415
    n = len(exported.in_avals)
    args, kwargs = jax.tree_util.tree_unflatten(exported.in_tree, range(n))
    names = [None] * n
    for i, a in enumerate(args):
        top = "params" if i == 0 else f"batch{i - 1}"
        for kp, leaf in jax.tree_util.tree_flatten_with_path(a)[0]:
            names[leaf] = top + jax.tree_util.keystr(kp)
    for kp, leaf in jax.tree_util.tree_flatten_with_path(kwargs)[0]:
        names[leaf] = jax.tree_util.keystr(kp)
    return names


def _portable_artifact_text(data: bytes) -> str:
    """A StableHLO portable artifact (versioned MLIR bytecode) as StableHLO
    text, with the deserializer of the user's jaxlib (where jax.export's
    own Exported.mlir_module() finds it; newer jaxlibs also have it in the
    stablehlo dialect bindings)."""
    try:
        from jax._src.lib import xla_client  # noqa: PLC0415
        return xla_client._xla.mlir.deserialize_portable_artifact(data)
    except (ImportError, AttributeError):
        from jax._src.interpreters import mlir as jmlir  # noqa: PLC0415
        from jaxlib.mlir.dialects import stablehlo  # noqa: PLC0415
        with jmlir.make_ir_context() as ctx:
            module = stablehlo.deserialize_portable_artifact(ctx, data)
            return module.operation.get_asm()


def to_generic(source: str, path: str, params=None) -> str:
    """Rewrites what JAX writes as the generic-op-form StableHLO text that
    zb-translate / zb-compile read, parsed with jaxlib's own StableHLO
    dialect: text in the custom (pretty) op form, as
    ``jax.jit(f).lower(...).as_text()`` prints it; the bytes of
    ``jax.export.export(jax.jit(f))(...).serialize()`` (deserialized with
    ``jax.export.deserialize``, arguments named by their pytree path as
    ``jax.arg_info``); or a StableHLO portable artifact (MLIR bytecode).
    Exports carry no parameter values: ``params`` (the pytree, or a dict
    {"params.emb": array, ...} as in an .npz) adds them as zb.param_values,
    else zb-compile initialises the parameters itself. Returns the path."""
    from jax._src.interpreters import mlir as jmlir  # noqa: PLC0415
    from jax._src.lib.mlir import ir  # noqa: PLC0415
    with open(source, "rb") as f:
        data = f.read()
    names = None
    if data.startswith(_BYTECODE_MAGIC):
        text = _portable_artifact_text(data)
    elif _BYTECODE_MAGIC in data[:4096] and b"\0" in data[:64]:
        from jax import export  # noqa: PLC0415
        exported = export.deserialize(bytearray(data))
        text = exported.mlir_module()
        names = _arg_names(exported)
    else:
        text = data.decode("utf-8")
    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        if names is not None:
            main = [op for op in module.body.operations
                    if ir.StringAttr(op.attributes["sym_name"]).value
                    == "main"][0]
            old = (list(main.attributes["arg_attrs"])
                   if "arg_attrs" in main.attributes else [])
            attrs = []
            for i, name in enumerate(names):
                entries = ({n.name: n.attr for n in ir.DictAttr(old[i])}
                           if i < len(old) else {})
                if name is not None:
                    entries.setdefault("jax.arg_info", ir.StringAttr.get(name))
                attrs.append(ir.DictAttr.get(entries))
            main.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
        if params is not None:
            _set_param_values(module, params)
        generic = module.operation.get_asm(print_generic_op_form=True,
                                           enable_debug_info=False)
    with open(path, "w") as f:
        f.write(generic)
    return os.fspath(path)


def _main(argv) -> int:
    import argparse  # noqa: PLC0415
    ap = argparse.ArgumentParser(
        prog="python3 -m zb.export",
        description="Converts a JAX export to the StableHLO text zb reads.")
    sub = ap.add_subparsers(dest="command", required=True)
    tg = sub.add_parser(
        "to-generic", help="StableHLO text (custom op form), jax.export "
        "serialized bytes or a StableHLO portable artifact -> generic text")
    tg.add_argument("input")
    tg.add_argument("output")
    tg.add_argument("--params", metavar="NPZ",
                    help="initial parameter values (.npz keyed by the "
                    "argument names, e.g. params.emb), stored as "
                    "zb.param_values")
    args = ap.parse_args(argv)
    params = None
    if args.params:
        import numpy as np  # noqa: PLC0415
        with np.load(args.params) as z:
            params = {k: z[k] for k in z.files}
    to_generic(args.input, args.output, params=params)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
