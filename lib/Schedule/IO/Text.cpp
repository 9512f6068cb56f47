//===- IO/Text.cpp - Human-readable schedules -----------------------------===//
//
// writeText: statistics and one line per rank (zb/Schedule/IO.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace zb::sched;

static std::string actionLabel(const Action &a, int numRanks, bool chunks) {
  std::string s = (kindName(a.kind) + llvm::Twine(a.microbatch)).str();
  if (chunks)
    s += "." + std::to_string(a.stage);
  (void)numRanks;
  return s;
}

/// Integers without decimals, other values with 6 significant digits.
static std::string num(double v) {
  if (std::fabs(v) < 1e15 && v == std::floor(v))
    return llvm::formatv("{0}", static_cast<long long>(v)).str();
  return llvm::formatv("{0}", llvm::format("%.6g", v)).str();
}

void zb::sched::writeText(llvm::raw_ostream &os, const Problem &problem,
                          const Schedule &schedule, const SimResult &sim) {
  os << "schedule " << schedule.name << ": p=" << problem.numRanks
     << " m=" << problem.numMicrobatches;
  if (problem.numChunks > 1)
    os << " V=" << problem.numChunks;
  if (schedule.directions > 1)
    os << ", " << schedule.directions << " directions (stages 0.."
       << schedule.routeLength() - 1 << " down for microbatches 0.."
       << problem.numMicrobatches / 2 - 1 << ", " << schedule.routeLength()
       << ".." << schedule.numStages() - 1 << " up for the rest; every "
       << "model stage on 2 ranks)";
  os << "\n";
  os << llvm::formatv("  bubble rate {0:F4} (cost {1} = {2}, ideal {3})\n",
                      sim.bubbleRate, num(sim.cost),
                      schedule.costConvention == CostConvention::Makespan
                          ? "makespan"
                          : "max stage span",
                      num(sim.idealTime));
  os << llvm::formatv("  makespan {0}, max stage span {1}\n", num(sim.makespan),
                      num(sim.stageSpan));
  os << "  peak memory per rank:";
  for (double m : sim.peakMemory)
    os << " " << num(m);
  os << "\n";
  // Overlapped F&B pairs: their number and cost, then "F3.0&B1.3" in the
  // rank lines (the F and the B issued together).
  if (schedule.hasFBPairs()) {
    os << "  overlapped F&B pairs: " << schedule.numFBPairs();
    if (problem.fbOverlap > 0)
      os << llvm::formatv(" (fb-overlap {0}: a pair takes max(T_F, T_B) + {1} "
                          "min(T_F, T_B))\n",
                          num(problem.fbOverlap), num(1 - problem.fbOverlap));
    else
      os << " (fb-overlap 0: costed as their passes one after the other)\n";
  }
  bool chunks = problem.numChunks > 1;
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    os << llvm::formatv("  rank {0,-3}:", r);
    const auto &list = schedule.perRank[r];
    const std::vector<int> *pairs =
        r < schedule.fbPairs.size() ? &schedule.fbPairs[r] : nullptr;
    size_t q = 0;
    for (size_t k = 0; k < list.size(); ++k) {
      os << " " << actionLabel(list[k], problem.numRanks, chunks);
      while (pairs && q < pairs->size() && (*pairs)[q] < (int)k)
        ++q;
      if (pairs && q < pairs->size() && (*pairs)[q] == (int)k &&
          k + 1 < list.size())
        os << "&" << actionLabel(list[++k], problem.numRanks, chunks);
    }
    os << "\n";
  }
}
