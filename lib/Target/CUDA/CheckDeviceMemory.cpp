//===- CheckDeviceMemory.cpp - zb-gpu-check-device-memory -----------------===//
//
// Follows every host-memory buffer of a CUDA rank program's host code (a
// memref.get_global, a memref.alloca) through views and calls of the
// module's own functions, and refuses it where it reaches a kernel launch
// or a zbrt_* runtime call, naming the kernel or function, the operand and
// where the buffer comes from. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/DeviceMemory.h"
#include "zb/Target/CUDA/Passes.h"
#include "zbrt/Symbols.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/DenseSet.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUCHECKDEVICEMEMORY
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// "memref.get_global @name (a global of the rank library, host memory)".
std::string describeSource(Operation *source) {
  if (auto get = dyn_cast<memref::GetGlobalOp>(source))
    return ("memref.get_global @" + get.getName() +
            " (a global of the rank library, host memory)")
        .str();
  return "memref.alloca (the host's stack)";
}

struct ZBGpuCheckDeviceMemoryPass
    : public zb::impl::ZBGpuCheckDeviceMemoryBase<ZBGpuCheckDeviceMemoryPass> {
  using Base::Base;

  /// Reports `use` of a buffer from `source` if it is a kernel or runtime
  /// operand; returns the callee's argument the buffer flows into for a
  /// call of one of the module's own functions.
  Value visitUse(OpOperand &use, Operation *source,
                 SymbolTableCollection &symbols, bool &failed) {
    Operation *user = use.getOwner();
    if (auto launch = dyn_cast<mlir::gpu::LaunchFuncOp>(user)) {
      unsigned first = launch.getKernelOperands().getBeginOperandIndex();
      if (use.getOperandNumber() < first)
        return nullptr;
      InFlightDiagnostic diag =
          launch.emitError("zb: kernel ")
          << launch.getKernel() << " would read host memory through operand #"
          << use.getOperandNumber() - first << ": " << describeSource(source)
          << "; every buffer a kernel reads must be device memory "
             "(zb-gpu-sink-constants moves constants into the kernel)";
      diag.attachNote(source->getLoc()) << "the host buffer comes from here";
      failed = true;
      return nullptr;
    }
    auto call = dyn_cast<func::CallOp>(user);
    if (!call)
      return nullptr;
    if (call.getCallee().starts_with(zbrt::symbols::FunctionPrefix)) {
      InFlightDiagnostic diag =
          call.emitError("zb: runtime call @")
          << call.getCallee() << " would read host memory through operand #"
          << use.getOperandNumber() << ": " << describeSource(source)
          << "; cuBLAS and NCCL need device memory";
      diag.attachNote(source->getLoc()) << "the host buffer comes from here";
      failed = true;
      return nullptr;
    }
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal())
      return nullptr;
    return callee.getArgument(use.getOperandNumber());
  }

  void runOnOperation() override {
    bool failed = false;
    SymbolTableCollection symbols;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      fn.walk([&](Operation *source) {
        if (!isa<memref::GetGlobalOp, memref::AllocaOp>(source))
          return;
        // Every value the source's buffer reaches, each visited once.
        SmallVector<Value> worklist = {source->getResult(0)};
        llvm::DenseSet<Value> seen(worklist.begin(), worklist.end());
        while (!worklist.empty()) {
          Value buffer = worklist.pop_back_val();
          for (OpOperand &use : buffer.getUses()) {
            Value next;
            if (zb::cuda::isBufferView(use.getOwner()) &&
                use.getOperandNumber() == 0)
              next = use.getOwner()->getResult(0);
            else
              next = visitUse(use, source, symbols, failed);
            if (next && seen.insert(next).second)
              worklist.push_back(next);
          }
        }
      });
    }
    if (failed)
      signalPassFailure();
  }

};
} // namespace
