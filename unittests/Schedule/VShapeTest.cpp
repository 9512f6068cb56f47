//===- VShapeTest.cpp - ZB-V, V-Half, V-Min against the authors and bounds ===//
//
// References independent of our code: the authors' published bubble rates (the
// ZB-V note's table, docs/references.md), a lower bound derived below, and
// ZB-H1 / ZB-H2 (the paper's handcrafted schedules) on random problems.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <random>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

struct Built {
  bool ok = false;
  SimResult sim;
};

Built build(const Problem &pr, llvm::StringRef name) {
  Built b;
  auto s = buildSchedule(pr, name);
  if (!s) {
    ADD_FAILURE() << name.str() << ": " << errorOf(s.takeError());
    return b;
  }
  EXPECT_EQ(errorOf(verify(pr, *s)), "") << name.str();
  b.sim = simulate(pr, *s);
  b.ok = b.sim.complete;
  return b;
}

/// The rows of reference/v-shape.md: per-chunk f, b, w, c (ms x 1000) and
/// the authors' ZB-V, V-Half, V-Min bubble rates.
struct Row {
  int p, m;
  double f, b, w, c, zbv, half, min;
};
const Row kRows[] = {
    {16, 48, 14407, 14380, 9676, 1610, .0697, .1847, .3300},
    {16, 64, 14407, 14380, 9676, 1610, .0533, .1453, .3008},
    {16, 128, 14407, 14380, 9676, 1610, .0274, .0784, .2512},
    {24, 72, 6763, 6969, 5251, 755, .0638, .1823, .3158},
    {24, 96, 6763, 6969, 5251, 755, .0483, .1433, .2858},
    {24, 192, 6763, 6969, 5251, 755, .0250, .0774, .2368},
    {32, 96, 9458, 9748, 7288, 879, .0593, .1810, .3110},
    {32, 128, 9458, 9748, 7288, 879, .0451, .1423, .2798},
    {32, 256, 9458, 9748, 7288, 879, .0236, .0768, .2267},
};

/// Every published row: ZB-V and V-Half within 0.0005 of the authors' bubble
/// rate or better, V-Min within 0.001 (one row is 0.0007 above; see
/// benchmarks/README.md); ZB-V at no more than its limit 2p M_B(chunk),
/// V-Half and V-Min at about a half and a third of it.
TEST(VShapeReference, PublishedRows) {
  for (const Row &r : kRows) {
    SCOPED_TRACE("p=" + std::to_string(r.p) + " m=" + std::to_string(r.m));
    Problem pr;
    pr.numRanks = r.p;
    pr.numMicrobatches = r.m;
    pr.numChunks = 2;
    // Per rank: both chunks (2x the chunk costs; M_B(chunk) = 1).
    pr.costF = {2 * r.f};
    pr.costB = {2 * r.b};
    pr.costW = {2 * r.w};
    pr.costComm = {r.c};
    pr.memB = {2};
    pr.memW = {1};
    struct {
      const char *name;
      double ref, tol, maxPeak;
    } cases[] = {{"zb-v", r.zbv, 5e-4, 2.0 * r.p},
                 {"v-half", r.half, 5e-4, r.p + 4.0},
                 {"v-min", r.min, 1e-3, 2.0 * r.p / 3 + 4}};
    for (auto &c : cases) {
      Built b = build(pr, c.name);
      ASSERT_TRUE(b.ok) << c.name;
      EXPECT_LE(b.sim.bubbleRate, c.ref + c.tol) << c.name;
      double peak =
          *std::max_element(b.sim.peakMemory.begin(), b.sim.peakMemory.end());
      EXPECT_LE(peak, c.maxPeak) << c.name;
    }
  }
}

