//===- ClusterWeightGradients.cpp - zb-cluster-weight-gradients -----------===//
//
// The Zero Bubble paper's Appendix A: a W pass is several independent
// computations, one (or a few) per parameter. This pass makes them visible:
// each stage's W function is split into one function per group of gradients
// that share no computation, and W becomes the calls of those functions, so
// that zb-lower-pipeline can call them one by one in the stage's last W pass
// and start each group's gradient all-reduce as soon as it is done.
//
// Groups: results r and s are in one group when an op that (transitively)
// reads a function argument feeds both, or when they are parts of one
// parameter (same zb.index). An op computed from constants alone (a splat
// of 1 for a sum's gradient) is cheap and is cloned into every group that
// uses it instead of joining them. With bucket-bytes, adjacent groups are
// then merged into all-reduce buckets of at least that many bytes.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBAttributes.h"
#include "zb/Transforms/CostModel.h"
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace zb {
#define GEN_PASS_DEF_ZBCLUSTERWEIGHTGRADIENTS
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

/// The groups of `w`'s results (indices, increasing within a group; groups
/// ordered by their first result). Empty when `w` is not split: a body of
/// more than one block or with region-holding ops, or a result that is not
/// a parameter gradient.
SmallVector<SmallVector<unsigned>> groupResults(func::FuncOp w) {
  if (w.isExternal() || !llvm::hasSingleElement(w.getBody()))
    return {};
  unsigned n = w.getNumResults();
  llvm::EquivalenceClasses<unsigned> groups;
  llvm::DenseMap<int64_t, unsigned> firstOfParam;
  for (unsigned i = 0; i < n; ++i) {
    groups.insert(i);
    auto role = w.getResultAttrOfType<RoleAttr>(i, kRoleAttr);
    auto index = w.getResultAttrOfType<IntegerAttr>(i, "zb.index");
    if (!role || role.getValue() != Role::param_grad || !index)
      return {};
    auto [it, inserted] = firstOfParam.try_emplace(index.getInt(), i);
    if (!inserted)
      groups.unionSets(it->second, i);
  }
  Block &body = w.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  // Does the op read a function argument, directly or through its operands?
  llvm::DenseSet<Operation *> readsArgument;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() > 0)
      return {};
    for (Value v : op.getOperands())
      if (llvm::isa<BlockArgument>(v) ||
          readsArgument.contains(v.getDefiningOp()))
        readsArgument.insert(&op);
  }
  // The results each op feeds, from the return backwards.
  llvm::DenseMap<Operation *, llvm::BitVector> feeds;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    llvm::BitVector f(n);
    for (Operation *user : op.getUsers()) {
      if (user == ret) {
        for (OpOperand &use : op.getUses())
          if (use.getOwner() == ret)
            f.set(use.getOperandNumber());
        continue;
      }
      auto it = feeds.find(user);
      if (it != feeds.end())
        f |= it->second;
    }
    if (readsArgument.contains(&op) && f.count() > 1) {
      int first = f.find_first();
      for (int i : f.set_bits())
        groups.unionSets(first, i);
    }
    feeds[&op] = std::move(f);
  }
  // An argument returned as it is joins nothing (it feeds one result).
  SmallVector<SmallVector<unsigned>> out;
  llvm::DenseMap<unsigned, size_t> groupOfLeader;
  for (unsigned i = 0; i < n; ++i) {
    unsigned leader = groups.getLeaderValue(i);
    auto [it, inserted] = groupOfLeader.try_emplace(leader, out.size());
    if (inserted)
      out.emplace_back();
    out[it->second].push_back(i);
  }
  if (out.size() < 2)
    return {};
  return out;
}

/// The ops of `body` but its terminator, last first (safe to erase while
/// walking).
SmallVector<Operation *> opsBackwards(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : llvm::reverse(body.without_terminator()))
    ops.push_back(&op);
  return ops;
}

