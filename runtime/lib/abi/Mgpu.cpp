//===- Mgpu.cpp - zb runtime: the mgpu* functions of MLIR's host code ----===//
//
// MLIR's gpu-to-llvm lowering (MLIR 22) makes a rank program's host code call
// `mgpu*` functions to load its embedded fatbin, launch kernels, create
// streams and events and allocate memory. Debian ships no
// libmlir_cuda_runtime, and a rank program must not depend on MLIR at run
// time, so zbrt provides them here, over the CUDA driver API loaded with
// dlopen (never linked: a machine without a driver starts fine, see
// cuda/Driver.cpp). Each entry decides whether the work is the CUDA
// backend's (the compute stream) and makes one call: of the backend, or of
// cuda/Mgpu.h, which does the driver work. Semantics follow MLIR's CudaRuntimeWrappers:
//   - one primary context of the default device (mgpuSetDefaultDevice,
//     default 0), made current on every call's thread;
//   - modules are loaded lazily and once: the global constructor that MLIR
//     emits calls mgpuModuleLoad before main, which only records the blob
//     (one module per blob, however often it is registered); the driver
//     loads it at the first mgpuModuleGetFunction, and each kernel is
//     resolved once (MLIR's host code asks for it before every launch);
//   - nothing is created or destroyed per launch: streams and events that
//     the host code destroys go back to a pool and are handed out again;
//   - mgpuMemAlloc(bytes, stream, hostShared): device memory, or managed
//     (unified) memory when hostShared;
//   - under zb-run --backend cuda (zbrt_cuda_start) every stream the host
//     code creates is the rank's compute stream (Backend::computeStream),
//     and synchronising it waits under the communication watchdog
//     (Backend::synchronizeComputeStream); its kernels go to the backend,
//     which launches them or replays them with the step's CUDA graph
//     (Backend::launchKernel, cuda/StepGraph.h), and other work on it ends
//     the graph's segment first (Backend::uncapturedWork);
//   - every driver error ends the process through zbrt_fatal with the call,
//     the pass in progress, the error's name and text ("CUDA error in
//     cuLaunchKernel (in F of stage 0, microbatch 1):
//     CUDA_ERROR_INVALID_VALUE (invalid argument)").
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/zbrt.h"

#include "../FaultInjection.h"
#include "../cuda/Driver.h"
#include "../cuda/Mgpu.h"
#include "BackendSelection.h"

#include <cstdint>

namespace mgpu = zbrt::cuda::mgpu;

namespace {

/// Under zb-run --backend cuda every stream MLIR's host code creates is the
/// rank's compute stream (zbrt.h, "CUDA backend"): kernels, cuBLAS GEMMs and
/// the events that order communication share one order.
bool isComputeStream(void *stream) {
  return stream && stream == zbrt::backend().computeStream();
}

/// Work on the compute stream that is not a kernel launch ends the CUDA
/// graph's segment first (Backend::uncapturedWork).
void beforeOtherWork(void *stream) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return mgpu::registerModule(data);
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return mgpu::registerModule(data);
}

void mgpuModuleUnload(void *module) { mgpu::unregisterModule(module); }

void *mgpuModuleGetFunction(void *module, const char *name) {
  return mgpu::moduleFunction(module, name);
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  // The N-th launch of this rank gets an empty grid, which the driver
  // refuses (FaultInjection.h).
  static long launches = 0;
  if (zbrt::faults().launchError(++launches))
    gridX = 0;
  const unsigned grid[3] = {(unsigned)gridX, (unsigned)gridY, (unsigned)gridZ};
  const unsigned block[3] = {(unsigned)blockX, (unsigned)blockY,
                             (unsigned)blockZ};
  if (isComputeStream(stream)) {
    // The backend launches it, or replays it with the step's graph.
    zbrt::backend().launchKernel(function, grid, block, (unsigned)smem,
                                 params);
    return;
  }
  mgpu::launchKernel(function, grid, block, (unsigned)smem, stream, params,
                     extra);
}

void *mgpuStreamCreate() {
  if (void *compute = zbrt::backend().computeStream())
    return compute;
  return mgpu::createStream();
}

void mgpuStreamDestroy(void *stream) {
  if (stream && !isComputeStream(stream))
    mgpu::destroyStream(stream);
}

void mgpuStreamSynchronize(void *stream) {
  if (isComputeStream(stream)) {
    zbrt::backend().synchronizeComputeStream();
    return;
  }
  mgpu::synchronizeStream(stream);
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  beforeOtherWork(stream);
  mgpu::streamWaitEvent(stream, event);
}

void *mgpuEventCreate() { return mgpu::createEvent(); }

void mgpuEventDestroy(void *event) {
  if (event)
    mgpu::destroyEvent(event);
}

void mgpuEventSynchronize(void *event) { mgpu::synchronizeEvent(event); }

void mgpuEventRecord(void *event, void *stream) {
  beforeOtherWork(stream);
  mgpu::recordEvent(event, stream);
}

void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/, bool isHostShared) {
  zbrt::backend().uncapturedWork();
  return mgpu::allocate(sizeBytes, isHostShared);
}

void mgpuMemFree(void *ptr, void * /*stream*/) {
  if (!ptr)
    return;
  zbrt::backend().uncapturedWork();
  mgpu::release(ptr);
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  beforeOtherWork(stream);
  mgpu::copy(dst, src, sizeBytes, stream);
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  beforeOtherWork(stream);
  mgpu::fill32(dst, value, count, stream);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  beforeOtherWork(stream);
  mgpu::fill16(dst, value, count, stream);
}

void mgpuSetDefaultDevice(int32_t device) { zbrt::cuda::setDevice(device); }

} // extern "C"
