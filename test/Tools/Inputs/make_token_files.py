"""Writes the bytes of a text file as token files of every format zb-run
reads (zb/Runner/Tokens.h), with NumPy as the independent writer:

    make_token_files.py TEXT OUTDIR

OUTDIR/raw16.bin   uint16 ids, nanoGPT's train.bin
OUTDIR/raw32.bin   uint32 ids (zb-run --data-dtype uint32)
OUTDIR/llmc16.bin  llm.c's format: 256 int32 header (20240520, 1, N), uint16
OUTDIR/llmc32.bin  llm.c's uint32 format (20240801, 7, N)
OUTDIR/ids.npy     numpy.save of an int64 array; ids32.npy of uint32
and, for the error tests:
OUTDIR/odd.bin          3 bytes (not a whole number of uint16 ids)
OUTDIR/llmc-bad.bin     llm.c magic 20240520 with version 7
OUTDIR/llmc-short.bin   a header counting more tokens than the file holds
OUTDIR/matrix.npy       a 2-D array
OUTDIR/float.npy        float32 ids
OUTDIR/big-ids.bin      uint16 ids all 300 (outside a byte vocabulary)
"""
import os
import sys

import numpy as np

text, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
ids = np.frombuffer(open(text, "rb").read(), dtype=np.uint8)


def llmc(path, magic, version, arr):
    header = np.zeros(256, dtype="<i4")
    header[:3] = (magic, version, len(arr))
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(arr.tobytes())


ids.astype("<u2").tofile(os.path.join(out, "raw16.bin"))
ids.astype("<u4").tofile(os.path.join(out, "raw32.bin"))
llmc(os.path.join(out, "llmc16.bin"), 20240520, 1, ids.astype("<u2"))
llmc(os.path.join(out, "llmc32.bin"), 20240801, 7, ids.astype("<u4"))
np.save(os.path.join(out, "ids.npy"), ids.astype("<i8"))
np.save(os.path.join(out, "ids32.npy"), ids.astype("<u4"))
open(os.path.join(out, "odd.bin"), "wb").write(b"abc")
llmc(os.path.join(out, "llmc-bad.bin"), 20240520, 7, ids.astype("<u2"))
header = np.zeros(256, dtype="<i4")
header[:3] = (20240520, 1, len(ids) + 10)
with open(os.path.join(out, "llmc-short.bin"), "wb") as f:
    f.write(header.tobytes())
    f.write(ids.astype("<u2").tobytes())
np.save(os.path.join(out, "matrix.npy"), ids[:1000].astype("<u2").reshape(10, 100))
np.save(os.path.join(out, "float.npy"), ids.astype("<f4"))
np.full(4096, 300, dtype="<u2").tofile(os.path.join(out, "big-ids.bin"))
print("token files of", len(ids), "ids in", out)
