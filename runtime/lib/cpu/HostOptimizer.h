//===- HostOptimizer.h - zb runtime: the optimizer on the host --*- C++ -*-===//
//
// Not installed. SGD, AdamW, their rollbacks and the sum of squares as loops
// over OptimizerMath.h's per-element updates: the CPU backend's optimizer,
// and the CUDA backend's when the kernels run on the host (cuda-emu).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CPU_HOSTOPTIMIZER_H
#define ZBRT_LIB_CPU_HOSTOPTIMIZER_H

#include "../OptimizerMath.h"

#include <cstdint>

namespace zbrt {
namespace cpu {

void sgd(float *param, const float *grad, int64_t n, float scale,
         bool rollback);
void adamw(float *param, const float *grad, float *m, float *v, int64_t n,
           const math::AdamWScalars &scalars, bool rollback);
double sumSquares(const float *x, int64_t n, int32_t *nonFinite);
/// sumSquares of each of `count` buffers (nonFinite, when given, per buffer).
void sumSquaresMany(const float *const *xs, const int64_t *ns, int64_t count,
                    double *sums, int32_t *nonFinite);

} // namespace cpu
} // namespace zbrt

#endif // ZBRT_LIB_CPU_HOSTOPTIMIZER_H
