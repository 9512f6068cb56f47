//===- PartitionStages.cpp - zb-partition-stages --------------------------===//
//
// Cuts the differentiated model into contiguous pipeline stages that balance
// the cost model (dynamic programming: minimise the slowest stage), then
// outlines every stage into forward / backward_input / backward_weight
// functions whose signatures make the saved tensors (M_B) and the B-to-W
// residuals (M_W) explicit.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/CostModel.h"
#include "zb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <map>
#include <set>

namespace zb {
#define GEN_PASS_DEF_ZBPARTITIONSTAGES
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

/// One argument or result of an outlined stage function and its role.
struct Port {
  Value value;
  StringRef role; // param | batch | act | saved | grad | residual | loss |
                  // param_grad
  int64_t key;    // zb.value id (act/saved/grad/residual) or arg index
};

struct Partitioner {
  Partitioner(ModuleOp module, func::FuncOp func, int64_t numRanks,
              int64_t numChunks, CostTarget target, bool byLayers)
      : module(module), func(func), numStages(numRanks * numChunks),
        numRanks(numRanks), numChunks(numChunks), target(std::move(target)),
        byLayers(byLayers) {}

  ModuleOp module;
  func::FuncOp func;
  int64_t numStages; // P * V
  int64_t numRanks, numChunks;
  CostTarget target;
  bool byLayers;

  Block *body = nullptr;
  Operation *ret = nullptr;
  llvm::DenseMap<Operation *, int64_t> stageOf; // non-constant ops
  llvm::DenseMap<Value, int64_t> valueIds;
  std::vector<SmallVector<int64_t>> paramStages; // by argument number
  /// Per-stage gradient of a tied parameter: (argument number, stage) ->
  /// the sum of that stage's contributions.
  llvm::DenseMap<std::pair<unsigned, int64_t>, Value> tiedGrad;
  /// The returned gradient of each parameter, by argument number.
  llvm::DenseMap<unsigned, Value> gradOfParam;
  /// Stage-local op lists in program order: forward, B and W ops.
  std::vector<SmallVector<Operation *>> F, B, W;
  /// Values entering each stage: activations from the previous stage
  /// (computed there or relayed) and gradients from the next one.
  std::vector<llvm::SetVector<Value>> actIn, gradIn;
  /// #zb.stage of each outlined stage, in stage order.
  SmallVector<Attribute> stageAttrs;

  /// The ports of one stage's three functions and the tensors they keep.
  struct StagePorts {
    SmallVector<Port> fIn, fOut, bIn, bOut, wIn, wOut;
    llvm::SetVector<Value> saved, residuals;
  };

  bool isParam(Value v) {
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    return arg && func.getArgAttr(arg.getArgNumber(), kParamAttr);
  }
  bool isBatch(Value v) { return llvm::isa<BlockArgument>(v) && !isParam(v); }
  static bool isConstant(Value v) {
    return v.getDefiningOp() && llvm::isa<ConstantOp>(v.getDefiningOp());
  }
  static bool isBackwardOp(Operation *op) {
    return op && op->hasAttr(kOriginAttr);
  }
  int64_t stageOfValue(Value v) {
    Operation *def = v.getDefiningOp();
    auto it = def ? stageOf.find(def) : stageOf.end();
    return it == stageOf.end() ? -1 : it->second;
  }
  int64_t idFor(Value v) {
    auto [it, inserted] = valueIds.try_emplace(v, valueIds.size());
    return it->second;
  }
  StringAttr nameOfArg(unsigned i) {
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "zb.name"))
      return n;
    return StringAttr::get(func.getContext(), "arg" + std::to_string(i));
  }

  LogicalResult run();
  void findParamStages();
  LogicalResult readGradients();
  void splitByPass();
  LogicalResult findCrossingValues();
  void collectArgs(ArrayRef<Operation *> ops, SmallVector<Port> &out);
  LogicalResult forwardPorts(int64_t s, StagePorts &ports);
  LogicalResult backwardInputPorts(int64_t s, StagePorts &ports);
  LogicalResult backwardWeightPorts(int64_t s, StagePorts &ports);
  LogicalResult outlineStage(int64_t s);
  void setPipelineAttr();
  LogicalResult splitTiedGradient(unsigned arg, Value grad);
  FailureOr<SmallVector<int64_t>> layerCuts(ArrayRef<Operation *> compute);
  LogicalResult followOrigins(ArrayRef<Operation *> compute,
                              ArrayRef<Operation *> backward);
  LogicalResult assignStages(ArrayRef<Operation *> forward,
                             ArrayRef<Operation *> backward);
  func::FuncOp outline(StringRef name, int64_t stage, StringRef kind,
                       ArrayRef<Operation *> ops, ArrayRef<Port> inputs,
                       ArrayRef<Port> outputs);
};

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
  return followOrigins(compute, backward);
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

