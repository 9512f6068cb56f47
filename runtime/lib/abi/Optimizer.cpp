//===- Optimizer.cpp - zb runtime: the ABI of SGD and AdamW ---------------===//
//
// AdamW follows Loshchilov & Hutter, "Decoupled Weight Decay Regularization"
// (ICLR 2019), Algorithm 2, in the exact form of torch.optim.AdamW
// (single-tensor, non-amsgrad): decoupled decay p *= 1 - lr * wd, then the
// bias-corrected Adam update p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
// with bc1 = 1 - beta1^t, bc2 = 1 - beta2^t. The step-dependent scalars are
// computed here once; the active backend updates the elements
// (OptimizerMath.h).
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "../OptimizerMath.h"
#include "BackendSelection.h"

#include <cmath>

using namespace zbrt;
using detail::fatalf;

namespace {

/// AdamW's per-step scalars (bias corrections from the 1-based `step`,
/// decay = 1 - lr * weightDecay); `fn` names the entry point in the error
/// for a step below 1.
math::AdamWScalars adamwScalars(const char *fn, int64_t step, float lr,
                                float beta1, float beta2, float eps,
                                float weightDecay, float gradScale) {
  if (step < 1)
    fatalf("%s: step must be >= 1 (1-based), got %lld", fn, (long long)step);
  const float decay = 1.0f - lr * weightDecay;
  const double bc1 = 1.0 - std::pow((double)beta1, (double)step);
  const double bc2 = 1.0 - std::pow((double)beta2, (double)step);
  const float stepSize = (float)(lr / bc1);
  const float bc2Sqrt = (float)std::sqrt(bc2);
  return math::AdamWScalars{stepSize, bc2Sqrt, decay,    beta1,
                            beta2,    eps,     gradScale};
}

/// The _many entry points' checks (zbrt.h): `count` tensors at `tensors`,
/// each with n >= 0 and the pointers it needs (m, v for AdamW) when n > 0.
void checkTensors(const char *fn, const ZbrtOptimizerTensor *tensors,
                  int64_t count, bool adamw) {
  if (count < 0)
    fatalf("%s: count must be >= 0, got %lld", fn, (long long)count);
  if (count > 0 && !tensors)
    fatalf("%s: tensors is null with count %lld", fn, (long long)count);
  for (int64_t k = 0; k < count; ++k) {
    const ZbrtOptimizerTensor &t = tensors[k];
    if (t.n < 0)
      fatalf("%s: tensor %lld has %lld elements", fn, (long long)k,
             (long long)t.n);
    if (t.n == 0)
      continue;
    const char *null = !t.param        ? "param"
                       : !t.grad       ? "grad"
                       : adamw && !t.m ? "m"
                       : adamw && !t.v ? "v"
                                       : nullptr;
    if (null)
      fatalf("%s: tensor %lld (%lld elements) has a null %s", fn, (long long)k,
             (long long)t.n, null);
  }
}

/// zbrt_adamw_rollback's condition: every operation of the step can be
/// inverted.
void checkInvertible(const char *fn, float beta1, float beta2,
                     const math::AdamWScalars &scalars) {
  if (!(beta1 > 0) || !(beta2 > 0) || scalars.decay == 0.0f)
    fatalf("%s: not invertible (beta1 %g, beta2 %g, 1 - lr * weight_decay "
           "%g)",
           fn, (double)beta1, (double)beta2, (double)scalars.decay);
}

} // namespace

extern "C" void zbrt_sgd_step(float *param, const float *grad, int64_t n,
                              float lr, float gradScale) {
  backend().sgd(param, grad, n, lr * gradScale, /*rollback=*/false);
}

extern "C" void zbrt_adamw_step(float *param, const float *grad, float *m,
                                float *v, int64_t n, int64_t step, float lr,
                                float beta1, float beta2, float eps,
                                float weightDecay, float gradScale) {
  backend().adamw(param, grad, m, v, n,
                  adamwScalars("zbrt_adamw_step", step, lr, beta1, beta2, eps,
                               weightDecay, gradScale),
                  /*rollback=*/false);
}

