//===- Phases.h - zb-compile's phases, inside lib/Driver -------*- C++ -*-===//
//
// The phases compile() runs (Driver.cpp), one file each: the front half
// (FrontHalf.cpp: freezing, partitioning, costs, scheduling), the CUDA
// target's phases (Gpu.cpp: the kernels' costs before scheduling, the kernel
// report after lowering), the artifacts (Artifacts.cpp: plan.json,
// params.bin, the schedule's files), the back half (Codegen.cpp: per-rank
// lowering, LLVM IR, objects, linking). Internal to ZBDriver: tools, tests
// and the Python package use zb/Driver/Driver.h.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_DRIVER_PHASES_H
#define ZB_LIB_DRIVER_PHASES_H

#include "zb/Driver/Driver.h"
#include "zb/Formats/Profile.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Support/DirectoryLock.h"

namespace zb::driver {

//===----------------------------------------------------------------------===//
// Model loading and the front half (FrontHalf.cpp)
//===----------------------------------------------------------------------===//

/// Every upstream dialect and extension, the zb dialect, and the builtin and
/// LLVM translations to LLVM IR.
void registerDialects(mlir::DialectRegistry &registry);
/// Imports a model file: ONNX (by the .onnx extension), JAX StableHLO text,
/// or a zb-dialect .mlir module. `dataArgs`: StableHLO arguments (names or
/// prefixes ending in '.') that are batch inputs, not parameters (an error
/// for other formats, and when one names no argument). Returns null after
/// reporting the error (unreadable file, parse or import error) as a
/// diagnostic. `loss`/`targets` (ONNX models ending in logits; an error for
/// other formats) are CompileOptions::loss and ::targets.
mlir::OwningOpRef<mlir::ModuleOp>
loadModel(llvm::StringRef path, mlir::MLIRContext *context,
          llvm::ArrayRef<std::string> dataArgs = {}, llvm::StringRef loss = "",
          llvm::StringRef targets = "");
/// --trainable / --frozen on an imported module: every parameter of @main
/// that does not train becomes a zb.constant of its zb.param_values entry
/// (the argument is removed). Returns the frozen parameters' names; errors:
/// a bad or unmatched pattern (listing the parameters), a frozen parameter
/// without a value in the model file.
llvm::Expected<std::vector<std::string>>
freezeParameters(mlir::ModuleOp module, const CompileOptions &options);

/// zb-autodiff, zb-split-backward, zb-partition-stages (P x V stages, the
/// cost model of options.target: lookupCostTarget): stage functions and
/// zb.pipeline.
mlir::LogicalResult partitionModel(mlir::ModuleOp module,
                                   const CompileOptions &options);
/// zb-schedule and zb-lower-pipeline on a partitioned module, with
/// `fileSchedule` (--schedule-file's, from resolveScheduleFile) or else the
/// schedule of options.schedule.
mlir::LogicalResult scheduleModel(mlir::ModuleOp module,
                                  const CompileOptions &options,
                                  const sched::Schedule *fileSchedule = nullptr);

/// --schedule-file, read and parsed once: the schedule (a CSV one with
/// CostConvention::StageSpan), after the checks that need no model (ranks
/// versus --stages, microbatches versus --microbatches, chunks versus
/// --virtual-stages); sets options.virtualStages to the file's chunks and
/// options.fileScheduleName to the JSON's schedule name, else the file name
/// (the plan's schedule is then "file:<name>"). Errors: "--schedule-file FILE: <why>".
llvm::Expected<sched::Schedule> resolveScheduleFile(CompileOptions &options);

/// --profile: the per-stage costs of a `zb-run --profile` file (entry i is
/// stage i; ms), read with zb/Formats/Profile.h. Errors: "profile 'FILE':
/// <why>".
llvm::Expected<std::vector<StageCostOverride>>
readProfileCosts(llvm::StringRef path);


/// The arguments of a step function of zb-lower-pipeline, from its
/// zb.rank_args. Fails with an error on `step` when an entry names no
/// parameter or input of `info`. (The one reader of zb.rank_args.)
mlir::FailureOr<llvm::SmallVector<RankArg>>
readRankArgs(mlir::func::FuncOp step, const PipelineInfo &info);

//===----------------------------------------------------------------------===//
// The CUDA target's phases (Gpu.cpp)
//===----------------------------------------------------------------------===//

/// --gpu-costs: the GPU kernels' costs of every stage of a partitioned
/// module, in memory: a copy lowered to kernels (zb-lower-to-gpu-kernels
/// with the options' block size and reduction threads), each pass's kernels
/// and GEMMs summed on options.cuda.spec() (T_F/T_B/T_W in ms per
/// microbatch, roofline plus launch overheads: gpuStagePassSeconds); T_comm
/// stays the cost model's. Errors: a lowering failure (reported as
/// diagnostics first), a stage without kernels.
llvm::Expected<std::vector<StageCostOverride>>
gpuStageCosts(mlir::ModuleOp partitioned, const CompileOptions &options);
/// The kernel launches of every stage function of a partitioned module
/// (--target cuda/cuda-emu) after outlining, lowering a copy without the
/// rest of the back half (no NVVM, no fatbin); for gpuStageCosts.
mlir::LogicalResult collectStageKernels(mlir::ModuleOp partitioned,
                                        const CompileOptions &options,
                                        std::vector<GpuKernelLaunch> &kernels);

/// The GPU code generation options of the pass pipelines
/// (zb/Pipelines/Pipelines.h) from options.cuda and the target: the
/// architectures, the toolkit, emulation for cuda-emu, block size and
/// reduction threads.
GpuCodegenOptions gpuCodegenOptions(const CompileOptions &options);

/// gpu_costs.json's document (zb-run --profile's format, an output only):
/// the --gpu-costs the plan was scheduled with, stage s on stageToRank[s],
/// named after the GPU of `gpu`.
formats::Profile gpuCostsProfile(llvm::ArrayRef<StageCostOverride> costs,
                                 llvm::ArrayRef<int> stageToRank,
                                 const GpuSpec &gpu);

/// --gpu-report: writes DIR/gpu_report.json and DIR/gpu_report.txt for the
/// kernels of every rank (ranks[r]) priced on options.cuda.spec(); returns
/// the table (gpu_report.txt's text). Errors name the file.
llvm::Expected<std::string>
writeGpuReport(const CompileOptions &options,
               const std::vector<std::vector<GpuKernelLaunch>> &ranks);

//===----------------------------------------------------------------------===//
// The output directory (OutputDirectory.cpp)
//===----------------------------------------------------------------------===//

/// -o DIR for one compile. open() creates DIR when missing, takes its lock
/// for the whole compile (zb/Support/DirectoryLock.h: a second zb-compile
/// into DIR is refused, a stale lock taken over with a note), removes the
/// build directories of compiles that were killed, and makes a fresh one,
/// DIR/.zb-build-XXXXXX (buildDir(): on DIR's file system), that the
/// compile writes everything into. commit() moves the finished plan into
/// DIR: every file but plan.json, then the previous plan's files the new
/// one lacks (compile outputs only: zb-run's or the user's files stay) are
/// removed, then plan.json. Destroyed without a commit (a failed compile),
/// it removes the build directory and leaves DIR as it was, or removes DIR
/// when this compile created it. With removeBuildOnInterrupt, a SIGINT,
/// SIGTERM or SIGHUP removes the build directory and the lock file too.
class OutputDirectory {
public:
  static llvm::Expected<std::unique_ptr<OutputDirectory>>
  open(llvm::StringRef dir);
  ~OutputDirectory();

