//===- BufferDeallocation.cpp - zb-buffer-deallocation --------------------===//
//
// Deallocation after one-shot bufferization: a rank's step function frees
// each buffer right after its last use (so a microbatch's saved activations
// are freed by its W, as the schedule's memory accounting assumes); every
// other function gets upstream's ownership-based deallocation. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <optional>

namespace zb {
#define GEN_PASS_DEF_ZBBUFFERDEALLOCATION
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

bool isMemRef(Value v) { return isa<BaseMemRefType>(v.getType()); }

/// Which results of `callee` may share a buffer: result i maps to the
/// smallest index of the results it may alias (a stage function returns a
/// value twice when it is both sent and saved). The callee's return operands
/// are traced back through every operation with memref operands (views) to
/// the buffers they come from. None when the callee is external, has more
/// than one return, or returns a view of an argument or of a region's
/// block argument.
std::optional<SmallVector<unsigned>> resultGroups(func::FuncOp callee) {
  if (!callee || callee.isExternal())
    return std::nullopt;
  func::ReturnOp ret;
  WalkResult walk = callee.walk([&](func::ReturnOp op) {
    if (ret)
      return WalkResult::interrupt();
    ret = op;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || !ret)
    return std::nullopt;
  unsigned n = ret.getNumOperands();
  SmallVector<SmallVector<Value>> sources(n);
  for (unsigned i = 0; i < n; ++i) {
    if (!isMemRef(ret.getOperand(i)))
      continue;
    SmallVector<Value> work{ret.getOperand(i)};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      if (!def)
        return std::nullopt; // an argument or a region's block argument
      if (isa<memref::AllocOp, func::CallOp, bufferization::CloneOp>(def)) {
        sources[i].push_back(v);
        continue;
      }
      bool viewsSomething = false;
      for (Value operand : def->getOperands())
        if (isMemRef(operand)) {
          work.push_back(operand);
          viewsSomething = true;
        }
      if (!viewsSomething)
        return std::nullopt; // a global or another buffer we cannot follow
    }
  }
  SmallVector<unsigned> group(n);
  for (unsigned i = 0; i < n; ++i) {
    group[i] = i;
    for (unsigned j = 0; j < i && group[i] == i; ++j)
      for (Value v : sources[i])
        if (llvm::is_contained(sources[j], v)) {
          group[i] = group[j];
          break;
        }
  }
  return group;
}

/// The last operation of `block` that uses each class of buffers
/// (`classOf`: the class of a value, null for a value in none), uses inside
/// an operation's regions counting as uses by the operation; `escapes` gets
/// the classes that the block's terminator uses.
void findLastUses(Block &block, llvm::function_ref<Value(Value)> classOf,
                  llvm::DenseMap<Value, Operation *> &lastUse,
                  llvm::DenseSet<Value> &escapes) {
  for (Operation &op : block) {
    auto note = [&](Value v) {
      Value r = classOf(v);
      if (!r)
        return;
      lastUse[r] = &op;
      if (op.hasTrait<OpTrait::IsTerminator>())
        escapes.insert(r);
    };
    for (Value operand : op.getOperands())
      note(operand);
    op.walk([&](Operation *inner) {
      if (inner != &op)
        for (Value operand : inner->getOperands())
          note(operand);
    });
  }
}

/// Inserts a memref.dealloc after the last use of every buffer that the
/// single-block function `func` owns. Returns false (changing nothing) when
/// the function is not straight-line code this analysis understands.
bool deallocateStraightLine(func::FuncOp func) {
  Region &body = func.getBody();
  if (!body.hasOneBlock())
    return false;
  Block &block = body.front();

  // Every memref value of the block maps to the buffer ("root") it views;
  // owned roots are the ones this function must free.
  llvm::DenseMap<Value, Value> rootOf;
  llvm::SmallVector<Value> ownedRoots;
  // Which results of a callee may share a buffer, once per callee.
  llvm::DenseMap<Operation *, std::optional<SmallVector<unsigned>>> groupsOf;
  // Views of several buffers (a conservative merge) put them in one class
  // (union-find over roots).
  llvm::DenseMap<Value, Value> parent;
  std::function<Value(Value)> leader = [&](Value r) -> Value {
    auto it = parent.find(r);
    if (it == parent.end() || it->second == r)
      return r;
    Value top = leader(it->second);
    parent[r] = top;
    return top;
  };

  auto root = [&](Value v) -> Value {
    auto it = rootOf.find(v);
    return it == rootOf.end() ? Value() : it->second;
  };
  for (BlockArgument arg : block.getArguments())
    if (isMemRef(arg))
      rootOf[arg] = arg; // the caller's buffers: never freed here

  for (Operation &op : block) {
    // Regions may use buffers (their uses count as uses by `op`, below) but
    // must not yield memrefs: nothing flows out of them that we do not see.
    bool regionYieldsMemRef = false;
    for (Region &region : op.getRegions())
      region.walk([&](Operation *inner) {
        if (inner->hasTrait<OpTrait::IsTerminator>() &&
            llvm::any_of(inner->getOperands(), isMemRef))
          regionYieldsMemRef = true;
      });
    if (regionYieldsMemRef)
      return false;
    for (OpResult result : op.getResults()) {
      if (!isMemRef(result))
        continue;
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        auto [it, inserted] = groupsOf.try_emplace(callee.getOperation());
        if (inserted)
          it->second = resultGroups(callee);
        const auto &groups = it->second;
        if (!groups)
          return false;
        unsigned first = (*groups)[result.getResultNumber()];
        if (first != result.getResultNumber()) {
          rootOf[result] = rootOf.lookup(call->getResult(first));
          continue; // the same buffer as an earlier result: freed once
        }
      }
      if (isa<func::CallOp, memref::AllocOp>(op)) {
        rootOf[result] = result;
        ownedRoots.push_back(result);
        continue;
      }
      // Any other memref result views all memref operands (subview, cast,
      // expand/collapse_shape, ...); with none it is a buffer we do not own
      // (memref.get_global, memref.alloca, bufferization.to_buffer).
      Value viewed;
      for (Value operand : op.getOperands()) {
        Value r = root(operand);
        if (!r)
          continue;
        r = leader(r);
        if (!viewed)
          viewed = r;
        else if (r != viewed)
          parent[r] = viewed;
      }
      rootOf[result] = viewed ? viewed : result;
    }
  }

