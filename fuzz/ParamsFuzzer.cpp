//===- ParamsFuzzer.cpp - libFuzzer target for params.bin -----------------===//
//
// Arbitrary bytes as the params.bin of a fixed plan: every parameter is read
// with zb::runner::readParam (the reader zb-run uses), which must either fill
// it or say which parameter does not fit; values it returns are finite (it
// refuses NaN/Inf). The first 8 bytes choose the parameters' offsets and
// element counts, the rest is the file. Seed corpus fuzz/corpus/params.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Data.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  // Offsets and counts as a plan.json could (wrongly) give them, including
  // negative and huge ones.
  int16_t layout[4];
  std::memcpy(layout, data, 8);
  llvm::StringRef bytes(reinterpret_cast<const char *>(data + 8), size - 8);
  for (int p = 0; p < 2; ++p) {
    int64_t offset = (int64_t)layout[2 * p] * 4;
    int64_t count = layout[2 * p + 1];
    std::vector<float> out(count > 0 ? count : 0);
    llvm::Error e = zb::runner::readParam("fuzz/params.bin", bytes, "w", offset,
                                        count, out.data());
    if (e) {
      llvm::consumeError(std::move(e));
      continue;
    }
    for (float v : out)
      if (!std::isfinite(v))
        std::abort(); // readParam must refuse non-finite parameters
  }
  return 0;
}