/// Clones `w` as the function of one group: only the results in `results`,
/// dead ops and unread arguments removed. `keptArgs`: the positions among
/// `w`'s arguments of the clone's arguments, in order.
func::FuncOp cloneGroup(func::FuncOp w, ArrayRef<unsigned> results,
                        StringRef name, SmallVectorImpl<unsigned> &keptArgs) {
  auto fn = llvm::cast<func::FuncOp>(w->clone());
  fn.setSymName(name);
  fn.setPrivate();
  fn->removeAttr(kWeightClustersAttr);
  Block &body = fn.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  llvm::BitVector dropResults(w.getNumResults(), true);
  SmallVector<Value> kept;
  for (unsigned i : results) {
    dropResults.reset(i);
    kept.push_back(ret.getOperand(i));
  }
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), kept);
  ret.erase();
  (void)fn.eraseResults(dropResults);
  // Dead ops, from the end (each op's users come after it).
  for (Operation *op : opsBackwards(body))
    if (isOpTriviallyDead(op))
      op->erase();
  llvm::BitVector unread(fn.getNumArguments());
  keptArgs.clear();
  for (BlockArgument a : body.getArguments()) {
    if (a.use_empty())
      unread.set(a.getArgNumber());
    else
      keptArgs.push_back(a.getArgNumber());
  }
  (void)fn.eraseArguments(unread);
  return fn;
}

/// Merges adjacent groups, in order, until each holds at least `minBytes`
/// bytes of gradients (the last may hold fewer).
SmallVector<SmallVector<unsigned>>
mergeToBuckets(func::FuncOp w, ArrayRef<SmallVector<unsigned>> groups,
               int64_t minBytes) {
  SmallVector<SmallVector<unsigned>> buckets;
  int64_t bytes = 0;
  for (const SmallVector<unsigned> &g : groups) {
    if (buckets.empty() || bytes >= minBytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().append(g.begin(), g.end());
    for (unsigned i : g)
      bytes += tensorBytes(w.getResultTypes()[i]);
  }
  for (SmallVector<unsigned> &b : buckets)
    llvm::sort(b);
  return buckets;
}

/// Splits `w` (see the file comment); no change for one group.
void splitWeightFunction(func::FuncOp w, SymbolTable &symbols,
                         int64_t bucketBytes) {
  SmallVector<SmallVector<unsigned>> groups = groupResults(w);
  if (bucketBytes > 0 && groups.size() > 1)
    groups = mergeToBuckets(w, groups, bucketBytes);
  if (groups.size() < 2)
    return;
  // All groups' functions first, from the unchanged W.
  SmallVector<func::FuncOp> fns;
  SmallVector<SmallVector<unsigned>> argsOf(groups.size());
  Operation *after = w;
  for (auto [j, group] : llvm::enumerate(groups)) {
    func::FuncOp fn = cloneGroup(
        w, group, (w.getSymName() + "_c" + Twine(j)).str(), argsOf[j]);
    symbols.insert(fn, std::next(Block::iterator(after)));
    after = fn;
    fns.push_back(fn);
  }
  // W's new body: the groups' calls, each with the arguments it kept.
  Block &body = w.getBody().front();
  Operation *oldRet = body.getTerminator();
  OpBuilder b(oldRet);
  SmallVector<Value> results(w.getNumResults());
  SmallVector<Attribute> names;
  llvm::DenseSet<Operation *> keep;
  for (auto [fn, group, args] : llvm::zip(fns, groups, argsOf)) {
    names.push_back(FlatSymbolRefAttr::get(fn.getSymNameAttr()));
    SmallVector<Value> operands;
    for (unsigned a : args)
      operands.push_back(body.getArgument(a));
    auto call = func::CallOp::create(b, w.getLoc(), fn, operands);
    keep.insert(call);
    for (auto [k, i] : llvm::enumerate(group))
      results[i] = call.getResult(k);
  }
  func::ReturnOp::create(b, oldRet->getLoc(), results);
  oldRet->erase();
  // The old computation, now unused, from the end.
  for (Operation *op : opsBackwards(body))
    if (!keep.contains(op))
      op->erase();
  w->setAttr(kWeightClustersAttr, ArrayAttr::get(w.getContext(), names));
}

struct ZBClusterWeightGradientsPass
    : public zb::impl::ZBClusterWeightGradientsBase<
          ZBClusterWeightGradientsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes < 0) {
      module.emitError("zb-cluster-weight-gradients: bucket-bytes must be "
                       ">= 0, got ")
          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    SymbolTable symbols(module);
    llvm::DenseSet<Operation *> done;
    for (const StageInfo &st : info->stages) {
      auto w = symbols.lookup<func::FuncOp>(st.backwardWeight);
      if (!w) {
        module.emitError("zb.pipeline names the W function @")
            << st.backwardWeight << " of stage " << st.stage
            << ", which the module does not define";
        return signalPassFailure();
      }
      if (w->hasAttr(kWeightClustersAttr) || !done.insert(w).second)
        continue;
      splitWeightFunction(w, symbols, bucketBytes);
    }
  }
};

} // namespace
