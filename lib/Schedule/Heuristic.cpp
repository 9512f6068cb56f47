//===- Heuristic.cpp - The automatic schedule of Section 3.1 --------------===//
//
// The greedy heuristic of the Zero Bubble paper, Section 3.1:
//  - warm-up: as many F passes as the memory limit allows before the first B
//    (flag `allowBubbleBeforeFirstB`: also take one more F that may leave a
//    bubble shorter than T_F before the first B);
//  - steady state: one F and one B per microbatch, W inserted into bubbles of
//    at least T_W, into smaller bubbles when they would grow the largest
//    cumulative bubble of all stages (flag `noBubbleGreedy`), and whenever the
//    memory limit is hit;
//  - stage i always has at least one more F than stage i+1; when it has two
//    more, flag `prioritizeB` lets it skip an F if that causes no bubble;
//  - the remaining W passes close every stage.
// The best of the 2 x 2 x 2 flag settings (smallest stage span) is returned.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace zb::sched;

namespace {

struct HeuristicFlags {
  bool allowBubbleBeforeFirstB;
  bool prioritizeB;
  bool noBubbleGreedy;
};

/// One run of the greedy construction for a V = 1 problem.
class HeuristicRun {
public:
  HeuristicRun(const StageCosts &c, const std::vector<double> &limit, int m)
      : c(c), limit(limit), p(c.f.size()), m(m), f(p), b(p), w(p), e(p), mem(p),
        bubble(p), end(3 * p * m, 0.0), order(p) {}

  /// Runs the construction. Returns false if the memory limit cannot be met.
  bool run(const HeuristicFlags &flags);

  /// Max over stages of (end of last W - start of first F).
  double span() const {
    double best = 0;
    for (int j = 0; j < p; ++j)
      best = std::max(best, endOf(ActionKind::W, j, m - 1) -
                                endOf(ActionKind::F, j, 0) + c.f[j]);
    return best;
  }

  std::vector<std::vector<Action>> takeOrder() { return std::move(order); }

private:
  double cost(ActionKind k, int j) const { return c.cost(k, j); }
  double memDelta(ActionKind k, int j) const { return c.memoryDelta(k, j); }
  bool fits(double value, int j) const {
    return StageCosts::fits(value, limit[j]);
  }
  double &endOf(ActionKind k, int j, int i) {
    return end[(static_cast<int>(k) * p + j) * m + i];
  }
  double endOf(ActionKind k, int j, int i) const {
    return end[(static_cast<int>(k) * p + j) * m + i];
  }
  double maxBubble() const {
    return *std::max_element(bubble.begin(), bubble.end());
  }
  /// Appends the next pass of kind k to stage j at its earliest time.
  void put(int j, ActionKind k);
  /// Before the next pass on stage j whose input arrives at `arrival`: fill
  /// the wait with W passes (Section 3.1, second step).
  void fillWithW(int j, double arrival, bool noBubbleGreedy);
  /// Runs W passes until `delta` more memory fits; false if impossible.
  bool makeRoom(int j, double delta);
  /// Microbatch 0: one F per stage, the warm-up F passes each stage can run
  /// before its first B arrives (Appendix B), then B(j, 0) from the last stage
  /// back. False if the memory limit cannot be met.
  bool warmUp(const HeuristicFlags &flags);
  /// Steady state, per stage: 1 if it runs its next F now, 0 if it skips it
  /// (prioritizeB and the bubble rule of Section 3.1).
  std::vector<int> chooseForwards(const HeuristicFlags &flags) const;
  /// Runs the chosen F passes (W first where memory or a wait needs them).
  bool runForwards(const std::vector<int> &required,
                   const HeuristicFlags &flags);
  /// Runs B(j, i) from the last stage back (W first where needed).
  bool runBackwards(int i, const HeuristicFlags &flags);

  const StageCosts &c;
  const std::vector<double> &limit;
  int p, m;
  std::vector<int> f, b, w;
  std::vector<double> e, mem, bubble, end;
  std::vector<std::vector<Action>> order;
};

} // namespace

void HeuristicRun::put(int j, ActionKind k) {
  int i = k == ActionKind::F ? f[j] : k == ActionKind::B ? b[j] : w[j];
  double t = e[j] + cost(k, j);
  double noBubble = t;
  if (k == ActionKind::F && j > 0)
    t = std::max(t, endOf(ActionKind::F, j - 1, i) + c.comm[j - 1] + c.f[j]);
  if (k == ActionKind::B && j + 1 < p)
    t = std::max(t, endOf(ActionKind::B, j + 1, i) + c.comm[j + 1] + c.b[j]);
  if (f[j] > 0)
    bubble[j] += t - noBubble;
  e[j] = t;
  endOf(k, j, i) = t;
  mem[j] += memDelta(k, j);
  order[j].push_back({k, j, i});
  (k == ActionKind::F ? f : k == ActionKind::B ? b : w)[j]++;
}

bool HeuristicRun::makeRoom(int j, double delta) {
  while (!fits(mem[j] + delta, j)) {
    if (w[j] >= b[j])
      return false;
    put(j, ActionKind::W);
  }
  return true;
}

