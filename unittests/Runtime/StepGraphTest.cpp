//===- StepGraphTest.cpp - CUDA graphs of a step, through the stand-in ----===//
//
// zbrt's CUDA backend replays a step's kernels and GEMMs as CUDA graphs
// (runtime/lib/cuda/StepGraph.h) on libzb_fake_cuda.so, whose graphs record
// the captured calls and run them at each cuGraphLaunch (FakeGraph.cpp) and
// whose SGD kernel and GEMMs compute on the host. A "step" here is what
// zb-run's step is to the backend: zbrt::traceBeginStep(), launches from
// MLIR's host code (mgpuLaunchKernel on the compute stream) and GEMMs
// (zbrt_sgemm, and a bfloat16 one: zbrt_gemm_bf16_memref), zbrt_step_end().
// The reference is the same arithmetic done here step by step
// (OptimizerMath.h's SGD in float, the product in double, the bfloat16
// product of small integers exactly), so a replay that skips, repeats or
// reorders work, runs stale arguments or loses a divergence's matched
// prefix fails.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../../runtime/lib/Bfloat16.h"
#include "../../runtime/lib/OptimizerMath.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int64_t kRows = 4, kCols = 8, kN = kRows * kCols;

struct Fixture {
  void *sgd = nullptr;
  float *param, *grad, *b, *c;
  std::vector<float> refParam;
  /// C16 = A16 (kRows x kCols) * B16 (kCols x kCols) in bfloat16, and its
  /// expected value (small integers: exact, whatever the order).
  uint16_t *a16, *b16, *c16;
  std::vector<uint16_t> refC16;

  Fixture() {
    for (const char *var : {"ZBRT_CUDA_DRIVER", "ZBRT_CUBLAS", "ZBRT_NCCL"})
      setenv(var, ZB_FAKE_CUDA_LIB, 1);
    // Graphs need the host code to only launch (plan.json
    // host_reads_device_memory: false).
    zbrt_cuda_start(ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY);
    void *blob = dlsym(RTLD_DEFAULT, "zbrt_optimizer_fatbin");
    EXPECT_NE(blob, nullptr);
    sgd = mgpuModuleGetFunction(mgpuModuleLoad(blob, 0), "zbrt_sgd_kernel");
    auto alloc = [](int64_t n) {
      return static_cast<float *>(zbrt_host_buffer_alloc(n * sizeof(float)));
    };
    param = alloc(kN);
    grad = alloc(kN);
    b = alloc(kCols * kCols);
    c = alloc(kN);
    for (int64_t i = 0; i < kN; ++i) {
      param[i] = 0.25f * (float)(i % 7) - 0.5f;
      grad[i] = 0.125f * (float)(i % 5) - 0.25f;
    }
    for (int64_t i = 0; i < kCols * kCols; ++i)
      b[i] = (i % 3 == 0) ? 0.5f : -0.25f;
    refParam.assign(param, param + kN);
    auto alloc16 = [](int64_t n) {
      return static_cast<uint16_t *>(
          zbrt_host_buffer_alloc(n * sizeof(uint16_t)));
    };
    a16 = alloc16(kN);
    b16 = alloc16(kCols * kCols);
    c16 = alloc16(kN);
    for (int64_t i = 0; i < kN; ++i)
      a16[i] = zbrt::floatToBf16((float)(i % 5) - 2.0f);
    for (int64_t i = 0; i < kCols * kCols; ++i)
      b16[i] = zbrt::floatToBf16((float)(i % 7) - 3.0f);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kCols; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < kCols; ++k)
          sum += zbrt::bf16ToFloat(a16[r * kCols + k]) *
                 zbrt::bf16ToFloat(b16[k * kCols + j]);
        refC16.push_back(zbrt::floatToBf16(sum));
      }
  }

  /// mgpuLaunchKernel of zbrt_sgd_kernel(param, grad, n, scale, 0) on the
  /// compute stream, as MLIR's host code launches.
  void launchSgd(float scale) {
    float *p = param;
    const float *g = grad;
    long long n = kN;
    int rollback = 0;
    void *params[] = {&p, &g, &n, &scale, &rollback};
    mgpuLaunchKernel(sgd, 1, 1, 1, 64, 1, 1, 0, mgpuStreamCreate(), params,
                     nullptr, 5);
    for (int64_t i = 0; i < kN; ++i)
      zbrt::math::sgdStep(refParam[i], grad[i], scale);
  }

  /// C = param (kRows x kCols) * B (kCols x kCols).
  void gemm() {
    zbrt_sgemm((int64_t)param, (int64_t)b, (int64_t)c, kRows, kCols, kCols, 0,
               0, 1.0f, 0.0f, kCols, kCols, kCols);
  }

  /// C16 = A16 * B16 (cublasGemmEx).
  void gemmBf16() {
    zbrt_gemm_bf16_memref(a16, a16, 0, kRows, kCols, kCols, 1, b16, b16, 0,
                          kCols, kCols, kCols, 1, c16, c16, 0, kRows, kCols,
                          kCols, 1, 0, 0);
  }

  /// One step: two SGD launches around the GEMMs; `hostWait` puts a host
  /// wait (a segment boundary) between them. C16 is cleared first (a NaN
  /// pattern), so a replay that skips the bfloat16 GEMM leaves it.
  void step(float scale1, float scale2, bool hostWait) {
    std::fill(c16, c16 + kN, uint16_t(0xffff));
    zbrt::traceBeginStep();
    launchSgd(scale1);
    gemm();
    gemmBf16();
    if (hostWait)
      zbrt_cuda_synchronize();
    launchSgd(scale2);
    zbrt_step_end();
    zbrt_cuda_synchronize();
  }

  /// Checks param and C against the reference.
  void check(const std::string &what) {
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_EQ(param[i], refParam[i]) << what << ", element " << i;
    // C was computed between the two updates: from `afterFirst`.
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kCols; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < kCols; ++k)
          sum += (double)afterFirst[r * kCols + k] * (double)b[k * kCols + j];
        ASSERT_NEAR(c[r * kCols + j], sum, 1e-5)
            << what << ", C[" << r << "][" << j << "]";
      }
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_EQ(c16[i], refC16[i]) << what << ", C16 element " << i;
  }

  std::vector<float> afterFirst;

  void runStep(float scale1, float scale2, bool hostWait,
               const std::string &what) {
    // The reference of param after the first update, for C.
    std::vector<float> before = refParam;
    afterFirst = before;
    for (int64_t i = 0; i < kN; ++i)
      zbrt::math::sgdStep(afterFirst[i], grad[i], scale1);
    step(scale1, scale2, hostWait);
    check(what);
  }
};

