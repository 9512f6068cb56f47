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
// rank<R>.llvm.mlir and rank<R>.o. compile() holds the directory's lock
// (DIR/.zb-lock) while it runs, builds in DIR/.zb-build-XXXXXX and moves
// the finished plan into DIR at the end: a failed compile leaves DIR as it
// was (lib/Driver/Phases.h, OutputDirectory).
//
// Errors: MLIR phases return LogicalResult and report through the context's
// diagnostic handler; file and option errors are llvm::Error with the message
// zb-compile prints after "zb-compile: error: ".
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DRIVER_DRIVER_H
#define ZB_DRIVER_DRIVER_H

#include "zb/Target/CUDA/CudaOptions.h"
#include "zb/Target/CUDA/KernelReport.h"
#include "zb/Schedule/DataParallel.h"
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
  /// Directions of the schedule (sched::Schedule::directions): 2 for
  /// dualpipe or a --schedule-file schedule with two, else 1.
  int64_t directions() const {
    return scheduleFile.empty() ? sched::scheduleDirections(schedule)
                                : fileDirections;
  }
  /// Chunks per rank of the partitioned model: chunks() / directions()
  /// (dualpipe's two chunks per rank are two model stages' copies, so the
  /// model has P stages).
  int64_t partitionChunks() const {
    return std::max<int64_t>(1, chunks() / directions());
  }
  /// The directions of the --schedule-file schedule (set when it is read).
  int64_t fileDirections = 1;
  /// The most microbatches zb-compile accepts: every microbatch's passes are
  /// unrolled into each rank program (512 take about 50 s and 2 GB for
  /// the GPT-2 example on 2 cores: benchmarks/README.md).
  static constexpr int64_t kMaxMicrobatches = 512;
  /// Microbatches per training step M (--microbatches), 1 .. 512.
  int64_t microbatches = 8;
  /// D: data-parallel copies of the pipeline (--data-parallel), 1 ..
  /// limits::kMaxDataParallel. zb-run then runs D x P ranks, pipeline d on
  /// microbatches d*M .. d*M+M-1 of the step's D*M (plan.json
  /// "data_parallel"; zb/Runner/Layout.h). The rank programs do not depend
  /// on it.
  int64_t dataParallel = 1;
  /// The all-reduce model of the prediction with D > 1
  /// (zb/Schedule/DataParallel.h): bus bandwidth in GB/s (--dp-bandwidth,
  /// > 0) and latency per all-reduce in ms (--dp-latency, >= 0).
  double dpBandwidthGBps = 100;
  double dpLatencyMs = 0.02;
  /// The least gradient bytes of one all-reduce bucket announced inside a
  /// stage's last W (--dp-bucket-bytes, >= 0; 0 = every independent group
  /// of gradients alone, the Zero Bubble paper's Appendix A per parameter):
  /// zb-cluster-weight-gradients' bucket-bytes. Like PyTorch DDP's
  /// bucket_cap_mb, it trades the overlap for fewer, larger all-reduces.
  int64_t dpBucketBytes = 4 << 20;
  /// The schedule (--schedule; zb/Schedule/Registry.h).
  sched::ScheduleKind schedule = sched::ScheduleKind::ZBH1;
  /// With --schedule-file: the file's schedule name (the JSON's "name",
  /// else the file name), set by compile() when it reads the file.
  std::string fileScheduleName;
  /// The plan's name of its schedule (plan.json "schedule"): `schedule`'s
  /// name, or "file:<fileScheduleName>" with --schedule-file.
  std::string scheduleName() const {
    return scheduleFile.empty() ? sched::scheduleName(schedule).str()
                                : "file:" + fileScheduleName;
  }
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
  /// costs), cuda (GPU kernels for cuda.arch, H100 roofline costs; runs under
  /// `zb-run --backend cuda`), cuda-emu (the kernels of cuda run on the CPU
  /// by emulation with GPU semantics, zb-gpu-emulate: a check of the kernels
  /// that zb-run runs on the CPU backend; H100 costs, so the same schedule
  /// as cuda) or h100 (CPU code scheduled with H100 costs).
  Target target = Target::Cpu;
  /// The CUDA target's flags (--gpu-arch, --allow-tf32, --gpu-launch-us,
  /// --gpu-block-size, --gpu-reduction-threads, --gpu-report, --cuda-path,
  /// --gpu-costs; zb/Target/CUDA/CudaOptions.h), checked by
  /// validateCudaOptions for `target`.
  CudaOptions cuda;
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
  /// Fuse the imported attention (matmul, scale, mask, softmax, matmul)
  /// into zb.attention before autodiff (zb-fuse-attention): the backward
  /// pass recomputes the probabilities from the saved log-sum-exp instead
  /// of keeping them (--fuse-attention).
  bool fuseAttention = true;
  /// Keep each cross-entropy's log-sum-exp for its gradient and read the
  /// logits in the precision they were computed in (zb-fuse-cross-entropy):
  /// the backward pass computes exp(logits - lse) - one_hot in one pass,
  /// and a bfloat16 model keeps its bfloat16 logits, not a float32 copy,
  /// between F and B (--fuse-cross-entropy).
  bool fuseCrossEntropy = true;
  /// MLIR pass timing reports on stderr and CompileCallbacks::phaseTime
  /// calls (--timing).
  bool timing = false;
};

