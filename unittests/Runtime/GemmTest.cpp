//===- GemmTest.cpp - zbrt's GEMMs against a float64 triple loop ----------===//

#include "zbrt/zbrt.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <tuple>
#include <vector>

namespace {

struct GemmCase {
  int64_t M, N, K;
  int64_t padA, padB, padC; // extra elements per row (stride = cols + pad)
};

/// C = alpha * op(A) * op(B) + beta * C in float64, with the storage
/// conventions of zbrt.h (row-major; A stored K x M when transposed, B
/// stored N x K when transposed).
std::vector<double> referenceGemm(const std::vector<float> &a,
                                  const std::vector<float> &b,
                                  const std::vector<float> &c, int64_t M,
                                  int64_t N, int64_t K, bool tA, bool tB,
                                  double alpha, double beta, int64_t lda,
                                  int64_t ldb, int64_t ldc) {
  std::vector<double> out(c.begin(), c.end());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        double av = tA ? a[k * lda + i] : a[i * lda + k];
        double bv = tB ? b[j * ldb + k] : b[k * ldb + j];
        sum += av * bv;
      }
      out[i * ldc + j] = alpha * sum + beta * (double)c[i * ldc + j];
    }
  return out;
}

class SgemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(SgemmTest, MatchesFloat64ReferenceForAllTransposes) {
  const GemmCase p = GetParam();
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int tA = 0; tA < 2; ++tA) {
    for (int tB = 0; tB < 2; ++tB) {
      SCOPED_TRACE(testing::Message()
                   << "transA=" << tA << " transB=" << tB << " M=" << p.M
                   << " N=" << p.N << " K=" << p.K);
      int64_t aRows = tA ? p.K : p.M, aCols = tA ? p.M : p.K;
      int64_t bRows = tB ? p.N : p.K, bCols = tB ? p.K : p.N;
      int64_t lda = aCols + p.padA, ldb = bCols + p.padB, ldc = p.N + p.padC;
      std::vector<float> a(aRows * lda), b(bRows * ldb), c(p.M * ldc);
      for (float &v : a)
        v = dist(rng);
      for (float &v : b)
        v = dist(rng);
      for (float &v : c)
        v = dist(rng);
      const float alpha = 1.5f, beta = 0.25f;
      std::vector<double> expected = referenceGemm(
          a, b, c, p.M, p.N, p.K, tA, tB, alpha, beta, lda, ldb, ldc);
      std::vector<float> got = c;
      zbrt_sgemm((int64_t)a.data(), (int64_t)b.data(), (int64_t)got.data(), p.M,
                 p.N, p.K, tA, tB, alpha, beta, lda, ldb, ldc);
      for (int64_t i = 0; i < p.M; ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
          // float32 accumulation of K products of magnitude <= 1.
          double tol = 1e-6 * (4.0 + 2.0 * (double)p.K);
          EXPECT_NEAR(got[i * ldc + j], expected[i * ldc + j], tol)
              << "at (" << i << ", " << j << ")";
        }
        // Padding between rows is never written.
        for (int64_t j = p.N; j < ldc; ++j)
          EXPECT_EQ(got[i * ldc + j], c[i * ldc + j]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SgemmTest,
                         ::testing::Values(GemmCase{1, 1, 1, 0, 0, 0},
                                           GemmCase{3, 5, 7, 0, 0, 0},
                                           GemmCase{7, 3, 5, 2, 3, 1},
                                           GemmCase{17, 4, 9, 5, 0, 3},
                                           GemmCase{2, 33, 64, 1, 7, 2},
                                           GemmCase{64, 48, 96, 0, 0, 0},
                                           GemmCase{5, 1, 130, 3, 2, 4}));

TEST(Sgemm, ZeroKScalesC) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  float dummy = 0.0f;
  zbrt_sgemm((int64_t)&dummy, (int64_t)&dummy, (int64_t)c.data(), 2, 2, 0, 0, 0,
             1.0f, 0.5f, 0, 0, 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  zbrt_sgemm((int64_t)&dummy, (int64_t)&dummy, (int64_t)c.data(), 2, 2, 0, 0, 0,
             1.0f, 0.0f, 0, 0, 2);
  EXPECT_EQ(c, (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
}

TEST(Sgemm, BetaZeroIgnoresNaNInC) {
  // BLAS semantics: beta == 0 overwrites C (NaN garbage must not leak).
  std::vector<float> a = {1.0f, 2.0f}, b = {3.0f, 4.0f};
  std::vector<float> c = {NAN};
  zbrt_sgemm((int64_t)a.data(), (int64_t)b.data(), (int64_t)c.data(), 1, 1, 2,
             0, 0, 1.0f, 0.0f, 2, 1, 1);
  EXPECT_EQ(c[0], 11.0f);
}

} // namespace

namespace {

/// A row-major matrix inside a larger buffer, viewed with arbitrary strides.
struct StridedMatrix {
  std::vector<float> storage;
  int64_t rows, cols, offset, rowStride, colStride;
  float &at(int64_t i, int64_t j) {
    return storage[offset + i * rowStride + j * colStride];
  }
};

StridedMatrix makeStrided(int64_t rows, int64_t cols, int64_t rowStride,
                          int64_t colStride, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  StridedMatrix m{{}, rows, cols, 3, rowStride, colStride};
  int64_t extent = m.offset + (rows - 1) * rowStride + (cols - 1) * colStride;
  m.storage.resize(extent + 1);
  for (float &v : m.storage)
    v = dist(rng);
  return m;
}

void callSgemmMemref(StridedMatrix &a, StridedMatrix &b, StridedMatrix &c,
                     int tA, int tB) {
  zbrt_sgemm_memref(a.storage.data(), a.storage.data(), a.offset, a.rows,
                    a.cols, a.rowStride, a.colStride, b.storage.data(),
                    b.storage.data(), b.offset, b.rows, b.cols, b.rowStride,
                    b.colStride, c.storage.data(), c.storage.data(), c.offset,
                    c.rows, c.cols, c.rowStride, c.colStride, tA, tB);
}

// Row-major (inner stride 1), column-major (outer stride 1) and general
// strided views, all transpose flags.
TEST(SgemmMemref, StridedViewsMatchReference) {
  const int64_t M = 5, N = 4, K = 6;
  std::mt19937 rng(7);
  struct Layout {
    const char *name;
    int64_t rowStrideExtra, colStride; // colStride 0 means column-major
  };
  const Layout layouts[] = {
      {"row-major", 2, 1}, {"column-major", 0, 0}, {"strided", 1, 2}};
  for (int tA = 0; tA < 2; ++tA)
    for (int tB = 0; tB < 2; ++tB)
      for (const Layout &la : layouts)
        for (const Layout &lc : layouts) {
          SCOPED_TRACE(testing::Message()
                       << "tA=" << tA << " tB=" << tB << " A " << la.name
                       << " C " << lc.name);
          auto make = [&](int64_t r, int64_t c, const Layout &l) {
            if (l.colStride == 0)
              return makeStrided(r, c, 1, r + 1, rng);
            return makeStrided(r, c, c * l.colStride + l.rowStrideExtra,
                               l.colStride, rng);
          };
          StridedMatrix a = tA ? make(K, M, la) : make(M, K, la);
          StridedMatrix b = tB ? make(N, K, layouts[2]) : make(K, N, la);
          StridedMatrix c = make(M, N, lc);
          std::vector<double> expected(M * N, 0.0);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
              for (int64_t k = 0; k < K; ++k)
                expected[i * N + j] += (double)(tA ? a.at(k, i) : a.at(i, k)) *
                                       (double)(tB ? b.at(j, k) : b.at(k, j));
          callSgemmMemref(a, b, c, tA, tB);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
              EXPECT_NEAR(c.at(i, j), expected[i * N + j], 1e-5)
                  << "at (" << i << ", " << j << ")";
        }
}

// The batched form: 3 matrices at a batch stride with padding between them,
// every transpose combination; each matrix equals zbrt_sgemm_memref's
// result bit for bit (the same BLAS call per matrix) and a float64
// reference within 1e-5.
TEST(SgemmMemref, BatchedEqualsPerMatrixCalls) {
  const int64_t batch = 3, M = 4, N = 5, K = 3;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int tA = 0; tA < 2; ++tA)
    for (int tB = 0; tB < 2; ++tB) {
      SCOPED_TRACE(testing::Message() << "tA=" << tA << " tB=" << tB);
      int64_t aRows = tA ? K : M, aCols = tA ? M : K;
      int64_t bRows = tB ? N : K, bCols = tB ? K : N;
      // Batch strides with 7 elements of padding after each matrix.
      int64_t aStride = aRows * aCols + 7, bStride = bRows * bCols + 7,
              cStride = M * N + 7;
      std::vector<float> a(batch * aStride), b(batch * bStride),
          c(batch * cStride, 0.0f), single(M * N);
      for (float &v : a)
        v = dist(rng);
      for (float &v : b)
        v = dist(rng);
      zbrt_sgemm_batched_memref(
          a.data(), a.data(), 0, batch, aRows, aCols, aStride, aCols, 1,
          b.data(), b.data(), 0, batch, bRows, bCols, bStride, bCols, 1,
          c.data(), c.data(), 0, batch, M, N, cStride, N, 1, tA, tB);
      for (int64_t i = 0; i < batch; ++i) {
        float *ai = a.data() + i * aStride, *bi = b.data() + i * bStride;
        zbrt_sgemm_memref(ai, ai, 0, aRows, aCols, aCols, 1, bi, bi, 0, bRows,
                          bCols, bCols, 1, single.data(), single.data(), 0, M,
                          N, N, 1, tA, tB);
        for (int64_t r = 0; r < M; ++r)
          for (int64_t col = 0; col < N; ++col) {
            double want = 0;
            for (int64_t k = 0; k < K; ++k)
              want += (double)(tA ? ai[k * aCols + r] : ai[r * aCols + k]) *
                      (double)(tB ? bi[col * bCols + k] : bi[k * bCols + col]);
            float got = c[i * cStride + r * N + col];
            EXPECT_EQ(got, single[r * N + col]);
            EXPECT_NEAR(got, want, 1e-5);
          }
      }
    }
}

TEST(SgemmMemref, CInterfaceForm) {
  float a[6] = {1, 2, 3, 4, 5, 6}; // 2x3
  float b[3] = {1, 0, -1};         // 3x1
  float c[2] = {0, 0};
  ZbrtMemref2D ma{a, a, 0, {2, 3}, {3, 1}};
  ZbrtMemref2D mb{b, b, 0, {3, 1}, {1, 1}};
  ZbrtMemref2D mc{c, c, 0, {2, 1}, {1, 1}};
  _mlir_ciface_zbrt_sgemm_memref(&ma, &mb, &mc, 0, 0);
  EXPECT_EQ(c[0], 1.0f - 3.0f);
  EXPECT_EQ(c[1], 4.0f - 6.0f);
}

} // namespace

//===-- bfloat16 GEMMs (zbrt_gemm_bf16_memref) on the CPU backend ---------===//

namespace {

float widen(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// APFloat's bfloat16 of `x` (round to nearest, ties to even): a reference
/// independent of runtime/lib/Bfloat16.h.
uint16_t roundBf16(float x) {
  llvm::APFloat v(x);
  bool losesInfo = false;
  v.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return (uint16_t)v.bitcastToAPInt().getZExtValue();
}

/// The distance between consecutive bfloat16 values around |x|.
double bf16Ulp(double x) {
  int exponent = 0;
  std::frexp(std::max(std::fabs(x), std::ldexp(1.0, -126)), &exponent);
  return std::ldexp(1.0, exponent - 8);
}

/// A bfloat16 matrix inside a larger buffer, viewed with arbitrary strides.
struct Bf16Matrix {
  std::vector<uint16_t> storage;
  int64_t rows, cols, offset, rowStride, colStride;
  uint16_t &at(int64_t i, int64_t j) {
    return storage[offset + i * rowStride + j * colStride];
  }
};

/// `rows` x `cols` at offset 2 with the given strides; the elements are
/// bfloat16 roundings of uniform values in [-1, 1), or small integers in
/// [-8, 8] when `integers` (their float32 sums are exact in any order).
Bf16Matrix makeBf16(int64_t rows, int64_t cols, int64_t rowStride,
                    int64_t colStride, std::mt19937 &rng, bool integers) {
  Bf16Matrix m{{}, rows, cols, 2, rowStride, colStride};
  m.storage.resize(m.offset + (rows - 1) * rowStride + (cols - 1) * colStride +
                   1 + 3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(-8, 8);
  for (uint16_t &v : m.storage)
    v = roundBf16(integers ? (float)small(rng) : dist(rng));
  return m;
}

void callGemmBf16(Bf16Matrix &a, Bf16Matrix &b, Bf16Matrix &c, int tA, int tB) {
  zbrt_gemm_bf16_memref(
      a.storage.data(), a.storage.data(), a.offset, a.rows, a.cols, a.rowStride,
      a.colStride, b.storage.data(), b.storage.data(), b.offset, b.rows, b.cols,
      b.rowStride, b.colStride, c.storage.data(), c.storage.data(), c.offset,
      c.rows, c.cols, c.rowStride, c.colStride, tA, tB);
}

struct Bf16Layout {
  const char *name;
  int64_t rowPad, colStride; // colStride 0: column-major (a transposed view)
};
const Bf16Layout kBf16Layouts[] = {{"row-major", 0, 1},
                                   {"padded rows", 5, 1},
                                   {"column-major", 0, 0},
                                   {"strided", 1, 2}};

Bf16Matrix makeBf16(int64_t rows, int64_t cols, const Bf16Layout &l,
                    std::mt19937 &rng, bool integers) {
  if (l.colStride == 0)
    return makeBf16(rows, cols, 1, rows + l.rowPad, rng, integers);
  return makeBf16(rows, cols, cols * l.colStride + l.rowPad, l.colStride, rng,
                  integers);
}

// Every transpose and layout (padded rows, transposed views, strided views
// that are copied) against a float64 reference of the same bfloat16 inputs:
// within one bfloat16 ulp plus float32's accumulation error; for K <= 2
// (whose float32 sum does not depend on the order of the additions) and for
// integer inputs (exact float32 sums), bit for bit the float32 sum rounded
// once to bfloat16 (ties to even). C's padding is never written.
TEST(GemmBf16Memref, Float32AccumulationRoundedOnce) {
  std::mt19937 rng(11);
  int cases = 0;
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {3, 5, 2},
                         {4, 3, 1},
                         {5, 4, 7},
                         {7, 6, 33},
                         {2, 9, 130}})
    for (bool integers : {false, true})
      for (int tA = 0; tA < 2; ++tA)
        for (int tB = 0; tB < 2; ++tB)
          for (const Bf16Layout &la : kBf16Layouts)
            for (const Bf16Layout &lc : kBf16Layouts) {
              const Bf16Layout &lb = kBf16Layouts[(&la - kBf16Layouts + 1) %
                                                  std::size(kBf16Layouts)];
              SCOPED_TRACE(testing::Message()
                           << M << "x" << N << "x" << K << " tA=" << tA
                           << " tB=" << tB << " A " << la.name << ", B "
                           << lb.name << ", C " << lc.name
                           << (integers ? ", integers" : ""));
              Bf16Matrix a = tA ? makeBf16(K, M, la, rng, integers)
                                : makeBf16(M, K, la, rng, integers);
              Bf16Matrix b = tB ? makeBf16(N, K, lb, rng, integers)
                                : makeBf16(K, N, lb, rng, integers);
              Bf16Matrix c = makeBf16(M, N, lc, rng, integers);
              const std::vector<uint16_t> cBefore = c.storage;
              callGemmBf16(a, b, c, tA, tB);
              ++cases;
              std::vector<bool> inC(c.storage.size(), false);
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                  double exact = 0, magnitude = 0;
                  float sum32 = 0.0f;
                  for (int64_t k = 0; k < K; ++k) {
                    float av = widen(tA ? a.at(k, i) : a.at(i, k));
                    float bv = widen(tB ? b.at(j, k) : b.at(k, j));
                    exact += (double)av * (double)bv;
                    magnitude += std::fabs((double)av * (double)bv);
                    sum32 += av * bv; // each product exact in float32
                  }
                  uint16_t got = c.at(i, j);
                  inC[c.offset + i * c.rowStride + j * c.colStride] = true;
                  double tol = bf16Ulp(exact) + K * std::ldexp(magnitude, -23);
                  EXPECT_LE(std::fabs((double)widen(got) - exact), tol)
                      << "at (" << i << ", " << j << ")";
                  if (K <= 2 || integers) {
                    EXPECT_EQ(got, roundBf16(sum32))
                        << "at (" << i << ", " << j << "): " << widen(got)
                        << " vs " << sum32;
                  }
                }
              for (size_t e = 0; e < inC.size(); ++e)
                if (!inC[e]) {
                  EXPECT_EQ(c.storage[e], cBefore[e])
                      << "padding element " << e << " written";
                }
            }
  EXPECT_EQ(cases, 6 * 2 * 4 * 4 * 4);
}

// Ties are rounded to even once, from the float32 sum: 1 + 2^-8 (a tie
// between 1 and 1 + 2^-7) gives 1, 1 + 3 * 2^-8 gives 1 + 2^-6; a sum beyond
// the largest bfloat16 (plus half an ulp) is an infinity; K = 0 writes
// zeros.
TEST(GemmBf16Memref, TiesOverflowAndEmptyK) {
  auto gemm = [](std::vector<uint16_t> a, std::vector<uint16_t> b) {
    uint16_t c = 0x7fc0;
    int64_t K = (int64_t)a.size();
    zbrt_gemm_bf16_memref(a.data(), a.data(), 0, 1, K, K, 1, b.data(), b.data(),
                          0, K, 1, 1, 1, &c, &c, 0, 1, 1, 1, 1, 0, 0);
    return c;
  };
  const uint16_t one = 0x3f80, half = 0x3f00;
  const uint16_t ulpOf1Over2 = roundBf16(std::ldexp(1.0f, -8)); // 2^-8
  EXPECT_EQ(gemm({one, ulpOf1Over2}, {one, one}), one);
  EXPECT_EQ(gemm({one, ulpOf1Over2}, {one, roundBf16(3.0f)}),
            roundBf16(1.0f + std::ldexp(1.0f, -6)));
  EXPECT_EQ(gemm({half, half}, {one, one}), one);
  // The largest finite bfloat16 and 2^-8 of it: beyond the threshold.
  const uint16_t maxBf16 = 0x7f7f;
  EXPECT_EQ(gemm({maxBf16, maxBf16}, {one, roundBf16(std::ldexp(1.0f, -8))}),
            0x7f80);
  EXPECT_EQ(gemm({maxBf16}, {one}), maxBf16);
  // NaN in, NaN out.
  uint16_t nan = gemm({0x7fc0, one}, {one, one});
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x7f, 0);
  // K = 0: C = 0.
  std::vector<uint16_t> c(6, 0x3f80);
  uint16_t dummy = 0;
  zbrt_gemm_bf16_memref(&dummy, &dummy, 0, 2, 0, 1, 1, &dummy, &dummy, 0, 0, 3,
                        3, 1, c.data(), c.data(), 0, 2, 3, 3, 1, 0, 0);
  EXPECT_EQ(c, std::vector<uint16_t>(6, 0));
}

// The batched form equals zbrt_gemm_bf16_memref per matrix, bit for bit.
TEST(GemmBf16Memref, BatchedEqualsPerMatrixCalls) {
  const int64_t batch = 3, M = 4, N = 5, K = 6;
  std::mt19937 rng(19);
  for (int tA = 0; tA < 2; ++tA)
    for (int tB = 0; tB < 2; ++tB) {
      SCOPED_TRACE(testing::Message() << "tA=" << tA << " tB=" << tB);
      int64_t aRows = tA ? K : M, aCols = tA ? M : K;
      int64_t bRows = tB ? N : K, bCols = tB ? K : N;
      int64_t aStride = aRows * aCols + 7, bStride = bRows * bCols + 7,
              cStride = M * N + 7;
      Bf16Matrix a = makeBf16(1, batch * aStride, 1, 1, rng, false);
      Bf16Matrix b = makeBf16(1, batch * bStride, 1, 1, rng, false);
      std::vector<uint16_t> c(batch * cStride, 0), single(M * N);
      uint16_t *ap = a.storage.data() + a.offset,
               *bp = b.storage.data() + b.offset;
      zbrt_gemm_bf16_batched_memref(ap, ap, 0, batch, aRows, aCols, aStride,
                                    aCols, 1, bp, bp, 0, batch, bRows, bCols,
                                    bStride, bCols, 1, c.data(), c.data(), 0,
                                    batch, M, N, cStride, N, 1, tA, tB);
      for (int64_t i = 0; i < batch; ++i) {
        uint16_t *ai = ap + i * aStride, *bi = bp + i * bStride;
        zbrt_gemm_bf16_memref(ai, ai, 0, aRows, aCols, aCols, 1, bi, bi, 0,
                              bRows, bCols, bCols, 1, single.data(),
                              single.data(), 0, M, N, N, 1, tA, tB);
        for (int64_t e = 0; e < M * N; ++e)
          EXPECT_EQ(c[i * cStride + e], single[e]) << "matrix " << i;
        for (int64_t e = M * N; e < cStride; ++e)
          EXPECT_EQ(c[i * cStride + e], 0) << "padding of matrix " << i;
      }
    }
}

TEST(GemmBf16MemrefDeathTest, MismatchedShapesAreFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint16_t> a(16), b(16), c(16);
  // A 2x3 times B 4x2.
  EXPECT_EXIT(zbrt_gemm_bf16_memref(a.data(), a.data(), 0, 2, 3, 3, 1, b.data(),
                                    b.data(), 0, 4, 2, 2, 1, c.data(), c.data(),
                                    0, 2, 2, 2, 1, 0, 0),
              testing::ExitedWithCode(1),
              "zbrt_gemm_bf16_memref: shape mismatch: A 2x3, B 4x2, C 2x2");
  // A^T (3x2 stored) times B 3x2 into C 2x3.
  EXPECT_EXIT(
      zbrt_gemm_bf16_memref(a.data(), a.data(), 0, 3, 2, 2, 1, b.data(),
                            b.data(), 0, 3, 2, 2, 1, c.data(), c.data(), 0, 2,
                            3, 3, 1, 1, 0),
      testing::ExitedWithCode(1),
      "zbrt_gemm_bf16_memref: shape mismatch: A 3x2 \\(transposed\\), B 3x2, "
      "C 2x3");
  EXPECT_EXIT(zbrt_gemm_bf16_batched_memref(a.data(), a.data(), 0, 2, 2, 2, 4,
                                            2, 1, b.data(), b.data(), 0, 3, 2,
                                            2, 4, 2, 1, c.data(), c.data(), 0,
                                            2, 2, 2, 4, 2, 1, 0, 0),
              testing::ExitedWithCode(1),
              "zbrt_gemm_bf16_batched_memref: batch sizes differ: A 2, B 3, "
              "C 2");
}

} // namespace
