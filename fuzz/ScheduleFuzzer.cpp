//===- ScheduleFuzzer.cpp - libFuzzer target for schedule JSON and CSV ----===//
//
// Arbitrary bytes to the schedule readers of lib/Schedule: the zb-schedule
// JSON (readJSON) when the input starts with '{', else the PyTorch CSV
// (readCSV). A schedule that verifies is then simulated, checked for
// communication and for the optimizer synchronisation, and written back in
// every format: none of that may crash. Seed corpus fuzz/corpus/schedule.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Schedule/OptimizerSync.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>

using namespace zb::sched;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  Problem problem;
  Schedule schedule;
  if (text.ltrim().starts_with("{")) {
    if (llvm::Error e = readJSON(text, problem, schedule)) {
      llvm::consumeError(std::move(e));
      return 0;
    }
  } else {
    auto csv = readCSV(text, 0);
    if (!csv) {
      llvm::consumeError(csv.takeError());
      return 0;
    }
    schedule = std::move(*csv);
    problem.numRanks = schedule.perRank.size();
    problem.numChunks = problem.numRanks
                            ? std::max<int>(1, schedule.stageToRank.size() /
                                                   problem.numRanks)
                            : 1;
    int m = 0;
    for (const auto &rank : schedule.perRank)
      for (const Action &a : rank)
        m = std::max(m, a.microbatch + 1);
    problem.numMicrobatches = m;
    problem.costF = {1};
    problem.costB = {1};
    problem.costW = {1};
  }
  if (llvm::Error e = validateProblem(problem)) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  if (llvm::Error e = verify(problem, schedule)) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  SimResult sim = simulate(problem, schedule);
  if (!sim.complete)
    std::abort(); // verify() promised a deadlock-free schedule
  llvm::consumeError(verifyCommunication(problem, schedule));
  OptimizerSyncOptions options;
  options.iterations = 2;
  auto sync = simulateOptimizerSync(problem, schedule, options);
  if (!sync)
    std::abort();
  llvm::consumeError(verifyOptimizerSync(problem, schedule, *sync));
  std::string sink;
  llvm::raw_string_ostream os(sink);
  writeJSON(os, problem, schedule, sim);
  writeCSV(os, schedule);
  writeText(os, problem, schedule, sim);
  writeSVG(os, problem, schedule, sim, &*sync);
  writeTrace(os, schedule, sim, &*sync);
  return 0;
}
