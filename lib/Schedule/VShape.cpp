//===- VShape.cpp - ZB-V, V-Half, V-Min -----------------------------------===//
//
// The V-shape schedules of the ZB-V note (docs/references.md) and of "Pipeline Parallelism with Controllable
// Memory" (Qi et al., 2024): every rank holds 2 chunks, stage s on rank s for
// s < p and on rank 2p-1-s otherwise, so the forward pass goes down the ranks
// and back up (a "V") and the last stage sits on rank 0.
//
// The three schedules differ in the activation memory they may hold per
// rank, in units of one 1F1B stage's M_B (a chunk holds M_B / 2):
//   zb-v    p M_B          (as 1F1B; zero bubble when T_F = T_B = T_W), or
//                          Problem::memoryLimit when set (any limit)
//   v-half  (p/2 + 1) M_B  (about half of 1F1B)
//   v-min   (p/3 + 1) M_B  (about a third of 1F1B)
// (V-Half and V-Min further capped by Problem::memoryLimit). ZB-V is the
// authors' construction (ZBV.cpp), V-Half and V-Min their building blocks
// (VPattern.cpp). Where those cannot meet the limit, a greedy list
// scheduler (below) builds the order: passes are committed in order of
// start time; an idle rank runs, in this order of preference, a ready B, a
// ready F of its second chunk, a ready F of its first chunk (only if memory
// for the second-chunk F of every microbatch it has started stays reserved,
// so the schedule cannot deadlock on memory), and otherwise a pending W to
// fill the bubble or to free memory. With BuildOptions::localSearch the
// order is then improved by local search without raising its memory.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace zb::sched;

namespace {

class VGreedy {
public:
  VGreedy(const Problem &problem, const StageCosts &c,
          const std::vector<int> &stageToRank, std::vector<double> limit)
      : p(problem.numRanks), m(problem.numMicrobatches), S(2 * p), c(c),
        stageToRank(stageToRank), limit(std::move(limit)), end(3 * S * m, -1.0),
        free(p, 0.0), mem(p, 0.0), nextF(S, 0), nextB(S, 0), nextW(S, 0),
        perRank(p) {}

  bool run();
  std::vector<std::vector<Action>> takeOrder() { return std::move(perRank); }

private:
  int idx(ActionKind k, int s, int i) const {
    return (static_cast<int>(k) * S + s) * m + i;
  }
  double cost(ActionKind k, int s) const { return c.cost(k, s); }
  double delta(ActionKind k, int s) const { return c.memoryDelta(k, s); }
  bool fits(double v, int r) const { return StageCosts::fits(v, limit[r]); }
  /// Time at which the inputs of (k, s, i) are available; < 0 if unknown.
  double readyTime(ActionKind k, int s, int i) const;
  void commit(int r, ActionKind k, int s, int i, double start);

  int p, m, S;
  const StageCosts &c;
  const std::vector<int> &stageToRank;
  std::vector<double> limit;
  std::vector<double> end, free, mem;
  std::vector<int> nextF, nextB, nextW;
  std::vector<std::vector<Action>> perRank;
};

} // namespace

double VGreedy::readyTime(ActionKind k, int s, int i) const {
  int r = stageToRank[s];
  auto dep = [&](ActionKind dk, int ds) -> double {
    double e = end[idx(dk, ds, i)];
    if (e < 0)
      return -1;
    return e + (stageToRank[ds] != r ? c.comm[ds] : 0);
  };
  switch (k) {
  case ActionKind::F:
    return s == 0 ? 0 : dep(ActionKind::F, s - 1);
  case ActionKind::B: {
    double f = dep(ActionKind::F, s);
    if (f < 0 || s + 1 == S)
      return f;
    double b = dep(ActionKind::B, s + 1);
    return b < 0 ? -1 : std::max(f, b);
  }
  case ActionKind::W:
    return dep(ActionKind::B, s);
  }
  return -1;
}

void VGreedy::commit(int r, ActionKind k, int s, int i, double start) {
  end[idx(k, s, i)] = start + cost(k, s);
  free[r] = start + cost(k, s);
  mem[r] += delta(k, s);
  perRank[r].push_back({k, s, i});
  (k == ActionKind::F ? nextF : k == ActionKind::B ? nextB : nextW)[s]++;
}

