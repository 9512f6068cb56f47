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
/// has loaded it).
void useCudaMemory();

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_ABI_MEMORY_H
