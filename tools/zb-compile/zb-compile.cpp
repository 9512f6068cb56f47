//===- zb-compile.cpp - model file -> per-rank native programs ------------===//
//
// zb-compile MODEL -o DIR [--stages P] [--microbatches M] [--schedule NAME]
//
// Imports the model (ONNX, or a zb-dialect .mlir file), runs the compiler
// (DESIGN.md steps 2-7: autodiff, B/W split, stage partition, schedule,
// per-rank lowering, CPU codegen), and writes DIR/plan.json, DIR/params.bin,
// DIR/rank<R>.so (native code, entry `zb_rank_main`), DIR/pipeline.mlir (the
// IR after zb-lower-pipeline) and DIR/schedule.svg. zb-run executes the result.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Frontend/ONNX/ONNXImporter.h"
#include "zb/Frontend/StableHLO/StableHLOImporter.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Schedule/Formats.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include <cmath>
#include <random>
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <chrono>
#include <thread>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("zb-compile options");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputDir("o", cl::desc("Output directory"),
                                      cl::value_desc("dir"), cl::Required,
                                      cl::cat(category));
static cl::opt<int64_t> numStages("stages",
                                  cl::desc("Pipeline ranks P (default 2); the model is cut into P x "
                           "--virtual-stages stages"),
                                  cl::init(2), cl::cat(category));
static cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("Chunks (virtual stages) per rank: 2 for zb-v, v-half, v-min; "
             ">= 2 for 1f1b-i (default 1)"),
    cl::init(1), cl::cat(category));
static cl::opt<int64_t>
    microbatches("microbatches",
                 cl::desc("Microbatches per training step (default 8)"),
                 cl::init(8), cl::cat(category));
static cl::opt<std::string>
    scheduleName("schedule",
                 cl::desc("Schedule: gpipe 1f1b zb-h1 zb-h2 zb-auto zb-1p zb-2p "
                          "ilp (default zb-h1)"),
                 cl::init("zb-h1"), cl::cat(category));
