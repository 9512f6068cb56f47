"""zb.load_params (safetensors and params.bin) and zb.load_into_torch: files
written here by an independent packer of the safetensors format, malformed
ones, and zb-run's own --save-params outputs of the GPT-2 fixture."""
import json
import os
import struct
import sys
import types

import numpy as np
import pytest

import zb
from conftest import ROOT

GPT2 = os.path.join(ROOT, "test", "Frontend", "Inputs", "onnx", "gpt2",
                    "model.onnx")


def pack(tensors, header_patch=None, tail=b""):
    """A safetensors file: u64 LE header length, JSON header, the arrays'
    bytes in the given order (https://huggingface.co/docs/safetensors)."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": {"float32": "F32", "int64": "I64"}[a.dtype.name],
                        "shape": list(a.shape),
                        "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    if header_patch:
        header_patch(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs) + tail


@pytest.fixture
def numpy_reader(monkeypatch):
    """load_params without the safetensors package: its NumPy reader."""
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)


TENSORS = {"wte.weight": np.arange(12, dtype=np.float32).reshape(4, 3),
           "ln.bias": np.array([1.5, -2.0], np.float32),
           "scale": np.array(3.25, np.float32),
           "ids": np.array([[7, 8]], np.int64)}


def test_safetensors_numpy_reader(tmp_path, numpy_reader):
    path = tmp_path / "p.safetensors"
    path.write_bytes(pack(TENSORS))
    got = zb.load_params(path)
    assert sorted(got) == sorted(TENSORS)
    for name, a in TENSORS.items():
        assert got[name].dtype == a.dtype and got[name].shape == a.shape
        np.testing.assert_array_equal(got[name], a)
        assert got[name].flags.writeable


def test_safetensors_package_agrees(tmp_path):
    pytest.importorskip("safetensors.numpy")
    path = tmp_path / "p.safetensors"
    path.write_bytes(pack(TENSORS))
    got = zb.load_params(path)
    for name, a in TENSORS.items():
        np.testing.assert_array_equal(got[name], a)
        assert got[name].flags.writeable
    path.write_bytes(b"\x00" * 4)
    with pytest.raises(ValueError, match="not a safetensors file"):
        zb.load_params(path)


def set_offsets(name, offsets):
    def patch(h):
        h[name]["data_offsets"] = offsets
    return patch


@pytest.mark.parametrize("data, message", [
    (b"\x01\x02", "2 bytes, shorter than the 8-byte header length"),
    (struct.pack("<Q", 1000) + b"{}", "header length 1000 exceeds the 2 "
     "bytes after it"),
    (struct.pack("<Q", 5) + b"{nope", "header is not UTF-8 JSON"),
    (struct.pack("<Q", 2) + b"[]", "header is not a JSON object"),
    (pack(TENSORS, lambda h: h["ln.bias"].update(dtype="Q8")),
     "tensor 'ln.bias': dtype 'Q8' is not one of F64, F32"),
    (pack(TENSORS, lambda h: h["ln.bias"].pop("shape")),
     "tensor 'ln.bias': needs \"dtype\", \"shape\""),
    (pack(TENSORS, set_offsets("ln.bias", [48, 60])),
     r"tensor 'ln.bias': data_offsets \[48, 60\] hold 12 bytes, shape \[2\] "
     "of F32 needs 8"),
    (pack(TENSORS, set_offsets("ln.bias", [52, 60])),
     "starts at byte 52 of the data, expected 48 .a hole or an overlap."),
    (pack(TENSORS, tail=b"\x00" * 4),
     "the tensors end at byte 76 of the data, the file has 80"),
])
def test_safetensors_malformed(tmp_path, numpy_reader, data, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as e:
        zb.load_params(path)
    assert str(path) in str(e.value)


def test_params_bin_layout(tmp_path):
    plan = {"params": [
        {"name": "b", "shape": [2], "offset_bytes": 24},
        {"name": "w", "shape": [2, 3], "offset_bytes": 0}]}
    values = np.arange(8, dtype="<f4") * 0.5
    values.tofile(tmp_path / "params.bin")
    for p in (plan, tmp_path / "plan.json"):
        (tmp_path / "plan.json").write_text(json.dumps(plan))
        got = zb.load_params(tmp_path / "params.bin", p)
        np.testing.assert_array_equal(got["w"], values[:6].reshape(2, 3))
        np.testing.assert_array_equal(got["b"], values[6:])
    # The plan.json next to the file by default.
    assert sorted(zb.load_params(tmp_path / "params.bin")) == ["b", "w"]
    (tmp_path / "long.bin").write_bytes(values.tobytes() + bytes(4))
    with pytest.raises(ValueError, match="36 bytes, but plan.json's "
                       "parameters end at byte 32"):
        zb.load_params(tmp_path / "long.bin", plan)
    os.makedirs(tmp_path / "alone")
    values.tofile(tmp_path / "alone" / "p.bin")
    with pytest.raises(ValueError, match="pass plan="):
        zb.load_params(tmp_path / "alone" / "p.bin")


def test_zb_run_safetensors_equal_params_bin(tmp_path, mpi_env):
    """zb-run's two --save-params formats of one training run (same seed):
    the same values under the plan's names, the tied embedding once."""
    plan = zb.compile(GPT2, tmp_path / "plan", stages=2, microbatches=2)
    data = os.path.join(os.path.dirname(GPT2), "train")
    for out in ("p.safetensors", "p.bin"):
        zb.run(plan, steps=2, data=data, deterministic=True,
               extra_args=["--save-params", str(tmp_path / out)])
    st = zb.load_params(tmp_path / "p.safetensors")
    binary = zb.load_params(tmp_path / "p.bin", plan)
    names = [p["name"] for p in plan.plan["params"]]
    assert sorted(st) == sorted(names) and len(names) == len(set(names))
    assert any(p.get("tied_copies") for p in plan.plan["params"])
    for name in names:
        assert st[name].dtype == np.float32
        assert st[name].tobytes() == binary[name].tobytes()
    initial = zb.load_params(os.path.join(plan.path, "params.bin"))
    assert any(not np.array_equal(initial[n], st[n]) for n in names)


