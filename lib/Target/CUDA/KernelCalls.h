//===- KernelCalls.h - tensor-level calls of hand-built kernels -*- C++ -*-===//
//
// Shared by zb-gpu-attention-calls and zb-gpu-norm-calls: an op the CUDA
// target runs as a kernel built by zb (not generated from linalg) becomes,
// before bufferization, a call of a private declaration on buffers (as
// convert-zb-to-runtime makes a GEMM one); the matching *-kernels pass
// replaces the call by its kernel launches after gpu-kernel-outlining.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_TARGET_CUDA_KERNELCALLS_H
#define ZB_LIB_TARGET_CUDA_KERNELCALLS_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace zb::gpu_calls {

/// `t` with its leading `rank - keep` dimensions collapsed into one.
mlir::Value collapseLeading(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value t, int64_t keep);

/// The inverse of collapseLeading for a result of type `type`.
mlir::Value expandLeading(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value t, mlir::RankedTensorType type,
                          int64_t keep);

/// The buffer of `t` with its leading dimensions collapsed (`keep` kept):
/// bufferization.to_buffer read_only, identity layout.
mlir::Value readOnlyBuffer(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value t, int64_t keep);

/// Replaces `result` by the tensor of `buffer` (which a call fills), its
/// leading dimensions expanded back to `result`'s (`keep` kept).
void replaceByBuffer(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value result, mlir::Value buffer, int64_t keep);

/// A fresh private declaration `prefix<N>(types)` at the start of `module`
/// (N from `next`, the first free name); returns its name.
std::string declareCallee(mlir::ModuleOp module, mlir::SymbolTable &symbols,
                          int64_t &next, llvm::StringRef prefix,
                          mlir::TypeRange types, mlir::Location loc);

} // namespace zb::gpu_calls

#endif // ZB_LIB_TARGET_CUDA_KERNELCALLS_H
