//===- DecomposeAttention.cpp - zb-decompose-attention --------------------===//
//
// zb.attention and zb.attention_grad rewritten with the builders of
// include/zb/Dialect/ZB/IR/ZBAttention.h (primitive zb ops). See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBAttention.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/IR/Builders.h"

namespace zb {
#define GEN_PASS_DEF_ZBDECOMPOSEATTENTION
#include "zb/Conversion/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

struct ZBDecomposeAttentionPass
    : public zb::impl::ZBDecomposeAttentionBase<ZBDecomposeAttentionPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      ZBBuilder e(b, op->getLoc());
      if (auto fwd = dyn_cast<AttentionOp>(op)) {
        AttentionSpec spec{fwd.getQuery(), fwd.getKey(), fwd.getValue(),
                           fwd.getMask(), fwd.getScale().convertToDouble(),
                           fwd.getCausal()};
        auto [result, lse] = buildAttentionForward(
            e, spec, fwd.getLse().getType().getElementType());
        fwd.getResult().replaceAllUsesWith(result);
        fwd.getLse().replaceAllUsesWith(lse);
      } else {
        auto bwd = cast<AttentionGradOp>(op);
        AttentionSpec spec{bwd.getQuery(), bwd.getKey(), bwd.getValue(),
                           bwd.getMask(), bwd.getScale().convertToDouble(),
                           bwd.getCausal()};
        AttentionGradients g =
            buildAttentionBackward(e, spec, bwd.getResult(), bwd.getLse(),
                                   bwd.getResultGrad(), bwd.getLseGrad());
        bwd.getQueryGrad().replaceAllUsesWith(g.query);
        bwd.getKeyGrad().replaceAllUsesWith(g.key);
        bwd.getValueGrad().replaceAllUsesWith(g.value);
      }
      op->erase();
    }
  }
};

} // namespace
