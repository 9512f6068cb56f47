"""Lists the images of every CUDA fatbin embedded in an object file, one line
per fatbin: "elf sm_80, elf sm_90, ptx sm_80". The layout (a 16-byte header
with magic 0xBA55ED50 and the payload size, then per image a header with its
kind, 1 PTX or 2 ELF, header size, payload size and, at byte 28, the SM
version) agrees with cuobjdump --list-elf --list-ptx (PyPI's
nvidia-cuda-cuobjdump) on the fatbins zb-compile embeds.

usage: list_fatbins.py FILE.o
(or import it: fatbins(path) returns those lines as a list)
"""
import struct
import sys


def fatbins(path):
    """One "elf sm_80, elf sm_90, ptx sm_80" string per fatbin in `path`."""
    data = open(path, "rb").read()
    result, pos = [], 0
    while True:
        pos = data.find(bytes.fromhex("50ed55ba"), pos)
        if pos < 0:
            return result
        _, _, header, size = struct.unpack_from("<IHHQ", data, pos)
        off, end, images = pos + header, pos + header + size, []
        while off < end:
            kind, _, image_header, payload = struct.unpack_from("<HHIQ", data,
                                                                off)
            arch = struct.unpack_from("<I", data, off + 28)[0]
            images.append(f"{ {1: 'ptx', 2: 'elf'}.get(kind, '?') } sm_{arch}")
            off += image_header + payload
        result.append(", ".join(images))
        pos = end


if __name__ == "__main__":
    for line in fatbins(sys.argv[1]):
        print(line)
