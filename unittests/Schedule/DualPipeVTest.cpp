//===- DualPipeVTest.cpp - dualpipev against PyTorch and DeepSeek ---------===//
//
// References independent of the builder (lib/Schedule/DualPipeV.cpp):
//  - the orders torch 2.15's ScheduleDualPipeV writes
//    (test/Schedule/Inputs/pytorch/ScheduleDualPipeV-p<P>-m<M>.csv), read by
//    zb's CSV reader and simulated: a second code path for the same problem;
//  - DeepSeek's published DualPipeV bubble and activation memory (the
//    DualPipe repository's table, after the DeepSeek-V3 report's Table 2):
//    bubble (PP/2 - 1)(F&B + B - 3W) and PP + 1 chunk activations per
//    device, PP = 2p stages, F / B / W the time of one chunk's forward, full
//    backward and weight backward, F&B that of an overlapped forward and
//    backward. zb runs the two passes of F&B one after the other, so F&B =
//    F + B here, and the bound must hold for zb's simulated stage span.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/MemoryBuffer.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <map>
#include <string>
#include <tuple>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

/// p ranks, m microbatches, V = 2, per-rank T_F, T_B, T_W (each chunk half
/// of them), no communication latency, per-rank M_B = 2 (one chunk's
/// activation = 1), M_W = 0.
Problem problem(int p, int m, double f = 1, double b = 1, double w = 1) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.numChunks = 2;
  pr.costF = {f};
  pr.costB = {b};
  pr.costW = {w};
  pr.memB = {2};
  pr.memW = {0};
  return pr;
}

/// Every DualPipeV CSV PyTorch wrote (p = 4, m = 4 it refuses: m < 2p):
/// zb's order is PyTorch's, action for action, on the same V placement, and
/// so simulates to the same bubble (asserted separately for costs where T_F,
/// T_B, T_W differ, as a check on the second code path).
TEST(DualPipeV, SameOrderAsPyTorch) {
  for (auto [p, m] : {std::pair{2, 4}, {2, 8}, {4, 8}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    Schedule torch = readPyTorchDualPipeV(p, m);
    ASSERT_EQ(torch.perRank.size(), size_t(p));
    for (auto [f, b, w] :
         {std::tuple{1.0, 1.0, 1.0}, {1.0, 2.0, 1.0}, {2.0, 3.0, 0.5}}) {
      Problem pr = problem(p, m, f, b, w);
      auto s = buildSchedule(pr, "dualpipev");
      ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
      EXPECT_EQ(s->stageToRank, torch.stageToRank);
      EXPECT_FALSE(s->fusedBackward);
      for (int r = 0; r < p; ++r)
        EXPECT_TRUE(s->perRank[r] == torch.perRank[r]) << "rank " << r;
      ASSERT_EQ(errorOf(verify(pr, torch)), "");
      SimResult ours = simulate(pr, *s), theirs = simulate(pr, torch);
      ASSERT_TRUE(ours.complete && theirs.complete);
      // Never worse than PyTorch's order (here: equal).
      EXPECT_LE(ours.stageSpan, theirs.stageSpan + 1e-9);
      EXPECT_LE(ours.stageSpanBubbleRate, theirs.stageSpanBubbleRate + 1e-12);
      EXPECT_NEAR(ours.stageSpan, theirs.stageSpan, 1e-9);
    }
  }
}

/// The bubbles of the CSVs with unit costs (as test/Schedule/pytorch-csv.test
/// states them), reached by zb's builder: stage span m(T_F + T_B + T_W) +
/// (p - 1)/2, i.e. bubble rates 0.0400 (p=2, m=4), 0.0204 (p=2, m=8),
/// 0.0588 (p=4, m=8).
TEST(DualPipeV, PyTorchBubbleWithUnitCosts) {
  struct {
    int p, m;
    double span, rate;
  } rows[] = {{2, 4, 12.5, 0.0400}, {2, 8, 24.5, 0.0204}, {4, 8, 25.5, 0.0588}};
  for (auto row : rows) {
    Problem pr = problem(row.p, row.m);
    Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
    SimResult sim = simulate(pr, s);
    EXPECT_DOUBLE_EQ(sim.stageSpan, row.span);
    EXPECT_NEAR(sim.bubbleRate, row.rate, 5e-5);
    EXPECT_DOUBLE_EQ(simulate(pr, readPyTorchDualPipeV(row.p, row.m)).stageSpan,
                     row.span);
  }
}

/// Many (p, m) and costs: the schedule verifies (dependencies, counts,
/// memory), its communication works with buffered sends, its bubble stays
/// within DeepSeek's formula, and it holds PP + 1 = 2p + 1 chunk
/// activations per rank, DeepSeek's figure (ZB-V: 2p). With T_F = T_B =
/// T_W = 1 per rank the bubble is (p - 1)/2, half of the formula's p - 1.
TEST(DualPipeV, BubbleWithinDeepSeekFormula) {
  struct Costs {
    double f, b, w;
  } costs[] = {{1, 1, 1}, {1, 2, 1}, {2, 2, 1},
               {1, 2, 2}, {1, 1, 0}, {3, 1, 2}};
  for (int p = 1; p <= 8; ++p)
    for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p + 3})
      for (Costs c : costs) {
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) +
                     " costs " + std::to_string(c.f) + "," +
                     std::to_string(c.b) + "," + std::to_string(c.w));
        Problem pr = problem(p, m, c.f, c.b, c.w);
        auto s = buildSchedule(pr, "dualpipev");
        ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
        EXPECT_EQ(errorOf(verify(pr, *s)), "");
        CommOptions tags;
        tags.oneChannelPerPeerPair = false;
        EXPECT_EQ(errorOf(verifyCommunication(pr, *s, tags)), "");
        SimResult sim = simulate(pr, *s);
        ASSERT_TRUE(sim.complete);
        // One chunk's passes: half the rank's.
        double f = c.f / 2, w = c.w / 2, fullB = (c.b + c.w) / 2;
        double formula = (p - 1) * ((f + fullB) + fullB - 3 * w);
        double bubble = sim.stageSpan - sim.idealTime;
        EXPECT_LE(bubble, formula + 1e-9);
        EXPECT_NEAR(sim.idealTime, m * (c.f + c.b + c.w), 1e-9);
        if (c.f == 1 && c.b == 1 && c.w == 1) {
          EXPECT_NEAR(bubble, (p - 1) / 2.0, 1e-9);
        }
        for (int r = 0; r < p; ++r)
          EXPECT_DOUBLE_EQ(sim.peakMemory[r], 2 * p + 1) << "rank " << r;
      }
}