func::FuncOp Partitioner::outline(StringRef name, int64_t stage, StringRef kind,
                                  ArrayRef<Operation *> ops,
                                  ArrayRef<Port> inputs,
                                  ArrayRef<Port> outputs) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPoint(func);
  SmallVector<Type> argTypes, resultTypes;
  for (const Port &p : inputs)
    argTypes.push_back(p.value.getType());
  for (const Port &p : outputs)
    resultTypes.push_back(p.value.getType());
  auto fn = func::FuncOp::create(b, func.getLoc(), name,
                                 b.getFunctionType(argTypes, resultTypes));
  auto i64 = b.getI64Type();
  auto setPortAttrs = [&](auto setter, unsigned i, const Port &p) {
    setter(i, kRoleAttr, RoleAttr::get(ctx, *symbolizeRole(p.role)));
    bool isIndex =
        p.role == "param" || p.role == "batch" || p.role == "param_grad";
    if (p.role != "loss")
      setter(i, isIndex ? "zb.index" : "zb.value",
             IntegerAttr::get(i64, p.key));
  };
  for (auto [i, p] : llvm::enumerate(inputs))
    setPortAttrs(
        [&](unsigned k, StringRef n, Attribute a) { fn.setArgAttr(k, n, a); },
        i, p);
  for (auto [i, p] : llvm::enumerate(outputs))
    setPortAttrs([&](unsigned k, StringRef n,
                     Attribute a) { fn.setResultAttr(k, n, a); },
                 i, p);
  fn->setAttr(kStageAttr, IntegerAttr::get(i64, stage));
  fn->setAttr(kFuncKindAttr,
              StageFuncKindAttr::get(ctx, *symbolizeStageFuncKind(kind)));

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [i, p] : llvm::enumerate(inputs))
    map.map(p.value, entry->getArgument(i));
  auto materialize = [&](Value v) {
    if (!map.contains(v) && isConstant(v))
      map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  };
  for (Operation *op : ops) {
    for (Value v : op->getOperands())
      materialize(v);
    b.clone(*op, map);
  }
  SmallVector<Value> results;
  for (const Port &p : outputs) {
    materialize(p.value);
    results.push_back(map.lookup(p.value));
  }
  func::ReturnOp::create(b, func.getLoc(), results);
  return fn;
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
/// a tied parameter's gradient is split into per-stage sums.
LogicalResult Partitioner::readGradients() {
  for (unsigned i = 1; i < ret->getNumOperands(); ++i) {
    auto idx = func.getResultAttrOfType<IntegerAttr>(i, "zb.grad_of");
    if (!idx)
      return func.emitError("result #") << i << " has no zb.grad_of";
    gradOfParam[idx.getInt()] = ret->getOperand(i);
  }
  for (unsigned i = 0; i < body->getNumArguments(); ++i)
    if (paramStages[i].size() > 1 &&
        failed(splitTiedGradient(i, gradOfParam[i])))
      return failure();
  return success();
}

