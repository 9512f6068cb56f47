//===- Checksum.h - XXH3-64 checksums of the files zb writes ----*- C++ -*-===//
//
// One checksum for every file zb vouches for: XXH3-64 (llvm::xxh3_64bits,
// the reference XXH3_64bits with seed 0) printed as 16 lower-case hex
// digits. Checkpoints record it for each of their files
// (zb/Formats/Checkpoint.h), plan.json for params.bin ("params_checksum"),
// and zb-run --save-params FILE writes it to FILE.xxh3 (checksumFileLine:
// the BSD-style line of `xxhsum -H3`, so `xxhsum -c FILE.xxh3` checks it).
// MLIR-free (ZBSupport).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_CHECKSUM_H
#define ZB_SUPPORT_CHECKSUM_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace zb::support {

/// XXH3-64 of `bytes` as 16 hex digits.
std::string xxh3Hex(llvm::StringRef bytes);

/// XXH3-64 of the file at `path` as 16 hex digits; an error
/// "'<path>': cannot read: <reason>" when it cannot be read.
llvm::Expected<std::string> fileChecksum(llvm::StringRef path);

/// The line of a checksum file for `fileName` (the name without its
/// directory): "XXH3 (<fileName>) = <checksum>\n".
std::string checksumFileLine(llvm::StringRef fileName,
                             llvm::StringRef checksum);

/// Writes `path`.xxh3 (atomically) holding checksumFileLine of `path`'s
/// file name and `checksum`. Errors: "cannot write '<path>.xxh3': ...".
llvm::Error writeChecksumFile(llvm::StringRef path, llvm::StringRef checksum);

} // namespace zb::support

#endif // ZB_SUPPORT_CHECKSUM_H
