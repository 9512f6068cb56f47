//===- FBOverlapTest.cpp - Overlapped F&B pairs ---------------------------===//
//
// Schedule::fbPairs and Problem::fbOverlap (alpha): DeepSeek's F&B, "the
// forward of one microbatch and the backward of another issued together"
// (DeepSeek-V3 report Section 3.2.1; PyTorch ScheduleDualPipeV's
// OVERLAP_F_B). References independent of the simulator's code:
//  - alpha = 0 is the timeline without the marks, bit for bit;
//  - a two-rank timeline computed by hand below;
//  - DeepSeek's published bubbles (the DualPipe repository's table):
//    (PP/2 - 1)(F&B + B - 3W), PP = p for DualPipe and 2p for DualPipeV,
//    with F&B the pair max(F, B) + (1 - alpha) min(F, B) plus the W of its
//    full backward (zb splits B and W; DeepSeek's B is the full backward);
//  - the marks of PyTorch's CSVs (test/Schedule/Inputs/pytorch), read by
//    zb's CSV reader.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

/// p ranks, m microbatches, V = 2, per-rank T_F, T_B, T_W (ms), T_comm.
Problem problem(int p, int m, double f, double b, double w, double alpha,
                double comm = 0) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.numChunks = 2;
  pr.costF = {f};
  pr.costB = {b};
  pr.costW = {w};
  pr.costComm = {comm};
  pr.memB = {2};
  pr.memW = {1};
  pr.fbOverlap = alpha;
  return pr;
}

/// The schedule's own (kind, p, m) cases: DualPipe needs even p and m.
struct Case {
  const char *name;
  int p, m;
};
const Case kCases[] = {{"dualpipev", 1, 2},  {"dualpipev", 2, 4},
                       {"dualpipev", 2, 7},  {"dualpipev", 3, 6},
                       {"dualpipev", 4, 8},  {"dualpipev", 4, 13},
                       {"dualpipev", 6, 20}, {"dualpipe", 2, 4},
                       {"dualpipe", 4, 8},   {"dualpipe", 4, 14},
                       {"dualpipe", 6, 12},  {"dualpipe", 8, 22}};
struct Costs {
  double f, b, w, comm;
};
const Costs kCosts[] = {{1, 1, 1, 0},     {1, 2, 1, 0},   {2, 2, 1, 0},
                        {1, 2, 2, 0},     {1, 1, 0, 0},   {3, 1, 2, 0},
                        {1.3, 2.1, 0.7, 0.11}};

std::string trace(const Case &c, const Costs &k, double alpha) {
  return std::string(c.name) + " p=" + std::to_string(c.p) +
         " m=" + std::to_string(c.m) + " costs " + std::to_string(k.f) + "," +
         std::to_string(k.b) + "," + std::to_string(k.w) + "," +
         std::to_string(k.comm) + " alpha=" + std::to_string(alpha);
}

/// alpha = 0: the pairs are marks only; every time, the spans, the ideal
/// time and the memory are those of the same order without marks, exactly.
TEST(FBOverlap, ZeroAlphaIsTheTimelineWithoutPairs) {
  for (const Case &c : kCases)
    for (const Costs &k : kCosts) {
      SCOPED_TRACE(trace(c, k, 0));
      Problem pr = problem(c.p, c.m, k.f, k.b, k.w, 0, k.comm);
      Schedule s = llvm::cantFail(buildSchedule(pr, c.name));
      EXPECT_TRUE(s.hasFBPairs());
      Schedule plain = s;
      plain.fbPairs.clear();
      SimResult a = simulate(pr, s), b = simulate(pr, plain);
      ASSERT_TRUE(a.complete && b.complete);
      EXPECT_EQ(a.makespan, b.makespan);
      EXPECT_EQ(a.stageSpan, b.stageSpan);
      EXPECT_EQ(a.idealTime, b.idealTime);
      EXPECT_EQ(a.bubbleRate, b.bubbleRate);
      EXPECT_EQ(a.peakMemory, b.peakMemory);
      EXPECT_EQ(a.rankBubbleRate, b.rankBubbleRate);
      for (int r = 0; r < c.p; ++r) {
        ASSERT_EQ(a.timeline[r].size(), b.timeline[r].size());
        for (size_t i = 0; i < a.timeline[r].size(); ++i) {
          EXPECT_EQ(a.timeline[r][i].start, b.timeline[r][i].start);
          EXPECT_EQ(a.timeline[r][i].end, b.timeline[r][i].end);
        }
      }
    }
}

