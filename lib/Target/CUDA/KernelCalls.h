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
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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

/// A kernel `<parent>_<what>_<N>` (N from `next`, the first free name) in
/// a gpu.module of its own at the end of `module` (zb-gpu-merge-kernel-modules
/// gathers them), with `types` as arguments, `threads` threads, a grid of
/// (gridX, gridY) blocks and `zb.kernel_kind = kind`; its body is empty.
mlir::gpu::GPUFuncOp createKernel(mlir::ModuleOp module,
                                  mlir::SymbolTable &symbols, int64_t &next,
                                  mlir::func::FuncOp parent,
                                  llvm::StringRef what, mlir::TypeRange types,
                                  int64_t gridX, int64_t gridY,
                                  int64_t threads, llvm::StringRef kind,
                                  mlir::Location loc);

/// Launches `kernel` before `call` with the call's operands, on the grid
/// and block sizes `kernel` states.
void launchBefore(mlir::func::CallOp call, mlir::gpu::GPUFuncOp kernel);

/// Erases `call` and, once it has no other call, its declaration; marks
/// `module` as a gpu.container_module.
void eraseCall(mlir::ModuleOp module, mlir::SymbolTable &symbols,
               mlir::func::CallOp call);

} // namespace zb::gpu_calls

#endif // ZB_LIB_TARGET_CUDA_KERNELCALLS_H
