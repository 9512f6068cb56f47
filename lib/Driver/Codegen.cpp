//===- Codegen.cpp - per-rank lowering, LLVM IR, objects, linking ---------===//
#include "Phases.h"
#include "zb/Support/AtomicFile.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Transforms/Passes.h"
#include "zbrt/Symbols.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <chrono>
#include <thread>

using namespace mlir;

namespace zb::driver {

FailureOr<OwningOpRef<ModuleOp>>
lowerRankToLLVM(ModuleOp pipeline, int64_t rank,
                const CompileOptions &options,
                std::vector<GpuKernelLaunch> *kernels) {
  OwningOpRef<ModuleOp> rankModule(cast<ModuleOp>(pipeline->clone()));
  PassManager pm = PassManager::on<ModuleOp>(pipeline.getContext());
  if (options.timing)
    pm.enableTiming();
  ZBExtractRankOptions extract;
  extract.rank = rank;
  pm.addPass(createZBExtractRank(extract));
  GpuCodegenOptions gpu = gpuCodegenOptions(options);
  if (kernels)
    gpu.reportKernels = [kernels](std::vector<GpuKernelLaunch> launches) {
      *kernels = std::move(launches);
    };
  buildLowerToLLVMPipeline(pm, options.fuseElementwise,
                           options.gpuKernels() ? &gpu : nullptr);
  if (failed(pm.run(*rankModule)))
    return failure();
  return rankModule;
}

llvm::Expected<RankLLVMModule> translateToLLVMIR(ModuleOp module) {
  RankLLVMModule result;
  result.context = std::make_unique<llvm::LLVMContext>();
  result.module = translateModuleToLLVMIR(module, *result.context, "zb_rank");
  if (!result.module)
    return llvm::createStringError("translation to LLVM IR failed");
  return result;
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

/// A target machine for the host CPU with all its features.
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(int optLevel) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError(error);
  std::string features;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    features += (f.second ? "+" : "-") + f.first().str() + ",";
  llvm::CodeGenOptLevel level = optLevel == 0   ? llvm::CodeGenOptLevel::None
                                : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                : optLevel == 2
                                    ? llvm::CodeGenOptLevel::Default
                                    : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str());
  return tm;
}

/// Runs kLightPipeline on `module`.
static llvm::Error runLightPipeline(llvm::Module &module,
                                    llvm::TargetMachine *tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (llvm::Error error = pb.parsePassPipeline(mpm, kLightPipeline))
    return error;
  mpm.run(module, mam);
  return llvm::Error::success();
}

/// True for a rank's step function, `zb_rank<R>_step` (zb-lower-pipeline).
static bool isStepFunction(const llvm::GlobalValue &gv) {
  llvm::StringRef name = gv.getName();
  return isa<llvm::Function>(gv) && !gv.isDeclaration() &&
         name.consume_front("zb_rank") && name.consume_back("_step") &&
         !name.empty() && llvm::all_of(name, llvm::isDigit);
}

/// Moves the step functions of `module` into a module of their own (same
/// context), leaving declarations behind; what they reference with local
/// linkage becomes hidden external so that the two objects link. Null when
/// the module has no step function.
static std::unique_ptr<llvm::Module> splitOffSteps(llvm::Module &module) {
  llvm::SmallVector<llvm::Function *> steps;
  for (llvm::Function &f : module)
    if (isStepFunction(f))
      steps.push_back(&f);
  if (steps.empty())
    return nullptr;
  for (llvm::Function *step : steps)
    for (llvm::Instruction &inst : llvm::instructions(*step))
      for (llvm::Value *operand : inst.operands()) {
        auto *gv = dyn_cast<llvm::GlobalValue>(operand->stripPointerCasts());
        if (!gv || !gv->hasLocalLinkage())
          continue;
        if (!gv->hasName())
          gv->setName("zb_step_ref");
        gv->setLinkage(llvm::GlobalValue::ExternalLinkage);
        gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
      }
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> stepModule =
      llvm::CloneModule(module, map, [](const llvm::GlobalValue *gv) {
        return isStepFunction(*gv);
      });
  for (llvm::Function *step : steps)
    step->deleteBody();
  // The clone holds declarations of everything else: keep those it uses.
  for (llvm::GlobalVariable &gv :
       llvm::make_early_inc_range(stepModule->globals()))
    if (gv.getName().starts_with("llvm.") || gv.use_empty())
      gv.eraseFromParent();
  for (llvm::Function &f : llvm::make_early_inc_range(*stepModule))
    if (f.isDeclaration() && f.use_empty())
      f.eraseFromParent();
  return stepModule;
}

/// One basic block per action of a step function: a new block starts at
/// every zbrt_action_begin call. Instruction selection works one block at a
/// time, so its cost stays linear in the number of actions. Split from the
/// last call backwards so that every instruction moves once.
static void splitStepAtActions(llvm::Module &stepModule) {
  for (llvm::Function &f : stepModule) {
    if (f.isDeclaration())
      continue;
    llvm::SmallVector<llvm::Instruction *> begins;
    for (llvm::Instruction &inst : llvm::instructions(f))
      if (auto *call = dyn_cast<llvm::CallInst>(&inst))
        if (llvm::Function *callee = call->getCalledFunction())
          if (callee->getName() == zbrt::symbols::ActionBegin &&
              call != &call->getParent()->front())
            begins.push_back(call);
    for (llvm::Instruction *begin : llvm::reverse(begins))
      begin->getParent()->splitBasicBlock(begin, "action");
  }
}

