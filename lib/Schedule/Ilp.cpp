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
//   E[b] >= E[a] + T_b - (1 - P[a,b]) M_ab,
//   E[a] >= E[b] + T_a - P[a,b] M_ba                                  (6)
//   M_limit >= dM(n) + sum_{k before n} dM(k) + sum_{k unordered} dM(k) P[k,n]
//                                                                     (7)
// As in the authors' formulation, the passes of one kind run in microbatch
// order on every stage (F0 F1 ..., B0 B1 ..., W0 W1 ...), so the only
// undecided pairs are {F(i'), B(i)}, {F(i'), W(i)} and {B(i'), W(i)} with
// i' > i (w.l.o.g. for identical microbatches; the argument is at the order
// variables below). Tightening (the bar: p=4, m=8 proven in under 10 s):
//  - the span of a stage covers every pass after (and before) any given pass
//    (two families of valid inequalities);
//  - R lies in [analytic lower bound (Bounds.cpp), warm start's span];
//  - time windows: with R <= the warm start's span every pass ends in
//    [est, lct] (dependency chains and the passes forced before / after it
//    on its stage); they bound the E columns, fix the order pairs that can
//    go one way only, and give each row of (6) its own big-M
//    (M_ab = T_b + lct(a) - est(b)) instead of one horizon-wide M;
//  - when all times are multiples of a grid g, CBC's "increment" is 0.99 g
//    (a better solution is at least g better) and bounds round up to g.
//
// Solved with COIN-OR CBC (IlpSolver.cpp: a child process killed at the
// deadline, the LP relaxation first), warm-started from the heuristic, with a
// time limit. The status, best bound and gap are CBC's own. The first pass of
// every stage starts as early as possible, as in the simulator, so the
// decoded order simulates to CBC's objective.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "IlpSolver.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>

using namespace zb::sched;
using namespace zb::sched::detail;

namespace {

/// The largest g such that every time of the problem (T_F, T_B, T_W, T_comm
/// of every stage, ms) is an integer multiple of g, for times given with at
/// most 3 decimals; 0 if there is none (then no rounding is done).
double timeGrid(const Problem &problem) {
  std::vector<double> all;
  for (const auto *v :
       {&problem.costF, &problem.costB, &problem.costW, &problem.costComm})
    all.insert(all.end(), v->begin(), v->end());
  for (double scale : {1.0, 2.0, 4.0, 5.0, 10.0, 20.0, 25.0, 100.0, 1000.0}) {
    long long g = 0;
    bool ok = true;
    for (double x : all) {
      double y = x * scale;
      if (!(std::fabs(y) < 1e12) ||
          std::fabs(y - std::round(y)) > 1e-9 * std::max(1.0, std::fabs(y))) {
        ok = false;
        break;
      }
      g = std::gcd(g, std::llabs(std::llround(y)));
    }
    if (ok)
      return g > 0 ? g / scale : 0.0;
  }
  return 0;
}

} // namespace

namespace {

const ActionKind kKinds[] = {ActionKind::F, ActionKind::B, ActionKind::W};

/// The passes of one rank, by type = kind * 2 + chunk (chunk 0: the rank's
/// first stage; chunk 1: its second stage under the V-shape mapping). The
/// order every schedule keeps on a rank for one microbatch: F0 -> F1 -> B1 ->
/// B0 (the V down and back up), B1 -> W1, B0 -> W0; with one chunk F0 -> B0
/// -> W0. kReach[a][b]: type a precedes type b (reflexive).
constexpr int kTypes = 6;
const bool kReach[kTypes][kTypes] = {
    //        F0     F1     B0     B1     W0     W1
    /*F0*/ {true, true, true, true, true, true},
    /*F1*/ {false, true, true, true, true, true},
    /*B0*/ {false, false, true, false, true, false},
    /*B1*/ {false, false, true, true, true, true},
    /*W0*/ {false, false, false, false, true, false},
    /*W1*/ {false, false, false, false, false, true}};

/// The model of Appendix G for one problem, built in the order of the file
/// comment (scaled units: times / tUnit, memory / mUnit), then solved,
/// reported and decoded. Ranks hold one stage (V = 1) or two (the V-shape
/// mapping, V = 2): the order pairs, spans and memory rows are per rank.
/// One object per buildIlp call.
class IlpFormulation {
public:
  IlpFormulation(const Problem &problem, const BuildOptions &options,
                 const Schedule &warm, const SimResult &warmSim)
      : problem(problem), options(options), warm(warm), warmSim(warmSim),
        p(problem.numRanks), m(problem.numMicrobatches),
        S(problem.numStages()), numNodes(3 * S * m),
        stageToRank(warm.stageToRank) {}

