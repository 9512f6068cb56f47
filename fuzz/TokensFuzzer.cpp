//===- TokensFuzzer.cpp - libFuzzer target for zb-run's token files -------===//
//
// Arbitrary bytes as a token file (zb::runner::parseTokenFileLayout: npy,
// llm.c or raw uint16/uint32 ids). An accepted layout holds at least one id
// and all of its ids lie inside the file. Seed corpus fuzz/corpus/tokens.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Tokens.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

using namespace zb::runner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::StringRef head = bytes.take_front(kTokenFileHeaderBytes);
  for (TokenDType raw : {TokenDType::UInt16, TokenDType::UInt32}) {
    auto layout = parseTokenFileLayout(head, size, raw, "fuzz.bin");
    if (!layout) {
      llvm::consumeError(layout.takeError());
      continue;
    }
    const TokenFileLayout &l = *layout;
    if (l.numTokens < 1 || (l.idBytes != 2 && l.idBytes != 4 && l.idBytes != 8) ||
        l.dataOffset > size ||
        (uint64_t)l.numTokens > (size - l.dataOffset) / (uint64_t)l.idBytes)
      std::abort();
  }
  return 0;
}
