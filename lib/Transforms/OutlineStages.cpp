//===- OutlineStages.cpp - zb-partition-stages: stage functions ----------===//
//
// The second half of zb-partition-stages (PartitionStages.cpp decides the
// stages): splits each stage's ops by pass (F, B, W), finds the values that
// cross stage boundaries, outlines every stage into forward /
// backward_input / backward_weight functions whose signatures make the saved
// tensors (M_B) and the B-to-W residuals (M_W) explicit, and records the
// module's #zb.pipeline with the cost model's T_F/T_B/T_W/T_comm.
//
//===----------------------------------------------------------------------===//
#include "Partitioner.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace zb;
using namespace zb::partition;

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
    if (p.part >= 0)
      setter(i, "zb.part", IntegerAttr::get(i64, p.part));
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
/// stage holds out (a tied parameter's per-stage sum; for a parameter with
/// several contributions, each of the stage's contributions, zb.part).
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
    auto parts = gradParts.find({i, s});
    if (parts != gradParts.end()) {
      for (auto [g, part] : parts->second) {
        if (!inW.contains(g.getDefiningOp()))
          return func.emitError("gradient of parameter '")
                 << nameOfArg(i).getValue() << "' (part " << part
                 << ") is not computed by a W op of stage " << s;
        ports.wOut.push_back({g, "param_grad", i, part});
      }
      continue;
    }
    // A stage using a parameter with several contributions, none of them
    // its own, returns no part of its gradient.
    if (llvm::any_of(paramStages[i], [&](int64_t t) {
          return gradParts.count({i, t});
        }))
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
