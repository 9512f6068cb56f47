//===- FakeOptimizerKernels.cpp - libzbrt's own kernels on the host -------===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): libzbrt's optimizer module
// (runtime/lib/cuda/OptimizerKernels.cu), recognised by its kernel names in
// the fatbin, runs on the host with the same per-element code
// (OptimizerMath.h) after its arguments are unpacked as the driver would
// and every pointer is checked against the live device allocations (a
// check of the runtime's launch arguments, not of the device code). With
// no-op kernels (ZB_FAKE_CUDA_NOOP_KERNELS=1) they are checked, not run.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"
#include "FakeGraph.h"
#include "FakeKernels.h"

#include "../../runtime/lib/OptimizerMath.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

using namespace zbfake;

namespace {

// libzbrt's optimizer module: recognised by its kernel names in the blob.
int gOptimizerModule;
const void *gOptimizerBlob;
// sgd, adamw, sum of squares, then their multi-tensor forms.
constexpr int kOptimizerKernels = 6, kFirstManyKernel = 3;
int gKernels[kOptimizerKernels];
const char *kKernelNames[kOptimizerKernels] = {
    "zbrt_sgd_kernel",      "zbrt_adamw_kernel",
    "zbrt_sum_squares_kernel", "zbrt_sgd_many_kernel",
    "zbrt_adamw_many_kernel",  "zbrt_sum_squares_many_kernel"};
/// The index of an optimizer kernel in gKernels, or -1.
int optimizerKernel(const void *function) {
  for (int k = 0; k < kOptimizerKernels; ++k)
    if (function == &gKernels[k])
      return k;
  return -1;
}

/// The table of a multi-tensor kernel (OptimizerKernels.cu; params[0] and
/// the entries' count params[1]): device memory whose entries cover the
/// grid's blocks in order, each with 1 to ceil(n / blockX) blocks and the
/// pointers its kernel reads (grad; param for SGD; param, m, v for AdamW)
/// in device memory. Null with a message when not.
const zbrt::math::TensorSlice *manyTable(void **params, int kernel,
                                                unsigned gridX,
                                                unsigned blockX, int &count) {
  const auto *t = *static_cast<zbrt::math::TensorSlice **>(params[0]);
  count = *static_cast<int *>(params[1]);
  if (count <= 0 || !isDevice(t, sizeof(*t) * count, "optimizer table"))
    return nullptr;
  const bool update = kernel != kFirstManyKernel + 2;
  const bool adamw = kernel == kFirstManyKernel + 1;
  long long next = 0;
  for (int k = 0; k < count; ++k) {
    const zbrt::math::TensorSlice &e = t[k];
    size_t bytes = (size_t)e.n * 4;
    bool ok = e.firstBlock == next && e.n >= 1 && e.blocks >= 1 &&
              (e.blocks - 1) * (long long)blockX < e.n &&
              isDevice(e.grad, bytes, "optimizer table grad") &&
              (!update || isDevice(e.param, bytes, "optimizer table param")) &&
              (!adamw || (isDevice(e.m, bytes, "optimizer table m") &&
                          isDevice(e.v, bytes, "optimizer table v")));
    if (!ok) {
      std::fprintf(stderr, "fake-cuda: %s: table entry %d of %d is wrong\n",
                   kKernelNames[kernel], k, count);
      return nullptr;
    }
    next += e.blocks;
  }
  if (next == gridX)
    return t;
  std::fprintf(stderr, "fake-cuda: %s: the table has %lld blocks, the grid %u\n",
               kKernelNames[kernel], next, gridX);
  return nullptr;
}

/// libzbrt's multi-tensor kernels (OptimizerKernels.cu) on the host: the
/// single-tensor kernels' per-element code over every table entry as if it
/// were launched alone with the entry's blocks.
CUresult launchManyKernel(int kernel, unsigned gridX, unsigned blockX,
                                 void **params) {
  zbfake::DeviceAccess open; // the table may be device memory
  int count = 0;
  const zbrt::math::TensorSlice *table =
      manyTable(params, kernel, gridX, blockX, count);
  if (!table)
    return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  if (kernel == kFirstManyKernel + 2) {
    double *partial = *static_cast<double **>(params[2]);
    int *nonFinite = *static_cast<int **>(params[3]);
    if (!isDevice(partial, gridX * 8, "sums of squares partials") ||
        !isDevice(nonFinite, gridX * 4, "sums of squares flags"))
      return 700;
    if (zbfake::noopKernels())
      return kOk; // the partial sums stay as they are
    for (const auto *e = table; e < table + count; ++e) {
      // Element i belongs to block (i mod (blocks * blockX)) / blockX.
      long long threads = e->blocks * blockX;
      double *part = partial + e->firstBlock;
      int *bad = nonFinite + e->firstBlock;
      std::fill(part, part + e->blocks, 0.0);
      std::fill(bad, bad + e->blocks, 0);
      for (long long i = 0; i < e->n; ++i) {
        long long b = (i % threads) / blockX;
        if (!std::isfinite(e->grad[i]))
          bad[b] = 1;
        part[b] += (double)e->grad[i] * (double)e->grad[i];
      }
    }
    return kOk;
  }
  if (zbfake::noopKernels())
    return kOk;
  const int rollback = *static_cast<int *>(params[3]);
  for (const auto *e = table; e < table + count; ++e) {
    float *p = e->param, *m = e->m, *v = e->v;
    const float *g = e->grad;
    if (kernel == kFirstManyKernel + 1) {
      auto s = *static_cast<zbrt::math::AdamWScalars *>(params[2]);
      for (long long i = 0; i < e->n; ++i)
        rollback ? zbrt::math::adamwRollback(p[i], g[i], m[i], v[i], s)
                 : zbrt::math::adamwStep(p[i], g[i], m[i], v[i], s);
      continue;
    }
    float scale = *static_cast<float *>(params[2]);
    for (long long i = 0; i < e->n; ++i)
      rollback ? zbrt::math::sgdRollback(p[i], g[i], scale)
               : zbrt::math::sgdStep(p[i], g[i], scale);
  }
  return kOk;
}

} // namespace

