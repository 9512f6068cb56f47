//===- SplitBackward.cpp - zb-split-backward: B vs W by dataflow ----------===//
//
// Zero Bubble paper, Section 2: the backward pass of a layer splits into B
// (gradient w.r.t. the layer input, on the critical path to the previous
// stage) and W (gradient w.r.t. the parameters, needed only by the optimizer
// step). A backward op is W iff all its results flow only into parameter
// gradients; everything else is B.
//
// Recompute in W (option recompute, default on): a residual (value produced
// by B, consumed by W) that is a cheap function (elementwise ops and views,
// CostModel isFusible) of values W can get without B - forward activations,
// parameters, batch inputs, constants - is rebuilt in W by cloning that
// slice, when the forward activations it needs and W does not already read
// are smaller than the residual. B ops left without users are erased.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/CostModel.h"
#include "zb/Transforms/HeadViews.h"
#include "zb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include "llvm/Support/raw_ostream.h"
#include <functional>
#include <map>

namespace zb {
#define GEN_PASS_DEF_ZBSPLITBACKWARD
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {
struct ZBSplitBackwardPass
    : public zb::impl::ZBSplitBackwardBase<ZBSplitBackwardPass> {
  using Base::Base;

  /// Values produced by B ops and consumed by W ops, in first-use order.
  static SmallVector<Value>
  residuals(const llvm::DenseSet<Operation *> &weightOps) {
    SmallVector<Value> out;
    llvm::DenseSet<Value> seen;
    Operation *anyW = weightOps.empty() ? nullptr : *weightOps.begin();
    if (!anyW)
      return out;
    for (Operation &w : *anyW->getBlock())
      if (weightOps.contains(&w))
        for (Value v : w.getOperands())
          if (Operation *def = v.getDefiningOp())
            if (def->hasAttr(kOriginAttr) && !weightOps.contains(def) &&
                seen.insert(v).second)
              out.push_back(v);
    return out;
  }
  static int64_t residualBytes(const llvm::DenseSet<Operation *> &weightOps) {
    int64_t bytes = 0;
    for (Value v : residuals(weightOps))
      bytes += tensorBytes(v.getType());
    return bytes;
  }

  /// Clones `ordered` (the ops computing `r`, in block order) before the
  /// first of r's users that `isTarget` accepts, once per (origin, phase) of
  /// those users, each clone taking that user's origin and phase (no id, no
  /// act_grad mark: the rebuilt value belongs to its consumers' stage and
  /// pass, zb-partition-stages places backward ops by origin), and makes the
  /// users of each group read their own copy. `onClone` sees every clone.
  /// Returns whether any user was rebuilt for.
  static bool rebuildForUsers(Value r, ArrayRef<Operation *> ordered,
                              function_ref<bool(Operation *)> isTarget,
                              function_ref<void(Operation *)> onClone) {
    std::map<std::pair<int64_t, bool>, Operation *> firstUser;
    auto keyOf = [](Operation *u) {
      return std::make_pair(
          llvm::cast<IntegerAttr>(u->getAttr(kOriginAttr)).getInt(),
          llvm::cast<PhaseAttr>(u->getAttr(kPhaseAttr)).getValue() ==
              Phase::W);
    };
    for (Operation *u : r.getUsers()) {
      if (!isTarget(u))
        continue;
      Operation *&first = firstUser[keyOf(u)];
      if (!first || u->isBeforeInBlock(first))
        first = u;
    }
    for (auto [key, user] : firstUser) {
      OpBuilder b(user);
      IRMapping map;
      for (Operation *op : ordered) {
        Operation *c = b.clone(*op, map);
        c->setAttr(kPhaseAttr, user->getAttr(kPhaseAttr));
        c->setAttr(kOriginAttr, user->getAttr(kOriginAttr));
        c->removeAttr(kActGradAttr);
        c->removeAttr(kIdAttr);
        onClone(c);
      }
      Value rebuilt = map.lookup(r);
      r.replaceUsesWithIf(rebuilt, [&, key = key](OpOperand &use) {
        return isTarget(use.getOwner()) && keyOf(use.getOwner()) == key;
      });
    }
    return !firstUser.empty();
  }

  /// Rebuilds cheap residuals in W (see the file comment). Returns how many.
  int64_t recomputeInW(Block &body, llvm::DenseSet<Operation *> &weightOps,
                       int64_t &numB, int64_t &numW) {
    // Forward values W already reads (no extra memory to keep them for W).
    llvm::DenseSet<Value> readByW;
    for (Operation *w : weightOps)
      for (Value v : w->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (!def->hasAttr(kOriginAttr))
            readByW.insert(v);
    int64_t count = 0;
    for (Value r : residuals(weightOps)) {
      // The slice of B ops computing r from forward values, arguments and
      // constants; fails on a gradient input or an expensive op.
      llvm::SetVector<Operation *> slice;
      llvm::SetVector<Value> leaves;
      bool ok = true;
      std::function<void(Operation *)> visit = [&](Operation *op) {
        if (!ok || slice.contains(op))
          return;
        if (!isFusible(op) || op->getNumRegions() != 0 || slice.size() > 32) {
          ok = false;
          return;
        }
        for (Value v : op->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (!def || !def->hasAttr(kOriginAttr)) {
            leaves.insert(v);
            continue;
          }
          if (weightOps.contains(def)) {
            ok = false;
            return;
          }
          visit(def);
        }
        slice.insert(op);
      };
      visit(r.getDefiningOp());
      if (!ok)
        continue;
      int64_t extra = 0;
      for (Value v : leaves)
        if (v.getDefiningOp() && !llvm::isa<ConstantOp>(v.getDefiningOp()) &&
            !readByW.contains(v))
          extra += tensorBytes(v.getType());
      if (extra >= tensorBytes(r.getType()))
        continue;
      // Clone the slice (in block order) before the first W user, once per
      // origin of the W users, with that origin: the rebuilt value belongs
      // to the stage of its consumers (zb-partition-stages places backward
      // ops by origin).
      SmallVector<Operation *> ordered(slice.begin(), slice.end());
      llvm::sort(ordered, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      rebuildForUsers(r, ordered,
                      [&](Operation *u) { return weightOps.contains(u); },
                      [&](Operation *c) {
                        weightOps.insert(c);
                        ++numW;
                      });
      for (Value v : leaves)
        if (v.getDefiningOp() && !llvm::isa<ConstantOp>(v.getDefiningOp()))
          readByW.insert(v);
      // B ops of the slice nobody uses any more.
      for (Operation *op : llvm::reverse(ordered))
        if (op->use_empty()) {
          op->erase();
          --numB;
        }
      ++count;
    }
    (void)body;
    return count;
  }

  /// Casts of parameters (zb-autocast's bfloat16 weight copies) that
  /// backward ops read are rebuilt in the backward, before the first user of
  /// each (origin, phase), instead of being saved per microbatch: the slice
  /// from parameters and constants to the cast (cheap ops only) is cloned
  /// with the user's origin and phase. torch.autocast keeps one such copy
  /// per step (its weight cache); zb would otherwise keep one per
  /// microbatch in flight. Returns how many values were rebuilt.
  int64_t rebuildParameterCasts(func::FuncOp func, int64_t &numB,
                                int64_t &numW) {
    Block &body = func.getBody().front();
    llvm::DenseSet<Value> fromParameters;
    for (BlockArgument a : body.getArguments())
      if (func.getArgAttr(a.getArgNumber(), kParamAttr))
        fromParameters.insert(a);
    int64_t count = 0;
    SmallVector<Operation *> forwardCasts;
    for (Operation &op : body.without_terminator()) {
      if (op.hasAttr(kOriginAttr))
        continue;
      bool allParams = op.getNumOperands() > 0 &&
                       llvm::all_of(op.getOperands(), [&](Value v) {
                         return fromParameters.contains(v) ||
                                (v.getDefiningOp() &&
                                 isa<ConstantOp>(v.getDefiningOp()));
                       });
      if (!allParams || !isFusible(&op) || op.getNumRegions() != 0)
        continue;
      for (Value r : op.getResults())
        fromParameters.insert(r);
      if (isa<CastOp>(op))
        forwardCasts.push_back(&op);
    }
    for (Operation *cast : forwardCasts) {
      Value r = cast->getResult(0);
      // The slice: r's parameter-only producers, in block order.
      llvm::SetVector<Operation *> slice;
      std::function<void(Operation *)> visit = [&](Operation *op) {
        if (slice.contains(op))
          return;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (!isa<ConstantOp>(def))
              visit(def);
        slice.insert(op);
      };
      visit(cast);
      SmallVector<Operation *> ordered(slice.begin(), slice.end());
      llvm::sort(ordered, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      bool rebuilt = rebuildForUsers(
          r, ordered, [](Operation *u) { return u->hasAttr(kOriginAttr); },
          [&](Operation *c) {
            ++(llvm::cast<PhaseAttr>(c->getAttr(kPhaseAttr)).getValue() ==
                       Phase::W
                   ? numW
                   : numB);
          });
      if (rebuilt)
        ++count;
    }
    return count;
  }

  /// Whether the fused attention kernels take `g` (zb-gpu-attention-calls'
  /// test on types: bfloat16, head dimensions multiples of 16 up to 128).
  static bool kernelCanRun(AttentionGradOp g) {
    auto q = cast<RankedTensorType>(g.getQuery().getType());
    auto v = cast<RankedTensorType>(g.getValue().getType());
    auto headDim = [](RankedTensorType t) {
      int64_t d = t.getDimSize(t.getRank() - 1);
      return d > 0 && d % 16 == 0 && d <= 128;
    };
    return q.getElementType().isBF16() && v.getElementType().isBF16() &&
           q.hasStaticShape() && v.hasStaticShape() && headDim(q) &&
           headDim(v);
  }

  /// rebuild-attention-views (Passes.td). Returns how many operands now
  /// read a view rebuilt in B.
  int64_t rebuildViewsForAttention(Block &body, int64_t &numB) {
    SmallVector<AttentionGradOp> grads;
    for (Operation &op : body.without_terminator())
      if (auto g = dyn_cast<AttentionGradOp>(op);
          g && g->hasAttr(kOriginAttr) && kernelCanRun(g))
        grads.push_back(g);
    int64_t count = 0;
    for (AttentionGradOp g : grads) {
      // q, k, v: the forward's view ops, cloned before g.
      for (Value operand : {g.getQuery(), g.getKey(), g.getValue()}) {
        std::optional<HeadView> view = matchHeadView(operand);
        if (!view || llvm::any_of(view->ops, [](Operation *op) {
              return op->hasAttr(kOriginAttr);
            }))
          continue;
        rebuildForUsers(
            operand, view->ops, [&](Operation *u) { return u == g; },
            [&](Operation *) { ++numB; });
        ++count;
      }
      // result: the head view of the merged result the forward goes on
      // with.
      Value o = g.getResult();
      if (!o.getDefiningOp<AttentionOp>())
        continue;
      Value merged;
      for (Operation *u : o.getUsers())
        if (!u->hasAttr(kOriginAttr) && (merged = mergedHeadsThrough(o, u)))
          break;
      if (!merged)
        continue;
      auto ot = cast<RankedTensorType>(o.getType());
      OpBuilder b(g);
      Location loc = g.getLoc();
      auto heads = RankedTensorType::get(
          {ot.getDimSize(0), ot.getDimSize(2), ot.getDimSize(1),
           ot.getDimSize(3)},
          ot.getElementType());
      Operation *reshape = ReshapeOp::create(b, loc, heads, merged);
      Operation *transpose = TransposeOp::create(
          b, loc, ot, reshape->getResult(0),
          b.getDenseI64ArrayAttr({0, 2, 1, 3}));
      for (Operation *c : {reshape, transpose}) {
        c->setAttr(kPhaseAttr, g->getAttr(kPhaseAttr));
        c->setAttr(kOriginAttr, g->getAttr(kOriginAttr));
        ++numB;
      }
      g.getResultMutable().assign(transpose->getResult(0));
      ++count;
    }
    return count;
  }

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
                   PhaseAttr::get(&getContext(), isW ? Phase::W : Phase::B));
        (isW ? numW : numB)++;
      }
      (void)ret;
      if (!any)
        continue;
      if (rebuildAttentionViews)
        rebuildViewsForAttention(body, numB);
      int64_t numRecomputed = 0, bytesBefore = residualBytes(weightOps);
      if (recompute) {
        rebuildParameterCasts(func, numB, numW);
        // The rebuilt W casts are W ops.
        for (Operation &op : body.without_terminator())
          if (op.hasAttr(kOriginAttr) &&
              llvm::cast<PhaseAttr>(op.getAttr(kPhaseAttr)).getValue() ==
                  Phase::W)
            weightOps.insert(&op);
        numRecomputed = recomputeInW(body, weightOps, numB, numW);
      }
      if (!report)
        continue;
      int64_t bytes = residualBytes(weightOps);
      llvm::errs() << "zb-split-backward: @" << func.getSymName() << ": "
                   << numB << " B ops, " << numW << " W ops, "
                   << residuals(weightOps).size() << " residuals (" << bytes
                   << " bytes) cross from B to W";
      if (recompute)
        llvm::errs() << "; recompute in W: " << numRecomputed
                     << " residuals rebuilt, " << bytesBefore
                     << " bytes before";
      llvm::errs() << "\n";
    }
  }
};
} // namespace
