//===- Bfloat16Test.cpp - runtime/lib/Bfloat16.h against llvm::APFloat ----===//
//
// The runtime's bfloat16 conversions (the rounding of the bf16 GEMMs'
// results) against an independent reference: llvm::APFloat's conversion of
// IEEE single to BFloat with roundingMode NearestTiesToEven. Widening is
// checked for all 65536 bfloat16 values, narrowing for the corner cases
// (ties to even and odd, subnormals, the largest finite value, overflow,
// NaN, signed zeros) and a sweep over random floats, also near ties.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/lib/Bfloat16.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using zbrt::bf16ToFloat;
using zbrt::floatToBf16;

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

/// APFloat's bfloat16 of `f`: round to nearest, ties to even.
uint16_t referenceRound(float f) {
  llvm::APFloat x(f);
  bool losesInfo = false;
  x.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return (uint16_t)x.bitcastToAPInt().getZExtValue();
}

/// APFloat's float32 of bfloat16 `h`.
float referenceWiden(uint16_t h) {
  llvm::APFloat x(llvm::APFloat::BFloat(), llvm::APInt(16, h));
  bool losesInfo = false;
  x.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return x.convertToFloat();
}

bool isNaN16(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

/// Whether floatToBf16(bits) equals the reference (a NaN must give a quiet
/// NaN of the same sign); else `why` says what it gave.
bool roundsRight(uint32_t bits, std::string &why) {
  float f = fromBits(bits);
  uint16_t got = floatToBf16(f);
  uint16_t want = std::isnan(f) ? 0 : referenceRound(f);
  bool ok = std::isnan(f)
                ? isNaN16(got) && (got & 0x40) && (got >> 15) == (bits >> 31)
                : got == want;
  if (!ok) {
    char text[96];
    std::snprintf(text, sizeof text, "float 0x%08x -> 0x%04x, want 0x%04x%s",
                  bits, got, want, std::isnan(f) ? " (a quiet NaN)" : "");
    why = text;
  }
  return ok;
}

void expectRounds(uint32_t bits) {
  std::string why;
  EXPECT_TRUE(roundsRight(bits, why)) << why;
}

TEST(Bfloat16, WideningIsExactForEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float got = bf16ToFloat((uint16_t)h);
    EXPECT_EQ(bitsOf(got), h << 16);
    if (isNaN16((uint16_t)h)) {
      EXPECT_TRUE(std::isnan(referenceWiden((uint16_t)h)));
      continue;
    }
    EXPECT_EQ(bitsOf(got), bitsOf(referenceWiden((uint16_t)h)))
        << "bf16 0x" << std::hex << h;
    // Every bfloat16 is a float32 that narrows back to itself.
    EXPECT_EQ(floatToBf16(got), h) << "bf16 0x" << std::hex << h;
  }
}

