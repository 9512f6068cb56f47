//===- IlpSolver.cpp - Running CBC on the ILP of Appendix G ---------------===//
//
// Solved with COIN-OR CBC through its C API, warm-started from the heuristic
// (Cbc_setMIPStartI), with a time limit. The status, best bound and gap are
// CBC's own. CBC runs in a forked child process that is killed at the
// deadline (CBC does not check its limit during the root LP or the MIP
// start). The child first solves the LP relaxation (Clp): if it already
// meets the warm start, that is optimal and CBC is skipped; otherwise the LP
// bound, and then every "best possible" of CBC's progress messages, is
// streamed to the parent, so a CBC bound is known even when the child is
// killed. Then the warm start is returned, labelled "time limit"; the
// analytic bound is reported next to CBC's. The model comes from Ilp.cpp.
//
//===----------------------------------------------------------------------===//

#include "IlpSolver.h"

#include "llvm/Support/FormatVariadic.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>

#include <fcntl.h>
#include <poll.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

using namespace zb::sched;
using namespace zb::sched::detail;

int IlpModel::addCol(double lb, double ub, double objective, bool integer,
                     double init) {
  colLb.push_back(lb);
  colUb.push_back(ub);
  obj.push_back(objective);
  start.push_back(init);
  if (integer)
    integers.push_back(numCols);
  return numCols++;
}

void IlpModel::addRow(const std::vector<int> &cols,
                      const std::vector<double> &coefs, char sense,
                      double rhs) {
  double inf = std::numeric_limits<double>::infinity();
  rowLb.push_back(sense == 'G' ? rhs : -inf);
  rowUb.push_back(sense == 'L' ? rhs : inf);
  double lhs = 0;
  for (size_t k = 0; k < cols.size(); ++k) {
    tRow.push_back(numRows);
    tCol.push_back(cols[k]);
    tVal.push_back(coefs[k]);
    lhs += coefs[k] * start[cols[k]];
  }
  double tol = 1e-6 * std::max(1.0, std::fabs(rhs));
  if ((sense == 'G' && lhs < rhs - tol) || (sense == 'L' && lhs > rhs + tol))
    ++startViolations;
  ++numRows;
}

//===----------------------------------------------------------------------===//
// The CBC child process
//===----------------------------------------------------------------------===//

namespace {

/// The model's matrix in compressed sparse columns, as CBC and Clp take it.
struct CscMatrix {
  std::vector<CoinBigIndex> colStart;
  std::vector<int> index;
  std::vector<double> value;

  explicit CscMatrix(const IlpModel &ilp) {
    colStart.assign(ilp.numCols + 1, 0);
    for (int c : ilp.tCol)
      ++colStart[c + 1];
    for (int c = 0; c < ilp.numCols; ++c)
      colStart[c + 1] += colStart[c];
    index.resize(ilp.tCol.size());
    value.resize(ilp.tCol.size());
    std::vector<CoinBigIndex> fill(colStart.begin(), colStart.end() - 1);
    for (size_t k = 0; k < ilp.tCol.size(); ++k) {
      CoinBigIndex at = fill[ilp.tCol[k]]++;
      index[at] = ilp.tRow[k];
      value[at] = ilp.tVal[k];
    }
  }
};

struct CbcModelDeleter {
  void operator()(Cbc_Model *model) const { Cbc_deleteModel(model); }
};
using CbcModelPtr = std::unique_ptr<Cbc_Model, CbcModelDeleter>;

/// Hands the model to CBC (compressed sparse columns, integer columns).
void loadIntoCbc(Cbc_Model *model, const IlpModel &ilp, const CscMatrix &csc) {
  Cbc_loadProblem(model, ilp.numCols, ilp.numRows, csc.colStart.data(),
                  csc.index.data(), csc.value.data(), ilp.colLb.data(),
                  ilp.colUb.data(), ilp.obj.data(), ilp.rowLb.data(),
                  ilp.rowUb.data());
  for (int c : ilp.integers)
    Cbc_setInteger(model, c);
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= n;
  }
  return true;
}

// The child's pipe to the parent. Records: a tag byte, then its payload:
//   'L' double      the LP relaxation's optimum (Clp)
//   'P' double      CBC's best possible objective from a progress message
//   'S' int[6] double[2] [double[numCols]]   CBC's final result
int progressFd = -1;
bool progressVerbose = false;

void sendBound(char tag, double bound) {
  if (progressFd < 0 || !std::isfinite(bound))
    return;
  char rec[1 + sizeof(double)];
  rec[0] = tag;
  std::memcpy(rec + 1, &bound, sizeof(double));
  writeAll(progressFd, rec, sizeof(rec));
}