void HeuristicRun::fillWithW(int j, double arrival, bool noBubbleGreedy) {
  while (w[j] < b[j] && e[j] + c.w[j] <= arrival)
    put(j, ActionKind::W);
  if (w[j] < b[j] && e[j] < arrival) {
    // A bubble shorter than T_W: take it (delay the next pass) only if it
    // would not become the largest cumulative bubble, or always.
    if (arrival - e[j] <= maxBubble() - bubble[j]) {
      if (noBubbleGreedy)
        put(j, ActionKind::W);
    } else {
      put(j, ActionKind::W);
    }
  }
}

bool HeuristicRun::warmUp(const HeuristicFlags &flags) {
  for (int j = 0; j < p; ++j) {
    if (!fits(mem[j] + memDelta(ActionKind::F, j), j))
      return false;
    put(j, ActionKind::F);
  }
  // Warm-up: how many more F passes each stage can run before its first
  // B arrives (Appendix B).
  std::vector<int> required(p, 0);
  double lastT = 0;
  for (int j = p - 1; j >= 0; --j) {
    if (j == p - 1) {
      lastT = endOf(ActionKind::F, j, 0) + c.b[j];
      continue;
    }
    double memory = mem[j], time = e[j];
    double arrival = lastT + c.comm[j + 1];
    while (f[j] + required[j] < m &&
           fits(memory + memDelta(ActionKind::F, j), j)) {
      if (flags.allowBubbleBeforeFirstB) {
        if (time + c.f[j] > arrival)
          break;
      } else if (time >= arrival) {
        break;
      }
      memory += memDelta(ActionKind::F, j);
      time += c.f[j];
      ++required[j];
    }
    lastT = std::max(time, arrival) + c.b[j];
  }
  // Stage j runs strictly fewer warm-up F than stage j-1.
  // (and never more F passes than stage j-1, which the paper's settings
  // never ask for but per-stage costs can).
  for (int j = 1; j < p; ++j)
    while (required[j] > 0 &&
           ((required[j] >= required[j - 1] && f[j] + required[j] < m) ||
            f[j] + required[j] > f[j - 1] + required[j - 1]))
      --required[j];
  for (int j = 0; j < p; ++j)
    for (int k = 0; k < required[j]; ++k)
      put(j, ActionKind::F);
  for (int j = p - 1; j >= 0; --j) {
    if (!makeRoom(j, memDelta(ActionKind::B, j)))
      return false;
    put(j, ActionKind::B);
  }
  return true;
}

std::vector<int>
HeuristicRun::chooseForwards(const HeuristicFlags &flags) const {
  std::vector<int> required(p, 0);
  for (int j = 0; j < p; ++j) {
    if (f[j] >= m)
      continue;
    if (j + 1 < p && f[j] >= f[j + 1] + 2 && flags.prioritizeB) {
      double nextPlusFB = e[j + 1] + c.f[j + 1] + c.b[j + 1] + c.comm[j + 1];
      if (e[j] >= nextPlusFB)
        continue;
      double wCost = 0, memWithW = mem[j] + memDelta(ActionKind::F, j);
      for (int cnt = 0; !fits(memWithW, j) && w[j] + cnt < b[j]; ++cnt) {
        wCost += c.w[j];
        memWithW += memDelta(ActionKind::W, j);
      }
      if (e[j] + c.f[j] + wCost <= nextPlusFB) {
        required[j] = 1;
        continue;
      }
      if (nextPlusFB - e[j] <= maxBubble() - bubble[j])
        continue;
    }
    required[j] = 1;
  }
  // A stage whose successor skips its F skips too (the invariant f[j] >
  // f[j+1]); a successor that has used up its F passes constrains nothing
  // (the paper's setting never gets there; per-stage costs can).
  for (int j = p - 2; j >= 0; --j)
    if (f[j + 1] < m)
      required[j] = std::min(required[j], required[j + 1]);
  return required;
}

bool HeuristicRun::runForwards(const std::vector<int> &required,
                               const HeuristicFlags &flags) {
  for (int j = 0; j < p; ++j) {
    if (!required[j] || (j > 0 && f[j] >= f[j - 1]))
      continue;
    if (!makeRoom(j, memDelta(ActionKind::F, j)))
      return false;
    if (j > 0)
      fillWithW(j, endOf(ActionKind::F, j - 1, f[j]) + c.comm[j - 1],
                flags.noBubbleGreedy);
    put(j, ActionKind::F);
  }
  return true;
}

bool HeuristicRun::runBackwards(int i, const HeuristicFlags &flags) {
  for (int j = p - 1; j >= 0; --j) {
    if (b[j] != i)
      return false;     // cannot happen for a well-formed run
    while (f[j] <= i) { // B(j, i) needs F(j, i); not reached in the paper's
      if ((j > 0 && f[j] >= f[j - 1]) ||
          !makeRoom(j, memDelta(ActionKind::F, j))) // settings
        return false;
      put(j, ActionKind::F);
    }
    if (!makeRoom(j, memDelta(ActionKind::B, j)))
      return false;
    if (j + 1 < p)
      fillWithW(j, endOf(ActionKind::B, j + 1, i) + c.comm[j + 1],
                flags.noBubbleGreedy);
    if (j == 0 && f[j] == m)
      while (w[j] < b[j])
        put(j, ActionKind::W);
    put(j, ActionKind::B);
  }
  return true;
}