  /// Builds every column and row.
  void build() {
    scaleCosts();
    firstStarts();
    objectiveBounds();
    timeWindows();
    addColumns();
    addOrderPairs();
    addDependencies();
    addSpanAndMemoryRows();
    if (options.verbose)
      printSummary();
  }
  /// Runs CBC under the time limit (measured from tEntry).
  CbcOutcome solve(std::chrono::steady_clock::time_point tEntry);
  /// Status, bounds and sizes of the run (before decoding).
  IlpReport report(const CbcOutcome &out, double seconds) const;
  /// The schedule to return: CBC's order when it verifies and is no worse
  /// than the warm start, else the warm start; completes `rep`.
  Schedule decode(const CbcOutcome &out, IlpReport &rep) const;

private:
  const Problem &problem;
  const BuildOptions &options;
  const Schedule &warm;
  const SimResult &warmSim;
  int p, m, S, numNodes;
  std::vector<int> stageToRank;
  StageCosts c;
  double tUnit = 0, mUnit = 0;
  /// Per-rank memory limit, scaled; 0 = none.
  std::vector<double> memLimit;
  std::vector<double> cost, delta, warmEnd;
  std::vector<int> warmPos;
  /// The passes of each rank (node ids), and each node's type on its rank.
  std::vector<std::vector<int>> rankNodes;
  std::vector<int> typeOf;
  /// Start of each rank's first pass, F(r, 0) (stage r is on rank r).
  std::vector<double> rankStart;
  double ub = 0, lb = 0, analyticMs = 0, grid = 0;
  std::vector<double> est, lct;
  IlpModel ilp;
  std::vector<int> E;
  int R = -1;
  std::map<std::pair<int, int>, int> P;
  int fixedPairs = 0;

  int node(ActionKind k, int s, int i) const {
    return (static_cast<int>(k) * S + s) * m + i;
  }
  ActionKind kindOf(int n) const {
    return static_cast<ActionKind>(n / (S * m));
  }
  int stageOf(int n) const { return (n / m) % S; }
  int mbOf(int n) const { return n % m; }
  /// Latency from stage `from` to stage `to`: T_comm between ranks, none
  /// between the chunks of one rank.
  double lag(int from, int to) const {
    return stageToRank[from] != stageToRank[to] ? c.comm[from] : 0.0;
  }
  /// a runs before b on their rank in every schedule of the model (same
  /// rank; microbatch order per type, the type order above).
  bool before(int a, int b) const {
    return a != b && mbOf(a) <= mbOf(b) && kReach[typeOf[a]][typeOf[b]];
  }
  /// The order column of passes a and b, and true if it means a before b.
  std::pair<int, bool> order(int a, int b) const {
    if (a < b)
      return {P.at({a, b}), true};
    return {P.at({b, a}), false};
  }

