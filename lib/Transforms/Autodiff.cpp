//===- Autodiff.cpp - zb-autodiff: whole-graph reverse mode ---------------===//
//
// Reverse-mode differentiation of a forward-and-loss function. Gradients of
// each operand are built separately by the op's GradientOpInterface rule;
// every op the pass creates carries `zb.origin`, the `zb.id` of the forward op
// it belongs to (the op whose rule built it, or the producer of the value
// whose gradient contributions it sums).
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zb {
#define GEN_PASS_DEF_ZBAUTODIFF
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

/// Tags every op inserted through the builder with `zb.origin = origin`.
struct OriginListener : public OpBuilder::Listener {
  int64_t origin = -1;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (origin >= 0 && !op->hasAttr(kOriginAttr))
      op->setAttr(
          kOriginAttr,
          IntegerAttr::get(IntegerType::get(op->getContext(), 64), origin));
  }
};

/// Reverse-mode differentiation of one function, in three phases: the
/// forward ops get ids and the values depending on a parameter are marked
/// active (markForward), the gradient rules run in reverse order from the
/// seed d loss / d loss = 1 (backpropagate), and the parameter gradients
/// become extra results tagged zb.grad_of (returnParamGradients).
class Differentiator {
public:
  explicit Differentiator(func::FuncOp func)
      : func(func), ctx(func.getContext()), i64(IntegerType::get(ctx, 64)),
        b(ctx, &listener) {}

  LogicalResult run() {
    if (failed(checkInput()) || failed(markForward()) ||
        failed(backpropagate()))
      return failure();
    returnParamGradients();
    return success();
  }

private:
  func::FuncOp func;
  MLIRContext *ctx;
  IntegerType i64;
  OriginListener listener;
  OpBuilder b;
  Block *body = nullptr;
  func::ReturnOp ret;
  Value loss;
  Operation *lossDef = nullptr;
  SmallVector<Operation *> forwardOps;
  llvm::DenseSet<Value> active;
  /// Values that depend on the batch (a non-parameter argument): their
  /// gradients are on the critical path (B). A value computed from
  /// parameters and constants alone (Gemma's `1 + weight`) has a gradient
  /// that only its parameters' gradients read: part of W.
  llvm::DenseSet<Value> dataDependent;
  SmallVector<BlockArgument> params;
  /// Gradient contributions per value, summed when first needed.
  llvm::DenseMap<Value, SmallVector<Value>> contributions;

  static int64_t idOf(Operation *op) {
    return llvm::cast<IntegerAttr>(op->getAttr(kIdAttr)).getInt();
  }
  /// The sum of v's gradient contributions (built once, tagged `origin`),
  /// or null when v does not reach the loss.
  Value gradientOf(Value v, int64_t origin) {
    auto it = contributions.find(v);
    if (it == contributions.end() || it->second.empty())
      return Value();
    listener.origin = origin;
    Value sum = it->second.front();
    for (Value c : llvm::drop_begin(it->second))
      sum = AddOp::create(b, v.getLoc(), sum.getType(), sum, c);
    it->second.assign({sum});
    return sum;
  }

  LogicalResult checkInput();
  LogicalResult markForward();
  LogicalResult backpropagate();
  LogicalResult backpropagateOp(Operation *op);
  void returnParamGradients();
};

/// A single-block function returning one 0-d float loss, not yet
/// differentiated, computed by an op.
LogicalResult Differentiator::checkInput() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("zb-autodiff expects a single-block function");
  body = &func.getBody().front();
  ret = llvm::dyn_cast<func::ReturnOp>(body->getTerminator());
  if (!ret || ret.getNumOperands() != 1)
    return func.emitError("zb-autodiff expects the function to return "
                          "exactly one value, the scalar loss");
  loss = ret.getOperand(0);
  auto lossTy = llvm::dyn_cast<RankedTensorType>(loss.getType());
  if (!lossTy || lossTy.getRank() != 0 ||
      !llvm::isa<FloatType>(lossTy.getElementType()))
    return func.emitError("the loss must be a 0-d float tensor, got ")
           << loss.getType();
  for (Operation &op : body->without_terminator())
    if (op.hasAttr(kOriginAttr))
      return op.emitError("zb-autodiff: function is already differentiated");
  return success();
}

