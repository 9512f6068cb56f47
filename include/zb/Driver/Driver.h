//===- Driver.h - the zb compiler as a library ------------------*- C++ -*-===//
//
// The phases of zb-compile as functions (the shape of CIRCT's lib/Firtool):
// options in a struct, then
//
//   loadModel -> partitionModel -> [stage costs] -> scheduleModel
//             -> readPipeline -> artifact writers
//             -> lowerRankToLLVM -> translateToLLVMIR -> emitObject/linkShared
//
// and compile(), which runs them all as zb-compile does. zb-compile, the
// gradient-check unit tests and the Python binding call this library.
//
// Outputs of compile() in CompileOptions::outputDir (docs/plan-json.md):
// plan.json, params.bin, rank<R>.so (entry `zb_rank_main`), pipeline.mlir
// (the IR after zb-lower-pipeline), schedule.json ("zb-schedule" format,
// docs/schedule-json.md), schedule.svg; with keepIntermediates also
// rank<R>.llvm.mlir and rank<R>.o.
//
// Errors: MLIR phases return LogicalResult and report through the context's
// diagnostic handler; file and option errors are llvm::Error with the message
// zb-compile prints after "zb-compile: error: ".
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DRIVER_DRIVER_H
#define ZB_DRIVER_DRIVER_H

#include "zb/Target/CUDA/KernelReport.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "zb/Transforms/PipelineInfo.h"
#include "zb/Formats/Options.h"
#include "zb/Formats/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class MLIRContext;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace zb::driver {

/// Every option of zb-compile (the flag in brackets). --quiet is not here:
/// a caller that wants no progress messages passes no progress callback.
struct CompileOptions {
  /// The cost model of `target`: H100 for cuda and cuda-emu, else target
  /// itself.
  Target costTarget() const { return costModelTarget(target); }
  /// Whether the rank programs' compute is GPU kernels (cuda, or cuda-emu
  /// where they are emulated on the CPU).
  bool gpuKernels() const { return hasGpuKernels(target); }

