//===- DeviceMemory.h - where a CUDA program's buffers live -----*- C++ -*-===//
//
// Shared by zb-gpu-sink-constants and zb-gpu-check-device-memory: which
// buffers of a rank program's host code are host memory (a GPU kernel or
// cuBLAS cannot read them) and how a view chain leads back to its source.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TARGET_CUDA_DEVICEMEMORY_H
#define ZB_TARGET_CUDA_DEVICEMEMORY_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace zb::cuda {

/// Whether `op` is a view that shares its first operand's buffer
/// (memref.subview, cast, collapse_shape, expand_shape, reinterpret_cast).
bool isBufferView(mlir::Operation *op);

/// The buffer `value` is a view of: follows isBufferView ops to the first
/// value that is not one (a block argument or another op's result).
mlir::Value viewSource(mlir::Value value);

/// The constant memref.global whose memref.get_global `value` is, or a view
/// of (through isBufferView ops); null otherwise.
mlir::memref::GlobalOp constantGlobalRoot(mlir::Value value,
                                          mlir::SymbolTableCollection &symbols);

} // namespace zb::cuda

#endif // ZB_TARGET_CUDA_DEVICEMEMORY_H