/// BuildOptions::localSearch: never worse than PyTorch's order, never above
/// its per-rank activation memory; with unit costs it removes the p = 2
/// bubble (12.5 -> 12 at m = 4) and finds nothing at p = 4 (25.5 at m = 8).
TEST(DualPipeV, LocalSearchNeverWorse) {
  BuildOptions search;
  search.localSearch = true;
  search.searchEvaluations = 1500;
  for (auto [p, m] : {std::pair{2, 4}, {3, 7}, {4, 8}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    for (auto [f, b, w] :
         {std::tuple{1.0, 1.0, 1.0}, {1.0, 2.0, 1.0}, {2.0, 3.0, 0.5}}) {
      Problem pr = problem(p, m, f, b, w);
      pr.memW = {1};
      SimResult plain = simulate(
          pr, llvm::cantFail(buildSchedule(pr, ScheduleKind::DualPipeV)));
      auto s = buildSchedule(pr, ScheduleKind::DualPipeV, search);
      ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
      SimResult better = simulate(pr, *s);
      EXPECT_LE(better.stageSpan, plain.stageSpan + 1e-9);
      for (int r = 0; r < p; ++r)
        EXPECT_LE(better.peakMemory[r], plain.peakMemory[r] + 1e-9);
      if (f == 1 && b == 1 && w == 1 && (p == 2 || p == 4)) {
        EXPECT_DOUBLE_EQ(better.stageSpan, p == 2 ? 12 : 25.5);
      }
    }
  }
}

/// Microbatches run in order on every stage, B and W of a stage too.
TEST(DualPipeV, MicrobatchesInOrderPerStage) {
  Problem pr = problem(5, 13);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipev"));
  for (const auto &rank : s.perRank) {
    std::map<std::pair<int, int>, int> next; // (kind, stage) -> microbatch
    for (const Action &a : rank) {
      int expected = next[std::make_pair(int(a.kind), a.stage)]++;
      EXPECT_EQ(a.microbatch, expected)
          << kindName(a.kind).str() << " stage " << a.stage;
    }
  }
}

/// m < 2p and V != 2 are refused, naming the parameter and the minimum.
TEST(DualPipeV, Errors) {
  EXPECT_EQ(errorOf(buildSchedule(problem(4, 7), "dualpipev").takeError()),
            "dualpipev needs at least 2p=8 microbatches (one per stage of "
            "the V), got m=7");
  EXPECT_EQ(errorOf(buildSchedule(problem(1, 1), "dualpipev").takeError()),
            "dualpipev needs at least 2p=2 microbatches (one per stage of "
            "the V), got m=1");
  for (int v : {1, 3}) {
    Problem pr = problem(4, 8);
    pr.numChunks = v;
    EXPECT_EQ(errorOf(buildSchedule(pr, "dualpipev").takeError()),
              "dualpipev needs exactly V=2 virtual stages per rank, got V=" +
                  std::to_string(v));
  }
  // Its memory is fixed: a limit below 2p + 1 chunk activations is refused
  // by the registry, naming the rank and the memory it needs.
  Problem pr = problem(4, 8);
  pr.memoryLimit = 8;
  std::string msg = errorOf(buildSchedule(pr, "dualpipev").takeError());
  EXPECT_NE(msg.find("dualpipev needs 9.00 activation memory on rank 0, above "
                     "its memory limit 8.00"),
            std::string::npos)
      << msg;
}

} // namespace
