//===- Runner.h - zb-run: the host runner ------------------------*- C++
//-*-===//
//
// zb-run's behaviour behind its option parsing (the analogue of MLIR's
// JitRunner, mlir/lib/ExecutionEngine/JitRunner.cpp, behind
// mlir/tools/mlir-runner/mlir-runner.cpp):
//
//  - outside an MPI job (the launcher): read DIR/plan.json, check every
//    rank's files, then run the one rank in this process or start
//    `mpirun -np N` of the same command (Launcher.h);
//  - inside one: every rank loads its rank program (RankProgram.h) and runs
//    the step loop: feed the step's samples, call the program, apply the
//    optimizer, trace; rank 0 gathers losses, times and traces, replays the
//    schedule (Replay.h) and prints the report (Report.h).
//
// Setup errors on any rank end every rank cleanly with one line,
// "zb-run: rank R: <message>" (the lowest failing rank); launcher errors are
// "zb-run: error: <message>".
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_RUNNER_H
#define ZB_RUNNER_RUNNER_H

#include "zb/Formats/Training.h"
#include "zb/Runner/GradSync.h"
#include "zb/Runner/RankProgram.h"

#include <optional>
#include <string>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::Plan;

/// --backend: cpu (MPI + OpenBLAS), cuda (kernels on one GPU per rank),
/// auto (cuda when the plan targets cuda, else cpu).
enum class Backend { Cpu, Cuda, Auto };
enum class ReportFormat { Text, Json };

/// The optimizer flags of zb-run (std::nullopt: not given), over plan.json's
/// optimizer and a resumed checkpoint's settings (resolveTrainingSettings).
struct TrainingFlags {
  std::optional<double> lr;                              ///< --lr
  std::optional<formats::LrScheduleKind> lrSchedule;     ///< --lr-schedule
  std::optional<int64_t> warmupSteps, decaySteps;        ///< --warmup-steps, --decay-steps
  std::optional<double> minLr;                           ///< --min-lr
  std::optional<double> weightDecay, beta1, beta2, eps;  ///< --weight-decay, --betas, --eps
  std::optional<std::string> noDecay;                    ///< --no-decay
};

/// zb-run's options (tools/zb-run/zb-run.cpp documents each one).
struct RunOptions {
  std::string planDir; ///< the zb-compile output directory
  int numRanks = 0;    ///< --ranks N
  bool ranksGiven = false;
  /// --data-parallel D: pipelines of the job (0: plan.json's data_parallel).
  int dataParallel = 0;
  /// --hosts LIST: the nodes of the mpirun zb-run starts (mpirun --host
  /// LIST, NAME[:SLOTS],... holding exactly the job's ranks); "" = this
  /// machine.
  std::string hosts;
  int steps = 20;
  DataOptions data;
  std::string dumpBatch; ///< --dump-batch FILE
  bool deterministic = false;
  /// --cuda-graphs on|off (the CUDA backend's step graphs).
  bool cudaGraphs = true;
  /// --lr, --lr-schedule, --warmup-steps, ...: over plan.json's optimizer.
  TrainingFlags training;
  /// --eval-every N (0: no evaluation), --eval-steps K: every N steps and
  /// after the last, the mean loss over K validation batches (no optimizer
  /// step); the validation data is DataOptions::valData or ::valSplit.
  int64_t evalEvery = 0;
  int64_t evalSteps = 10;
  /// --metrics FILE: JSON lines of every step and evaluation (rank 0;
  /// appended to when resuming). "" = none.
  std::string metricsFile;
  std::string traceFile;    ///< --trace FILE
  std::string profileFile;  ///< --profile FILE
  Backend backend = Backend::Auto;
  int printEvery = 1;
  bool reportGradients = false;
  /// --overlap-steps: no barrier between steps; samples gathered at the end.
  bool overlapSteps = false;
  /// --checkpoint DIR, --checkpoint-every N (0: only after the last step),
  /// --resume DIR (zb/Formats/Checkpoint.h).
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  std::string resumeDir;
  /// --comm-timeout SECONDS: the communication watchdog (0: none).
  double commTimeoutSeconds = 300;
  std::string saveParams; ///< --save-params FILE
  ReportFormat reportFormat = ReportFormat::Text;
  /// --grad-clip, --optimizer-sync, --nonfinite, --inject-nan,
  /// --inject-grad-scale (zb/Runner/GradSync.h).
  GradSyncOptions gradSync;
};

/// Checks the options that need no plan (--steps >= 1, --print-every >= 1,
/// --ranks >= 1, --eval-every needs validation data, ...).
llvm::Error checkOptions(const RunOptions &options);

/// The run's optimizer settings: plan.json's optimizer, then a resumed
/// checkpoint's settings (`resumed`), then the flags. A cosine or linear
/// schedule whose decay end neither the flags nor the checkpoint give
/// decays until `lastStep` (the run's last step). Errors (checked by
/// formats::checkTrainingSettings) name the flag.
llvm::Expected<formats::TrainingSettings>
resolveTrainingSettings(const TrainingFlags &flags, const Plan &plan,
                        const std::optional<formats::TrainingSettings> &resumed,
                        int64_t lastStep);

/// The backend that runs `plan`: Auto follows the plan's target. A plan
/// compiled for --target cuda runs only on the cuda backend and a cpu plan
/// only on the cpu backend (its rank programs contain no kernels); the cuda
/// backend needs a usable driver and device. Errors name the plan and the fix.
llvm::Expected<Backend> resolveBackend(Backend requested, const Plan &plan);

/// Everything zb-run does after parsing its options (argc/argv are main's,
/// for mpirun and MPI_Init). Returns the process exit code.
int runZbRun(const RunOptions &options, int argc, char **argv);

} // namespace zb::runner

#endif // ZB_RUNNER_RUNNER_H