  void scaleCosts();
  void firstStarts();
  void objectiveBounds();
  void timeWindows();
  void addColumns();
  void addOrderPairs();
  void addDependencies();
  void addSpanAndMemoryRows();
  void printSummary() const;
};

/// Per-pass costs and memory deltas, scaled to O(1) units (CBC's tolerances
/// are absolute), each rank's passes, and the warm start's end times and
/// positions.
void IlpFormulation::scaleCosts() {
  c = resolveStageCosts(problem, stageToRank);
  for (int s = 0; s < S; ++s) {
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
  memLimit.assign(p, 0.0);
  for (int r = 0; r < p; ++r)
    memLimit[r] = problem.memoryLimitOf(r) / mUnit;
  cost.assign(numNodes, 0);
  delta.assign(numNodes, 0);
  warmEnd.assign(numNodes, 0);
  warmPos.assign(numNodes, 0);
  typeOf.assign(numNodes, 0);
  rankNodes.assign(p, {});
  for (int s = 0; s < S; ++s) {
    int r = stageToRank[s];
    int chunk = s == r ? 0 : 1;
    for (ActionKind k : kKinds)
      for (int i = 0; i < m; ++i) {
        int n = node(k, s, i);
        cost[n] = c.cost(k, s);
        delta[n] = c.memoryDelta(k, s);
        typeOf[n] = static_cast<int>(k) * 2 + chunk;
        rankNodes[r].push_back(n);
      }
  }
  for (auto &nodes : rankNodes)
    std::sort(nodes.begin(), nodes.end());
  for (int r = 0; r < p; ++r)
    for (size_t k = 0; k < warm.perRank[r].size(); ++k) {
      const TimedAction &t = warmSim.timeline[r][k];
      int n = node(t.action.kind, t.action.stage, t.action.microbatch);
      warmEnd[n] = t.end / tUnit;
      warmPos[n] = k;
    }
}

/// The first pass of every rank, F(r,0), starts as early as possible:
/// F(0,0) at t = 0 and F(r,0) when F(r-1,0)'s activation arrives. This is
/// the simulator's semantics (every pass as early as its dependencies and
/// the rank's order allow), which measures the returned schedule. Without it
/// the ILP may delay a rank's first pass to shorten that rank's span, an
/// objective no order attains under the simulator (p=3 m=8 F6 B2 W3 c1 at
/// 1.75p: ILP 89 with stage 2 idling 2 ms before F0, simulated 90). With it,
/// every ILP timing is no earlier than the simulation of its order, and the
/// first starts coincide, so the simulated span of the decoded order is at
/// most the ILP objective (and equal at the optimum).
void IlpFormulation::firstStarts() {
  rankStart.assign(p, 0);
  double firstEnd = 0;
  for (int r = 0; r < p; ++r) {
    firstEnd += (r > 0 ? lag(r - 1, r) : 0) + c.f[r];
    rankStart[r] = firstEnd - c.f[r];
  }
}

/// Bounds on the objective R (the largest rank span). Upper: the warm
/// start's span; the search only needs solutions at least as good, and the
/// warm start itself attains it. Lower: the busiest rank's work and the
/// analytic bound of Bounds.cpp (V = 1; valid for every schedule, so for
/// every ILP solution).
void IlpFormulation::objectiveBounds() {
  double work = 0;
  for (int r = 0; r < p; ++r) {
    double w = 0;
    for (int n : rankNodes[r])
      w += cost[n];
    work = std::max(work, w);
  }
  ub = warmSim.stageSpan / tUnit;
  analyticMs = work * tUnit;
  if (problem.numChunks == 1) {
    std::vector<double> limits(p);
    for (int r = 0; r < p; ++r)
      limits[r] = problem.memoryLimitOf(r);
    analyticMs = std::max(analyticMs, stageSpanLowerBound(problem, limits));
  }
  lb = std::min(ub, std::max(work, analyticMs / tUnit));
  grid = timeGrid(problem);
}

/// Time windows. With R <= ub every pass of rank r ends in
/// [rankStart(r), rankStart(r) + ub]. est[n]: earliest end of pass n from
/// the dependency chains (4), (5), F -> B -> W, the microbatch order of each
/// kind, and the passes that must precede it on its rank; lct[n]: latest
/// end, from rankStart + ub less the passes that must follow it on its
/// rank, propagated backwards through the same chains. Every solution with
/// R <= ub lies in these windows, so they are valid column bounds, and they
/// give each order pair its own big-M (addOrderPairs) instead of one
/// horizon-wide M.
void IlpFormulation::timeWindows() {
  struct Arc {
    int from, to;
    double lag; // E[to] >= E[from] + lag
  };
  std::vector<Arc> arcs;
  est.assign(numNodes, 0);
  lct.assign(numNodes, 0);
  for (int r = 0; r < p; ++r)
    for (int n : rankNodes[r]) {
      double pre = 0, post = 0;
      for (int k : rankNodes[r]) {
        if (before(k, n))
          pre += cost[k];
        else if (before(n, k))
          post += cost[k];
      }
      est[n] = rankStart[r] + pre + cost[n];
      lct[n] = rankStart[r] + ub - post;
    }
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < m; ++i) {
      int f = node(ActionKind::F, s, i), b = node(ActionKind::B, s, i),
          w = node(ActionKind::W, s, i);
      if (s > 0)
        arcs.push_back(
            {node(ActionKind::F, s - 1, i), f, lag(s - 1, s) + c.f[s]});
      if (s + 1 < S)
        arcs.push_back(
            {node(ActionKind::B, s + 1, i), b, lag(s + 1, s) + c.b[s]});
      arcs.push_back({f, b, c.b[s]});
      arcs.push_back({b, w, c.w[s]});
      if (i > 0)
        for (ActionKind k : kKinds)
          arcs.push_back({node(k, s, i - 1), node(k, s, i), c.cost(k, s)});
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Arc &a : arcs) {
      if (est[a.from] + a.lag > est[a.to] + 1e-12) {
        est[a.to] = est[a.from] + a.lag;
        changed = true;
      }
      if (lct[a.to] - a.lag < lct[a.from] - 1e-12) {
        lct[a.from] = lct[a.to] - a.lag;
        changed = true;
      }
    }
  }
}

