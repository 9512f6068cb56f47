//===- FakeData.h - Values of the hand-written zb-run fixtures --*- C++ -*-===//
//
// Shared by the fixture generator (MakeFixtures.cpp) and the tests that
// predict the losses of the fake rank programs (fake_rank.c).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKEDATA_H
#define ZB_UNITTESTS_RUNTIME_FAKEDATA_H

#include <cstdint>
#include <vector>

namespace zbtest {

/// Dataset input_0.pb: kNumSamples samples of kSampleSize floats.
constexpr int64_t kNumSamples = 6;
constexpr int64_t kSampleSize = 3;
inline float fakeSample(int64_t s, int64_t i) {
  return (float)((s * 3 + i) % 5 - 2) * 0.25f + 0.1f * (float)(i + 1);
}

/// params.bin: 6 floats (fake1: w[3] then b[1]; fake2: w0[3] then w1[1];
/// mlir1: W[3][2]).
inline std::vector<float> fakeParams() {
  return {0.5f, -0.25f, 1.0f, 0.75f, -0.5f, 0.25f};
}

} // namespace zbtest

#endif // ZB_UNITTESTS_RUNTIME_FAKEDATA_H