static cl::opt<double> memoryLimit(
    "memory-limit",
    cl::desc("Activation memory limit per rank in bytes (0 = none)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Cost model target: cpu | h100"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> optimizer("optimizer",
                                      cl::desc("sgd | adamw (default sgd)"),
                                      cl::init("sgd"), cl::cat(category));
static cl::opt<double> learningRate("lr", cl::desc("Learning rate"),
                                    cl::init(0.05), cl::cat(category));
static cl::opt<std::string>
    dataDir("data",
            cl::desc("Default training data for zb-run: a directory with "
                     "input_<i>.pb, or a text file (bytes as tokens); "
                     "default: the 'data' directory next to the model"),
            cl::init(""), cl::cat(category));
static cl::opt<uint64_t> initSeed(
    "init-seed",
    cl::desc("Seed of the parameter initialisation used when the model "
             "stores no parameter values"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> keepIntermediates(
    "keep-intermediates",
    cl::desc("Also write rank<R>.llvm.mlir (the LLVM dialect) and rank<R>.o"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> profileFile(
    "profile",
    cl::desc("Schedule with the per-stage T_F/T_B/T_W/T_comm measured by "
             "`zb-run --profile FILE` instead of the cost model"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));
static cl::opt<int> optLevel(
    "opt-level",
    cl::desc("LLVM optimisation of the rank programs: 0 none, 1 scalar "
             "cleanups + loop vectoriser (default; fast to compile), 2 or 3 "
             "LLVM's -O2/-O3"),
    cl::init(1), cl::cat(category));
static cl::opt<unsigned>
    jobs("j",
         cl::desc("Rank programs optimised and emitted in parallel "
                  "(default: the number of hardware threads)"),
         cl::init(0), cl::cat(category));
static cl::opt<bool> fuseElementwise(
    "fuse-elementwise",
    cl::desc("Fuse elementwise linalg chains before bufferization (default "
             "on; --fuse-elementwise=false to measure without)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> timing(
    "timing",
    cl::desc("Print the time of every compiler phase (MLIR passes, "
             "per-rank lowering, LLVM translation, optimisation and "
             "code generation, linking)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress messages"),
                           cl::init(false), cl::cat(category));

using Clock = std::chrono::steady_clock;

/// --timing: prints the wall time since `start`.
static void phaseTime(const llvm::Twine &what, Clock::time_point start) {
  if (!timing)
    return;
  double s = std::chrono::duration<double>(Clock::now() - start).count();
  llvm::errs() << llvm::formatv("[zb-compile] time {0,8:f3} s  ", s) << what
               << "\n";
}

static void progress(const llvm::Twine &msg) {
  if (!quiet)
    llvm::errs() << "[zb-compile] " << msg << "\n";
}

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "zb-compile: error: " << msg << "\n";
  return 1;
}

/// The LLVM optimisation pipeline of --opt-level 1: the scalar cleanups and
/// the loop vectoriser that matter for the linalg-generated loop nests,
/// without the passes whose cost grows with the number of loops in a
/// function (IndVarSimplify alone is about half of -O2's time on a GPT
/// stage function; see benchmarks/README.md, Runtime).
static const char *kLightPipeline =
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,"
    "simplifycfg,loop-mssa(loop-rotate,licm),gvn,"
    "instcombine<no-verify-fixpoint>,loop-vectorize,"
    "instcombine<no-verify-fixpoint>,simplifycfg)";

/// Optimises `llvmModule` at `level` (0: none, 1: kLightPipeline, 2/3: the
/// default -O2/-O3 pipeline) and writes it as a PIC object file. Uses only
/// its own LLVMContext, so several ranks may run it in parallel.
static LogicalResult emitObject(llvm::Module &llvmModule, int level,
                                StringRef path, std::string &err) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *tgt = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!tgt)
    return failure();
  llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
  std::string features;
  for (auto &f : hostFeatures)
    features += (f.second ? "+" : "-") + f.first().str() + ",";
  llvm::CodeGenOptLevel cgLevel = level == 0   ? llvm::CodeGenOptLevel::None
                                  : level == 1 ? llvm::CodeGenOptLevel::Less
                                  : level == 2
                                      ? llvm::CodeGenOptLevel::Default
                                      : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(tgt->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, cgLevel));
  if (!tm) {
    err = "cannot create a target machine for " + triple.str();
    return failure();
  }
  llvmModule.setTargetTriple(triple);
  llvmModule.setDataLayout(tm->createDataLayout());
  if (level >= 2) {
    auto optimize = makeOptimizingTransformer(level, 0, tm.get());
    if (llvm::Error e = optimize(&llvmModule)) {
      err = llvm::toString(std::move(e));
      return failure();
    }
  } else if (level == 1) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (llvm::Error e = pb.parsePassPipeline(mpm, kLightPipeline)) {
      err = llvm::toString(std::move(e));
      return failure();
    }
    mpm.run(llvmModule, mam);
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    err = "cannot write " + path.str() + ": " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::ObjectFile)) {
    err = "the target cannot emit object files";
    return failure();
  }
  pm.run(llvmModule);
  return success();
}

/// Links an object into a shared library with the system C compiler.
static LogicalResult linkShared(StringRef object, StringRef library,
                                std::string &err) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("gcc");
  if (!cc) {
    err = "no C compiler (cc) on PATH to link " + library.str();
    return failure();
  }
  // MLIR's C runner utilities provide memrefCopy (strided copies that the
  // bufferized code may call).
  std::string libDir = "-L" ZB_MLIR_LIB_DIR, rpath = "-Wl,-rpath," ZB_MLIR_LIB_DIR;
  SmallVector<StringRef> args{*cc,   "-shared", "-o",    library,
                              object, libDir,    rpath, "-lmlir_c_runner_utils"};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &msg);
  if (rc != 0) {
    err = "linking " + library.str() + " failed: " + msg;
    return failure();
  }
  return success();
}

/// Prints diagnostics as `file[:line:col]: error: message`, naming the
/// model node (NameLoc) when there is one, one line per diagnostic.
static LogicalResult printDiagnostic(Diagnostic &diag) {
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
  llvm::raw_ostream &os = llvm::errs();
  os << (file.empty() ? "zb-compile" : file) << ": ";
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
  os << diag.str();
  if (!node.empty() && diag.str().find(node) == std::string::npos)
    os << " (node '" << node << "')";
  os << "\n";
  for (Diagnostic &note : diag.getNotes())
    (void)printDiagnostic(note);
  return success();
}