/// T_F = T_B = T_W = T per chunk, T_comm = 0, ZB-V at 2p M_B(chunk).
/// Lower bound: rank 0 runs stage 0 and the last stage 2p-1; the first pass
/// other than an F of stage 0 it can run is F(2p-1, mb 0), which needs the
/// 2p-1 forward passes before it on the V, so it cannot start before
/// (2p-1) T; until then rank 0 has at most m passes (F(0, 0..m-1)) to run:
/// its span is at least (6m + max(0, 2p-1-m)) T. The construction attains
/// this bound exactly once m >= p/2 + 2 (zero bubble for m >= 2p-1), and no
/// schedule goes below it.
TEST(VShapeReference, UnitCostsClosedForm) {
  for (int p = 2; p <= 12; ++p)
    for (int m = 1; m <= 4 * p; ++m) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      Problem pr;
      pr.numRanks = p;
      pr.numMicrobatches = m;
      pr.numChunks = 2;
      pr.costF = pr.costB = pr.costW = {2}; // T = 1 per chunk
      pr.costComm = {0};
      pr.memB = {2};
      pr.memW = {1};
      Built b = build(pr, "zb-v");
      ASSERT_TRUE(b.ok);
      double bound = 6.0 * m + std::max(0, 2 * p - 1 - m);
      EXPECT_GE(b.sim.stageSpan, bound - 1e-9);
      if (2 * m >= p + 4) {
        EXPECT_DOUBLE_EQ(b.sim.stageSpan, bound);
      }
      if (m >= 2 * p - 1) {
        EXPECT_DOUBLE_EQ(b.sim.bubbleRate, 0.0);
      }
      double peak =
          *std::max_element(b.sim.peakMemory.begin(), b.sim.peakMemory.end());
      EXPECT_LE(peak, 2.0 * p + 1e-9);
    }
}

/// Random problems (uniform stages, T_comm small against the passes, as in
/// the paper's setups): ZB-V at 1F1B's memory (p M_B per rank) is never
/// worse than ZB-H1 at the same memory, and given ZB-H2's memory (2p M_B)
/// never worse than ZB-H2 when T_B >= T_F (within 0.015 otherwise); all
/// verified and deadlock-free on buffered sends.
TEST(VShapeReference, RandomProblemsAgainstHandcrafted) {
  std::mt19937 rng(2024);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  int compared = 0, againstH2 = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Problem h;
    h.numRanks = 2 + rng() % 7;
    h.numMicrobatches = 2 * h.numRanks + rng() % (3 * h.numRanks);
    double f = uni(1, 10);
    h.costF = {f};
    h.costB = {f * uni(0.8, 1.3)};
    h.costW = {f * uni(0.4, 1.0)};
    h.costComm = {f * uni(0, 0.1)};
    h.memB = {2};
    h.memW = {1};
    SCOPED_TRACE("iteration " + std::to_string(iter));
    Problem v = h;
    v.numChunks = 2;
    Built h1 = build(h, "zb-h1"), zbv = build(v, "zb-v");
    ASSERT_TRUE(h1.ok && zbv.ok);
    EXPECT_LE(zbv.sim.bubbleRate, h1.sim.bubbleRate + 1e-9);
    Problem h2p = h, v2 = v;
    h2p.memoryLimit = v2.memoryLimit = 2.0 * h.numRanks * 2;
    Built h2 = build(h2p, "zb-h2"), zbv2 = build(v2, "zb-v");
    ASSERT_TRUE(h2.ok && zbv2.ok);
    // The construction's design point is T_B >= T_F (B waves cover the F
    // waves); with a faster B it can trail ZB-H2 by up to about 1 %.
    if (h.costB[0] >= h.costF[0]) {
      ++againstH2;
      EXPECT_LE(zbv2.sim.bubbleRate, h2.sim.bubbleRate + 1e-9)
          << "p=" << h.numRanks << " m=" << h.numMicrobatches
          << " f=" << h.costF[0] << " b=" << h.costB[0]
          << " w=" << h.costW[0] << " c=" << h.costComm[0];
    } else {
      EXPECT_LE(zbv2.sim.bubbleRate, h2.sim.bubbleRate + 0.015);
    }
    CommOptions tags;
    tags.oneChannelPerPeerPair = false;
    auto s = buildSchedule(v, "zb-v");
    ASSERT_TRUE(static_cast<bool>(s));
    EXPECT_EQ(errorOf(verifyCommunication(v, *s, tags)), "");
    ++compared;
  }
  EXPECT_EQ(compared, 1500);
  EXPECT_GT(againstH2, 500);
}

} // namespace