/// Forward ops get ids; activity: a value is active if it depends on a
/// parameter.
LogicalResult Differentiator::markForward() {
  for (BlockArgument arg : body->getArguments())
    if (func.getArgAttr(arg.getArgNumber(), kParamAttr)) {
      params.push_back(arg);
      active.insert(arg);
    } else {
      dataDependent.insert(arg);
    }
  if (params.empty())
    return func.emitError("no argument is marked zb.param: nothing to "
                          "differentiate");
  int64_t nextId = 0;
  for (Operation &op : body->without_terminator()) {
    op.setAttr(kIdAttr, IntegerAttr::get(i64, nextId++));
    forwardOps.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        active.insert(r);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return dataDependent.contains(v); }))
      for (Value r : op.getResults())
        dataDependent.insert(r);
  }
  if (!active.contains(loss))
    return func.emitError("the loss does not depend on any parameter");
  return success();
}

LogicalResult Differentiator::backpropagate() {
  b.setInsertionPoint(ret);
  // Seed: d loss / d loss = 1.
  lossDef = loss.getDefiningOp();
  if (!lossDef)
    return func.emitError("the loss must be computed by an op");
  listener.origin = idOf(lossDef);
  auto lossTy = llvm::cast<RankedTensorType>(loss.getType());
  auto one = DenseElementsAttr::get(
      lossTy, FloatAttr::get(lossTy.getElementType(), 1.0));
  contributions[loss].push_back(ConstantOp::create(b, loss.getLoc(), one));
  for (Operation *op : llvm::reverse(forwardOps))
    if (failed(backpropagateOp(op)))
      return failure();
  return success();
}

/// Runs op's gradient rule for every active operand, given the gradients
/// of its results.
LogicalResult Differentiator::backpropagateOp(Operation *op) {
  if (op->getNumResults() == 0 || !llvm::any_of(op->getResults(), [&](Value r) {
        return active.contains(r);
      }))
    return success();
  int64_t id = idOf(op);
  SmallVector<Value> resultGrads;
  for (Value r : op->getResults())
    resultGrads.push_back(gradientOf(r, id));
  if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
    return success(); // does not reach the loss
  // A multi-result rule serves ops whose results are optional too
  // (zb.cross_entropy with or without its lse).
  auto multiRule = llvm::dyn_cast<MultiResultGradientOpInterface>(op);
  auto rule = multiRule ? GradientOpInterface()
                        : llvm::dyn_cast<GradientOpInterface>(op);
  if (!rule && !multiRule)
    return op->emitOpError("has no gradient rule (")
           << (op->getNumResults() == 1 ? "GradientOpInterface"
                                        : "MultiResultGradientOpInterface")
           << ")";
  for (OpOperand &operand : op->getOpOperands()) {
    if (!active.contains(operand.get()))
      continue;
    listener.origin = id;
    unsigned idx = operand.getOperandNumber();
    Value d = rule ? rule.buildOperandGradient(b, idx, resultGrads[0])
                   : multiRule.buildOperandGradient(b, idx, resultGrads);
    if (!d)
      continue;
    if (d.getType() != operand.get().getType())
      return op->emitOpError("gradient rule for operand #")
             << operand.getOperandNumber() << " built type " << d.getType()
             << ", expected " << operand.get().getType();
    // Gradients of activations (values that depend on the batch) form the
    // B chain (zb-split-backward): mark the ops producing them.
    if (!llvm::is_contained(params, operand.get()) &&
        dataDependent.contains(operand.get()))
      if (Operation *def = d.getDefiningOp())
        def->setAttr(kActGradAttr, UnitAttr::get(ctx));
    contributions[operand.get()].push_back(d);
  }
  return success();
}

/// Parameter gradients become extra results (zero for a parameter that
/// does not influence the loss), each tagged zb.grad_of = argument number.
void Differentiator::returnParamGradients() {
  SmallVector<Value> results{loss};
  for (BlockArgument p : params) {
    Value g;
    auto it = contributions.find(p);
    if (it != contributions.end() && !it->second.empty()) {
      Operation *first = it->second.front().getDefiningOp();
      g = gradientOf(
          p, llvm::cast<IntegerAttr>(first->getAttr(kOriginAttr)).getInt());
    } else {
      listener.origin = idOf(lossDef);
      auto ty = llvm::cast<RankedTensorType>(p.getType());
      g = ConstantOp::create(
          b, p.getLoc(),
          DenseElementsAttr::get(ty, FloatAttr::get(ty.getElementType(), 0.0)));
    }
    results.push_back(g);
  }
  ret->setOperands(results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
  for (auto [i, p] : llvm::enumerate(params))
    func.setResultAttr(i + 1, "zb.grad_of",
                       IntegerAttr::get(i64, p.getArgNumber()));
}

struct ZBAutodiffPass : public zb::impl::ZBAutodiffBase<ZBAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-autodiff: no function named '") << function << "'";
      return signalPassFailure();
    }
    if (failed(Differentiator(func).run()))
      signalPassFailure();
  }
};
} // namespace
