//===- SinkConstants.cpp - zb-gpu-sink-constants --------------------------===//
//
// Moves the constant tensors a gpu.launch reads (a memref.get_global of a
// constant global, with the views on it) into the launch body, so that
// gpu-kernel-outlining copies the global into the kernel's gpu.module: a
// device global of the fatbin, uploaded once when the runtime loads the
// module, instead of a host pointer handed to the kernel. Vector constants
// (a vectorised zero fill) are cloned into the body too: as kernel
// arguments they would cost a parameter each, and a bfloat16 vector
// argument of an emulated kernel (--target cuda-emu) is passed through
// float32 by the x86 calling convention, a conversion call (__truncsfbf2)
// that libgcc lacks. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/DeviceMemory.h"
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUSINKCONSTANTS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// Clones the chain that makes `value` (a memref.get_global of a constant
/// global, then views: zb::cuda::constantGlobalRoot) at the start of
/// `launch`'s body and makes the body use the clone. A view's other
/// operands (dynamic offsets, sizes) stay where they are: the outliner
/// passes them to the kernel like any captured value.
void sinkIntoLaunch(Value value, mlir::gpu::LaunchOp launch) {
  SmallVector<Operation *> chain = {value.getDefiningOp()};
  while (!isa<memref::GetGlobalOp>(chain.back()))
    chain.push_back(chain.back()->getOperand(0).getDefiningOp());
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  IRMapping map;
  for (Operation *op : llvm::reverse(chain))
    b.clone(*op, map);
  Value sunk = map.lookup(value);
  value.replaceUsesWithIf(sunk, [&](OpOperand &use) {
    return launch->isProperAncestor(use.getOwner());
  });
}

struct ZBGpuSinkConstantsPass
    : public zb::impl::ZBGpuSinkConstantsBase<ZBGpuSinkConstantsPass> {
  using Base::Base;
  void runOnOperation() override {
    SymbolTableCollection symbols;
    getOperation()->walk([&](mlir::gpu::LaunchOp launch) {
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(launch.getBody(), captured);
      for (Value value : captured) {
        if (zb::cuda::constantGlobalRoot(value, symbols)) {
          sinkIntoLaunch(value, launch);
          continue;
        }
        auto cst = value.getDefiningOp<arith::ConstantOp>();
        if (!cst || !isa<VectorType>(cst.getType()))
          continue;
        OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
        Value sunk = b.clone(*cst)->getResult(0);
        value.replaceUsesWithIf(sunk, [&](OpOperand &use) {
          return launch->isProperAncestor(use.getOwner());
        });
      }
    });
  }
};
} // namespace
