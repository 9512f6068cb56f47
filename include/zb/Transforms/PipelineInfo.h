//===- PipelineInfo.h - reading zb.pipeline / zb.schedule -------*- C++ -*-===//
//
// Typed views of the module attributes that zb-partition-stages
// (`zb.pipeline`) and zb-schedule (`zb.schedule`) attach, shared by the
// passes after them and by zb-compile.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TRANSFORMS_PIPELINEINFO_H
#define ZB_TRANSFORMS_PIPELINEINFO_H

#include "zb/Dialect/ZB/IR/ZBAttributes.h"
#include "zb/Schedule/OptimizerSync.h"
#include "zb/Schedule/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace zb {

/// One pipeline stage: its outlined functions, costs (ms, per microbatch) and
/// memory (bytes per microbatch: M_B kept by F, M_W kept by B for W).
struct StageInfo {
  int64_t stage;
  std::string forward, backwardInput, backwardWeight;
  double tF, tB, tW, tComm;
  int64_t mB, mW;
  /// Coefficients of variation of T_F/T_B/T_W measured by zb-run --profile
  /// ("cv_f", "cv_b", "cv_w" of a profiled stage); negative = not measured.
  double cvF = -1, cvB = -1, cvW = -1;
};

/// A parameter or batch input of the model (argument `index` of the
/// original function).
struct ModelValueInfo {
  std::string name;
  int64_t index;
  mlir::RankedTensorType type;
  /// Stages using it, increasing. A parameter with several stages is tied:
  /// each of those stages holds a copy (zb.pipeline `stages`, else `stage`).
  llvm::SmallVector<int64_t> stages;
};

struct PipelineInfo {
  int64_t numStages = 0; // global stages P * V
  int64_t numRanks = 0;  // P
  int64_t numChunks = 1; // V, chunks (virtual stages) per rank
  std::string target;
  llvm::SmallVector<StageInfo> stages;
  llvm::SmallVector<ModelValueInfo> params, inputs;

  /// Reads `zb.pipeline`; emits an error on the module and fails when it is
  /// missing or malformed.
  static mlir::FailureOr<PipelineInfo> read(mlir::ModuleOp module);
  /// The scheduling problem (one rank per stage) for `microbatches`
  /// microbatches and a memory limit in bytes per rank (0 = unlimited).
  /// The scheduling problem of this pipeline: per-stage T_F/T_B/T_W/T_comm
  /// and M_B/M_W, and the activation memory limit in bytes (\p memoryLimits:
  /// empty = none, one value for every rank, or one per rank).
  sched::Problem toProblem(int64_t microbatches,
                           llvm::ArrayRef<double> memoryLimits) const;

  /// The pipeline as a schedule with \p directions routes sees it
  /// (DualPipe, sched::Schedule::directions = 2): the L = numStages model
  /// stages repeated once per route, global stage d*L + s computing model
  /// stage s (the same functions), so numStages = D*L and numChunks = D*V;
  /// a parameter or input used by model stage s is used by every copy
  /// d*L + s (a parameter on several ranks is then tied: its copies'
  /// gradients are summed, zb-lower-pipeline). The identity for D = 1.
  PipelineInfo withRoutes(int directions) const;
};

/// The attribute form of a schedule: {name, microbatches, bubble_rate,
/// makespan_ms, peak_memory, stage_to_rank, ranks = [["F0.0", ...], ...]}.
/// With \p sync (post-validation): optimizer_sync and validate_before.
ScheduleAttr scheduleToAttr(mlir::MLIRContext *ctx,
                                    const sched::Schedule &schedule,
                                    const sched::SimResult &sim,
                                    int64_t microbatches,
                                    const sched::OptimizerSyncTiming *sync =
                                        nullptr);
/// The validate_before of `zb.schedule` (one action index per rank), empty
/// when the schedule has no post-validation.
llvm::SmallVector<int64_t> readValidatePositions(mlir::ModuleOp module);
/// Reads `zb.schedule` back; fails with an error on the module.
mlir::FailureOr<sched::Schedule> readSchedule(mlir::ModuleOp module,
                                              int64_t *microbatches);

/// Costs of one stage that replace the cost model's: measured by `zb-run
/// --profile` or summed from the GPU kernels (zb-compile --gpu-costs).
struct StageCostOverride {
  double tF = 0, tB = 0, tW = 0, tComm = 0; ///< ms per microbatch
  /// Coefficients of variation where measured; absent: the stage's stay.
  std::optional<double> cvF, cvB, cvW;
};

/// Replaces the T_F/T_B/T_W/T_comm (ms) of every stage in `zb.pipeline` by
/// `costs` (entry i is stage i) and marks the stages profiled; the data
/// comes from the caller (zb-compile reads --profile or costs the kernels;
/// zb-schedule's `profile` option reads the file for zb-opt). Fails with an
/// error on the module that starts with `source` (e.g. "profile 'p.json'")
/// when the counts differ: "<source>: has 3 stages, the model has 4".
mlir::LogicalResult applyStageCosts(mlir::ModuleOp module,
                                    llvm::ArrayRef<StageCostOverride> costs,
                                    llvm::StringRef source);

} // namespace zb

#endif // ZB_TRANSFORMS_PIPELINEINFO_H
