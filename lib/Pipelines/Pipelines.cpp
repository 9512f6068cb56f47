//===- Pipelines.cpp - named zb pass pipelines ----------------------------===//
#include "zb/Pipelines/Pipelines.h"
#include "zb/Codegen/Passes.h"
#include "zb/Conversion/Passes.h"
#include "zb/Target/CUDA/Passes.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace zb {

void buildPartitionPipeline(OpPassManager &pm,
                            const PipelineOptions &options) {
  if (options.fuseAttention)
    pm.addPass(createZBFuseAttention());
  if (options.precision == Precision::Bf16)
    pm.addPass(createZBAutocast());
  if (options.fuseCrossEntropy)
    pm.addPass(createZBFuseCrossEntropy());
  pm.addPass(createZBAutodiff());
  ZBSplitBackwardOptions split;
  split.rebuildAttentionViews = options.attentionViews;
  pm.addPass(createZBSplitBackward(split));
  ZBPartitionStagesOptions partition;
  partition.numStages = options.numStages;
  partition.virtualStages = options.virtualStages;
  partition.target = targetName(options.target).str();
  pm.addPass(createZBPartitionStages(partition));
}

void buildSchedulePipeline(OpPassManager &pm, const PipelineOptions &options,
                           const sched::Schedule *fileSchedule) {
  ZBScheduleOptions schedule;
  schedule.algorithm = sched::scheduleName(options.schedule).str();
  schedule.microbatches = options.microbatches;
  schedule.memoryLimits.assign(options.memoryLimit.begin(),
                               options.memoryLimit.end());
  schedule.profile = options.profile;
  schedule.optimizerSync =
      sched::optimizerSyncName(options.optimizerSync).str();
  if (fileSchedule) {
    pm.addPass(
        createZBSchedule(schedule, *fileSchedule, options.scheduleFile));
  } else {
    schedule.scheduleFile = options.scheduleFile;
    pm.addPass(createZBSchedule(schedule));
  }
  ZBClusterWeightGradientsOptions cluster;
  cluster.bucketBytes = options.dpBucketBytes;
  pm.addPass(createZBClusterWeightGradients(cluster));
  pm.addPass(createZBLowerPipeline());
}

void buildPipelineParallelPipeline(OpPassManager &pm,
                                   const PipelineOptions &options) {
  buildPartitionPipeline(pm, options);
  buildSchedulePipeline(pm, options);
}

/// The GPU part of buildTensorsToLLVMPipeline up to outlined kernels
/// (GpuCodegenOptions): reductions as kernels, flattened and tiled parallel
/// loops, gpu-kernel-outlining, the host-loop check, the kernel report.
static void addGpuKernelPasses(OpPassManager &pm,
                               const GpuCodegenOptions &gpu) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  ZBGpuMapReductionsOptions reductions;
  reductions.maxThreads = gpu.reductionThreads;
  reductions.blockSize = gpu.blockSize;
  fn.addPass(createZBGpuMapReductions(reductions));
  fn.addPass(createZBGpuWrapScalarOps());
  fn.addPass(createConvertLinalgToParallelLoopsPass());
  fn.addPass(createZBGpuSinkSerialLoops());
  // float4 accesses (the emulation claims no alignment on the host).
  ZBGpuVectorizeElementwiseOptions vectorize;
  vectorize.alignment = gpu.emulate ? 0 : 16;
  fn.addPass(createZBGpuVectorizeElementwise(vectorize));
  fn.addPass(createZBGpuFlattenParallelLoops());
  fn.addPass(createParallelLoopTilingPass({gpu.blockSize},
                                          /*noMinMaxBounds=*/true));
  fn.addPass(createGpuMapParallelLoopsPass());
  fn.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // Constant tensors into the kernels that read them: device globals of
  // the fatbin, never a host pointer handed to a kernel.
  pm.addNestedPass<func::FuncOp>(createZBGpuSinkConstants());
  pm.addPass(createGpuKernelOutliningPass());
  // The fused attention kernels (zb-gpu-attention-calls' calls), each in a
  // gpu.module of its own like an outlined kernel.
  ZBGpuAttentionKernelsOptions attention;
  attention.alignment = gpu.emulate ? 0 : 16;
  pm.addPass(createZBGpuAttentionKernels(attention));
  pm.addPass(createZBGpuNormKernels());
  pm.addPass(createZBGpuCheckHostLoops());
  pm.addPass(createZBGpuCheckDeviceMemory());
  if (gpu.reportKernels)
    pm.addPass(createZBGpuReportKernels(gpu.reportKernels,
                                        gpu.reportEveryStageFunction));
  // Index arithmetic on the launches' constants, in 32 bits where it fits
  // (after the report, which it leaves unchanged).
  pm.addPass(createZBGpuNarrowIndex());
}

