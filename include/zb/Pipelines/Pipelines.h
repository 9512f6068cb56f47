//===- Pipelines.h - named zb pass pipelines --------------------*- C++ -*-===//
#ifndef ZB_PIPELINES_PIPELINES_H
#define ZB_PIPELINES_PIPELINES_H

#include "zb/Formats/Options.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "zb/Target/CUDA/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <functional>
#include <string>

namespace zb {

/// The parser of a pass-pipeline option over one of zb's named enums: the
/// text is parsed and printed by the enum's own functions (Target,
/// Precision: zb/Formats/Options.h; sched::ScheduleKind:
/// zb/Schedule/Registry.h; sched::OptimizerSync: zb/Schedule/
/// OptimizerSync.h), so a pipeline's text form ("schedule=zb-h1") is the
/// flags' and the names live in one list each. A bad name is the parser's
/// error ("must be cpu, cuda, cuda-emu or h100, got 'tpu'").
template <typename T, llvm::Expected<T> (*Parse)(llvm::StringRef),
          llvm::StringRef (*Name)(T)>
struct NamedEnumParser : public llvm::cl::parser<T> {
  using llvm::cl::parser<T>::parser;
  /// Hides cl::parser<T>'s lookup in a cl::values list (there is none).
  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef arg,
             T &value) {
    llvm::Expected<T> parsed = Parse(arg);
    if (!parsed)
      return option.error(llvm::toString(parsed.takeError()));
    value = *parsed;
    return false;
  }
  /// How mlir::PassOptions prints the value (the pipeline's text form).
  static void print(llvm::raw_ostream &os, T value) { os << Name(value); }
};

using TargetParser = NamedEnumParser<Target, parseTarget, targetName>;
using PrecisionParser =
    NamedEnumParser<Precision, parsePrecision, precisionName>;
using ScheduleKindParser =
    NamedEnumParser<sched::ScheduleKind, sched::parseScheduleKind,
                    sched::scheduleName>;
using OptimizerSyncParser =
    NamedEnumParser<sched::OptimizerSync, sched::parseOptimizerSync,
                    sched::optimizerSyncName>;

/// Options of the compiler front half (docs/design.md: autodiff to per-rank
/// step functions).
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<int64_t> numStages{*this, "num-stages",
                            llvm::cl::desc("Pipeline stages (= ranks)"),
                            llvm::cl::init(2)};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Chunks per rank (V > 1 for 1f1b-i and the V family)"),
      llvm::cl::init(1)};
  Option<int64_t> microbatches{*this, "microbatches",
                               llvm::cl::desc("Microbatches per step"),
                               llvm::cl::init(8)};
  Option<sched::ScheduleKind, ScheduleKindParser> schedule{
      *this, "schedule",
      llvm::cl::desc("Schedule name (zb/Schedule/Registry.h)"),
      llvm::cl::init(sched::ScheduleKind::ZBH1)};
  ListOption<double> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("Activation memory limit in bytes: one value for every "
                     "rank or one per rank (0: none)")};
  Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("zb-run --profile JSON: schedule with measured costs"),
      llvm::cl::init("")};
  Option<Target, TargetParser> target{
      *this, "target", llvm::cl::desc("Cost model target: cpu | h100"),
      llvm::cl::init(Target::Cpu)};
  Option<std::string> scheduleFile{
      *this, "schedule-file",
      llvm::cl::desc("A schedule from a file (PyTorch CSV or zb JSON) "
                     "instead of --schedule's (zb-schedule)"),
      llvm::cl::init("")};
  Option<Precision, PrecisionParser> precision{
      *this, "precision",
      llvm::cl::desc("fp32 | bf16: bf16 runs zb-autocast (torch.autocast's "
                     "bfloat16 policy) before zb-autodiff"),
      llvm::cl::init(Precision::Fp32)};
  Option<sched::OptimizerSync, OptimizerSyncParser> optimizerSync{
      *this, "optimizer-sync",
      llvm::cl::desc("none | post-validation: the rank programs validate the "
                     "previous optimizer step where the schedule expects the "
                     "fully reduced state (zb-schedule)"),
      llvm::cl::init(sched::OptimizerSync::None)};
  Option<int64_t> dpBucketBytes{
      *this, "dp-bucket-bytes",
      llvm::cl::desc("Least gradient bytes per data-parallel all-reduce "
                     "bucket of a stage's last W (zb-cluster-weight-"
                     "gradients; 0: one per independent group)"),
      llvm::cl::init(4 << 20)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Run zb-fuse-attention before zb-autocast and "
                     "zb-autodiff"),
      llvm::cl::init(false)};
  Option<bool> attentionViews{
      *this, "attention-views",
      llvm::cl::desc("zb-split-backward rebuild-attention-views: B rebuilds "
                     "the head views that bfloat16 attention gradients read "
                     "(for the GPU attention kernels)"),
      llvm::cl::init(false)};
  Option<bool> fuseCrossEntropy{
      *this, "fuse-cross-entropy",
      llvm::cl::desc("Run zb-fuse-cross-entropy after zb-autocast, before "
                     "zb-autodiff"),
      llvm::cl::init(false)};
};

/// [zb-fuse-attention,] [zb-autocast,] [zb-fuse-cross-entropy,] zb-autodiff, zb-split-backward, zb-partition-stages, zb-schedule,
/// zb-lower-pipeline: from the imported forward-and-loss function to per-rank
/// step functions (buildPartitionPipeline, then buildSchedulePipeline).
void buildPipelineParallelPipeline(mlir::OpPassManager &pm,
                                   const PipelineOptions &options);
