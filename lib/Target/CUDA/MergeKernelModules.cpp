//===- MergeKernelModules.cpp - zb-gpu-merge-kernel-modules ---------------===//
//
// One gpu.module for all outlined kernels of a rank program, so the toolkit
// compiles one module per architecture (one ptxas, one fatbinary) instead of
// one per kernel, and the runtime loads one module. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUMERGEKERNELMODULES
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

struct ZBGpuMergeKernelModulesPass
    : public zb::impl::ZBGpuMergeKernelModulesBase<
          ZBGpuMergeKernelModulesPass> {
  using Base::Base;

  /// A module holding gpu.func kernels and the constant globals they read
  /// (the outliner's shape; zb-gpu-sink-constants).
  static bool kernelsOnly(gpu::GPUModuleOp module) {
    for (Operation &op : module.getBody()->getOperations()) {
      if (auto global = dyn_cast<memref::GlobalOp>(op))
        if (global.getConstant())
          continue;
      auto func = dyn_cast<gpu::GPUFuncOp>(op);
      if (!func || !func.isKernel())
        return false;
    }
    return true;
  }

  /// Moves the constant globals of `modules` into `merged`, one copy of
  /// each: the outliner copied the same global of the host module into
  /// every kernel module that reads it. False (with an error) when two
  /// globals of one name differ.
  static bool mergeGlobals(ArrayRef<gpu::GPUModuleOp> modules,
                           gpu::GPUModuleOp merged) {
    llvm::StringMap<memref::GlobalOp> kept;
    Block *body = merged.getBody();
    for (gpu::GPUModuleOp module : modules)
      for (auto global :
           llvm::make_early_inc_range(module.getOps<memref::GlobalOp>())) {
        auto [it, inserted] = kept.try_emplace(global.getSymName(), global);
        if (inserted) {
          global->moveBefore(body, body->begin());
          continue;
        }
        if (!OperationEquivalence::isEquivalentTo(
                it->second, global, OperationEquivalence::Flags::IgnoreLocations)) {
          global.emitError("zb-gpu-merge-kernel-modules: two different "
                           "globals named '")
              << global.getSymName() << "'";
          return false;
        }
      }
    return true;
  }

  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<gpu::GPUModuleOp> modules;
    for (auto module : top.getOps<gpu::GPUModuleOp>())
      if (kernelsOnly(module) && !module.getBody()->empty())
        modules.push_back(module);
    if (modules.size() < 2)
      return;
    if (llvm::any_of(modules, [&](gpu::GPUModuleOp m) {
          return m.getTargetsAttr() != modules.front().getTargetsAttr() ||
                 m->getDiscardableAttrDictionary() !=
                     modules.front()->getDiscardableAttrDictionary();
        })) {
      // Modules compiled differently stay apart.
      return;
    }

    SymbolTable symbols(top);
    OpBuilder b(modules.front());
    auto merged = gpu::GPUModuleOp::create(b, modules.front().getLoc(),
                                           moduleName.getValue(),
                                           modules.front().getTargetsAttr());
    merged->setDiscardableAttrs(
        modules.front()->getDiscardableAttrDictionary());
    symbols.insert(merged); // renames it on a clash
    StringAttr mergedName = merged.getNameAttr();

    // (old module, kernel) -> new kernel name.
    llvm::StringMap<llvm::StringMap<StringAttr>> renamed;
    Block *body = merged.getBody();
    for (gpu::GPUModuleOp module : modules) {
      bool single = llvm::hasSingleElement(module.getOps<gpu::GPUFuncOp>());
      for (auto func :
           llvm::make_early_inc_range(module.getOps<gpu::GPUFuncOp>())) {
        StringAttr oldName = func.getNameAttr();
        // The module's name; with several kernels, plus the kernel's.
        StringAttr newName =
            single ? module.getNameAttr()
                   : StringAttr::get(&getContext(), module.getName() + "__" +
                                                        oldName.getValue());
        func->moveBefore(body, body->end());
        func.setName(newName);
        renamed[module.getName()][oldName.getValue()] = newName;
      }
    }
    if (!mergeGlobals(modules, merged))
      return signalPassFailure();
    // Symbol names in the merged module must be unique.
    llvm::StringSet<> seen;
    for (auto func : merged.getOps<gpu::GPUFuncOp>())
      if (!seen.insert(func.getName()).second) {
        func.emitError("zb-gpu-merge-kernel-modules: two kernels named '")
            << func.getName() << "' after merging";
        return signalPassFailure();
      }

    WalkResult walk = top.walk([&](gpu::LaunchFuncOp launch) {
      auto module = renamed.find(launch.getKernelModuleName().getValue());
      if (module == renamed.end())
        return WalkResult::advance();
      auto kernel = module->second.find(launch.getKernelName().getValue());
      if (kernel == module->second.end()) {
        launch.emitError("zb-gpu-merge-kernel-modules: no kernel '")
            << launch.getKernelName() << "' in its module";
        return WalkResult::interrupt();
      }
      launch.setKernelAttr(SymbolRefAttr::get(
          mergedName, {FlatSymbolRefAttr::get(kernel->second)}));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp module : modules)
      module.erase();
  }
};

} // namespace