# -- load_into_torch --------------------------------------------------------

class FakeParameter:
    def __init__(self, shape):
        self.value = np.zeros(shape, np.float32)


class FakeModule:
    """The three methods of torch.nn.Module that load_into_torch calls, over
    named parameters (the same object under two names = tied) and
    buffers."""

    def __init__(self, params, buffers=()):
        self.params, self.buffers, self.loaded = params, list(buffers), None

    def named_parameters(self, remove_duplicate=True):
        assert not remove_duplicate
        return list(self.params.items())

    def state_dict(self):
        return dict.fromkeys(list(self.params) + self.buffers)

    def load_state_dict(self, state, strict=True):
        assert not strict
        self.loaded = state
        for name, value in state.items():
            if name in self.params:
                self.params[name].value[...] = value


@pytest.fixture
def fake_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch",
                        types.SimpleNamespace(from_numpy=lambda a: a))


def test_load_into_torch_tied_and_strict(tmp_path, fake_torch):
    path = tmp_path / "p.safetensors"
    wte = np.arange(6, dtype=np.float32).reshape(3, 2)
    path.write_bytes(pack({"wte.weight": wte,
                           "ln.bias": np.ones(2, np.float32)}))
    tied = FakeParameter((3, 2))

    def model():
        return FakeModule({"wte.weight": tied, "lm_head.weight": tied,
                           "ln.bias": FakeParameter(2)}, ["attn.mask"])

    m = model()
    assert zb.load_into_torch(m, path) == ([], [])
    np.testing.assert_array_equal(tied.value, wte)
    # A parameter the file lacks, and a name the module lacks (a buffer of
    # the module missing from the file is no error).
    m = FakeModule({"wte.weight": tied, "lm_head.weight": tied,
                    "ln.weight": FakeParameter(2)}, ["attn.mask"])
    with pytest.raises(ValueError, match=r"the module has no parameter named "
                       r"ln\.bias \(1 of the file's\); the file lacks the "
                       r"module's parameters ln\.weight \(1\)"):
        zb.load_into_torch(m, path)
    assert m.loaded is None  # nothing loaded
    keys = zb.load_into_torch(m, path, strict=False)
    assert keys.missing_keys == ["ln.weight"]
    assert keys.unexpected_keys == ["ln.bias"]
    # Untied: lm_head.weight is a parameter of its own, missing.
    m = FakeModule({"wte.weight": FakeParameter((3, 2)),
                    "lm_head.weight": FakeParameter((3, 2)),
                    "ln.bias": FakeParameter(2)})
    with pytest.raises(ValueError, match=r"lacks the module's parameters "
                       r"lm_head\.weight \(1\)$"):
        zb.load_into_torch(m, path)


def test_load_into_torch_prefix(tmp_path, fake_torch):
    # Trained through a wrapper (`self.model = hf_model`): the file's names
    # start with "model.", the bare model's do not.
    path = tmp_path / "p.safetensors"
    w = np.arange(4, dtype=np.float32)
    path.write_bytes(pack({"model.ln.weight": w}))
    ln = FakeParameter(4)
    with pytest.raises(ValueError, match=r"no parameter named model\.ln"):
        zb.load_into_torch(FakeModule({"ln.weight": ln}), path)
    assert zb.load_into_torch(FakeModule({"ln.weight": ln}), path,
                              prefix="model.") == ([], [])
    np.testing.assert_array_equal(ln.value, w)


def test_load_into_torch_real_module(tmp_path):
    torch = pytest.importorskip("torch")

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(5, 3)
            self.ln = torch.nn.LayerNorm(3)
            self.lm_head = torch.nn.Linear(3, 5, bias=False)
            self.lm_head.weight = self.wte.weight
            self.register_buffer("mask", torch.ones(2))

    m = Tiny()
    values = {"wte.weight": np.arange(15, dtype=np.float32).reshape(5, 3),
              "ln.weight": np.full(3, 2.0, np.float32),
              "ln.bias": np.full(3, -1.0, np.float32)}
    path = tmp_path / "p.safetensors"
    path.write_bytes(pack(values))
    assert zb.load_into_torch(m, path) == ([], [])
    assert torch.equal(m.lm_head.weight, torch.from_numpy(values["wte.weight"]))
    assert torch.equal(m.ln.bias, torch.full((3,), -1.0))
    del values["ln.bias"]
    path.write_bytes(pack(values))
    with pytest.raises(ValueError, match=r"lacks the module's parameters "
                       r"ln\.bias \(1\)"):
        zb.load_into_torch(m, path)