/// CBC message callback (runs in the child). With a callback registered CBC
/// hands its messages here instead of printing them (with --ilp-log they are
/// printed to stderr: number, numbers, strings). The one that carries the
/// best possible objective while the search runs is CBC0010, "After %d nodes,
/// %d on tree, %g best solution, best possible %g (%.2f seconds)" (number 10,
/// doubles: best solution, best possible, seconds; CbcMessage.cpp, CBC 2.10);
/// it is streamed to the parent.
void COINLINKAGE_CB cbcProgress(Cbc_Model *, int msgno, int ndouble,
                                const double *dvec, int nint, const int *ivec,
                                int nchar, char **cvec) {
  if (progressVerbose) {
    fprintf(stderr, "cbc msg %d:", msgno);
    for (int k = 0; k < ndouble; ++k)
      fprintf(stderr, " %g", dvec[k]);
    fprintf(stderr, " |");
    for (int k = 0; k < nint; ++k)
      fprintf(stderr, " %d", ivec[k]);
    for (int k = 0; k < nchar; ++k)
      fprintf(stderr, " '%s'", cvec[k]);
    fprintf(stderr, "\n");
  }
  (void)ivec;
  (void)nint;
  (void)cvec;
  (void)nchar;
  if (msgno == 10 && ndouble >= 2)
    sendBound('P', dvec[1]);
}

/// The CBC child: solves the LP relaxation (Clp) and streams its bound
/// ('L'), ends with 'O' when that already proves the warm start optimal,
/// else runs CBC (streaming its progress bounds, 'P') and writes the result
/// record ('S': status ints, objective and bound, the solution) to `fd`.
[[noreturn]] void runCbcChild(const IlpModel &ilp, const CscMatrix &csc,
                              Cbc_Model *model, bool verbose,
                              double proveThreshold, int fd) {
  int numCols = ilp.numCols;
#ifdef __linux__
  // Do not outlive the caller (e.g. if it is killed while CBC runs).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  progressFd = fd;
  progressVerbose = verbose;
  // CBC prints part of its log to stdout whatever the message handler: to
  // stderr with --ilp-log, else nowhere (stdout may carry our JSON).
  {
    int sink = verbose ? ::dup(2) : ::open("/dev/null", O_WRONLY);
    if (sink >= 0) {
      ::dup2(sink, 1);
      ::close(sink);
    }
  }
  // The LP relaxation first, so that a bound exists early even when CBC's
  // own root processing (MIP start, cuts) does not finish in time.
  {
    Clp_Simplex *lp = Clp_newModel();
    Clp_setLogLevel(lp, 0);
    Clp_loadProblem(lp, numCols, ilp.numRows, csc.colStart.data(),
                    csc.index.data(), csc.value.data(), ilp.colLb.data(),
                    ilp.colUb.data(), ilp.obj.data(), ilp.rowLb.data(),
                    ilp.rowUb.data());
    Clp_dual(lp, 0);
    bool proves = false;
    if (Clp_isProvenOptimal(lp)) {
      sendBound('L', Clp_objectiveValue(lp));
      proves = Clp_objectiveValue(lp) >= proveThreshold;
    }
    Clp_deleteModel(lp);
    if (proves) {
      // No solution better than the warm start by the increment exists:
      // it is optimal, and CBC need not run.
      char tag = 'O';
      bool ok = writeAll(fd, &tag, 1);
      ::close(fd);
      ::_exit(ok ? 0 : 1);
    }
  }
  Cbc_registerCallBack(model, cbcProgress);
  Cbc_solve(model);
  fflush(stdout);
  int ints[6] = {
      Cbc_isProvenOptimal(model),       Cbc_isProvenInfeasible(model),
      Cbc_isSecondsLimitReached(model), Cbc_status(model),
      Cbc_secondaryStatus(model),       0};
  const double *sol = Cbc_bestSolution(model);
  ints[5] = sol != nullptr;
  double dbl[2] = {sol ? Cbc_getObjValue(model) : 0.0,
                   Cbc_getBestPossibleObjValue(model)};
  char tag = 'S';
  bool ok = writeAll(fd, &tag, 1) && writeAll(fd, ints, sizeof(ints)) &&
            writeAll(fd, dbl, sizeof(dbl));
  if (ok && sol)
    ok = writeAll(fd, sol, sizeof(double) * numCols);
  ::close(fd);
  ::_exit(ok ? 0 : 1);
}

/// Reads the child's records from `fd` until it closes the pipe (true) or
/// the deadline t0 + limit passes (false).
bool readUntilDeadline(int fd, std::chrono::steady_clock::time_point t0,
                       double limit, std::vector<char> &buf) {
  bool eof = false;
  while (!eof) {
    double left = limit - std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - t0)
                              .count();
    if (left <= 0)
      break;
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, std::max(1, static_cast<int>(left * 1000)));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue; // timeout: the loop re-checks the deadline
    char chunk[65536];
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      eof = true;
    else
      buf.insert(buf.end(), chunk, chunk + n);
  }
  return eof;
}