/// The end-time columns E (in their windows, F(r,0) pinned) and R.
void IlpFormulation::addColumns() {
  E.assign(numNodes, -1);
  for (int n = 0; n < numNodes; ++n) {
    // The warm start lies in its windows; the max/min only absorb rounding.
    double lo = std::min(est[n], warmEnd[n]);
    double hi = std::max({lct[n], warmEnd[n], lo});
    E[n] = ilp.addCol(lo, hi, 0, false, warmEnd[n]);
  }
  for (int r = 0; r < p; ++r) {
    int col = E[node(ActionKind::F, r, 0)];
    ilp.colLb[col] = ilp.colUb[col] = rankStart[r] + c.f[r];
  }
  R = ilp.addCol(lb, std::max(lb, ub), 1, false, ub);
}

/// P[(a,b)] column for a < b in node index, meaning "a before b", with the
/// rows (6), for every pair of passes on one rank whose order the model
/// does not imply.
///
/// Symmetry breaking: the passes of one kind run in microbatch order on
/// every stage (F(s,0) F(s,1) ..., B(s,0) B(s,1) ..., W(s,0) W(s,1) ...), as
/// in the authors' formulation. This loses no schedule because the
/// microbatches are identical (same costs and memory): take any feasible
/// timed schedule and, on every stage and for every kind, give the k-th pass
/// of that kind to run the label k, keeping every start time. The k-th F on
/// stage s starts after k distinct F passes of stage s-1 have ended (plus
/// T_comm), so after the k-th of them to end: F(s,k) after F(s-1,k) still
/// holds. The same counting gives B(s,k) after B(s+1,k) (k-th B on s+1) and
/// after F(s,k), and W(s,k) after B(s,k). Memory on a rank depends only on
/// how many F, B and W of each stage have run there, which relabelling does
/// not change. So, with each rank's span measured from its own first pass,
/// the optimum over microbatch-ordered timed schedules is the optimum over
/// all timed schedules. (The model also pins F(r,0) to its earliest start,
/// the simulator's semantics for orders in this class; an order outside it
/// may start a rank later than that, so CBC's bound is stated for the class,
/// and the analytic bound, which holds for every order, is reported next to
/// it.)
void IlpFormulation::addOrderPairs() {
  double tol = 1e-7 * std::max(1.0, ub);
  for (int r = 0; r < p; ++r)
    for (int a : rankNodes[r])
      for (int b : rankNodes[r]) {
        if (a >= b || before(a, b) || before(b, a))
          continue;
        // a before b needs E[b] >= E[a] + T_b >= est[a] + T_b.
        bool aFirstOk = est[a] + cost[b] <= lct[b] + tol;
        bool bFirstOk = est[b] + cost[a] <= lct[a] + tol;
        double init = warmPos[a] < warmPos[b];
        int col = ilp.addCol(bFirstOk ? 0 : 1, aFirstOk ? 1 : 0, 0, true, init);
        fixedPairs += !(aFirstOk && bFirstOk);
        P[{a, b}] = col;
        // (6) with a big-M per row from the windows:
        //   E[b] - E[a] >= T_b - (1 - P) Mab, Mab = T_b + lct[a] - est[b]
        //   E[a] - E[b] >= T_a - P Mba,       Mba = T_a + lct[b] - est[a]
        double mab = std::max(0.0, cost[b] + lct[a] - est[b]);
        double mba = std::max(0.0, cost[a] + lct[b] - est[a]);
        ilp.addRow({E[b], E[a], col}, {1, -1, -mab}, 'G', cost[b] - mab);
        ilp.addRow({E[a], E[b], col}, {1, -1, mba}, 'G', cost[a]);
      }
}

