"""XXH3-64 of a file from the reference implementation (libxxhash, through
ctypes): an independent check of the checksums zb computes with
llvm::xxh3_64bits.

  xxh3.py FILE            the 16 hex digits
  xxh3.py --line FILE     the line of FILE.xxh3: "XXH3 (NAME) = HEX"
  xxh3.py --check SUMS    checks the file a FILE.xxh3 names (in its
                          directory): prints "NAME: OK" or
                          "NAME: FAILED (HEX)", exit 1 on a mismatch
"""
import ctypes
import ctypes.util
import os
import re
import sys


def xxh3(path):
    name = ctypes.util.find_library("xxhash") or "libxxhash.so.0"
    lib = ctypes.CDLL(name)
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    with open(path, "rb") as f:
        data = f.read()
    return "%016x" % lib.XXH3_64bits(data, len(data))


def main(argv):
    if argv[0] == "--line":
        print("XXH3 (%s) = %s" % (os.path.basename(argv[1]), xxh3(argv[1])))
    elif argv[0] == "--check":
        with open(argv[1]) as f:
            m = re.fullmatch(r"XXH3 \((.+)\) = ([0-9a-f]{16})\n", f.read())
        if not m:
            print("%s: not a checksum line" % argv[1])
            return 1
        name, want = m.groups()
        got = xxh3(os.path.join(os.path.dirname(argv[1]), name))
        print("%s: OK" % name if got == want else "%s: FAILED (%s)" % (name, got))
        return 0 if got == want else 1
    else:
        print(xxh3(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
