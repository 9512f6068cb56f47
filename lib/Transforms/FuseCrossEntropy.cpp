//===- FuseCrossEntropy.cpp - zb-fuse-cross-entropy -----------------------===//
//
// Gives every zb.cross_entropy of the forward-and-loss function its lse
// result, so that its gradient is exp(logits - lse) - one_hot in one
// elementwise pass (no softmax recomputed, no probabilities kept), and lets
// it read bfloat16 logits directly instead of a float32 copy made by a
// widening cast (autocast's, or the exporter's `logits.float()`), moving
// the reshapes between the two before the cast. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace zb {
#define GEN_PASS_DEF_ZBFUSECROSSENTROPY
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

unsigned floatWidth(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  auto f = dyn_cast<FloatType>(t.getElementType());
  return f ? f.getWidth() : 0;
}

struct ZBFuseCrossEntropyPass
    : public zb::impl::ZBFuseCrossEntropyBase<ZBFuseCrossEntropyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-fuse-cross-entropy: no function named '")
          << function << "'";
      return signalPassFailure();
    }
    SmallVector<CrossEntropyOp> ops;
    func.walk([&](CrossEntropyOp op) {
      if (!op.getLse())
        ops.push_back(op);
    });
    for (CrossEntropyOp op : ops)
      rewrite(op);
  }

  /// The widening cast feeding `logits` through single-use reshapes (the
  /// reshapes, last first, in `views`), when the cast and the reshapes
  /// have no other use; else null.
  static CastOp absorbableCast(Value logits,
                               SmallVectorImpl<ReshapeOp> &views) {
    Value v = logits;
    while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      if (!reshape.getResult().hasOneUse())
        return CastOp();
      views.push_back(reshape);
      v = reshape.getOperand();
    }
    auto cast = v.getDefiningOp<CastOp>();
    if (!cast || !cast.getResult().hasOneUse())
      return CastOp();
    Value narrow = cast.getOperand();
    unsigned from = floatWidth(narrow), to = floatWidth(cast.getResult());
    if (from == 0 || to <= from)
      return CastOp();
    return cast;
  }

  void rewrite(CrossEntropyOp op) {
    OpBuilder b(op);
    Value logits = op.getLogits();
    // The reshapes between the cast and the op, the op's operand first.
    SmallVector<ReshapeOp> views;
    CastOp widen = absorbableCast(logits, views);
    if (widen) {
      // The reshapes, first to last, on the narrow value.
      logits = widen.getOperand();
      Type elt = cast<RankedTensorType>(logits.getType()).getElementType();
      for (ReshapeOp r : llvm::reverse(views))
        logits =
            ReshapeOp::create(b, r.getLoc(), r.getType().clone(elt), logits)
                .getResult();
    }
    RankedTensorType result = op.getResult().getType();
    auto targets = cast<RankedTensorType>(op.getTargets().getType());
    auto fused = CrossEntropyOp::create(
        b, op.getLoc(), result,
        RankedTensorType::get(targets.getShape(), result.getElementType()),
        logits, op.getTargets(), op.getIgnoreIndexAttr());
    // Keep the op's other attributes (names, locations of the importers).
    for (NamedAttribute a : op->getDiscardableAttrs())
      fused->setAttr(a.getName(), a.getValue());
    op.getResult().replaceAllUsesWith(fused.getResult());
    op.erase();
    if (widen) {
      // The float32 copy and its reshapes, each of one use, now unused.
      for (ReshapeOp r : views)
        r.erase();
      widen.erase();
      ++numCastsAbsorbed;
    }
    ++numFused;
    if (remarks) {
      InFlightDiagnostic remark =
          fused.emitRemark("zb-fuse-cross-entropy: lse kept for the gradient");
      if (widen)
        remark << "; logits read in "
               << cast<RankedTensorType>(logits.getType()).getElementType()
               << " (widening cast absorbed)";
    }
  }
};

} // namespace
