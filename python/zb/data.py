"""Text into token files for training, the formats of nanoGPT and llm.c.

    python3 -m zb.data tokenize INPUT.txt -o train.bin [--tokenizer gpt2]
        [--format nanogpt|llmc|npy] [--dtype uint16|uint32]
        [--val-fraction 0.1]

Formats (token ids little-endian, uint16 unless the vocabulary has more than
65536 entries or uint32 is asked for):
  nanogpt  the bare array of ids, as nanoGPT's data/*/prepare.py writes
           train.bin and val.bin.
  llmc     llm.c's .bin (dev/data/data_common.py write_datafile): 256 int32
           of header, header[0] = 20240520 (magic) and header[1] = 1
           (version) for uint16 ids, 20240801 and 7 for uint32 ids,
           header[2] = the number of ids, the rest 0; then the ids.
  npy      a 1-D NumPy .npy array.

Tokenizers: "gpt2" (GPT-2's byte-level BPE, 50257 ids: tiktoken's gpt2
encoding when tiktoken is importable, else Hugging Face tokenizers'
Tokenizer.from_pretrained("gpt2"), which downloads it once), "bytes" (every
byte of the file is one id, 256 ids, no library) or the path of a Hugging
Face tokenizer.json. No special tokens are added (no end-of-text, BOS or
EOS). numpy is the only library the package needs here; tiktoken and
tokenizers are imported on use.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable, NamedTuple, Optional, Union

import numpy as np

FORMATS = ("nanogpt", "llmc", "npy")
# llm.c's header (dev/data/data_common.py HEADERS_INFO): (magic, version).
_LLMC_HEADER = {"uint16": (20240520, 1), "uint32": (20240801, 7)}
_LLMC_HEADER_INT32S = 256


class TokenFileInfo(NamedTuple):
    """A file ``tokenize`` wrote: its path, number of ids and their dtype
    ("uint16" or "uint32"; a raw nanogpt file of uint32 ids is read with
    ``zb-run --data-dtype uint32``)."""
    path: str
    tokens: int
    dtype: str


def _gpt2() -> tuple[Callable[[str], list[int]], int]:
    errors = []
    try:
        import tiktoken
        enc = tiktoken.get_encoding("gpt2")
        return enc.encode_ordinary, enc.n_vocab
    except Exception as e:  # not installed, or its BPE file not at hand
        errors.append(f"tiktoken: {type(e).__name__}: {e}")
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_pretrained("gpt2")
        return _hf_encode(tok), tok.get_vocab_size(with_added_tokens=True)
    except Exception as e:
        errors.append(f"tokenizers: {type(e).__name__}: {e}")
    missing = all("ModuleNotFoundError" in e for e in errors)
    raise (ImportError if missing else RuntimeError)(
        "tokenizer 'gpt2' needs tiktoken or tokenizers (pip install tiktoken "
        "or pip install tokenizers; both fetch GPT-2's vocabulary once, "
        "online): " + "; ".join(errors))


def _hf_encode(tok) -> Callable[[str], list[int]]:
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def _tokenizer(name: str) -> tuple[Optional[Callable[[str], list[int]]],
                                     int]:
    """(encode text -> ids, vocabulary size); encode None for "bytes"."""
    if name == "bytes":
        return None, 256
    if name == "gpt2":
        return _gpt2()
    if not os.path.isfile(name):
        raise ValueError(f"tokenizer {name!r}: not 'gpt2', 'bytes' or the "
                         "path of a tokenizer.json")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError(f"tokenizer {name}: reading a tokenizer.json needs "
                          "Hugging Face tokenizers (pip install tokenizers)"
                          ) from None
    try:
        tok = Tokenizer.from_file(name)
    except Exception as e:
        raise ValueError(f"{name}: not a tokenizer.json tokenizers can "
                         f"read: {e}") from None
    return _hf_encode(tok), tok.get_vocab_size(with_added_tokens=True)


def _starts_with_space(line: bytes) -> bool:
    """Whether the UTF-8 line starts with whitespace (Unicode's too)."""
    return line[:4].decode("utf-8", errors="ignore")[:1].isspace()


def _text_chunks(f, chunk_bytes: int):
    """The text of binary file ``f`` in pieces of about ``chunk_bytes``,
    each cut before a line that starts with a character other than
    whitespace: GPT-2's pre-tokenizer splits there too, so a byte-level BPE
    gives the ids of the whole text. UTF-8 (invalid bytes replaced)."""
    lines, size = [], 0
    for line in f:
        if size >= chunk_bytes and not _starts_with_space(line):
            yield b"".join(lines).decode("utf-8", errors="replace")
            lines, size = [], 0
        lines.append(line)
        size += len(line)
    if lines:
        yield b"".join(lines).decode("utf-8", errors="replace")


def _header(fmt: str, dtype: str, count: int) -> bytes:
    if fmt == "nanogpt":
        return b""
    if fmt == "llmc":
        if count >= 2 ** 31:
            raise ValueError(f"llm.c's header holds fewer than 2^31 tokens, "
                             f"got {count}")
        header = np.zeros(_LLMC_HEADER_INT32S, "<i4")
        header[0], header[1] = _LLMC_HEADER[dtype]
        header[2] = count
        return header.tobytes()
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": np.dtype(dtype).newbyteorder("<").str,
              "fortran_order": False, "shape": (count,)})
    return buf.getvalue()