ZbrtCudaStats stats() {
  ZbrtCudaStats s{};
  zbrt_cuda_stats(&s);
  return s;
}

TEST(StepGraph, CapturesReplaysAndRecapturesAfterADivergence) {
  Fixture f;
  f.runStep(0.5f, 0.25f, false, "step 1 (eager)");
  f.runStep(0.5f, 0.25f, false, "step 2 (captured)");
  ZbrtCudaStats s = stats();
  EXPECT_STREQ(s.graphs, "on");
  EXPECT_EQ(s.graphCaptures, 1);
  int64_t launchesBefore = s.kernelLaunches, graphsBefore = s.graphLaunches;
  f.runStep(0.5f, 0.25f, false, "step 3 (replayed)");
  f.runStep(0.5f, 0.25f, false, "step 4 (replayed)");
  s = stats();
  EXPECT_EQ(s.graphReplays, 2);
  EXPECT_EQ(s.graphDivergences, 0);
  // A replayed step launches nothing itself: one graph per step.
  EXPECT_EQ(s.kernelLaunches, launchesBefore);
  EXPECT_EQ(s.graphLaunches, graphsBefore + 2);

  // The second launch's scalar changes: the replay diverges after the
  // first launch and the GEMM matched; both must still run, once.
  f.runStep(0.5f, 0.125f, false, "step 5 (diverges)");
  s = stats();
  EXPECT_EQ(s.graphDivergences, 1);
  f.runStep(0.5f, 0.125f, false, "step 6 (captured again)");
  f.runStep(0.5f, 0.125f, false, "step 7 (replayed again)");
  s = stats();
  EXPECT_EQ(s.graphCaptures, 2);
  EXPECT_EQ(s.graphDivergences, 1);
  EXPECT_EQ(s.graphReplays, 4);

  // A host wait inside the step: the replay must not move the boundary
  // (diverges once), then two segments per step.
  f.runStep(0.5f, 0.125f, true, "step 8 (a new boundary)");
  f.runStep(0.5f, 0.125f, true, "step 9 (captured with two segments)");
  graphsBefore = stats().graphLaunches;
  f.runStep(0.5f, 0.125f, true, "step 10 (two segments replayed)");
  s = stats();
  EXPECT_EQ(s.graphDivergences, 2);
  EXPECT_EQ(s.graphLaunches, graphsBefore + 2);
  EXPECT_STREQ(s.graphs, "on");

  // A third divergence turns the graphs off for the run; steps stay right.
  f.runStep(0.5f, 0.5f, true, "step 11 (third divergence)");
  s = stats();
  EXPECT_EQ(s.graphDivergences, 3);
  EXPECT_EQ(std::string(s.graphs).rfind("off: the step's launches changed", 0),
            0u)
      << s.graphs;
  f.runStep(0.5f, 0.5f, true, "step 12 (eager)");
}

} // namespace