void Partitioner::splitByPass() {
  F.assign(numStages, {});
  B.assign(numStages, {});
  W.assign(numStages, {});
  for (Operation &op : body->without_terminator()) {
    if (llvm::isa<ConstantOp>(op) && !isBackwardOp(&op))
      continue; // cloned into every function that uses it
    int64_t s = stageOf.lookup(&op);
    if (!isBackwardOp(&op))
      F[s].push_back(&op);
    else if (llvm::cast<PhaseAttr>(op.getAttr(kPhaseAttr)).getValue() ==
             Phase::W)
      W[s].push_back(&op);
    else
      B[s].push_back(&op);
  }
}

/// Values crossing stage boundaries. A forward value defined in stage t and
/// used up to stage u enters every stage t+1..u (relayed through the stages
/// in between); a gradient defined in stage u and used down to stage t
/// enters every stage t..u-1 from the next one.
LogicalResult Partitioner::findCrossingValues() {
  actIn.assign(numStages, {});
  gradIn.assign(numStages, {});
  for (Operation &op : body->without_terminator()) {
    if (isConstant(op.getNumResults() ? op.getResult(0) : Value()))
      continue;
    int64_t t = stageOf.lookup(&op);
    for (Value v : op.getResults()) {
      int64_t lo = t, hi = t;
      for (Operation *user : v.getUsers()) {
        if (user == ret)
          continue;
        int64_t u = stageOf.lookup(user);
        lo = std::min(lo, u);
        hi = std::max(hi, u);
      }
      if (!isBackwardOp(&op)) {
        if (lo < t)
          return op.emitOpError("result is used by an earlier stage");
        for (int64_t k = t + 1; k <= hi; ++k)
          actIn[k].insert(v);
      } else {
        if (hi > t)
          return op.emitOpError("gradient is used by a later stage");
        for (int64_t k = lo; k < t; ++k)
          gradIn[k].insert(v);
      }
    }
  }
  return success();
}

/// The parameters, then the batch inputs, that `ops` use (argument order).
void Partitioner::collectArgs(ArrayRef<Operation *> ops,
                              SmallVector<Port> &out) {
  llvm::SetVector<unsigned> params, batch;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      if (auto a = llvm::dyn_cast<BlockArgument>(v))
        (isParam(v) ? params : batch).insert(a.getArgNumber());
  SmallVector<unsigned> p(params.begin(), params.end()),
      q(batch.begin(), batch.end());
  llvm::sort(p);
  llvm::sort(q);
  for (unsigned i : p)
    out.push_back({body->getArgument(i), "param", i});
  for (unsigned i : q)
    out.push_back({body->getArgument(i), "batch", i});
}

static llvm::DenseSet<Operation *> definedIn(ArrayRef<Operation *> ops) {
  return llvm::DenseSet<Operation *>(ops.begin(), ops.end());
}

/// Forward: parameters, batch inputs and activations in; the loss (last
/// stage) or the next stage's activations out, and the saved tensors (the
/// forward values this stage's backward ops need).
LogicalResult Partitioner::forwardPorts(int64_t s, StagePorts &ports) {
  auto inF = definedIn(F[s]);
  collectArgs(F[s], ports.fIn);
  for (Value v : actIn[s])
    ports.fIn.push_back({v, "act", idFor(v)});
  if (s == numStages - 1) {
    Value loss = ret->getOperand(0);
    if (!loss.getDefiningOp() || !inF.contains(loss.getDefiningOp()))
      return func.emitError("the loss is not computed by the last stage");
    ports.fOut.push_back({loss, "loss", 0});
  } else {
    // Everything the next stage receives: computed here or relayed.
    for (Value v : actIn[s + 1])
      ports.fOut.push_back({v, "act", idFor(v)});
  }
  for (auto *list : {&B[s], &W[s]})
    for (Operation *op : *list)
      for (Value v : op->getOperands()) {
        if (isBackwardOp(v.getDefiningOp()) || isConstant(v) ||
            llvm::isa<BlockArgument>(v))
          continue;
        if (!inF.contains(v.getDefiningOp()) && !actIn[s].contains(v))
          return op->emitOpError("stage ")
                 << s << " backward op needs a forward value that stage " << s
                 << " neither computes nor receives";
        ports.saved.insert(v);
      }
  for (Value v : ports.saved)
    ports.fOut.push_back({v, "saved", idFor(v)});
  return success();
}