  /// The model: ONNX (.onnx), JAX StableHLO text, or a zb-dialect .mlir
  /// module (positional argument).
  std::string inputFile;
  /// Directory of the outputs, created when missing (-o).
  std::string outputDir;
  /// Pipeline ranks P (--stages), >= 1. The model is cut into
  /// P x virtualStages stages.
  int64_t numRanks = 2;
  /// Chunks (virtual stages) per rank V (--virtual-stages), >= 1: 2 for
  /// zb-v, v-half, v-min; >= 2 for 1f1b-i. 0: the schedule's default
  /// (sched::defaultChunks: 2 for 1f1b-i and the V-shape schedules, else 1);
  /// see chunks().
  int64_t virtualStages = 0;
  int64_t chunks() const {
    return virtualStages > 0 ? virtualStages
                             : sched::defaultChunks(schedule);
  }
  /// The most microbatches zb-compile accepts: every microbatch's passes are
  /// unrolled into each rank program (512 take about 50 s and 2 GB for
  /// the GPT-2 example on 2 cores: benchmarks/README.md).
  static constexpr int64_t kMaxMicrobatches = 512;
  /// Microbatches per training step M (--microbatches), 1 .. 512.
  int64_t microbatches = 8;
  /// Schedule name, one of zb::sched::scheduleNames() (--schedule).
  std::string schedule = "zb-h1";
  /// --trainable / --frozen (glob patterns on parameter model names, e.g.
  /// "blocks.*.attn.*", "rope_*"): a parameter trains when it matches a
  /// --trainable pattern (or none is given) and no --frozen pattern; the
  /// others become constants with their values from the model file (ONNX
  /// initializers: buffers such as RoPE tables or masks must not train).
  /// A pattern that matches no parameter is an error listing them. Buffers
  /// the ONNX importer made constants (zb.buffers) may be named by --frozen
  /// (nothing to do); naming only buffers in --trainable is an error.
  std::vector<std::string> trainable, frozen;
  /// --schedule-file: a schedule from a file instead of `schedule`: the
  /// PyTorch pipelining CSV (compute actions, with or without communication,
  /// FSDP and OVERLAP_F_B actions) or zb's schedule JSON. compile() takes
  /// the ranks' chunk count V from it and names the plan's schedule
  /// "file:<name>"; it must have --stages rows/ranks and --microbatches
  /// microbatches, and verify against the pipeline's stages (errors name the
  /// rank and the action).
  std::string scheduleFile;
  /// Activation memory limit in bytes (--memory-limit): empty = none, one
  /// value for every rank, or one per rank (0 = none on that rank).
  std::vector<double> memoryLimits;
  /// StableHLO arguments that are batch inputs (--data-args): exact names
  /// or prefixes ending in '.' (integer arguments are always data).
  std::vector<std::string> dataArgs;
  /// ONNX models whose output is logits [N..., C] (--loss, --targets): the
  /// loss appended at import ("cross-entropy": the mean over N...) and the
  /// name of the integer targets [N...] (a graph input, or else a new data
  /// argument of that name after the graph inputs); see
  /// frontend::ImportOptions.
  std::string loss, targets;
  /// Target (--target; zb/Formats/Options.h): cpu (CPU code, CPU roofline
  /// costs), cuda (GPU kernels for gpuArch, H100 roofline costs; runs under
  /// `zb-run --backend cuda`), cuda-emu (the kernels of cuda run on the CPU
  /// by emulation with GPU semantics, zb-gpu-emulate: a check of the kernels
  /// that zb-run runs on the CPU backend; H100 costs, so the same schedule
  /// as cuda) or h100 (CPU code scheduled with H100 costs).
  Target target = Target::Cpu;
  /// GPU architecture of --target cuda (--gpu-arch), e.g. sm_80, sm_90.
  std::string gpuArch = "sm_90";
  /// --allow-tf32 (--target cuda/cuda-emu): the runtime's cuBLAS GEMMs may
  /// use TF32 tensor cores (plan.json `allow_tf32`); the GPU report then
  /// times GEMMs at the TF32 peak.
  bool allowTf32 = false;
  /// Microseconds added to every kernel launch and GEMM of the GPU report
  /// and of --gpu-costs (--gpu-launch-us; GpuSpec::launchSeconds; 0: the
  /// pure roofline).
  double gpuLaunchUs = 3.0;
  /// Threads per block of the elementwise kernels of --target cuda and
  /// cuda-emu (--gpu-block-size; 32 .. 1024, a multiple of 32).
  int64_t gpuBlockSize = 256;
  /// Most threads of a block reduction (--gpu-reduction-threads; a power of
  /// two 32 .. 1024, or 0: every reduction one thread per output with a
  /// serial loop, the CPU backend's arithmetic).
  int64_t gpuReductionThreads = 256;
  /// --gpu-report (--target cuda or cuda-emu): write gpu_report.json and
  /// gpu_report.txt (every kernel and GEMM of every rank program with its
  /// grid, block, bytes, FLOPs and H100 roofline time; T_F/T_B/T_W sums
  /// per stage; zb/Target/CUDA/KernelReport.h).
  bool gpuReport = false;
  /// CUDA toolkit root for --target cuda (--cuda-path); empty: the toolkit
  /// CMake found when zb was built (ZB_CUDA_TOOLKIT_ROOT).
  std::string cudaPath;
  /// --optimizer-sync: PostValidation (each rank program validates the
  /// previous step's optimizer step where the schedule expects the fully
  /// reduced state: the paper's Section 4; plan.json "optimizer_sync") or
  /// None (zb-run validates between steps); AllReduce is an error.
  sched::OptimizerSync optimizerSync = sched::OptimizerSync::PostValidation;
  /// --precision: Fp32, or Bf16 (torch.autocast's bfloat16 policy: the
  /// zb-autocast pass before autodiff; GEMMs on bfloat16 with float32
  /// accumulation, float32 master weights, gradients and optimizer;
  /// plan.json "precision").
  Precision precision = Precision::Fp32;
  /// Optimizer zb-run applies (--optimizer): sgd or adamw.
  Optimizer optimizer = Optimizer::Sgd;
  /// Learning rate (--lr).
  double learningRate = 0.05;
  /// zb-run's default training data: a directory of input_<i>.pb or a text
  /// file (--data). Empty: the `data` directory next to the model, if any.
  std::string dataDir;
  /// Seed of the parameter initialisation of models that store no parameter
  /// values (--init-seed).
  uint64_t initSeed = 0;
  /// Also write rank<R>.llvm.mlir and rank<R>.o (--keep-intermediates).
  bool keepIntermediates = false;
  /// `zb-run --profile` JSON: schedule with its measured per-stage
  /// T_F/T_B/T_W/T_comm (ms) instead of the cost model (--profile).
  std::string profile;
  /// --target cuda/cuda-emu without --profile or --schedule-file
  /// (--gpu-costs, default on): schedule with the GPU kernels' roofline
  /// T_F/T_B/T_W (zb/Target/CUDA/KernelReport.h: the sums of each pass's
  /// kernels and GEMMs on the H100) instead of the zb-level cost model.
  /// After partitioning, a copy of the stage functions is lowered to
  /// kernels in memory to measure them (gpuStageCosts), the model is
  /// scheduled and compiled with those costs, and they are written to
  /// OUTDIR/gpu_costs.json in zb-run --profile's format (an output only).
  bool gpuCosts = true;
  /// LLVM optimisation of the rank programs (--opt-level): 0 none, 1 scalar
  /// cleanups + loop vectoriser (kLightPipeline in Codegen.cpp), 2 or 3
  /// LLVM's -O2/-O3.
  int optLevel = 1;
  /// --max-ops-per-stage: the model may have at most this many operations
  /// per stage (forward and loss, as imported), checked up front: the rank
  /// programs grow with the stage and LLVM's back end is superlinear in
  /// function size (benchmarks/README.md, "Compile time").
  int64_t maxOpsPerStage = 4096;
  /// Rank programs optimised and emitted in parallel threads; 0 = the
  /// number of hardware threads (-j).
  unsigned jobs = 0;
  /// Fuse elementwise linalg chains before bufferization (bit-identical
  /// results) (--fuse-elementwise).
  bool fuseElementwise = true;
  /// MLIR pass timing reports on stderr and CompileCallbacks::phaseTime
  /// calls (--timing).
  bool timing = false;
};

