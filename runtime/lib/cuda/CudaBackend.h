//===- CudaBackend.h - zb runtime: the CUDA backend -------------*- C++ -*-===//
//
// Not installed. The backend of zb-run --backend cuda (zbrt.h, "CUDA
// backend"), made of parts by concern: the rank's device, compute stream,
// events and staging blocks (Device.h), GEMMs through cuBLAS (Blas.h),
// messages through a device transport per peer (Transport.h; NCCL between
// devices, MPI through pinned host staging between the ranks of one device,
// MPI on the host for peers without a channel), the data-parallel group's
// gradient all-reduce (NcclAllReduce.h), the trace's device timeline
// (DeviceTrace.h), the optimizer kernels (DeviceOptimizer.h) and the step
// as CUDA graphs (StepGraph.h: every operation here that the graph cannot
// hold ends its segment first). The host
// waits for the device at the end of a step and where MLIR's host code
// synchronises the compute stream, under the communication watchdog, which
// also polls the transport's asynchronous errors.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_CUDABACKEND_H
#define ZBRT_LIB_CUDA_CUDABACKEND_H

#include "Blas.h"
#include "Device.h"
#include "DeviceOptimizer.h"
#include "DeviceTrace.h"
#include "NcclAllReduce.h"
#include "StepGraph.h"
#include "Transport.h"

#include "../Backend.h"

#include <memory>
#include <string>

namespace zbrt {
namespace cuda {

class CudaBackend final : public Backend {
public:
  /// zbrt_cuda_start's contract: the device of this rank's local rank,
  /// its compute stream, cuBLAS and the transport (ends the job when the
  /// driver or cuBLAS is unusable).
  explicit CudaBackend(int32_t flags);
  const ZbrtCudaStats &stats() const { return device.stats; }

  MessageWork send(const void *buf, int64_t bytes, int32_t peer,
                   int32_t tag) override;
  MessageWork recv(void *buf, int64_t bytes, int32_t peer,
                   int32_t tag) override;
  void setChannelOrder(int32_t from, int32_t to,
                       const std::vector<ChannelMessage> &order) override;
  void waitRequest(void *mpiRequest, const char *what) override;
  void sgemm(const Gemm &g) override;
  bool sgemmStridedBatched(const Gemm &g, int64_t strideA, int64_t strideB,
                           int64_t strideC, int64_t batch) override;
  void gemmBf16(const GemmBf16 &g) override;
  bool gemmBf16StridedBatched(const GemmBf16 &g, int64_t strideA,
                              int64_t strideB, int64_t strideC,
                              int64_t batch) override;
  void sgd(float *param, const float *grad, int64_t n, float scale,
           bool rollback) override;
  void adamw(float *param, const float *grad, float *m, float *v, int64_t n,
             const math::AdamWScalars &scalars, bool rollback) override;
  void sgdMany(const ZbrtOptimizerTensor *tensors, int64_t count, float scale,
               bool rollback) override;
  void adamwMany(const ZbrtOptimizerTensor *tensors, int64_t count,
                 const math::AdamWScalars &scalars, bool rollback) override;
  double sumSquares(const float *x, int64_t n, int32_t *nonFinite) override;
  void sumSquaresMany(const float *const *xs, const int64_t *ns, int64_t count,
                      double *sums, int32_t *nonFinite) override;
  bool startGradientAllReduce(float *buf, int64_t n) override;
  void finishGradientAllReduces(const char *what) override;
  void setStepVariant(uint64_t key) override { graph.setVariant(key); }
  void traceBeginStep() override;
  void traceMark(size_t index, bool end) override;
  std::vector<DeviceTime> stepEnd() override;
  void finalize() override;
  void hostAccess(const char *what) override;
  void *allocTemporary(size_t bytes, const char *what) override;
  void zeroBuffer(void *buf, size_t bytes) override;
  void upload(void *dst, const void *src, size_t bytes) override;
  void download(void *dst, const void *src, size_t bytes) override;
  void freeTemporary(void *p, const char *what) override;
  void *computeStream() override { return device.compute; }
  void synchronizeComputeStream() override;
  void launchKernel(void *function, const unsigned grid[3],
                    const unsigned block[3], unsigned sharedBytes,
                    void **params) override;
  void uncapturedWork() override { graph.boundary(); }
  void checkEmulatedKernelArgument(const char *kernel, int64_t argument,
                                   const void *pointer) override;

private:
  /// Waits, under the watchdog, until the compute stream (and, unless
  /// `computeOnly`, the transport's streams: sends in flight) is idle.
  void synchronize(const char *what, bool computeOnly);
  bool idle(bool computeOnly);
  /// The optimizer runs as kernels (not with a cuda-emu plan).
  bool deviceOptimizer() const { return !device.hostKernels(); }

  Device device;
  Blas blas;
  /// Creates the transports: the peers on this rank's device get the
  /// host-staged one, the others NCCL.
  void startTransports();

  /// NCCL (when loaded), then the host-staged transport.
  std::vector<std::unique_ptr<Transport>> transports;
  /// The data-parallel group's gradient all-reduce (null with one
  /// pipeline; NcclAllReduce.h).
  std::unique_ptr<GroupAllReduce> allReduce;
  DeviceTrace trace;
  DeviceOptimizer optimizer;
  /// The step's kernels, GEMMs and trace marks as CUDA graphs.
  StepGraph graph;
  /// Why the step graph is off for these flags ("" when it may be on).
  std::string graphsOffReason() const;
  void launchNow(const KernelLaunch &k);
  void gemmNow(const GemmCall &g);
  /// A GEMM: into the step graph, or issued now.
  void gemm(const GemmCall &g);
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_CUDABACKEND_H