/// How compile() reports. Every member may be empty.
struct CompileCallbacks {
  /// One progress line ("importing MODEL", "rank 0/2: lowering to LLVM").
  std::function<void(llvm::StringRef message)> progress;
  /// With CompileOptions::cuda.report: the report's table (as written to
  /// gpu_report.txt).
  std::function<void(llvm::StringRef table)> gpuReport;
  /// With CompileOptions::timing: the wall time of a phase, in seconds.
  std::function<void(llvm::StringRef phase, double seconds)> phaseTime;
  /// Every diagnostic (errors, warnings, notes). Empty: printDiagnostic on
  /// llvm::errs().
  std::function<void(mlir::Diagnostic &diagnostic)> diagnostic;
};

/// Checks ranges: P, V, M >= 1, the opt level (0-3), the optimizer sync
/// (not all-reduce), the CUDA options. Returns the first problem
/// ("--stages must be >= 1, got 0").
llvm::Error validateOptions(const CompileOptions &options);

/// The text forms of --target, --optimizer, --optimizer-sync, --precision
/// and --schedule (zb-compile's flags, the Python binding's arguments)
/// parsed into `options` with the parsers of zb/Formats/Options.h and
/// zb/Schedule/Registry.h. Errors name the flag: "--target must be cpu,
/// cuda, cuda-emu or h100, got 'tpu'", "--optimizer must be sgd or adamw,
/// got 'adam'", "--optimizer-sync must be post-validation or none, got 'x'",
/// "--precision must be fp32 or bf16, got 'fp16'", "unknown --schedule
/// 'x'" (not an error with --schedule-file, whose schedule replaces it).
llvm::Error parseTextOptions(CompileOptions &options, llvm::StringRef target,
                             llvm::StringRef optimizer,
                             llvm::StringRef optimizerSync,
                             llvm::StringRef precision = "fp32",
                             llvm::StringRef schedule = "zb-h1");

/// Runs every phase as zb-compile does and writes the outputs. Creates its
/// own MLIRContext. Every error is reported once, as a diagnostic (errors
/// that have no location have UnknownLoc); returns failure() after one.
mlir::LogicalResult compile(const CompileOptions &options,
                            const CompileCallbacks &callbacks = {});

/// For zb-compile (a process of its own; not for the Python package): a
/// SIGINT, SIGTERM or SIGHUP during compile() removes its build directory
/// (DIR/.zb-build-XXXXXX) and releases DIR's lock before the signal ends
/// the process, leaving DIR as it was. Installs the signal handlers once.
void removeBuildOnInterrupt();
/// What the interrupt handler does, now: the build directory and the lock
/// file of the compile in progress are removed (zb-compile's handler of
/// LLVM's fatal errors, zb/Support/FatalErrors.h).
void removeBuildNow();

