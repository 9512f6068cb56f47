//===- ReportKernels.cpp - zb-gpu-report-kernels --------------------------===//
//
// Collects the kernel launches and runtime GEMMs of a module right after
// gpu-kernel-outlining (KernelReport.h) and hands them to the driver's
// callback, or prints the report's table when built from its name. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/KernelReport.h"
#include "zb/Target/CUDA/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUREPORTKERNELS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

struct ZBGpuReportKernelsPass
    : public zb::impl::ZBGpuReportKernelsBase<ZBGpuReportKernelsPass> {
  using Base::Base;
  ZBGpuReportKernelsPass(zb::KernelReportCallback callback,
                         bool everyStageFunction)
      : callback(std::move(callback)) {
    this->everyStageFunction = everyStageFunction;
  }

  void runOnOperation() override {
    std::vector<zb::GpuKernelLaunch> launches =
        zb::collectGpuKernelLaunches(getOperation(), everyStageFunction);
    markAllAnalysesPreserved();
    if (callback) {
      callback(std::move(launches));
      return;
    }
    zb::GpuSpec gpu;
    gpu.launchSeconds = launchUs * 1e-6;
    llvm::outs() << zb::gpuReportText({launches}, gpu);
  }

  zb::KernelReportCallback callback;
};

} // namespace

std::unique_ptr<Pass>
zb::createZBGpuReportKernels(KernelReportCallback callback,
                             bool everyStageFunction) {
  return std::make_unique<ZBGpuReportKernelsPass>(std::move(callback),
                                                  everyStageFunction);
}