/// Decodes the child's records into `out` (a killed child may leave the
/// last one incomplete).
void parseChildRecords(const std::vector<char> &buf, bool eof, int numCols,
                       CbcOutcome &out) {
  size_t expectHead = 6 * sizeof(int) + 2 * sizeof(double);
  size_t at = 0;
  bool sawResult = false;
  while (at < buf.size()) {
    char tag = buf[at];
    if ((tag == 'L' || tag == 'P') && at + 1 + sizeof(double) <= buf.size()) {
      double v;
      std::memcpy(&v, buf.data() + at + 1, sizeof(double));
      (tag == 'L' ? out.lpBound : out.progressBound) = v;
      at += 1 + sizeof(double);
      continue;
    }
    if (tag == 'O') {
      out.lpProvesOptimal = true;
      break;
    }
    if (tag == 'S' && at + 1 + expectHead <= buf.size()) {
      sawResult = true;
      ++at;
      break;
    }
    break;
  }
  if (!eof)
    return; // killed at the deadline
  if (out.lpProvesOptimal) {
    out.finished = true;
    return;
  }
  if (!sawResult) {
    out.error = "the CBC child process exited without a result";
    return;
  }
  int ints[6];
  double dbl[2];
  std::memcpy(ints, buf.data() + at, sizeof(ints));
  std::memcpy(dbl, buf.data() + at + sizeof(ints), sizeof(dbl));
  at += expectHead;
  out.finished = true;
  out.provenOptimal = ints[0];
  out.provenInfeasible = ints[1];
  out.secondsLimitReached = ints[2];
  out.status = ints[3];
  out.secondary = ints[4];
  out.hasSolution = ints[5];
  out.objective = dbl[0];
  out.bestBound = dbl[1];
  if (out.hasSolution) {
    if (buf.size() < at + sizeof(double) * numCols) {
      out.hasSolution = false;
      out.error = "truncated solution";
    } else {
      out.solution.resize(numCols);
      std::memcpy(out.solution.data(), buf.data() + at,
                  sizeof(double) * numCols);
    }
  }
}

/// Runs, in a child process, first the LP relaxation (Clp) and then
/// Cbc_solve; returns what the child reported, or finished = false if it did
/// not finish before t0 + limit seconds (then the child is killed; the bounds
/// it streamed until then are kept).
CbcOutcome solveWithDeadline(const IlpModel &ilp, const CscMatrix &csc,
                             Cbc_Model *model, bool verbose,
                             double proveThreshold,
                             std::chrono::steady_clock::time_point t0,
                             double limit) {
  CbcOutcome out;
  int fds[2];
  if (::pipe(fds) != 0) {
    out.error = "pipe failed";
    return out;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    out.error = "fork failed";
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    runCbcChild(ilp, csc, model, verbose, proveThreshold, fds[1]);
  }
  ::close(fds[1]);
  std::vector<char> buf;
  bool eof = readUntilDeadline(fds[0], t0, limit, buf);
  ::close(fds[0]);
  if (!eof)
    ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  parseChildRecords(buf, eof, ilp.numCols, out);
  return out;
}

} // namespace

CbcOutcome detail::runCbc(const IlpModel &ilp, const CbcSettings &settings) {
  CscMatrix csc(ilp);
  CbcModelPtr owner(Cbc_newModel());
  Cbc_Model *model = owner.get();
  loadIntoCbc(model, ilp, csc);
  // Log level 1 so that CBC's progress messages reach cbcProgress (which
  // prints them only with settings.verbose).
  Cbc_setLogLevel(model, 1);
  std::vector<int> allCols(ilp.numCols);
  std::iota(allCols.begin(), allCols.end(), 0);
  Cbc_setMIPStartI(model, ilp.numCols, allCols.data(), ilp.start.data());
  // The time limit. CBC checks its own limit only between nodes: the root LP
  // and the processing of the MIP start are not interrupted (p=8 m=24 with
  // the horizon-wide big-M: 39 s and 27 s, 70 s at a 30 s limit). So CBC runs
  // in a child process with its own limit set a little below ours, and the
  // child is killed at our deadline if it has not returned by then; we then
  // keep the warm start and the bounds the child streamed.
  auto t0 = std::chrono::steady_clock::now();
  // Deadline for CBC, measured from t0: the limit less the time already
  // spent and a margin for decoding and verifying its solution (0.1 s, or
  // 0.5 % of the limit on a busy machine with a large model).
  double limit = std::max(
      0.0, settings.timeLimitSeconds -
               std::chrono::duration<double>(t0 - settings.tEntry).count() -
               std::max(0.1, 0.005 * settings.timeLimitSeconds));
  Cbc_setMaximumSeconds(model,
                        std::max(0.0, limit - std::max(0.2, 0.03 * limit)));
  Cbc_setParameter(model, "timeMode", "elapsed");
  // CBC 2.10.8 can crash in CglPreProcess::postProcess when the time limit
  // stops the search: switch its MIP preprocessing off.
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_setParameter(model, "threads",
                   std::to_string(std::max(1, settings.threads)).c_str());
  if (settings.increment > 0) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g", settings.increment);
    Cbc_setParameter(model, "increment", text);
  }
  return solveWithDeadline(ilp, csc, model, settings.verbose,
                           settings.proveThreshold, t0, limit);
}