bool zbfake::loadOptimizerModule(const std::string &image, const void *blob,
                                 void **module) {
  if (image.find(kKernelNames[1]) == std::string::npos)
    return false;
  *module = &gOptimizerModule;
  gOptimizerBlob = blob;
  return true;
}

bool zbfake::optimizerFunction(void *module, const char *name,
                               void **function, CUresult *result) {
  if (module != &gOptimizerModule)
    return false;
  *result = 500; // CUDA_ERROR_NOT_FOUND
  for (int k = 0; k < kOptimizerKernels; ++k)
    if (std::strcmp(name, kKernelNames[k]) == 0) {
      *function = &gKernels[k];
      zbfake::registerRuntimeKernel(&gKernels[k], gOptimizerBlob,
                                    kKernelNames[k]);
      *result = kOk;
    }
  return true;
}

bool zbfake::isOptimizerKernel(const void *function) {
  return optimizerKernel(function) >= 0;
}

CUresult zbfake::launchOptimizerKernel(const void *function, unsigned gridX,
                                       unsigned blockX, void **params) {
  auto arg = [&](int i) { return params[i]; };
  const int kernel = optimizerKernel(function);
  if (kernel >= kFirstManyKernel)
    return launchManyKernel(kernel, gridX, blockX, params);
  if (function == &gKernels[0]) {
    float *p = *static_cast<float **>(arg(0));
    const float *g = *static_cast<const float **>(arg(1));
    long long n = *static_cast<long long *>(arg(2));
    float scale = *static_cast<float *>(arg(3));
    int rollback = *static_cast<int *>(arg(4));
    if (!isDevice(p, n * 4, "SGD param") || !isDevice(g, n * 4, "SGD grad"))
      return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
    if (zbfake::noopKernels())
      return kOk;
    zbfake::DeviceAccess open;
    for (long long i = 0; i < n; ++i)
      rollback ? zbrt::math::sgdRollback(p[i], g[i], scale)
               : zbrt::math::sgdStep(p[i], g[i], scale);
    return kOk;
  }
  if (function == &gKernels[1]) {
    float *p = *static_cast<float **>(arg(0));
    const float *g = *static_cast<const float **>(arg(1));
    float *m = *static_cast<float **>(arg(2));
    float *v = *static_cast<float **>(arg(3));
    long long n = *static_cast<long long *>(arg(4));
    zbrt::math::AdamWScalars s =
        *static_cast<zbrt::math::AdamWScalars *>(arg(5));
    int rollback = *static_cast<int *>(arg(6));
    if (!isDevice(p, n * 4, "AdamW param") ||
        !isDevice(g, n * 4, "AdamW grad") || !isDevice(m, n * 4, "AdamW m") ||
        !isDevice(v, n * 4, "AdamW v"))
      return 700;
    if (zbfake::noopKernels())
      return kOk;
    zbfake::DeviceAccess open;
    for (long long i = 0; i < n; ++i)
      rollback ? zbrt::math::adamwRollback(p[i], g[i], m[i], v[i], s)
               : zbrt::math::adamwStep(p[i], g[i], m[i], v[i], s);
    return kOk;
  }
  if (function == &gKernels[2]) {
    const float *x = *static_cast<const float **>(arg(0));
    long long n = *static_cast<long long *>(arg(1));
    double *partial = *static_cast<double **>(arg(2));
    int *nonFinite = *static_cast<int **>(arg(3));
    if (!isDevice(x, n * 4, "sum of squares x") ||
        !isDevice(partial, gridX * 8, "sum of squares partials") ||
        !isDevice(nonFinite, 4, "sum of squares flag"))
      return 700;
    if (zbfake::noopKernels())
      return kOk; // the partial sums stay as they are
    zbfake::DeviceAccess open;
    // Element i belongs to block (i mod (grid * block)) / block.
    long long threads = (long long)gridX * blockX;
    for (unsigned b = 0; b < gridX; ++b)
      partial[b] = 0;
    for (long long i = 0; i < n; ++i) {
      if (!std::isfinite(x[i]))
        *nonFinite = 1;
      partial[(i % threads) / blockX] += (double)x[i] * (double)x[i];
    }
    return kOk;
  }
  return kNotSupported;
}