/// Prints `file[:line:col]: error: message` (or `tool: error: message`
/// when the location names no file), adding "(node 'N')" when the location
/// names a model node the message does not mention; then its notes.
void printDiagnostic(mlir::Diagnostic &diagnostic, llvm::raw_ostream &os,
                     llvm::StringRef tool = "zb-compile");

//===----------------------------------------------------------------------===//
// Phases the tests and the Python package call on their own
//===----------------------------------------------------------------------===//

/// A context with registerDialects (dialects loaded on demand).
std::unique_ptr<mlir::MLIRContext> createContext();
/// Initialises the host target and its assembly printer (once per process;
/// thread-safe).
void initializeNativeTarget();

/// The same for model text in memory (StableHLO or zb .mlir); `bufferName`
/// names it in diagnostics.
mlir::OwningOpRef<mlir::ModuleOp>
parseModel(llvm::StringRef source, mlir::MLIRContext *context,
           llvm::StringRef bufferName = "<model>");

/// The zb-pipeline-parallel pipeline (zb-autodiff, zb-split-backward,
/// zb-partition-stages, zb-schedule, zb-lower-pipeline; docs/design.md)
/// with the options' P, V, M, schedule (or --schedule-file), memory limit,
/// target and profile: partitionModel, readProfileCosts + applyStageCosts,
/// scheduleModel. compile() runs the phases itself (with --gpu-costs
/// between them). Errors are diagnostics on `module`.
mlir::LogicalResult runFrontHalf(mlir::ModuleOp module,
                                 const CompileOptions &options);

/// One argument of a rank's step function (docs/plan-json.md, "args").
struct RankArg {
  /// "param", "grad", "input" or "loss".
  std::string kind;
  /// Position in PipelineInfo::params (param, grad) or ::inputs (input);
  /// none for loss.
  std::optional<int64_t> index;
};

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
  /// The problem of the model's stages once each (PipelineInfo::toProblem
  /// before withRoutes): what other schedules are compared on. The same as
  /// `problem` unless the schedule runs two directions (dualpipe), whose
  /// `info` and `problem` hold every model stage once per direction.
  sched::Problem modelProblem;
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
  /// Per model stage: the all-reduce buckets its last W announces, in
  /// order, each the indices of the parameters whose gradients it holds
  /// (zb-cluster-weight-gradients' zb.weight_clusters); empty for a stage
  /// whose W is not split (one bucket at the W's end).
  std::vector<std::vector<std::vector<int64_t>>> weightBuckets;

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
  /// With --data-parallel D > 1: the step with the gradients' all-reduce
  /// (each stage's parameter bytes, on the stage of a parameter's first
  /// use; CompileOptions' bandwidth and latency).
  std::optional<sched::DataParallelTiming> dataParallel;
};

/// Predictions for 1f1b, zb-h1 and the plan's schedule (the schedule as
/// lowered, not built again); schedules that cannot be built for the
/// problem are left out. Fails when the jitter estimate fails ("--profile:
/// ...").
llvm::Expected<std::vector<Prediction>>
predictBubbleRates(const LoweredPipeline &pipeline,
                   const CompileOptions &options);

/// params.bin: every parameter in model order (PipelineInfo::params), f32
/// little-endian, row-major; sum of numElements x 4 bytes. Values from
/// `paramValues` (zb.param_values: name -> DenseElementsAttr) when given,
/// else uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) from a 64-bit Mersenne
/// twister seeded with `seed` (fan_in = the last dimension). Errors: a
/// parameter that is not f32, a value missing or of another type.
llvm::Error writeParams(llvm::StringRef path, const PipelineInfo &info,
                        mlir::DictionaryAttr paramValues, uint64_t seed);
} // namespace zb::driver

#endif // ZB_DRIVER_DRIVER_H
