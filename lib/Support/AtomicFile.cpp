//===- AtomicFile.cpp - Writing output files atomically -------------------===//
//
// See zb/Support/AtomicFile.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/AtomicFile.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace llvm;

namespace {
/// "cannot write '<path>': <why> (the previous file is unchanged)".
Error cannotWrite(StringRef path, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           "cannot write '" + path + "': " + why +
                               " (the previous file is unchanged)");
}

/// Opens `file`, lets `write` fill it and closes it; an I/O error is
/// reported against `path`.
Error writeTo(StringRef file, StringRef path,
              function_ref<Error(raw_ostream &)> write) {
  std::error_code ec;
  raw_fd_ostream os(file, ec, sys::fs::OF_None);
  if (ec)
    return cannotWrite(path, ec.message());
  if (Error e = write(os)) {
    os.close();
    os.clear_error();
    return e;
  }
  os.close();
  if (os.has_error()) {
    std::error_code err = os.error();
    os.clear_error();
    return cannotWrite(path, err.message());
  }
  return Error::success();
}
} // namespace

Error zb::support::writeFileAtomically(
    StringRef path, function_ref<Error(raw_ostream &)> write) {
  sys::fs::file_status st;
  bool inPlace = !sys::fs::status(path, st, /*Follow=*/false) &&
                 st.type() != sys::fs::file_type::regular_file &&
                 st.type() != sys::fs::file_type::symlink_file;
  if (inPlace) // a device or FIFO
    return writeTo(path, path, write);
  return replaceFileAtomically(
      path, [&](StringRef tmp) { return writeTo(tmp, path, write); });
}

Error zb::support::replaceFileAtomically(
    StringRef path, function_ref<Error(StringRef tmpPath)> produce) {
  std::string tmp =
      (path + ".tmp." + Twine(sys::Process::getProcessId())).str();
  if (Error e = produce(tmp)) {
    sys::fs::remove(tmp);
    return e;
  }
  if (std::error_code ec = sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return cannotWrite(path, ec.message());
  }
  return Error::success();
}
