//===- LocalSearch.cpp - Improving heuristic schedules --------------------===//
//
// Local search on the per-rank order (beyond the paper). A move takes one
// pass (F, B or W) of one rank and reinserts it up to kWindow positions
// earlier or later in the same rank's order. A move is kept if the order stays
// valid (F before B before W of the same stage and microbatch; no deadlock:
// the simulation completes), every rank stays within its memory limit, and
// the schedule gets strictly better in the order (largest stage span, sum of
// the stage spans, makespan): the second and third keys let the search cross
// plateaus of the first. First-improvement descent; at a local optimum the
// best order is kicked with a few random moves and the descent restarts
// (iterated local search, deterministic seed) until the evaluation budget is
// spent.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include <algorithm>
#include <cmath>
#include <tuple>

using namespace zb::sched;

namespace {
constexpr int kWindow = 6;

struct Score {
  double span = 0, sumSpan = 0, makespan = 0;
  bool betterThan(const Score &o) const {
    auto tol = [](double a) { return 1e-9 * std::max(1.0, std::fabs(a)); };
    if (span < o.span - tol(o.span))
      return true;
    if (span > o.span + tol(o.span))
      return false;
    if (sumSpan < o.sumSpan - tol(o.sumSpan))
      return true;
    if (sumSpan > o.sumSpan + tol(o.sumSpan))
      return false;
    return makespan < o.makespan - tol(o.makespan);
  }
};

/// Same-rank order of one rank: F before B before W of the same pass.
bool validRankOrder(const std::vector<Action> &list, size_t lo, size_t hi) {
  // Only the moved range can break the order; check every pair that involves
  // a pass in [lo, hi] against its siblings by position lookup.
  for (size_t k = lo; k <= hi && k < list.size(); ++k) {
    const Action &a = list[k];
    for (size_t q = 0; q < list.size(); ++q) {
      const Action &b = list[q];
      if (q == k || b.stage != a.stage || b.microbatch != a.microbatch)
        continue;
      bool aFirst = static_cast<int>(a.kind) < static_cast<int>(b.kind);
      if (aFirst != (k < q))
        return false;
    }
  }
  return true;
}
} // namespace

namespace {
class Search {
public:
  Search(const Problem &problem, const std::vector<double> &limits,
         int maxEvaluations)
      : problem(problem), limits(limits), maxEvaluations(maxEvaluations) {}

  bool score(const Schedule &s, Score &out) {
    ++evaluations;
    SimResult r = simulate(problem, s);
    if (!r.complete)
      return false;
    if (!StageCosts::allFit(r.peakMemory, limits))
      return false;
    out.span = r.stageSpan;
    out.makespan = r.makespan;
    out.sumSpan = 0;
    for (const auto &tl : r.timeline)
      if (!tl.empty())
        out.sumSpan += tl.back().end - tl.front().start;
    return true;
  }

  /// Moves list[k] to position `to`; returns false (and undoes it) if the
  /// rank's order becomes invalid. A pass never moves past another pass of
  /// the same kind and stage: that would reorder the microbatches of that
  /// kind on this stage only, and the neighbour stage would then receive
  /// (or send) them in a different order than this one sends (receives),
  /// which verifyCommunication rejects (the receiver must post its receives
  /// in the sender's order). Keeping every kind in its original order keeps
  /// the search inside the class the ILP searches (microbatch order).
  static bool move(std::vector<Action> &list, size_t k, size_t to) {
    for (size_t q = std::min(k, to); q <= std::max(k, to); ++q)
      if (q != k && list[q].kind == list[k].kind &&
          list[q].stage == list[k].stage)
        return false;
    Action moved = list[k];
    list.erase(list.begin() + k);
    list.insert(list.begin() + to, moved);
    if (validRankOrder(list, std::min(k, to), std::max(k, to)))
      return true;
    undo(list, k, to);
    return false;
  }
  static void undo(std::vector<Action> &list, size_t k, size_t to) {
    Action moved = list[to];
    list.erase(list.begin() + to);
    list.insert(list.begin() + k, moved);
  }

  /// First-improvement descent from `current` (whose score is `best`).
  void descend(Schedule &current, Score &best) {
    bool improved = true;
    while (improved && evaluations < maxEvaluations) {
      improved = false;
      for (size_t r = 0; r < current.perRank.size(); ++r) {
        auto &list = current.perRank[r];
        for (size_t k = 0; k < list.size() && evaluations < maxEvaluations; ++k)
          for (int d = -kWindow; d <= kWindow; ++d) {
            long to = static_cast<long>(k) + d;
            if (d == 0 || to < 0 || to >= static_cast<long>(list.size()))
              continue;
            if (!move(list, k, to))
              continue;
            Score s;
            if (score(current, s) && s.betterThan(best)) {
              best = s;
              improved = true;
              break;
            }
            undo(list, k, to);
            if (evaluations >= maxEvaluations)
              break;
          }
      }
    }
  }

  /// Iterated local search: descend, then kick the best order with a few
  /// random feasible moves and descend again, until the budget is spent.
  std::vector<std::vector<Action>> run(const Schedule &start) {
    Schedule best = start;
    Score bestScore;
    if (!score(best, bestScore))
      return start.perRank;
    descend(best, bestScore);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    auto next = [&](uint64_t n) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      return n ? seed % n : 0;
    };
    while (evaluations < maxEvaluations) {
      Schedule current = best;
      int kicks = 2 + next(6);
      for (int t = 0; t < kicks; ++t) {
        size_t r = next(current.perRank.size());
        auto &list = current.perRank[r];
        if (list.size() < 2)
          continue;
        size_t k = next(list.size());
        long to = static_cast<long>(k) +
                  static_cast<long>(next(2 * kWindow + 1)) - kWindow;
        if (to < 0 || to >= static_cast<long>(list.size()) ||
            to == static_cast<long>(k))
          continue;
        move(list, k, to);
      }
      Score s;
      if (!score(current, s))
        continue;
      descend(current, s);
      if (s.betterThan(bestScore)) {
        bestScore = s;
        best = std::move(current);
      }
    }
    return best.perRank;
  }

private:
  const Problem &problem;
  const std::vector<double> &limits;
  int maxEvaluations;
  int evaluations = 0;
};
} // namespace

namespace zb::sched::detail {
std::vector<std::vector<Action>>
improveByLocalSearch(const Problem &problem, const Schedule &schedule,
                     const std::vector<double> &limits, int maxEvaluations) {
  return Search(problem, limits, maxEvaluations).run(schedule);
}
} // namespace zb::sched::detail
