//===- OptimizerMath.h - zb runtime: per-element optimizer updates -*- C++ -*-===//
//
// Not installed. One element of SGD and AdamW (Loshchilov & Hutter,
// "Decoupled Weight Decay Regularization", Algorithm 2) and of their exact
// inverses (the Zero Bubble paper's rollback, Section 4), shared by the CPU
// loops (cpu/HostOptimizer.cpp) and the CUDA kernels
// (cuda/OptimizerKernels.cu), so
// both do the same float32 operations in the same order (the kernels are
// compiled with -fmad=false and IEEE sqrt and division: bit-identical
// results). Scalars that depend only on the step (bias corrections, decay)
// are computed once on the host and passed in.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_OPTIMIZERMATH_H
#define ZBRT_LIB_OPTIMIZERMATH_H

#ifdef __CUDACC__
#define ZBRT_HD __host__ __device__
#else
#include <cmath>
#define ZBRT_HD
#endif

namespace zbrt {
namespace math {

/// One tensor of a multi-tensor kernel (cuda/OptimizerKernels.cu's *_many
/// kernels; a table of them in device memory): its pointers (x = grad for a
/// sum of squares; m, v null for SGD), its n elements and its blocks
/// [firstBlock, firstBlock + blocks) of the launch's grid. 64 bytes, the
/// same layout on the host and the device.
struct TensorSlice {
  float *param;
  const float *grad;
  float *m;
  float *v;
  long long n;
  long long firstBlock;
  long long blocks;
  long long unused;
};

/// Step-dependent AdamW scalars: stepSize = lr / (1 - beta1^t),
/// bc2Sqrt = sqrt(1 - beta2^t), decay = 1 - lr * weightDecay.
struct AdamWScalars {
  float stepSize, bc2Sqrt, decay, beta1, beta2, eps, gradScale;
};

ZBRT_HD inline float squareRoot(float x) {
#ifdef __CUDACC__
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

/// p -= (lr * gradScale) * g
ZBRT_HD inline void sgdStep(float &p, float g, float scale) { p -= scale * g; }
ZBRT_HD inline void sgdRollback(float &p, float g, float scale) {
  p += scale * g;
}

ZBRT_HD inline void adamwStep(float &p, float grad, float &m, float &v,
                              const AdamWScalars &s) {
  float g = grad * s.gradScale;
  p *= s.decay;
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  float denom = squareRoot(v) / s.bc2Sqrt + s.eps;
  p -= s.stepSize * (m / denom);
}

ZBRT_HD inline void adamwRollback(float &p, float grad, float &m, float &v,
                                  const AdamWScalars &s) {
  float g = grad * s.gradScale;
  float denom = squareRoot(v) / s.bc2Sqrt + s.eps;
  p += s.stepSize * (m / denom);
  p /= s.decay;
  m = (m - (1.0f - s.beta1) * g) / s.beta1;
  v = (v - (1.0f - s.beta2) * g * g) / s.beta2;
}

} // namespace math
} // namespace zbrt

#endif // ZBRT_LIB_OPTIMIZERMATH_H
