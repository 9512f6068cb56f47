//===- GradSync.h - Gradient clipping, non-finite check, post-validation -===//
//
// The optimizer step of zb-run with the two pieces of state that need every
// stage (the Zero Bubble paper, Section 4 and Appendix C):
//
//  - the global L2 norm of the mean gradient over all parameters of all
//    ranks (tied copies counted once, on the rank of their first copy) for
//    clipping (--grad-clip NORM: the gradient is scaled by NORM / norm when
//    norm > NORM);
//  - a global finite flag: a NaN or Inf in any gradient skips the step
//    (parameters and optimizer state untouched, the AdamW step count not
//    advanced; --nonfinite skip), or stops the job naming the step, rank and
//    parameter (--nonfinite stop).
//
// Two ways to get them (--optimizer-sync):
//  - all-reduce: the synchronous reference; every rank waits for the
//    reduction, then steps (or not) with the final state;
//  - post-validation (default): every rank starts the reduction without
//    waiting and steps eagerly under its own partial state (no clipping; no
//    step when its own gradients are not finite); the reduced state is
//    validated before the next step's passes (or at the end of training):
//    on a non-finite flag the step is rolled back, and when clipping should
//    have applied it is rolled back and redone with the clipped gradient.
//    Rollback is the in-place arithmetic inverse of the optimizer
//    (zbrt_adamw_rollback / zbrt_sgd_rollback, the paper's Algorithm 1): no
//    copy of parameters or moments. The parameters then equal all-reduce's
//    within the rollback's rounding (a few float ulps per rolled-back step).
//
// This runtime-level post-validation overlaps the reduction with the
// optimizer step; the paper's version also moves the partial state along
// the pipeline inside the schedule (not done here: zb's rank programs carry
// no optimizer-state messages yet).
//
//===----------------------------------------------------------------------===//
#ifndef ZBHOST_GRADSYNC_H
#define ZBHOST_GRADSYNC_H

#include "zbhost/RankProgram.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

namespace zb::host {

enum class OptimizerSync { AllReduce, PostValidation };
enum class NonFinite { Skip, Stop, Ignore };

struct GradSyncOptions {
  double clipNorm = 0; ///< --grad-clip; 0 = no clipping
  OptimizerSync sync = OptimizerSync::PostValidation;
  NonFinite nonFinite = NonFinite::Skip;
  /// --inject-nan STEP:RANK (1-based step): a NaN in that rank's first
  /// gradient after the step's passes (fault injection for tests).
  std::optional<std::pair<int64_t, int32_t>> injectNan;
  /// --inject-grad-scale STEP:FACTOR: every gradient of that step multiplied
  /// by FACTOR (forces clipping).
  std::optional<std::pair<int64_t, double>> injectGradScale;
};

/// What happened to one step (rank 0 reports them).
struct GradSyncEvent {
  int64_t step = 0; ///< 1-based
  bool skipped = false; ///< else clipped
  double norm = 0;      ///< global gradient norm (clipped steps)
  int32_t rank = -1;    ///< first rank with a non-finite gradient
  std::string param;    ///< its first non-finite parameter
};

struct GradSyncReport {
  std::string mode = "none"; ///< "all-reduce" | "post-validation" | "none"
  double clipNorm = 0;
  std::vector<GradSyncEvent> events;
  int64_t rollbacks = 0; ///< rank-steps undone (all ranks; at the end)
};

/// Parses "STEP:RANK" / "STEP:FACTOR" (STEP >= 1).
llvm::Expected<std::pair<int64_t, double>>
parseStepValue(llvm::StringRef flag, llvm::StringRef text);

class GradSync {
public:
  /// `log`: where rank 0 prints skipped and clipped steps as they are
  /// decided (null: nowhere, e.g. under --report-format json).
  GradSync(const GradSyncOptions &options, RankProgram &rp,
           const OptimizerInfo &opt, int32_t rank, llvm::raw_ostream *log);
  ~GradSync();

  /// After step `step` (0-based) computed its gradients: the optimizer step
  /// (synchronous, eager or plain).
  void afterStep(int64_t step);
  /// Validates a pending eager step (post-validation); call before the next
  /// step's outputs are cleared and before the parameters are read at the
  /// end.
  void settle();
  /// Collective: the run's report (complete on rank 0).
  GradSyncReport finish();

private:
  struct GlobalState {
    double sumSquares = 0;       ///< of the mean gradient
    int64_t firstBad = kNoneBad; ///< (rank << 32) | parameter index
  };
  static constexpr int64_t kNoneBad = INT64_MAX;

  bool checks() const {
    return options.clipNorm > 0 || options.nonFinite != NonFinite::Ignore;
  }
  void inject(int64_t step);
  GlobalState local() const;
  /// The optimizer over this rank's parameters with the mean gradient
  /// scaled by `factor`, as optimizer step `t` (1-based).
  void apply(double factor, int64_t t);
  void rollback(double factor, int64_t t);
  /// Acts on the reduced state of step `step`; `eager` = this rank already
  /// stepped with factor 1.
  void decide(int64_t step, const GlobalState &global, bool eager);

  GradSyncOptions options;
  RankProgram &rp;
  const OptimizerInfo &opt; ///< the caller's (zb-run --lr may change it)
  int32_t rank;
  llvm::raw_ostream *log;
  float gradScale;
  int64_t applied = 0; ///< optimizer steps applied (AdamW's t)
  int64_t myRollbacks = 0;
  GradSyncReport report;
  // Post-validation: the step waiting for its reduced state.
  struct Pending {
    int64_t step;
    bool eager;
    GlobalState sendBuf, recvBuf;
    MPI_Request requests[2];
  };
  std::optional<Pending> pending;
};

/// The report's text lines and JSON object.
void printGradSyncText(llvm::raw_ostream &os, const GradSyncReport &report);
llvm::json::Value gradSyncJSON(const GradSyncReport &report);

} // namespace zb::host

#endif // ZBHOST_GRADSYNC_H
