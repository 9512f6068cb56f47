//===- Options.h - typed options: target, optimizer -----------*- C++ -*-===//
//
// The options that travel from zb-compile's flags through the compiler into
// plan.json and zb-run, as enums with one parser and one printer each. The
// printer writes the text of the flags, of plan.json ("target",
// "optimizer.name", "optimizer_sync"; docs/plan-json.md) and of the MLIR
// pass options, so that text is produced in one place and compared in none:
//
//   Target     cpu | cuda | cuda-emu | h100     targetName / parseTarget
//   Optimizer  sgd | adamw                      optimizerName / parseOptimizer
//   Precision  fp32 | bf16                      precisionName / parsePrecision
//   sched::OptimizerSync  none | all-reduce | post-validation
//              (zb/Schedule/OptimizerSync.h: optimizerSyncName /
//              parseOptimizerSync; zb-compile and plan.json take none and
//              post-validation, parseCompiledOptimizerSync)
//
// Parser errors are "must be <the names>, got '<text>'": callers put the
// option or field in front ("--target must be cpu, cuda, cuda-emu or h100,
// got 'tpu'").
//
// MLIR-free: LLVM Support only (part of ZBFormats).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_OPTIONS_H
#define ZB_FORMATS_OPTIONS_H

#include "zb/Schedule/OptimizerSync.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace zb {

/// What zb-compile compiles for (--target) and plan.json "target".
enum class Target {
  Cpu,     ///< "cpu": CPU code, CPU roofline costs
  Cuda,    ///< "cuda": GPU kernels for zb-run --backend cuda, H100 costs
  CudaEmu, ///< "cuda-emu": cuda's kernels emulated on the CPU, H100 costs
  H100,    ///< "h100": CPU code scheduled with H100 costs
};

/// "cpu", "cuda", "cuda-emu" or "h100".
llvm::StringRef targetName(Target target);
/// The Target targetName gives `name`; error "must be cpu, cuda, cuda-emu or
/// h100, got '<name>'".
llvm::Expected<Target> parseTarget(llvm::StringRef name);
/// Whether the rank programs' compute is GPU kernels: cuda and cuda-emu.
bool hasGpuKernels(Target target);
/// The cost model the target is scheduled with (zb-partition-stages
/// target=): H100 for the GPU targets, else the target itself (cpu, h100).
Target costModelTarget(Target target);

/// The optimizer zb-run applies (--optimizer, plan.json "optimizer.name").
enum class Optimizer {
  Sgd,   ///< "sgd": p -= lr * g
  AdamW, ///< "adamw": Adam with decoupled weight decay
};

/// "sgd" or "adamw".
llvm::StringRef optimizerName(Optimizer optimizer);
/// The Optimizer optimizerName gives `name`; error "must be sgd or adamw,
/// got '<name>'".
llvm::Expected<Optimizer> parseOptimizer(llvm::StringRef name);

/// The arithmetic a plan trains with (zb-compile --precision, plan.json
/// "precision").
enum class Precision {
  Fp32, ///< "fp32": everything in float32
  Bf16, ///< "bf16": torch.autocast's bfloat16 policy (zb-autocast): GEMMs
        ///< on bfloat16 with float32 accumulation, float32 master weights,
        ///< gradients and optimizer
};

/// "fp32" or "bf16".
llvm::StringRef precisionName(Precision precision);
/// The Precision precisionName gives `name`; error "must be fp32 or bf16,
/// got '<name>'".
llvm::Expected<Precision> parsePrecision(llvm::StringRef name);

/// The optimizer synchronisation a compiled plan can have (zb-compile
/// --optimizer-sync): sched::parseOptimizerSync without all-reduce (which
/// only zb-sched simulates); error "must be post-validation or none, got
/// '<name>'".
llvm::Expected<sched::OptimizerSync>
parseCompiledOptimizerSync(llvm::StringRef name);

} // namespace zb

#endif // ZB_FORMATS_OPTIONS_H
