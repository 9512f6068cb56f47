//===- HostOptimizer.cpp - zb runtime: the optimizer on the host ----------===//

#include "HostOptimizer.h"

#include <cmath>

using namespace zbrt;

void cpu::sgd(float *param, const float *grad, int64_t n, float scale,
              bool rollback) {
  if (rollback) {
    for (int64_t i = 0; i < n; ++i)
      math::sgdRollback(param[i], grad[i], scale);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    math::sgdStep(param[i], grad[i], scale);
}

void cpu::adamw(float *param, const float *grad, float *m, float *v, int64_t n,
                const math::AdamWScalars &scalars, bool rollback) {
  if (rollback) {
    for (int64_t i = 0; i < n; ++i)
      math::adamwRollback(param[i], grad[i], m[i], v[i], scalars);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    math::adamwStep(param[i], grad[i], m[i], v[i], scalars);
}

double cpu::sumSquares(const float *x, int64_t n, int32_t *nonFinite) {
  double sum = 0;
  int32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]))
      bad = 1;
    sum += (double)x[i] * (double)x[i];
  }
  if (nonFinite)
    *nonFinite = bad;
  return sum;
}

void cpu::sumSquaresMany(const float *const *xs, const int64_t *ns,
                         int64_t count, double *sums, int32_t *nonFinite) {
  for (int64_t k = 0; k < count; ++k)
    sums[k] = sumSquares(xs[k], ns[k], nonFinite ? nonFinite + k : nullptr);
}
