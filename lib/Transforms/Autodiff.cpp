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
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    if (origin >= 0 && !op->hasAttr(kOriginAttr))
      op->setAttr(kOriginAttr,
                  IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                   origin));
  }
};

struct ZBAutodiffPass : public zb::impl::ZBAutodiffBase<ZBAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-autodiff: no function named '") << function << "'";
      return signalPassFailure();
    }
    if (failed(differentiate(func)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError("zb-autodiff expects a single-block function");
    Block &body = func.getBody().front();
    auto ret = llvm::dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret || ret.getNumOperands() != 1)
      return func.emitError("zb-autodiff expects the function to return "
                            "exactly one value, the scalar loss");
    Value loss = ret.getOperand(0);
    auto lossTy = llvm::dyn_cast<RankedTensorType>(loss.getType());
    if (!lossTy || lossTy.getRank() != 0 ||
        !llvm::isa<FloatType>(lossTy.getElementType()))
      return func.emitError("the loss must be a 0-d float tensor, got ")
             << loss.getType();
    for (Operation &op : body.without_terminator())
      if (op.hasAttr(kOriginAttr))
        return op.emitError("zb-autodiff: function is already differentiated");

    // Forward ops get ids; activity: a value is active if it depends on a
    // parameter.
    MLIRContext *ctx = func.getContext();
    auto i64 = IntegerType::get(ctx, 64);
    SmallVector<Operation *> forwardOps;
    llvm::DenseSet<Value> active;
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : body.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr)) {
        params.push_back(arg);
        active.insert(arg);
      }
    if (params.empty())
      return func.emitError("no argument is marked zb.param: nothing to "
                            "differentiate");
    int64_t nextId = 0;
    for (Operation &op : body.without_terminator()) {
      op.setAttr(kIdAttr, IntegerAttr::get(i64, nextId++));
      forwardOps.push_back(&op);
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
        for (Value r : op.getResults())
          active.insert(r);
    }
    if (!active.contains(loss))
      return func.emitError("the loss does not depend on any parameter");

    OriginListener listener;
    OpBuilder b(ctx, &listener);
    b.setInsertionPoint(ret);

    // Gradient contributions per value, summed when first needed.
    llvm::DenseMap<Value, SmallVector<Value>> contributions;
    auto idOf = [&](Operation *op) {
      return llvm::cast<IntegerAttr>(op->getAttr(kIdAttr)).getInt();
    };
    auto gradientOf = [&](Value v, int64_t origin) -> Value {
      auto it = contributions.find(v);
      if (it == contributions.end() || it->second.empty())
        return Value();
      listener.origin = origin;
      Value sum = it->second.front();
      for (Value c : llvm::drop_begin(it->second))
        sum = AddOp::create(b, v.getLoc(), sum.getType(), sum, c);
      it->second.assign({sum});
      return sum;
    };

    // Seed: d loss / d loss = 1.
    Operation *lossDef = loss.getDefiningOp();
    if (!lossDef)
      return func.emitError("the loss must be computed by an op");
    listener.origin = idOf(lossDef);
    auto one = DenseElementsAttr::get(
        lossTy, FloatAttr::get(lossTy.getElementType(), 1.0));
    contributions[loss].push_back(ConstantOp::create(b, loss.getLoc(), one));

    for (Operation *op : llvm::reverse(forwardOps)) {
      if (op->getNumResults() == 0 ||
          !llvm::any_of(op->getResults(),
                        [&](Value r) { return active.contains(r); }))
        continue;
      int64_t id = idOf(op);
      SmallVector<Value> resultGrads;
      for (Value r : op->getResults())
        resultGrads.push_back(gradientOf(r, id));
      if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
        continue; // does not reach the loss
      auto rule = llvm::dyn_cast<GradientOpInterface>(op);
      auto multiRule = llvm::dyn_cast<MultiResultGradientOpInterface>(op);
      if (op->getNumResults() == 1 ? !rule : !multiRule)
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
                 << operand.getOperandNumber() << " built type "
                 << d.getType() << ", expected " << operand.get().getType();
        // Gradients of activations (non-parameter values) form the B chain
        // (zb-split-backward): mark the ops producing them.
        if (!llvm::is_contained(params, operand.get()))
          if (Operation *def = d.getDefiningOp())
            def->setAttr(kActGradAttr, UnitAttr::get(ctx));
        contributions[operand.get()].push_back(d);
      }
    }

    // Parameter gradients become extra results.
    SmallVector<Value> results{loss};
    for (BlockArgument p : params) {
      Value g;
      auto it = contributions.find(p);
      if (it != contributions.end() && !it->second.empty()) {
        Operation *first = it->second.front().getDefiningOp();
        g = gradientOf(p, llvm::cast<IntegerAttr>(
                              first->getAttr(kOriginAttr)).getInt());
      } else {
        // The parameter does not influence the loss: its gradient is zero.
        listener.origin = idOf(lossDef);
        auto ty = llvm::cast<RankedTensorType>(p.getType());
        g = ConstantOp::create(
            b, p.getLoc(),
            DenseElementsAttr::get(ty,
                                   FloatAttr::get(ty.getElementType(), 0.0)));
      }
      results.push_back(g);
    }
    ret->setOperands(results);
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    SmallVector<DictionaryAttr> oldResAttrs;
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
    for (auto [i, p] : llvm::enumerate(params))
      func.setResultAttr(i + 1, "zb.grad_of",
                         IntegerAttr::get(i64, p.getArgNumber()));
    return success();
  }
};
} // namespace
