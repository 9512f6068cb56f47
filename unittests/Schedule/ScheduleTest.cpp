//===- ScheduleTest.cpp - Schedules against independent references -------===//
//
// Closed forms of the Zero Bubble paper (Table 2), Table 5 numbers, and the
// verifier on hand-broken schedules.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "../../benchmarks/Schedule/Table5Data.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

Problem uniform(int p, int m, double f, double b, double w, double comm = 0,
                double mB = 0, double mW = 0) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.costF = {f};
  pr.costB = {b};
  pr.costW = {w};
  pr.costComm = {comm};
  if (mB > 0 || mW > 0) {
    pr.memB = {mB};
    pr.memW = {mW};
  }
  return pr;
}

Schedule build(const Problem &problem, llvm::StringRef name) {
  auto s = buildSchedule(problem, name);
  if (!s) {
    ADD_FAILURE() << name.str() << ": " << llvm::toString(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

Problem table5Problem(const table5::Row &row, int chunks = 1) {
  Problem p = uniform(row.p, row.m, std::round(row.tF * 1000),
                      std::round(row.tB * 1000), std::round(row.tW * 1000),
                      std::round(row.tComm * 1000), row.mB, row.mW);
  p.numChunks = chunks;
  return p;
}

//===----------------------------------------------------------------------===//
// Closed forms (Table 2 of the paper, T_comm = 0)
//===----------------------------------------------------------------------===//

TEST(ClosedForm, OneFOneBBubble) {
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 5, 8, 17})
      for (auto [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {2.0, 3.0, 1.5}}) {
        Problem pr = uniform(p, m, f, b, w);
        Schedule s = build(pr, "1f1b");
        SimResult r = simulate(pr, s);
        // 1F1B: bubble (p-1)(T_F+T_B+T_W), makespan (m+p-1)(T_F+T_B+T_W).
        double expected = (m + p - 1) * (f + b + w);
        EXPECT_DOUBLE_EQ(r.makespan, expected) << "p=" << p << " m=" << m;
        EXPECT_DOUBLE_EQ(r.bubbleRate, (p - 1) * (f + b + w) / expected);
        EXPECT_DOUBLE_EQ(r.idealTime, m * (f + b + w));
      }
}

TEST(ClosedForm, GPipeMatchesOneFOneBTime) {
  // Without communication GPipe and 1F1B have the same bubble.
  Problem pr = uniform(4, 8, 1, 2, 1);
  EXPECT_DOUBLE_EQ(simulate(pr, build(pr, "gpipe")).makespan, (8 + 3) * 4.0);
}

TEST(ClosedForm, ZBH1Bubble) {
  // ZB-H1: bubble (p-1)(T_F + T_B - T_W) (Table 2).
  for (int p : {2, 4, 8})
    for (int m : {p, 2 * p, 3 * p + 1}) {
      for (auto [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {3.0, 3.0, 2.0}}) {
        Problem pr = uniform(p, m, f, b, w);
        SimResult r = simulate(pr, build(pr, "zb-h1"));
        EXPECT_DOUBLE_EQ(r.makespan - m * (f + b + w), (p - 1) * (f + b - w))
            << "p=" << p << " m=" << m;
      }
    }
}

TEST(ClosedForm, ZBH2Bubble) {
  // ZB-H2: bubble (p-1)(T_F + T_B - 2T_W) measured as the stage span, with
  // T_comm on every hop: (p-1)(T_F + T_B + 2T_comm - 2T_W).
  for (int p : {2, 4, 8}) {
    int m = 3 * p;
    Problem pr = uniform(p, m, 5, 5, 3, 0.5);
    Schedule s = build(pr, "zb-h2");
    SimResult r = simulate(pr, s);
    EXPECT_EQ(s.costConvention, CostConvention::StageSpan);
    EXPECT_DOUBLE_EQ(r.cost - m * 13.0, (p - 1) * (5 + 5 + 1 - 6.0));
  }
}

TEST(ClosedForm, PeakMemory) {
  // Table 2: 1F1B and ZB-H1 peak at p*M_B, ZB-H2 at (2p-1)*M_B on rank 0;
  // rank i of ZB-H1 holds (p-i+1) M_B + (i-1) M_W (1-based i).
  int p = 4, m = 12;
  double mB = 10, mW = 4;
  Problem pr = uniform(p, m, 1, 1, 1, 0, mB, mW);
  EXPECT_DOUBLE_EQ(simulate(pr, build(pr, "1f1b")).peakMemory[0], p * mB);
  SimResult h1 = simulate(pr, build(pr, "zb-h1"));
  for (int r = 0; r < p; ++r)
    EXPECT_DOUBLE_EQ(h1.peakMemory[r], (p - r) * mB + r * mW) << r;
  EXPECT_DOUBLE_EQ(simulate(pr, build(pr, "zb-h2")).peakMemory[0],
                   (2 * p - 1) * mB);
}

//===----------------------------------------------------------------------===//
// Table 5 of the paper
//===----------------------------------------------------------------------===//

TEST(Table5, HandcraftedAndHeuristic) {
  for (const table5::Row &row : table5::rows) {
    SCOPED_TRACE(std::string(row.model) + " m=" + std::to_string(row.m));
    Problem pr = table5Problem(row);
    EXPECT_NEAR(simulate(pr, build(pr, "1f1b")).bubbleRate, row.bubble1F1B,
                1e-4);
    EXPECT_NEAR(simulate(pr, build(pr, "zb-h1")).bubbleRate, row.bubbleH1,
                1e-4);
    EXPECT_NEAR(simulate(pr, build(pr, "zb-h2")).bubbleRate, row.bubbleH2,
                1e-4);
    // ZB-1p / ZB-2p: equal to the paper or better.
    Schedule p1 = build(pr, "zb-1p");
    Schedule p2 = build(pr, "zb-2p");
    EXPECT_LE(simulate(pr, p1).bubbleRate, row.bubble1p + 1e-4);
    EXPECT_LE(simulate(pr, p2).bubbleRate, row.bubble2p + 1e-4);
    // ... within their memory limits (p M_B and 2p M_B).
    for (double peak : simulate(pr, p1).peakMemory)
      EXPECT_LE(peak, row.p * row.mB);
    for (double peak : simulate(pr, p2).peakMemory)
      EXPECT_LE(peak, 2 * row.p * row.mB);
  }
}

TEST(Table5, InterleavedPaperSimulation) {
  SimOptions quirk;
  quirk.paperInterleavedQuirk = true;
  for (const table5::Row &row : table5::rows) {
    Problem pr = table5Problem(row, row.chunks1F1BI);
    Schedule s = build(pr, "1f1b-i");
    EXPECT_NEAR(simulate(pr, s, quirk).bubbleRate, row.bubble1F1BI, 1e-4)
        << row.model << " m=" << row.m;
    // The executable schedule honours every dependency: never faster.
    EXPECT_GE(simulate(pr, s).bubbleRate, row.bubble1F1BI - 1e-4);
  }
}

TEST(Interleaved, ClosedFormWithoutComm) {
  // Megatron: the bubble of 1F1B-I is (p-1)(T_F+T_B+T_W)/V.
  int p = 4, m = 8, v = 2;
  Problem pr = uniform(p, m, 2, 2, 2);
  pr.numChunks = v;
  SimResult r = simulate(pr, build(pr, "1f1b-i"));
  EXPECT_DOUBLE_EQ(r.makespan - m * 6.0, (p - 1) * 6.0 / v);
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

TEST(Verifier, AcceptsBuiltSchedules) {
  Problem pr = uniform(4, 8, 1, 1, 1);
  for (llvm::StringRef name : {"gpipe", "1f1b", "zb-h1", "zb-h2", "zb-auto"})
    EXPECT_EQ(errorOf(verify(pr, build(pr, name))), "") << name.str();
}

TEST(Verifier, RejectsBAfterMissingF) {
  Problem pr = uniform(4, 8, 1, 1, 1);
  Schedule s = build(pr, "zb-h1");
  // Rank 3 starts with F0 B0: swap them.
  ASSERT_EQ(s.perRank[3][0], (Action{ActionKind::F, 3, 0}));
  std::swap(s.perRank[3][0], s.perRank[3][1]);
  std::string msg = errorOf(verify(pr, s));
  EXPECT_NE(msg.find("B(stage 3, microbatch 0) before F(stage 3, "
                     "microbatch 0)"),
            std::string::npos)
      << msg;
}

TEST(Verifier, RejectsWBeforeB) {
  Problem pr = uniform(2, 2, 1, 1, 1);
  Schedule s = build(pr, "zb-h1");
  auto &list = s.perRank[1];
  auto w = std::find(list.begin(), list.end(), Action{ActionKind::W, 1, 1});
  auto b = std::find(list.begin(), list.end(), Action{ActionKind::B, 1, 1});
  std::iter_swap(w, b);
  EXPECT_NE(errorOf(verify(pr, s))
                .find("W(stage 1, microbatch 1) before "
                      "B(stage 1, microbatch 1)"),
            std::string::npos);
}

TEST(Verifier, RejectsMissingAndDuplicate) {
  Problem pr = uniform(2, 3, 1, 1, 1);
  Schedule s = build(pr, "1f1b");
  s.perRank[0].pop_back();
  EXPECT_NE(errorOf(verify(pr, s))
                .find("count: W(stage 0, microbatch 2) is "
                      "missing"),
            std::string::npos);
  s = build(pr, "1f1b");
  s.perRank[0].back() = s.perRank[0].front();
  EXPECT_NE(errorOf(verify(pr, s)).find("more than once"), std::string::npos);
}

TEST(Verifier, RejectsWrongRank) {
  Problem pr = uniform(2, 2, 1, 1, 1);
  Schedule s = build(pr, "1f1b");
  s.perRank[0][0].stage = 1;
  EXPECT_NE(errorOf(verify(pr, s)).find("belongs to rank 1"),
            std::string::npos);
}

TEST(Verifier, RejectsCrossRankDeadlock) {
  // Rank 0 waits for B0 of stage 1 before running F1, rank 1 runs F1 before
  // B0: F1 on rank 1 needs F1 of rank 0 -> deadlock.
  Problem pr = uniform(2, 2, 1, 1, 1);
  Schedule s;
  s.name = "broken";
  s.stageToRank = {0, 1};
  using K = ActionKind;
  s.perRank = {{{K::F, 0, 0},
                {K::B, 0, 0},
                {K::F, 0, 1},
                {K::B, 0, 1},
                {K::W, 0, 0},
                {K::W, 0, 1}},
               {{K::F, 1, 0},
                {K::F, 1, 1},
                {K::B, 1, 0},
                {K::B, 1, 1},
                {K::W, 1, 0},
                {K::W, 1, 1}}};
  std::string msg = errorOf(verify(pr, s));
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("B(stage 0, microbatch 0) on rank 0 needs B(stage 1, "
                     "microbatch 0) on rank 1"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(simulate(pr, s).complete);
}

TEST(Verifier, RejectsMemoryOverLimit) {
  Problem pr = uniform(4, 8, 1, 1, 1, 0, 1, 0.5);
  Schedule s = build(pr, "zb-h2"); // rank 0 holds 7 M_B
  pr.memoryLimit = 4;
  std::string msg = errorOf(verify(pr, s));
  EXPECT_NE(msg.find("memory limit: rank 0 holds 5"), std::string::npos) << msg;
}

TEST(Verifier, FusedBackwardNeedsAdjacentW) {
  Problem pr = uniform(2, 2, 1, 1, 1);
  Schedule s = build(pr, "zb-h1");
  s.fusedBackward = true;
  EXPECT_NE(errorOf(verify(pr, s)).find("fused backward"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Errors that state what would work
//===----------------------------------------------------------------------===//

TEST(Errors, TooFewMicrobatches) {
  Problem pr = uniform(4, 2, 1, 1, 1);
  EXPECT_EQ(errorOf(buildSchedule(pr, "zb-h1").takeError()),
            "zb-h1 needs at least p=4 microbatches, got m=2");
  EXPECT_NE(
      errorOf(buildSchedule(pr, "zb-h2").takeError()).find("at least 2p-1=7"),
      std::string::npos);
  pr.numChunks = 2;
  pr.numMicrobatches = 6;
  EXPECT_NE(
      errorOf(buildSchedule(pr, "1f1b-i").takeError()).find("multiple of p=4"),
      std::string::npos);
}

TEST(Errors, MemoryBelowMinimum) {
  Problem pr = uniform(4, 8, 1, 1, 1, 0, 10, 4);
  pr.memoryLimit = 5;
  std::string msg = errorOf(buildSchedule(pr, "zb-auto").takeError());
  EXPECT_NE(msg.find("at least 10"), std::string::npos) << msg;
  pr.memoryLimit = 20; // fine for zb-auto, not for 1F1B (needs 40)
  EXPECT_EQ(errorOf(buildSchedule(pr, "zb-auto").takeError()), "");
  msg = errorOf(buildSchedule(pr, "1f1b").takeError());
  EXPECT_NE(msg.find("at least 40"), std::string::npos) << msg;
}

TEST(Errors, UnknownNameAndBadProblem) {
  Problem pr = uniform(4, 8, 1, 1, 1);
  EXPECT_NE(errorOf(buildSchedule(pr, "zb-h3").takeError())
                .find("unknown schedule 'zb-h3'"),
            std::string::npos);
  pr.costF = {1, 2};
  EXPECT_NE(errorOf(buildSchedule(pr, "1f1b").takeError())
                .find("cost-f has 2 values; expected 1, p=4"),
            std::string::npos);
}

// The schedule table is the one list of names: every kind has one row, its
// name parses back to it, and the schedule it builds carries that name.
TEST(Registry, NamesRoundTrip) {
  ASSERT_EQ(scheduleTable().size(), scheduleNames().size());
  for (const ScheduleInfo &info : scheduleTable()) {
    EXPECT_EQ(scheduleName(info.kind), info.name);
    EXPECT_EQ(&scheduleInfo(info.kind), &info);
    llvm::Expected<ScheduleKind> kind = parseScheduleKind(info.name);
    ASSERT_TRUE(static_cast<bool>(kind)) << llvm::toString(kind.takeError());
    EXPECT_EQ(*kind, info.kind);
    Problem pr = uniform(4, 8, 1, 1, 1, 0, 1, 0.5);
    pr.numChunks = defaultChunks(info.kind);
    llvm::Expected<Schedule> s = buildSchedule(pr, info.kind);
    ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
    EXPECT_EQ(s->name, info.name.str());
  }
  EXPECT_EQ(errorOf(parseScheduleKind("ZB-H1").takeError()),
            "unknown schedule 'ZB-H1'; expected one of: gpipe, 1f1b, 1f1b-i, "
            "zb-h1, zb-h2, zb-auto, zb-1p, zb-2p, ilp, zb-v, v-half, v-min, "
            "v-auto, dualpipev, dualpipe");
}

//===----------------------------------------------------------------------===//
// Heuristic
//===----------------------------------------------------------------------===//

TEST(Heuristic, RespectsMemoryLimit) {
  for (double limit : {1.0, 2.0, 3.0, 5.0, 8.0}) {
    Problem pr = uniform(4, 12, 5, 6, 4, 0, 1, 0.5);
    pr.memoryLimit = limit;
    Schedule s = build(pr, "zb-auto");
    EXPECT_EQ(errorOf(verify(pr, s)), "");
    for (double peak : simulate(pr, s).peakMemory)
      EXPECT_LE(peak, limit);
  }
}

TEST(Heuristic, ZeroBubbleWithEnoughMemory) {
  // T_F = T_B = T_W, no communication, 2p M_B: the paper's ZB-2p is bubble
  // free in the steady state; its stage span is at most m(T_F+T_B+T_W) plus a
  // fraction of one pass per stage.
  Problem pr = uniform(4, 16, 1, 1, 1, 0, 1, 0.5);
  SimResult r = simulate(pr, build(pr, "zb-2p"));
  EXPECT_LE(r.bubbleRate, 0.02);
}

TEST(Heuristic, PerStageCosts) {
  Problem pr = uniform(4, 8, 1, 1, 1);
  pr.costF = {2, 1, 1, 3};
  pr.costB = {2, 1, 1, 3};
  pr.costW = {1, 1, 1, 2};
  SimResult r = simulate(pr, build(pr, "zb-auto"));
  EXPECT_DOUBLE_EQ(r.idealTime, 8 * 8.0);
  EXPECT_LT(r.bubbleRate, simulate(pr, build(pr, "1f1b")).bubbleRate);
}

} // namespace