/// How compile() reports. Every member may be empty.
struct CompileCallbacks {
  /// One progress line ("importing MODEL", "rank 0/2: lowering to LLVM").
  std::function<void(llvm::StringRef message)> progress;
  /// With CompileOptions::gpuReport: the report's table (as written to
  /// gpu_report.txt).
  std::function<void(llvm::StringRef table)> gpuReport;
  /// With CompileOptions::timing: the wall time of a phase, in seconds.
  std::function<void(llvm::StringRef phase, double seconds)> phaseTime;
  /// Every diagnostic (errors, warnings, notes). Empty: printDiagnostic on
  /// llvm::errs().
  std::function<void(mlir::Diagnostic &diagnostic)> diagnostic;
};

/// --trainable / --frozen on an imported module: every parameter of @main
/// that does not train becomes a zb.constant of its zb.param_values entry
/// (the argument is removed). Returns the frozen parameters' names; errors:
/// a bad or unmatched pattern (listing the parameters), a frozen parameter
/// without a value in the model file.
llvm::Expected<std::vector<std::string>>
freezeParameters(mlir::ModuleOp module, const CompileOptions &options);

/// Checks ranges and names: P, V, M >= 1, the schedule name, the opt level
/// (0-3), the optimizer sync (not all-reduce). Returns the first problem
/// ("--stages must be >= 1, got 0", "unknown --schedule 'x'").
llvm::Error validateOptions(const CompileOptions &options);

/// The text forms of --target, --optimizer, --optimizer-sync and --precision (zb-compile's
/// flags, the Python binding's arguments) parsed into `options` with the
/// parsers of zb/Formats/Options.h. Errors name the flag: "--target must be
/// cpu, cuda, cuda-emu or h100, got 'tpu'", "--optimizer must be sgd or
/// adamw, got 'adam'", "--optimizer-sync must be post-validation or none,
/// got 'x'", "--precision must be fp32 or bf16, got 'fp16'".
llvm::Error parseTextOptions(CompileOptions &options, llvm::StringRef target,
                             llvm::StringRef optimizer,
                             llvm::StringRef optimizerSync,
                             llvm::StringRef precision = "fp32");

