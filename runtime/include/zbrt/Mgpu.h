/*===- Mgpu.h - zb runtime: the mgpu* functions MLIR's host code calls ---===*\
|*                                                                          *|
|* MLIR 22's gpu-to-llvm lowering emits calls of these functions in the    *|
|* host code of a program with GPU kernels (the rank programs of            *|
|* `zb-compile --target cuda`). libzbrt implements them over the CUDA      *|
|* driver API loaded with dlopen (runtime/lib/abi/Mgpu.cpp), so a         *|
|* rank program needs no MLIR library at run time. Handles are the driver's *|
|* (CUmodule wrapped for lazy loading, CUfunction, CUstream, CUevent).      *|
|* Any driver error ends the process with "CUDA error in <call> (<pass>):  *|
|* <name> (<text>)"; without a usable driver and device the first call ends it    *|
|* with zbrt_cuda_available's reason.                                       *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
#ifndef ZBRT_MGPU_H
#define ZBRT_MGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Registers a fatbin/cubin/PTX blob (called from global constructors); the
/// driver loads it at the first mgpuModuleGetFunction.
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
/// The kernel `name` of `module` (loads the module on first use).
void *mgpuModuleGetFunction(void *module, const char *name);
/// Launches `function` on `stream` with grid and block sizes (threads),
/// `smem` bytes of dynamic shared memory and the kernel's arguments.
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
/// `sizeBytes` of device memory, or of managed (unified) memory when
/// `isHostShared`; NULL for 0 bytes.
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);
/// The device whose primary context the calls use (default 0); before the
/// first other call.
void mgpuSetDefaultDevice(int32_t device);

#ifdef __cplusplus
}
#endif

#endif /* ZBRT_MGPU_H */
