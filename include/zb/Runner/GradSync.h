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
//    reduction (MPI_Allreduce), then steps (or not) with the final state;
//  - post-validation (default), the paper's Figure 4: the partially reduced
//    state travels along the ranks 0 -> 1 -> ... -> p-1 at the end of a
//    step; rank r receives it from r-1, adds its own, passes it on and steps
//    eagerly under it (no step when it is not finite or its norm already
//    exceeds the clipping threshold). The last rank then holds the full
//    state, decides at once and sends it to every other rank (MPI_Isend).
//    Each rank validates when the next step's program calls
//    zbrt_validate_optimizer, at the point of its warm-up where the schedule
//    expects the state (zb-schedule, plan.json "optimizer_sync"; plans
//    without it validate between steps): on a non-finite flag the eager step
//    is rolled back, and when clipping should have applied it is rolled
//    back and redone with the clipped gradient. Rollback is the in-place
//    arithmetic inverse of the optimizer (zbrt_adamw_rollback /
//    zbrt_sgd_rollback, the paper's Algorithm 1): no copy of parameters or
//    moments; the previous step's gradients stay available because the
//    gradient buffers alternate between two sets (RankProgram::
//    swapGradientBuffers). After an amended step every rank runs the current
//    step again (its passes before the validation used the eager
//    parameters). The parameters equal all-reduce's within the rollback's
//    rounding (a few float ulps per rolled-back step).
//
// The state messages use a communicator of their own (MPI_Comm_dup), so
// they never match the passes' messages.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_GRADSYNC_H
#define ZB_RUNNER_GRADSYNC_H

#include "zb/Runner/RankProgram.h"
#include "zb/Formats/Training.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::TrainingSettings;

/// zb-run --optimizer-sync: AllReduce or PostValidation (None: no checks).
using OptimizerSync = zb::sched::OptimizerSync;
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
  /// None without checks (zb::sched::optimizerSyncName prints it).
  OptimizerSync mode = OptimizerSync::None;
  double clipNorm = 0;
  std::vector<GradSyncEvent> events;
  int64_t rollbacks = 0; ///< rank-steps undone (all ranks; at the end)
  /// Steps whose passes ran again after the previous step was amended
  /// (post-validation with in-program validation).
  int64_t redoneSteps = 0;
};

/// Parses "STEP:RANK" / "STEP:FACTOR" (STEP >= 1).
llvm::Expected<std::pair<int64_t, double>>
parseStepValue(llvm::StringRef flag, llvm::StringRef text);

class GradSync {
public:
  /// `log`: where rank 0 prints skipped and clipped steps as they are
  /// decided (null: nowhere, e.g. under --report-format json).
  /// `worldSize`: the number of ranks. Collective (duplicates
  /// MPI_COMM_WORLD). Installs the zbrt_validate_optimizer hook when the
  /// plan's programs validate (plan.json "optimizer_sync").
  /// `settings`: the optimizer, its lr schedule (the lr of a step is
  /// settings.lr.at(step)) and hyper-parameters; `decay`: per plan.json
  /// parameter, whether AdamW decays it (formats::weightDecayMask).
  GradSync(const GradSyncOptions &options, RankProgram &rp,
           const TrainingSettings &settings, std::vector<bool> decay,
           int32_t rank, int32_t worldSize, llvm::raw_ostream *log);
  ~GradSync();

  /// Before a step's program runs: validates a pending step here when the
  /// program does not, else keeps its gradients for the validation inside
  /// the program.
  void beforeStep();
  /// After the step's program returned: true when the previous step was
  /// amended after this step's passes had started on the eager parameters;
  /// the caller then runs the step again (every rank decides the same).
  bool redoStep();
  /// After step `step` (0-based) computed its gradients: the optimizer step
  /// (synchronous, eager or plain).
  void afterStep(int64_t step);
  /// Validates a pending eager step (post-validation): waits for the full
  /// state and decides. The zbrt_validate_optimizer hook; call before the
  /// parameters are read at the end.
  void settle();
  /// Validates a pending step between two steps (a checkpoint): the next
  /// step then runs on validated parameters and is not redone.
  void settleBetweenSteps() {
    settle();
    amended = false;
  }
  /// Optimizer steps applied (AdamW's t); a resumed run starts from its
  /// checkpoint's.
  int64_t optimizerStep() const { return applied; }
  void setOptimizerStep(int64_t t) { applied = t; }
  /// Collective: the run's report (complete on rank 0).
  GradSyncReport finish();

  /// What this rank last decided: the step (1-based; 0 before any), the
  /// global L2 norm of its mean gradient (NaN when not computed: skipped or
  /// without checks) and whether it was skipped. The last rank decides each
  /// step within it; under post-validation the others one step later.
  struct Decision {
    int64_t step = 0;
    double norm = std::numeric_limits<double>::quiet_NaN();
    bool skipped = false;
  };
  const Decision &lastDecision() const { return decided; }
  /// The log is a terminal with a progress line: each message first clears
  /// the line.
  void setClearLine(bool clear) { clearLine = clear; }

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
  using Grads = std::map<int64_t, Buffer>;
  /// `step`: the training step (0-based), whose lr the schedule gives.
  void apply(const Grads &grads, double factor, int64_t t, int64_t step);
  void rollback(const Grads &grads, double factor, int64_t t, int64_t step);
  /// AdamW (`adamw`) or SGD over `grads` with the lr of `step`: one
  /// multi-tensor call per weight-decay group.
  void optimizerCall(const Grads &grads, double factor, int64_t t,
                     int64_t step, bool rollback);
  /// Acts on the reduced state of step `step` computed from `grads`;
  /// `eager` = this rank already stepped with factor 1. Returns true when
  /// the step was amended (skipped or clipped).
  bool decide(int64_t step, const GlobalState &global, bool eager,
              const Grads &grads);
  bool isEager(const GlobalState &partial) const;
  [[noreturn]] void stopOnNonFinite(int64_t step, llvm::StringRef param);

  GradSyncOptions options;
  RankProgram &rp;
  const TrainingSettings &settings; ///< the caller's
  std::vector<bool> decay;          ///< by parameter index
  Decision decided;
  bool clearLine = false;
  int32_t rank, worldSize;
  llvm::raw_ostream *log;
  MPI_Comm comm = MPI_COMM_NULL; ///< the state messages' own
  /// The programs call zbrt_validate_optimizer (post-validation plans).
  bool programValidates = false;
  /// The previous step was amended: redo the current step's passes.
  bool amended = false;
  /// Outstanding sends of state messages (completed at the next step and
  /// at the end).
  std::vector<MPI_Request> sends;
  std::vector<GlobalState> sendBufs;
  float gradScale;
  int64_t applied = 0; ///< optimizer steps applied (AdamW's t)
  int64_t myRollbacks = 0;
  GradSyncReport report;
  // Post-validation: the step waiting for its reduced state.
  struct Pending {
    int64_t step;
    bool eager;
    GlobalState full;
    MPI_Request request = MPI_REQUEST_NULL; ///< the full state's receive
    bool gradsSwapped = false; ///< its gradients are rp.gradsPrevious
  };
  std::optional<Pending> pending;
};

/// The report's text lines and JSON object.
void printGradSyncText(llvm::raw_ostream &os, const GradSyncReport &report);
llvm::json::Value gradSyncJSON(const GradSyncReport &report);

} // namespace zb::runner

#endif // ZB_RUNNER_GRADSYNC_H
