//===- Gemm.cpp - zb runtime: the ABI of the row-major GEMMs --------------===//
//
// zbrt_sgemm (float32) and the bfloat16 GEMM of the memref forms
// (Gemm.h): sizes and row strides checked here, the product computed by
// the active backend.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "BackendSelection.h"
#include "Gemm.h"

#include <climits>

using namespace zbrt;
using detail::fatalf;

namespace {

/// zbrt_sgemm's checks, errors naming `fn`; false when C is empty (nothing
/// to compute).
bool checkGemm(const char *fn, int64_t M, int64_t N, int64_t K, int32_t transA,
               int32_t transB, int64_t lda, int64_t ldb, int64_t ldc) {
  if (M < 0 || N < 0 || K < 0)
    fatalf("%s: negative size M=%lld N=%lld K=%lld", fn, (long long)M,
           (long long)N, (long long)K);
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX)
    fatalf("%s: size or stride exceeds the BLAS integer range", fn);
  // Row-major storage: op(A) is M x K, stored K x M when transposed.
  int64_t aCols = transA ? M : K;
  int64_t bCols = transB ? K : N;
  if (M == 0 || N == 0)
    return false;
  if (ldc < N || (K > 0 && (lda < aCols || ldb < bCols)))
    fatalf("%s: row stride too small (M=%lld N=%lld K=%lld "
           "transA=%d transB=%d lda=%lld ldb=%lld ldc=%lld)",
           fn, (long long)M, (long long)N, (long long)K, transA, transB,
           (long long)lda, (long long)ldb, (long long)ldc);
  return true;
}

} // namespace

extern "C" void zbrt_sgemm(int64_t a, int64_t b, int64_t c, int64_t M,
                           int64_t N, int64_t K, int32_t transA, int32_t transB,
                           float alpha, float beta, int64_t lda, int64_t ldb,
                           int64_t ldc) {
  if (!checkGemm("zbrt_sgemm", M, N, K, transA, transB, lda, ldb, ldc))
    return;
  backend().sgemm(Gemm{reinterpret_cast<const float *>(a),
                       reinterpret_cast<const float *>(b),
                       reinterpret_cast<float *>(c), M, N, K, transA != 0,
                       transB != 0, alpha, beta, lda, ldb, ldc});
}

void zbrt::checkedGemmBf16(const char *fn, const GemmBf16 &g) {
  if (!checkGemm(fn, g.M, g.N, g.K, g.transA, g.transB, g.lda, g.ldb, g.ldc))
    return;
  backend().gemmBf16(g);
}
