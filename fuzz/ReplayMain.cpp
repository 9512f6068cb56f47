//===- ReplayMain.cpp - Run a fuzz target over files, without libFuzzer ---===//
//
// The main() of zb-fuzz-replay-<name>: calls the target's
// LLVMFuzzerTestOneInput on every file named on the command line (or found
// in a named directory, recursively). The ctests ZBFuzzCorpus.<name> replay
// the seed corpus fuzz/corpus/<name> so with any compiler; libFuzzer builds
// (scripts/fuzz.sh) explore from it.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!llvm::sys::fs::is_directory(argv[i])) {
      files.push_back(argv[i]);
      continue;
    }
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(argv[i], ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
  }
  if (files.empty()) {
    llvm::errs() << "zb-fuzz-replay: no input files\n";
    return 1;
  }
  for (const std::string &f : files) {
    auto buffer = llvm::MemoryBuffer::getFile(f, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << "zb-fuzz-replay: cannot read " << f << "\n";
      return 1;
    }
    LLVMFuzzerTestOneInput(
        reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
        (*buffer)->getBufferSize());
  }
  llvm::outs() << "replayed " << files.size() << " inputs\n";
  return 0;
}
