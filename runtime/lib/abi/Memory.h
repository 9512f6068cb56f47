//===- Memory.h - zb runtime: where the pool gets memory --------*- C++ -*-===//
//
// Not installed. For the ABI's own sources (abi/Memory.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_ABI_MEMORY_H
#define ZBRT_LIB_ABI_MEMORY_H

namespace zbrt {
namespace detail {

/// zbrt_use_cuda_memory without probing the driver again (zbrt_cuda_start
/// has loaded it). `poolOnDevice`: the pool's blocks are device memory
/// (cuMemAlloc), which only kernels, copies and the libraries touch (the
/// rank program's host code reads no element data); else managed memory.
void useCudaMemory(bool poolOnDevice);

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_ABI_MEMORY_H
