//===- Options.cpp - typed options: one parser, one printer each ----------===//
#include "zb/Formats/Options.h"

#include "llvm/Support/FormatVariadic.h"

using namespace zb;

static llvm::Error mustBe(llvm::StringRef names, llvm::StringRef got) {
  return llvm::createStringError(
      llvm::formatv("must be {0}, got '{1}'", names, got).str());
}

llvm::StringRef zb::targetName(Target target) {
  switch (target) {
  case Target::Cpu:
    return "cpu";
  case Target::Cuda:
    return "cuda";
  case Target::CudaEmu:
    return "cuda-emu";
  case Target::H100:
    return "h100";
  }
  llvm_unreachable("unknown target");
}

llvm::Expected<Target> zb::parseTarget(llvm::StringRef name) {
  for (Target t : {Target::Cpu, Target::Cuda, Target::CudaEmu, Target::H100})
    if (name == targetName(t))
      return t;
  return mustBe("cpu, cuda, cuda-emu or h100", name);
}

bool zb::hasGpuKernels(Target target) {
  return target == Target::Cuda || target == Target::CudaEmu;
}

Target zb::costModelTarget(Target target) {
  return hasGpuKernels(target) ? Target::H100 : target;
}

llvm::StringRef zb::optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::Sgd:
    return "sgd";
  case Optimizer::AdamW:
    return "adamw";
  }
  llvm_unreachable("unknown optimizer");
}

llvm::Expected<Optimizer> zb::parseOptimizer(llvm::StringRef name) {
  for (Optimizer o : {Optimizer::Sgd, Optimizer::AdamW})
    if (name == optimizerName(o))
      return o;
  return mustBe("sgd or adamw", name);
}

llvm::StringRef zb::precisionName(Precision precision) {
  switch (precision) {
  case Precision::Fp32:
    return "fp32";
  case Precision::Bf16:
    return "bf16";
  }
  llvm_unreachable("unknown precision");
}

llvm::Expected<Precision> zb::parsePrecision(llvm::StringRef name) {
  for (Precision p : {Precision::Fp32, Precision::Bf16})
    if (name == precisionName(p))
      return p;
  return mustBe("fp32 or bf16", name);
}

llvm::Expected<sched::OptimizerSync>
zb::parseCompiledOptimizerSync(llvm::StringRef name) {
  llvm::Expected<sched::OptimizerSync> mode = sched::parseOptimizerSync(name);
  if (mode && *mode != sched::OptimizerSync::AllReduce)
    return *mode;
  if (!mode)
    llvm::consumeError(mode.takeError());
  return mustBe("post-validation or none", name);
}
