//===- NcclAllReduce.h - zb runtime: the group's all-reduce ----*- C++ -*-===//
//
// Not installed. The data-parallel gradient all-reduce of the CUDA backend
// (zbrt_allreduce_start / zbrt_allreduce_finish; issue 39, "MPI on the CPU,
// NCCL on GPUs, a communicator per group"). A job of D pipelines of P ranks
// (zbrt_set_pipeline) has P data-parallel groups: the D world ranks with the
// same pipeline rank. This rank's group gets one NCCL communicator of D
// ranks (group rank d = pipeline d) and a stream of its own:
//
//   compute stream:     W(b1), event A1, W(b2), event A2, ... wait B, optimizer
//   all-reduce stream:          wait A1, ncclAllReduce(b1), wait A2,
//                               ncclAllReduce(b2), ..., event B
//
// start() makes the all-reduce stream wait for the work enqueued so far on
// the compute stream (an event recorded there now: the kernels that wrote
// the gradient) and enqueues an in-place ncclAllReduce (float32, sum)
// there; zb-run calls it as soon as a bucket is final (zbrt_gradients_ready,
// inside the step) and for the rest at the step's end. finish() makes the
// compute stream wait for the all-reduce stream, so the optimizer's kernels
// launched next read the sums. The host waits for neither; the backend's
// watchdog polls the communicator's asynchronous errors.
//
// NCCL refuses two ranks of a communicator on one device: when members of
// the group share a device (more ranks than GPUs), or NCCL is missing on a
// member, there is no communicator and start() refuses every buffer (the
// runner then sums them over MPI on the host, after a synchronisation).
// Every member reaches the same answer (the placement is gathered, the
// NCCL check agreed on over MPI). ZBRT_SAME_DEVICE_TRANSPORT=nccl makes the
// group use NCCL anyway (which NCCL, and the stand-in, refuse: a check).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_NCCLALLREDUCE_H
#define ZBRT_LIB_CUDA_NCCLALLREDUCE_H

#include "Device.h"
#include "NcclTransport.h"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zbrt {
namespace cuda {

class GroupAllReduce {
public:
  /// Collective over MPI_COMM_WORLD when the job has more than one pipeline
  /// (every rank calls it at zbrt_cuda_start, after its transports): the
  /// group's MPI communicator and, where NCCL can serve the group, its NCCL
  /// communicator and stream. `placement` holds two ints per world rank: its
  /// node (the world rank of its node's first rank) and its device.
  /// `sameDeviceOverNccl`: ZBRT_SAME_DEVICE_TRANSPORT=nccl. Null for a job of
  /// one pipeline. Sets device.stats.allReduce ("nccl" or "mpi: <why>").
  static std::unique_ptr<GroupAllReduce>
  create(Device &device, const std::vector<int> &placement,
         bool sameDeviceOverNccl);
  ~GroupAllReduce();

  /// Whether the group all-reduces through NCCL (start takes buffers).
  bool usable() const { return comm != nullptr; }
  /// Enqueues the in-place sum of the `n` floats at `buf` across the group
  /// (after the compute stream's work so far). Requires usable().
  void start(float *buf, int64_t n);
  /// The compute stream waits for every all-reduce started so far; false
  /// when none was started since the last finish (nothing done).
  bool finish();

  /// As Transport's: asynchronous errors end the job (after abort()); the
  /// all-reduce stream's work has completed; the watchdog's message for an
  /// all-reduce that has not completed ("" when none).
  void pollErrors();
  bool idle();
  std::string pending();
  void abort();
  /// Releases the communicators (every stream is idle).
  void finalize();

private:
  explicit GroupAllReduce(Device &device) : device(device) {}
  void check(int result, const char *call);

  Device &device;
  const Nccl *nccl = nullptr;
  NcclComm comm = nullptr;
  Handle stream = nullptr;
  MPI_Comm group = MPI_COMM_NULL;
  /// The group's world ranks (for messages), in group rank order.
  std::string members;
  /// All-reduces enqueued since the last finish().
  int64_t started = 0;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_NCCLALLREDUCE_H
