//===- CpuBackend.cpp - zb runtime: the CPU backend -----------------------===//

#include "CpuBackend.h"

#include "HostMessages.h"
#include "HostOptimizer.h"

#include "../Bfloat16.h"
#include "../Internal.h"

#include <cblas.h>

#include <cstdlib>
#include <vector>

using namespace zbrt;
using namespace zbrt::cpu;

namespace {

class CpuBackend final : public Backend {
public:
  MessageWork send(const void *buf, int64_t bytes, int32_t peer,
                   int32_t tag) override {
    return hostMessages().send(buf, bytes, peer, tag);
  }
  MessageWork recv(void *buf, int64_t bytes, int32_t peer,
                   int32_t tag) override {
    return hostMessages().recv(buf, bytes, peer, tag);
  }
  void waitRequest(void *mpiRequest, const char *what) override {
    hostMessages().wait(mpiRequest, what);
  }

  void sgemm(const Gemm &g) override {
    if (g.K == 0) {
      // C = beta * C (BLAS would reject lda < 1 here).
      for (int64_t i = 0; i < g.M; ++i)
        for (int64_t j = 0; j < g.N; ++j)
          g.c[i * g.ldc + j] =
              g.beta == 0.0f ? 0.0f : g.beta * g.c[i * g.ldc + j];
      return;
    }
    cblas_sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans,
                g.transB ? CblasTrans : CblasNoTrans, (int)g.M, (int)g.N,
                (int)g.K, g.alpha, g.a, (int)g.lda, g.b, (int)g.ldb, g.beta,
                g.c, (int)g.ldc);
  }

  /// bf16 inputs, float32 accumulation (autocast's matmul): A and B widened
  /// exactly into float32 scratch (as stored, rows packed), one cblas_sgemm
  /// into a float32 C, each element rounded to bf16 (nearest even).
  void gemmBf16(const GemmBf16 &g) override {
    const int64_t M = g.M, N = g.N, K = g.K;
    if (M == 0 || N == 0)
      return;
    float *c = grow(scratchC, (size_t)(M * N));
    if (g.beta != 0.0f)
      convertBf16ToFloat2D(g.c, g.ldc, c, N, M, N);
    if (K == 0) {
      // C = beta * C (BLAS would reject lda < 1 here).
      for (int64_t i = 0; i < M * N; ++i)
        c[i] = g.beta == 0.0f ? 0.0f : g.beta * c[i];
    } else {
      // Stored shapes: A is M x K (K x M when transposed), B is K x N.
      const int64_t aRows = g.transA ? K : M, aCols = g.transA ? M : K;
      const int64_t bRows = g.transB ? N : K, bCols = g.transB ? K : N;
      float *a = grow(scratchA, (size_t)(aRows * aCols));
      float *b = grow(scratchB, (size_t)(bRows * bCols));
      convertBf16ToFloat2D(g.a, g.lda, a, aCols, aRows, aCols);
      convertBf16ToFloat2D(g.b, g.ldb, b, bCols, bRows, bCols);
      cblas_sgemm(CblasRowMajor, g.transA ? CblasTrans : CblasNoTrans,
                  g.transB ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                  g.alpha, a, (int)aCols, b, (int)bCols, g.beta, c, (int)N);
    }
    convertFloatToBf162D(c, N, g.c, g.ldc, M, N);
  }

  void sgd(float *param, const float *grad, int64_t n, float scale,
           bool rollback) override {
    cpu::sgd(param, grad, n, scale, rollback);
  }
  void adamw(float *param, const float *grad, float *m, float *v, int64_t n,
             const math::AdamWScalars &scalars, bool rollback) override {
    cpu::adamw(param, grad, m, v, n, scalars, rollback);
  }
  double sumSquares(const float *x, int64_t n, int32_t *nonFinite) override {
    return cpu::sumSquares(x, n, nonFinite);
  }

  std::vector<DeviceTime> stepEnd() override {
    hostMessages().completeSends();
    return {};
  }
  void finalize() override { hostMessages().finalize(); }

  void *allocTemporary(size_t bytes, const char *what) override {
    void *p = std::calloc(bytes ? bytes : 1, 1);
    if (!p)
      detail::fatalOutOfMemory(detail::MemoryKind::Host, what, bytes,
                               nullptr);
    return p;
  }
  void freeTemporary(void *p, const char *) override { std::free(p); }

private:
  /// `v` with at least `n` elements (grown, never shrunk: the GEMMs of a
  /// step reuse the scratch of the previous step).
  static float *grow(std::vector<float> &v, size_t n) {
    if (v.size() < n)
      v.resize(n);
    return v.data();
  }
  /// gemmBf16's float32 operands and result.
  std::vector<float> scratchA, scratchB, scratchC;
};

} // namespace

Backend &zbrt::cpu::cpuBackend() {
  static CpuBackend b;
  return b;
}

namespace {
/// OpenBLAS's GEMM work buffer: BUFFER_SIZE (32 << 22 bytes in OpenBLAS 0.3
/// on x86_64 and arm64, common_x86_64.h / common_arm64.h) plus a page,
/// taken with malloc on a thread's first GEMM. OpenBLAS retries a failed
/// allocation forever (blas_memory_alloc in memory.c): a rank under
/// `ulimit -v` would spin instead of failing.
constexpr size_t kBlasBufferBytes = (size_t(32) << 22) + 4096;
} // namespace

void zbrt::cpu::configureBlasThreads() {
  openblas_set_num_threads(1);
  // Take OpenBLAS's buffer now, while the address space has room for it,
  // and fail with a message if it has not: probe with an allocation of the
  // buffer's size, then run a GEMM large enough to need the buffer (smaller
  // ones may take OpenBLAS's small-matrix path, which needs none).
  void *probe = std::malloc(kBlasBufferBytes);
  if (!probe)
    detail::fatalOutOfMemory(detail::MemoryKind::Host,
                             "OpenBLAS's GEMM work buffer", kBlasBufferBytes,
                             "it is taken once per process, before the "
                             "model's own memory");
  std::free(probe);
  constexpr int n = 128;
  std::vector<float> a(n * n, 0.0f), b(n * n, 0.0f), c(n * n, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
              a.data(), n, b.data(), n, 0.0f, c.data(), n);
}
