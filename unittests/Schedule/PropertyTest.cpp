//===- PropertyTest.cpp - Random problems through every schedule ----------===//

#include "zb/Schedule/Schedule.h"

#include "gtest/gtest.h"

#include <random>

using namespace zb::sched;

namespace {

std::string errorOf(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : std::string();
}

/// Random problems (random p, m, per-stage costs and memory, limits) through
/// every V = 1 schedule: whatever builds must verify and respect the limit;
/// zb-auto is never worse than ZB-H1 when its memory limit allows ZB-H1.
TEST(Property, RandomProblemsV1) {
  std::mt19937 rng(12345);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  int built = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Problem pr;
    pr.numRanks = 1 + rng() % 6;
    pr.numMicrobatches = 1 + rng() % 14;
    bool perStage = rng() % 2;
    int n = perStage ? pr.numRanks : 1;
    bool integer = rng() % 2;
    auto cost = [&](double lo, double hi) {
      double v = uni(lo, hi);
      return integer ? std::round(v) : v;
    };
    for (int k = 0; k < n; ++k) {
      pr.costF.push_back(cost(1, 10));
      pr.costB.push_back(cost(1, 10));
      pr.costW.push_back(cost(0, 8));
      pr.memB.push_back(cost(1, 5));
      pr.memW.push_back(cost(0, 4));
    }
    pr.costComm = {rng() % 3 == 0 ? 0.0 : cost(0, 2)};
    double maxMB = *std::max_element(pr.memB.begin(), pr.memB.end());
    pr.memoryLimit = rng() % 3 == 0 ? 0 : uni(0.5, 2.5) * pr.numRanks * maxMB;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    double h1Cost = -1, h1Peak = 0;
    for (llvm::StringRef name : {"gpipe", "1f1b", "zb-h1", "zb-h2",
                                 "zb-auto", "zb-1p", "zb-2p"}) {
      auto s = buildSchedule(pr, name);
      if (!s) {
        std::string msg = errorOf(s.takeError());
        // Only the documented refusals.
        EXPECT_TRUE(msg.find("needs at least") != std::string::npos ||
                    msg.find("memory") != std::string::npos)
            << name.str() << ": " << msg;
        continue;
      }
      ++built;
      EXPECT_EQ(errorOf(verify(pr, *s)), "") << name.str();
      SimResult r = simulate(pr, *s);
      ASSERT_TRUE(r.complete);
      if (pr.memoryLimit > 0)
        for (double peak : r.peakMemory)
          EXPECT_LE(peak, pr.memoryLimit * (1 + 1e-9)) << name.str();
      EXPECT_GE(r.cost, r.idealTime * (1 - 1e-12));
      if (name == "zb-h1") {
        h1Cost = r.stageSpan;
        h1Peak = *std::max_element(r.peakMemory.begin(), r.peakMemory.end());
      }
      if (name == "zb-auto" && h1Cost >= 0 &&
          (pr.memoryLimit == 0 || h1Peak <= pr.memoryLimit))
        EXPECT_LE(r.stageSpan, h1Cost * (1 + 1e-9))
            << "zb-auto worse than zb-h1";
    }
  }
  EXPECT_GT(built, 3000);
}

} // namespace
