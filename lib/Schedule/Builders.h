//===- Builders.h - Internal schedule builders -------------------*- C++
//-*-===//
//
// Internal to lib/Schedule: one builder per schedule family. buildSchedule()
// validates the problem before calling them and verifies what they return.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_LIB_SCHEDULE_BUILDERS_H
#define ZB_LIB_SCHEDULE_BUILDERS_H

#include "zb/Schedule/BuildOptions.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include <optional>
#include <vector>

namespace zb::sched::detail {

llvm::Expected<Schedule> buildGPipe(const Problem &problem);
llvm::Expected<Schedule> build1F1B(const Problem &problem);
llvm::Expected<Schedule> buildInterleaved1F1B(const Problem &problem);
llvm::Expected<Schedule> buildZBH1(const Problem &problem);
llvm::Expected<Schedule> buildZBH2(const Problem &problem);
/// zb-auto, zb-1p or zb-2p (`kind`).
llvm::Expected<Schedule> buildHeuristic(const Problem &problem,
                                        ScheduleKind kind,
                                        const BuildOptions &options);
llvm::Expected<Schedule> buildIlp(const Problem &problem,
                                  const BuildOptions &options,
                                  IlpReport *report);
/// zb-v, v-half, v-min or v-auto (`kind`).
llvm::Expected<Schedule> buildVShape(const Problem &problem,
                                     ScheduleKind kind,
                                     const BuildOptions &options);
/// DeepSeek's DualPipeV in PyTorch's ScheduleDualPipeV order
/// (DualPipeV.cpp); V = 2 (checked by the caller), error when m < 2p. With
/// options.localSearch the order is improved beyond PyTorch's, never above
/// its activation memory.
llvm::Expected<Schedule> buildDualPipeV(const Problem &problem,
                                        const BuildOptions &options);
/// DeepSeek's DualPipe (DualPipeV.cpp): on every mirrored pair of ranks
/// (r, p-1-r), DualPipeV's order of rank min(r, p-1-r) of p/2 ranks and m/2
/// microbatches, one direction per chunk. V = 2 (checked by the caller);
/// errors for an odd p, an odd m or m < 2p.
llvm::Expected<Schedule> buildDualPipe(const Problem &problem,
                                       const BuildOptions &options);

/// Iterated local search on the per-rank order (LocalSearch.cpp): the
/// improved order, every rank within its entry of \p limits (the problem's
/// memory unit; +inf: none), never worse than \p schedule.
std::vector<std::vector<Action>>
improveByLocalSearch(const Problem &problem, const Schedule &schedule,
                     const std::vector<double> &limits, int maxEvaluations);

/// The authors' ZB-V construction (ZBV.cpp) on the V-shape stage mapping
/// with per-stage \p costs and per-rank activation memory \p limits (the
/// unit of costs.memB); per-rank orders, or nullopt when the construction
/// cannot keep a rank within its limit.
std::optional<std::vector<std::vector<Action>>>
constructZBV(const Problem &problem, const StageCosts &costs,
             const std::vector<double> &limits);

/// V-Half (\p half) or V-Min from the authors' building blocks
/// (VPattern.cpp): per-rank orders, or nullopt when the pattern does not
/// apply to this p and m.
std::optional<std::vector<std::vector<Action>>>
constructVPattern(const Problem &problem, bool half);

} // namespace zb::sched::detail

#endif // ZB_LIB_SCHEDULE_BUILDERS_H