bool VGreedy::run() {
  int total = 3 * S * m, done = 0;
  while (done < total) {
    // Every rank proposes its preferred pass; commit the earliest start.
    int bestRank = -1;
    ActionKind bestKind = ActionKind::F;
    int bestStage = 0;
    double bestStart = std::numeric_limits<double>::infinity();
    for (int r = 0; r < p; ++r) {
      int first = r, second = S - 1 - r; // chunk 0 and chunk 1 stages
      double now = free[r];
      // Candidates with their start times (inf = not possible yet).
      struct Cand {
        ActionKind k;
        int s;
        double start;
      };
      Cand cands[5];
      int n = 0;
      for (int s : {second, first}) // B: earlier in the backward chain first
        if (nextB[s] < m && nextB[s] < nextF[s]) {
          double t = readyTime(ActionKind::B, s, nextB[s]);
          if (t >= 0)
            cands[n++] = {ActionKind::B, s, std::max(now, t)};
        }
      // F of the second chunk; it must follow the first chunk's F.
      if (nextF[second] < m && nextF[second] < nextF[first]) {
        double t = readyTime(ActionKind::F, second, nextF[second]);
        if (t >= 0 && fits(mem[r] + delta(ActionKind::F, second), r))
          cands[n++] = {ActionKind::F, second, std::max(now, t)};
      }
      // F of the first chunk, keeping room for the second-chunk F of every
      // microbatch started on this rank.
      if (nextF[first] < m) {
        int open = nextF[first] + 1 - nextF[second];
        double need = mem[r] + delta(ActionKind::F, first) +
                      open * delta(ActionKind::F, second);
        double t = readyTime(ActionKind::F, first, nextF[first]);
        if (t >= 0 && fits(need, r))
          cands[n++] = {ActionKind::F, first, std::max(now, t)};
      }
      // Choose: the preferred candidate that can start now, else W now if
      // one is pending, else the earliest candidate.
      const Cand *pick = nullptr;
      for (int k = 0; k < n && !pick; ++k)
        if (cands[k].start <= now)
          pick = &cands[k];
      Cand w{ActionKind::W, -1, now};
      if (!pick) {
        for (int s : {second, first})
          if (nextW[s] < nextB[s] &&
              (w.s < 0 || end[idx(ActionKind::B, s, nextW[s])] <
                              end[idx(ActionKind::B, w.s, nextW[w.s])]))
            w.s = s;
        if (w.s >= 0)
          pick = &w;
      }
      if (!pick)
        for (int k = 0; k < n; ++k)
          if (!pick || cands[k].start < pick->start)
            pick = &cands[k];
      if (!pick)
        continue;
      if (pick->start < bestStart) {
        bestStart = pick->start;
        bestRank = r;
        bestKind = pick->k;
        bestStage = pick->s;
      }
    }
    if (bestRank < 0)
      return false;
    int i = bestKind == ActionKind::F   ? nextF[bestStage]
            : bestKind == ActionKind::B ? nextB[bestStage]
                                        : nextW[bestStage];
    commit(bestRank, bestKind, bestStage, i, bestStart);
    ++done;
  }
  return true;
}

/// True when every rank's `peak` fits the problem's limit for that rank.
static bool fitsProblemLimits(const Problem &problem,
                              llvm::ArrayRef<double> peak) {
  for (size_t r = 0; r < peak.size(); ++r)
    if (problem.memoryLimitOf(r) > 0 &&
        !StageCosts::fits(peak[r], problem.memoryLimitOf(r)))
      return false;
  return true;
}

/// The order of the V-shape schedule `kind`: the authors' construction
/// (ZB-V; V-Half / V-Min building blocks when they fit the problem's limit),
/// else the greedy list scheduler under `limits`; empty when none fits.
static std::vector<std::vector<Action>>
constructOrder(const Problem &problem, ScheduleKind kind,
               const StageCosts &control,
               const std::vector<double> &limits,
               const std::vector<int> &stageToRank) {
  if (kind == ScheduleKind::ZBV) {
    if (auto order = detail::constructZBV(problem, control, limits))
      return std::move(*order);
  } else if (auto order = detail::constructVPattern(
                 problem, kind == ScheduleKind::VHalf)) {
    // The building blocks fix the memory; keep them when they fit the
    // problem's limit.
    Schedule probe;
    probe.stageToRank = stageToRank;
    probe.perRank = std::move(*order);
    if (fitsProblemLimits(problem, simulate(problem, probe).peakMemory))
      return std::move(probe.perRank);
  }
  VGreedy greedy(problem, control, stageToRank, limits);
  if (!greedy.run())
    return {};
  return greedy.takeOrder();
}

