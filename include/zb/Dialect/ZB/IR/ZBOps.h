//===- ZBOps.h - zb dialect ops ---------------------------------*- C++ -*-===//
#ifndef ZB_DIALECT_ZB_IR_ZBOPS_H
#define ZB_DIALECT_ZB_IR_ZBOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"

#include "zb/Dialect/ZB/IR/ZBInterfaces.h.inc"

#define GET_OP_CLASSES
#include "zb/Dialect/ZB/IR/ZBOps.h.inc"

namespace zb {
/// Names of the discardable attributes the passes use (see ZBBase.td).
inline constexpr llvm::StringLiteral kParamAttr = "zb.param";
inline constexpr llvm::StringLiteral kIdAttr = "zb.id";
inline constexpr llvm::StringLiteral kOriginAttr = "zb.origin";
inline constexpr llvm::StringLiteral kPhaseAttr = "zb.phase";
inline constexpr llvm::StringLiteral kStageAttr = "zb.stage";
inline constexpr llvm::StringLiteral kActGradAttr = "zb.act_grad";
} // namespace zb

#endif // ZB_DIALECT_ZB_IR_ZBOPS_H