bool HeuristicRun::run(const HeuristicFlags &flags) {
  if (!warmUp(flags))
    return false;
  for (int i = 1; i < m; ++i)
    if (!runForwards(chooseForwards(flags), flags) || !runBackwards(i, flags))
      return false;
  for (int j = 0; j < p; ++j)
    while (w[j] < m)
      put(j, ActionKind::W);
  return true;
}

namespace zb::sched::detail {
/// Runs the 8 flag settings and returns the per-rank order with the smallest
/// stage span, or an empty vector if no setting meets the limits.
std::vector<std::vector<Action>>
heuristicOrder(const StageCosts &costs, const std::vector<double> &limits,
               int m, double *spanOut) {
  std::vector<std::vector<Action>> best;
  double bestSpan = std::numeric_limits<double>::infinity();
  for (bool allowBubble : {true, false})
    for (bool prioritizeB : {true, false})
      for (bool greedy : {true, false}) {
        HeuristicRun run(costs, limits, m);
        if (!run.run({allowBubble, prioritizeB, greedy}))
          continue;
        double span = run.span();
        if (span < bestSpan) {
          bestSpan = span;
          best = run.takeOrder();
        }
      }
  if (spanOut)
    *spanOut = bestSpan;
  return best;
}

} // namespace zb::sched::detail

llvm::Expected<Schedule> detail::buildHeuristic(const Problem &problem,
                                                ScheduleKind kind,
                                                const BuildOptions &options) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  llvm::StringRef name = scheduleName(kind);
  Schedule s;
  s.name = name.str();
  s.stageToRank = interleavedStageToRank(p, 1);
  s.costConvention = CostConvention::StageSpan;
  StageCosts costs = resolveStageCosts(problem, s.stageToRank);

  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> limits(p, inf);
  for (int j = 0; j < p; ++j) {
    if (kind == ScheduleKind::ZB1P)
      limits[j] = p * costs.memB[j];
    else if (kind == ScheduleKind::ZB2P)
      limits[j] = 2 * p * costs.memB[j];
    if (problem.memoryLimitOf(j) > 0)
      limits[j] = std::min(limits[j], problem.memoryLimitOf(j));
  }
  s.perRank = heuristicOrder(costs, limits, m, nullptr);
  // The handcrafted schedules are candidates too, so that the automatic
  // schedule is never worse than ZB-H1 / ZB-H2 whenever they fit the limit.
  double best = std::numeric_limits<double>::infinity();
  if (!s.perRank.empty())
    best = simulate(problem, s).stageSpan;
  for (auto *candidate : {&buildZBH1, &buildZBH2}) {
    llvm::Expected<Schedule> hand = (*candidate)(problem);
    if (!hand) {
      llvm::consumeError(hand.takeError());
      continue;
    }
    SimResult sim = simulate(problem, *hand);
    if (StageCosts::allFit(sim.peakMemory, limits) && sim.stageSpan < best) {
      best = sim.stageSpan;
      s.perRank = std::move(hand->perRank);
    }
  }
  if (s.perRank.empty()) {
    // The rank with the least room above its one-microbatch minimum.
    int rank = 0;
    double room = std::numeric_limits<double>::infinity(), need = 0;
    for (int r = 0; r < p; ++r) {
      double n = minimumMemoryOfRank(problem, s.stageToRank, r);
      if (limits[r] - n < room) {
        room = limits[r] - n;
        rank = r;
        need = n;
      }
    }
    return llvm::createStringError(
        llvm::formatv("{0}: the heuristic cannot meet the memory limit {1} of "
                      "rank {2}; that rank needs at least {3} (one microbatch "
                      "in flight) plus room for one more F pass",
                      name, limits[rank], rank, need)
            .str());
  }
  if (options.localSearch) {
    // Wider search: the flag settings under tighter limits.
    auto fits = [&](const SimResult &sim) {
      return StageCosts::allFit(sim.peakMemory, limits) && sim.complete;
    };
    for (int step = 1; step <= 20; ++step) {
      std::vector<double> tighter(limits);
      bool finite = false;
      for (double &l : tighter)
        if (std::isfinite(l)) {
          l *= 1 - 0.025 * step;
          finite = true;
        }
      if (!finite)
        break;
      Schedule candidate = s;
      candidate.perRank = heuristicOrder(costs, tighter, m, nullptr);
      if (candidate.perRank.empty())
        break;
      if (llvm::Error e = verify(problem, candidate)) {
        llvm::consumeError(std::move(e));
        continue;
      }
      SimResult sim = simulate(problem, candidate);
      if (fits(sim) && sim.stageSpan < best - 1e-9) {
        best = sim.stageSpan;
        s.perRank = std::move(candidate.perRank);
      }
    }
    s.perRank =
        improveByLocalSearch(problem, s, limits, options.searchEvaluations);
  }
  return s;
}
