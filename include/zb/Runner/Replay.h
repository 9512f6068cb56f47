//===- Replay.h - zb-run: measured pass times, replay, prediction -*- C++
//-*-===//
//
// What zb-run makes of the trace of its steps (docs/plan-json.md, "What
// zb-run reports about the bubble"):
//  - StageProfile: the per-stage pass costs over the measured steps (a
//    pass's duration and its own message work, PassCost), the
//    profile of the paper's profile-then-schedule loop (Qi et al., ICLR 2024,
//    Section 3), written as profile.json (zb/Formats/Profile.h);
//  - replayStep: the plan's schedule (DIR/schedule.json) simulated with one
//    step's traced duration of every F/B/W and T_comm = 0, so that realized
//    minus replayed is what the runtime adds;
//  - predictAtMeasuredCosts: the same schedule at the run's mean pass times
//    and its expectation under the run's pass-to-pass jitter
//    (zb::sched::estimateJitter).
// No MPI here: the caller gathers the events of all ranks and reduces the
// StageProfile (Runner.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_REPLAY_H
#define ZB_RUNNER_REPLAY_H

#include "zb/Formats/Plan.h"
#include "zb/Formats/Profile.h"

#include "zb/Schedule/Schedule.h"
#include "zbrt/Trace.h"

#include <optional>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::Plan;
using formats::Profile;

/// One traced F/B/W pass and its cost (ms): its duration plus the rank's
/// own work on the messages the pass needs (zbrt::TraceEvent::workFromUs):
/// the receives traced since the rank's previous pass and the sends traced
/// before its next one (after the last pass: all of them). A receive's wait
/// for its message is not part of any pass. The CPU backend moves messages
/// on the rank's own time (a copy and MPI_Isend, a probe and MPI_Recv), so
/// the schedule's simulation, which treats T_comm as latency that never
/// occupies a rank, sees them only this way; the realized bubble
/// (zbrt::computeBubble) counts the same work as busy.
struct PassCost {
  const zbrt::TraceEvent *pass;
  double ms;
};

/// The passes of `rank` in `events` (closed, of a stage below `numStages`)
/// in time order, with their costs.
std::vector<PassCost> passCosts(const std::vector<zbrt::TraceEvent> &events,
                                int32_t rank, int32_t numStages);

/// Per-stage F/B/W costs (PassCost) accumulated over the measured steps. Index
/// [3 * stage + kind], kind 0 = F, 1 = B, 2 = W; times in ms.
struct StageProfile {
  std::vector<double> sumMs, sumSqMs, count;
  std::vector<double> rank;      ///< rank that ran the stage (-1 unknown)
  /// Shortest wait of a receive of the stage's rank (the time before its
  /// message was there; the whole receive where the backend does not say):
  /// the latency a message adds beyond the passes' own message work.
  std::vector<double> minRecvMs;

  explicit StageProfile(int32_t numStages);
  int32_t numStages() const { return (int32_t)rank.size(); }

  /// Adds one step's events of rank `myRank` (open events and events of
  /// other stages are ignored).
  void add(const std::vector<zbrt::TraceEvent> &events, int32_t myRank);
  /// Mean duration (ms) of kind k (0 F, 1 B, 2 W) on `stage`; 0 if none.
  double meanMs(int32_t stage, int k) const;
  /// Coefficient of variation (population) of those durations; 0 if none.
  double cv(int32_t stage, int k) const;
  /// The stage rank's shortest receive wait (ms), a latency estimate; 0 if
  /// none.
  double commMs(int32_t stage) const;
  /// The profile.json document of these measurements.
  Profile toProfile(llvm::StringRef planPath, int64_t steps) const;
};

/// The plan's schedule as zb-compile planned it (DIR/schedule.json, the
/// "zb-schedule" JSON of include/zb/Schedule/IO.h).
struct PlannedSchedule {
  zb::sched::Problem problem;
  zb::sched::Schedule schedule;
};

/// Reads DIR/schedule.json. std::nullopt when it is missing (plans written
/// before it existed) or, with a note on stderr, does not match the plan.
std::optional<PlannedSchedule> readPlannedSchedule(const Plan &plan);

/// Replay of one step: the schedule simulated with the step's measured
/// cost (PassCost) of every F/B/W action (the events of all ranks) and
/// T_comm = 0.
/// Returns the per-rank bubble rates, or an empty vector when an action of
/// the schedule is missing from the trace.
std::vector<double> replayStep(const PlannedSchedule &ps,
                               const std::vector<zbrt::TraceEvent> &events);

/// The plan's schedule re-simulated at the costs measured in this run.
struct MeasuredPrediction {
  std::vector<double> rankBubbleRate;       ///< deterministic, mean costs
  std::vector<double> jitterRankBubbleRate; ///< estimateJitter
};

/// The schedule simulated at the costs of `profile` (means, coefficients of
/// variation, T_comm = shortest receive). std::nullopt, with a note on
/// stderr, when a stage ran no traced action or the simulation fails.
std::optional<MeasuredPrediction>
predictAtMeasuredCosts(const Plan &plan, const PlannedSchedule &ps,
                       const StageProfile &profile);

} // namespace zb::runner

#endif // ZB_RUNNER_REPLAY_H
