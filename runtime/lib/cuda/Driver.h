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

namespace zbrt {
namespace cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;

constexpr CUresult kSuccess = 0;
constexpr CUresult kNotReady = 600; // CUDA_ERROR_NOT_READY

/// The driver functions zbrt calls (see the file comment).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle *, CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuModuleLoadData)(Handle *, const void *);
  CUresult (*cuModuleUnload)(Handle);
  CUresult (*cuModuleGetFunction)(Handle *, Handle, const char *);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, Handle, void **,
                             void **);
  CUresult (*cuStreamCreate)(Handle *, unsigned);
  CUresult (*cuStreamDestroy)(Handle);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuStreamQuery)(Handle);
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned);
  CUresult (*cuEventCreate)(Handle *, unsigned);
  CUresult (*cuEventDestroy)(Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventQuery)(Handle);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventElapsedTime)(float *, Handle, Handle);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, Handle);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, Handle);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, Handle);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, Handle);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, Handle);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  // CUDA graphs (StepGraph.h) and the kernel parameter layout its tape
  // compares: optional, null when the driver lacks them (graphs are off).
  CUresult (*cuFuncGetParamInfo)(Handle, size_t, size_t *, size_t *);
  CUresult (*cuStreamBeginCapture)(Handle, int);
  CUresult (*cuStreamEndCapture)(Handle, Handle *);
  CUresult (*cuGraphInstantiateWithFlags)(Handle *, Handle, unsigned long long);
  CUresult (*cuGraphLaunch)(Handle, Handle);
  CUresult (*cuGraphExecDestroy)(Handle);
  CUresult (*cuGraphDestroy)(Handle);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
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
/// microbatch 0): <NAME> (<text>)".
void check(CUresult result, const char *call);

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DRIVER_H