//===----------------------------------------------------------------------===//
// The report of a run
//===----------------------------------------------------------------------===//

/// CBC's status in words (IlpReport::status).
static std::string statusOf(const CbcOutcome &out, const IlpRunFacts &facts) {
  if (!out.finished)
    return out.error.empty()
               ? llvm::formatv("time limit (CBC stopped by zb at the "
                               "{0} s deadline, before its own check; "
                               "kept the warm start)",
                               facts.timeLimitSeconds)
                     .str()
               : "CBC failed (" + out.error + "; kept the warm start)";
  if (out.lpProvesOptimal)
    return "optimal (LP relaxation)";
  if (out.provenOptimal)
    return "optimal";
  if (out.provenInfeasible)
    return facts.startViolations == 0
               ? "infeasible (CBC's claim; the warm start satisfies "
                 "every row, so this is numerical trouble)"
               : "infeasible";
  if (out.secondsLimitReached || out.secondary == 4)
    return out.hasSolution ? "time limit (feasible)"
                           : "time limit (no solution)";
  return llvm::formatv("stopped (status {0}, secondary {1})", out.status,
                       out.secondary)
      .str();
}

IlpReport detail::describeCbcRun(const CbcOutcome &out,
                                 const IlpRunFacts &facts, double seconds) {
  IlpReport rep;
  rep.seconds = seconds;
  rep.numVariables = facts.numCols;
  rep.numConstraints = facts.numRows;
  rep.warmStartObjective = facts.warmStartMs;
  rep.analyticBound = facts.analyticMs;
  rep.status = statusOf(out, facts);
  double tUnit = facts.tUnit;
  // CBC's own bound: its final best possible objective when it returned,
  // else the latest one it streamed (progress messages), else the LP
  // relaxation solved before it. Never below the analytic bound, which is a
  // lower bound of the column R.
  if (out.lpProvesOptimal) {
    rep.cbcBound = out.lpBound * tUnit;
    rep.cbcBoundSource = "LP relaxation";
  } else if (out.finished && std::isfinite(out.bestBound) &&
             !out.provenInfeasible) {
    rep.cbcBound = out.bestBound * tUnit;
    rep.cbcBoundSource = "final";
  } else if (std::isfinite(out.progressBound)) {
    rep.cbcBound = out.progressBound * tUnit;
    rep.cbcBoundSource = "progress";
  } else if (std::isfinite(out.lpBound)) {
    rep.cbcBound = out.lpBound * tUnit;
    rep.cbcBoundSource = "LP relaxation";
  }
  if (std::isfinite(out.lpBound))
    rep.lpBound = out.lpBound * tUnit;
  rep.bestBound = std::max(rep.analyticBound,
                           std::isfinite(rep.cbcBound) ? rep.cbcBound : 0.0);
  if (facts.grid > 0) // round up to the grid, less a relative tolerance
    rep.bestBound = facts.grid * std::ceil(rep.bestBound / facts.grid -
                                           1e-6 * std::max(1.0, facts.ub));
  return rep;
}

void detail::completeIlpReport(const CbcOutcome &out, double cbcObjective,
                               double realized, double warmStartMs,
                               IlpReport &rep) {
  rep.objective = realized;
  double tol = 1e-6 * std::max(1.0, realized);
  // Proven optimal only if CBC proved it and the returned schedule attains
  // CBC's optimum.
  rep.provenOptimal =
      (out.finished && out.provenOptimal && out.hasSolution &&
       std::fabs(realized - cbcObjective) <= tol) ||
      (out.lpProvesOptimal && std::fabs(realized - warmStartMs) <= tol);
  if (out.finished && out.provenOptimal && !rep.provenOptimal)
    rep.status = llvm::formatv("CBC proved {0} optimal, but the returned "
                               "schedule costs {1}",
                               cbcObjective, realized)
                     .str();
  // Proven optimal: no solution better by the increment (the grid) exists,
  // so the optimum is the returned objective.
  if (rep.provenOptimal)
    rep.bestBound = realized;
  rep.bestBound = std::min(rep.bestBound, realized);
  rep.gap =
      realized > 0 ? std::max(0.0, (realized - rep.bestBound) / realized) : 0;
}
