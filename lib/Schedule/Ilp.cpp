//===- Ilp.cpp - The ILP of Appendix G, solved with CBC -------------------===//
//
// Variables: E[n] (end time of every pass n = (kind, stage, microbatch)), a
// binary P[a,b] for every pair of passes on the same stage whose order is not
// implied by the dependencies (P = 1: a runs before b), and R, the objective.
//
//   min R                                                             (3)
//   R >= E[W(s,m-1)] - E[F(s,0)] + T_F(s)          for every stage s
//   E[F(s,i)] >= E[F(s-1,i)] + T_comm + T_F                           (4)
//   E[B(s,i)] >= E[B(s+1,i)] + T_comm + T_B                           (5)
//   E[b] >= E[a] + T_b - (1 - P[a,b]) M,  E[a] >= E[b] + T_a - P[a,b] M  (6)
//   M_limit >= dM(n) + sum_{k before n} dM(k) + sum_{k unordered} dM(k) P[k,n]
//                                                                     (7)
// As in the authors' formulation, the passes of one kind run in microbatch
// order on every stage (F0 F1 ..., B0 B1 ..., W0 W1 ...), so the only
// undecided pairs are {F(i'), B(i)}, {F(i'), W(i)} and {B(i'), W(i)} with
// i' > i. Two families of valid inequalities tighten the relaxation: the span
// of a stage covers every pass after (and before) any given pass.
//
// Solved with COIN-OR CBC through its C API, warm-started from the heuristic
// (Cbc_setMIPStartI), with a time limit. The status, best bound and gap are
// CBC's own.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include "llvm/Support/FormatVariadic.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>

using namespace zb::sched;

namespace {

struct IlpModel {
  Cbc_Model *model = Cbc_newModel();
  int numCols = 0, numRows = 0;
  std::vector<double> colLb, colUb, obj, start; // per column
  std::vector<int> integers;
  std::vector<double> rowLb, rowUb;
  /// Triplets (row, col, value).
  std::vector<int> tRow, tCol;
  std::vector<double> tVal;
  /// Rows the warm start violates (0 for a consistent model).
  int startViolations = 0;
  ~IlpModel() { Cbc_deleteModel(model); }

  int addCol(double lb, double ub, double objective, bool integer,
             double init) {
    colLb.push_back(lb);
    colUb.push_back(ub);
    obj.push_back(objective);
    start.push_back(init);
    if (integer)
      integers.push_back(numCols);
    return numCols++;
  }
  void addRow(const std::vector<int> &cols, const std::vector<double> &coefs,
              char sense, double rhs) {
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
  /// Hands the model to CBC (compressed sparse columns).
  void load() {
    std::vector<CoinBigIndex> colStart(numCols + 1, 0);
    for (int c : tCol)
      ++colStart[c + 1];
    for (int c = 0; c < numCols; ++c)
      colStart[c + 1] += colStart[c];
    std::vector<int> index(tCol.size());
    std::vector<double> value(tCol.size());
    std::vector<CoinBigIndex> fill(colStart.begin(), colStart.end() - 1);
    for (size_t k = 0; k < tCol.size(); ++k) {
      CoinBigIndex at = fill[tCol[k]]++;
      index[at] = tRow[k];
      value[at] = tVal[k];
    }
    Cbc_loadProblem(model, numCols, numRows, colStart.data(), index.data(),
                    value.data(), colLb.data(), colUb.data(), obj.data(),
                    rowLb.data(), rowUb.data());
    for (int c : integers)
      Cbc_setInteger(model, c);
  }
};

} // namespace

namespace zb::sched::detail {
llvm::Expected<Schedule> buildHeuristic(const Problem &problem,
                                        llvm::StringRef name,
                                        const BuildOptions &options);
} // namespace zb::sched::detail

llvm::Expected<Schedule> detail::buildIlp(const Problem &problem,
                                          const BuildOptions &options,
                                          IlpReport *report) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  // Warm start: the heuristic (which never does worse than ZB-H1/H2).
  llvm::Expected<Schedule> warm = buildHeuristic(problem, "zb-auto", options);
  if (!warm)
    return warm.takeError();
  SimResult warmSim = simulate(problem, *warm);

