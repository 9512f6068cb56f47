//===- LocalSearch.cpp - Improving heuristic schedules --------------------===//
//
// Hill climbing on the per-rank order (beyond the paper): repeatedly swap two
// adjacent passes of one rank and keep the swap if the simulated stage span
// (ties: makespan) strictly decreases, the order stays valid (B after its F,
// W after its B, no deadlock) and the per-stage memory limits still hold.
// Bounded by an evaluation budget; only run for problems with at most
// kMaxActions passes.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include <cmath>

using namespace zb::sched;

namespace {
constexpr size_t kMaxActions = 3000;
constexpr int kMaxEvaluations = 4000;
} // namespace

namespace zb::sched::detail {
std::vector<std::vector<Action>>
improveByLocalSearch(const Problem &problem, const Schedule &schedule,
                     const std::vector<double> &limits) {
  size_t total = 0;
  for (const auto &list : schedule.perRank)
    total += list.size();
  if (total > kMaxActions)
    return schedule.perRank;

  Schedule current = schedule;
  auto score = [&](const Schedule &s, double &span, double &makespan) {
    SimResult r = simulate(problem, s);
    if (!r.complete)
      return false;
    for (size_t j = 0; j < r.peakMemory.size(); ++j)
      if (r.peakMemory[j] >
          limits[j] + 1e-9 * std::max(1.0, std::fabs(limits[j])))
        return false;
    span = r.stageSpan;
    makespan = r.makespan;
    return true;
  };
  double bestSpan, bestMakespan;
  if (!score(current, bestSpan, bestMakespan))
    return schedule.perRank;
  int evaluations = 0;
  bool improved = true;
  while (improved && evaluations < kMaxEvaluations) {
    improved = false;
    for (size_t r = 0; r < current.perRank.size(); ++r) {
      auto &list = current.perRank[r];
      for (size_t k = 0; k + 1 < list.size(); ++k) {
        Action &a = list[k], &b = list[k + 1];
        // Same-rank dependencies (and pointless swaps of the same kind).
        if (a.kind == b.kind)
          continue;
        if (a.stage == b.stage && a.microbatch == b.microbatch)
          continue;
        // Only swaps that move a W (fill or open a bubble): the F/B skeleton
        // is the heuristic's.
        if (a.kind != ActionKind::W && b.kind != ActionKind::W)
          continue;
        if (evaluations++ >= kMaxEvaluations)
          break;
        std::swap(a, b);
        double span, makespan;
        if (score(current, span, makespan) &&
            (span < bestSpan - 1e-9 ||
             (span <= bestSpan + 1e-9 && makespan < bestMakespan - 1e-9))) {
          bestSpan = span;
          bestMakespan = makespan;
          improved = true;
        } else {
          std::swap(a, b);
        }
      }
    }
  }
  return current.perRank;
}
} // namespace zb::sched::detail
