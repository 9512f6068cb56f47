//===- Report.h - zb-run: what rank 0 prints ---------------------*- C++
//-*-===//
//
// The per-step lines and the end-of-run report of zb-run, as text or as one
// JSON document (--report-format json; docs/plan-json.md, "What zb-run
// reports about the bubble"), and the gradient report of
// --report-gradients. Pure formatting: no MPI, no clock.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_REPORT_H
#define ZB_RUNNER_REPORT_H

#include "zb/Runner/GradSync.h"
#include "zb/Formats/Plan.h"
#include "zb/Runner/Replay.h"
#include "zbrt/zbrt.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::Plan;

/// One training step as rank 0 reports it.
struct StepResult {
  int64_t step = 0;  ///< 1-based
  double loss = 0;   ///< loss / num_microbatches of the loss rank
  double timeMs = 0; ///< max over ranks of the step's wall time
  double lr = 0;     ///< the learning rate of the step's optimizer step
  /// The global L2 norm of the mean gradient (before clipping), where known.
  std::optional<double> gradNorm;
  bool skipped = false; ///< the optimizer step was skipped (non-finite)
  /// Token ids per second of step time (text and token data).
  std::optional<double> tokensPerSecond;
  /// Estimated seconds until the run's last step (rank 0's wall clock).
  std::optional<double> etaSeconds;
};

/// One evaluation (zb-run --eval-every): the mean loss of `batches`
/// validation batches after step `step`.
struct EvalResult {
  int64_t step = 0;
  double loss = 0;
  int64_t batches = 0;
};

/// Where one world rank ran and what carried its messages, gathered from
/// every world rank for the report's "node" lines and "placement" array.
struct RankPlacement {
  std::string node; ///< MPI_Get_processor_name
  /// The lowest world rank of its MPI_COMM_TYPE_SHARED communicator: Open
  /// MPI gives ranks with the same value shared memory (its vader BTL) and
  /// reaches the others over the network (its TCP BTL, or another
  /// network's).
  int32_t sharedMemoryGroup = 0;
  /// Under --backend cuda: the device ordinal (-1 on the CPU), the world
  /// ranks (bit r, r < 64) its pipeline messages reach through NCCL,
  /// resp. host-staged MPI (ZbrtCudaStats::ncclPeers, hostStagedPeers),
  /// and how its gradients are all-reduced (ZbrtCudaStats::allReduce: "",
  /// "nccl", "mpi: <why NCCL is not used>").
  int32_t cudaDevice = -1;
  uint64_t ncclPeers = 0, hostStagedPeers = 0;
  std::string cudaAllReduce;
};

/// Per world rank: the transports of its pipeline messages and of its
/// gradient all-reduce, as rankTransports names them.
struct RankTransports {
  /// World rank of each pipeline peer (plan.json ranks[].sends, both
  /// directions) -> "mpi shared memory", "mpi network", "nccl",
  /// "host-staged mpi shared memory" or "host-staged mpi network".
  std::vector<std::pair<int32_t, std::string>> pipeline;
  /// D > 1: "mpi shared memory" / "mpi network" (the group's other ranks
  /// on this rank's node / on others; "mpi shared memory and network"
  /// mixed), "nccl", or "host-staged " + one of the MPI ones (the CUDA
  /// backend's fallback). "" for one pipeline.
  std::string allReduce;
};

/// Everything of the end-of-run report (rank 0).
struct RunReport {
  /// D: pipelines of the job (zb/Runner/Layout.h). Losses are means over
  /// the step's D*m microbatches; per-rank numbers are pipeline 0's.
  int32_t dataParallel = 1;
  /// Per world rank: the node it ran on (MPI_Get_processor_name).
  std::vector<std::string> nodes;
  /// Per world rank: its node, device and transports (empty: only `nodes`
  /// is known).
  std::vector<RankPlacement> placement;
  std::vector<StepResult> steps;
  std::vector<EvalResult> evals;
  /// Per rank: mean realized bubble rate over the measured steps
  /// (zbrt::computeBubble); std::nullopt for a rank without traced actions.
  std::vector<std::optional<double>> realizedBubbleRate;
  /// Per rank: mean replayed bubble rate (replayStep) over replaySteps
  /// steps; empty when no step was replayed.
  std::vector<double> replayedBubbleRate;
  int64_t replaySteps = 0;
  std::optional<MeasuredPrediction> atMeasured;
  std::vector<int64_t> peakHeapBytes; ///< per rank (zbrt_pool_stats)
  /// Per rank under --backend cuda (zbrt_cuda_stats); empty otherwise.
  std::vector<ZbrtCudaStats> cuda;
  std::string traceFile;              ///< "" when no trace was written
  std::string profileFile;            ///< "" when no profile was written
  /// Clipped / skipped steps and rollbacks (mode "none" without checks).
  GradSyncReport gradSync;
  /// --overlap-steps: wall-clock ms per step from the start of step 2 to
  /// the end of the last (the slowest rank), iterations overlapping.
  std::optional<double> wallStepTimeMs;

  /// Mean step time (ms) of the measured steps: all but the run's first
  /// (it warms up), or the first alone.
  double meanStepTimeMs() const;
  /// "steps 2-S" or "step 1" (from the first step of a resumed run).
  std::string measuredSteps() const;
};

/// Per world rank w = d * P + s (zb/Runner/Layout.h, P = plan.numRanks,
/// D = report.dataParallel) of report.placement: the transport to each
/// pipeline peer and of the gradient all-reduce. Empty without placement.
std::vector<RankTransports> rankTransports(const Plan &plan,
                                           const RunReport &report);

/// "step   3  loss 0.412000  time 1.62 ms".
/// A number of the JSON reports and the --metrics file: null where it is
/// not finite (a NaN loss of a skipped step, an unknown gradient norm),
/// which JSON cannot hold.
llvm::json::Value jsonNumber(double v);

/// "step  12  loss 2.345678  time 8.40 ms  lr 3.00e-03  norm 1.2345
/// 24381 tok/s  eta 1m04s" (norm, tok/s and eta where known), with a
/// newline or (a terminal's progress line) without.
void printStepLine(llvm::raw_ostream &os, const StepResult &step,
                   bool newline = true);

/// The text report: schedule, predicted bubble rates, realized step time,
/// realized/predicted bubble per rank, replayed and at-measured bubble,
/// one line per node ("node n1: ranks 0-1, cpu; pipeline messages mpi
/// shared memory; gradient all-reduce mpi network"), peak heap, trace and
/// profile files.
void printTextReport(llvm::raw_ostream &os, const Plan &plan,
                     const RunReport &report);

/// The same as one JSON document (plan, schedule, num_ranks, num_stages,
/// num_microbatches, steps, predicted, mean_step_time_ms,
/// replayed_bubble_rate, at_measured_costs, peak_heap_bytes, nodes,
/// placement (per world rank: node, device, pipeline transports by peer,
/// allreduce), realized_bubble_rate, trace, profile).
void printJsonReport(llvm::raw_ostream &os, const Plan &plan,
                     const RunReport &report);

/// --report-gradients: the loss and the L2 norm of every parameter's mean
/// gradient (norms[i] for plan.params[i]), as "loss X" / "grad_norm NAME X"
/// lines or {"loss": X, "grad_norm": {NAME: X, ...}}.
void printGradientReport(llvm::raw_ostream &os, double loss, const Plan &plan,
                         const std::vector<double> &norms, bool json);

} // namespace zb::runner

#endif // ZB_RUNNER_REPORT_H
