//===- Driver.cpp - options, context, model loading, compile() ------------===//
#include "Phases.h"
#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Frontend/ONNX/ONNXImporter.h"
#include "zb/Frontend/StableHLO/StableHLOImporter.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Formats/Profile.h"
#include "zb/Support/Checksum.h"
#include "zb/Support/Limits.h"
#include "zbrt/Symbols.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

#include <cmath>
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <chrono>
#include <mutex>

using namespace mlir;

namespace zb::driver {

llvm::Error validateOptions(const CompileOptions &options) {
  auto error = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (options.numRanks < 1)
    return error("--stages must be >= 1, got " + llvm::Twine(options.numRanks));
  if (options.virtualStages < 0)
    return error("--virtual-stages must be >= 1, got " +
                 llvm::Twine(options.virtualStages));
  if (options.scheduleFile.empty() && options.directions() > 1 &&
      options.chunks() != 2)
    return error(llvm::formatv("--virtual-stages: {0} runs 2 chunks per "
                               "rank (one model stage per direction), got "
                               "{1}",
                               sched::scheduleName(options.schedule),
                               options.chunks())
                     .str());
  if (options.dataParallel < 1 ||
      options.dataParallel > limits::kMaxDataParallel)
    return error(llvm::formatv("--data-parallel must be in [1, {0}], got {1}",
                               limits::kMaxDataParallel, options.dataParallel)
                     .str());
  if (!(options.dpBandwidthGBps > 0) || !std::isfinite(options.dpBandwidthGBps))
    return error(llvm::formatv("--dp-bandwidth must be a finite number of "
                               "GB/s > 0, got {0}",
                               options.dpBandwidthGBps)
                     .str());
  if (options.dpBucketBytes < 0)
    return error(llvm::formatv("--dp-bucket-bytes must be >= 0 (bytes), got "
                               "{0}",
                               options.dpBucketBytes)
                     .str());
  if (!(options.dpLatencyMs >= 0) || !std::isfinite(options.dpLatencyMs))
    return error(llvm::formatv("--dp-latency must be a finite number of ms "
                               ">= 0, got {0}",
                               options.dpLatencyMs)
                     .str());
  if (options.microbatches < 1)
    return error("--microbatches must be >= 1, got " +
                 llvm::Twine(options.microbatches));
  if (options.microbatches > CompileOptions::kMaxMicrobatches)
    return error(llvm::formatv(
                     "--microbatches {0}: at most {1} (zb-compile unrolls "
                     "every microbatch's F, B and W into each rank program; "
                     "compile time and memory grow with them: 512 "
                     "microbatches of the GPT-2 example take about 50 s and "
                     "2 GB on 2 cores); use fewer, larger microbatches",
                     options.microbatches, CompileOptions::kMaxMicrobatches)
                     .str());
  if (options.maxOpsPerStage < 1)
    return error("--max-ops-per-stage must be >= 1, got " +
                 llvm::Twine(options.maxOpsPerStage));
  if (llvm::Expected<sched::OptimizerSync> sync = parseCompiledOptimizerSync(
          sched::optimizerSyncName(options.optimizerSync));
      !sync)
    return error("--optimizer-sync " + llvm::toString(sync.takeError()));
  if (!zb::formats::isValidLearningRate(options.learningRate))
    return error(llvm::formatv("--lr must be a finite float32 number > 0 "
                               "(at most 3.4e38), got {0}",
                               llvm::format("%g", options.learningRate))
                     .str());
  if (options.optLevel < 0 || options.optLevel > 3)
    return error("--opt-level must be 0, 1, 2 or 3, got " +
                 llvm::Twine(options.optLevel));
  if (llvm::Error error = validateCudaOptions(options.cuda, options.target))
    return error;
  return llvm::Error::success();
}

llvm::Error parseTextOptions(CompileOptions &options, llvm::StringRef target,
                             llvm::StringRef optimizer,
                             llvm::StringRef optimizerSync,
                             llvm::StringRef precision,
                             llvm::StringRef schedule) {
  auto named = [](llvm::StringRef flag, llvm::Error error) {
    return llvm::createStringError(flag + " " + llvm::toString(std::move(error)));
  };
  llvm::Expected<Target> t = parseTarget(target);
  if (!t)
    return named("--target", t.takeError());
  llvm::Expected<Optimizer> o = parseOptimizer(optimizer);
  if (!o)
    return named("--optimizer", o.takeError());
  llvm::Expected<sched::OptimizerSync> s =
      parseCompiledOptimizerSync(optimizerSync);
  if (!s)
    return named("--optimizer-sync", s.takeError());
  llvm::Expected<Precision> p = parsePrecision(precision);
  if (!p)
    return named("--precision", p.takeError());
  // With --schedule-file the file's schedule replaces --schedule's.
  llvm::Expected<sched::ScheduleKind> kind = sched::parseScheduleKind(schedule);
  if (!kind) {
    llvm::consumeError(kind.takeError());
    if (options.scheduleFile.empty())
      return llvm::createStringError("unknown --schedule '" + schedule + "'");
  } else {
    options.schedule = *kind;
  }
  options.target = *t;
  options.optimizer = *o;
  options.precision = *p;
  options.optimizerSync = *s;
  return llvm::Error::success();
}

void printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os,
                     llvm::StringRef tool) {
  std::string file, node;
  diag.getLocation()->walk([&](Location loc) {
    if (auto name = llvm::dyn_cast<NameLoc>(loc); name && node.empty())
      node = name.getName().str();
    if (auto f = llvm::dyn_cast<FileLineColLoc>(loc); f && file.empty()) {
      file = f.getFilename().str();
      if (f.getLine() != 0)
        file += llvm::formatv(":{0}:{1}", f.getLine(), f.getColumn()).str();
    }
    return WalkResult::advance();
  });
  os << (file.empty() ? tool.str() : file) << ": ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  default:
    os << "note: ";
  }
  std::string message = diag.str();
  os << message;
  if (!node.empty() && message.find(node) == std::string::npos)
    os << " (node '" << node << "')";
  os << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os, tool);
}

