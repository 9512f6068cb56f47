//===- BuildOptions.h - Options and reports of the schedule builders ------===//
//
// What a schedule builder takes besides the Problem (BuildOptions) and what
// the ILP builder reports (IlpReport). Shared by the builders
// (lib/Schedule/Builders.h) and the name -> builder dispatch
// (zb/Schedule/Registry.h). No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_BUILDOPTIONS_H
#define ZB_SCHEDULE_BUILDOPTIONS_H

#include <limits>
#include <string>

namespace zb::sched {

/// Options for buildSchedule.
struct BuildOptions {
  /// ILP: wall-clock limit for CBC in seconds.
  double timeLimitSeconds = 60;
  /// ILP: CBC threads.
  int threads = 1;
  /// ILP: print CBC's log to stderr.
  bool verbose = false;
  /// Heuristic and ILP warm start: widen the search beyond the paper (off by
  /// default, so that zb-1p / zb-2p are exactly the paper's heuristic):
  ///   - the 8 flag settings are also run with memory limits below the target
  ///     (the greedy is not monotone in the limit; every result is checked
  ///     against the real limit),
  ///   - then a local search moves single F, B or W passes within a window of
  ///     their rank's order and keeps strict improvements of the stage span
  ///     (ties: sum of stage spans, makespan) that respect the memory limit
  ///     (at most searchEvaluations simulations).
  bool localSearch = false;
  /// Local search: the budget of simulated candidate orders.
  int searchEvaluations = 4000;
};

/// What the ILP solver reported (Appendix G). Filled by buildSchedule("ilp").
struct IlpReport {
  /// CBC's status: "optimal", "optimal (LP relaxation)" (the LP relaxation
  /// already proves the warm start optimal; CBC not run), "time limit
  /// (feasible)", "infeasible", ...
  std::string status;
  /// True only if CBC proved optimality.
  bool provenOptimal = false;
  /// Objective of the returned schedule (stage span, ms), the best lower
  /// bound on the optimum (ms): the larger of CBC's bound and the analytic
  /// bound, rounded up to the grid of the times (the largest g that divides
  /// every T_F, T_B, T_W, T_comm; every stage span is a multiple of it), or
  /// the objective itself when CBC proved optimality; and gap =
  /// (objective - bestBound) / objective.
  double objective = 0, bestBound = 0, gap = 0;
  /// stageSpanLowerBound at the problem's memory limit (ms); the model's
  /// objective column is bounded below by it, so cbcBound >= analyticBound.
  double analyticBound = 0;
  /// CBC's own bound (ms; NaN if it had none): its final best possible
  /// objective when it returned ("final"), else the latest one from its
  /// progress messages ("progress"), else the optimum of the LP relaxation
  /// solved (by Clp) before the branch and bound ("LP relaxation").
  double cbcBound = std::numeric_limits<double>::quiet_NaN();
  std::string cbcBoundSource = "none";
  /// Optimum of the LP relaxation (ms; NaN if not solved in time).
  double lpBound = std::numeric_limits<double>::quiet_NaN();
  /// Objective of the warm start (the heuristic), ms.
  double warmStartObjective = 0;
  /// Wall time spent in CBC, seconds.
  double seconds = 0;
  int numVariables = 0, numConstraints = 0;
};

} // namespace zb::sched

#endif // ZB_SCHEDULE_BUILDOPTIONS_H
