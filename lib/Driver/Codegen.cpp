//===- Codegen.cpp - per-rank lowering, LLVM IR, objects, linking ---------===//
#include "zb/Driver/Driver.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Transforms/Passes.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
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
  GpuCodegenOptions gpu;
  gpu.chip = options.gpuArch;
  gpu.toolkit = cudaToolkitRoot(options);
  gpu.emulate = options.target == "cuda-emu";
  gpu.blockSize = options.gpuBlockSize;
  gpu.reductionThreads = options.gpuReductionThreads;
  if (kernels)
    gpu.inspectKernels = [kernels](ModuleOp module) {
      *kernels = collectGpuKernelLaunches(module);
    };
  buildLowerToLLVMPipeline(pm, options.fuseElementwise,
                           options.gpuKernels() ? &gpu : nullptr);
  if (failed(pm.run(*rankModule)))
    return failure();
  return rankModule;
}

LogicalResult collectRankKernels(ModuleOp pipeline, int64_t rank,
                                 const CompileOptions &options,
                                 std::vector<GpuKernelLaunch> &kernels) {
  OwningOpRef<ModuleOp> rankModule(cast<ModuleOp>(pipeline->clone()));
  PassManager pm = PassManager::on<ModuleOp>(pipeline.getContext());
  ZBExtractRankOptions extract;
  extract.rank = rank;
  pm.addPass(createZBExtractRank(extract));
  GpuCodegenOptions gpu;
  gpu.blockSize = options.gpuBlockSize;
  gpu.reductionThreads = options.gpuReductionThreads;
  gpu.inspectKernels = [&kernels](ModuleOp module) {
    kernels = collectGpuKernelLaunches(module);
  };
  buildLowerToGpuKernelsPipeline(pm, options.fuseElementwise, gpu);
  return pm.run(*rankModule);
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
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write " + path + ": " +
                                           ec.message());
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr,
                                 llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}

llvm::Error linkShared(llvm::StringRef object, llvm::StringRef library) {
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
  SmallString<256> absObject(object), absLibrary(library);
  if (std::error_code ec = llvm::sys::fs::make_absolute(absObject))
    return llvm::createStringError(ec, "cannot resolve " + object);
  if (std::error_code ec = llvm::sys::fs::make_absolute(absLibrary))
    return llvm::createStringError(ec, "cannot resolve " + library);
  // Linked next to the target and renamed over it: a failed link leaves
  // the previous library, a symlink at the path is replaced.
  std::string tmp =
      (absLibrary + ".tmp." + llvm::Twine(llvm::sys::Process::getProcessId()))
          .str();
  SmallVector<StringRef> args{*cc, "-shared", "-o", tmp, absObject, "-lm"};
  std::string message;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &message)) {
    llvm::sys::fs::remove(tmp);
    return llvm::createStringError("linking " + library +
                                   " failed: " + message);
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, absLibrary)) {
    llvm::sys::fs::remove(tmp);
    return llvm::createStringError(ec, "cannot write " + library + ": " +
                                           ec.message());
  }
  return llvm::Error::success();
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
      std::string lib =
          outputPath(options, llvm::formatv("rank{0}.so", r).str());
      llvm::Error error = emitObject(*modules[r].module, options.optLevel, obj);
      if (!error)
        error = linkShared(obj, lib);
      if (error) {
        errors[r] = llvm::toString(std::move(error));
        continue;
      }
      if (!options.keepIntermediates)
        llvm::sys::fs::remove(obj);
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