//===----------------------------------------------------------------------===//
// Context and model loading
//===----------------------------------------------------------------------===//

void registerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<zb::ZBDialect>();
  registerAllToLLVMIRTranslations(registry);
}

std::unique_ptr<MLIRContext> createContext() {
  DialectRegistry registry;
  registerDialects(registry);
  return std::make_unique<MLIRContext>(registry);
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// StableHLO text (a JAX export) goes through the StableHLO importer, any
/// other text is parsed as a zb-dialect module.
static OwningOpRef<ModuleOp>
parseModelBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                 MLIRContext *context,
                 llvm::ArrayRef<std::string> dataArgs = {}) {
  if (frontend::looksLikeStableHLO(buffer->getBuffer())) {
    frontend::StableHLOImportOptions options;
    options.dataArgs.assign(dataArgs.begin(), dataArgs.end());
    return frontend::importStableHLO(buffer->getMemBufferRef(), context,
                                     options);
  }
  if (!dataArgs.empty()) {
    emitError(FileLineColLoc::get(context,
                                  buffer->getBufferIdentifier(), 0, 0))
        << "--data-args applies to StableHLO models only (this is a zb "
           "dialect module; its arguments carry zb.param)";
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, context);
}

OwningOpRef<ModuleOp> loadModel(llvm::StringRef path, MLIRContext *context,
                                llvm::ArrayRef<std::string> dataArgs,
                                llvm::StringRef loss,
                                llvm::StringRef targets) {
  if (path.ends_with(".onnx")) {
    if (!dataArgs.empty()) {
      emitError(FileLineColLoc::get(context, path, 0, 0))
          << "--data-args applies to StableHLO models only (ONNX graph "
             "inputs are always data, initializers parameters)";
      return nullptr;
    }
    frontend::ImportOptions options;
    options.loss = loss.str();
    options.targets = targets.str();
    return frontend::importONNXFile(path, context, options);
  }
  if (!loss.empty() || !targets.empty()) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "--loss and --targets apply to ONNX models ending in logits (a "
           "StableHLO or zb module returns its loss)";
    return nullptr;
  }
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &error);
  if (!file) {
    emitError(UnknownLoc::get(context)) << error;
    return nullptr;
  }
  return parseModelBuffer(std::move(file), context, dataArgs);
}

OwningOpRef<ModuleOp> parseModel(llvm::StringRef source, MLIRContext *context,
                                 llvm::StringRef bufferName) {
  return parseModelBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), context);
}

