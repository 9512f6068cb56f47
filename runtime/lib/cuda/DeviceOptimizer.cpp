//===- DeviceOptimizer.cpp - zb runtime: optimizer kernels ----------------===//

#include "DeviceOptimizer.h"

#include "../Internal.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

using namespace zbrt;
using namespace zbrt::cuda;

extern "C" const unsigned char zbrt_optimizer_fatbin[];
extern "C" const size_t zbrt_optimizer_fatbin_size;

namespace {

constexpr int kOptimizerThreads = 256;
constexpr int kMaxSumBlocks = 1024;
/// Blocks per tensor of the SGD and AdamW kernels.
constexpr unsigned kMaxUpdateBlocks = 65535;
/// Tables kept per kernel (the steady state needs one; two with
/// post-validation, whose steps alternate between two gradient sets).
constexpr size_t kKeptTables = 4;

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
  check(d.cuModuleGetFunction(&sgdManyKernel, module, "zbrt_sgd_many_kernel"),
        "cuModuleGetFunction");
  check(
      d.cuModuleGetFunction(&adamwManyKernel, module, "zbrt_adamw_many_kernel"),
      "cuModuleGetFunction");
  check(d.cuModuleGetFunction(&sumSquaresManyKernel, module,
                              "zbrt_sum_squares_many_kernel"),
        "cuModuleGetFunction");
  CUdeviceptr p = 0;
  check(d.cuMemAllocManaged(&p, kMaxSumBlocks * sizeof(double) + 64,
                            kMemAttachGlobal),
        "cuMemAllocManaged", kMaxSumBlocks * sizeof(double) + 64);
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

unsigned DeviceOptimizer::assignBlocks(const ZbrtOptimizerTensor *tensors,
                                       int64_t count, unsigned most,
                                       const char *what) {
  slices.clear();
  long long blocks = 0;
  for (int64_t k = 0; k < count; ++k) {
    const ZbrtOptimizerTensor &t = tensors[k];
    if (t.n == 0)
      continue;
    long long b = blocksFor(t.n, most);
    slices.push_back({t.param, t.grad, t.m, t.v, (long long)t.n, blocks, b, 0});
    blocks += b;
  }
  // The grid's x dimension and the kernels' int count.
  if (blocks > 0x7fffffff)
    detail::fatalf("%s of %lld tensors: %lld blocks, more than one launch "
                   "takes",
                   what, (long long)count, blocks);
  return (unsigned)blocks;
}

const math::TensorSlice *
DeviceOptimizer::table(Handle stream, TableKind kind,
                       const std::vector<math::TensorSlice> &slices) {
  std::vector<Table> &kept = tables[kind];
  size_t bytes = slices.size() * sizeof(math::TensorSlice);
  for (Table &t : kept)
    if (t.host.size() == slices.size() &&
        std::memcmp(t.host.data(), slices.data(), bytes) == 0) {
      t.lastUse = ++uses;
      return t.device;
    }
  const Driver &d = driver();
  if (kept.size() >= kKeptTables) {
    // A launch on `stream` may still read the least recently used table:
    // wait for them (rare: a step hands over at most two sets of tensors
    // per kernel) before it is freed.
    check(d.cuStreamSynchronize(stream),
          "cuStreamSynchronize (an optimizer tensor table)");
    auto oldest =
        std::min_element(kept.begin(), kept.end(), [](auto &a, auto &b) {
          return a.lastUse < b.lastUse;
        });
    check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(oldest->device)),
          "cuMemFree");
    kept.erase(oldest);
  }
  CUdeviceptr p = 0;
  check(d.cuMemAllocManaged(&p, bytes, kMemAttachGlobal),
        "cuMemAllocManaged (optimizer tensor table)", bytes);
  Table t;
  t.host = slices;
  t.device = reinterpret_cast<math::TensorSlice *>(p);
  // A new allocation: no launch reads it yet, and it never changes.
  std::memcpy(t.device, slices.data(), bytes);
  t.lastUse = ++uses;
  ++uploads;
  kept.push_back(std::move(t));
  return kept.back().device;
}

void DeviceOptimizer::sgdMany(Handle stream, const ZbrtOptimizerTensor *tensors,
                              int64_t count, float scale, bool rollback) {
  load();
  unsigned blocks = assignBlocks(tensors, count, kMaxUpdateBlocks, "SGD");
  if (blocks == 0)
    return;
  const math::TensorSlice *entries = table(stream, SgdTable, slices);
  int n = (int)slices.size();
  int back = rollback;
  void *params[] = {&entries, &n, &scale, &back};
  launch(stream, sgdManyKernel, blocks, params,
         "cuLaunchKernel (SGD of many tensors)");
}

void DeviceOptimizer::adamwMany(Handle stream,
                                const ZbrtOptimizerTensor *tensors,
                                int64_t count,
                                const math::AdamWScalars &scalars,
                                bool rollback) {
  load();
  unsigned blocks = assignBlocks(tensors, count, kMaxUpdateBlocks, "AdamW");
  if (blocks == 0)
    return;
  const math::TensorSlice *entries = table(stream, AdamWTable, slices);
  int n = (int)slices.size();
  math::AdamWScalars s = scalars;
  int back = rollback;
  void *params[] = {&entries, &n, &s, &back};
  launch(stream, adamwManyKernel, blocks, params,
         "cuLaunchKernel (AdamW of many tensors)");
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
  std::vector<ZbrtOptimizerTensor> tensors(count);
  for (int64_t k = 0; k < count; ++k)
    tensors[k] = {nullptr, xs[k], nullptr, nullptr, ns[k]};
  unsigned blocks =
      assignBlocks(tensors.data(), count, kMaxSumBlocks, "the sums of squares");
  manyBlocks.resize(count);
  for (int64_t k = 0, s = 0; k < count; ++k)
    manyBlocks[k] = ns[k] == 0 ? 0 : (unsigned)slices[s++].blocks;
  if (blocks == 0)
    return;
  size_t bytes = blocks * (sizeof(double) + sizeof(int));
  const Driver &d = driver();
  // The previous use of the scratch has finished (it was waited for).
  if (bytes > manyBytes) {
    if (manyPartials)
      check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(manyPartials)),
            "cuMemFree");
    CUdeviceptr p = 0;
    check(d.cuMemAllocManaged(&p, bytes, kMemAttachGlobal),
          "cuMemAllocManaged", bytes);
    manyPartials = reinterpret_cast<double *>(p);
    manyBytes = bytes;
  }
  const math::TensorSlice *entries = table(stream, SumSquaresTable, slices);
  int n = (int)slices.size();
  double *partial = manyPartials;
  int *flags = reinterpret_cast<int *>(manyPartials + blocks);
  void *params[] = {&entries, &n, &partial, &flags};
  launch(stream, sumSquaresManyKernel, blocks, params,
         "cuLaunchKernel (sums of squares)");
}

void DeviceOptimizer::readSumSquaresMany(double *sums,
                                         int32_t *nonFinite) const {
  size_t totalBlocks = 0;
  for (unsigned blocks : manyBlocks)
    totalBlocks += blocks;
  const double *partial = manyPartials;
  const int *flags = reinterpret_cast<const int *>(manyPartials + totalBlocks);
  for (size_t k = 0; k < manyBlocks.size(); ++k) {
    double sum = 0;
    int bad = 0;
    for (unsigned i = 0; i < manyBlocks[k]; ++i) {
      sum += partial[i];
      bad |= flags[i];
    }
    partial += manyBlocks[k];
    flags += manyBlocks[k];
    sums[k] = sum;
    if (nonFinite)
      nonFinite[k] = bad != 0;
  }
}