  const std::string &buildDir() const { return build; }
  /// What open() took over or removed (a stale lock, a killed compile's
  /// build directory), one line each.
  const std::vector<std::string> &openNotes() const { return notes; }
  /// Errors: "cannot move 'FROM' to 'TO': <reason> (...)".
  llvm::Error commit();

private:
  OutputDirectory() = default;
  std::unique_ptr<support::DirectoryLock> lock; ///< released last
  std::string dir, build;
  std::vector<std::string> notes;
};

//===----------------------------------------------------------------------===//
// Artifact writers (Artifacts.cpp; paths are files, errors name the file)
//===----------------------------------------------------------------------===//

/// DIR/<name>.
std::string outputPath(const CompileOptions &options, llvm::StringRef name);

/// The module as text (pipeline.mlir, rank<R>.llvm.mlir).
llvm::Error writeModule(llvm::StringRef path, mlir::ModuleOp module);

/// Writes `text` to `path` (atomically).
llvm::Error writeText(llvm::StringRef path, llvm::StringRef text);
/// The plan's schedule with the costs it was planned with, "zb-schedule"
/// JSON (include/zb/Schedule/IO.h); zb-run re-simulates it.
llvm::Error writeScheduleJSON(llvm::StringRef path,
                              const LoweredPipeline &pipeline);
/// The plan's schedule as a picture (zb::sched::writeSVG).
llvm::Error writeScheduleSVG(llvm::StringRef path,
                             const LoweredPipeline &pipeline);
/// The element type name zb-run feeds a graph input with: "float32",
/// "int64" or "int32"; an error naming the input otherwise.
llvm::Expected<std::string> inputDType(const ModelValueInfo &input);
/// The plan.json document (docs/plan-json.md), the contract with zb-run.
llvm::Expected<formats::Plan> buildPlan(const CompileOptions &options,
                                     const LoweredPipeline &pipeline,
                                     llvm::ArrayRef<Prediction> predictions);
/// buildPlan written to `path`.
llvm::Error writePlan(llvm::StringRef path, const CompileOptions &options,
                      const LoweredPipeline &pipeline,
                      llvm::ArrayRef<Prediction> predictions);

//===----------------------------------------------------------------------===//
// Back half: one native program per rank (Codegen.cpp)
//===----------------------------------------------------------------------===//

/// A copy of the pipeline module lowered to the LLVM dialect for `rank`:
/// zb-extract-rank{rank}, then zb-lower-to-llvm (runtime calls, linalg,
/// optional elementwise fusion, bufferization, loops, LLVM, the
/// zb_rank_main entry). Errors are reported as diagnostics.
/// With `kernels` (--target cuda/cuda-emu), the rank's kernel launches
/// after outlining (zb::collectGpuKernelLaunches) are stored there.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
lowerRankToLLVM(mlir::ModuleOp pipeline, int64_t rank,
                const CompileOptions &options,
                std::vector<GpuKernelLaunch> *kernels = nullptr);

/// One rank's LLVM IR with the context that owns it (declared first, so
/// that it outlives the module).
struct RankLLVMModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
};
/// Translates an LLVM-dialect module to LLVM IR in a context of its own;
/// error "translation to LLVM IR failed".
llvm::Expected<RankLLVMModule> translateToLLVMIR(mlir::ModuleOp module);

