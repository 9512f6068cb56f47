//===- ZBOpsUtils.h - Helpers shared by the zb op files ---------*- C++ -*-===//
//
// Internal to lib/Dialect/ZB/IR (ZBOps.cpp, ZBGradients.cpp, ZBBuilder.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_DIALECT_ZB_IR_ZBOPSUTILS_H
#define ZB_LIB_DIALECT_ZB_IR_ZBOPSUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace zb::detail {

/// The ranked tensor type of `v` (every zb operand and result has one).
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

} // namespace zb::detail

#endif // ZB_LIB_DIALECT_ZB_IR_ZBOPSUTILS_H
