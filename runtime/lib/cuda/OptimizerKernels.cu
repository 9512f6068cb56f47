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
// The *_many kernels do the same for many tensors in one launch
// ("multi-tensor apply"): a table of TensorSlice (OptimizerMath.h) in device
// memory gives each tensor its blocks of the grid; a block finds its tensor
// by binary search on firstBlock and runs the single-tensor kernel's
// grid-stride loop over that tensor as if its blocks were a grid of their
// own (same element-to-thread mapping and, for the sums of squares, the
// same tree order: bit-identical partial sums).
//
//===----------------------------------------------------------------------===//

#include "../OptimizerMath.h"

using zbrt::math::AdamWScalars;
using zbrt::math::TensorSlice;

namespace {

/// The table entry whose blocks include this block (the table is sorted by
/// firstBlock and covers the grid).
__device__ const TensorSlice &sliceOfBlock(const TensorSlice *table,
                                           int count) {
  long long block = blockIdx.x;
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (table[mid].firstBlock <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return table[lo];
}

} // namespace

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

extern "C" __global__ void zbrt_sgd_many_kernel(const TensorSlice *table,
                                                int count, float scale,
                                                int rollback) {
  const TensorSlice &t = sliceOfBlock(table, count);
  float *param = t.param;
  const float *grad = t.grad;
  long long stride = t.blocks * blockDim.x;
  for (long long i = (blockIdx.x - t.firstBlock) * blockDim.x + threadIdx.x;
       i < t.n; i += stride) {
    if (rollback)
      zbrt::math::sgdRollback(param[i], grad[i], scale);
    else
      zbrt::math::sgdStep(param[i], grad[i], scale);
  }
}

extern "C" __global__ void zbrt_adamw_many_kernel(const TensorSlice *table,
                                                  int count, AdamWScalars s,
                                                  int rollback) {
  const TensorSlice &t = sliceOfBlock(table, count);
  float *param = t.param, *m = t.m, *v = t.v;
  const float *grad = t.grad;
  long long stride = t.blocks * blockDim.x;
  for (long long i = (blockIdx.x - t.firstBlock) * blockDim.x + threadIdx.x;
       i < t.n; i += stride) {
    if (rollback)
      zbrt::math::adamwRollback(param[i], grad[i], m[i], v[i], s);
    else
      zbrt::math::adamwStep(param[i], grad[i], m[i], v[i], s);
  }
}

/// The sum of `sum` over the block's threads (256), in a fixed tree order
/// (deterministic; the same for the single- and multi-tensor kernels).
__device__ double blockSum(double sum) {
  __shared__ double sums[256];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  return sums[0];
}

/// partial[block] = sum of x[i]^2 (double) over the block's grid-stride
/// elements, combined in a fixed tree order (deterministic); *nonFinite
/// set when an element is NaN or infinite. 256 threads per block.
extern "C" __global__ void zbrt_sum_squares_kernel(const float *x, long long n,
                                                   double *partial,
                                                   int *nonFinite) {
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
  double total = blockSum(sum);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = total;
}

/// zbrt_sum_squares_kernel of each table entry (x = grad) over its blocks:
/// partial[b] for every block b of the grid, as that kernel would write
/// partial[b - firstBlock] launched alone with `blocks` blocks, and
/// nonFinite[b] = whether one of block b's elements is NaN or infinite
/// (written by every block: the host need not clear it). 256 threads.
extern "C" __global__ void
zbrt_sum_squares_many_kernel(const TensorSlice *table, int count,
                             double *partial, int *nonFinite) {
  const TensorSlice &t = sliceOfBlock(table, count);
  const float *x = t.grad;
  long long step = t.blocks * blockDim.x;
  double sum = 0;
  int bad = 0;
  for (long long i = (blockIdx.x - t.firstBlock) * blockDim.x + threadIdx.x;
       i < t.n; i += step) {
    float value = x[i];
    if (!isfinite(value))
      bad = 1;
    sum += (double)value * (double)value;
  }
  bad = __syncthreads_or(bad);
  double total = blockSum(sum);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = total;
    nonFinite[blockIdx.x] = bad;
  }
}