//===----------------------------------------------------------------------===//
// compile()
//===----------------------------------------------------------------------===//

namespace {
using Clock = std::chrono::steady_clock;

/// One run of compile(): the context, the module and what the phases hand
/// on; each step reports its errors as diagnostics.
class Compilation {
public:
  Compilation(const CompileOptions &options, const CompileCallbacks &callbacks)
      : options(options), callbacks(callbacks), context(createContext()) {
    context->loadAllAvailableDialects();
    context->printOpOnDiagnostic(false);
  }

  LogicalResult run();

private:
  LogicalResult frontHalf();
  LogicalResult applyCosts();
  LogicalResult writeGpuCosts();
  LogicalResult writeArtifacts();
  LogicalResult backHalf();

  void progress(const llvm::Twine &message) const {
    if (callbacks.progress)
      callbacks.progress(message.str());
  }
  void phaseTime(const llvm::Twine &phase, Clock::time_point start) const {
    if (options.timing && callbacks.phaseTime)
      callbacks.phaseTime(
          phase.str(),
          std::chrono::duration<double>(Clock::now() - start).count());
  }
  /// Reports `error` (a driver error without location) as a diagnostic.
  LogicalResult report(llvm::Error error) const {
    emitError(UnknownLoc::get(context.get()))
        << llvm::toString(std::move(error));
    return failure();
  }
  /// A file of the build directory (options.outputDir, once open).
  std::string path(llvm::StringRef name) const {
    return outputPath(options, name);
  }
  /// Where the file `name` will be once the plan is in place (for
  /// messages).
  std::string finalPath(llvm::StringRef name) const {
    llvm::SmallString<256> p(outputDir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

  /// A copy: --schedule-file resolves into it, and its outputDir is the
  /// build directory of `output` while the phases run.
  CompileOptions options;
  /// -o DIR (options.outputDir as given).
  std::string outputDir;
  /// DIR, locked, with the build directory the phases write into.
  std::unique_ptr<OutputDirectory> output;
  /// --schedule-file's schedule, read once (resolveScheduleFile).
  std::optional<sched::Schedule> fileSchedule;
  /// --gpu-costs: the stages' kernel costs the schedule was built with.
  std::optional<std::vector<StageCostOverride>> gpuCosts;
  const CompileCallbacks &callbacks;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  /// zb.param_values of the imported model (data, not IR to transform).
  DictionaryAttr paramValues;
  std::optional<LoweredPipeline> pipeline;
  std::vector<Prediction> predictions;
  /// plan.json's document (built after the artifacts, before the back half).
  std::optional<formats::Plan> plan;
};
} // namespace

LogicalResult Compilation::run() {
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    if (callbacks.diagnostic)
      callbacks.diagnostic(diag);
    else
      printDiagnostic(diag, llvm::errs());
    return success();
  });
  if (!options.scheduleFile.empty()) {
    llvm::Expected<sched::Schedule> schedule = resolveScheduleFile(options);
    if (!schedule)
      return report(schedule.takeError());
    fileSchedule = std::move(*schedule);
  }
  if (llvm::Error error = validateOptions(options))
    return report(std::move(error));
  // -o DIR: locked for this compile; the phases write into a build
  // directory in it, moved into DIR whole once the plan is complete.
  outputDir = options.outputDir;
  llvm::Expected<std::unique_ptr<OutputDirectory>> opened =
      OutputDirectory::open(outputDir);
  if (!opened)
    return report(opened.takeError());
  output = std::move(*opened);
  for (const std::string &note : output->openNotes())
    emitRemark(UnknownLoc::get(context.get())) << note;
  options.outputDir = output->buildDir();
  initializeNativeTarget();
  if (failed(frontHalf()) || failed(writeArtifacts()))
    return failure();
  // plan.json's document, once: the rank programs' fingerprints come from
  // it, and it is written last (a plan.json means the programs are there).
  llvm::Expected<formats::Plan> built = buildPlan(options, *pipeline, predictions);
  if (!built)
    return report(built.takeError());
  // What zb-run would refuse is refused now, before code generation, with
  // the model's names (zb/Support/Limits.h).
  if (llvm::Error error = formats::checkPlanLimits(*built))
    return report(std::move(error));
  plan = std::move(*built);
  // params.bin's checksum as written (read back), for zb-run to check.
  llvm::Expected<std::string> paramsSum =
      support::fileChecksum(path("params.bin"));
  if (!paramsSum)
    return report(paramsSum.takeError());
  plan->paramsChecksum = *paramsSum;
  if (failed(backHalf()))
    return failure();
  if (llvm::Error error = formats::writePlan(*plan, path("plan.json")))
    return report(std::move(error));
  if (llvm::Error error = output->commit())
    return report(std::move(error));
  progress("wrote " + outputDir + "/plan.json; run: zb-run " + outputDir +
           " --ranks " + llvm::Twine(pipeline->numRanks()));
  return success();
}

