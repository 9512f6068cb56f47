//===- Mgpu.h - zb runtime: the driver work of mgpu* ------------*- C++ -*-===//
//
// Not installed. What abi/Mgpu.cpp's entry points do on the CUDA driver when
// the work is not the CUDA backend's (a stream other than the compute
// stream, or no backend yet: MLIR's global constructors load modules before
// main): lazily loaded modules, pooled streams and events, allocations and
// copies. Every driver error ends the job through check() (Driver.h).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_MGPU_H
#define ZBRT_LIB_CUDA_MGPU_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace zbrt {
namespace cuda {
namespace mgpu {

/// A module registered by MLIR's global constructor: recorded, loaded by
/// the driver at its first function lookup (one module per blob).
void *registerModule(const void *blob);
/// Drops one registration; unloads the module with the last one.
void unregisterModule(void *module);
/// The kernel `name` of `module`, resolved once.
void *moduleFunction(void *module, const char *name);
/// cuLaunchKernel on `stream`.
void launchKernel(void *function, const unsigned grid[3],
                  const unsigned block[3], unsigned smem, void *stream,
                  void **params, void **extra);
/// A stream (from the pool, else a new non-blocking one); back to the pool.
void *createStream();
void destroyStream(void *stream);
void synchronizeStream(void *stream);
void streamWaitEvent(void *stream, void *event);
/// An event without timing (pooled); back to the pool.
void *createEvent();
void destroyEvent(void *event);
void synchronizeEvent(void *event);
void recordEvent(void *event, void *stream);
/// Managed memory when `hostShared`, else device memory; null for 0 bytes.
/// When the device is out of memory: null if `nullIfOutOfMemory`, else the
/// job ends with "out of GPU memory: ..." (detail::fatalOutOfMemory).
void *allocate(uint64_t bytes, bool hostShared,
               bool nullIfOutOfMemory = false);

void release(void *pointer);
/// Asynchronous copy and fills on `stream` (counted: hostDeviceBytes).
void copy(void *dst, const void *src, size_t bytes, void *stream);
void fill32(void *dst, unsigned value, size_t count, void *stream);
void fill16(void *dst, unsigned short value, size_t count, void *stream);

} // namespace mgpu
} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_MGPU_H
