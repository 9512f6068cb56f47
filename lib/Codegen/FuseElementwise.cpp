//===- FuseElementwise.cpp - zb-fuse-elementwise --------------------------===//
//
// Upstream's elementwise fusion patterns with a control function that fuses
// a producer into its consumer only when the consumer is its only use (or
// the producer is a widening float cast, recomputed exactly in each
// consumer) and the fused body stays within max-fused-ops operations (see
// Passes.td).
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace zb {
#define GEN_PASS_DEF_ZBFUSEELEMENTWISE
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
/// Operations in a generic's body (its terminator included).
size_t bodySize(linalg::GenericOp op) {
  return op.getBody()->getOperations().size();
}

/// An elementwise generic whose body is one arith.extf of its one input.
bool isWideningCast(Operation *op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() || bodySize(g) != 2 ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  auto ext = dyn_cast<arith::ExtFOp>(g.getBody()->front());
  return ext && ext.getIn() == g.getBody()->getArgument(0);
}

struct ZBFuseElementwisePass
    : public zb::impl::ZBFuseElementwiseBase<ZBFuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    if (maxFusedOps < 2) {
      getOperation().emitError("zb-fuse-elementwise: max-fused-ops must be "
                               ">= 2, got ")
          << static_cast<int64_t>(maxFusedOps);
      return signalPassFailure();
    }
    const size_t limit = static_cast<size_t>(maxFusedOps);
    linalg::ControlFusionFn control = [limit](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      if (!producer)
        return false;
      // A widening float cast (bfloat16 to float32: exact) is recomputed in
      // each of its consumers: they read the narrow tensor, and the wide
      // copy is not written at all once every consumer has it.
      if (!producer->hasOneUse() && !isWideningCast(producer))
        return false;
      // A step function's elementwise operations accumulate the
      // microbatches' weight gradients, one add per W: fused, the chain
      // would read every W's gradients at the last one and keep them all
      // alive until then (peak memory growing with the microbatch count).
      if (zb::isStepFunction(
              fused->getOwner()->getParentOfType<func::FuncOp>()))
        return false;
      auto p = dyn_cast<linalg::GenericOp>(producer);
      auto c = dyn_cast<linalg::GenericOp>(fused->getOwner());
      // The two bodies share one terminator after fusion.
      return !p || !c || bodySize(p) + bodySize(c) - 1 <= limit;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
