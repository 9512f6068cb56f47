//===- Registry.cpp - Schedules by name
//------------------------------------===//
//
// The name -> builder dispatch (zb/Schedule/Registry.h): validates the
// problem and the name's constraints, calls the builder (Builders.h), checks
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

llvm::ArrayRef<llvm::StringRef> zb::sched::scheduleNames() {
  static const llvm::StringRef names[] = {
      "gpipe", "1f1b",  "1f1b-i", "zb-h1", "zb-h2",  "zb-auto",
      "zb-1p", "zb-2p", "ilp",    "zb-v",  "v-half", "v-min", "v-auto"};
  return names;
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
  if (!llvm::is_contained(scheduleNames(), name))
    return llvm::createStringError(
        llvm::formatv("unknown schedule '{0}'; expected one of: {1}", name,
                      llvm::join(scheduleNames(), ", "))
            .str());

  int p = problem.numRanks, v = problem.numChunks;
  bool interleaved = name == "1f1b-i";
  bool vShape = name == "zb-v" || name == "v-half" || name == "v-min" ||
                name == "v-auto" ||
                (name == "ilp" && v == 2);
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
    double need = minimumMemoryOfRank(problem, map, r);
    if (!StageCosts::fits(need, limit))
      return llvm::createStringError(
          llvm::formatv("memory limit {0} of rank {1} is below what any "
                        "schedule needs there: at least {2} (one microbatch "
                        "in flight)",
                        limit, r, need)
              .str());
  }

  llvm::Expected<Schedule> result = llvm::createStringError("unreachable");
  if (name == "gpipe")
    result = detail::buildGPipe(problem);
  else if (name == "1f1b")
    result = detail::build1F1B(problem);
  else if (name == "1f1b-i")
    result = detail::buildInterleaved1F1B(problem);
  else if (name == "zb-h1")
    result = detail::buildZBH1(problem);
  else if (name == "zb-h2")
    result = detail::buildZBH2(problem);
  else if (name == "zb-auto" || name == "zb-1p" || name == "zb-2p")
    result = detail::buildHeuristic(problem, name, options);
  else if (name == "ilp")
    result = detail::buildIlp(problem, options, ilpReport);
  else
    result = detail::buildVShape(problem, name, options);
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

int zb::sched::defaultChunks(llvm::StringRef name) {
  return name == "1f1b-i" || name == "zb-v" || name == "v-half" ||
                 name == "v-min" || name == "v-auto"
             ? 2
             : 1;
}