/// B: saved tensors and the gradients from stage s+1 in; the gradients for
/// stage s-1 and the residuals (B values the W ops need) out.
LogicalResult Partitioner::backwardInputPorts(int64_t s, StagePorts &ports) {
  auto inB = definedIn(B[s]), inW = definedIn(W[s]);
  SmallVector<Port> &bIn = ports.bIn;
  collectArgs(B[s], bIn);
  for (Operation *op : B[s])
    for (Value v : op->getOperands())
      if (ports.saved.contains(v) &&
          llvm::none_of(bIn, [&](const Port &p) { return p.value == v; }))
        bIn.push_back({v, "saved", idFor(v)});
  // Gradients arriving from stage s+1 (used here or relayed further).
  for (Value v : gradIn[s])
    bIn.push_back({v, "grad", idFor(v)});
  if (s > 0)
    for (Value v : gradIn[s - 1]) {
      if (!inB.contains(v.getDefiningOp()) && !gradIn[s].contains(v))
        return v.getDefiningOp()->emitOpError("gradient needed by stage ")
               << s - 1 << " is not produced by the B pass of stage " << s;
      ports.bOut.push_back({v, "grad", idFor(v)});
    }
  for (Operation *op : W[s])
    for (Value v : op->getOperands()) {
      if (!isBackwardOp(v.getDefiningOp()) || isConstant(v) ||
          inW.contains(v.getDefiningOp()))
        continue;
      if (!inB.contains(v.getDefiningOp()) && !gradIn[s].contains(v))
        return op->emitOpError("weight-gradient op of stage ")
               << s << " needs a value its B pass does not provide";
      ports.residuals.insert(v);
    }
  for (Value v : ports.residuals)
    ports.bOut.push_back({v, "residual", idFor(v)});
  return success();
}

/// W: saved tensors and residuals in; the gradient of every parameter the
/// stage holds out (a tied parameter's per-stage sum).
LogicalResult Partitioner::backwardWeightPorts(int64_t s, StagePorts &ports) {
  auto inW = definedIn(W[s]);
  collectArgs(W[s], ports.wIn);
  for (Value v : ports.saved)
    if (llvm::any_of(W[s], [&](Operation *op) {
          return llvm::is_contained(op->getOperands(), v);
        }))
      ports.wIn.push_back({v, "saved", idFor(v)});
  for (Value v : ports.residuals)
    ports.wIn.push_back({v, "residual", idFor(v)});
  for (unsigned i = 0; i < body->getNumArguments(); ++i) {
    if (!isParam(body->getArgument(i)) ||
        !llvm::is_contained(paramStages[i], s))
      continue;
    Value g = paramStages[i].size() > 1 ? tiedGrad.lookup({i, s})
                                        : gradOfParam.lookup(i);
    if (!g || (!isConstant(g) && !inW.contains(g.getDefiningOp())))
      return func.emitError("gradient of parameter '")
             << nameOfArg(i).getValue()
             << "' is not computed by a W op of stage " << s;
    ports.wOut.push_back({g, "param_grad", i});
  }
  return success();
}

