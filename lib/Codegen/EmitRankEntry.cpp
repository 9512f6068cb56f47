//===- EmitRankEntry.cpp - zb-emit-rank-entry -----------------------------===//
//
// Emits the entry point of a rank program, `void zb_rank_main(void **argv)`,
// on the LLVM dialect: argv[i] points to the memref descriptor of step
// argument i (docs/plan-json.md), forwarded to the step function's C
// interface `_mlir_ciface_<step>`.
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "zbrt/Symbols.h"

namespace zb {
#define GEN_PASS_DEF_ZBEMITRANKENTRY
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
struct ZBEmitRankEntryPass
    : public zb::impl::ZBEmitRankEntryBase<ZBEmitRankEntryPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    LLVM::LLVMFuncOp target;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      StringRef name = fn.getSymName();
      if (!name.consume_front("_mlir_ciface_") || fn.isExternal())
        continue;
      if (!stepFunction.empty() && name != stepFunction)
        continue;
      if (!stepFunction.empty() || name.starts_with("zb_rank")) {
        if (target) {
          module.emitError("zb-emit-rank-entry: several step functions; "
                           "name one with step-function=");
          return signalPassFailure();
        }
        target = fn;
      }
    }
    if (!target) {
      module.emitError("zb-emit-rank-entry: no C interface of a step "
                       "function found (expected _mlir_ciface_zb_rank<r>_step)");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = target.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(&getContext());
    auto voidTy = LLVM::LLVMVoidType::get(&getContext());
    auto entry = LLVM::LLVMFuncOp::create(
        b, loc, zbrt::symbols::RankEntry,
        LLVM::LLVMFunctionType::get(voidTy, {ptr}));
    Block *block = entry.addEntryBlock(b);
    b.setInsertionPointToStart(block);
    SmallVector<Value> args;
    for (unsigned i = 0; i < target.getNumArguments(); ++i) {
      if (target.getArgumentTypes()[i] != ptr) {
        target.emitError("zb-emit-rank-entry: argument #")
            << i << " of the C interface is not a pointer";
        return signalPassFailure();
      }
      Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(0),
                                       ArrayRef<LLVM::GEPArg>{
                                           static_cast<int32_t>(i)});
      args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
    }
    LLVM::CallOp::create(b, loc, target, args);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
};
} // namespace
