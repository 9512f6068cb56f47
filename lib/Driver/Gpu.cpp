//===- Gpu.cpp - the CUDA target's phases of zb-compile -------------------===//
//
// What zb-compile does for --target cuda and cuda-emu beyond the common
// phases: the pipelines' GPU options from CompileOptions::cuda, the stages'
// kernel costs before scheduling (--gpu-costs, gpu_costs.json) and the kernel
// report of the lowered ranks (--gpu-report). The target's own code (passes,
// the report's arithmetic, the options' check) is lib/Target/CUDA.
//
//===----------------------------------------------------------------------===//
#include "Phases.h"

#include "zb/Transforms/PipelineInfo.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace zb::driver {

GpuCodegenOptions gpuCodegenOptions(const CompileOptions &options) {
  GpuCodegenOptions gpu;
  gpu.chip = options.cuda.arch;
  gpu.toolkit = options.cuda.toolkitRoot();
  gpu.emulate = options.target == Target::CudaEmu;
  gpu.blockSize = options.cuda.blockSize;
  gpu.reductionThreads = options.cuda.reductionThreads;
  gpu.attentionKernels = options.cuda.attentionKernel;
  gpu.attentionTokenMajor = options.cuda.attentionTokenMajor;
  // --gpu-reduction-threads 0 asks for the CPU backend's arithmetic: the
  // norm kernel's warp sums are reassociated, so the norms are decomposed.
  gpu.normKernels = options.cuda.normKernel && options.cuda.reductionThreads;
  return gpu;
}

LogicalResult collectStageKernels(ModuleOp partitioned,
                                  const CompileOptions &options,
                                  std::vector<GpuKernelLaunch> &kernels) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(partitioned->clone()));
  PassManager pm = PassManager::on<ModuleOp>(partitioned.getContext());
  if (options.timing)
    pm.enableTiming();
  GpuCodegenOptions gpu = gpuCodegenOptions(options);
  gpu.reportKernels = [&kernels](std::vector<GpuKernelLaunch> launches) {
    kernels = std::move(launches);
  };
  gpu.reportEveryStageFunction = true;
  buildLowerToGpuKernelsPipeline(pm, options.fuseElementwise, gpu);
  return pm.run(*copy);
}

llvm::Expected<std::vector<StageCostOverride>>
gpuStageCosts(ModuleOp partitioned, const CompileOptions &options) {
  auto loweringFailed = [] {
    return llvm::createStringError("--gpu-costs: lowering the stages to "
                                   "kernels failed (errors above)");
  };
  FailureOr<PipelineInfo> info = PipelineInfo::read(partitioned);
  std::vector<GpuKernelLaunch> kernels;
  if (failed(info) ||
      failed(collectStageKernels(partitioned, options, kernels)))
    return loweringFailed();
  std::map<int64_t, std::array<double, 3>> seconds =
      gpuStagePassSeconds({kernels}, options.cuda.spec());
  std::vector<StageCostOverride> costs;
  for (const StageInfo &s : info->stages) {
    auto it = seconds.find(s.stage);
    if (it == seconds.end())
      return llvm::createStringError(
          llvm::formatv("--gpu-costs: stage {0} has no kernels", s.stage)
              .str());
    StageCostOverride c;
    c.tF = it->second[0] * 1e3;
    c.tB = it->second[1] * 1e3;
    c.tW = it->second[2] * 1e3;
    c.tComm = s.tComm; // the cost model's transfer time
    costs.push_back(c);
  }
  return costs;
}

formats::Profile gpuCostsProfile(llvm::ArrayRef<StageCostOverride> costs,
                                 llvm::ArrayRef<int> stageToRank,
                                 const GpuSpec &gpu) {
  formats::Profile profile;
  profile.plan =
      "zb-compile --gpu-costs (" + std::string(gpu.peaks.name) + " roofline)";
  for (auto [s, c] : llvm::enumerate(costs)) {
    formats::ProfiledStage p;
    p.stage = static_cast<int64_t>(s);
    p.rank = stageToRank[s];
    p.tF = c.tF;
    p.tB = c.tB;
    p.tW = c.tW;
    p.tComm = c.tComm;
    profile.stages.push_back(p);
  }
  return profile;
}

llvm::Expected<std::string>
writeGpuReport(const CompileOptions &options,
               const std::vector<std::vector<GpuKernelLaunch>> &ranks) {
  GpuSpec gpu = options.cuda.spec();
  std::string json = llvm::formatv("{0:2}\n", gpuReportJSON(ranks, gpu));
  if (llvm::Error error =
          writeText(outputPath(options, "gpu_report.json"), json))
    return std::move(error);
  std::string table = gpuReportText(ranks, gpu);
  if (llvm::Error error =
          writeText(outputPath(options, "gpu_report.txt"), table))
    return std::move(error);
  return table;
}

} // namespace zb::driver
