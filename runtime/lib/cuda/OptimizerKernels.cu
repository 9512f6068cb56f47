//===- OptimizerKernels.cu - zb runtime: SGD/AdamW on the GPU -------------===//
//
// The CUDA backend's optimizer (zbrt_sgd_step, zbrt_adamw_step, their
// rollbacks, zbrt_sum_squares), compiled by nvcc at build time into a
// fatbin that libzbrt embeds (sm_80 and sm_90 cubins plus compute_80 PTX)
// and loads with the driver API. The per-element math is OptimizerMath.h,
// the CPU loops' own; -fmad=false keeps multiplications and additions
// separate as on the CPU, so parameters and moments are bit-identical to
// the CPU backend's. Grid-stride loops, 256 threads per block.
//
//===----------------------------------------------------------------------===//

#include "../OptimizerMath.h"

using zbrt::math::AdamWScalars;

extern "C" __global__ void zbrt_sgd_kernel(float *param, const float *grad,
                                           long long n, float scale,
                                           int rollback) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (rollback)
      zbrt::math::sgdRollback(param[i], grad[i], scale);
    else
      zbrt::math::sgdStep(param[i], grad[i], scale);
  }
}

extern "C" __global__ void zbrt_adamw_kernel(float *param, const float *grad,
                                             float *m, float *v, long long n,
                                             AdamWScalars s, int rollback) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (rollback)
      zbrt::math::adamwRollback(param[i], grad[i], m[i], v[i], s);
    else
      zbrt::math::adamwStep(param[i], grad[i], m[i], v[i], s);
  }
}

/// partial[block] = sum of x[i]^2 (double) over the block's grid-stride
/// elements, combined in a fixed tree order (deterministic); *nonFinite
/// set when an element is NaN or infinite. 256 threads per block.
extern "C" __global__ void zbrt_sum_squares_kernel(const float *x, long long n,
                                                   double *partial,
                                                   int *nonFinite) {
  __shared__ double sums[256];
  double sum = 0;
  int bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float value = x[i];
    if (!isfinite(value))
      bad = 1;
    sum += (double)value * (double)value;
  }
  if (bad)
    atomicOr(nonFinite, 1);
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    partial[blockIdx.x] = sums[0];
}