TEST(Bfloat16, CornerCases) {
  struct Case {
    uint32_t in;
    uint16_t out;
    const char *what;
  } cases[] = {
      // Ties: 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd).
      {0x3f808000, 0x3f80, "tie, down to even"},
      {0x3f818000, 0x3f82, "tie, up to even"},
      {0xbf808000, 0xbf80, "negative tie, down to even"},
      {0xbf818000, 0xbf82, "negative tie, up to even"},
      {0x3f808001, 0x3f81, "just above a tie"},
      {0x3f807fff, 0x3f80, "just below a tie"},
      {0x3f80ffff, 0x3f81, "just below the next value"},
      {0x3fffffff, 0x4000, "carry into the exponent"},
      // Subnormals (bfloat16 has float32's exponent range).
      {0x00000001, 0x0000, "smallest subnormal to zero"},
      {0x00008000, 0x0000, "subnormal tie to even zero"},
      {0x00008001, 0x0001, "above the subnormal tie"},
      {0x00018000, 0x0002, "subnormal tie, up to even"},
      {0x00010000, 0x0001, "smallest bfloat16 subnormal"},
      {0x007fffff, 0x0080, "largest subnormal up to the smallest normal"},
      {0x807fffff, 0x8080, "negative largest subnormal"},
      {0x80000001, 0x8000, "negative tiny to negative zero"},
      // Zeros.
      {0x00000000, 0x0000, "zero"},
      {0x80000000, 0x8000, "negative zero"},
      // The largest finite bfloat16 and overflow.
      {0x7f7f0000, 0x7f7f, "largest finite"},
      {0x7f7f7fff, 0x7f7f, "below the overflow threshold"},
      {0x7f7f8000, 0x7f80, "tie at the top: odd, so up to infinity"},
      {0x7f7fffff, 0x7f80, "FLT_MAX overflows"},
      {0xff7fffff, 0xff80, "-FLT_MAX overflows"},
      {0x7f800000, 0x7f80, "infinity"},
      {0xff800000, 0xff80, "-infinity"},
      // NaNs stay NaNs, quiet.
      {0x7fc00000, 0x7fc0, "quiet NaN"},
      {0xffc00000, 0xffc0, "negative quiet NaN"},
      {0x7f800001, 0x7fc0, "signalling NaN, low payload"},
      {0xff800001, 0xffc0, "negative signalling NaN"},
      {0x7fa12345, 0x7fe1, "NaN payload's top bits kept"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(floatToBf16(fromBits(c.in)), c.out) << std::hex << "0x" << c.in;
    expectRounds(c.in);
  }
  // Sanity of the references of the table.
  EXPECT_EQ(bf16ToFloat(0x7f7f), 3.38953139e38f);
  EXPECT_EQ(bf16ToFloat(0x0001), std::ldexp(1.0f, -133));
  EXPECT_TRUE(std::signbit(bf16ToFloat(floatToBf16(-0.0f))));
  EXPECT_TRUE(std::isnan(
      bf16ToFloat(floatToBf16(std::numeric_limits<float>::signaling_NaN()))));
}

TEST(Bfloat16, RandomFloatsMatchAPFloat) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> any;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  long checked = 0, wrong = 0;
  auto check = [&](uint32_t bits) {
    std::string why;
    ++checked;
    if (!roundsRight(bits, why) && ++wrong <= 10)
      ADD_FAILURE() << why;
  };
  for (int i = 0; i < 300000; ++i) {
    // Random bit patterns (every class), then the same near ties: the
    // dropped half exactly 0x8000, one below, one above.
    uint32_t bits = any(rng);
    check(bits);
    uint32_t high = bits & 0xffff0000u;
    check(high | 0x8000u);
    check(high | 0x7fffu);
    check(high | 0x8001u);
    // Ordinary magnitudes of training values.
    check(bitsOf(normal(rng)));
  }
  EXPECT_EQ(wrong, 0) << "of " << checked << " floats";
}

TEST(Bfloat16, BulkHelpers) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> f(37);
  for (float &v : f)
    v = normal(rng);
  std::vector<uint16_t> h(f.size());
  zbrt::convertFloatToBf16(f.data(), h.data(), f.size());
  std::vector<float> back(f.size());
  zbrt::convertBf16ToFloat(h.data(), back.data(), h.size());
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(h[i], referenceRound(f[i]));
    EXPECT_EQ(back[i], referenceWiden(h[i]));
  }
  // 2-D: a 3 x 4 block with row strides 7 (source) and 5 (destination);
  // the padding is not touched.
  const int64_t rows = 3, cols = 4;
  std::vector<float> src(rows * 7);
  for (float &v : src)
    v = normal(rng);
  std::vector<uint16_t> mid(rows * 5, 0xabcd);
  zbrt::convertFloatToBf162D(src.data(), 7, mid.data(), 5, rows, cols);
  std::vector<float> out(rows * 6, -7.0f);
  zbrt::convertBf16ToFloat2D(mid.data(), 5, out.data(), 6, rows, cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      EXPECT_EQ(mid[i * 5 + j], referenceRound(src[i * 7 + j]));
      EXPECT_EQ(out[i * 6 + j], bf16ToFloat(mid[i * 5 + j]));
    }
    EXPECT_EQ(mid[i * 5 + 4], 0xabcd);
    EXPECT_EQ(out[i * 6 + 4], -7.0f);
    EXPECT_EQ(out[i * 6 + 5], -7.0f);
  }
}

} // namespace