/// Two ranks, V = 1, m = 3, T_F = 1 (rank 0) and 0.5 (rank 1), T_B = 2,
/// T_W = 1, T_comm = 1 ms, alpha = 0.5; rank 0 runs F0 F1 [F2&B0] W0 B1 W1
/// B2 W2, rank 1 F0 [F1&B0] W0 [F2&B1] W1 B2 W2. By hand:
///   rank 1: F(1,0) 2-2.5 (F(0,0) ends at 1, +1 latency);
///     [F(1,1)&B(1,0)]: F's input at 2 + 1 = 3 (B's at 2.5): 3-5.25
///     (max(0.5, 2) + 0.5 * 0.5 = 2.25); W(1,0) 5.25-6.25;
///     [F(1,2)&B(1,1)]: F's input at 8.75 + 1: 9.75-12; W 12-13; B(1,2)
///     13-15; W 15-16.
///   rank 0: F 0-1, 1-2; [F(0,2)&B(0,0)]: B's input at 5.25 + 1 = 6.25 (F's
///     at once): 6.25-8.75 (max(1, 2) + 0.5 * 1); W(0,0) 8.75-9.75; B(0,1)
///     at 12 + 1: 13-15; W 15-16; B(0,2) at 15 + 1: 16-18; W 18-19.
/// Makespan = stage span 19; busy 11.5 (rank 0) and 10 (rank 1).
TEST(FBOverlap, HandComputedTimeline) {
  Problem pr;
  pr.numRanks = 2;
  pr.numMicrobatches = 3;
  pr.costF = {1, 0.5};
  pr.costB = {2};
  pr.costW = {1};
  pr.costComm = {1};
  pr.fbOverlap = 0.5;
  using K = ActionKind;
  Schedule s;
  s.name = "hand";
  s.stageToRank = {0, 1};
  s.perRank = {{{K::F, 0, 0}, {K::F, 0, 1}, {K::F, 0, 2}, {K::B, 0, 0},
                {K::W, 0, 0}, {K::B, 0, 1}, {K::W, 0, 1}, {K::B, 0, 2},
                {K::W, 0, 2}},
               {{K::F, 1, 0}, {K::F, 1, 1}, {K::B, 1, 0}, {K::W, 1, 0},
                {K::F, 1, 2}, {K::B, 1, 1}, {K::W, 1, 1}, {K::B, 1, 2},
                {K::W, 1, 2}}};
  s.fbPairs = {{2}, {1, 4}};
  ASSERT_EQ(errorOf(verify(pr, s)), "");
  SimResult sim = simulate(pr, s);
  ASSERT_TRUE(sim.complete);
  const double want[2][9][2] = {
      {{0, 1}, {1, 2}, {6.25, 8.75}, {6.25, 8.75}, {8.75, 9.75},
       {13, 15}, {15, 16}, {16, 18}, {18, 19}},
      {{2, 2.5}, {3, 5.25}, {3, 5.25}, {5.25, 6.25}, {9.75, 12},
       {9.75, 12}, {12, 13}, {13, 15}, {15, 16}}};
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 9; ++i) {
      SCOPED_TRACE("rank " + std::to_string(r) + " action " +
                   std::to_string(i));
      EXPECT_DOUBLE_EQ(sim.timeline[r][i].start, want[r][i][0]);
      EXPECT_DOUBLE_EQ(sim.timeline[r][i].end, want[r][i][1]);
    }
  EXPECT_DOUBLE_EQ(sim.makespan, 19);
  EXPECT_DOUBLE_EQ(sim.stageSpan, 19);
  EXPECT_DOUBLE_EQ(sim.idealTime, 11.5);
  EXPECT_DOUBLE_EQ(sim.rankBubbleRate[0], 1 - 11.5 / 19);
  EXPECT_DOUBLE_EQ(sim.rankBubbleRate[1], 1 - 10.0 / 14);
  // The pair's time: T_F = 1, T_B = 2.
  EXPECT_DOUBLE_EQ(fbPairTime(1, 2, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(fbPairTime(1, 2, 0), 3);
  EXPECT_DOUBLE_EQ(fbPairTime(1, 2, 1), 2);
  // alpha = 1 on one pair alone: rank 0's pair takes 2, i.e. 6.25-8.25.
  pr.fbOverlap = 1;
  sim = simulate(pr, s);
  EXPECT_DOUBLE_EQ(sim.timeline[0][2].start, 6.0);
  EXPECT_DOUBLE_EQ(sim.timeline[0][2].end, 8.0);
}

/// DeepSeek's bubble bound with F&B = max(F, B) + (1 - alpha) min(F, B) +
/// W (the pair and the W of its full backward; per chunk F, B, W), B the
/// full backward B + W: (PP/2 - 1)(F&B + B - 3W), PP = p (DualPipe) or 2p
/// (DualPipeV, chunks half a rank's costs), for the bubble stage span -
/// ideal time (T_comm = 0, as DeepSeek's table).
TEST(FBOverlap, BubbleWithinDeepSeekFormula) {
  for (const Case &c : kCases)
    for (const Costs &k : kCosts) {
      if (k.comm != 0)
        continue;
      for (double alpha : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        SCOPED_TRACE(trace(c, k, alpha));
        // T_F > T_B + T_W (3, 1, 2) stays within the bound only at alpha = 0
        // (below).
        if (k.f > k.b + k.w - 1e-12 && alpha > 0)
          continue;
        Problem pr = problem(c.p, c.m, k.f, k.b, k.w, alpha);
        auto s = buildSchedule(pr, c.name);
        ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
        ASSERT_EQ(errorOf(verify(pr, *s)), "");
        SimResult sim = simulate(pr, *s);
        ASSERT_TRUE(sim.complete);
        const bool v = std::string(c.name) == "dualpipev";
        const double chunk = v ? 0.5 : 1; // a chunk's share of the rank
        const double f = k.f * chunk, b = k.b * chunk, w = k.w * chunk;
        const double fAndB = fbPairTime(f, b, alpha) + w;
        const double halfPP = v ? c.p : c.p / 2.0;
        const double formula = (halfPP - 1) * (fAndB + (b + w) - 3 * w);
        EXPECT_LE(sim.stageSpan - sim.idealTime, formula + 1e-9);
      }
    }
  // The exception: T_F = 3, T_B = 1, T_W = 2 per rank (chunks 1.5, 0.5, 1)
  // on DualPipeV p = 2, m = 4, alpha = 1: the bound is (p - 1)((1.5 + 1) +
  // 1.5 - 3 * 1) = 1 ms, the simulated bubble 1.5 ms (pinned; not analysed
  // further: the pair hides only T_B behind the longer F and waits for its
  // B's input).
  Problem pr = problem(2, 4, 3, 1, 2, 1);
  SimResult sim = simulate(pr, llvm::cantFail(buildSchedule(pr, "dualpipev")));
  EXPECT_DOUBLE_EQ(sim.stageSpan - sim.idealTime, 1.5);
  EXPECT_DOUBLE_EQ((2 - 1) * ((1.5 + 1) + 1.5 - 3 * 1), 1.0);
}

/// The stage span and the bubble (stage span - ideal time) never grow as
/// alpha grows in (0, 1]: with the per-rank orders fixed every start is a
/// longest path, monotone in the pair's time. From alpha = 0 (the passes one
/// after the other, F's output at F's end) to a small alpha > 0 (F's output
/// at the pair's end, the pair waiting for both inputs) they may grow: pinned
/// below.
TEST(FBOverlap, SpanDecreasesWithAlpha) {
  for (const Case &c : kCases)
    for (const Costs &k : kCosts) {
      SCOPED_TRACE(trace(c, k, 0));
      double previousSpan = 0, previousBubble = 0;
      for (double alpha : {0.25, 0.5, 0.75, 1.0}) {
        Problem pr = problem(c.p, c.m, k.f, k.b, k.w, alpha, k.comm);
        SimResult sim =
            simulate(pr, llvm::cantFail(buildSchedule(pr, c.name)));
        ASSERT_TRUE(sim.complete);
        double bubble = sim.stageSpan - sim.idealTime;
        if (alpha > 0.25) {
          EXPECT_LE(sim.stageSpan, previousSpan + 1e-9) << "alpha " << alpha;
          EXPECT_LE(bubble, previousBubble + 1e-9) << "alpha " << alpha;
        }
        previousSpan = sim.stageSpan;
        previousBubble = bubble;
      }
    }
  // DualPipeV p = 3, m = 6, T_F = T_B = 1, T_W = 0 per rank: 14 ms at
  // alpha = 0, 14.125 at alpha = 0.25, 11.5 at alpha = 1 (simulated values,
  // pinned).
  auto span = [](double alpha) {
    Problem pr = problem(3, 6, 1, 1, 0, alpha);
    return simulate(pr, llvm::cantFail(buildSchedule(pr, "dualpipev")))
        .stageSpan;
  };
  EXPECT_DOUBLE_EQ(span(0), 14);
  EXPECT_DOUBLE_EQ(span(0.25), 14.125);
  EXPECT_DOUBLE_EQ(span(1), 11.5);
}

/// The builder marks exactly PyTorch's OVERLAP_F_B cells (CSVs read by zb's
/// reader), and the counts by hand: rank r of DualPipeV(p, m) has 2(m - 2p +
/// r + 1) + (p - r - 1) pairs, one fewer on the last rank.
TEST(FBOverlap, MarksAreCSVs) {
  for (auto [p, m] : {std::pair{2, 4}, {2, 8}, {4, 8}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    Schedule torch = readPyTorchDualPipeV(p, m);
    Problem pr = problem(p, m, 1, 1, 1, 0.5);
    Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
    EXPECT_EQ(s.fbPairs, torch.fbPairs);
    ASSERT_EQ(s.fbPairs.size(), size_t(p));
    for (int r = 0; r < p; ++r)
      EXPECT_EQ(s.fbPairs[r].size(),
                size_t(2 * (m - 2 * p + r + 1) + (p - r - 1) -
                       (r == p - 1 ? 1 : 0)))
          << "rank " << r;
    EXPECT_EQ(errorOf(verify(pr, torch)), "");
    SimResult ours = simulate(pr, s), theirs = simulate(pr, torch);
    EXPECT_DOUBLE_EQ(ours.stageSpan, theirs.stageSpan);
  }
  // p = 2, m = 4 by hand: rank 0 row "..., 3F1, (0F3;3B1), (3F2;0B0), 3B2,
  // 3W2?" gives F(0,3) at index 7, F(3,2) at 10, F(3,3) at 15.
  EXPECT_EQ(readPyTorchDualPipeV(2, 4).fbPairs[0], (std::vector<int>{7, 10, 15}));
  // DualPipe's rank r marks what DualPipeV(p/2, m/2)'s rank min(r, p-1-r)
  // does, and with T_comm = 0 the two agree on the stage span at any alpha.
  for (double alpha : {0.3, 1.0}) {
    Problem pr = problem(4, 12, 1, 2, 1, alpha);
    pr.memB = {1};
    Schedule d = llvm::cantFail(buildSchedule(pr, "dualpipe"));
    Problem half = problem(2, 6, 2, 4, 2, alpha);
    Schedule v = llvm::cantFail(buildSchedule(half, "dualpipev"));
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(d.fbPairs[r], v.fbPairs[std::min(r, 3 - r)]) << "rank " << r;
    EXPECT_NEAR(simulate(pr, d).stageSpan, simulate(half, v).stageSpan, 1e-9);
  }
}

/// With overlap, a pair's passes share their span and the bubble shrinks:
/// DualPipeV p = 4, m = 8, unit costs (chunks 0.5 ms): 25.5 ms at alpha 0.
TEST(FBOverlap, PairsShareTheirSpan) {
  Problem pr = problem(4, 8, 1, 1, 1, 0.5);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
  SimResult sim = simulate(pr, s);
  for (int r = 0; r < 4; ++r)
    for (int i : s.fbPairs[r]) {
      EXPECT_EQ(sim.timeline[r][i].start, sim.timeline[r][i + 1].start);
      EXPECT_EQ(sim.timeline[r][i].end, sim.timeline[r][i + 1].end);
      EXPECT_DOUBLE_EQ(sim.timeline[r][i].end - sim.timeline[r][i].start,
                       0.75);
    }
  pr.fbOverlap = 0;
  EXPECT_DOUBLE_EQ(simulate(pr, s).stageSpan, 25.5);
  pr.fbOverlap = 0.5;
  EXPECT_LT(sim.stageSpan, 25.5);
  // The data-parallel prediction reads the same timeline.
  DataParallelModel model;
  model.numReplicas = 2;
  model.paramBytes = {1e9};
  auto dp = simulateDataParallel(pr, s, sim, model);
  ASSERT_TRUE(static_cast<bool>(dp)) << errorOf(dp.takeError());
  EXPECT_DOUBLE_EQ(dp->pipelineCost, sim.stageSpan);
}

/// verify() names the rank and index of a bad mark.
TEST(FBOverlap, VerifierErrors) {
  Problem pr = problem(2, 4, 1, 1, 1, 0.5);
  const Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
  ASSERT_EQ(s.fbPairs[0], (std::vector<int>{7, 10, 15}));
  auto withPairs = [&](std::vector<std::vector<int>> pairs) {
    Schedule t = s;
    t.fbPairs = std::move(pairs);
    return errorOf(verify(pr, t));
  };
  EXPECT_EQ(withPairs({{7}}), "fb pairs: 1 lists of pairs for 2 ranks (one "
                              "per rank, or none)");
  EXPECT_EQ(withPairs({{7, 23}, {}}),
            "fb pair: rank 0 index 23: out of range (a pair is actions i "
            "and i+1 of the rank's 24 actions)");
  EXPECT_EQ(withPairs({{-1}, {}}),
            "fb pair: rank 0 index -1: out of range (a pair is actions i and "
            "i+1 of the rank's 24 actions)");
  EXPECT_EQ(withPairs({{10, 7}, {}}),
            "fb pair: rank 0 index 7: the indices must increase (after 10)");
  // No pairs at all is fine; index 6 is F(3,1), then F(0,3): not F then B.
  EXPECT_EQ(withPairs({{}, {}}), "");
  EXPECT_EQ(withPairs({{6}, {}}),
            "fb pair: rank 0 index 6: F(stage 3, microbatch 1) then F(stage "
            "0, microbatch 3); a pair is an F followed by a B");
  EXPECT_EQ(withPairs({{7, 8}, {}}),
            "fb pair: rank 0 index 8: B(stage 3, microbatch 1) is already in "
            "the pair at index 7");
  // F(3,0) at index 3 is followed by its own B(3,0) at index 4.
  EXPECT_EQ(withPairs({{3}, {}}),
            "fb pair: rank 0 index 3: F(stage 3, microbatch 0) and B(stage "
            "3, microbatch 0) are of the same microbatch; a pair overlaps two "
            "microbatches");
}

/// A pair whose B waits (through the other rank) for its own F's output
/// deadlocks with alpha > 0 only: one rank each way, m = 2.
TEST(FBOverlap, PairDeadlock) {
  Problem pr;
  pr.numRanks = 2;
  pr.numMicrobatches = 2;
  pr.costF = {1};
  pr.costB = {1};
  pr.costW = {1};
  using K = ActionKind;
  Schedule s;
  s.name = "hand";
  s.stageToRank = {0, 1};
  // Rank 1 runs B(1,0) after F(1,1), which needs F(0,1): paired with
  // B(0,0) on rank 0, which needs B(1,0).
  s.perRank = {{{K::F, 0, 0}, {K::F, 0, 1}, {K::B, 0, 0}, {K::W, 0, 0},
                {K::B, 0, 1}, {K::W, 0, 1}},
               {{K::F, 1, 0}, {K::F, 1, 1}, {K::B, 1, 0}, {K::W, 1, 0},
                {K::B, 1, 1}, {K::W, 1, 1}}};
  s.fbPairs = {{1}, {}};
  EXPECT_EQ(errorOf(verify(pr, s)), "");
  pr.fbOverlap = 0.5;
  EXPECT_EQ(errorOf(verify(pr, s)),
            "dependency: B(stage 0, microbatch 0) on rank 0 needs B(stage 1, "
            "microbatch 0) on rank 1, which cannot run before it (deadlock) "
            "(overlapped with F(stage 0, microbatch 1) in the F&B pair at "
            "index 1)");
  EXPECT_FALSE(simulate(pr, s).complete);
}

/// validateProblem: alpha finite in [0, 1].
TEST(FBOverlap, AlphaRange) {
  for (double bad : {-0.1, 2.0, std::nan(""), double(INFINITY)}) {
    Problem pr = problem(2, 4, 1, 1, 1, bad);
    std::string msg = errorOf(validateProblem(pr));
    EXPECT_EQ(msg.rfind("fb-overlap must be a finite number in [0, 1]", 0),
              0u)
        << msg;
  }
  EXPECT_EQ(errorOf(validateProblem(problem(2, 4, 1, 1, 1, 1))), "");
}

/// JSON: fb_pairs and fb_overlap written only when set, read back to the
/// same schedule; bad values refused.
TEST(FBOverlap, JSONRoundTrip) {
  Problem pr = problem(2, 4, 1, 2, 1, 0.5);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os, pr, s, simulate(pr, s));
  os.flush();
  EXPECT_NE(text.find("\"fb_pairs\""), std::string::npos);
  EXPECT_NE(text.find("\"fb_overlap\": 0.5"), std::string::npos);
  Problem back;
  Schedule read;
  ASSERT_EQ(errorOf(readJSON(text, back, read)), "");
  EXPECT_EQ(read.fbPairs, s.fbPairs);
  EXPECT_EQ(back.fbOverlap, 0.5);
  EXPECT_EQ(errorOf(verify(back, read)), "");
  EXPECT_DOUBLE_EQ(simulate(back, read).stageSpan, simulate(pr, s).stageSpan);

  // Without pairs and with alpha = 0: neither key.
  Problem plainProblem = problem(2, 4, 1, 2, 1, 0);
  Schedule plain = llvm::cantFail(buildSchedule(plainProblem, "zb-v"));
  std::string t2;
  llvm::raw_string_ostream os2(t2);
  writeJSON(os2, plainProblem, plain, simulate(plainProblem, plain));
  os2.flush();
  EXPECT_EQ(t2.find("fb_"), std::string::npos);

  const std::string list = "\"fb_pairs\": [";
  size_t at = text.find(list);
  ASSERT_NE(at, std::string::npos);
  size_t end = text.find("\n  ]", at);
  for (const char *bad : {"\"fb_pairs\": 3", "\"fb_pairs\": [[1]]",
                          "\"fb_pairs\": [[1], [-2]]",
                          "\"fb_pairs\": [[1], [\"x\"]]"}) {
    std::string t = text;
    t.replace(at, end + 4 - at, bad);
    EXPECT_EQ(errorOf(readJSON(t, back, read)),
              "schedule JSON: \"fb_pairs\" must be an array of 2 arrays (one "
              "per rank) of action indices in [0, 50331648]")
        << bad;
  }
  std::string t = text;
  t.replace(t.find("\"fb_overlap\": 0.5"), 17, "\"fb_overlap\": \"x\"");
  EXPECT_EQ(errorOf(readJSON(t, back, read)),
            "schedule JSON: problem.fb_overlap must be a number in [0, 1]");
}

/// Text: a pair shows as F&B, with the count and alpha.
TEST(FBOverlap, Text) {
  Problem pr = problem(2, 4, 1, 1, 1, 0.5);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
  std::string text;
  llvm::raw_string_ostream os(text);
  writeText(os, pr, s, simulate(pr, s));
  os.flush();
  EXPECT_NE(text.find("overlapped F&B pairs: 6 (fb-overlap 0.5: a pair takes "
                      "max(T_F, T_B) + 0.5 min(T_F, T_B))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" F1.3 F3.0&B1.3 W1.3 F2.3&B0.0 W0.0 "),
            std::string::npos)
      << text;
}

} // namespace
