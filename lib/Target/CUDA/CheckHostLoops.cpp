//===- CheckHostLoops.cpp - zb-gpu-check-host-loops -----------------------===//
//
// Refuses a CUDA rank program whose host code would compute on device
// memory: a parallel loop left outside the kernels, or a load or store of an
// element outside a gpu.module. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUCHECKHOSTLOOPS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

struct ZBGpuCheckHostLoopsPass
    : public zb::impl::ZBGpuCheckHostLoopsBase<ZBGpuCheckHostLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    WalkResult r = getOperation().walk([](scf::ParallelOp loop) {
      if (loop->getParentOfType<gpu::GPUModuleOp>())
        return WalkResult::advance();
      loop.emitError("zb: a parallel loop was not mapped to a GPU kernel "
                     "(convert-parallel-loops-to-gpu left it in host code)");
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    // Index and i1 buffers are the deallocation helper's host lists.
    r = getOperation().walk([](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp>(op) ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return WalkResult::advance();
      Value memref = isa<memref::LoadOp>(op)
                         ? cast<memref::LoadOp>(op).getMemRef()
                         : cast<memref::StoreOp>(op).getMemRef();
      Type element = cast<MemRefType>(memref.getType()).getElementType();
      if (element.isIndex() || element.isInteger(1))
        return WalkResult::advance();
      op->emitError("zb: host code ")
          << (isa<memref::LoadOp>(op) ? "reads" : "writes")
          << " device memory outside a GPU kernel (" << op->getName() << ")";
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
