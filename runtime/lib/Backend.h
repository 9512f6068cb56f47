//===- Backend.h - zb runtime: the interface of a backend -------*- C++ -*-===//
//
// Not installed. What the zbrt_* entry points (abi/) hand over to: every
// entry point checks its arguments and dispatches once to the active
// Backend. The CPU backend (cpu/: MPI, OpenBLAS, the optimizer loops) is
// active from the start; zbrt_cuda_start makes the CUDA backend (cuda/:
// cuBLAS, a device transport, device trace and optimizer kernels) the
// active one until zbrt_finalize. abi/BackendSelection.cpp is the one
// place that chooses; nothing else asks which backend runs.
//
// Dependencies point one way: abi/ -> Backend <- cpu/, cuda/ (cuda/ uses
// cpu/'s host messages and loops for what stays on the host); the trace
// (TraceLog.h) is called by abi/ only, and device times come back from
// stepEnd() as data. A backend calls only the bottom layer (Internal.h:
// errors, process state, currentAction for messages; FaultInjection.h;
// DynamicLibrary.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_BACKEND_H
#define ZBRT_LIB_BACKEND_H

#include "OptimizerMath.h"

#include "zbrt/zbrt.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace zbrt {

/// Device times of trace event `index` (an action), microseconds since the
/// step's origin (Backend::traceBeginStep).
struct DeviceTime {
  size_t index;
  double beginUs, endUs;
};

/// A message of a step as the compiler lowered it: its tag (zbrt_tag) and
/// size in bytes.
struct ChannelMessage {
  int32_t tag;
  int64_t bytes;
  bool operator==(const ChannelMessage &o) const {
    return tag == o.tag && bytes == o.bytes;
  }
};

/// Row-major C[M x N] = alpha op(A) op(B) + beta C with row strides in
/// elements, on elements of type T (the ABI has checked the sizes):
///  - Gemm (float): zbrt_sgemm's contract;
///  - GemmBf16 (bfloat16, Bfloat16.h: uint16_t, the top half of a float32):
///    C = round_bf16(alpha op(A) op(B) + beta C) with A, B (and C when
///    beta != 0) widened exactly, products summed in float32, one rounding
///    to nearest even per element of C (zbrt_gemm_bf16_memref's contract,
///    autocast's matmul).
template <typename T> struct GemmOf {
  const T *a, *b;
  T *c;
  int64_t M, N, K;
  bool transA, transB;
  float alpha, beta;
  int64_t lda, ldb, ldc;
  /// The same call with its pointers as U (StepGraph records every GEMM in
  /// one type; the pointers are addresses there, never read as U).
  template <typename U> GemmOf<U> as() const {
    return {reinterpret_cast<const U *>(a),
            reinterpret_cast<const U *>(b),
            reinterpret_cast<U *>(c),
            M,
            N,
            K,
            transA,
            transB,
            alpha,
            beta,
            lda,
            ldb,
            ldc};
  }
};
using Gemm = GemmOf<float>;
using GemmBf16 = GemmOf<uint16_t>;

/// When a backend began its own work on a message (MessageWork{}: it does
/// not say, e.g. the message moves on the device). The ABI traces it as the
/// message's TraceEvent::workFromUs (zbrt/Trace.h).
using MessageWork = std::chrono::steady_clock::time_point;

class Backend {
public:
  virtual ~Backend() = default;

  //===-- Messages (zbrt_send / zbrt_recv, checked by the ABI) ------------===//
  /// Sends `bytes` at `buf` to `peer`; the caller may reuse `buf` at once.
  /// Returns when this rank's work on the send began (the host copy).
  virtual MessageWork send(const void *buf, int64_t bytes, int32_t peer,
                           int32_t tag) = 0;
  /// Receives exactly `bytes` from `peer` into `buf`: usable by the next
  /// operation of this backend (not necessarily by the host: hostAccess).
  /// Returns when this rank's work on it began (the message had arrived).
  virtual MessageWork recv(void *buf, int64_t bytes, int32_t peer,
                           int32_t tag) = 0;
  /// zbrt_set_channel_order: the messages the channel from rank `from` to
  /// rank `to` carries in every step, in order (this rank is one of them).
  /// Before the first step; a backend that matches messages by tag ignores
  /// it.
  virtual void setChannelOrder(int32_t from, int32_t to,
                               const std::vector<ChannelMessage> &order) {}
  /// zbrt_wait: waits for an MPI request under the watchdog while this
  /// rank's own sends progress.
  virtual void waitRequest(void *mpiRequest, const char *what) = 0;

  //===-- GEMM ------------------------------------------------------------===//
  virtual void sgemm(const Gemm &g) = 0;
  /// `batch` products C[i] = op(A[i]) op(B[i]) (alpha 1, beta 0) at
  /// constant batch strides (elements) in one call; false when this backend
  /// has no such call (the caller then computes the matrices one by one).
  virtual bool sgemmStridedBatched(const Gemm &g, int64_t strideA,
                                   int64_t strideB, int64_t strideC,
                                   int64_t batch) {
    return false;
  }
  /// GemmBf16's product, and its strided batched form (as
  /// sgemmStridedBatched: false when this backend has no such call).
  virtual void gemmBf16(const GemmBf16 &g) = 0;
  virtual bool gemmBf16StridedBatched(const GemmBf16 &g, int64_t strideA,
                                      int64_t strideB, int64_t strideC,
                                      int64_t batch) {
    return false;
  }