  std::vector<int> stageToRank = interleavedStageToRank(p, 1);
  StageCosts c = resolveStageCosts(problem, stageToRank);
  // Scale times and memory to O(1) units: CBC's tolerances are absolute.
  double tUnit = 0, mUnit = 0;
  for (int s = 0; s < p; ++s) {
    tUnit = std::max(tUnit, (c.f[s] + c.b[s] + c.w[s]) / 3);
    mUnit = std::max({mUnit, c.memB[s], c.memW[s]});
  }
  if (tUnit <= 0)
    tUnit = 1;
  if (mUnit <= 0)
    mUnit = 1;
  for (auto *v : {&c.f, &c.b, &c.w, &c.comm})
    for (double &x : *v)
      x /= tUnit;
  for (auto *v : {&c.memB, &c.memW})
    for (double &x : *v)
      x /= mUnit;
  double memLimit = problem.memoryLimit / mUnit;
  auto node = [&](ActionKind k, int s, int i) {
    return (static_cast<int>(k) * p + s) * m + i;
  };
  int numNodes = 3 * p * m;
  std::vector<double> cost(numNodes), delta(numNodes), warmEnd(numNodes);
  std::vector<int> warmPos(numNodes);
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < m; ++i) {
      cost[node(ActionKind::F, s, i)] = c.f[s];
      cost[node(ActionKind::B, s, i)] = c.b[s];
      cost[node(ActionKind::W, s, i)] = c.w[s];
      delta[node(ActionKind::F, s, i)] = c.memB[s];
      delta[node(ActionKind::B, s, i)] = c.memW[s] - c.memB[s];
      delta[node(ActionKind::W, s, i)] = -c.memW[s];
    }
  for (int r = 0; r < p; ++r)
    for (size_t k = 0; k < warm->perRank[r].size(); ++k) {
      const TimedAction &t = warmSim.timeline[r][k];
      int n = node(t.action.kind, t.action.stage, t.action.microbatch);
      warmEnd[n] = t.end / tUnit;
      warmPos[n] = k;
    }

  // Horizon and big-M: every pass serially plus every hop's latency.
  double maxComm =
      c.comm.empty() ? 0 : *std::max_element(c.comm.begin(), c.comm.end());
  double horizon = std::accumulate(cost.begin(), cost.end(), 0.0) +
                   2.0 * p * m * maxComm + 1;
  horizon = std::max(horizon, 2 * warmSim.makespan / tUnit);
  double bigM = horizon;

  IlpModel ilp;
  std::vector<int> E(numNodes);
  for (int n = 0; n < numNodes; ++n)
    E[n] = ilp.addCol(cost[n], horizon, 0, false, warmEnd[n]);
  // Shift invariance: the first pass of stage 0 starts at t = 0.
  ilp.colUb[E[node(ActionKind::F, 0, 0)]] = cost[node(ActionKind::F, 0, 0)];
  double work = 0;
  for (int s = 0; s < p; ++s)
    work = std::max(work, m * (c.f[s] + c.b[s] + c.w[s]));
  int R = ilp.addCol(work, horizon, 1, false, warmSim.stageSpan / tUnit);

  // Same-stage order: typeRank(F)=0 < B=1 < W=2; a is before b when its kind
  // rank is <= and its microbatch <= (and a != b).
  auto before = [&](ActionKind ka, int ia, ActionKind kb, int ib) {
    return static_cast<int>(ka) <= static_cast<int>(kb) && ia <= ib &&
           !(ka == kb && ia == ib);
  };
  // P[(a,b)] column for a < b in node index, meaning "a before b".
  std::map<std::pair<int, int>, int> P;
  auto order = [&](int a, int b) -> std::pair<int, bool> {
    // Returns (column, true if the column means a before b).
    if (a < b)
      return {P.at({a, b}), true};
    return {P.at({b, a}), false};
  };
  const ActionKind kinds[] = {ActionKind::F, ActionKind::B, ActionKind::W};
  for (int s = 0; s < p; ++s)
    for (ActionKind ka : kinds)
      for (int ia = 0; ia < m; ++ia)
        for (ActionKind kb : kinds)
          for (int ib = 0; ib < m; ++ib) {
            int a = node(ka, s, ia), b = node(kb, s, ib);
            if (a >= b || before(ka, ia, kb, ib) || before(kb, ib, ka, ia))
              continue;
            int col = ilp.addCol(0, 1, 0, true, warmPos[a] < warmPos[b]);
            P[{a, b}] = col;
            // (6): E[b] - E[a] - M P >= T_b - M ; E[a] - E[b] + M P >= T_a
            ilp.addRow({E[b], E[a], col}, {1, -1, -bigM}, 'G', cost[b] - bigM);
            ilp.addRow({E[a], E[b], col}, {1, -1, bigM}, 'G', cost[a]);
          }

  // Dependencies (4), (5), same-stage implied order, W after B.
  for (int s = 0; s < p; ++s)
    for (int i = 0; i < m; ++i) {
      int f = node(ActionKind::F, s, i), b = node(ActionKind::B, s, i),
          w = node(ActionKind::W, s, i);
      if (s > 0)
        ilp.addRow({E[f], E[node(ActionKind::F, s - 1, i)]}, {1, -1}, 'G',
                   c.comm[s - 1] + c.f[s]);
      if (s + 1 < p)
        ilp.addRow({E[b], E[node(ActionKind::B, s + 1, i)]}, {1, -1}, 'G',
                   c.comm[s + 1] + c.b[s]);
      ilp.addRow({E[b], E[f]}, {1, -1}, 'G', c.b[s]);
      ilp.addRow({E[w], E[b]}, {1, -1}, 'G', c.w[s]);
      if (i > 0)
        for (ActionKind k : kinds)
          ilp.addRow({E[node(k, s, i)], E[node(k, s, i - 1)]}, {1, -1}, 'G',
                     cost[node(k, s, i)]);
    }

  // Objective rows and the span cuts.
  for (int s = 0; s < p; ++s) {
    int first = node(ActionKind::F, s, 0);
    ilp.addRow({R, E[node(ActionKind::W, s, m - 1)], E[first]}, {1, -1, 1}, 'G',
               c.f[s]);
    for (ActionKind kn : kinds)
      for (int in = 0; in < m; ++in) {
        int n = node(kn, s, in);
        // R >= E[n] + sum_{k after n} T_k - E[F0] + T_F0
        std::vector<int> cols{R, E[n], E[first]};
        std::vector<double> coefs{1, -1, 1};
        double rhs = c.f[s];
        // start(n) >= start(F0) + sum_{k before n} T_k
        std::vector<int> cols2{E[n], E[first]};
        std::vector<double> coefs2{1, -1};
        double rhs2 = cost[n] - c.f[s];
        // memory (7) for passes that allocate
        std::vector<int> memCols;
        std::vector<double> memCoefs;
        double memConst = delta[n];
        for (ActionKind kk : kinds)
          for (int ik = 0; ik < m; ++ik) {
            int k = node(kk, s, ik);
            if (k == n)
              continue;
            if (before(kn, in, kk, ik)) {
              rhs += cost[k];
            } else if (before(kk, ik, kn, in)) {
              rhs2 += cost[k];
              memConst += delta[k];
            } else {
              auto [col, nFirst] = order(n, k);
              // "k after n" = P if the column means n before k, else 1-P.
              if (nFirst) {
                cols.push_back(col);
                coefs.push_back(-cost[k]);
                cols2.push_back(col);
                coefs2.push_back(cost[k]);
                rhs2 += cost[k];
                memCols.push_back(col);
                memCoefs.push_back(-delta[k]);
                memConst += delta[k];
              } else {
                cols.push_back(col);
                coefs.push_back(cost[k]);
                rhs += cost[k];
                cols2.push_back(col);
                coefs2.push_back(-cost[k]);
                memCols.push_back(col);
                memCoefs.push_back(delta[k]);
              }
            }
          }
        ilp.addRow(cols, coefs, 'G', rhs);
        if (in > 0 || kn != ActionKind::F)
          ilp.addRow(cols2, coefs2, 'G', rhs2);
        if (problem.memoryLimit > 0 && delta[n] > 0)
          ilp.addRow(memCols, memCoefs, 'L', memLimit - memConst);
      }
  }

  if (options.verbose)
    fprintf(stderr,
            "zb ilp: %d columns, %d rows, warm start violates %d "
            "rows\n",
            ilp.numCols, ilp.numRows, ilp.startViolations);
  ilp.load();
  Cbc_setLogLevel(ilp.model, options.verbose ? 1 : 0);
  std::vector<int> allCols(ilp.numCols);
  std::iota(allCols.begin(), allCols.end(), 0);
  Cbc_setMIPStartI(ilp.model, ilp.numCols, allCols.data(), ilp.start.data());
  Cbc_setMaximumSeconds(ilp.model, options.timeLimitSeconds);
  Cbc_setParameter(ilp.model, "timeMode", "elapsed");
  // CBC 2.10.8 can crash in CglPreProcess::postProcess when the time limit
  // stops the search: switch its MIP preprocessing off.
  Cbc_setParameter(ilp.model, "preprocess", "off");
  Cbc_setParameter(ilp.model, "threads",
                   std::to_string(std::max(1, options.threads)).c_str());
  auto t0 = std::chrono::steady_clock::now();
  Cbc_solve(ilp.model);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();

  IlpReport rep;
  rep.seconds = seconds;
  rep.numVariables = ilp.numCols;
  rep.numConstraints = ilp.numRows;
  rep.warmStartObjective = warmSim.stageSpan;
  rep.provenOptimal = Cbc_isProvenOptimal(ilp.model);
  bool infeasible = Cbc_isProvenInfeasible(ilp.model);
  int secondary = Cbc_secondaryStatus(ilp.model);
  const double *sol = Cbc_bestSolution(ilp.model);
  if (rep.provenOptimal)
    rep.status = "optimal";
  else if (infeasible)
    rep.status = ilp.startViolations == 0
                     ? "infeasible (CBC's claim; the warm start satisfies "
                       "every row, so this is numerical trouble)"
                     : "infeasible";
  else if (Cbc_isSecondsLimitReached(ilp.model) || secondary == 4)
    rep.status = sol ? "time limit (feasible)" : "time limit (no solution)";
  else
    rep.status = llvm::formatv("stopped (status {0}, secondary {1})",
                               Cbc_status(ilp.model), secondary)
                     .str();
  rep.bestBound = Cbc_getBestPossibleObjValue(ilp.model) * tUnit;
  rep.objective = sol ? Cbc_getObjValue(ilp.model) : warmSim.stageSpan;

  Schedule result = std::move(*warm);
  result.name = "ilp";
  result.costConvention = CostConvention::StageSpan;
  if (sol) {
    // Per stage: sort by the solved end times (ties: the order variables).
    Schedule candidate = result;
    for (int s = 0; s < p; ++s) {
      std::vector<Action> list;
      for (ActionKind k : kinds)
        for (int i = 0; i < m; ++i)
          list.push_back({k, s, i});
      std::stable_sort(list.begin(), list.end(),
                       [&](const Action &x, const Action &y) {
                         int a = node(x.kind, x.stage, x.microbatch);
                         int b = node(y.kind, y.stage, y.microbatch);
                         double ea = sol[E[a]], eb = sol[E[b]];
                         if (std::fabs(ea - eb) > 1e-6)
                           return ea < eb;
                         if (before(x.kind, x.microbatch, y.kind, y.microbatch))
                           return true;
                         if (before(y.kind, y.microbatch, x.kind, x.microbatch))
                           return false;
                         auto [col, xFirst] = order(a, b);
                         return (sol[col] > 0.5) == xFirst;
                       });
      candidate.perRank[s] = std::move(list);
    }
    if (llvm::Error e = verify(problem, candidate)) {
      rep.status += " (solution rejected by the verifier: " +
                    llvm::toString(std::move(e)) + "; kept the warm start)";
    } else {
      SimResult sim = simulate(problem, candidate);
      if (sim.stageSpan < warmSim.stageSpan)
        result = std::move(candidate);
    }
  }
  // The returned schedule's cost is measured by the simulator (every pass as
  // early as possible), which may differ from the ILP's objective value.
  double realized = simulate(problem, result).stageSpan;
  rep.objective = realized;
  rep.gap =
      realized > 0 ? std::max(0.0, (realized - rep.bestBound) / realized) : 0;
  if (report)
    *report = rep;
  return result;
}
