//===- SafetensorsTest.cpp - parameters as a safetensors file -------------===//
//
// zb/Runner/Safetensors.h on a plan filled by hand: the exact bytes of the
// file (header length, sorted JSON header padded to 8 bytes, the tensors in
// the header's order), and the names it refuses.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Safetensors.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace zb::formats;
using namespace zb::runner;

namespace {

/// A temporary file name, removed at the end of the test.
struct TempPath {
  llvm::SmallString<128> path;
  TempPath() {
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("zb-st", "safetensors", path));
  }
  ~TempPath() { (void)llvm::sys::fs::remove(path); }
};

/// A params.bin of `floats` floats: 0, 1, 2, ... in file order.
std::vector<char> countingParams(int64_t floats) {
  std::vector<char> bytes(4 * floats);
  for (int64_t i = 0; i < floats; ++i) {
    float v = (float)i;
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
  return bytes;
}

Plan threeParams() {
  Plan plan;
  plan.params = {ParamInfo{"wte.weight", {2, 3}, 0, 0, 0},
                 ParamInfo{"h.0.bias", {2}, 1, 1, 24},
                 ParamInfo{"scale", {}, 1, 1, 32}};
  plan.params[0].tiedCopies = {{0, 0}, {1, 1}};
  return plan;
}

TEST(Safetensors, ExactBytes) {
  TempPath tmp;
  std::vector<char> bin = countingParams(9);
  ASSERT_FALSE(
      llvm::errorToBool(writeSafetensors(tmp.path, threeParams(), bin)));
  auto buf = llvm::MemoryBuffer::getFile(tmp.path);
  ASSERT_TRUE(bool(buf));
  llvm::StringRef file = (*buf)->getBuffer();
  ASSERT_GE(file.size(), 8u);
  uint64_t n = llvm::support::endian::read64le(file.data());
  EXPECT_EQ(n % 8, 0u);
  const std::string json =
      R"({"__metadata__":{"format":"pt","producer":"zb"},)"
      R"("h.0.bias":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},)"
      R"("scale":{"data_offsets":[8,12],"dtype":"F32","shape":[]},)"
      R"("wte.weight":{"data_offsets":[12,36],"dtype":"F32","shape":[2,3]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  ASSERT_EQ(n, padded.size());
  EXPECT_EQ(file.substr(8, n), padded);
  // Sorted names: h.0.bias (floats 6, 7), scale (8), wte.weight (0..5).
  llvm::StringRef data = file.substr(8 + n);
  ASSERT_EQ(data.size(), 36u);
  const float want[9] = {6, 7, 8, 0, 1, 2, 3, 4, 5};
  EXPECT_EQ(0, std::memcmp(data.data(), want, sizeof want));
}

TEST(Safetensors, RefusedNames) {
  TempPath tmp;
  std::vector<char> bin = countingParams(9);
  Plan twice = threeParams();
  twice.params[2].name = "h.0.bias";
  EXPECT_EQ(llvm::toString(writeSafetensors(tmp.path, twice, bin)),
            "safetensors: parameter name 'h.0.bias' appears twice");
  Plan reserved = threeParams();
  reserved.params[1].name = "__metadata__";
  EXPECT_EQ(llvm::toString(writeSafetensors(tmp.path, reserved, bin)),
            "safetensors: parameter name '__metadata__' is the format's own "
            "key");
  bin.resize(32);
  EXPECT_EQ(llvm::toString(writeSafetensors(tmp.path, threeParams(), bin)),
            "safetensors: parameter 'scale' ends at byte 36 of 32");
  uint64_t size = 1;
  EXPECT_FALSE(llvm::sys::fs::file_size(tmp.path, size));
  EXPECT_EQ(size, 0u); // unchanged
}

TEST(Safetensors, ChosenByExtension) {
  EXPECT_TRUE(isSafetensorsPath("out/trained.safetensors"));
  EXPECT_FALSE(isSafetensorsPath("out/params.bin"));
  EXPECT_FALSE(isSafetensorsPath("safetensors"));
  EXPECT_FALSE(isSafetensorsPath("run.safetensors/params"));
}

} // namespace
