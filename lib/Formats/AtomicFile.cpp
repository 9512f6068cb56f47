//===- AtomicFile.cpp - Writing output files atomically -------------------===//
//
// See zb/Formats/AtomicFile.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/AtomicFile.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace llvm;

Error zb::host::writeFileAtomically(
    StringRef path, function_ref<Error(raw_ostream &)> write) {
  auto failure = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "cannot write '" + path + "': " + why +
                                 " (the previous file is unchanged)");
  };
  sys::fs::file_status st;
  bool inPlace = !sys::fs::status(path, st, /*Follow=*/false) &&
                 st.type() != sys::fs::file_type::regular_file &&
                 st.type() != sys::fs::file_type::symlink_file;
  if (inPlace) { // a device or FIFO
    std::error_code ec;
    raw_fd_ostream os(path, ec, sys::fs::OF_None);
    if (ec)
      return failure(ec.message());
    if (Error e = write(os))
      return e;
    os.close();
    if (os.has_error()) {
      std::error_code err = os.error();
      os.clear_error();
      return failure(err.message());
    }
    return Error::success();
  }
  std::string tmp =
      (path + ".tmp." + Twine(sys::Process::getProcessId())).str();
  {
    std::error_code ec;
    raw_fd_ostream os(tmp, ec, sys::fs::OF_None);
    if (ec)
      return failure(ec.message());
    if (Error e = write(os)) {
      os.close();
      os.clear_error();
      sys::fs::remove(tmp);
      return e;
    }
    os.close();
    if (os.has_error()) {
      std::error_code err = os.error();
      os.clear_error();
      sys::fs::remove(tmp);
      return failure(err.message());
    }
  }
  if (std::error_code ec = sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return failure(ec.message());
  }
  return Error::success();
}
