"""Reads the SASS of every kernel in the CUDA fatbins embedded in an object
file (zb-compile --keep-intermediates writes rank<R>.o) through
`cuobjdump -sass`, and prints one line per kernel of the first fatbin's
cubin for --arch:

  KERNEL instructions=N div64=D mulhi64=M div32=V v128=W hmma=H local=L sts128=S

N counts the instructions a thread can execute (NOP padding and the
trailing `BRA` to itself left out). The other counts are the signatures of
integer division in index arithmetic, found by compiling a small CUDA file
with nvcc -cubin -arch=sm_90 (CUDA 13):
  div64    a 64-bit `/` or `%` by a run-time value: ptxas calls a
           subroutine built on I2F.U64.RP + MUFU.RCP (a CALL.REL alone is
           no sign: IEEE float division calls its slow path too);
  mulhi64  a 64-bit `/` or `%` by a constant: a 64x64-bit high multiply by
           the magic number, IMAD.WIDE.U32.X (or IMAD.HI.U32 with a carry);
  div32    a 32-bit `/` or `%` by a run-time value: I2F.U32.RP + MUFU.RCP.
v128 counts the 128-bit (float4) global loads and stores, LDG.E.128 and
STG.E.128. hmma counts the tensor-core instructions (HMMA, and HGMMA of
sm_90's warpgroup MMA); local the local-memory loads and stores (LDL,
STL: registers spilled); sts128 the 128-bit stores to shared memory
(STS.128: a block staged in workgroup memory 16 bytes at a time). A 32-bit division by a constant (IMAD.HI.U32 by the magic number, a shift
for a power of two) is what the index arithmetic should become.

usage: sass_stats.py [--cuobjdump PATH] [--arch sm_90] [--no-division]
                     [--max KERNEL=N ...] FILE.o
--no-division fails (exit 1) when a kernel shows any of the three
signatures; --max fails when KERNEL has more than N instructions (one
thread handles one element of an elementwise kernel: its instructions per
element).
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def fatbins(path):
    """The bytes of every fatbin in `path` (header magic 0xBA55ED50)."""
    data = open(path, "rb").read()
    result, pos = [], 0
    while True:
        pos = data.find(bytes.fromhex("50ed55ba"), pos)
        if pos < 0:
            return result
        _, _, header, size = struct.unpack_from("<IHHQ", data, pos)
        result.append(data[pos:pos + header + size])
        pos += header + size


def kernels(sass):
    """{kernel: [instruction text]} from cuobjdump -sass output."""
    result, name = {}, None
    for line in sass.splitlines():
        m = re.match(r"^\s*Function : (\S+)", line)
        if m:
            name = m.group(1)
            result[name] = []
            continue
        m = INSTRUCTION.match(line)
        if name and m:
            result[name].append((int(m.group(1), 16), m.group(2)))
    return {k: [text for addr, text in body if not is_padding(addr, text)]
            for k, body in result.items()}


def is_padding(addr, text):
    if text == "NOP":
        return True
    m = re.match(r"^BRA (0x[0-9a-f]+)$", text)
    return bool(m) and int(m.group(1), 16) == addr


def stats(body):
    ops = [re.sub(r"^@!?U?P\w+\s+", "", text).split()[0] for text in body]
    div64 = sum(op.startswith("I2F.U64.RP") for op in ops)
    mulhi64 = sum(op.startswith("IMAD.WIDE.U32.X") for op in ops)
    mulhi64 += sum(op.startswith("IMAD.HI.U32") and re.search(r", P\d,", t)
                   is not None for op, t in zip(ops, body))
    div32 = sum(op.startswith("I2F.U32.RP") for op in ops)
    v128 = sum(op in ("LDG.E.128", "STG.E.128") for op in ops)
    hmma = sum(op.startswith(("HMMA", "HGMMA")) for op in ops)
    local = sum(op.startswith(("LDL", "STL")) for op in ops)
    sts128 = sum(op == "STS.128" for op in ops)
    return len(body), div64, mulhi64, div32, v128, hmma, local, sts128


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuobjdump", default="cuobjdump")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--no-division", action="store_true")
    parser.add_argument("--max", action="append", default=[],
                        metavar="KERNEL=N")
    parser.add_argument("object")
    args = parser.parse_args()
    found = fatbins(args.object)
    if not found:
        sys.exit(f"sass_stats.py: no fatbin in {args.object}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernels.fatbin")
        open(path, "wb").write(found[0])
        sass = subprocess.run([args.cuobjdump, "-sass", "-arch", args.arch,
                               path], check=True, capture_output=True,
                              text=True).stdout
    table = kernels(sass)
    if not table:
        sys.exit(f"sass_stats.py: no {args.arch} kernel in {args.object}")
    errors, total = [], 0
    for name in sorted(table):
        n, div64, mulhi64, div32, v128, hmma, local, sts128 = \
            stats(table[name])
        total += n
        print(f"{name} instructions={n} div64={div64} mulhi64={mulhi64} "
              f"div32={div32} v128={v128} hmma={hmma} local={local} "
              f"sts128={sts128}")
        if args.no_division and div64 + mulhi64 + div32:
            errors.append(f"{name}: integer division in its SASS "
                          f"(div64={div64} mulhi64={mulhi64} div32={div32})")
    print(f"{len(table)} kernels, {total} instructions")
    for bound in args.max:
        name, _, limit = bound.partition("=")
        if name not in table:
            errors.append(f"{name}: no such kernel")
        elif len(table[name]) > int(limit):
            errors.append(f"{name}: {len(table[name])} instructions, more "
                          f"than {limit}")
    sys.stdout.flush()
    for error in errors:
        print(f"sass_stats.py: error: {error}", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