/// The CUDA toolkit root of --target cuda: --cuda-path, else the toolkit
/// CMake found when zb was built; "" when neither.
std::string cudaToolkitRoot(const CompileOptions &options);

/// Runs every phase as zb-compile does and writes the outputs. Creates its
/// own MLIRContext. Every error is reported once, as a diagnostic (errors
/// that have no location have UnknownLoc); returns failure() after one.
mlir::LogicalResult compile(const CompileOptions &options,
                            const CompileCallbacks &callbacks = {});

/// Prints `file[:line:col]: error: message` (or `tool: error: message`
/// when the location names no file), adding "(node 'N')" when the location
/// names a model node the message does not mention; then its notes.
void printDiagnostic(mlir::Diagnostic &diagnostic, llvm::raw_ostream &os,
                     llvm::StringRef tool = "zb-compile");

//===----------------------------------------------------------------------===//
// Context and model loading
//===----------------------------------------------------------------------===//

/// Every upstream dialect and extension, the zb dialect, and the builtin and
/// LLVM translations to LLVM IR.
void registerDialects(mlir::DialectRegistry &registry);
/// A context with registerDialects (dialects loaded on demand).
std::unique_ptr<mlir::MLIRContext> createContext();
/// Initialises the host target and its assembly printer (once per process;
/// thread-safe).
void initializeNativeTarget();

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
/// The same for model text in memory (StableHLO or zb .mlir); `bufferName`
/// names it in diagnostics.
mlir::OwningOpRef<mlir::ModuleOp>
parseModel(llvm::StringRef source, mlir::MLIRContext *context,
           llvm::StringRef bufferName = "<model>");

//===----------------------------------------------------------------------===//
// Front half: autodiff to per-rank step functions
//===----------------------------------------------------------------------===//

/// The zb-pipeline-parallel pipeline (zb-autodiff, zb-split-backward,
/// zb-partition-stages, zb-schedule, zb-lower-pipeline; DESIGN.md steps 2-6)
/// with the options' P, V, M, schedule (or --schedule-file), memory limit,
/// target and profile: partitionModel, readProfileCosts + applyStageCosts,
/// scheduleModel. compile() runs the phases itself (with --gpu-costs
/// between them). Errors are diagnostics on `module`.
mlir::LogicalResult runFrontHalf(mlir::ModuleOp module,
                                 const CompileOptions &options);

/// zb-autodiff, zb-split-backward, zb-partition-stages (P x V stages, the
/// cost model of options.costTarget()): stage functions and zb.pipeline.
mlir::LogicalResult partitionModel(mlir::ModuleOp module,
                                   const CompileOptions &options);
/// zb-schedule and zb-lower-pipeline on a partitioned module, with
/// `fileSchedule` (--schedule-file's, from resolveScheduleFile) or else the
/// schedule named options.schedule.
mlir::LogicalResult scheduleModel(mlir::ModuleOp module,
                                  const CompileOptions &options,
                                  const sched::Schedule *fileSchedule = nullptr);

/// --schedule-file, read and parsed once: the schedule (a CSV one with
/// CostConvention::StageSpan), after the checks that need no model (ranks
/// versus --stages, microbatches versus --microbatches, chunks versus
/// --virtual-stages); sets options.virtualStages to the file's chunks and
/// options.schedule to "file:<name>" (the JSON's schedule name, else the
/// file name). Errors: "--schedule-file FILE: <why>".
llvm::Expected<sched::Schedule> resolveScheduleFile(CompileOptions &options);

/// --profile: the per-stage costs of a `zb-run --profile` file (entry i is
/// stage i; ms), read with zb/Formats/Profile.h. Errors: "profile 'FILE':
/// <why>".
llvm::Expected<std::vector<StageCostOverride>>
readProfileCosts(llvm::StringRef path);