/// After addGpuKernelPasses: asynchronous launches, all kernels in one
/// gpu.module (zb-gpu-merge-kernel-modules), one nvvm-attach-target per
/// architecture ("sm_80,sm_90"), NVVM, and one fatbin for that module
/// (gpu-module-to-binary for one architecture, zb-gpu-fatbin for several:
/// every cubin plus the first one's PTX); leaves host code for the common
/// tail.
static void addGpuBinaryPasses(OpPassManager &pm,
                               const GpuCodegenOptions &gpu) {
  llvm::SmallVector<llvm::StringRef> chips;
  llvm::StringRef(gpu.chip).split(chips, ',', -1, /*KeepEmpty=*/false);
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  // One kernel module per rank program: one ptxas (and fatbinary) run per
  // architecture instead of one per kernel.
  pm.addPass(createZBGpuMergeKernelModules());
  for (llvm::StringRef chip : chips) {
    GpuNVVMAttachTargetOptions target;
    target.chip = chip.trim().str();
    target.features = gpu.features;
    target.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  // Views made inside a kernel (zb-gpu-sink-serial-loops moves a scatter's
  // row subviews into it) lower to plain address arithmetic first.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  if (chips.size() > 1) {
    ZBGpuFatbinOptions fatbin;
    fatbin.toolkit = gpu.toolkit;
    pm.addPass(createZBGpuFatbin(fatbin));
  } else {
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "fatbin";
    binary.toolkitPath = gpu.toolkit;
    pm.addPass(createGpuModuleToBinaryPass(binary));
  }
}

/// Canonicalization, one-shot bufferization with ownership-based
/// deallocation, copies as linalg.
static void addBufferizationPasses(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  // Constant globals in program order: a reproducible compile.
  pm.addPass(createZBConstantGlobals());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Upstream's buffer-deallocation-pipeline, except that a step function
  // frees each buffer after its last use (zb-buffer-deallocation).
  pm.addPass(createZBBufferDeallocation());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Copies as loops: rank programs need no libmlir_c_runner_utils.
  pm.addPass(createZBMemRefCopyToLinalg());
  // A step's loop nests into functions: its lowering stays linear in the
  // number of actions.
  pm.addPass(createZBOutlineStepLoops());
}

void buildTensorsToLLVMPipeline(OpPassManager &pm, bool runtimeAllocator,
                                const GpuCodegenOptions *gpu) {
  addBufferizationPasses(pm);
  if (gpu) {
    addGpuKernelPasses(pm, *gpu);
    if (gpu->emulate) {
      pm.addPass(createZBGpuEmulate());
      // The emulated kernels' bfloat16 roundings (the attention kernel's)
      // as integer operations, as for every other host conversion.
      pm.addPass(zb::createZBExpandBFloat16());
    } else
      addGpuBinaryPasses(pm, *gpu);
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
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

/// convert-zb-to-runtime, convert-zb-to-linalg, optional fusion.
static void addZBToLinalgPasses(OpPassManager &pm, bool fuseElementwise,
                                bool attentionKernels, bool normKernels,
                                bool tokenMajor) {
  // The attention the fused GPU kernel runs (zb-gpu-attention-kernels)
  // becomes a call on buffers; the rest is decomposed. Likewise the norms
  // of zb-gpu-norm-kernels.
  if (attentionKernels) {
    ZBGpuAttentionCallsOptions calls;
    calls.tokenMajor = tokenMajor;
    pm.addPass(createZBGpuAttentionCalls(calls));
  }
  if (normKernels)
    pm.addPass(createZBGpuNormCalls());
  pm.addPass(createZBDecomposeAttention());
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
  // bfloat16 (--precision bf16) is a storage type: each arith/math op on it
  // computes in f32 between an exact extf and a round-to-nearest-even
  // truncf, as torch's bfloat16 kernels do, and the conversions become
  // integer operations that every backend (CPU and the GPU kernels) lowers.
  // No-ops on a float32 program.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  pm.addPass(math::createMathExtendToSupportedTypes());
  pm.addPass(zb::createZBExpandBFloat16());
}

void buildLowerToLLVMPipeline(OpPassManager &pm, bool fuseElementwise,
                              const GpuCodegenOptions *gpu) {
  addZBToLinalgPasses(pm, fuseElementwise, gpu && gpu->attentionKernels,
                      gpu && gpu->normKernels,
                      gpu && gpu->attentionTokenMajor);
  buildTensorsToLLVMPipeline(pm, /*runtimeAllocator=*/true, gpu);
  pm.addPass(createZBEmitRankEntry());
}

void buildLowerToGpuKernelsPipeline(OpPassManager &pm, bool fuseElementwise,
                                    const GpuCodegenOptions &gpu) {
  addZBToLinalgPasses(pm, fuseElementwise, gpu.attentionKernels,
                      gpu.normKernels, gpu.attentionTokenMajor);
  addBufferizationPasses(pm);
  addGpuKernelPasses(pm, gpu);
}

namespace {
struct GpuKernelsPipelineOptions
    : public PassPipelineOptions<GpuKernelsPipelineOptions> {
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per elementwise block"),
                            llvm::cl::init(256)};
  Option<int64_t> reductionThreads{
      *this, "reduction-threads",
      llvm::cl::desc("Most threads of a block reduction (0: none)"),
      llvm::cl::init(256)};
  Option<bool> fuse{*this, "fuse-elementwise",
                    llvm::cl::desc("zb-fuse-elementwise first"),
                    llvm::cl::init(true)};
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<GpuKernelsPipelineOptions>(
      "zb-lower-to-gpu-kernels",
      "Lowers one rank's step function to outlined GPU kernels (the CUDA "
      "target before NVVM)",
      [](OpPassManager &pm, const GpuKernelsPipelineOptions &o) {
        GpuCodegenOptions gpu;
        gpu.blockSize = o.blockSize;
        gpu.reductionThreads = o.reductionThreads;
        buildLowerToGpuKernelsPipeline(pm, o.fuse, gpu);
      });
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
