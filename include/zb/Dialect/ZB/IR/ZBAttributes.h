//===- ZBAttributes.h - zb pipeline attributes ------------------*- C++ -*-===//
//
// The typed attributes of the pipeline (ZBAttributes.td): #zb.phase,
// #zb.kind, #zb.role, #zb.action, #zb.schedule, #zb.stage, #zb.value,
// #zb.pipeline, #zb.rank_arg, and the names under which the passes attach
// them.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DIALECT_ZB_IR_ZBATTRIBUTES_H
#define ZB_DIALECT_ZB_IR_ZBATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Operation.h"

#include "zb/Dialect/ZB/IR/ZBEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "zb/Dialect/ZB/IR/ZBAttributes.h.inc"

namespace zb {
/// Attribute names (values: the typed attributes above).
inline constexpr llvm::StringLiteral kPipelineAttr = "zb.pipeline";
inline constexpr llvm::StringLiteral kScheduleAttr = "zb.schedule";
inline constexpr llvm::StringLiteral kRoleAttr = "zb.role";
inline constexpr llvm::StringLiteral kFuncKindAttr = "zb.kind";
inline constexpr llvm::StringLiteral kRankArgsAttr = "zb.rank_args";
/// A rank's step function (zb-lower-pipeline): its rank, i64.
inline constexpr llvm::StringLiteral kStepRankAttr = "zb.rank";
/// A rank's step function: the messages it sends (zbrt_send) in program
/// order, [peer, tag, bytes] each, so the order of every channel from the
/// rank (zb-lower-pipeline; plan.json ranks[r].sends).
inline constexpr llvm::StringLiteral kChannelOrderAttr = "zb.channel_order";
/// A stage's W function split by zb-cluster-weight-gradients: the functions
/// of its independent groups of parameter gradients, in the order it calls
/// them (an array of symbol references).
inline constexpr llvm::StringLiteral kWeightClustersAttr = "zb.weight_clusters";

/// True for a rank's step function (it carries kStepRankAttr).
inline bool isStepFunction(mlir::Operation *fn) {
  return fn && fn->hasAttr(kStepRankAttr);
}
} // namespace zb

#endif // ZB_DIALECT_ZB_IR_ZBATTRIBUTES_H
