//===- BackendSelection.h - zb runtime: which backend runs ------*- C++ -*-===//
//
// Not installed. The one place that chooses the backend the zbrt_* entry
// points dispatch to (Backend.h): the CPU backend from the start, the CUDA
// backend from zbrt_cuda_start to zbrt_finalize.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_ABI_BACKENDSELECTION_H
#define ZBRT_LIB_ABI_BACKENDSELECTION_H

#include "../Backend.h"

#include "zbrt/zbrt.h"

namespace zbrt {

/// The active backend (the CPU backend until zbrt_cuda_start).
Backend &backend();
/// zbrt_init: configures the CPU backend (one BLAS thread per rank).
void initBackends();
/// zbrt_cuda_start: the CUDA backend becomes the active one.
void startCudaBackend(int32_t flags);
/// Whether the CUDA backend is active (zbrt_cuda_started).
bool cudaBackendStarted();
/// The CUDA backend's counters (zeros before zbrt_cuda_start).
void cudaBackendStats(ZbrtCudaStats &out);
/// Where the memory pool and the runner's buffers come from (abi/Memory.cpp
/// allocates, this chooses): host memory (malloc) until zbrt_use_cuda_memory
/// or zbrt_cuda_start, then CUDA managed memory, or for the pool only device
/// memory when the rank program's host code reads no element data.
enum class MemoryPlacement { Host, CudaManaged, CudaPoolOnDevice };
MemoryPlacement memoryPlacement();
/// zbrt_use_cuda_memory (poolOnDevice false) and zbrt_cuda_start: the
/// placement from now on.
void useCudaMemory(bool poolOnDevice);
/// zbrt_finalize: finalizes the active backend, and the CPU backend beneath
/// it; the CPU backend is active afterwards.
void finalizeBackends();

} // namespace zbrt

#endif // ZBRT_LIB_ABI_BACKENDSELECTION_H
