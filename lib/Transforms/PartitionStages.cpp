//===- PartitionStages.cpp - zb-partition-stages --------------------------===//
//
// Cuts the differentiated model into contiguous pipeline stages that balance
// the cost model (dynamic programming: minimise the slowest stage) or cut at
// layer boundaries, places the backward ops with their origin and splits
// tied parameters' gradients per stage; OutlineStages.cpp then outlines every
// stage into forward / backward_input / backward_weight functions whose
// signatures make the saved tensors (M_B) and the B-to-W residuals (M_W)
// explicit.
//
//===----------------------------------------------------------------------===//
#include "Partitioner.h"

#include "zb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <functional>
#include <map>
#include <set>

namespace zb {
#define GEN_PASS_DEF_ZBPARTITIONSTAGES
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;
using namespace zb::partition;

LogicalResult Partitioner::assignStages(ArrayRef<Operation *> forward,
                                        ArrayRef<Operation *> backward) {
  // Cost of a forward op = its own time plus that of the backward ops it
  // originates, so the partition balances whole F+B+W per stage.
  llvm::DenseMap<int64_t, double> costById;
  for (Operation *op : backward)
    costById[llvm::cast<IntegerAttr>(op->getAttr(kOriginAttr)).getInt()] +=
        opTimeMs(op, target);
  SmallVector<Operation *> compute;
  SmallVector<double> cost;
  for (Operation *op : forward) {
    if (llvm::isa<ConstantOp>(op))
      continue;
    compute.push_back(op);
    int64_t id = llvm::cast<IntegerAttr>(op->getAttr(kIdAttr)).getInt();
    // A tiny floor keeps zero-cost ops from making stages empty of work.
    cost.push_back(opTimeMs(op, target) + costById.lookup(id) + 1e-9);
  }
  int64_t n = compute.size();
  if (n < numStages)
    return func.emitError("cannot cut ")
           << n << " compute ops into " << numStages << " stages: use at most "
           << n << " stages (ranks x chunks)";
  if (byLayers) {
    FailureOr<SmallVector<int64_t>> cuts = layerCuts(compute);
    if (failed(cuts))
      return failure();
    for (int64_t k = 0; k < numStages; ++k)
      for (int64_t t = (*cuts)[k]; t < (*cuts)[k + 1]; ++t)
        stageOf[compute[t]] = k;
    sinkParameterOps(compute);
    return followOrigins(compute, backward);
  }
  // prefix sums and DP: best[k][j] = min over cuts of the max stage cost of
  // the first j ops in k stages.
  SmallVector<double> prefix(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(numStages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(numStages + 1,
                                        std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= numStages; ++k)
    for (int64_t j = k; j <= n; ++j)
      for (int64_t i = k - 1; i < j; ++i) {
        double c = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (c < best[k][j]) {
          best[k][j] = c;
          cut[k][j] = i;
        }
      }
  int64_t j = n;
  for (int64_t k = numStages; k >= 1; --k) {
    int64_t i = cut[k][j];
    for (int64_t t = i; t < j; ++t)
      stageOf[compute[t]] = k - 1;
    j = i;
  }
  sinkParameterOps(compute);
  return followOrigins(compute, backward);
}

void Partitioner::sinkParameterOps(ArrayRef<Operation *> compute) {
  llvm::DenseSet<Operation *> fromParams;
  for (Operation *op : compute)
    if (op->getNumOperands() &&
        llvm::all_of(op->getOperands(), [&](Value v) {
          if (auto a = llvm::dyn_cast<BlockArgument>(v))
            return isParam(a);
          Operation *def = v.getDefiningOp();
          return llvm::isa<ConstantOp>(def) || fromParams.contains(def);
        }))
      fromParams.insert(op);
  // Consumers first, so that a chain of such ops follows its last one.
  for (Operation *op : llvm::reverse(compute)) {
    if (!fromParams.contains(op))
      continue;
    int64_t first = std::numeric_limits<int64_t>::max();
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        auto it = stageOf.find(user);
        if (it != stageOf.end())
          first = std::min(first, it->second);
      }
    if (first != std::numeric_limits<int64_t>::max() && first > stageOf[op])
      stageOf[op] = first;
  }
}

LogicalResult Partitioner::followOrigins(ArrayRef<Operation *> compute,
                                         ArrayRef<Operation *> backward) {
  // Backward ops follow their origin.
  llvm::DenseMap<int64_t, int64_t> stageById;
  for (Operation *op : compute)
    stageById[llvm::cast<IntegerAttr>(op->getAttr(kIdAttr)).getInt()] =
        stageOf[op];
  for (Operation *op : backward) {
    int64_t origin = llvm::cast<IntegerAttr>(op->getAttr(kOriginAttr)).getInt();
    auto it = stageById.find(origin);
    if (it == stageById.end())
      return op->emitOpError("has zb.origin = ")
             << origin << " which names no compute op of the forward pass";
    stageOf[op] = it->second;
  }
  return success();
}

/// zb-autodiff sums the gradient contributions of a parameter's uses in a
/// left-nested chain of zb.add ops (tagged with the first contribution's
/// origin): ((c0 + c1) + c2) + ... These are its leaves c0, c1, ... in that
/// order, at most one per use of the parameter; a single-use parameter has
/// one (its gradient).
static SmallVector<Value> gradientContributions(BlockArgument param,
                                                Value grad) {
  SmallVector<Value> rhs;
  unsigned uses = std::distance(param.use_begin(), param.use_end());
  Value v = grad;
  Attribute origin =
      grad.getDefiningOp() ? grad.getDefiningOp()->getAttr(kOriginAttr)
                           : Attribute();
  while (rhs.size() + 1 < uses) {
    auto add = llvm::dyn_cast_or_null<AddOp>(v.getDefiningOp());
    if (!add || !Partitioner::isBackwardOp(add) || !v.hasOneUse() ||
        add->getAttr(kOriginAttr) != origin)
      break;
    rhs.push_back(add.getRhs());
    v = add.getLhs();
  }
  SmallVector<Value> leaves{v};
  leaves.append(rhs.rbegin(), rhs.rend());
  return leaves;
}

/// A parameter with several gradient contributions: each becomes a
/// gradient part of the stage that computes it (gradParts), returned by
/// that stage's backward_weight on its own. zb-lower-pipeline sums every
/// part over the microbatches separately and adds the part totals in
/// contribution order, on one stage as on several, so the gradient is
/// bit-identical whatever the partition.
LogicalResult Partitioner::splitGradientParts(unsigned arg, Value grad) {
  SmallVector<Value> leaves =
      gradientContributions(body->getArgument(arg), grad);
  SmallVector<Operation *> chain;
  for (Value v = grad; v != leaves.front();
       v = llvm::cast<AddOp>(v.getDefiningOp()).getLhs())
    chain.push_back(v.getDefiningOp());
  for (auto [part, leaf] : llvm::enumerate(leaves)) {
    Operation *def = leaf.getDefiningOp();
    if (!def || !stageOf.count(def))
      return func.emitError("gradient of parameter '")
             << nameOfArg(arg).getValue()
             << "' has a contribution that belongs to no stage";
    int64_t s = stageOf.lookup(def);
    if (!llvm::is_contained(paramStages[arg], s))
      return def->emitOpError("contributes to the gradient of parameter '")
             << nameOfArg(arg).getValue() << "' from stage " << s
             << ", which does not use it";
    gradParts[{arg, s}].push_back({leaf, static_cast<int64_t>(part)});
  }
  // The joining adds are dead now (the original function is erased after
  // outlining; its result only needs some value of the right type).
  for (OpOperand &o : ret->getOpOperands())
    if (o.get() == grad)
      o.set(leaves.front());
  for (Operation *op : chain) {
    stageOf.erase(op);
    op->erase();
  }
  return success();
}

/// zb-autodiff sums the gradient contributions of a parameter's uses in a
/// chain of zb.add ops. For a parameter used by several stages, this cuts the
/// chain where it joins contributions of different stages and builds one
/// partial sum per stage instead (contributions in their original order), so
/// that every stage's backward_weight returns its own part. zb-lower-pipeline
/// sums the parts across ranks in increasing stage order.
LogicalResult Partitioner::splitTiedGradient(unsigned arg, Value grad) {
  SmallVector<Operation *> chain;
  SmallVector<Value> leaves;
  std::function<void(Value)> walk = [&](Value v) {
    auto add = llvm::dyn_cast_or_null<AddOp>(v.getDefiningOp());
    if (add && isBackwardOp(add) && v.hasOneUse() &&
        llvm::any_of(add->getOperands(), [&](Value o) {
          Operation *d = o.getDefiningOp();
          return !d || stageOf.lookup(d) != stageOf.lookup(add);
        })) {
      chain.push_back(add);
      walk(add.getLhs());
      walk(add.getRhs());
      return;
    }
    leaves.push_back(v);
  };
  walk(grad);
  OpBuilder b(ret);
  for (int64_t s : paramStages[arg]) {
    Value sum;
    for (Value leaf : leaves) {
      Operation *def = leaf.getDefiningOp();
      if (!def || !stageOf.count(def))
        return func.emitError("gradient of tied parameter '")
               << nameOfArg(arg).getValue()
               << "' has a contribution that belongs to no stage";
      if (!llvm::is_contained(paramStages[arg], stageOf.lookup(def)))
        return def->emitOpError("contributes to the gradient of tied "
                                "parameter '")
               << nameOfArg(arg).getValue() << "' from stage "
               << stageOf.lookup(def) << ", which does not use it";
      if (stageOf.lookup(def) != s)
        continue;
      if (!sum) {
        sum = leaf;
        continue;
      }
      auto add = AddOp::create(b, ret->getLoc(), sum.getType(), sum, leaf);
      add->setAttr(kOriginAttr, def->getAttr(kOriginAttr));
      add->setAttr(kPhaseAttr, PhaseAttr::get(b.getContext(), Phase::W));
      stageOf[add] = s;
      sum = add;
    }
    if (!sum) { // the stage uses the parameter without a gradient path
      auto ty = llvm::cast<RankedTensorType>(grad.getType());
      sum = ConstantOp::create(
          b, ret->getLoc(),
          DenseElementsAttr::get(ty, FloatAttr::get(ty.getElementType(), 0.0)));
    }
    tiedGrad[{arg, s}] = sum;
  }
  // The joining adds are dead now (the original function is erased after
  // outlining; its result only needs some value of the right type).
  for (OpOperand &o : ret->getOpOperands())
    if (o.get() == grad)
      o.set(tiedGrad[{arg, paramStages[arg].front()}]);
  for (Operation *op : chain) {
    stageOf.erase(op);
    op->erase();
  }
  return success();
}

/// Layer number of every parameter argument (-1: not in a layer), from the
/// digit runs of the zb.name attributes (see the pass description).
static llvm::DenseMap<unsigned, int64_t>
layersFromNames(func::FuncOp func, ArrayRef<BlockArgument> params) {
  struct Named {
    unsigned arg;
    SmallVector<int64_t> runs;
  };
  std::map<std::string, SmallVector<Named>> groups;
  for (BlockArgument a : params) {
    auto name = func.getArgAttrOfType<StringAttr>(a.getArgNumber(), "zb.name");
    if (!name)
      continue;
    std::string pattern;
    Named n{a.getArgNumber(), {}};
    StringRef str = name.getValue();
    for (size_t i = 0; i < str.size();) {
      if (!llvm::isDigit(str[i])) {
        pattern += str[i++];
        continue;
      }
      size_t j = i;
      while (j < str.size() && llvm::isDigit(str[j]))
        ++j;
      int64_t v = 0;
      (void)str.substr(i, j - i).getAsInteger(10, v);
      n.runs.push_back(v);
      pattern += '#';
      i = j;
    }
    if (!n.runs.empty())
      groups[pattern].push_back(n);
  }
  // The layer numbers are the set of values that a digit run takes in the
  // most groups (e.g. {0..L-1} in attn_w#, fc_w#, ln#_w# ...; ln#_w# also
  // has the run {1, 2}); in each group, the last run with that set.
  auto valuesOf = [](const SmallVector<Named> &members, size_t r) {
    std::set<int64_t> v;
    for (const Named &m : members)
      v.insert(m.runs[r]);
    return v;
  };
  std::map<std::set<int64_t>, int64_t> votes;
  for (auto &[pattern, members] : groups) {
    std::set<std::set<int64_t>> mine;
    for (size_t r = 0; r < members.front().runs.size(); ++r)
      mine.insert(valuesOf(members, r));
    for (const auto &v : mine)
      ++votes[v];
  }
  std::set<int64_t> best;
  int64_t bestVotes = 0;
  for (const auto &[v, n] : votes)
    if (n > bestVotes || (n == bestVotes && v.size() > best.size())) {
      best = v;
      bestVotes = n;
    }
  llvm::DenseMap<unsigned, int64_t> layer;
  for (auto &[pattern, members] : groups) {
    int64_t pick = -1;
    for (size_t r = 0; r < members.front().runs.size(); ++r)
      if (valuesOf(members, r) == best)
        pick = r;
    if (pick < 0)
      continue;
    for (const Named &m : members)
      layer[m.arg] = m.runs[pick];
  }
  return layer;
}

/// balance=layers: the compute-op index where each stage starts (and n).
FailureOr<SmallVector<int64_t>>
Partitioner::layerCuts(ArrayRef<Operation *> compute) {
  SmallVector<BlockArgument> params;
  for (BlockArgument a : body->getArguments())
    if (isParam(a))
      params.push_back(a);
  llvm::DenseMap<unsigned, int64_t> paramLayer = layersFromNames(func, params);
  // Layer of each compute op: zb.layer, else its parameters' layer, else the
  // layer of the op before it (-1 before the first layer).
  SmallVector<int64_t> layerOf;
  int64_t current = -1;
  for (Operation *op : compute) {
    int64_t l = -1;
    if (auto attr = op->getAttrOfType<IntegerAttr>("zb.layer")) {
      l = attr.getInt();
    } else {
      for (Value v : op->getOperands())
        if (auto a = llvm::dyn_cast<BlockArgument>(v))
          if (paramLayer.count(a.getArgNumber()))
            l = std::max(l, paramLayer.lookup(a.getArgNumber()));
    }
    if (l >= 0) {
      if (l < current)
        return op->emitOpError("belongs to layer ")
               << l << " but follows an op of layer " << current
               << ": balance=layers needs the layers in program order";
      current = l;
    }
    layerOf.push_back(current);
  }
  // Ops after the last layer's ops (head, loss) carry its number: they
  // land in the last stage.
  SmallVector<int64_t> layers;
  for (int64_t l : layerOf)
    if (l >= 0 && !llvm::is_contained(layers, l))
      layers.push_back(l);
  int64_t numLayers = layers.size();
  if (numLayers < numStages)
    return func.emitError("balance=layers: found ")
           << numLayers << " layers (zb.layer attributes or numbered "
           << "parameter names), fewer than the " << numStages << " stages";
  int64_t n = compute.size();
  SmallVector<int64_t> cuts{0};
  for (int64_t k = 1; k < numStages; ++k) {
    int64_t firstLayer = layers[k * numLayers / numStages];
    int64_t at = 0;
    while (at < n && layerOf[at] != firstLayer)
      ++at;
    // Layer-free ops right before a layer's first op (e.g. the residual of
    // the previous block) stay with the previous layer.
    cuts.push_back(at);
  }
  cuts.push_back(n);
  return cuts;
}

LogicalResult Partitioner::run() {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitError("expects a single-block function");
  body = &func.getBody().front();
  ret = body->getTerminator();
  SmallVector<Operation *> forward, backward;
  for (Operation &op : body->without_terminator())
    (isBackwardOp(&op) ? backward : forward).push_back(&op);
  if (backward.empty())
    return func.emitError("has no backward ops: run zb-autodiff first");
  for (Operation *op : backward)
    if (!op->hasAttr(kPhaseAttr))
      return op->emitOpError("has no zb.phase: run zb-split-backward first");
  if (failed(assignStages(forward, backward)))
    return failure();
  findParamStages();
  if (failed(readGradients()))
    return failure();
  splitByPass();
  if (failed(findCrossingValues()))
    return failure();
  for (int64_t s = 0; s < numStages; ++s)
    if (failed(outlineStage(s)))
      return failure();
  setPipelineAttr();
  func.erase();
  return success();
}

/// Stages using each parameter. A parameter used by several stages (tied
/// weights, e.g. GPT-2's token embedding and LM head) gets one copy per
/// stage, as in Megatron-LM: every copy starts from the same initial value
/// and receives the same summed gradient (see splitTiedGradient and
/// zb-lower-pipeline), so the copies stay bit-identical.
void Partitioner::findParamStages() {
  paramStages.assign(body->getNumArguments(), {});
  for (BlockArgument arg : body->getArguments()) {
    if (!isParam(arg))
      continue;
    SmallVector<int64_t> &stages = paramStages[arg.getArgNumber()];
    for (Operation *user : arg.getUsers())
      if (!llvm::is_contained(stages, stageOf.lookup(user)))
        stages.push_back(stageOf.lookup(user));
    llvm::sort(stages);
    if (stages.empty())
      stages.push_back(0);
  }
}

/// ret operands: loss, then one gradient per parameter in argument order;
/// a parameter with several contributions is split into gradient parts, one
/// per contribution; another tied one into per-stage sums.
LogicalResult Partitioner::readGradients() {
  for (unsigned i = 1; i < ret->getNumOperands(); ++i) {
    auto idx = func.getResultAttrOfType<IntegerAttr>(i, "zb.grad_of");
    if (!idx)
      return func.emitError("result #") << i << " has no zb.grad_of";
    gradOfParam[idx.getInt()] = ret->getOperand(i);
  }
  for (unsigned i = 0; i < body->getNumArguments(); ++i) {
    if (!isParam(body->getArgument(i)) || !gradOfParam.count(i))
      continue;
    if (gradientContributions(body->getArgument(i), gradOfParam[i]).size() >
        1) {
      if (failed(splitGradientParts(i, gradOfParam[i])))
        return failure();
    } else if (paramStages[i].size() > 1 &&
               failed(splitTiedGradient(i, gradOfParam[i]))) {
      return failure();
    }
  }
  return success();
}

namespace {
struct ZBPartitionStagesPass
    : public zb::impl::ZBPartitionStagesBase<ZBPartitionStagesPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-partition-stages: no function named '")
          << function << "'";
      return signalPassFailure();
    }
    if (numStages < 1 || virtualStages < 1) {
      module.emitError("zb-partition-stages: num-stages and virtual-stages "
                       "must be >= 1, got ")
          << static_cast<int64_t>(numStages) << " and "
          << static_cast<int64_t>(virtualStages);
      return signalPassFailure();
    }
    llvm::Expected<Target> t = parseTarget(target);
    if (!t) {
      llvm::consumeError(t.takeError());
      module.emitError("zb-partition-stages: unknown target '")
          << target << "' (expected cpu, h100, cuda or cuda-emu)";
      return signalPassFailure();
    }
    if (balance != "cost" && balance != "layers") {
      module.emitError("zb-partition-stages: unknown balance '")
          << balance << "' (expected cost or layers)";
      return signalPassFailure();
    }
    Partitioner p(module, func, numStages, virtualStages, lookupCostTarget(*t),
                  balance == "layers");
    if (failed(p.run()))
      signalPassFailure();
  }
};
} // namespace