static OwningOpRef<ModuleOp> loadModel(StringRef path, MLIRContext *ctx) {
  if (path.ends_with(".onnx"))
    return zb::frontend::importONNXFile(path, ctx);
  llvm::SourceMgr sourceMgr;
  std::string err;
  auto file = openInputFile(path, &err);
  if (!file) {
    llvm::errs() << "zb-compile: error: " << err << "\n";
    return nullptr;
  }
  // A JAX export (StableHLO text, e.g. model.stablehlo.mlir) goes through
  // the StableHLO importer.
  if (zb::frontend::looksLikeStableHLO(file->getBuffer()))
    return zb::frontend::importStableHLO(file->getMemBufferRef(), ctx);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, ctx);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zb-compile: compile a model for zero-bubble pipeline-parallel training\n"
      "\n"
      "Writes OUTDIR/plan.json, params.bin, rank<R>.so (one native program per\n"
      "rank), pipeline.mlir and schedule.svg; run them with `zb-run OUTDIR`.\n"
      "Example: zb-compile examples/mlp/mlp.onnx --stages 2 --microbatches 8 "
      "--schedule zb-h1 -o out\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  if (numStages < 1)
    return fail("--stages must be >= 1, got " + llvm::Twine(numStages));
  if (virtualStages < 1)
    return fail("--virtual-stages must be >= 1, got " +
                llvm::Twine(virtualStages));
  if (microbatches < 1)
    return fail("--microbatches must be >= 1, got " +
                llvm::Twine(microbatches));
  if (optimizer != "sgd" && optimizer != "adamw")
    return fail("--optimizer must be sgd or adamw, got '" + optimizer + "'");
  if (!llvm::is_contained(zb::sched::scheduleNames(), scheduleName))
    return fail("unknown --schedule '" + scheduleName + "'");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<zb::ZBDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler diagnostics(&ctx, printDiagnostic);

  progress("importing " + inputFile);
  OwningOpRef<ModuleOp> module = loadModel(inputFile, &ctx);
  if (!module)
    return 1;
  // Keep the parameter values aside: they are data, not IR to transform.
  auto paramValues =
      (*module)->getAttrOfType<DictionaryAttr>("zb.param_values");

  progress(llvm::formatv("autodiff, B/W split, {0} stages on {1} ranks, "
                         "schedule {2} with {3} microbatches",
                         numStages * virtualStages, numStages.getValue(),
                         scheduleName.getValue(), microbatches.getValue()));
  PassManager pm = PassManager::on<ModuleOp>(&ctx);
  zb::PipelineOptions options;
  options.numStages = numStages;
  options.virtualStages = virtualStages;
  options.microbatches = microbatches;
  options.schedule = scheduleName;
  options.memoryLimit = memoryLimit;
  options.target = target;
  options.profile = profileFile;
  zb::buildPipelineParallelPipeline(pm, options);
  if (timing)
    pm.enableTiming();
  auto tPipeline = Clock::now();
  if (failed(pm.run(*module)))
    return 1;
  phaseTime("autodiff, split, partition, schedule, zb-lower-pipeline",
            tPipeline);

  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return fail("cannot create " + outputDir + ": " + ec.message());
  auto outPath = [&](StringRef name) {
    SmallString<256> p(outputDir.getValue());
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  {
    std::string err;
    auto out = openOutputFile(outPath("pipeline.mlir"), &err);
    if (!out)
      return fail(err);
    (*module)->removeAttr("zb.param_values");
    module->print(out->os());
    out->keep();
  }

  FailureOr<zb::PipelineInfo> info = zb::PipelineInfo::read(*module);
  int64_t mbCount = 0;
  FailureOr<zb::sched::Schedule> schedule =
      zb::readSchedule(*module, &mbCount);
  if (failed(info) || failed(schedule))
    return 1;
  int64_t numRanks = schedule->perRank.size();

  // Predicted bubble rates for the model's costs.
  zb::sched::Problem problem = info->toProblem(microbatches, memoryLimit);
  llvm::json::Object predicted;
  SmallVector<std::string> names{"1f1b", "zb-h1"};
  if (!llvm::is_contained(names, scheduleName.getValue()))
    names.push_back(scheduleName);
  for (const std::string &name : names) {
    // This plan: the schedule read back from the module, as
    // zb-lower-pipeline lowered it (not built a second time: an ILP would
    // run again). The others: the paper's schedules, for comparison.
    llvm::Expected<zb::sched::Schedule> s =
        name == scheduleName.getValue()
            ? llvm::Expected<zb::sched::Schedule>(*schedule)
            : zb::sched::buildSchedule(problem, name);
    if (!s) {
      llvm::consumeError(s.takeError());
      continue;
    }
    zb::sched::SimResult sim = zb::sched::simulate(problem, *s);
    llvm::json::Object entry{
        {"bubble_rate", sim.bubbleRate},
        {"makespan_ms", sim.makespan},
        {"rank_bubble_rate", llvm::json::Array(sim.rankBubbleRate)}};
    std::string line = llvm::formatv("predicted bubble rate {0,-6}: {1:f4}",
                                     name, sim.bubbleRate);
    // With a profile that measured the pass-to-pass variation: the expected
    // per-rank bubble under that variation (Monte Carlo, fixed seed).
    if (!problem.cvF.empty()) {
      auto est = zb::sched::estimateJitter(problem, *s);
      if (!est)
        return fail("--profile: " + llvm::toString(est.takeError()));
      entry["jitter"] = llvm::json::Object{
          {"samples", est->samples},
          {"bubble_rate", est->bubbleRate},
          {"makespan_ms", est->makespan},
          {"rank_bubble_rate", llvm::json::Array(est->rankBubbleRate)}};
      line += llvm::formatv(" (with the measured jitter: {0:f4})",
                            est->bubbleRate);
    }
    predicted[name] = std::move(entry);
    progress(line);
  }
  const zb::sched::SimResult planSim = zb::sched::simulate(problem, *schedule);
  {
    // The schedule with the costs it was planned with ("zb-schedule" JSON,
    // include/zb/Schedule/Formats.h): zb-run re-simulates it at the costs it
    // measures.
    std::error_code ec;
    llvm::raw_fd_ostream os(outPath("schedule.json"), ec);
    if (ec)
      return fail("cannot write schedule.json: " + ec.message());
    zb::sched::writeJSON(os, problem, *schedule, planSim);
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream svg(outPath("schedule.svg"), ec);
    if (!ec)
      zb::sched::writeSVG(svg, problem, *schedule, planSim);
  }

  // Parameters: params.bin in model order.
  llvm::json::Array paramsJson;
  {
    std::error_code ec;
    llvm::raw_fd_ostream bin(outPath("params.bin"), ec,
                             llvm::sys::fs::OF_None);
    if (ec)
      return fail("cannot write params.bin: " + ec.message());
    int64_t offset = 0;
    // Models without stored values (hand-written .mlir) get a deterministic
    // uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) initialisation.
    std::mt19937_64 rng(initSeed);
    for (const zb::ModelValueInfo &p : info->params) {
      if (!p.type.getElementType().isF32())
        return fail("parameter '" + p.name + "' is not float32");
      auto value = paramValues
                       ? paramValues.getAs<DenseElementsAttr>(p.name)
                       : DenseElementsAttr();
      if (paramValues && (!value || value.getType() != p.type))
        return fail("no value of type " + llvm::formatv("{0}", p.type).str() +
                    " for parameter '" + p.name + "' in zb.param_values");
      if (value) {
        for (float f : value.getValues<float>())
          bin.write(reinterpret_cast<const char *>(&f), sizeof(float));
      } else {
        int64_t fanIn = p.type.getRank() ? p.type.getShape().back() : 1;
        double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
        for (int64_t i = 0; i < p.type.getNumElements(); ++i) {
          // 53 random bits -> [0, 1); exact and portable.
          double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
          float f = static_cast<float>((2 * u - 1) * bound);
          bin.write(reinterpret_cast<const char *>(&f), sizeof(float));
        }
      }
      llvm::json::Array shape;
      for (int64_t d : p.type.getShape())
        shape.push_back(d);
      int64_t stage = p.stages.empty() ? 0 : p.stages.front();
      llvm::json::Object entry{{"name", p.name},
                               {"shape", std::move(shape)},
                               {"stage", stage},
                               {"rank", schedule->stageToRank[stage]},
                               {"offset_bytes", offset}};
      if (p.stages.size() > 1) { // tied: one copy per stage, same values
        llvm::json::Array copies;
        for (int64_t s : p.stages)
          copies.push_back(llvm::json::Object{
              {"stage", s}, {"rank", schedule->stageToRank[s]}});
        entry["tied_copies"] = std::move(copies);
      }
      paramsJson.push_back(std::move(entry));
      offset += p.type.getNumElements() * 4;
    }
  }
  llvm::json::Array inputsJson;
  int64_t microbatchSize = 0;
  for (const zb::ModelValueInfo &in : info->inputs) {
    llvm::json::Array sampleShape;
    for (int64_t d : in.type.getShape().drop_front())
      sampleShape.push_back(d);
    if (in.type.getRank() > 0)
      microbatchSize = in.type.getDimSize(0);
    int64_t stage = in.stages.empty() ? 0 : in.stages.front();
    // Element type as zb-run feeds it (docs/plan-json.md).
    Type elem = in.type.getElementType();
    std::string dtype;
    if (elem.isF32())
      dtype = "float32";
    else if (elem.isInteger(64))
      dtype = "int64";
    else if (elem.isInteger(32))
      dtype = "int32";
    else
      return fail("graph input '" + in.name + "' has element type " +
                  llvm::formatv("{0}", elem).str() +
                  "; zb-run feeds float32, int64 or int32 inputs");
    inputsJson.push_back(llvm::json::Object{
        {"name", in.name},
        {"dtype", dtype},
        {"sample_shape", std::move(sampleShape)},
        {"stage", stage},
        {"rank", schedule->stageToRank[stage]}});
  }

  // One native program per rank: MLIR lowering and translation to LLVM IR
  // one rank after the other (one MLIRContext), then LLVM optimisation,
  // code generation and linking of all ranks in parallel (one LLVMContext
  // each).
  llvm::json::Array ranksJson;
  std::vector<std::unique_ptr<llvm::LLVMContext>> llvmContexts;
  std::vector<std::unique_ptr<llvm::Module>> llvmModules;
  for (int64_t r = 0; r < numRanks; ++r) {
    progress(llvm::formatv("rank {0}/{1}: lowering to LLVM", r, numRanks));
    auto tRank = Clock::now();
    OwningOpRef<ModuleOp> rankModule(cast<ModuleOp>((*module)->clone()));
    std::string stepName = llvm::formatv("zb_rank{0}_step", r);
    llvm::json::Array args;
    for (auto fn :
         llvm::make_early_inc_range(rankModule->getOps<func::FuncOp>())) {
      if (fn->hasAttr("zb.rank")) {
        if (fn.getSymName() != stepName) {
          fn.erase();
          continue;
        }
        for (Attribute a : fn->getAttrOfType<ArrayAttr>("zb.rank_args")) {
          auto [kind, index] = cast<StringAttr>(a).getValue().split(':');
          llvm::json::Object arg{{"kind", kind}};
          if (!index.empty()) {
            int64_t idx = 0;
            (void)index.getAsInteger(10, idx);
            // Map the function argument index to the params/inputs position.
            const auto &list = kind == "input" ? info->inputs : info->params;
            for (auto [pos, v] : llvm::enumerate(list))
              if (v.index == idx)
                arg["index"] = static_cast<int64_t>(pos);
          }
          args.push_back(std::move(arg));
        }
      } else if (!fn.isExternal()) {
        fn.setPrivate();
      }
      // The zb.role/zb.value/zb.index port attributes have done their job
      // (zb-lower-pipeline); LLVM translation would warn about them.
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        fn.setArgAttrs(i, ArrayRef<NamedAttribute>{});
      for (unsigned i = 0; i < fn.getNumResults(); ++i)
        fn.setResultAttrs(i, ArrayRef<NamedAttribute>{});
    }
    PassManager lower = PassManager::on<ModuleOp>(&ctx);
    if (timing)
      lower.enableTiming();
    lower.addPass(createSymbolDCEPass());
    zb::buildLowerToLLVMPipeline(lower, fuseElementwise);
    if (failed(lower.run(*rankModule)))
      return fail(llvm::formatv("lowering rank {0} failed", r).str());
    phaseTime(llvm::formatv("rank {0}: MLIR lowering to the LLVM dialect", r),
              tRank);
    if (keepIntermediates) {
      std::string err;
      auto out = openOutputFile(
          outPath(llvm::formatv("rank{0}.llvm.mlir", r).str()), &err);
      if (!out)
        return fail(err);
      rankModule->print(out->os());
      out->keep();
    }
    auto tTranslate = Clock::now();
    llvmContexts.push_back(std::make_unique<llvm::LLVMContext>());
    llvmModules.push_back(
        translateModuleToLLVMIR(*rankModule, *llvmContexts.back(), "zb_rank"));
    if (!llvmModules.back())
      return fail(llvm::formatv("rank {0}: translation to LLVM IR failed", r)
                      .str());
    phaseTime(llvm::formatv("rank {0}: translation to LLVM IR", r),
              tTranslate);
    ranksJson.push_back(
        llvm::json::Object{{"rank", r},
                           {"library", llvm::formatv("rank{0}.so", r).str()},
                           {"entry", "zb_rank_main"},
                           {"args", std::move(args)}});
  }
  {
    unsigned workers = jobs ? jobs.getValue()
                            : std::max(1u, std::thread::hardware_concurrency());
    workers = std::min<unsigned>(workers, numRanks);
    progress(llvm::formatv("LLVM -O{0}: emitting rank0.so .. rank{1}.so "
                           "({2} in parallel)",
                           optLevel.getValue(), numRanks - 1, workers));
    std::vector<std::string> errors(numRanks);
    std::vector<double> seconds(numRanks);
    std::atomic<int64_t> next{0};
    auto worker = [&] {
      for (int64_t r; (r = next++) < numRanks;) {
        auto t0 = Clock::now();
        std::string obj = outPath(llvm::formatv("rank{0}.o", r).str());
        std::string lib = outPath(llvm::formatv("rank{0}.so", r).str());
        if (failed(emitObject(*llvmModules[r], optLevel, obj, errors[r])) ||
            failed(linkShared(obj, lib, errors[r])))
          continue;
        if (!keepIntermediates)
          llvm::sys::fs::remove(obj);
        llvmModules[r].reset();
        seconds[r] = std::chrono::duration<double>(Clock::now() - t0).count();
      }
    };
    auto tEmit = Clock::now();
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < workers; ++i)
      threads.emplace_back(worker);
    worker();
    for (std::thread &t : threads)
      t.join();
    for (int64_t r = 0; r < numRanks; ++r)
      if (!errors[r].empty())
        return fail(llvm::formatv("rank {0}: {1}", r, errors[r]).str());
    if (timing)
      for (int64_t r = 0; r < numRanks; ++r)
        llvm::errs() << llvm::formatv(
            "[zb-compile] time {0,8:f3} s  rank {1}: LLVM optimisation, code "
            "generation and linking\n",
            seconds[r], r);
    phaseTime("all ranks: LLVM optimisation, code generation and linking "
              "(wall)",
              tEmit);
  }

  llvm::json::Array stagesJson;
  for (const zb::StageInfo &s : info->stages)
    stagesJson.push_back(llvm::json::Object{
        {"stage", s.stage},
        {"rank", schedule->stageToRank[s.stage]},
        {"t_f", s.tF},
        {"t_b", s.tB},
        {"t_w", s.tW},
        {"t_comm", s.tComm},
        {"m_b", s.mB},
        {"m_w", s.mW}});

  std::string data = dataDir;
  if (data.empty()) {
    SmallString<256> d(inputFile.getValue());
    llvm::sys::path::remove_filename(d);
    llvm::sys::path::append(d, "data");
    if (llvm::sys::fs::is_directory(d))
      data = std::string(d);
  }
  if (!data.empty()) {
    SmallString<256> abs(data);
    llvm::sys::fs::make_absolute(abs);
    data = std::string(abs);
  }
  llvm::json::Object opt{{"name", std::string(optimizer.getValue())},
                         {"lr", learningRate.getValue()}};
  if (optimizer == "adamw") {
    opt["beta1"] = 0.9;
    opt["beta2"] = 0.999;
    opt["eps"] = 1e-8;
    opt["weight_decay"] = 0.01;
  }
  SmallString<256> model(inputFile.getValue());
  llvm::json::Object plan{
      {"format", "zb-plan"},
      {"version", 1},
      {"model", std::string(model.str())},
      {"num_ranks", numRanks},
      {"num_stages", info->numStages},
      {"num_chunks", info->numChunks},
      {"num_microbatches", mbCount},
      {"microbatch_size", microbatchSize},
      {"schedule", std::string(scheduleName.getValue())},
      {"target", info->target},
      {"data", data},
      {"optimizer", std::move(opt)},
      {"params", std::move(paramsJson)},
      {"inputs", std::move(inputsJson)},
      {"stages", std::move(stagesJson)},
      {"predicted", std::move(predicted)},
      {"ranks", std::move(ranksJson)}};
  std::error_code ec;
  llvm::raw_fd_ostream planOut(outPath("plan.json"), ec);
  if (ec)
    return fail("cannot write plan.json: " + ec.message());
  planOut << llvm::formatv("{0:2}", llvm::json::Value(std::move(plan)))
          << "\n";
  progress("wrote " + outputDir + "/plan.json; run: zb-run " + outputDir +
           " --ranks " + llvm::Twine(numRanks));
  return 0;
}