extern "C" void zbrt_sgd_rollback(float *param, const float *grad, int64_t n,
                                  float lr, float gradScale) {
  backend().sgd(param, grad, n, lr * gradScale, /*rollback=*/true);
}

/// The step's operations undone in reverse order with the values the step
/// used: p' = decay * p - stepSize * m' / (sqrt(v') / bc2Sqrt + eps), with
/// m' = beta1 m + (1 - beta1) g and v' = beta2 v + (1 - beta2) g^2, so
/// p = (p' + stepSize * m' / denom(v')) / decay, m = (m' - (1 - beta1) g) /
/// beta1, v = (v' - (1 - beta2) g^2) / beta2 (each operation inverted in
/// float: a few ulps per element).
extern "C" void zbrt_adamw_rollback(float *param, const float *grad, float *m,
                                    float *v, int64_t n, int64_t step, float lr,
                                    float beta1, float beta2, float eps,
                                    float weightDecay, float gradScale) {
  const math::AdamWScalars scalars = adamwScalars(
      "zbrt_adamw_rollback", step, lr, beta1, beta2, eps, weightDecay, gradScale);
  checkInvertible("zbrt_adamw_rollback", beta1, beta2, scalars);
  backend().adamw(param, grad, m, v, n, scalars, /*rollback=*/true);
}

extern "C" double zbrt_sum_squares(const float *x, int64_t n,
                                   int32_t *nonFinite) {
  return backend().sumSquares(x, n, nonFinite);
}

extern "C" void zbrt_sum_squares_many(const float *const *xs, const int64_t *ns,
                                      int64_t count, double *sums,
                                      int32_t *nonFinite) {
  if (count < 0)
    fatalf("zbrt_sum_squares_many: count must be >= 0, got %lld",
           (long long)count);
  for (int64_t k = 0; k < count; ++k)
    if (ns[k] < 0)
      fatalf("zbrt_sum_squares_many: buffer %lld has %lld elements",
             (long long)k, (long long)ns[k]);
  if (count > 0)
    backend().sumSquaresMany(xs, ns, count, sums, nonFinite);
}

extern "C" void zbrt_sgd_step_many(const ZbrtOptimizerTensor *tensors,
                                   int64_t count, float lr, float gradScale) {
  checkTensors("zbrt_sgd_step_many", tensors, count, /*adamw=*/false);
  if (count > 0)
    backend().sgdMany(tensors, count, lr * gradScale, /*rollback=*/false);
}

extern "C" void zbrt_sgd_rollback_many(const ZbrtOptimizerTensor *tensors,
                                       int64_t count, float lr,
                                       float gradScale) {
  checkTensors("zbrt_sgd_rollback_many", tensors, count, /*adamw=*/false);
  if (count > 0)
    backend().sgdMany(tensors, count, lr * gradScale, /*rollback=*/true);
}

extern "C" void zbrt_adamw_step_many(const ZbrtOptimizerTensor *tensors,
                                     int64_t count, int64_t step, float lr,
                                     float beta1, float beta2, float eps,
                                     float weightDecay, float gradScale) {
  const char *fn = "zbrt_adamw_step_many";
  checkTensors(fn, tensors, count, /*adamw=*/true);
  const math::AdamWScalars scalars =
      adamwScalars(fn, step, lr, beta1, beta2, eps, weightDecay, gradScale);
  if (count > 0)
    backend().adamwMany(tensors, count, scalars, /*rollback=*/false);
}

extern "C" void zbrt_adamw_rollback_many(const ZbrtOptimizerTensor *tensors,
                                         int64_t count, int64_t step, float lr,
                                         float beta1, float beta2, float eps,
                                         float weightDecay, float gradScale) {
  const char *fn = "zbrt_adamw_rollback_many";
  checkTensors(fn, tensors, count, /*adamw=*/true);
  const math::AdamWScalars scalars =
      adamwScalars(fn, step, lr, beta1, beta2, eps, weightDecay, gradScale);
  checkInvertible(fn, beta1, beta2, scalars);
  if (count > 0)
    backend().adamwMany(tensors, count, scalars, /*rollback=*/true);
}