/// Outlines stage s's forward, backward_input and backward_weight functions
/// and records its #zb.stage: T_F/T_B/T_W and T_comm (ms per microbatch,
/// from the cost model), M_B (saved bytes) and M_W (residual bytes).
LogicalResult Partitioner::outlineStage(int64_t s) {
  StagePorts ports;
  if (failed(forwardPorts(s, ports)) || failed(backwardInputPorts(s, ports)) ||
      failed(backwardWeightPorts(s, ports)))
    return failure();
  std::string prefix = "stage" + std::to_string(s);
  func::FuncOp fwd =
      outline(prefix + "_forward", s, "forward", F[s], ports.fIn, ports.fOut);
  func::FuncOp bwdIn = outline(prefix + "_backward_input", s, "backward_input",
                               B[s], ports.bIn, ports.bOut);
  func::FuncOp bwdW = outline(prefix + "_backward_weight", s, "backward_weight",
                              W[s], ports.wIn, ports.wOut);

  auto timeOf = [&](ArrayRef<Operation *> ops) {
    double t = 0;
    for (Operation *op : ops)
      t += opTimeMs(op, target);
    return t;
  };
  auto bytesOf = [&](const llvm::SetVector<Value> &values) {
    int64_t bytes = 0;
    for (Value v : values)
      bytes += static_cast<int64_t>(targetBytes(v.getType(), &target));
    return bytes;
  };
  double commBytes = 0;
  for (const Port &p : ports.fOut)
    if (p.role == "act")
      commBytes += targetBytes(p.value.getType(), &target);
  for (const Port &p : ports.fIn)
    if (p.role == "act" && s == numStages - 1)
      commBytes += targetBytes(p.value.getType(), &target);
  MLIRContext *ctx = module.getContext();
  llvm::APFloat unmeasured(-1.0);
  stageAttrs.push_back(StageAttr::get(
      ctx, s, FlatSymbolRefAttr::get(fwd.getSymNameAttr()),
      FlatSymbolRefAttr::get(bwdIn.getSymNameAttr()),
      FlatSymbolRefAttr::get(bwdW.getSymNameAttr()),
      llvm::APFloat(timeOf(F[s])), llvm::APFloat(timeOf(B[s])),
      llvm::APFloat(timeOf(W[s])), llvm::APFloat(commTimeMs(commBytes, target)),
      bytesOf(ports.saved), bytesOf(ports.residuals), unmeasured, unmeasured,
      unmeasured,
      /*profiled=*/false));
  return success();
}

/// The module's #zb.pipeline: stages, parameters and batch inputs with the
/// stages that use them.
void Partitioner::setPipelineAttr() {
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  SmallVector<Attribute> params, inputs;
  for (unsigned i = 0; i < body->getNumArguments(); ++i) {
    auto value = [&](ArrayRef<int64_t> stages) {
      return ModelValueAttr::get(ctx, nameOfArg(i).getValue(), i,
                                 body->getArgument(i).getType(),
                                 b.getDenseI64ArrayAttr(stages));
    };
    if (isParam(body->getArgument(i))) {
      params.push_back(value(paramStages[i]));
    } else {
      SmallVector<int64_t> stages;
      for (Operation *user : body->getArgument(i).getUsers())
        if (!llvm::is_contained(stages, stageOf.lookup(user)))
          stages.push_back(stageOf.lookup(user));
      llvm::sort(stages);
      inputs.push_back(value(stages));
    }
  }
  module->setAttr(kPipelineAttr,
                  PipelineAttr::get(ctx, numStages, numRanks, numChunks,
                                    target.name, b.getArrayAttr(stageAttrs),
                                    b.getArrayAttr(params),
                                    b.getArrayAttr(inputs)));
}

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
    auto t = lookupCostTarget(target);
    if (!t) {
      module.emitError("zb-partition-stages: unknown target '")
          << target << "' (expected cpu or h100)";
      return signalPassFailure();
    }
    if (balance != "cost" && balance != "layers") {
      module.emitError("zb-partition-stages: unknown balance '")
          << balance << "' (expected cost or layers)";
      return signalPassFailure();
    }
    Partitioner p(module, func, numStages, virtualStages, *t,
                  balance == "layers");
    if (failed(p.run()))
      signalPassFailure();
  }
};
} // namespace