/// Its first half, zb-autodiff, zb-split-backward, zb-partition-stages:
/// the stage functions and `zb.pipeline` with the cost model's costs
/// (zb-compile replaces them here by measured or GPU-kernel costs:
/// zb::applyStageCosts).
void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PipelineOptions &options);
/// Its second half, zb-schedule and zb-lower-pipeline. `fileSchedule`: a
/// schedule the caller parsed from options.scheduleFile (zb-compile
/// --schedule-file; zb::createZBSchedule), else the schedule pass builds
/// options.schedule (or reads options.scheduleFile itself, for zb-opt).
void buildSchedulePipeline(mlir::OpPassManager &pm,
                           const PipelineOptions &options,
                           const sched::Schedule *fileSchedule = nullptr);

/// From linalg/arith/math/tensor (and memref runtime calls) on tensors to
/// the LLVM dialect: one-shot bufferization across function boundaries with
/// identity layouts, ownership-based deallocation, loops, LLVM.
/// `runtimeAllocator`: heap buffers come from the zb runtime's memory pool
/// (memref allocations call `_mlir_memref_to_llvm_alloc` /
/// `_mlir_memref_to_llvm_free`, defined by libzbrt, instead of malloc/free);
/// the program then runs only with libzbrt loaded.
void buildTensorsToLLVMPipeline(mlir::OpPassManager &pm,
                                bool runtimeAllocator = false,
                                const struct GpuCodegenOptions *gpu = nullptr);

/// From per-rank step functions on zb tensors to the LLVM dialect: runtime
/// calls (OpenBLAS, MPI), linalg, one-shot bufferization with
/// ownership-based deallocation, loops, LLVM, and the zb_rank_main entry.
/// Heap buffers come from the runtime's memory pool (runtime/include/zbrt/zbrt.h,
/// zbrt_pool_stats).
/// `fuseElementwise` fuses elementwise linalg.generic producers into their
/// single consumer before bufferization (bit-identical results).
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm,
                              bool fuseElementwise = true,
                              const struct GpuCodegenOptions *gpu = nullptr);

/// Code generation for NVIDIA GPUs (zb-compile --target cuda). After
/// bufferization: reductions whose innermost loop is a reduction become
/// block-parallel kernels (zb-gpu-map-reductions: one block per output
/// element, `reductionThreads` threads, gpu.all_reduce); the other linalg
/// ops become parallel loops, flattened to one dimension
/// (zb-gpu-flatten-parallel-loops: consecutive threads on consecutive
/// innermost elements), tiled by `blockSize` and mapped to blocks and
/// threads; kernels are outlined into gpu.func (gpu-kernel-outlining). Then
/// either (`emulate`, zb-compile --target cuda-emu) the kernels become host
/// loops with GPU semantics (zb-gpu-emulate: a CPU program that checks the
/// kernels), or they are made asynchronous (gpu-async-region: the host waits
/// before any host-side memory access or call, e.g. the runtime's GEMM and
/// MPI calls), lowered to NVVM and compiled to a fatbin for `chip` with the
/// toolkit at `toolkit` (ptxas, libdevice), embedded in the host code, which
/// calls the mgpu* functions of libzbrt (runtime/include/zbrt/Mgpu.h).
/// Buffers come from the zbrt pool, which the CUDA backend of zb-run
/// allocates as managed memory (docs/toolchain.md, "GPU compilation").
struct GpuCodegenOptions {
  std::string chip = "sm_90";   ///< e.g. sm_80, sm_90
  std::string features = "+ptx80";
  std::string toolkit;          ///< CUDA toolkit root (bin/ptxas, nvvm/)
  int64_t blockSize = 256;      ///< threads per block of elementwise kernels
  /// Most threads of a block reduction (zb-gpu-map-reductions); 0: none,
  /// every reduction is one thread per output with a serial loop.
  int64_t reductionThreads = 256;
  bool emulate = false;         ///< kernels as host loops (no toolkit used)
  /// Eligible zb.attention and zb.attention_grad ops (bfloat16, no mask,
  /// head dims multiples of 16 up to 128) run as fused FlashAttention-2
  /// kernels on tensor cores (zb-gpu-attention-calls,
  /// zb-gpu-attention-kernels);
  /// false: every zb.attention is decomposed (zb-compile
  /// --gpu-attention-kernel=false).
  bool attentionKernels = true;
  /// The attention kernels read and write token-major tensors in place
  /// (zb-gpu-attention-calls token-major; zb-compile
  /// --gpu-attention-token-major).
  bool attentionTokenMajor = true;
  /// float32 zb.layer_norm and zb.rms_norm run as one kernel each, a warp
  /// per row (zb-gpu-norm-calls, zb-gpu-norm-kernels); false: decomposed
  /// (zb-compile --gpu-norm-kernel=false).
  bool normKernels = true;
  /// zb-gpu-report-kernels right after gpu-kernel-outlining hands the
  /// module's kernel launches and GEMMs to this callback (zb-compile
  /// --gpu-report, --gpu-costs); no report when empty.
  KernelReportCallback reportKernels;
  /// The report counts every stage function once (a module before
  /// zb-lower-pipeline, for --gpu-costs), not a step function's calls.
  bool reportEveryStageFunction = false;
};

/// The CUDA target up to outlined kernels (before emulation or NVVM):
/// runtime calls, linalg, optional fusion, bufferization, block
/// reductions, flattened tiled parallel loops, gpu-kernel-outlining. zb-opt
/// registers it as "zb-lower-to-gpu-kernels{block-size=256
/// reduction-threads=256 fuse-elementwise=true}".
void buildLowerToGpuKernelsPipeline(mlir::OpPassManager &pm,
                                    bool fuseElementwise,
                                    const GpuCodegenOptions &gpu);

/// Registers "zb-pipeline-parallel" and "zb-lower-to-llvm" for zb-opt.
void registerPipelines();

} // namespace zb

#endif // ZB_PIPELINES_PIPELINES_H
