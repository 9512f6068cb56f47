//===- CudaBackend.h - zb runtime: the CUDA backend's state -----*- C++ -*-===//
//
// Not installed. The rank's device, streams, cuBLAS handle and NCCL
// communicators after zbrt_cuda_start (zbrt.h, "CUDA backend"); the CPU
// entry points (zbrt_sgemm, zbrt_send, zbrt_recv, zbrt_step_end,
// zbrt_finalize) hand over to these while it is active.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_CUDABACKEND_H
#define ZBRT_LIB_CUDA_CUDABACKEND_H

#include "../OptimizerMath.h"

#include <cstdint>

namespace zbrt {
namespace cuda {

/// True after zbrt_cuda_start.
bool active();
/// Whether the host must wait where MLIR's host code synchronises the
/// compute stream (false with ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY).
bool hostWaitsForComputeStream();
/// The rank's compute stream, or nullptr before zbrt_cuda_start.
void *computeStream();
/// Waits, under the communication watchdog, until the compute stream (and,
/// unless `computeOnly`, every communication stream: sends in flight) is
/// idle; NCCL's asynchronous errors end the job (communicators aborted).
/// `what` names the wait in messages.
void synchronize(const char *what, bool computeOnly = false);
/// zbrt_sgemm's contract (row-major, strides in elements) on the compute
/// stream through cuBLAS.
void sgemm(const float *a, const float *b, float *c, int64_t M, int64_t N,
           int64_t K, bool transA, bool transB, float alpha, float beta,
           int64_t lda, int64_t ldb, int64_t ldc);
/// `batch` products C[i] = op(A[i]) op(B[i]) at constant batch strides
/// (elements), one cublasSgemmStridedBatched call.
void sgemmStridedBatched(const float *a, const float *b, float *c, int64_t M,
                         int64_t N, int64_t K, bool transA, bool transB,
                         int64_t lda, int64_t ldb, int64_t ldc,
                         int64_t strideA, int64_t strideB, int64_t strideC,
                         int64_t batch);
/// zbrt_send / zbrt_recv through NCCL; false when there is no NCCL channel
/// to `peer` (the caller then uses MPI on the host after synchronize()).
bool send(const void *buf, int64_t bytes, int32_t peer, int32_t tag);
bool recv(void *buf, int64_t bytes, int32_t peer, int32_t tag);
/// Device timeline of the trace: traceBeginStep records the step's origin
/// event on the compute stream, traceMark an event where action `index`
/// begins or ends; stepEnd turns them into the trace's times (so pass
/// times, the realized bubble and --profile measure the GPU, not the
/// host's enqueueing).
void traceBeginStep();
void traceMark(unsigned long index, bool end);
/// The optimizer runs on the GPU: the backend is active and the kernels
/// are on the device (not with a cuda-emu plan, whose kernels run on the
/// host).
bool deviceOptimizer();
/// zbrt_sgd_step/rollback, zbrt_adamw_step/rollback and zbrt_sum_squares
/// as kernels on the compute stream (cuda/OptimizerKernels.cu); sumSquares
/// waits for its result.
void sgd(float *param, const float *grad, int64_t n, float scale,
         bool rollback);
void adamw(float *param, const float *grad, float *m, float *v, int64_t n,
           const math::AdamWScalars &scalars, bool rollback);
double sumSquares(const float *x, int64_t n, int32_t *nonFinite);
/// The end of a step: synchronize, release completed staging buffers.
void stepEnd();
/// Synchronize, destroy communicators, handles and streams.
void finalize();

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_CUDABACKEND_H
