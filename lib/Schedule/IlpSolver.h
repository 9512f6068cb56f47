//===- IlpSolver.h - Running CBC on the ILP of Appendix G -------*- C++ -*-===//
//
// Internal to lib/Schedule. Ilp.cpp formulates the paper's Appendix G model
// into an IlpModel (columns, rows and the warm start; no CBC types) and reads
// the schedule back from a solution; IlpSolver.cpp runs CBC on the model in a
// child process under the time limit (runCbc) and states the run's status,
// bounds and gap (describeCbcRun, completeIlpReport).
//
//===----------------------------------------------------------------------===//

#ifndef ZB_LIB_SCHEDULE_ILPSOLVER_H
#define ZB_LIB_SCHEDULE_ILPSOLVER_H

#include "zb/Schedule/BuildOptions.h"

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace zb::sched::detail {

/// A mixed-integer program with a warm start, in the units of the caller
/// (Ilp.cpp scales times and memory to O(1): CBC's tolerances are absolute).
/// The objective is minimised.
struct IlpModel {
  int numCols = 0, numRows = 0;
  std::vector<double> colLb, colUb, obj, start; // per column
  std::vector<int> integers;
  std::vector<double> rowLb, rowUb;
  /// Triplets (row, col, value).
  std::vector<int> tRow, tCol;
  std::vector<double> tVal;
  /// Rows the warm start violates (0 for a consistent model).
  int startViolations = 0;

  /// A column with bounds [lb, ub], objective coefficient and warm-start
  /// value \p init; returns its index.
  int addCol(double lb, double ub, double objective, bool integer, double init);
  /// The row sum(coefs[k] * col[cols[k]]) >= rhs (sense 'G') or <= rhs
  /// ('L'); counts it in startViolations if the warm start violates it.
  void addRow(const std::vector<int> &cols, const std::vector<double> &coefs,
              char sense, double rhs);
};

/// How to run CBC on an IlpModel.
struct CbcSettings {
  /// The time limit of the whole buildIlp call (seconds) and when that call
  /// started: CBC's deadline is tEntry + timeLimitSeconds less a margin for
  /// decoding and verifying its solution.
  double timeLimitSeconds = 60;
  std::chrono::steady_clock::time_point tEntry;
  int threads = 1;
  /// Print CBC's log to stderr.
  bool verbose = false;
  /// CBC's "increment" in model units (a better solution is at least this
  /// much better; 0: not set).
  double increment = 0;
  /// The LP relaxation proves the warm start optimal when its optimum is at
  /// least this (model units); CBC is then not run.
  double proveThreshold = 0;
};

/// What the CBC run reported (model units).
struct CbcOutcome {
  bool finished = false; // false: killed at the deadline, or failed
  std::string error;
  bool provenOptimal = false, provenInfeasible = false,
       secondsLimitReached = false, hasSolution = false;
  int status = 0, secondary = 0;
  double objective = 0, bestBound = 0;
  std::vector<double> solution;
  /// Streamed by the child while it runs, so known even when it is killed:
  /// the optimum of the LP relaxation (Clp, before CBC starts) and CBC's
  /// latest "best possible" from its progress messages (NaN: none yet).
  double lpBound = std::nan(""), progressBound = std::nan("");
  /// The LP relaxation's optimum already meets the warm start (less the
  /// increment): the warm start is optimal and CBC was not run.
  bool lpProvesOptimal = false;
};

/// Solves \p model with CBC, warm-started from model.start, in a forked
/// child process that is killed at the deadline of \p settings; the child
/// first solves the LP relaxation (Clp). Never fails: a failure to start or
/// a child that did not finish is in the outcome (finished = false, error).
CbcOutcome runCbc(const IlpModel &model, const CbcSettings &settings);

/// The model's facts that the report of a run states.
struct IlpRunFacts {
  int numCols = 0, numRows = 0, startViolations = 0;
  double timeLimitSeconds = 0;
  /// ms per model time unit; the time grid in ms (0: none); the model's
  /// upper bound on the objective (model units).
  double tUnit = 1, grid = 0, ub = 0;
  /// The warm start's objective and the analytic lower bound (ms).
  double warmStartMs = 0, analyticMs = 0;
};

/// The status, CBC's bound and the best bound of a run (before the
/// solution is decoded); \p seconds is the time spent in CBC.
IlpReport describeCbcRun(const CbcOutcome &out, const IlpRunFacts &facts,
                         double seconds);

/// Completes \p rep once the returned schedule is known: its objective
/// \p realized (ms), whether optimality is proven (CBC proved it and the
/// schedule attains CBC's objective \p cbcObjective, or the LP relaxation
/// proved the warm start of objective \p warmStartMs optimal), the best
/// bound and the gap.
void completeIlpReport(const CbcOutcome &out, double cbcObjective,
                       double realized, double warmStartMs, IlpReport &rep);

} // namespace zb::sched::detail

#endif // ZB_LIB_SCHEDULE_ILPSOLVER_H
