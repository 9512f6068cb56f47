//===- Device.h - zb runtime: the device, events, staging -------*- C++ -*-===//
//
// Not installed. What the CUDA backend's parts (CudaBackend, Blas, the
// transports, DeviceTrace, DeviceOptimizer) share about the rank's device:
// the flags of zbrt_cuda_start, the compute stream (every kernel, GEMM and
// the events that order communication), the counters, a pool of events
// without timing and a pool of device staging blocks (send copies and
// messages that arrive before they are asked for; cuMemAlloc'd once, so a
// steady-state step allocates nothing).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DEVICE_H
#define ZBRT_LIB_CUDA_DEVICE_H

#include "Driver.h"

#include "zbrt/zbrt.h"

#include <cstddef>
#include <vector>

namespace zbrt {
namespace cuda {

/// A device staging block, in flight until `done` has completed.
struct Staging {
  CUdeviceptr ptr = 0;
  size_t capacity = 0;
  Handle done = nullptr;
};

class Device {
public:
  int32_t flags = 0;
  Handle compute = nullptr;
  ZbrtCudaStats stats{};

  /// Kernels run on the host (a cuda-emu plan): the host waits for the
  /// GPU after every GEMM and receive.
  bool hostKernels() const { return flags & ZBRT_CUDA_HOST_KERNELS; }

  /// An event without timing, from the pool; release() returns it.
  Handle takeEvent();
  void release(Handle event) { freeEvents.push_back(event); }
  /// An event recorded on `stream` now.
  Handle recordOn(Handle stream);
  /// `waiter` waits (on the device) for the work enqueued on `stream` so far.
  void streamWaits(Handle waiter, Handle stream);
  /// Whether the work before `event` has completed.
  static bool eventDone(Handle event);

  /// A staging block of at least `bytes` (the smallest free one that fits).
  Staging takeStaging(size_t bytes);
  /// `s` is in use until its `done` event has completed.
  void inFlight(Staging s) { busyStaging.push_back(s); }
  /// Releases staging blocks whose use has completed.
  void reapStaging();

private:
  std::vector<Handle> freeEvents;
  std::vector<Staging> busyStaging, freeStaging;
};

/// Adds what the call counters of DynamicLibrary.h know to `out`: every
/// driver, cuBLAS and NCCL call of this process (driverCalls, by name),
/// kernelLaunches, graphLaunches, hostDeviceBytes, and the host's direct
/// waits (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize) to
/// hostSynchronizations (the backend counts its own polling waits).
void addCallCounts(ZbrtCudaStats &out);

/// Backend::checkEmulatedKernelArgument of the CUDA backend: a driver that
/// knows its allocations (the stand-in's zb_fake_cuda_check_kernel_argument:
/// 0, or 700 with its message) checks that `pointer` is device memory; a
/// real driver has no such entry point and nothing is checked. Ends the job
/// through check() on an error.
void checkEmulatedKernelArgument(const char *kernel, int64_t argument,
                                 const void *pointer);

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DEVICE_H
