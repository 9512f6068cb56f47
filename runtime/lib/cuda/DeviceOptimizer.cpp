//===- DeviceOptimizer.cpp - zb runtime: optimizer kernels ----------------===//

#include "DeviceOptimizer.h"

#include "../Internal.h"

#include <algorithm>
#include <cstddef>

using namespace zbrt;
using namespace zbrt::cuda;

extern "C" const unsigned char zbrt_optimizer_fatbin[];
extern "C" const size_t zbrt_optimizer_fatbin_size;

namespace {

constexpr int kOptimizerThreads = 256;
constexpr int kMaxSumBlocks = 1024;

/// Blocks for n elements with grid-stride loops.
unsigned blocksFor(int64_t n, unsigned most) {
  int64_t blocks = (n + kOptimizerThreads - 1) / kOptimizerThreads;
  return (unsigned)std::max<int64_t>(1, std::min<int64_t>(blocks, most));
}

} // namespace

void DeviceOptimizer::load() {
  if (module)
    return;
  if (zbrt_optimizer_fatbin_size == 0)
    detail::fatalf("libzbrt was built without the CUDA toolkit (nvcc): it has "
                   "no optimizer kernels for the GPU; rebuild zb with the "
                   "toolkit");
  const Driver &d = driver();
  check(d.cuModuleLoadData(&module, zbrt_optimizer_fatbin),
        "cuModuleLoadData (optimizer kernels)");
  check(d.cuModuleGetFunction(&sgdKernel, module, "zbrt_sgd_kernel"),
        "cuModuleGetFunction");
  check(d.cuModuleGetFunction(&adamwKernel, module, "zbrt_adamw_kernel"),
        "cuModuleGetFunction");
  check(d.cuModuleGetFunction(&sumSquaresKernel, module,
                              "zbrt_sum_squares_kernel"),
        "cuModuleGetFunction");
  CUdeviceptr p = 0;
  check(d.cuMemAllocManaged(&p, kMaxSumBlocks * sizeof(double) + 64,
                            kMemAttachGlobal),
        "cuMemAllocManaged");
  partialSums = reinterpret_cast<double *>(p);
  nonFiniteFlag = reinterpret_cast<int *>(partialSums + kMaxSumBlocks);
}

void DeviceOptimizer::launch(Handle stream, Handle kernel, unsigned blocks,
                             void **params, const char *what) {
  check(driver().cuLaunchKernel(kernel, blocks, 1, 1, kOptimizerThreads, 1, 1,
                                0, stream, params, nullptr),
        what);
}

void DeviceOptimizer::sgd(Handle stream, float *param, const float *grad,
                          int64_t n, float scale, bool rollback) {
  load();
  long long count = n;
  int back = rollback;
  void *params[] = {&param, &grad, &count, &scale, &back};
  launch(stream, sgdKernel, blocksFor(n, 65535), params,
         "cuLaunchKernel (SGD)");
}

void DeviceOptimizer::adamw(Handle stream, float *param, const float *grad,
                            float *m, float *v, int64_t n,
                            const math::AdamWScalars &scalars, bool rollback) {
  load();
  long long count = n;
  int back = rollback;
  math::AdamWScalars s = scalars;
  void *params[] = {&param, &grad, &m, &v, &count, &s, &back};
  launch(stream, adamwKernel, blocksFor(n, 65535), params,
         "cuLaunchKernel (AdamW)");
}

unsigned DeviceOptimizer::launchSumSquares(Handle stream, const float *x,
                                           int64_t n) {
  load();
  unsigned blocks = blocksFor(n, kMaxSumBlocks);
  // The previous use of the buffers has finished (it was waited for).
  *nonFiniteFlag = 0;
  long long count = n;
  void *params[] = {&x, &count, &partialSums, &nonFiniteFlag};
  launch(stream, sumSquaresKernel, blocks, params,
         "cuLaunchKernel (sum of squares)");
  return blocks;
}

double DeviceOptimizer::readSumSquares(unsigned blocks, int32_t *nonFinite) {
  double sum = 0;
  for (unsigned i = 0; i < blocks; ++i)
    sum += partialSums[i];
  if (nonFinite)
    *nonFinite = *nonFiniteFlag != 0;
  return sum;
}

void DeviceOptimizer::launchSumSquaresMany(Handle stream,
                                           const float *const *xs,
                                           const int64_t *ns, int64_t count) {
  load();
  manyBlocks.resize(count);
  size_t totalBlocks = 0;
  for (int64_t k = 0; k < count; ++k)
    totalBlocks += manyBlocks[k] = blocksFor(ns[k], kMaxSumBlocks);
  size_t bytes = totalBlocks * sizeof(double) + count * sizeof(int);
  const Driver &d = driver();
  // The previous use of the scratch has finished (it was waited for).
  if (bytes > manyBytes) {
    if (manyPartials)
      check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(manyPartials)),
            "cuMemFree");
    CUdeviceptr p = 0;
    check(d.cuMemAllocManaged(&p, bytes, kMemAttachGlobal),
          "cuMemAllocManaged");
    manyPartials = reinterpret_cast<double *>(p);
    manyBytes = bytes;
  }
  int *flags = reinterpret_cast<int *>(manyPartials + totalBlocks);
  double *partial = manyPartials;
  for (int64_t k = 0; k < count; ++k) {
    int *flag = flags + k;
    *flag = 0;
    const float *x = xs[k];
    long long n = ns[k];
    void *params[] = {&x, &n, &partial, &flag};
    launch(stream, sumSquaresKernel, manyBlocks[k], params,
           "cuLaunchKernel (sum of squares)");
    partial += manyBlocks[k];
  }
}

void DeviceOptimizer::readSumSquaresMany(double *sums,
                                         int32_t *nonFinite) const {
  const double *partial = manyPartials;
  size_t totalBlocks = 0;
  for (unsigned blocks : manyBlocks)
    totalBlocks += blocks;
  const int *flags = reinterpret_cast<const int *>(manyPartials + totalBlocks);
  for (size_t k = 0; k < manyBlocks.size(); ++k) {
    double sum = 0;
    for (unsigned i = 0; i < manyBlocks[k]; ++i)
      sum += partial[i];
    partial += manyBlocks[k];
    sums[k] = sum;
    if (nonFinite)
      nonFinite[k] = flags[k] != 0;
  }
}