/// zb trains in float32 (parameters, gradients, optimizer state and the
/// runtime's buffers), or with --precision bf16 in bfloat16 and float32
/// (zb-autocast: bfloat16 parameters become float32 master weights): a model
/// that computes in another float type would run with its values
/// reinterpreted. The first argument (by its model name) or op with such a
/// type is an error. (The dialect itself also computes in float64: the
/// gradient checks use it.)
static LogicalResult checkFloatTypes(ModuleOp module, Precision precision) {
  auto other = [&](Type t) -> const char * {
    auto s = dyn_cast<ShapedType>(t);
    Type e = s ? s.getElementType() : t;
    if (!isa<FloatType>(e) || e.isF32() ||
        (e.isBF16() && precision == Precision::Bf16))
      return nullptr;
    return e.isF64() ? "float64" : e.isF16() ? "float16"
           : e.isBF16()         ? "bfloat16"
                                : "a float type other than float32";
  };
  // bfloat16 without --precision bf16 is one flag away; float64 and
  // float16 need another export.
  auto advice = [&](StringRef kind) -> std::string {
    if (kind == "bfloat16")
      return ": zb trains in float32 unless compiled with --precision bf16 "
             "(torch.autocast's bfloat16 policy, float32 master weights: "
             "bfloat16 models and casts train with it)";
    return std::string(precision == Precision::Bf16
                           ? ": zb trains in float32, or bfloat16 with "
                             "float32 master weights (--precision bf16)"
                           : ": zb trains in float32 only") +
           "; export the model in float32 (PyTorch: model.float(); JAX: "
           "leave jax_enable_x64 off, float32 parameters)";
  };
  WalkResult walk = module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto f = dyn_cast<func::FuncOp>(op)) {
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (const char *kind = other(f.getArgumentTypes()[i])) {
          auto name = f.getArgAttrOfType<StringAttr>(i, "zb.name");
          f.emitError("argument '")
              << (name ? name.getValue() : StringRef("#" + std::to_string(i)))
              << "' is " << kind << " (" << f.getArgumentTypes()[i] << ")"
              << advice(kind);
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    }
    for (Type t : op->getResultTypes())
      if (const char *kind = other(t)) {
        op->emitError("computes in ")
            << kind << " (" << t << ")" << advice(kind);
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Import, the front half, pipeline.mlir, and what the rest reads from it.
LogicalResult Compilation::frontHalf() {
  progress("importing " + options.inputFile);
  module = loadModel(options.inputFile, context.get(), options.dataArgs,
                     options.loss, options.targets);
  if (!module || failed(checkFloatTypes(*module, options.precision)))
    return failure();
  // The model's size, checked before the work that grows with it.
  int64_t numOps = 0;
  (*module)->walk([&](Operation *op) {
    if (!isa<ModuleOp, func::FuncOp, func::ReturnOp>(op))
      ++numOps;
  });
  const int64_t numStages = options.numRanks * options.chunks();
  if (numOps > options.maxOpsPerStage * numStages)
    return report(llvm::createStringError(llvm::formatv(
        "{0}: {1} operations on {2} stages, more than --max-ops-per-stage {3} "
        "per stage: zb-compile's rank programs grow with the stage and LLVM's "
        "back end is superlinear in function size (a 5,000-op chain on 2 "
        "stages compiles in about 50 s, 20,000 ops take many minutes and tens "
        "of GB); use more --stages, or raise --max-ops-per-stage to accept "
        "the compile time",
        options.inputFile, numOps, numStages, options.maxOpsPerStage)
                                              .str()));
  llvm::Expected<std::vector<std::string>> frozen =
      freezeParameters(*module, options);
  if (!frozen)
    return report(frozen.takeError());
  if (!frozen->empty())
    progress(llvm::formatv("frozen (constants, not trained): {0}",
                           llvm::join(*frozen, ", ")));
  if (auto buffers =
          (*module)->getAttrOfType<ArrayAttr>(frontend::kBuffersAttr)) {
    std::vector<std::string> names;
    for (auto name : buffers.getAsRange<StringAttr>())
      names.push_back(name.str());
    progress(llvm::formatv("buffers (constants, not trained): {0}",
                           llvm::join(names, ", ")));
  }
  paramValues =
      (*module)->getAttrOfType<DictionaryAttr>(frontend::kParamValuesAttr);
  progress(llvm::formatv("autodiff, B/W split, {0} stages on {1} ranks, "
                         "schedule {2} with {3} microbatches",
                         options.numRanks * options.chunks(),
                         options.numRanks, options.scheduleName(),
                         options.microbatches));
  auto start = Clock::now();
  if (failed(partitionModel(*module, options)) || failed(applyCosts()) ||
      failed(scheduleModel(*module, options,
                           fileSchedule ? &*fileSchedule : nullptr)))
    return failure();
  phaseTime("autodiff, split, partition, schedule, zb-lower-pipeline", start);
  (*module)->removeAttr(frontend::kParamValuesAttr);
  if (llvm::Error error = writeModule(path("pipeline.mlir"), *module))
    return report(std::move(error));
  FailureOr<LoweredPipeline> lowered = readPipeline(*module, options);
  if (failed(lowered))
    return failure();
  pipeline = std::move(*lowered);
  if (failed(writeGpuCosts()))
    return failure();
  int64_t elements = 0;
  for (const ModelValueInfo &p : pipeline->info.params)
    elements += p.type.getNumElements();
  progress(llvm::formatv("training {0} parameters ({1} elements)",
                         pipeline->info.params.size(), elements));
  return success();
}

/// The costs that replace the cost model's in zb.pipeline after
/// partitioning: --profile's, or with --gpu-costs (--target cuda/cuda-emu
/// without --profile or --schedule-file) the stage functions' kernels'
/// (gpuStageCosts: a copy of the module lowered to kernels, in memory).
LogicalResult Compilation::applyCosts() {
  if (!options.profile.empty()) {
    llvm::Expected<std::vector<StageCostOverride>> costs =
        readProfileCosts(options.profile);
    if (!costs)
      return report(costs.takeError());
    return applyStageCosts(*module, *costs,
                           "profile '" + options.profile + "'");
  }
  if (!options.gpuKernels() || !options.cuda.costs ||
      !options.scheduleFile.empty())
    return success();
  progress("GPU costs: lowering the stages to kernels to measure T_F, T_B, "
           "T_W (H100 roofline)");
  auto start = Clock::now();
  llvm::Expected<std::vector<StageCostOverride>> costs =
      gpuStageCosts(*module, options);
  if (!costs)
    return report(costs.takeError());
  phaseTime("GPU costs: the stages lowered to kernels", start);
  gpuCosts = std::move(*costs);
  return applyStageCosts(*module, *gpuCosts, "--gpu-costs");
}

/// gpu_costs.json (zb-run --profile's format): the --gpu-costs the plan was
/// scheduled with, per stage with its rank; an output only.
LogicalResult Compilation::writeGpuCosts() {
  if (!gpuCosts)
    return success();
  formats::Profile profile = gpuCostsProfile(
      *gpuCosts, pipeline->schedule.stageToRank, options.cuda.spec());
  std::string file = path("gpu_costs.json");
  if (llvm::Error error = formats::writeProfile(profile, file))
    return report(std::move(error));
  progress("GPU costs written to " + finalPath("gpu_costs.json") +
           "; scheduling with them");
  return success();
}

/// Predictions, schedule.json, schedule.svg, params.bin; the inputs'
/// element types are checked before the (slow) back half.
LogicalResult Compilation::writeArtifacts() {
  llvm::Expected<std::vector<Prediction>> predicted =
      predictBubbleRates(*pipeline, options);
  if (!predicted)
    return report(predicted.takeError());
  predictions = std::move(*predicted);
  for (const Prediction &p : predictions) {
    std::string line = llvm::formatv("predicted bubble rate {0,-6}: {1:f4}",
                                     p.schedule, p.simulation.bubbleRate);
    if (p.jitter)
      line += llvm::formatv(" (with the measured jitter: {0:f4})",
                            p.jitter->bubbleRate);
    if (p.dataParallel)
      line += llvm::formatv(
          "; x{0} data-parallel: step {1:f3} ms, {2:f3} ms of all-reduce "
          "exposed ({3:f3} ms after backward)",
          p.dataParallel->model.numReplicas,
          p.dataParallel->overlapped.stepTime,
          p.dataParallel->overlapped.exposed,
          p.dataParallel->afterBackward.exposed);
    progress(line);
  }
  if (llvm::Error error = writeScheduleJSON(path("schedule.json"), *pipeline))
    return report(std::move(error));
  if (llvm::Error error = writeScheduleSVG(path("schedule.svg"), *pipeline))
    return report(std::move(error));
  if (llvm::Error error = writeParams(path("params.bin"), pipeline->info,
                                      paramValues, options.initSeed))
    return report(std::move(error));
  for (const ModelValueInfo &input : pipeline->info.inputs)
    if (llvm::Expected<std::string> dtype = inputDType(input); !dtype)
      return report(dtype.takeError());
  return success();
}

/// One native program per rank: MLIR lowering and translation to LLVM IR
/// one rank after the other (one MLIRContext), then LLVM optimisation, code
/// generation and linking of all ranks in parallel (one LLVMContext each).
LogicalResult Compilation::backHalf() {
  int64_t numRanks = pipeline->numRanks();
  std::vector<RankLLVMModule> llvmModules;
  std::vector<std::vector<GpuKernelLaunch>> kernels(numRanks);
  for (int64_t r = 0; r < numRanks; ++r) {
    progress(llvm::formatv("rank {0}/{1}: lowering to LLVM", r, numRanks));
    auto start = Clock::now();
    FailureOr<OwningOpRef<ModuleOp>> rankModule = lowerRankToLLVM(
        *module, r, options, options.cuda.report ? &kernels[r] : nullptr);
    if (failed(rankModule))
      return report(llvm::createStringError(
          llvm::formatv("lowering rank {0} failed", r).str()));
    phaseTime(llvm::formatv("rank {0}: MLIR lowering to the LLVM dialect", r),
              start);
    if (options.keepIntermediates)
      if (llvm::Error error = writeModule(
              path(llvm::formatv("rank{0}.llvm.mlir", r).str()), **rankModule))
        return report(std::move(error));
    start = Clock::now();
    llvm::Expected<RankLLVMModule> llvmModule = translateToLLVMIR(**rankModule);
    if (!llvmModule)
      return report(llvm::createStringError(
          llvm::formatv("rank {0}: {1}", r,
                        llvm::toString(llvmModule.takeError()))
              .str()));
    // What the program was compiled for (zb-run checks it against
    // plan.json): zb_rank_fingerprint, a NUL-terminated JSON string.
    llvm::Module &m = *llvmModule->module;
    auto *text = llvm::ConstantDataArray::getString(
        m.getContext(), formats::rankFingerprint(*plan, (int32_t)r));
    new llvm::GlobalVariable(m, text->getType(), /*isConstant=*/true,
                             llvm::GlobalValue::ExternalLinkage, text,
                             zbrt::symbols::RankFingerprint);
    llvmModules.push_back(std::move(*llvmModule));
    phaseTime(llvm::formatv("rank {0}: translation to LLVM IR", r), start);
  }
  if (options.cuda.report) {
    llvm::Expected<std::string> table = writeGpuReport(options, kernels);
    if (!table)
      return report(table.takeError());
    progress("GPU report: " + finalPath("gpu_report.txt"));
    if (callbacks.gpuReport)
      callbacks.gpuReport(*table);
  }
  auto start = Clock::now();
  if (llvm::Error error = emitRankLibraries(llvmModules, options, callbacks))
    return report(std::move(error));
  phaseTime("all ranks: LLVM optimisation, code generation and linking (wall)",
            start);
  return success();
}

LogicalResult compile(const CompileOptions &options,
                      const CompileCallbacks &callbacks) {
  return Compilation(options, callbacks).run();
}

} // namespace zb::driver
