"""zb.data.tokenize: text -> token files in nanoGPT's, llm.c's and NumPy's
formats, read back with NumPy; the train/val split; a tokenizer.json."""
import os
import subprocess
import sys

import numpy as np
import pytest

import zb.data

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\n"
        "All:\nSpeak, speak.\n  indented line\n\u00e9t\u00e9 \u2014 done\n"
        "\u00a0\u00a0non-breaking spaces\n")
BYTES = np.frombuffer(TEXT.encode("utf-8"), np.uint8)


def read_back(path, fmt, dtype="<u2"):
    if fmt == "nanogpt":
        return np.fromfile(path, dtype), None
    if fmt == "npy":
        return np.load(path), None
    header = np.fromfile(path, "<i4", 256)
    return np.fromfile(path, dtype, offset=1024), header


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "input.txt"
    path.write_text(TEXT * 10, encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc", "npy"])
@pytest.mark.parametrize("dtype", [None, "uint32"])
def test_bytes_all_formats(tmp_path, text, fmt, dtype):
    out = tmp_path / ("train.npy" if fmt == "npy" else "train.bin")
    written = zb.data.tokenize(text, out, "bytes", dtype=dtype, fmt=fmt,
                               chunk_bytes=7)
    n = 10 * len(BYTES)
    assert written == [(str(out), n, dtype or "uint16")]
    little = "<u4" if dtype == "uint32" else "<u2"
    ids, header = read_back(out, fmt, little)
    assert ids.dtype == np.dtype(little) and ids.shape == (n,)
    np.testing.assert_array_equal(ids, np.tile(BYTES, 10))
    if fmt == "llmc":
        magic, version = (20240801, 7) if dtype else (20240520, 1)
        assert list(header[:3]) == [magic, version, n]
        assert not header[3:].any()
        assert os.path.getsize(out) == 1024 + n * ids.itemsize
    if fmt == "nanogpt":
        assert os.path.getsize(out) == n * ids.itemsize


@pytest.mark.parametrize("fmt", ["nanogpt", "llmc", "npy"])
def test_val_split(tmp_path, text, fmt):
    n = 10 * len(BYTES)
    out = tmp_path / "shakespeare_train.bin"
    written = zb.data.tokenize(text, out, "bytes", val_fraction=0.1, fmt=fmt)
    train = int(n * 0.9)  # nanoGPT's split
    val_out = tmp_path / "shakespeare_val.bin"
    assert written == [(str(out), train, "uint16"),
                       (str(val_out), n - train, "uint16")]
    assert written[1].path == str(val_out) and written[1].tokens == n - train
    (a, ha), (b, hb) = read_back(out, fmt), read_back(val_out, fmt)
    np.testing.assert_array_equal(np.concatenate([a, b]), np.tile(BYTES, 10))
    if fmt == "llmc":
        assert ha[2] == train and hb[2] == n - train
    # Without "train" in the name: <stem>.val<suffix>.
    written = zb.data.tokenize(text, tmp_path / "tokens.npy", "bytes",
                               val_fraction=0.25, fmt="npy")
    assert [os.path.basename(w.path) for w in written] == ["tokens.npy",
                                                           "tokens.val.npy"]
    assert [w.tokens for w in written] == [int(n * 0.75), n - int(n * 0.75)]
    assert zb.data.val_path("/d/train/x.bin") == "/d/train/x.val.bin"


def test_errors(tmp_path, text):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        zb.data.tokenize(tmp_path / "missing.txt", tmp_path / "o.bin", "bytes")
    assert not (tmp_path / "o.bin").exists()
    with pytest.raises(ValueError, match="format 'bin'"):
        zb.data.tokenize(text, tmp_path / "o.bin", "bytes", fmt="bin")
    with pytest.raises(ValueError, match="dtype 'int8'"):
        zb.data.tokenize(text, tmp_path / "o.bin", "bytes", dtype="int8")
    with pytest.raises(ValueError, match=r"val_fraction 1.0: not in \[0, 1\)"):
        zb.data.tokenize(text, tmp_path / "o.bin", "bytes", val_fraction=1.0)
    with pytest.raises(ValueError, match="not 'gpt2', 'bytes' or the path"):
        zb.data.tokenize(text, tmp_path / "o.bin", "no-such-tokenizer")
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("a")
    with pytest.raises(ValueError, match="leaves a file without tokens"):
        zb.data.tokenize(tiny, tmp_path / "o.bin", "bytes", val_fraction=0.1)


def test_cli(tmp_path, text):
    out = tmp_path / "train.bin"
    proc = subprocess.run(
        [sys.executable, "-m", "zb.data", "tokenize", str(text), "-o",
         str(out), "--tokenizer", "bytes", "--format", "llmc", "--dtype",
         "uint32", "--val-fraction", "0.5"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    n = 10 * len(BYTES)
    assert f"wrote {out}: {n // 2} tokens, uint32" in proc.stdout
    assert f"wrote {tmp_path / 'val.bin'}: {n - n // 2} tokens" in proc.stdout
    ids, header = read_back(tmp_path / "val.bin", "llmc", "<u4")
    assert list(header[:3]) == [20240801, 7, n - n // 2]
    proc = subprocess.run(
        [sys.executable, "-m", "zb.data", "tokenize", str(tmp_path / "no.txt"),
         "-o", str(out), "--tokenizer", "bytes"], capture_output=True,
        text=True)
    assert proc.returncode == 1 and "zb.data: error:" in proc.stderr


def test_tokenizer_json(tmp_path, text):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # Trained on the whole text (train(files) reads lines): merges across
    # line ends, e.g. "\n " (ĊĠ), that a cut before "  indented" would lose.
    tok.train_from_iterator([text.read_text(encoding="utf-8")],
                            trainers.BpeTrainer(
        vocab_size=1000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"], show_progress=False))
    assert "ĊĠ" in tok.get_vocab() and "ĊÂł" in tok.get_vocab()
    tok_path = tmp_path / "tokenizer.json"
    tok.save(str(tok_path))
    expected = tok.encode(text.read_text(encoding="utf-8")).ids
    assert max(expected) >= 256  # merges were learned
    # Small chunks: cut at many line starts, the ids of the whole text.
    for chunk in (1, 50, 1 << 22):
        out = tmp_path / f"t{chunk}.bin"
        written = zb.data.tokenize(text, out, str(tok_path), chunk_bytes=chunk)
        assert written == [(str(out), len(expected), "uint16")]
        np.testing.assert_array_equal(np.fromfile(out, "<u2"), expected)
    assert tok.decode(list(np.fromfile(out, "<u2"))) == text.read_text(
        encoding="utf-8")


class FakeEncoding:
    """tiktoken's Encoding as far as zb.data uses it: one id per character
    (ids up to n_vocab - 1)."""
    def __init__(self, n_vocab):
        self.n_vocab = n_vocab

    def encode_ordinary(self, text):
        return [min(ord(c) * 300, self.n_vocab - 1) for c in text]


def test_gpt2_through_tiktoken(tmp_path, text, monkeypatch):
    import types
    fake = types.ModuleType("tiktoken")
    fake.get_encoding = lambda name: FakeEncoding(50257 if name == "gpt2"
                                                  else 0)
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    written = zb.data.tokenize(text, tmp_path / "sub" / "g.bin", "gpt2",
                               chunk_bytes=10)
    expected = FakeEncoding(50257).encode_ordinary(text.read_text("utf-8"))
    assert written == [(str(tmp_path / "sub" / "g.bin"), len(expected),
                        "uint16")]
    np.testing.assert_array_equal(np.fromfile(tmp_path / "sub" / "g.bin",
                                              "<u2"), expected)
    # A vocabulary beyond uint16: uint32 by default, an error for uint16.
    fake.get_encoding = lambda name: FakeEncoding(100277)
    zb.data.tokenize(text, tmp_path / "big.npy", "gpt2", fmt="npy")
    assert np.load(tmp_path / "big.npy").dtype == np.dtype("<u4")
    with pytest.raises(ValueError, match="100277 ids, more than uint16"):
        zb.data.tokenize(text, tmp_path / "big.bin", "gpt2", dtype="uint16")


def test_gpt2_without_a_library(tmp_path, text, monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match="pip install tiktoken"):
        zb.data.tokenize(text, tmp_path / "g.bin", "gpt2")
