//===- CheckpointFuzzer.cpp - libFuzzer target for checkpoint.json --------===//
//
// Arbitrary bytes to zb::formats::parseCheckpoint (zb-run --resume). An
// accepted checkpoint has a step >= 1, an optimizer step within it, 16 hex
// digits of plan hash and checksums that name plain files of the directory
// with 16 hex digits each. Seed corpus fuzz/corpus/checkpoint.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Checkpoint.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto info = zb::formats::parseCheckpoint(text, "fuzz/step-1/checkpoint.json");
  if (!info) {
    llvm::consumeError(info.takeError());
    return 0;
  }
  if (info->step < 1 || info->optimizerStep < 0 ||
      info->optimizerStep > info->step || info->planHash.size() != 16)
    std::abort();
  for (const auto &[name, sum] : info->checksums)
    if (name.empty() || name.find('/') != std::string::npos ||
        sum.size() != 16)
      std::abort();
  return 0;
}