namespace {

/// The ILP on the V-shape mapping (V = 2), warm-started from ZB-V: on small
/// problems CBC proves optimality; the result verifies, keeps every rank
/// within its limit, is never worse than ZB-V, and is no better than the
/// rank-work bound. p=2, m=4 (T_F 1, T_B 1.2, T_W 0.8, T_comm 0.3 per
/// chunk): ZB-V's construction leaves 0.0698, the optimum has no bubble.
TEST(VShapeIlp, SmallProblemsOptimal) {
  struct Case {
    int p, m;
    double limit; // per rank, 0 = the default (none)
  } cases[] = {{2, 4, 0}, {2, 3, 0}, {2, 4, 5}, {3, 3, 0}};
  for (const Case &k : cases) {
    SCOPED_TRACE("p=" + std::to_string(k.p) + " m=" + std::to_string(k.m) +
                 " limit=" + std::to_string(k.limit));
    Problem pr;
    pr.numRanks = k.p;
    pr.numMicrobatches = k.m;
    pr.numChunks = 2;
    pr.costF = {2};
    pr.costB = {2.4};
    pr.costW = {1.6};
    pr.costComm = {0.3};
    pr.memB = {2};
    pr.memW = {1};
    pr.memoryLimit = k.limit;
    BuildOptions options;
    options.timeLimitSeconds = 30;
    IlpReport report;
    auto ilp = buildSchedule(pr, "ilp", options, &report);
    ASSERT_TRUE(static_cast<bool>(ilp)) << errorOf(ilp.takeError());
    auto zbv = buildSchedule(pr, "zb-v");
    ASSERT_TRUE(static_cast<bool>(zbv)) << errorOf(zbv.takeError());
    EXPECT_EQ(errorOf(verify(pr, *ilp)), "");
    SimResult a = simulate(pr, *ilp), b = simulate(pr, *zbv);
    EXPECT_TRUE(report.provenOptimal) << report.status;
    EXPECT_LE(a.stageSpan, b.stageSpan + 1e-9);
    EXPECT_NEAR(a.stageSpan, report.objective, 1e-9);
    EXPECT_GE(a.stageSpan, report.analyticBound - 1e-9);
    // Every rank runs m passes of each kind of both chunks: 6m ms of work.
    EXPECT_GE(a.stageSpan, k.m * (2 + 2.4 + 1.6) - 1e-9);
    if (k.limit > 0) {
      for (double peak : a.peakMemory)
        EXPECT_LE(peak, k.limit + 1e-9);
    }
  }
}

} // namespace

namespace {

/// v-auto: under any per-rank limits, never worse than ZB-V, V-Half or
/// V-Min whenever that schedule fits the same limits, and within them.
TEST(VShapeAuto, BestOfTheFamilyThatFits) {
  std::mt19937 rng(31);
  auto uni = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  int compared = 0;
  for (int iter = 0; iter < 300; ++iter) {
    Problem pr;
    pr.numRanks = 2 + rng() % 6;
    pr.numMicrobatches = pr.numRanks + rng() % (3 * pr.numRanks);
    pr.numChunks = 2;
    pr.costF = {uni(1, 5)};
    pr.costB = {uni(1, 5)};
    pr.costW = {uni(0.5, 4)};
    pr.costComm = {uni(0, 0.5)};
    pr.memB = {2};
    pr.memW = {1};
    pr.memoryLimit = uni(0.4, 1.2) * 2 * pr.numRanks;
    SCOPED_TRACE("iteration " + std::to_string(iter));
    auto autoS = buildSchedule(pr, "v-auto");
    if (!autoS) {
      EXPECT_NE(errorOf(autoS.takeError()).find("memory"), std::string::npos);
      continue;
    }
    SimResult a = simulate(pr, *autoS);
    for (double peak : a.peakMemory)
      EXPECT_LE(peak, pr.memoryLimit * (1 + 1e-9));
    for (const char *name : {"zb-v", "v-half", "v-min"}) {
      auto s = buildSchedule(pr, name);
      if (!s) {
        llvm::consumeError(s.takeError());
        continue;
      }
      ++compared;
      EXPECT_LE(a.stageSpan, simulate(pr, *s).stageSpan + 1e-9) << name;
    }
  }
  EXPECT_GT(compared, 300);
}

} // namespace
