//===- Registry.cpp - Schedules by kind and name --------------------------===//
//
// The schedule table and the kind -> builder dispatch (zb/Schedule/
// Registry.h): the only place that knows a schedule's name. Validates the
// problem and the kind's constraints, calls the builder (Builders.h), checks
// the memory limit and verifies the result. Depends on the base layer
// (Schedule.cpp) and the builders; neither depends on it.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Registry.h"
#include "Builders.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace zb::sched;

namespace {
using K = ScheduleKind;
using P = StagePlacement;
/// The one list of the schedules, in zb-sched --compare's order.
constexpr ScheduleInfo kSchedules[] = {
    {K::GPipe, "gpipe", P::Sequential, 1},
    {K::OneFOneB, "1f1b", P::Sequential, 1},
    {K::Interleaved1F1B, "1f1b-i", P::Interleaved, 2},
    {K::ZBH1, "zb-h1", P::Sequential, 1},
    {K::ZBH2, "zb-h2", P::Sequential, 1},
    {K::ZBAuto, "zb-auto", P::Sequential, 1},
    {K::ZB1P, "zb-1p", P::Sequential, 1},
    {K::ZB2P, "zb-2p", P::Sequential, 1},
    {K::Ilp, "ilp", P::Either, 1},
    {K::ZBV, "zb-v", P::VShape, 2},
    {K::VHalf, "v-half", P::VShape, 2},
    {K::VMin, "v-min", P::VShape, 2},
    {K::VAuto, "v-auto", P::VShape, 2},
    {K::DualPipeV, "dualpipev", P::VShape, 2},
    {K::DualPipe, "dualpipe", P::Bidirectional, 2},
};
} // namespace

llvm::ArrayRef<ScheduleInfo> zb::sched::scheduleTable() { return kSchedules; }

const ScheduleInfo &zb::sched::scheduleInfo(ScheduleKind kind) {
  for (const ScheduleInfo &info : kSchedules)
    if (info.kind == kind)
      return info;
  llvm_unreachable("a ScheduleKind without a row in the schedule table");
}

llvm::StringRef zb::sched::scheduleName(ScheduleKind kind) {
  return scheduleInfo(kind).name;
}

llvm::ArrayRef<llvm::StringRef> zb::sched::scheduleNames() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> list;
    for (const ScheduleInfo &info : kSchedules)
      list.push_back(info.name);
    return list;
  }();
  return names;
}

llvm::Expected<ScheduleKind> zb::sched::parseScheduleKind(llvm::StringRef name) {
  for (const ScheduleInfo &info : kSchedules)
    if (info.name == name)
      return info.kind;
  return llvm::createStringError(
      llvm::formatv("unknown schedule '{0}'; expected one of: {1}", name,
                    llvm::join(scheduleNames(), ", "))
          .str());
}

int zb::sched::scheduleDirections(ScheduleKind kind) {
  return scheduleInfo(kind).placement == StagePlacement::Bidirectional ? 2
                                                                       : 1;
}

int zb::sched::defaultChunks(ScheduleKind kind) {
  return scheduleInfo(kind).defaultChunks;
}

llvm::Expected<Schedule> zb::sched::buildSchedule(const Problem &problem,
                                                  llvm::StringRef name) {
  return buildSchedule(problem, name, BuildOptions());
}

llvm::Expected<Schedule> zb::sched::buildSchedule(const Problem &problem,
                                                  llvm::StringRef name,
                                                  const BuildOptions &options,
                                                  IlpReport *ilpReport) {
  if (llvm::Error e = validateProblem(problem))
    return std::move(e);
  llvm::Expected<ScheduleKind> kind = parseScheduleKind(name);
  if (!kind)
    return kind.takeError();
  return buildSchedule(problem, *kind, options, ilpReport);
}

