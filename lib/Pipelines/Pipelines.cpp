//===- Pipelines.cpp - named zb pass pipelines ----------------------------===//
#include "zb/Pipelines/Pipelines.h"
#include "zb/Conversion/Passes.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

#include <mutex>

using namespace mlir;

namespace zb {

void buildPipelineParallelPipeline(OpPassManager &pm,
                                   const PipelineOptions &options) {
  pm.addPass(createZBAutodiff());
  pm.addPass(createZBSplitBackward());
  ZBPartitionStagesOptions partition;
  partition.numStages = options.numStages;
  partition.virtualStages = options.virtualStages;
  partition.target = options.target;
  pm.addPass(createZBPartitionStages(partition));
  ZBScheduleOptions schedule;
  schedule.algorithm = options.schedule;
  schedule.microbatches = options.microbatches;
  schedule.memoryLimits.assign(options.memoryLimit.begin(),
                               options.memoryLimit.end());
  schedule.profile = options.profile;
  schedule.optimizerSync = options.optimizerSync;
  schedule.scheduleFile = options.scheduleFile;
  pm.addPass(createZBSchedule(schedule));
  pm.addPass(createZBLowerPipeline());
}

/// The GPU part of buildTensorsToLLVMPipeline (GpuCodegenOptions): block
/// reductions, flattened and tiled parallel loops, kernels outlined, then
/// either a fatbin (leaving host code for the common tail) or, with
/// `emulate`, the kernels as host loops (zb-gpu-emulate).
static void addGpuKernelPasses(OpPassManager &pm,
                               const GpuCodegenOptions &gpu) {
  std::string reductions =
      gpu.reductionThreads > 0
          ? llvm::formatv("zb-gpu-map-reductions{{max-threads={0}},",
                          gpu.reductionThreads)
                .str()
          : "";
  std::string text = llvm::formatv(
      "func.func({0}"
      "convert-linalg-to-parallel-loops,zb-gpu-flatten-parallel-loops,"
      "scf-parallel-loop-tiling{{parallel-loop-tile-sizes={1}},"
      "gpu-map-parallel-loops,convert-parallel-loops-to-gpu),"
      "lower-affine,gpu-kernel-outlining",
      reductions, gpu.blockSize);
  if (gpu.emulate)
    text += ",zb-gpu-emulate";
  else
    text += llvm::formatv(
        ",func.func(gpu-async-region),"
        "nvvm-attach-target{{chip={0} features={1} O=3},"
        "gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm,canonicalize,"
        "reconcile-unrealized-casts),"
        "gpu-module-to-binary{{format=fatbin toolkit={2}}",
        gpu.chip, gpu.features, gpu.toolkit);
  // The upstream passes are named in a pipeline string: register them once
  // (zb-opt has them already; zb-compile and the Python binding do not).
  static std::once_flag registered;
  std::call_once(registered, [] {
    registerAllPasses();
    registerZBConversionPasses();
  });
  if (failed(parsePassPipeline(text, pm)))
    llvm::report_fatal_error("zb: the GPU pass pipeline does not parse");
}

void buildTensorsToLLVMPipeline(OpPassManager &pm, bool runtimeAllocator,
                                const GpuCodegenOptions *gpu) {
  pm.addPass(createCanonicalizerPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Copies as loops: rank programs need no libmlir_c_runner_utils.
  pm.addPass(createZBMemRefCopyToLinalg());
  if (gpu)
    addGpuKernelPasses(pm, *gpu);
  else
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLibmPass());
  if (runtimeAllocator) {
    // memref.alloc/dealloc -> _mlir_memref_to_llvm_{alloc,aligned_alloc,free},
    // which libzbrt implements as a memory pool; convert-to-llvm then sees no
    // memref allocations left.
    FinalizeMemRefToLLVMConversionPassOptions memref;
    memref.useGenericFunctions = true;
    pm.addPass(createFinalizeMemRefToLLVMConversionPass(memref));
  }
  if (gpu && !gpu->emulate)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void buildLowerToLLVMPipeline(OpPassManager &pm, bool fuseElementwise,
                              const GpuCodegenOptions *gpu) {
  pm.addPass(createConvertZBToRuntime());
  pm.addPass(createConvertZBToLinalg());
  // Producer-consumer fusion of elementwise linalg.generic chains (a
  // producer is fused into its consumer only when that is its single use, so
  // nothing is recomputed and every value is computed by the same scalar
  // operations in the same order: results stay bit-identical). On a GPT
  // stage this removes about two thirds of the loop nests.
  if (fuseElementwise) {
    pm.addPass(createCanonicalizerPass());
    // Bounded (zb-fuse-elementwise): upstream's fusion is quadratic in the
    // length of a chain.
    pm.addPass(zb::createZBFuseElementwise());
  }
  buildTensorsToLLVMPipeline(pm, /*runtimeAllocator=*/true, gpu);
  pm.addPass(createZBEmitRankEntry());
}

void buildFunctionToLLVMPipeline(OpPassManager &pm, bool useRuntime,
                                 const GpuCodegenOptions *gpu) {
  pm.addPass(createInlinerPass());
  if (useRuntime)
    pm.addPass(createConvertZBToRuntime());
  pm.addPass(createConvertZBToLinalg());
  buildTensorsToLLVMPipeline(pm, /*runtimeAllocator=*/false, gpu);
}

void registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "zb-pipeline-parallel",
      "Autodiff, B/W split, stage partition, schedule and per-rank lowering",
      buildPipelineParallelPipeline);
  PassPipelineRegistration<>(
      "zb-lower-to-llvm",
      "Lowers one rank's step function to the LLVM dialect (CPU)",
      [](OpPassManager &pm) { buildLowerToLLVMPipeline(pm); });
}

} // namespace zb
