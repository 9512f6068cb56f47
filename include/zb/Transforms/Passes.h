//===- Passes.h - zb transformation passes ----------------------*- C++ -*-===//
#ifndef ZB_TRANSFORMS_PASSES_H
#define ZB_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"

namespace zb {
#define GEN_PASS_DECL
#include "zb/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

#endif // ZB_TRANSFORMS_PASSES_H
