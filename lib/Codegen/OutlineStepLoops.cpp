//===- OutlineStepLoops.cpp - zb-outline-step-loops -----------------------===//
//
// Moves the loop nests (linalg operations on memrefs) of a rank's step
// function into private functions, one per distinct nest, so that the step
// is a straight line of calls whose lowering is linear in its length. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

namespace zb {
#define GEN_PASS_DEF_ZBOUTLINESTEPLOOPS
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

struct ZBOutlineStepLoopsPass
    : public zb::impl::ZBOutlineStepLoopsBase<ZBOutlineStepLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && zb::isStepFunction(func))
        steps.push_back(func);
    for (func::FuncOp step : steps)
      outline(step, symbols);
  }

  void outline(func::FuncOp step, SymbolTable &symbols) {
    // Printed body (with operand types) -> the function that holds it.
    llvm::StringMap<func::FuncOp> shared;
    unsigned counter = 0;
    OpBuilder builder(step.getContext());
    SmallVector<Operation *> nests;
    for (Block &block : step.getBody())
      for (Operation &op : block)
        if (op.getNumRegions() > 0 && op.getNumResults() == 0 &&
            !op.hasTrait<OpTrait::IsTerminator>())
          nests.push_back(&op);

    for (Operation *op : nests) {
      // Arguments: the operands, then what the regions use from outside.
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      SmallVector<Value> args(op->getOperands());
      for (Value v : captured)
        if (!llvm::is_contained(args, v))
          args.push_back(v);
      // A view's static offset (a microbatch's slice of the inputs) becomes
      // dynamic, so that the nests of all microbatches share one function.
      builder.setInsertionPoint(op);
      SmallVector<Value> callArgs(args);
      for (Value &v : callArgs) {
        auto type = dyn_cast<MemRefType>(v.getType());
        if (!type)
          continue;
        auto layout = dyn_cast<StridedLayoutAttr>(type.getLayout());
        if (!layout || ShapedType::isDynamic(layout.getOffset()))
          continue;
        auto dynamic = MemRefType::get(
            type.getShape(), type.getElementType(),
            StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic,
                                   layout.getStrides()),
            type.getMemorySpace());
        v = memref::CastOp::create(builder, op->getLoc(), dynamic, v);
      }
      SmallVector<Type> argTypes;
      for (Value v : callArgs)
        argTypes.push_back(v.getType());

      // The candidate function, detached, named once it is kept.
      auto type = builder.getFunctionType(argTypes, {});
      OpBuilder detached(step.getContext());
      auto func =
          func::FuncOp::create(detached, op->getLoc(), "outlined", type);
      Block *body = func.addEntryBlock();
      IRMapping map;
      for (auto [v, arg] : llvm::zip(args, body->getArguments()))
        map.map(v, arg);
      OpBuilder inner = OpBuilder::atBlockEnd(body);
      inner.clone(*op, map);
      func::ReturnOp::create(inner, op->getLoc());

      std::string key;
      llvm::raw_string_ostream os(key);
      func->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
      func::FuncOp callee = shared.lookup(key);
      if (callee) {
        func->erase();
      } else {
        func.setName((step.getName() + "_loops_" + llvm::Twine(counter++)).str());
        func.setPrivate();
        symbols.insert(func, Block::iterator(step));
        shared[key] = func;
        callee = func;
      }
      builder.setInsertionPoint(op);
      func::CallOp::create(builder, op->getLoc(), callee, callArgs);
      op->erase();
    }
  }
};
} // namespace
