//===- ProfileFuzzer.cpp - libFuzzer target for profile.json --------------===//
//
// Arbitrary bytes to zb::formats::parseProfile (zb-compile --profile,
// zb-schedule profile=). An accepted profile has finite, non-negative costs.
// Seed corpus fuzz/corpus/profile.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Profile.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto profile = zb::formats::parseProfile(text, "fuzz/profile.json");
  if (!profile) {
    llvm::consumeError(profile.takeError());
    return 0;
  }
  for (const auto &s : profile->stages)
    for (double t : {s.tF, s.tB, s.tW, s.tComm})
      if (!std::isfinite(t) || t < 0)
        std::abort();
  return 0;
}