/// --gpu-costs: the GPU kernels' costs of every stage of a partitioned
/// module, in memory: a copy lowered to kernels (zb-lower-to-gpu-kernels
/// with the options' block size and reduction threads), each pass's kernels
/// and GEMMs summed on gpuSpecOf(options) (T_F/T_B/T_W in ms per
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
/// The GPU the report and --gpu-costs price kernels on: an H100 SXM with
/// the options' TF32 (--allow-tf32) and launch overhead (--gpu-launch-us).
GpuSpec gpuSpecOf(const CompileOptions &options);

/// One argument of a rank's step function (docs/plan-json.md, "args").
struct RankArg {
  /// "param", "grad", "input" or "loss".
  std::string kind;
  /// Position in PipelineInfo::params (param, grad) or ::inputs (input);
  /// none for loss.
  std::optional<int64_t> index;
};

/// The arguments of a step function of zb-lower-pipeline, from its
/// zb.rank_args. Fails with an error on `step` when an entry names no
/// parameter or input of `info`. (The one reader of zb.rank_args.)
mlir::FailureOr<llvm::SmallVector<RankArg>>
readRankArgs(mlir::func::FuncOp step, const PipelineInfo &info);

/// What the back half and the artifact writers need from the module after
/// runFrontHalf.
struct LoweredPipeline {
  PipelineInfo info;
  /// The schedule as zb-lower-pipeline lowered it (zb.schedule).
  sched::Schedule schedule;
  int64_t numMicrobatches = 0;
  /// The scheduling problem of the model's costs (PipelineInfo::toProblem).
  sched::Problem problem;
  /// `schedule` simulated on `problem`.
  sched::SimResult simulation;
  /// Step function arguments, per rank.
  std::vector<llvm::SmallVector<RankArg>> rankArgs;
  /// Per rank: the messages its step function sends, in program order
  /// (zb-lower-pipeline's zb.channel_order; none when absent).
  std::vector<std::optional<std::vector<formats::SentMessage>>> rankSends;
  /// Batch input index -> the range its integer values must lie in (the
  /// rows of the table a zb.gather indexes, the classes of a
  /// zb.cross_entropy or zb.one_hot it feeds; the smallest over its uses).
  std::map<int64_t, int64_t> indexRanges;
  /// Batch input index -> the one value outside its range that every use
  /// accepts: the ignore_index of the zb.cross_entropy ops it feeds (torch's
  /// -100 labels), when it feeds nothing that indexes.
  std::map<int64_t, int64_t> indexIgnores;
  /// zb.schedule's validate_before (post-validation), empty without.
  llvm::SmallVector<int64_t> validateBefore;

  int64_t numRanks() const { return schedule.perRank.size(); }
};

/// Reads zb.pipeline, zb.schedule and the step functions' arguments; fails
/// with an error on the module.
mlir::FailureOr<LoweredPipeline> readPipeline(mlir::ModuleOp module,
                                              const CompileOptions &options);

/// The simulator's prediction for one schedule of the model's costs.
struct Prediction {
  std::string schedule;
  sched::SimResult simulation;
  /// With a profile that measured the pass-to-pass variation: the expected
  /// behaviour under it (estimateJitter: 400 samples, fixed seed).
  std::optional<sched::JitterEstimate> jitter;
};

/// Predictions for 1f1b, zb-h1 and the plan's schedule (the schedule as
/// lowered, not built again); schedules that cannot be built for the
/// problem are left out. Fails when the jitter estimate fails ("--profile:
/// ...").
llvm::Expected<std::vector<Prediction>>
predictBubbleRates(const LoweredPipeline &pipeline,
                   const CompileOptions &options);

//===----------------------------------------------------------------------===//
// Artifact writers (paths are files; errors name the file)
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
/// params.bin: every parameter in model order (PipelineInfo::params), f32
/// little-endian, row-major; sum of numElements x 4 bytes. Values from
/// `paramValues` (zb.param_values: name -> DenseElementsAttr) when given,
/// else uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) from a 64-bit Mersenne
/// twister seeded with `seed` (fan_in = the last dimension). Errors: a
/// parameter that is not f32, a value missing or of another type.
llvm::Error writeParams(llvm::StringRef path, const PipelineInfo &info,
                        mlir::DictionaryAttr paramValues, uint64_t seed);
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
// Back half: one native program per rank
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

#endif // ZB_DRIVER_DRIVER_H
