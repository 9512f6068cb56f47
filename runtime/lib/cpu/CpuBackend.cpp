//===- CpuBackend.cpp - zb runtime: the CPU backend -----------------------===//

#include "CpuBackend.h"

#include "HostMessages.h"
#include "HostOptimizer.h"

#include <cblas.h>

#include <cstdlib>

using namespace zbrt;
using namespace zbrt::cpu;

namespace {

class CpuBackend final : public Backend {
public:
  void send(const void *buf, int64_t bytes, int32_t peer,
            int32_t tag) override {
    hostMessages().send(buf, bytes, peer, tag);
  }
  void recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) override {
    hostMessages().recv(buf, bytes, peer, tag);
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

  void *allocTemporary(size_t bytes, const char *) override {
    return std::calloc(bytes ? bytes : 1, 1);
  }
  void freeTemporary(void *p, const char *) override { std::free(p); }
};

} // namespace

Backend &zbrt::cpu::cpuBackend() {
  static CpuBackend b;
  return b;
}

void zbrt::cpu::configureBlasThreads() { openblas_set_num_threads(1); }
