//===- DeviceOptimizer.h - zb runtime: optimizer kernels --------*- C++ -*-===//
//
// Not installed. SGD, AdamW, their rollbacks and the sum of squares as the
// kernels of OptimizerKernels.cu (embedded in libzbrt as a fatbin, loaded
// at the first use) on the compute stream: the parameters, gradients and
// moments stay on the device.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H
#define ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H

#include "Driver.h"

#include "../OptimizerMath.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zbrt {
namespace cuda {

class DeviceOptimizer {
public:
  void sgd(Handle stream, float *param, const float *grad, int64_t n,
           float scale, bool rollback);
  void adamw(Handle stream, float *param, const float *grad, float *m, float *v,
             int64_t n, const math::AdamWScalars &scalars, bool rollback);
  /// Launches the sum of squares of x; returns the number of partial sums
  /// that readSumSquares adds once the host has waited for `stream`.
  unsigned launchSumSquares(Handle stream, const float *x, int64_t n);
  double readSumSquares(unsigned blocks, int32_t *nonFinite);
  /// Launches the sum of squares of each of `count` buffers into partial
  /// sums and a flag of its own; readSumSquaresMany adds them, in the order
  /// readSumSquares does, once the host has waited for `stream`.
  void launchSumSquaresMany(Handle stream, const float *const *xs,
                            const int64_t *ns, int64_t count);
  void readSumSquaresMany(double *sums, int32_t *nonFinite) const;

private:
  void load();
  void launch(Handle stream, Handle kernel, unsigned blocks, void **params,
              const char *what);
  Handle module = nullptr;
  Handle sgdKernel = nullptr, adamwKernel = nullptr, sumSquaresKernel = nullptr;
  double *partialSums = nullptr; // managed, kMaxSumBlocks
  int *nonFiniteFlag = nullptr;  // managed
  // launchSumSquaresMany's managed scratch: each buffer's partial sums, then
  // one flag per buffer; grown on demand (a step reuses it).
  double *manyPartials = nullptr;
  size_t manyBytes = 0;
  std::vector<unsigned> manyBlocks; // of the last launchSumSquaresMany
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H
