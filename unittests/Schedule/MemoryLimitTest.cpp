//===- MemoryLimitTest.cpp - Per-rank activation memory limits ------------===//
//
// Problem::memoryLimits: every schedule that takes a limit (zb-auto, zb-1p,
// zb-2p, ilp, zb-v, v-half, v-min) keeps every rank within its own limit;
// the same limit given per rank builds the same schedule as the scalar; a
// rank below its one-microbatch minimum is named in the error.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <random>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

bool sameOrder(const Schedule &a, const Schedule &b) {
  if (a.perRank.size() != b.perRank.size())
    return false;
  for (size_t r = 0; r < a.perRank.size(); ++r) {
    if (a.perRank[r].size() != b.perRank[r].size())
      return false;
    for (size_t k = 0; k < a.perRank[r].size(); ++k) {
      const Action &x = a.perRank[r][k], &y = b.perRank[r][k];
      if (x.kind != y.kind || x.stage != y.stage ||
          x.microbatch != y.microbatch)
        return false;
    }
  }
  return true;
}

/// Random heterogeneous problems with random per-rank limits: whatever is
/// built verifies and keeps every rank within its own limit; failures name
/// the memory.
TEST(MemoryLimits, PerRankLimitsRespected) {
  std::mt19937 rng(99);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  int built = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Problem pr;
    pr.numRanks = 2 + rng() % 5;
    pr.numMicrobatches = 2 * pr.numRanks + rng() % 8;
    for (int r = 0; r < pr.numRanks; ++r) {
      pr.costF.push_back(uni(1, 4));
      pr.costB.push_back(uni(1, 4));
      pr.costW.push_back(uni(0.5, 3));
      pr.memB.push_back(uni(1, 3));
      pr.memW.push_back(uni(0.2, 1));
    }
    pr.costComm = {uni(0, 0.5)};
    for (int r = 0; r < pr.numRanks; ++r)
      pr.memoryLimits.push_back(uni(1, 2.5) * pr.numRanks * pr.memB[r]);
    SCOPED_TRACE("iteration " + std::to_string(iter));
    for (const char *name : {"zb-auto", "zb-1p", "zb-2p", "zb-v", "v-half",
                             "v-min"}) {
      Problem q = pr;
      q.numChunks = defaultChunks(llvm::cantFail(parseScheduleKind(name)));
      auto s = buildSchedule(q, name);
      if (!s) {
        std::string msg = errorOf(s.takeError());
        EXPECT_NE(msg.find("memory"), std::string::npos) << name << msg;
        continue;
      }
      ++built;
      EXPECT_EQ(errorOf(verify(q, *s)), "") << name;
      SimResult sim = simulate(q, *s);
      for (int r = 0; r < q.numRanks; ++r)
        EXPECT_LE(sim.peakMemory[r], q.memoryLimits[r] * (1 + 1e-9))
            << name << " rank " << r;
    }
  }
  EXPECT_GT(built, 1200);
}

/// The scalar limit and the same value per rank give the same schedule.
TEST(MemoryLimits, UniformListEqualsScalar) {
  for (const char *name : {"zb-auto", "zb-v", "v-half", "v-min", "ilp"}) {
    Problem scalar;
    scalar.numRanks = 4;
    scalar.numMicrobatches = 8;
    scalar.numChunks = defaultChunks(llvm::cantFail(parseScheduleKind(name)));
    scalar.costF = {3};
    scalar.costB = {3.5};
    scalar.costW = {2};
    scalar.costComm = {0.2};
    scalar.memB = {1};
    scalar.memW = {0.5};
    scalar.memoryLimit = 6;
    Problem list = scalar;
    list.memoryLimit = 0;
    list.memoryLimits = {6, 6, 6, 6};
    BuildOptions options;
    options.timeLimitSeconds = 5;
    auto a = buildSchedule(scalar, name, options);
    auto b = buildSchedule(list, name, options);
    ASSERT_TRUE(a && b) << name;
    EXPECT_TRUE(sameOrder(*a, *b)) << name;
  }
}

/// Tighter limits on some ranks: the ILP and the heuristic respect each
/// rank's own limit, and a looser rank may use more than a tighter one.
TEST(MemoryLimits, HeterogeneousRanksIlpAndHeuristic) {
  Problem pr;
  pr.numRanks = 3;
  pr.numMicrobatches = 6;
  pr.costF = {2};
  pr.costB = {2};
  pr.costW = {1};
  pr.costComm = {0};
  pr.memB = {1};
  pr.memW = {0.5};
  pr.memoryLimits = {6, 3, 2};
  BuildOptions options;
  options.timeLimitSeconds = 10;
  for (const char *name : {"zb-auto", "ilp"}) {
    auto s = buildSchedule(pr, name, options);
    ASSERT_TRUE(static_cast<bool>(s)) << name << errorOf(s.takeError());
    SimResult sim = simulate(pr, *s);
    for (int r = 0; r < 3; ++r)
      EXPECT_LE(sim.peakMemory[r], pr.memoryLimits[r] + 1e-9) << name;
  }
}

/// Errors name the problem: the wrong number of values, and the rank whose
/// limit is below one microbatch in flight with that minimum.
TEST(MemoryLimits, Errors) {
  Problem pr;
  pr.numRanks = 4;
  pr.numMicrobatches = 8;
  pr.costF = pr.costB = pr.costW = {1};
  pr.memB = {1};
  pr.memW = {0.5};
  pr.memoryLimits = {4, 4, 4};
  auto s = buildSchedule(pr, "zb-auto");
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(errorOf(s.takeError()),
            "memory-limit: 3 per-rank values for p=4 ranks");
  pr.memoryLimits = {4, 4, 0.5, 4};
  s = buildSchedule(pr, "zb-auto");
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_EQ(errorOf(s.takeError()),
            "memory limit 0.50 of rank 2 is below what any schedule needs "
            "there: at least 1.00 (one microbatch in flight)");
  pr.memoryLimits = {4, -1, 4, 4};
  s = buildSchedule(pr, "zb-auto");
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_NE(errorOf(s.takeError()).find("memory-limit of rank 1"),
            std::string::npos);
}

} // namespace
