//===- Checksum.cpp - XXH3-64 checksums of the files zb writes ------------===//
//
// See zb/Support/Checksum.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/Checksum.h"
#include "zb/Support/AtomicFile.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

using namespace llvm;

std::string zb::support::xxh3Hex(StringRef bytes) {
  return formatv("{0:x-16}", xxh3_64bits(bytes)).str();
}

Expected<std::string> zb::support::fileChecksum(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createStringError(inconvertibleErrorCode(),
                             "'" + path + "': cannot read: " +
                                 buffer.getError().message());
  return xxh3Hex((*buffer)->getBuffer());
}

std::string zb::support::checksumFileLine(StringRef fileName,
                                          StringRef checksum) {
  return ("XXH3 (" + fileName + ") = " + checksum + "\n").str();
}

Error zb::support::writeChecksumFile(StringRef path, StringRef checksum) {
  std::string line = checksumFileLine(sys::path::filename(path), checksum);
  return writeFileAtomically((path + ".xxh3").str(), [&](raw_ostream &os) {
    os << line;
    return Error::success();
  });
}
