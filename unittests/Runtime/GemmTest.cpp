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
