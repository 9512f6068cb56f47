//===- SplitBackward.cpp - zb-split-backward: B vs W by dataflow ----------===//
//
// Zero Bubble paper, Section 2: the backward pass of a layer splits into B
// (gradient w.r.t. the layer input, on the critical path to the previous
// stage) and W (gradient w.r.t. the parameters, needed only by the optimizer
// step). A backward op is W iff all its results flow only into parameter
// gradients; everything else is B.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

namespace zb {
#define GEN_PASS_DEF_ZBSPLITBACKWARD
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

static int64_t bytesOf(Type t) {
  auto tt = llvm::dyn_cast<RankedTensorType>(t);
  if (!tt || !tt.hasStaticShape())
    return 0;
  return tt.getNumElements() *
         std::max<int64_t>(1, tt.getElementTypeBitWidth() / 8);
}

namespace {
struct ZBSplitBackwardPass
    : public zb::impl::ZBSplitBackwardBase<ZBSplitBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Block &body = func.getBody().front();
      Operation *ret = body.getTerminator();
      // B = the activation-gradient ops and everything they need.
      llvm::DenseSet<Operation *> inputOps;
      SmallVector<Operation *> worklist;
      bool any = false;
      for (Operation &op : body.without_terminator()) {
        if (!op.hasAttr(kOriginAttr))
          continue;
        any = true;
        if (op.hasAttr(kActGradAttr) && inputOps.insert(&op).second)
          worklist.push_back(&op);
      }
      while (!worklist.empty()) {
        Operation *op = worklist.pop_back_val();
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (def->hasAttr(kOriginAttr) && inputOps.insert(def).second)
              worklist.push_back(def);
      }
      llvm::DenseSet<Operation *> weightOps;
      int64_t numB = 0, numW = 0;
      for (Operation &op : body.without_terminator()) {
        if (!op.hasAttr(kOriginAttr))
          continue;
        bool isW = !inputOps.contains(&op);
        if (isW)
          weightOps.insert(&op);
        op.setAttr(kPhaseAttr,
                   StringAttr::get(&getContext(), isW ? "W" : "B"));
        (isW ? numW : numB)++;
      }
      (void)ret;
      if (!any || !report)
        continue;
      // Residuals: values produced by B ops and consumed by W ops.
      llvm::DenseSet<Value> residuals;
      for (Operation *w : weightOps)
        for (Value v : w->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (def->hasAttr(kOriginAttr) && !weightOps.contains(def))
              residuals.insert(v);
      int64_t bytes = 0;
      for (Value v : residuals)
        bytes += bytesOf(v.getType());
      llvm::errs() << "zb-split-backward: @" << func.getSymName() << ": "
                   << numB << " B ops, " << numW << " W ops, "
                   << residuals.size() << " residuals (" << bytes
                   << " bytes) cross from B to W\n";
    }
  }
};
} // namespace