def _write(path: str, fmt: str, dtype: str, spool, first: int, count: int):
    """The header of ``fmt`` and ids [first, first + count) of ``spool``."""
    itemsize = np.dtype(dtype).itemsize
    spool.seek(first * itemsize)
    with open(path, "wb") as out:
        out.write(_header(fmt, dtype, count))
        left = count * itemsize
        while left:
            block = spool.read(min(left, 1 << 24))
            out.write(block)
            left -= len(block)


def val_path(out_path: Union[str, os.PathLike]) -> str:
    """Where ``tokenize`` writes the validation ids: ``out_path`` with
    "train" in its file name replaced by "val" (train.bin -> val.bin), or
    else ``<stem>.val<suffix>`` (tokens.bin -> tokens.val.bin)."""
    head, name = os.path.split(os.fspath(out_path))
    if "train" in name:
        return os.path.join(head, name.replace("train", "val"))
    stem, suffix = os.path.splitext(name)
    return os.path.join(head, f"{stem}.val{suffix}")


def tokenize(text_path: Union[str, os.PathLike],
             out_path: Union[str, os.PathLike], tokenizer: str = "gpt2",
             dtype: Optional[str] = None, val_fraction: float = 0.0,
             fmt: str = "nanogpt", *, chunk_bytes: int = 1 << 18
             ) -> list[TokenFileInfo]:
    """Tokenizes the text file ``text_path`` into ``out_path`` (the module
    docstring gives the formats and tokenizers).

    Args:
        tokenizer: "gpt2", "bytes" or the path of a tokenizer.json.
        dtype: "uint16" or "uint32" for the ids; None: uint16 when the
            vocabulary has at most 65536 ids, else uint32.
        val_fraction: in [0, 1): the last ``val_fraction`` of the ids go to
            a second file, ``val_path(out_path)``: the first
            int(n * (1 - val_fraction)) of the n ids are the training ones,
            as nanoGPT's prepare.py splits 90/10.
        fmt: "nanogpt", "llmc" or "npy".
        chunk_bytes: the text is read and encoded in pieces of about this
            many bytes, cut at line starts (see _text_chunks): the memory
            in use is a piece's, not the file's (Hugging Face tokenizers
            take ~350 bytes per byte of a piece: ~100 MB at the default
            256 KiB); the ids wait in a temporary file next to
            ``out_path``. The output's directory is created if missing.
    Returns:
        [TokenFileInfo(path, number of ids, dtype)]: the training file, then
        the validation file when ``val_fraction`` > 0.
    Raises:
        ValueError: an unknown format, dtype, tokenizer or fraction; uint16
            for a vocabulary larger than 65536; a split that leaves a file
            without ids.
        ImportError, RuntimeError: the tokenizer's library is missing or
            cannot load it (the message says what to pip install).
        OSError: the input cannot be read or the output written.
    """
    text_path, out_path = os.fspath(text_path), os.fspath(out_path)
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: not one of {', '.join(FORMATS)}")
    if dtype is not None and str(dtype) not in ("uint16", "uint32"):
        raise ValueError(f"dtype {dtype!r}: not uint16 or uint32")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction {val_fraction}: not in [0, 1)")
    with open(text_path, "rb") as f:
        encode, vocab = _tokenizer(tokenizer)
        if dtype is None:
            dtype = "uint16" if vocab <= 1 << 16 else "uint32"
        dtype = str(dtype)
        if dtype == "uint16" and vocab > 1 << 16:
            raise ValueError(f"tokenizer {tokenizer!r} has {vocab} ids, more "
                             "than uint16 holds: use uint32")
        limit = np.iinfo(dtype).max
        little = np.dtype(dtype).newbyteorder("<")
        out_dir = os.path.dirname(os.path.abspath(out_path))
        os.makedirs(out_dir, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir,
                                    prefix=".zb-tokens-") as spool:
            count = 0
            if encode is None:
                while block := f.read(chunk_bytes):
                    spool.write(np.frombuffer(block, np.uint8).astype(little)
                                .tobytes())
                    count += len(block)
            else:
                for text in _text_chunks(f, chunk_bytes):
                    ids = np.asarray(encode(text), np.int64)
                    if len(ids) and (ids.min() < 0 or ids.max() > limit):
                        raise ValueError(f"{text_path}: token id "
                                         f"{int(ids.max())} out of {dtype}")
                    spool.write(ids.astype(little).tobytes())
                    count += len(ids)
            spool.flush()
            train = int(count * (1.0 - val_fraction))
            if val_fraction and not 0 < train < count:
                raise ValueError(f"{text_path}: val_fraction {val_fraction} "
                                 f"of {count} tokens leaves a file without "
                                 "tokens")
            written = [TokenFileInfo(out_path, train, dtype)]
            if train < count:
                written.append(TokenFileInfo(val_path(out_path),
                                             count - train, dtype))
            first = 0
            for path, n, _ in written:
                _write(path, fmt, dtype, spool, first, n)
                first += n
    return written