static llvm::Error writeObject(llvm::Module &module, llvm::TargetMachine &tm,
                               llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write " + path + ": " +
                                           ec.message());
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::string>>
emitRankObjects(llvm::Module &module, int optLevel, llvm::StringRef path,
                llvm::StringRef stepPath) {
  std::unique_ptr<llvm::Module> steps = splitOffSteps(module);
  if (llvm::Error error = emitObject(module, optLevel, path))
    return std::move(error);
  if (!steps)
    return std::vector<std::string>{path.str()};
  // The step is straight-line calls (its loops are outlined,
  // zb-outline-step-loops): code generation without optimisation, whose
  // cost is linear in the number of actions (-O1's register allocation and
  // instruction selection were superlinear: 128 microbatches took 15 s).
  splitStepAtActions(*steps);
  auto tm = createHostTargetMachine(0);
  if (!tm)
    return tm.takeError();
  steps->setTargetTriple((*tm)->getTargetTriple());
  steps->setDataLayout((*tm)->createDataLayout());
  if (llvm::Error error = writeObject(*steps, **tm, stepPath))
    return std::move(error);
  return std::vector<std::string>{path.str(), stepPath.str()};
}

llvm::Error emitObject(llvm::Module &module, int optLevel,
                       llvm::StringRef path) {
  auto tm = createHostTargetMachine(optLevel);
  if (!tm)
    return tm.takeError();
  module.setTargetTriple((*tm)->getTargetTriple());
  module.setDataLayout((*tm)->createDataLayout());
  if (optLevel >= 2) {
    auto optimize = makeOptimizingTransformer(optLevel, 0, tm->get());
    if (llvm::Error error = optimize(&module))
      return error;
  } else if (optLevel == 1) {
    if (llvm::Error error = runLightPipeline(module, tm->get()))
      return error;
  }
  return writeObject(module, **tm, path);
}

llvm::Error linkShared(llvm::ArrayRef<std::string> objects,
                       llvm::StringRef library) {
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("gcc");
  if (!cc)
    return llvm::createStringError("no C compiler (cc) on PATH to link " +
                                   library);
  // The rank program needs only libzbrt's symbols (the pool allocator, the
  // runtime calls), resolved in the zb-run process, and libm: copies are
  // loops (zb-memref-copy-to-linalg), not calls of MLIR's runner utilities.
  // Absolute paths: an output directory named like an option ("-v") must
  // reach the compiler as a file name.
  std::vector<std::string> absObjects;
  for (const std::string &object : objects) {
    SmallString<256> absObject(object);
    if (std::error_code ec = llvm::sys::fs::make_absolute(absObject))
      return llvm::createStringError(ec, "cannot resolve " + object);
    absObjects.push_back(absObject.str().str());
  }
  SmallString<256> absLibrary(library);
  if (std::error_code ec = llvm::sys::fs::make_absolute(absLibrary))
    return llvm::createStringError(ec, "cannot resolve " + library);
  // Linked next to the target and renamed over it: a failed link leaves
  // the previous library, a symlink at the path is replaced.
  return zb::support::replaceFileAtomically(
      absLibrary, [&](llvm::StringRef tmp) -> llvm::Error {
        SmallVector<StringRef> args{*cc, "-shared", "-o", tmp};
        for (const std::string &object : absObjects)
          args.push_back(object);
        args.push_back("-lm");
        std::string message;
        if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                      &message))
          return llvm::createStringError("linking " + library +
                                         " failed: " + message);
        return llvm::Error::success();
      });
}

llvm::Error emitRankLibraries(std::vector<RankLLVMModule> &modules,
                              const CompileOptions &options,
                              const CompileCallbacks &callbacks) {
  int64_t numRanks = modules.size();
  unsigned workers = options.jobs
                         ? options.jobs
                         : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min<unsigned>(workers, std::max<int64_t>(numRanks, 1));
  if (callbacks.progress)
    callbacks.progress(llvm::formatv("LLVM -O{0}: emitting rank0.so .. "
                                     "rank{1}.so ({2} in parallel)",
                                     options.optLevel, numRanks - 1, workers)
                           .str());
  std::vector<std::string> errors(numRanks);
  std::vector<double> seconds(numRanks);
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t r; (r = next++) < numRanks;) {
      auto start = std::chrono::steady_clock::now();
      std::string obj =
          outputPath(options, llvm::formatv("rank{0}.o", r).str());
      std::string stepObj =
          outputPath(options, llvm::formatv("rank{0}.step.o", r).str());
      std::string lib =
          outputPath(options, llvm::formatv("rank{0}.so", r).str());
      auto objects = emitRankObjects(*modules[r].module, options.optLevel,
                                     obj, stepObj);
      llvm::Error error =
          objects ? linkShared(*objects, lib) : objects.takeError();
      if (error) {
        errors[r] = llvm::toString(std::move(error));
        continue;
      }
      if (!options.keepIntermediates)
        for (const std::string &object : *objects)
          llvm::sys::fs::remove(object);
      modules[r].module.reset();
      seconds[r] = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < workers; ++i)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  for (int64_t r = 0; r < numRanks; ++r)
    if (!errors[r].empty())
      return llvm::createStringError(
          llvm::formatv("rank {0}: {1}", r, errors[r]).str());
  if (options.timing && callbacks.phaseTime)
    for (int64_t r = 0; r < numRanks; ++r)
      callbacks.phaseTime(
          llvm::formatv("rank {0}: LLVM optimisation, code generation and "
                        "linking",
                        r)
              .str(),
          seconds[r]);
  return llvm::Error::success();
}

} // namespace zb::driver
