//===- NarrowIndex.cpp - zb-gpu-narrow-index ------------------------------===//
//
// Kernel index arithmetic on constants and in 32 bits: the constants every
// launch of a kernel passes become constants inside it, then integer range
// analysis (thread and block ids bounded by the kernel's known sizes)
// narrows the delinearisation of a flattened index to i32 divisions by
// constants. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUNARROWINDEX
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// The integer, index or float constant `v` is, if it is one.
TypedAttr constantScalar(Value v) {
  Attribute attr;
  if (!v.getType().isIntOrIndexOrFloat() || !matchPattern(v, m_Constant(&attr)))
    return {};
  return dyn_cast<TypedAttr>(attr);
}

/// Replaces the uses of each scalar argument of `kernel` that every launch
/// in `launches` passes the same constant for by that constant, made at
/// the kernel's entry.
void foldConstantArguments(gpu::GPUFuncOp kernel,
                           ArrayRef<gpu::LaunchFuncOp> launches) {
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  for (auto [i, arg] : llvm::enumerate(kernel.getArguments())) {
    if (!arg.getType().isIntOrIndexOrFloat() || arg.use_empty())
      continue;
    TypedAttr value;
    for (gpu::LaunchFuncOp launch : launches) {
      TypedAttr v = i < launch.getKernelOperands().size()
                        ? constantScalar(launch.getKernelOperands()[i])
                        : TypedAttr();
      if (!v || v.getType() != arg.getType() || (value && v != value)) {
        value = {};
        break;
      }
      value = v;
    }
    if (value)
      arg.replaceAllUsesWith(arith::ConstantOp::create(b, arg.getLoc(), value));
  }
}

/// Drops the nsw/nuw flags of the index arithmetic in `kernelModule`:
/// arith-int-range-narrowing keeps them on the i32 op it makes, also where
/// the values only fit in 32 bits unsigned (an index of 2^31 or more), and
/// a 32-bit `mul nsw` past 2^31 - 1 would be poison in LLVM. Without the
/// flags the narrowed ops wrap, which the unsigned index casts expect.
void dropIndexOverflowFlags(gpu::GPUModuleOp kernelModule) {
  kernelModule.walk([](arith::ArithIntegerOverflowFlagsInterface op) {
    if (op->getResult(0).getType().isIndex())
      op->setAttr(op.getIntegerOverflowAttrName(),
                  arith::IntegerOverflowFlagsAttr::get(
                      op->getContext(), arith::IntegerOverflowFlags::none));
  });
}

struct ZBGpuNarrowIndexPass
    : public zb::impl::ZBGpuNarrowIndexBase<ZBGpuNarrowIndexPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<std::pair<StringAttr, StringAttr>,
                   SmallVector<gpu::LaunchFuncOp>>
        launches;
    module.walk([&](gpu::LaunchFuncOp launch) {
      launches[std::make_pair(launch.getKernelModuleName(),
                              launch.getKernelName())]
          .push_back(launch);
    });
    SmallVector<gpu::GPUModuleOp> kernelModules;
    for (auto kernelModule : module.getOps<gpu::GPUModuleOp>()) {
      kernelModules.push_back(kernelModule);
      dropIndexOverflowFlags(kernelModule);
      for (auto kernel : kernelModule.getOps<gpu::GPUFuncOp>()) {
        auto it = launches.find(
            std::make_pair(SymbolTable::getSymbolName(kernelModule),
                           SymbolTable::getSymbolName(kernel)));
        if (kernel.isKernel() && it != launches.end())
          foldConstantArguments(kernel, it->second);
      }
    }
    OpPassManager pm(gpu::GPUModuleOp::getOperationName());
    pm.addPass(arith::createIntRangeOptimizationsPass());
    // Not arith-unsigned-when-equivalent: its i32 urem/udiv of a thread
    // index miscompile on the host under zb-gpu-emulate (LLVM 22's loop
    // vectorizer at -O3 reads b[t % 16] over 32 lanes as b[0..31]: out of
    // bounds, gpt-cuda-emu.test's losses no longer bit-identical); the
    // signed forms are not vectorized that way.
    arith::ArithIntRangeNarrowingOptions narrowing;
    narrowing.bitwidthsSupported = {32};
    pm.addPass(arith::createArithIntRangeNarrowing(narrowing));
    pm.addPass(createCanonicalizerPass());
    for (gpu::GPUModuleOp kernelModule : kernelModules)
      if (failed(runPipeline(pm, kernelModule)))
        return signalPassFailure();
  }
};

} // namespace