def _main(argv) -> int:
    import argparse
    import sys
    ap = argparse.ArgumentParser(
        prog="python3 -m zb.data",
        description="Token files for zb-run's training data.")
    sub = ap.add_subparsers(dest="command", required=True)
    tk = sub.add_parser(
        "tokenize", help="a text file -> a token file (nanoGPT's train.bin, "
        "llm.c's .bin or .npy), optionally split into train and val")
    tk.add_argument("input", help="the text (UTF-8)")
    tk.add_argument("-o", "--output", required=True,
                    help="the token file (the val file is named after it)")
    tk.add_argument("--tokenizer", default="gpt2",
                    help="gpt2 (default), bytes, or a tokenizer.json path")
    tk.add_argument("--format", default="nanogpt", choices=FORMATS)
    tk.add_argument("--dtype", choices=("uint16", "uint32"),
                    help="default: uint16 if the vocabulary fits")
    tk.add_argument("--val-fraction", type=float, default=0.0,
                    help="the last fraction of the tokens, into a val file")
    args = ap.parse_args(argv)
    try:
        written = tokenize(args.input, args.output, args.tokenizer,
                           args.dtype, args.val_fraction, args.format)
    except (ValueError, ImportError, RuntimeError, OSError) as e:
        print(f"zb.data: error: {e}", file=sys.stderr)
        return 1
    for path, n, dtype in written:
        print(f"wrote {path}: {n} tokens, {dtype}, {os.path.getsize(path)} "
              f"bytes ({args.format}, tokenizer {args.tokenizer})")
    if args.format == "nanogpt" and written[0].dtype == "uint32":
        print("(raw uint32 ids: zb-run --data-dtype uint32)")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
