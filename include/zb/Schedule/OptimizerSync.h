//===- OptimizerSync.h - Optimizer synchronisation in the schedule -*- C++ -*-===//
//
// The optimizer step needs two pieces of state from every rank: the global
// gradient norm (for clipping) and a global finite flag (to skip a step with
// a NaN/Inf gradient). How the ranks get them changes the schedule across
// iterations (the Zero Bubble paper, Section 4, Figure 4, and Appendix E):
//
//  - None: no state is exchanged; each rank steps when its passes end.
//  - AllReduce: the synchronous reference. Every rank waits for an
//    all-reduce of the state that starts when the last rank's passes end
//    and takes ceil(log2 p) message latencies (recursive doubling); the
//    next iteration starts after it on every rank, which turns the skew of
//    the parallelogram into a bubble (the paper measures about 8 % of ZB-2p's
//    throughput).
//  - PostValidation: the partially reduced state travels along the ranks,
//    0 -> 1 -> ... -> p-1 (the "previous stage" of the paper): rank r
//    receives it from rank r-1, adds its own, passes it on and steps its
//    optimizer eagerly under it. The last rank then holds the fully reduced
//    state and sends it back to every rank (one message each, not relayed);
//    it arrives during the next iteration's warm-up, where each rank
//    validates its eager step before the first pass that starts after the
//    arrival. Passes of the next iteration that ran before the validation
//    are redone when the step is rolled back (rare: clipping or a NaN/Inf).
//
// The state messages are a few bytes: each costs the sending rank's T_comm
// (latency) and occupies no compute stream. The optimizer step takes
// OptimizerSyncOptions::costOptimizer on every rank (0 in the paper's
// schedules, which leave it out).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SCHEDULE_OPTIMIZERSYNC_H
#define ZB_SCHEDULE_OPTIMIZERSYNC_H

#include "zb/Schedule/Schedule.h"

namespace zb::sched {

enum class OptimizerSync { None, AllReduce, PostValidation };

/// "none", "all-reduce" or "post-validation".
llvm::StringRef optimizerSyncName(OptimizerSync mode);
/// The inverse of optimizerSyncName; an error lists the accepted names.
llvm::Expected<OptimizerSync> parseOptimizerSync(llvm::StringRef name);

struct OptimizerSyncOptions {
  OptimizerSync mode = OptimizerSync::PostValidation;
  /// T_opt: the optimizer step on each rank, ms.
  double costOptimizer = 0;
  /// Iterations simulated back to back for the steady state (>= 2).
  int iterations = 8;
};

/// One rank's optimizer synchronisation at the end of the first iteration
/// (absolute ms from the first iteration's start).
struct RankSync {
  double passesEnd = 0; ///< end of the rank's last pass
  /// The state this rank waits for before its step arrives: the partial
  /// state from rank r-1 (PostValidation, r > 0) or the all-reduced state
  /// (AllReduce); -1 when it waits for none.
  double stateIn = -1;
  /// PostValidation, r < p-1: the partial state leaves for rank r+1
  /// (-1 otherwise).
  double stateOut = -1;
  double stepStart = 0, stepEnd = 0; ///< the optimizer step (eager: PV)
  /// PostValidation: the fully reduced state is at this rank (the last rank
  /// has it when its step starts and validates at once); -1 otherwise.
  double fullArrives = -1;
  /// PostValidation: the rank validates before its action number
  /// validateBefore of the next iteration (Schedule::perRank[r] index; the
  /// list size = after all of them); 0 otherwise.
  size_t validateBefore = 0;
  /// PostValidation: F passes of the next iteration before the validation
  /// (redone when the step is rolled back).
  int forwardsBeforeValidation = 0;
};

struct OptimizerSyncTiming {
  OptimizerSync mode = OptimizerSync::None;
  std::vector<RankSync> ranks;
  /// The first and the second iteration (absolute times, ms).
  SimResult first, second;
  /// Steady-state iteration time, ms: (end of the last pass of iteration K
  /// - end of the last pass of iteration 1) / (K - 1).
  double period = 0;
  /// Busiest rank's compute per iteration, ms (passes + T_opt).
  double idealTime = 0;
  /// 1 - idealTime / period.
  double bubbleRate = 0;
};

/// Simulates `options.iterations` iterations of \p schedule back to back
/// with the optimizer synchronisation of `options.mode` between them (each
/// iteration with SimOptions::rankReady = the end of the rank's previous
/// optimizer step). Errors: iterations < 2, costOptimizer < 0, or a
/// schedule that cannot be simulated.
llvm::Expected<OptimizerSyncTiming>
simulateOptimizerSync(const Problem &problem, const Schedule &schedule,
                      const OptimizerSyncOptions &options);

/// PostValidation: when rank \p rank validates, ms: at its step for the
/// last rank (it holds the full state), else at the start of its action
/// validateBefore of the second iteration (the end of its passes when that
/// is past the last action).
double validationTime(const OptimizerSyncTiming &timing, int rank);

/// Checks that the state messages of \p timing fit the schedule's own
/// messages: the programs of two consecutive iterations (communication-
/// Program) with, between them, the partial-state chain and the full-state
/// sends (PostValidation) or an all-reduce as sends to and receives from
/// every rank (AllReduce), and the full-state receive at validateBefore of
/// the second iteration, must match message for message and run to
/// completion with buffered sends (the runtime sends the state with
/// MPI_Isend), with activations, gradients and each kind of state message
/// on channels of their own (MPI tags). The error names the first conflict.
llvm::Error verifyOptimizerSync(const Problem &problem,
                                const Schedule &schedule,
                                const OptimizerSyncTiming &timing);

} // namespace zb::sched

#endif // ZB_SCHEDULE_OPTIMIZERSYNC_H
