//===- Bfloat16.h - zb runtime: bfloat16 <-> float32 ------------*- C++ -*-===//
//
// Not installed. bfloat16 values as the runtime stores them: a uint16_t
// holding the top 16 bits of an IEEE-754 binary32 (sign, 8 exponent bits,
// 7 fraction bits). Widening is exact (a shift); narrowing rounds to the
// nearest bfloat16, ties to even, as IEEE-754 rounding does: finite values
// beyond the largest bfloat16 (plus half an ulp) become infinities,
// subnormals round to bfloat16 subnormals (or zero), signs (of zeros too)
// are kept, and a NaN stays a NaN, made quiet (the payload's top 6 bits
// kept). What the bf16 GEMMs (zbrt_gemm_bf16_memref) round their float32
// results with. No MLIR, no dependencies; C++17.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_BFLOAT16_H
#define ZBRT_LIB_BFLOAT16_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace zbrt {

/// The float32 of bfloat16 `h`: exact.
inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// `f` rounded to bfloat16, to nearest, ties to even.
inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  // NaN: truncating could clear every fraction bit left (an infinity), so
  // set the quiet bit.
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((bits >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept part's lowest bit rounds the dropped 16 bits
  // to nearest, ties to the even kept part; a carry moves into the exponent
  // (up to the infinity: 0x7f7fffff becomes 0x7f80).
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

/// out[i] = bf16ToFloat(in[i]) for i < n.
inline void convertBf16ToFloat(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = bf16ToFloat(in[i]);
}

/// out[i] = floatToBf16(in[i]) for i < n.
inline void convertFloatToBf16(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToBf16(in[i]);
}

/// A `rows` x `cols` matrix with row strides (elements) `inLd` and `outLd`:
/// out[i * outLd + j] = bf16ToFloat(in[i * inLd + j]).
inline void convertBf16ToFloat2D(const uint16_t *in, int64_t inLd, float *out,
                                 int64_t outLd, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    convertBf16ToFloat(in + i * inLd, out + i * outLd, (size_t)cols);
}

/// out[i * outLd + j] = floatToBf16(in[i * inLd + j]) over `rows` x `cols`.
inline void convertFloatToBf162D(const float *in, int64_t inLd, uint16_t *out,
                                 int64_t outLd, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    convertFloatToBf16(in + i * inLd, out + i * outLd, (size_t)cols);
}

} // namespace zbrt

#endif // ZBRT_LIB_BFLOAT16_H