/// Optimises `module` at `optLevel` (0: none, 1: the light pipeline, 2/3:
/// LLVM's -O2/-O3) for the host CPU and writes a PIC object file to `path`.
/// Uses only the module's own LLVMContext: ranks may run it in parallel.
llvm::Error emitObject(llvm::Module &module, int optLevel,
                       llvm::StringRef path);
/// Writes a rank module as two objects: `path` with everything but the step
/// functions (`zb_rank<R>_step`), optimised at `optLevel` (emitObject), and
/// `stepPath` with the step functions, one basic block per action, compiled
/// without optimisation (their cost is then linear in the number of
/// actions). Returns the objects written, for linkShared (a module without
/// a step function writes only `path`).
llvm::Expected<std::vector<std::string>>
emitRankObjects(llvm::Module &module, int optLevel, llvm::StringRef path,
                llvm::StringRef stepPath);
/// Links `objects` into the shared library `library` with the system C
/// compiler (cc or gcc on PATH) and libm; written to a temporary file and
/// renamed.
llvm::Error linkShared(llvm::ArrayRef<std::string> objects,
                       llvm::StringRef library);
/// emitRankObjects + linkShared into DIR/rank<R>.so for every rank, `jobs` at a
/// time; removes rank<R>.o and rank<R>.step.o unless keepIntermediates; reports each rank's
/// time through `callbacks.phaseTime`. Error: "rank R: <why>" of the lowest
/// failing rank.
llvm::Error emitRankLibraries(std::vector<RankLLVMModule> &modules,
                              const CompileOptions &options,
                              const CompileCallbacks &callbacks);

} // namespace zb::driver

#endif // ZB_LIB_DRIVER_PHASES_H