llvm::Expected<Schedule> zb::sched::buildSchedule(const Problem &problem,
                                                  ScheduleKind kind,
                                                  const BuildOptions &options,
                                                  IlpReport *ilpReport) {
  if (llvm::Error e = validateProblem(problem))
    return std::move(e);
  const ScheduleInfo &info = scheduleInfo(kind);
  llvm::StringRef name = info.name;
  int p = problem.numRanks, v = problem.numChunks;
  bool interleaved = info.placement == StagePlacement::Interleaved;
  bool bidirectional = info.placement == StagePlacement::Bidirectional;
  bool vShape = info.placement == StagePlacement::VShape || bidirectional ||
                (info.placement == StagePlacement::Either && v == 2);
  if (interleaved && v < 2)
    return llvm::createStringError(
        llvm::formatv("1f1b-i needs at least 2 virtual stages per rank, got "
                      "V={0}",
                      v)
            .str());
  if (vShape && v != 2)
    return llvm::createStringError(
        llvm::formatv("{0} needs exactly V=2 virtual stages per rank, got "
                      "V={1}",
                      name, v)
            .str());
  if (!interleaved && !vShape && v != 1)
    return llvm::createStringError(
        llvm::formatv("{0} needs V=1 virtual stage per rank, got V={1} (use "
                      "1f1b-i, zb-v, v-half, v-min or ilp (V=2) for V > 1)",
                      name, v)
            .str());

  // A memory limit below what the sequential schedule needs is impossible.
  std::vector<int> map = vShape        ? vShapeStageToRank(p)
                         : interleaved ? interleavedStageToRank(p, v)
                                       : interleavedStageToRank(p, 1);
  for (int r = 0; r < p; ++r) {
    double limit = problem.memoryLimitOf(r);
    if (limit <= 0)
      continue;
    double need =
        minimumMemoryOfRank(problem, map, r, bidirectional ? 2 : 1);
    if (!StageCosts::fits(need, limit))
      return llvm::createStringError(
          llvm::formatv("memory limit {0} of rank {1} is below what any "
                        "schedule needs there: at least {2} (one microbatch "
                        "in flight)",
                        limit, r, need)
              .str());
  }

  llvm::Expected<Schedule> result = llvm::createStringError("unreachable");
  switch (kind) {
  case K::GPipe:
    result = detail::buildGPipe(problem);
    break;
  case K::OneFOneB:
    result = detail::build1F1B(problem);
    break;
  case K::Interleaved1F1B:
    result = detail::buildInterleaved1F1B(problem);
    break;
  case K::ZBH1:
    result = detail::buildZBH1(problem);
    break;
  case K::ZBH2:
    result = detail::buildZBH2(problem);
    break;
  case K::ZBAuto:
  case K::ZB1P:
  case K::ZB2P:
    result = detail::buildHeuristic(problem, kind, options);
    break;
  case K::Ilp:
    result = detail::buildIlp(problem, options, ilpReport);
    break;
  case K::ZBV:
  case K::VHalf:
  case K::VMin:
  case K::VAuto:
    result = detail::buildVShape(problem, kind, options);
    break;
  case K::DualPipeV:
    result = detail::buildDualPipeV(problem, options);
    break;
  case K::DualPipe:
    result = detail::buildDualPipe(problem, options);
    break;
  }
  if (!result)
    return result.takeError();
  if (problem.hasMemoryLimit()) {
    SimResult sim = simulate(problem, *result);
    for (int r = 0; r < p; ++r) {
      double limit = problem.memoryLimitOf(r);
      if (limit > 0 && !StageCosts::fits(sim.peakMemory[r], limit))
        return llvm::createStringError(
            llvm::formatv("{0} needs {1} activation memory on rank {2}, above "
                          "its memory limit {3}; raise that rank's limit to "
                          "at least {1} or use zb-auto",
                          name, sim.peakMemory[r], r, limit)
                .str());
    }
  }
  if (llvm::Error e = verify(problem, *result))
    return llvm::createStringError(
        llvm::formatv("internal error: schedule '{0}' failed verification: "
                      "{1}",
                      name, llvm::toString(std::move(e)))
            .str());
  return result;
}