llvm::Expected<Schedule> detail::buildVShape(const Problem &problem,
                                             ScheduleKind kind,
                                             const BuildOptions &options) {
  int p = problem.numRanks;
  llvm::StringRef name = scheduleName(kind);
  // ZB-V (and v-auto, which starts from its budget) run at any limit the
  // user gives; V-Half and V-Min keep their own budgets.
  bool userLimit = kind == ScheduleKind::ZBV || kind == ScheduleKind::VAuto;
  Schedule s;
  s.name = name.str();
  s.stageToRank = vShapeStageToRank(p);
  s.costConvention = CostConvention::StageSpan;
  StageCosts costs = resolveStageCosts(problem, s.stageToRank);
  // Without a memory model, control memory in units of activations.
  bool noMemory = true;
  for (double v : costs.memB)
    noMemory &= v == 0;
  StageCosts control = costs;
  if (noMemory) {
    std::fill(control.memB.begin(), control.memB.end(), 0.5);
    std::fill(control.memW.begin(), control.memW.end(), 0.0);
  }
  double factor = userLimit                     ? p
                  : kind == ScheduleKind::VHalf ? p / 2.0 + 1
                                                : p / 3.0 + 1;
  std::vector<double> limits(p);
  for (int r = 0; r < p; ++r) {
    double rankMB = control.memB[r] + control.memB[2 * p - 1 - r];
    limits[r] = factor * rankMB;
    // ZB-V runs at any limit the user gives (more memory, fewer bubbles);
    // V-Half and V-Min keep their budgets, capped by the limit.
    double user = problem.memoryLimitOf(r);
    if (user > 0 && !noMemory)
      limits[r] = userLimit ? user : std::min(limits[r], user);
    // Never below one microbatch in flight (both chunks, then B of the
    // second chunk).
    double minimum = std::max(rankMB, rankMB - control.memB[2 * p - 1 - r] +
                                          control.memW[2 * p - 1 - r]);
    if (limits[r] < minimum && user == 0)
      limits[r] = minimum;
  }
  if (kind == ScheduleKind::VAuto) {
    // The controllable-memory family under the user's limits: every
    // construction that fits them, the shortest simulated stage span.
    std::vector<double> userLimits = limits;
    for (int r = 0; r < p; ++r)
      if (problem.memoryLimitOf(r) > 0)
        userLimits[r] = problem.memoryLimitOf(r);
    double best = std::numeric_limits<double>::infinity();
    for (ScheduleKind candidate :
         {ScheduleKind::ZBV, ScheduleKind::VHalf, ScheduleKind::VMin}) {
      Schedule c = s;
      c.perRank = constructOrder(problem, candidate, control, userLimits,
                                 s.stageToRank);
      if (c.perRank.empty())
        continue;
      SimResult sim = simulate(problem, c);
      if (sim.complete && fitsProblemLimits(problem, sim.peakMemory) &&
          sim.stageSpan < best - 1e-9) {
        best = sim.stageSpan;
        s.perRank = std::move(c.perRank);
      }
    }
  } else {
    s.perRank =
        constructOrder(problem, kind, control, limits, s.stageToRank);
  }
  if (s.perRank.empty()) {
    std::vector<double> need(p);
    for (int r = 0; r < p; ++r)
      need[r] = minimumMemoryOfRank(problem, s.stageToRank, r);
    return llvm::createStringError(
        llvm::formatv("{0}: no order found within the per-rank memory "
                      "limits {1:$[, ]}; raise them (one microbatch in "
                      "flight needs {2:$[, ]})",
                      name, llvm::make_range(limits.begin(), limits.end()),
                      llvm::make_range(need.begin(), need.end()))
            .str());
  }
  if (options.localSearch) {
    // Beyond the authors: local search on the order, never above the
    // memory the construction holds (ZB-V: its limits) or the problem's.
    std::vector<double> searchLimits(p,
                                     std::numeric_limits<double>::infinity());
    if (!noMemory) {
      searchLimits = userLimit ? limits : simulate(problem, s).peakMemory;
      for (int r = 0; r < p; ++r)
        if (problem.memoryLimitOf(r) > 0)
          searchLimits[r] = std::min(searchLimits[r], problem.memoryLimitOf(r));
    }
    s.perRank = improveByLocalSearch(problem, s, searchLimits,
                                     options.searchEvaluations);
  }
  return s;
}
