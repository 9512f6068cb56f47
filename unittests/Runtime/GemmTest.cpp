//===- GemmTest.cpp - zbrt_sgemm against a float64 triple loop ------------===//

#include "zbrt/zbrt.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
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
      SCOPED_TRACE(testing::Message() << "transA=" << tA << " transB=" << tB
                                      << " M=" << p.M << " N=" << p.N
                                      << " K=" << p.K);
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
      zbrt_sgemm((int64_t)a.data(), (int64_t)b.data(), (int64_t)got.data(),
                 p.M, p.N, p.K, tA, tB, alpha, beta, lda, ldb, ldc);
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

INSTANTIATE_TEST_SUITE_P(
    Shapes, SgemmTest,
    ::testing::Values(GemmCase{1, 1, 1, 0, 0, 0}, GemmCase{3, 5, 7, 0, 0, 0},
                      GemmCase{7, 3, 5, 2, 3, 1}, GemmCase{17, 4, 9, 5, 0, 3},
                      GemmCase{2, 33, 64, 1, 7, 2},
                      GemmCase{64, 48, 96, 0, 0, 0},
                      GemmCase{5, 1, 130, 3, 2, 4}));

TEST(Sgemm, ZeroKScalesC) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  float dummy = 0.0f;
  zbrt_sgemm((int64_t)&dummy, (int64_t)&dummy, (int64_t)c.data(), 2, 2, 0, 0,
             0, 1.0f, 0.5f, 0, 0, 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  zbrt_sgemm((int64_t)&dummy, (int64_t)&dummy, (int64_t)c.data(), 2, 2, 0, 0,
             0, 1.0f, 0.0f, 0, 0, 2);
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
