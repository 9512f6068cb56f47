//===- Gemm.cpp - zb runtime: the ABI of single-precision GEMM ------------===//

#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "BackendSelection.h"

#include <climits>

using namespace zbrt;
using detail::fatalf;

extern "C" void zbrt_sgemm(int64_t a, int64_t b, int64_t c, int64_t M,
                           int64_t N, int64_t K, int32_t transA, int32_t transB,
                           float alpha, float beta, int64_t lda, int64_t ldb,
                           int64_t ldc) {
  if (M < 0 || N < 0 || K < 0)
    fatalf("zbrt_sgemm: negative size M=%lld N=%lld K=%lld", (long long)M,
           (long long)N, (long long)K);
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX)
    fatalf("zbrt_sgemm: size or stride exceeds the BLAS integer range");
  // Row-major storage: op(A) is M x K, stored K x M when transposed.
  int64_t aCols = transA ? M : K;
  int64_t bCols = transB ? K : N;
  if (M == 0 || N == 0)
    return;
  if (ldc < N || (K > 0 && (lda < aCols || ldb < bCols)))
    fatalf("zbrt_sgemm: row stride too small (M=%lld N=%lld K=%lld "
           "transA=%d transB=%d lda=%lld ldb=%lld ldc=%lld)",
           (long long)M, (long long)N, (long long)K, transA, transB,
           (long long)lda, (long long)ldb, (long long)ldc);
  backend().sgemm(Gemm{reinterpret_cast<const float *>(a),
                       reinterpret_cast<const float *>(b),
                       reinterpret_cast<float *>(c), M, N, K, transA != 0,
                       transB != 0, alpha, beta, lda, ldb, ldc});
}
