//===- DeviceOptimizer.h - zb runtime: optimizer kernels --------*- C++ -*-===//
//
// Not installed. SGD, AdamW, their rollbacks and the sum of squares as the
// kernels of OptimizerKernels.cu (embedded in libzbrt as a fatbin, loaded
// at the first use) on the compute stream: the parameters, gradients and
// moments stay on the device. The *Many forms are one launch for all their
// tensors, which a table in managed memory describes (math::TensorSlice);
// the last few tables of each kernel are kept, so that a step that hands
// over the same tensors as an earlier one (the steady state, also with
// post-validation's two gradient sets) makes no driver call but the launch.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H
#define ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H

#include "Driver.h"

#include "../OptimizerMath.h"

#include "zbrt/zbrt.h"

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
  /// sgd / adamw of each of `count` tensors in one launch (none when every
  /// tensor is empty).
  void sgdMany(Handle stream, const ZbrtOptimizerTensor *tensors, int64_t count,
               float scale, bool rollback);
  void adamwMany(Handle stream, const ZbrtOptimizerTensor *tensors,
                 int64_t count, const math::AdamWScalars &scalars,
                 bool rollback);
  /// Tables uploaded so far (a test's measure of the cache).
  int64_t tableUploads() const { return uploads; }

private:
  void load();
  void launch(Handle stream, Handle kernel, unsigned blocks, void **params,
              const char *what);
  /// The kernels that take a table.
  enum TableKind { SgdTable, AdamWTable, SumSquaresTable, TableKinds };
  struct Table {
    std::vector<math::TensorSlice> host; // what `device` holds
    math::TensorSlice *device = nullptr; // managed
    uint64_t lastUse = 0;
  };
  /// The device copy of `slices` (the non-empty tensors, their blocks
  /// assigned) for a launch on `stream`: a kept table with the same
  /// contents, else a new one (the least recently used of `kind` is freed,
  /// after `stream` is waited for, when there are too many).
  const math::TensorSlice *table(Handle stream, TableKind kind,
                                 const std::vector<math::TensorSlice> &slices);
  /// slices = the tensors with n > 0, firstBlock and blocks assigned with
  /// at most `most` blocks per tensor; returns the grid's blocks.
  unsigned assignBlocks(const ZbrtOptimizerTensor *tensors, int64_t count,
                        unsigned most, const char *what);

  Handle module = nullptr;
  Handle sgdKernel = nullptr, adamwKernel = nullptr, sumSquaresKernel = nullptr;
  Handle sgdManyKernel = nullptr, adamwManyKernel = nullptr,
         sumSquaresManyKernel = nullptr;
  std::vector<Table> tables[TableKinds];
  uint64_t uses = 0;
  int64_t uploads = 0;
  std::vector<math::TensorSlice> slices; // assignBlocks' result, reused
  double *partialSums = nullptr; // managed, kMaxSumBlocks
  int *nonFiniteFlag = nullptr;  // managed
  // launchSumSquaresMany's managed scratch: a partial sum per block of its
  // grid, then a non-finite flag per block; grown on demand (a step reuses
  // it).
  double *manyPartials = nullptr;
  size_t manyBytes = 0;
  // Per buffer of the last launchSumSquaresMany: its blocks (0 when empty).
  std::vector<unsigned> manyBlocks;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DEVICEOPTIMIZER_H