  // The last operation of the block that uses each class of buffers.
  llvm::DenseMap<Value, Operation *> lastUse;
  llvm::DenseSet<Value> escapes;
  findLastUses(
      block,
      [&](Value v) {
        Value r = root(v);
        return r ? leader(r) : Value();
      },
      lastUse, escapes);

  // A class that holds several owned buffers (a view of two) frees them all
  // after the class's last use; a class with a buffer we do not own is
  // still freed for the owned ones (freeing never touches the others).
  OpBuilder builder(func.getContext());
  for (Value buffer : ownedRoots) {
    Value r = leader(buffer);
    if (escapes.contains(r))
      continue;
    Operation *last = lastUse.lookup(r);
    if (!last)
      last = buffer.getDefiningOp();
    builder.setInsertionPointAfter(last);
    memref::DeallocOp::create(builder, buffer.getLoc(), buffer);
  }
  return true;
}

struct ZBBufferDeallocationPass
    : public zb::impl::ZBBufferDeallocationBase<ZBBufferDeallocationPass> {
  void runOnOperation() override {
    OpPassManager ownership("func.func");
    memref::ExpandReallocPassOptions realloc;
    realloc.emitDeallocs = false;
    ownership.addPass(memref::createExpandReallocPass(realloc));
    ownership.addPass(createCanonicalizerPass());
    ownership.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
    ownership.addPass(createCanonicalizerPass());
    ownership.addPass(bufferization::createBufferDeallocationSimplificationPass());

    // Step functions last: their analysis reads the callees' returns as
    // ownership-based deallocation leaves them.
    SmallVector<func::FuncOp> steps;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (zb::isStepFunction(func)) {
        steps.push_back(func);
        continue;
      }
      if (failed(runPipeline(ownership, func)))
        return signalPassFailure();
    }
    for (func::FuncOp step : steps)
      if (!deallocateStraightLine(step) &&
          failed(runPipeline(ownership, step)))
        return signalPassFailure();
  }
};
} // namespace
