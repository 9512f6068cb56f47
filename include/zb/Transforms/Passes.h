//===- Passes.h - zb transformation passes ----------------------*- C++ -*-===//
#ifndef ZB_TRANSFORMS_PASSES_H
#define ZB_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Schedule/Schedule.h"

namespace zb {
#define GEN_PASS_DECL
#include "zb/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "zb/Transforms/Passes.h.inc"

/// zb-schedule with a schedule the caller has read (zb-compile
/// --schedule-file, parsed once: sched::readScheduleFile, CSV schedules with
/// CostConvention::StageSpan) instead of building `options.algorithm`, which
/// names it; it is placed on the pipeline's stages and verified like a
/// built one. `path` names the file in errors.
std::unique_ptr<mlir::Pass> createZBSchedule(const ZBScheduleOptions &options,
                                             sched::Schedule schedule,
                                             llvm::StringRef path);
} // namespace zb

#endif // ZB_TRANSFORMS_PASSES_H
