//===- LocalSearch.cpp - Improving heuristic schedules --------------------===//

#include "Builders.h"

using namespace zb::sched;

namespace zb::sched::detail {
std::vector<std::vector<Action>>
improveByLocalSearch(const Problem &problem, const Schedule &schedule,
                     const std::vector<double> &limits) {
  (void)problem;
  (void)limits;
  return schedule.perRank;
}
} // namespace zb::sched::detail