  //===-- Optimizer (OptimizerMath.h per element) -------------------------===//
  virtual void sgd(float *param, const float *grad, int64_t n, float scale,
                   bool rollback) = 0;
  virtual void adamw(float *param, const float *grad, float *m, float *v,
                     int64_t n, const math::AdamWScalars &scalars,
                     bool rollback) = 0;
  /// sgd / adamw of each of `count` tensors (zbrt_sgd_step_many's checked
  /// arguments), bit-identical to them; these defaults loop.
  virtual void sgdMany(const ZbrtOptimizerTensor *tensors, int64_t count,
                       float scale, bool rollback) {
    for (int64_t k = 0; k < count; ++k)
      sgd(tensors[k].param, tensors[k].grad, tensors[k].n, scale, rollback);
  }
  virtual void adamwMany(const ZbrtOptimizerTensor *tensors, int64_t count,
                         const math::AdamWScalars &scalars, bool rollback) {
    for (int64_t k = 0; k < count; ++k)
      adamw(tensors[k].param, tensors[k].grad, tensors[k].m, tensors[k].v,
            tensors[k].n, scalars, rollback);
  }
  /// Sum of squares in double; *nonFinite (when given) is set to whether an
  /// element is NaN or infinite. Waits for its result.
  virtual double sumSquares(const float *x, int64_t n, int32_t *nonFinite) = 0;
  /// sums[k] = sumSquares(xs[k], ns[k], nonFinite + k) for k < count,
  /// bit-identical to it (nonFinite may be null). Waits once for all the
  /// results; this default (the CPU backend's) loops over sumSquares.
  virtual void sumSquaresMany(const float *const *xs, const int64_t *ns,
                              int64_t count, double *sums, int32_t *nonFinite) {
    for (int64_t k = 0; k < count; ++k)
      sums[k] = sumSquares(xs[k], ns[k], nonFinite ? nonFinite + k : nullptr);
  }

  //===-- Data-parallel gradient all-reduce (zbrt_allreduce_start) --------===//
  /// Starts summing the `n` floats at `buf` in place across this rank's
  /// data-parallel group (zbrt_allreduce_start's contract; the ABI has
  /// checked the arguments): true when this backend took it, false when the
  /// caller must sum it itself (MPI on the host after hostAccess). The
  /// answer is the same for every call of a run.
  virtual bool startGradientAllReduce(float *buf, int64_t n) { return false; }
  /// Every all-reduce taken so far is ordered before this backend's next
  /// operations (zbrt_allreduce_finish); `what` names a wait in messages.
  virtual void finishGradientAllReduces(const char *what) {}

  //===-- Step variants (zbrt_cuda_step_variant) ---------------------------===//
  /// The next step passes the buffers identified by `key` (the CUDA
  /// backend's step graphs keep one recording per key).
  virtual void setStepVariant(uint64_t key) {}

  //===-- Trace marks -----------------------------------------------------===//
  /// The step begins (the trace has just been cleared).
  virtual void traceBeginStep() {}
  /// Action `index` of the trace begins (end = false) or ends here.
  virtual void traceMark(size_t index, bool end) {}

  //===-- Step end, finalize ----------------------------------------------===//
  /// The end of a step: every send of the step completes. Returns the
  /// device times of the step's actions (empty when the backend measures
  /// none: the host times stand).
  virtual std::vector<DeviceTime> stepEnd() = 0;
  /// Completes what is pending and releases the backend's resources.
  virtual void finalize() = 0;

  //===-- Host access -----------------------------------------------------===//
  /// Waits until the host may touch buffers this backend's earlier
  /// operations read or write (`what` names the wait in messages).
  virtual void hostAccess(const char *what) {}
  /// A temporary of `bytes` that the host fills or reads and this backend's
  /// operations may use (the strided operands of the memref entry points),
  /// and its release; `what` names the wait before either.
  virtual void *allocTemporary(size_t bytes, const char *what) = 0;
  /// zbrt_buffer_zero / zbrt_buffer_upload / zbrt_buffer_download: the
  /// host's writes and reads of a buffer this backend's operations use,
  /// ordered with them. These defaults (the CPU backend's) touch the memory.
  virtual void zeroBuffer(void *buf, size_t bytes) {
    if (bytes)
      std::memset(buf, 0, bytes);
  }
  virtual void upload(void *dst, const void *src, size_t bytes) {
    if (bytes)
      std::memcpy(dst, src, bytes);
  }
  virtual void download(void *dst, const void *src, size_t bytes) {
    if (bytes)
      std::memcpy(dst, src, bytes);
  }
  virtual void freeTemporary(void *p, const char *what) = 0;

  //===-- Streams of MLIR's host code (mgpu*) -----------------------------===//
  /// The stream every kernel runs on, or null (mgpuStreamCreate then makes
  /// one of its own).
  virtual void *computeStream() { return nullptr; }
  /// The host code synchronises the compute stream.
  virtual void synchronizeComputeStream() {}
  /// mgpuLaunchKernel on the compute stream (cuLaunchKernel's arguments):
  /// the backend launches it or replays it with its step graph (StepGraph.h).
  /// Only called when computeStream() is not null.
  virtual void launchKernel(void *function, const unsigned grid[3],
                            const unsigned block[3], unsigned sharedBytes,
                            void **params) {}
  /// MLIR's host code is about to put other work on the compute stream (a
  /// copy, a memset, an event) or allocate: work a step graph cannot hold.
  virtual void uncapturedWork() {}
  /// zbrt_cuda_emulated_kernel_argument: checks that `pointer`, argument
  /// `argument` of the emulated kernel `kernel`, is device memory where the
  /// driver can tell (ends the job otherwise); nothing to check on the CPU.
  virtual void checkEmulatedKernelArgument(const char *kernel,
                                           int64_t argument,
                                           const void *pointer) {}
};

} // namespace zbrt

#endif // ZBRT_LIB_BACKEND_H
