//===- Driver.h - zb runtime: the CUDA driver via dlopen --------*- C++ -*-===//
//
// Not installed. The driver functions zbrt uses, resolved from libcuda.so.1
// (or ZBRT_CUDA_DRIVER) with dlopen through one symbol table (Driver.cpp):
// cuda.h is not included and -lcuda not linked, so libzbrt loads and runs on
// machines without a driver (docs/toolchain.md, "GPU compilation"). The one
// probe of the driver (zbrt_cuda_available) and the loading for use share
// that table. The `_v2` entry points are looked up under the names cuda.h
// aliases.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DRIVER_H
#define ZBRT_LIB_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace zbrt {
namespace cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorOutOfMemory = 2; // CUDA_ERROR_OUT_OF_MEMORY
constexpr CUresult kNotReady = 600; // CUDA_ERROR_NOT_READY

/// The driver functions zbrt calls, one row each: X(field, exported symbol,
/// parameters); every one returns CUresult. The Driver struct's fields and
/// the rows openDriver (Driver.cpp) resolves are both generated from these
/// lists (as IREE's dynamic_symbol_tables.h), so a function is named once.
/// The exported symbol is the versioned one where the driver has several
/// (cuMemAlloc_v2).
#define ZBRT_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))               \
  X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **))           \
  X(cuInit, "cuInit", (unsigned))                                              \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                             \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *))                             \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    (Handle *, CUdevice))                                                      \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (Handle))                              \
  X(cuModuleLoadData, "cuModuleLoadData", (Handle *, const void *))            \
  X(cuModuleUnload, "cuModuleUnload", (Handle))                                \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    (Handle *, Handle, const char *))                                          \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    (Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,       \
     unsigned, Handle, void **, void **))                                      \
  X(cuStreamCreate, "cuStreamCreate", (Handle *, unsigned))                    \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (Handle))                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", (Handle))                      \
  X(cuStreamQuery, "cuStreamQuery", (Handle))                                  \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", (Handle, Handle, unsigned))        \
  X(cuEventCreate, "cuEventCreate", (Handle *, unsigned))                      \
  X(cuEventDestroy, "cuEventDestroy_v2", (Handle))                             \
  X(cuEventSynchronize, "cuEventSynchronize", (Handle))                        \
  X(cuEventQuery, "cuEventQuery", (Handle))                                    \
  X(cuEventRecord, "cuEventRecord", (Handle, Handle))                          \
  X(cuEventElapsedTime, "cuEventElapsedTime", (float *, Handle, Handle))       \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                      \
  X(cuMemAllocManaged, "cuMemAllocManaged",                                    \
    (CUdeviceptr *, size_t, unsigned))                                         \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                  \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t *, size_t *))                     \
  X(cuMemHostAlloc, "cuMemHostAlloc", (void **, size_t, unsigned))             \
  X(cuMemFreeHost, "cuMemFreeHost", (void *))                                  \
  X(cuMemcpyAsync, "cuMemcpyAsync",                                            \
    (CUdeviceptr, CUdeviceptr, size_t, Handle))                                \
  X(cuMemsetD32Async, "cuMemsetD32Async",                                      \
    (CUdeviceptr, unsigned, size_t, Handle))                                   \
  X(cuMemsetD16Async, "cuMemsetD16Async",                                      \
    (CUdeviceptr, unsigned short, size_t, Handle))                             \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                        \
    (CUdeviceptr, unsigned char, size_t, Handle))                              \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                 \
    (CUdeviceptr, const void *, size_t, Handle))                               \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))
/// CUDA graphs (StepGraph.h) and the kernel parameter layout its tape
/// compares: optional, null when the driver lacks them (graphs are off).
#define ZBRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X)                                 \
  X(cuFuncGetParamInfo, "cuFuncGetParamInfo",                                  \
    (Handle, size_t, size_t *, size_t *))                                      \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (Handle, int))            \
  X(cuStreamEndCapture, "cuStreamEndCapture", (Handle, Handle *))              \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                \
    (Handle *, Handle, unsigned long long))                                    \
  X(cuGraphLaunch, "cuGraphLaunch", (Handle, Handle))                          \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (Handle))                        \
  X(cuGraphDestroy, "cuGraphDestroy", (Handle))

/// The driver functions zbrt calls (see the file comment).
struct Driver {
#define ZBRT_CUDA_DRIVER_FIELD(field, symbol, params) CUresult(*field) params;
  ZBRT_CUDA_DRIVER_FUNCTIONS(ZBRT_CUDA_DRIVER_FIELD)
  ZBRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(ZBRT_CUDA_DRIVER_FIELD)
#undef ZBRT_CUDA_DRIVER_FIELD
  Handle context = nullptr;
  int device = 0;
};

constexpr unsigned kStreamNonBlocking = 0x1;    // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 0x2;   // CU_EVENT_DISABLE_TIMING
constexpr unsigned kMemAttachGlobal = 0x1;      // CU_MEM_ATTACH_GLOBAL
constexpr unsigned kMemHostAllocPortable = 0x1; // CU_MEMHOSTALLOC_PORTABLE
constexpr int kCaptureModeRelaxed = 2; // CU_STREAM_CAPTURE_MODE_RELAXED

/// Whether the driver has the optional entry points of CUDA graphs and of
/// kernel parameter layouts (cuFuncGetParamInfo: CUDA 12.4 and later).
inline bool hasGraphs(const Driver &d) {
  return d.cuFuncGetParamInfo && d.cuStreamBeginCapture &&
         d.cuStreamEndCapture && d.cuGraphInstantiateWithFlags &&
         d.cuGraphLaunch && d.cuGraphExecDestroy && d.cuGraphDestroy;
}

/// zbrt_cuda_available's probe: 0 and the number of devices in *devices,
/// or nonzero with the reason in msg.
int32_t probe(char *msg, int64_t cap, int32_t *devices);
/// The device whose primary context driver() uses; only before the first
/// driver() call (mgpuSetDefaultDevice, zbrt_cuda_start).
void setDevice(int device);
/// The loaded driver with the primary context current on this thread. The
/// first call loads it; without a usable driver and device it ends the
/// process with zbrt_cuda_available's reason.
const Driver &driver();
/// Adds `bytes` to the bytes the host code copied between host and device
/// (mgpuMemcpy); hostDeviceBytes() reads the sum.
void countHostDeviceBytes(uint64_t bytes);
int64_t hostDeviceBytes();
/// Nonzero result -> ends the job: "CUDA error in <call> (in F of stage 1,
/// microbatch 0): <NAME> (<text>)"; CUDA_ERROR_OUT_OF_MEMORY of an
/// allocation of `bytes` (0: not an allocation, or unknown) ends it with
/// detail::fatalOutOfMemory's line instead: the memory (device, managed or
/// pinned host memory, by `call`), the request, the device's free memory.
void check(CUresult result, const char *call, uint64_t bytes = 0);
/// "device 0 has 1.2 GiB free of 80.0 GiB" (cuMemGetInfo), for messages.
std::string describeDeviceMemory();

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DRIVER_H