/// Dependencies (4), (5), same-stage implied order, W after B.
void IlpFormulation::addDependencies() {
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < m; ++i) {
      int f = node(ActionKind::F, s, i), b = node(ActionKind::B, s, i),
          w = node(ActionKind::W, s, i);
      if (s > 0)
        ilp.addRow({E[f], E[node(ActionKind::F, s - 1, i)]}, {1, -1}, 'G',
                   lag(s - 1, s) + c.f[s]);
      if (s + 1 < S)
        ilp.addRow({E[b], E[node(ActionKind::B, s + 1, i)]}, {1, -1}, 'G',
                   lag(s + 1, s) + c.b[s]);
      ilp.addRow({E[b], E[f]}, {1, -1}, 'G', c.b[s]);
      ilp.addRow({E[w], E[b]}, {1, -1}, 'G', c.w[s]);
      if (i > 0)
        for (ActionKind k : kKinds)
          ilp.addRow({E[node(k, s, i)], E[node(k, s, i - 1)]}, {1, -1}, 'G',
                     cost[node(k, s, i)]);
    }
}

/// The objective rows (3) as the first family of span cuts, the second
/// family, and the memory rows (7) for the passes that allocate, per rank.
void IlpFormulation::addSpanAndMemoryRows() {
  for (int r = 0; r < p; ++r) {
    int first = node(ActionKind::F, r, 0);
    double tFirst = cost[first];
    // (3): R >= E[W(s,m-1)] - E[F(r,0)] + T_F for the rank's stages (also
    // the first cut below for that W; kept for the model's row order).
    for (int st = 0; st < S; ++st)
      if (stageToRank[st] == r)
        ilp.addRow({R, E[node(ActionKind::W, st, m - 1)], E[first]},
                   {1, -1, 1}, 'G', tFirst);
    for (int n : rankNodes[r]) {
      // R >= E[n] + sum_{k after n} T_k - E[first] + T_first
      std::vector<int> cols{R, E[n], E[first]};
      std::vector<double> coefs{1, -1, 1};
      double rhs = tFirst;
      // start(n) >= start(first) + sum_{k before n} T_k
      std::vector<int> cols2{E[n], E[first]};
      std::vector<double> coefs2{1, -1};
      double rhs2 = cost[n] - tFirst;
      // memory (7) for passes that allocate
      std::vector<int> memCols;
      std::vector<double> memCoefs;
      double memConst = delta[n];
      for (int k : rankNodes[r]) {
        if (k == n)
          continue;
        if (before(n, k)) {
          rhs += cost[k];
        } else if (before(k, n)) {
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
      if (n != first)
        ilp.addRow(cols2, coefs2, 'G', rhs2);
      if (memLimit[r] > 0 && delta[n] > 0)
        ilp.addRow(memCols, memCoefs, 'L', memLimit[r] - memConst);
    }
  }
}

void IlpFormulation::printSummary() const {
  int outside = 0;
  for (int k = 0; k < ilp.numCols; ++k)
    outside += ilp.start[k] < ilp.colLb[k] - 1e-9 ||
               ilp.start[k] > ilp.colUb[k] + 1e-9;
  fprintf(stderr,
          "zb ilp: %d columns, %d rows, %d order pairs fixed by the time "
          "windows, objective in [%g, %g] ms, time grid %g ms; the warm "
          "start violates %d rows and %d column bounds\n",
          ilp.numCols, ilp.numRows, fixedPairs, lb * tUnit, ub * tUnit, grid,
          ilp.startViolations, outside);
}

CbcOutcome
IlpFormulation::solve(std::chrono::steady_clock::time_point tEntry) {
  CbcSettings settings;
  settings.timeLimitSeconds = options.timeLimitSeconds;
  settings.tEntry = tEntry;
  settings.threads = options.threads;
  settings.verbose = options.verbose;
  // When every time is a multiple of a grid g, so is every stage span under
  // the simulator and the optimum of the ILP (for fixed orders the E are
  // longest paths from the pinned first passes with lags that are sums of
  // times). A better solution is then at least g better: CBC may prune a
  // node whose bound exceeds incumbent - g ("increment"), which closes gaps
  // below g, and a bound may be rounded up to the grid.
  if (grid > 0)
    settings.increment = 0.99 * grid / tUnit;
  settings.proveThreshold =
      grid > 0 ? ub - 0.99 * grid / tUnit : ub - 1e-9 * std::max(1.0, ub);
  return runCbc(ilp, settings);
}

IlpReport IlpFormulation::report(const CbcOutcome &out, double seconds) const {
  IlpRunFacts facts;
  facts.numCols = ilp.numCols;
  facts.numRows = ilp.numRows;
  facts.startViolations = ilp.startViolations;
  facts.timeLimitSeconds = options.timeLimitSeconds;
  facts.tUnit = tUnit;
  facts.grid = grid;
  facts.ub = ub;
  facts.warmStartMs = warmSim.stageSpan;
  facts.analyticMs = analyticMs;
  return describeCbcRun(out, facts, seconds);
}

Schedule IlpFormulation::decode(const CbcOutcome &out, IlpReport &rep) const {
  const double *sol = out.hasSolution ? out.solution.data() : nullptr;
  double cbcObjective = out.objective * tUnit;
  Schedule result = warm;
  result.name = scheduleName(ScheduleKind::Ilp).str();
  result.costConvention = CostConvention::StageSpan;
  if (sol) {
    // Per rank: sort by the solved end times (ties: the order variables).
    Schedule candidate = result;
    for (int r = 0; r < p; ++r) {
      std::vector<int> list = rankNodes[r];
      std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
        double ea = sol[E[a]], eb = sol[E[b]];
        if (std::fabs(ea - eb) > 1e-6)
          return ea < eb;
        if (before(a, b))
          return true;
        if (before(b, a))
          return false;
        auto [col, aFirst] = order(a, b);
        return (sol[col] > 0.5) == aFirst;
      });
      candidate.perRank[r].clear();
      for (int n : list)
        candidate.perRank[r].push_back({kindOf(n), stageOf(n), mbOf(n)});
    }
    if (llvm::Error e = verify(problem, candidate)) {
      rep.status += " (solution rejected by the verifier: " +
                    llvm::toString(std::move(e)) + "; kept the warm start)";
    } else {
      SimResult sim = simulate(problem, candidate);
      // The simulation of CBC's order is never later than CBC's timing (the
      // first passes start as early as possible in both), so its span is at
      // most CBC's objective; a larger one means the model and the simulator
      // disagree.
      if (sim.stageSpan > cbcObjective + 1e-6 * std::max(1.0, cbcObjective))
        rep.status += llvm::formatv(" (CBC's order simulates to {0}, above "
                                    "its objective {1})",
                                    sim.stageSpan, cbcObjective)
                          .str();
      if (sim.stageSpan <= warmSim.stageSpan)
        result = std::move(candidate);
    }
  }
  double realized = simulate(problem, result).stageSpan;
  completeIlpReport(out, cbcObjective, realized, warmSim.stageSpan, rep);
  return result;
}

} // namespace

llvm::Expected<Schedule> detail::buildIlp(const Problem &problem,
                                          const BuildOptions &options,
                                          IlpReport *report) {
  // The time limit covers the whole call (warm start, model, CBC, decode).
  auto tEntry = std::chrono::steady_clock::now();
  // Warm start: the heuristic (which never does worse than ZB-H1/H2); for
  // two chunks per rank, ZB-V (the authors' construction) on the V-shape
  // mapping.
  llvm::Expected<Schedule> warm =
      problem.numChunks == 2
          ? buildVShape(problem, ScheduleKind::ZBV, BuildOptions())
          : buildHeuristic(problem, ScheduleKind::ZBAuto, options);
  if (!warm)
    return warm.takeError();
  SimResult warmSim = simulate(problem, *warm);
  IlpFormulation formulation(problem, options, *warm, warmSim);
  formulation.build();
  auto t0 = std::chrono::steady_clock::now();
  CbcOutcome out = formulation.solve(tEntry);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  IlpReport rep = formulation.report(out, seconds);
  Schedule result = formulation.decode(out, rep);
  if (report)
    *report = rep;
  return result;
}
