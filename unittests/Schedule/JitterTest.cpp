//===- JitterTest.cpp - Per-rank bubble, replayed durations, jitter -------===//
//
// SimResult::rankBubbleRate against the closed form of 1F1B, the duration
// hook against a timeline worked out by hand, and estimateJitter against an
// independent Monte Carlo of a schedule whose bubble has a closed form in
// the pass durations.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

Problem uniform(int p, int m, double f, double b, double w) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.costF = {f};
  pr.costB = {b};
  pr.costW = {w};
  return pr;
}

/// Two stages on two ranks, one microbatch, B and W split:
///   rank 0: F(0) B(0) W(0)      rank 1: F(1) B(1) W(1)
/// F(1) waits for F(0), B(0) for B(1). With durations f0 f1 b0 b1 w0 w1 and
/// T_comm = 0: rank 1 never idles inside its span; rank 0 idles f1 + b1 of
/// its span f0 + f1 + b1 + b0 + w0.
Schedule twoRankOneMicrobatch() {
  Schedule s;
  s.name = "hand";
  s.stageToRank = {0, 1};
  s.costConvention = CostConvention::StageSpan;
  for (int r = 0; r < 2; ++r)
    s.perRank.push_back({{ActionKind::F, r, 0},
                         {ActionKind::B, r, 0},
                         {ActionKind::W, r, 0}});
  return s;
}

Problem twoStageProblem() {
  Problem pr;
  pr.numRanks = 2;
  pr.numMicrobatches = 1;
  pr.costF = {1, 2};
  pr.costB = {5, 3};
  pr.costW = {6, 4};
  return pr;
}

TEST(RankBubble, OneFOneBClosedForm) {
  // 1F1B with uniform stages: rank r starts at r T_F and ends r (T_B + T_W)
  // before the makespan (m + p - 1)(T_F + T_B + T_W), so its span is
  // (m + p - 1 - r)(T_F + T_B + T_W) around m (T_F + T_B + T_W) of work:
  // bubble (p - 1 - r) / (m + p - 1 - r).
  for (int p : {1, 2, 4})
    for (int m : {4, 8})
      for (auto [f, b, w] : {std::tuple{1.0, 1.0, 1.0}, {2.0, 3.0, 1.5}}) {
        Problem pr = uniform(p, m, f, b, w);
        auto s = buildSchedule(pr, "1f1b");
        ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
        SimResult r = simulate(pr, *s);
        ASSERT_EQ(r.rankBubbleRate.size(), static_cast<size_t>(p));
        for (int k = 0; k < p; ++k)
          EXPECT_NEAR(r.rankBubbleRate[k],
                      double(p - 1 - k) / double(m + p - 1 - k), 1e-12)
              << "p=" << p << " m=" << m << " rank " << k;
      }
}

TEST(RankBubble, DurationHookReplaysAHandTimeline) {
  Problem pr = twoStageProblem();
  Schedule s = twoRankOneMicrobatch();
  ASSERT_FALSE(errorOf(verify(pr, s)).size()) << errorOf(verify(pr, s));
  // Replay durations different from the costs: F0 2, F1 1, B1 4, W1 1,
  // B0 3, W0 2. By hand: F0 [0,2], F1 [2,3], B1 [3,7], W1 [7,8], B0 [7,10],
  // W0 [10,12]. Rank 0 busy 7 of span 12; rank 1 busy 6 of span 6.
  SimOptions opt;
  opt.duration = [](const Action &a) {
    static const double d[3][2] = {{2, 1}, {3, 4}, {2, 1}};
    return d[static_cast<int>(a.kind)][a.stage];
  };
  SimResult r = simulate(pr, s, opt);
  ASSERT_TRUE(r.complete);
  EXPECT_DOUBLE_EQ(r.makespan, 12);
  EXPECT_DOUBLE_EQ(r.rankBubbleRate[0], 5.0 / 12.0);
  EXPECT_DOUBLE_EQ(r.rankBubbleRate[1], 0.0);
  ASSERT_EQ(r.timeline[0].size(), 3u);
  EXPECT_DOUBLE_EQ(r.timeline[0][1].start, 7); // B0 waits for B1
  EXPECT_DOUBLE_EQ(r.timeline[0][1].end, 10);
  // The ideal time and bubble rate follow the replayed durations.
  EXPECT_DOUBLE_EQ(r.idealTime, 7);
  EXPECT_DOUBLE_EQ(r.bubbleRate, (12.0 - 7.0) / 12.0);
  // Without the hook: the costs (F0 1, F1 2, B1 3, W1 4, B0 5, W0 6).
  SimResult c = simulate(pr, s);
  EXPECT_DOUBLE_EQ(c.makespan, 1 + 2 + 3 + 5 + 6);
  EXPECT_DOUBLE_EQ(c.rankBubbleRate[0], 5.0 / 17.0);
}

TEST(Jitter, ZeroVariationIsTheDeterministicSimulation) {
  Problem pr = uniform(4, 8, 1.0, 1.2, 0.8);
  for (const char *name : {"1f1b", "zb-h1", "zb-2p"}) {
    auto s = buildSchedule(pr, name);
    ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
    SimResult det = simulate(pr, *s);
    auto est = estimateJitter(pr, *s, 5);
    ASSERT_TRUE(static_cast<bool>(est)) << errorOf(est.takeError());
    for (int r = 0; r < 4; ++r)
      EXPECT_NEAR(est->rankBubbleRate[r], det.rankBubbleRate[r], 1e-12);
    EXPECT_NEAR(est->makespan, det.makespan, 1e-9);
    EXPECT_NEAR(est->bubbleRate, det.bubbleRate, 1e-12);
  }
}

TEST(Jitter, VariationNeverShortensTheExpectedMakespan) {
  // The makespan is a max-plus (convex) function of the durations and the
  // factors have mean 1, so by Jensen's inequality E[makespan] >= the
  // makespan of the mean durations; with several ranks strictly, as the
  // ranks wait for the slower of two independent paths.
  for (const char *name : {"1f1b", "zb-h1", "zb-2p"}) {
    Problem pr = uniform(4, 8, 1.0, 1.2, 0.8);
    auto s = buildSchedule(pr, name);
    ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
    double det = simulate(pr, *s).makespan;
    pr.cvF.assign(4, 0.2);
    pr.cvB.assign(4, 0.2);
    pr.cvW.assign(4, 0.2);
    auto est = estimateJitter(pr, *s, 400, 7);
    ASSERT_TRUE(static_cast<bool>(est)) << errorOf(est.takeError());
    EXPECT_GT(est->makespan, det * 1.01) << name;
    // Same seed, same answer.
    auto again = estimateJitter(pr, *s, 400, 7);
    EXPECT_EQ(est->makespan, again->makespan);
  }
  // One rank never waits, whatever the durations.
  Problem one = uniform(1, 8, 1.0, 1.2, 0.8);
  one.cvF = {0.5};
  one.cvB = {0.5};
  one.cvW = {0.5};
  auto s = buildSchedule(one, "zb-h1");
  ASSERT_TRUE(static_cast<bool>(s));
  auto est = estimateJitter(one, *s, 50);
  ASSERT_TRUE(static_cast<bool>(est));
  EXPECT_NEAR(est->rankBubbleRate[0], 0.0, 1e-12);
}

TEST(Jitter, MatchesAnIndependentMonteCarlo) {
  // Rank 0's bubble in twoRankOneMicrobatch() is (f1 + b1) /
  // (f0 + f1 + b1 + b0 + w0): sample it directly with its own generator and
  // log-normal (Box-Muller from uniform draws) and compare the means within
  // five standard errors of the difference.
  Problem pr = twoStageProblem();
  pr.cvF = {0.3, 0.1};
  pr.cvB = {0.2, 0.4};
  pr.cvW = {0.25, 0.0};
  Schedule s = twoRankOneMicrobatch();
  const int n = 20000;
  auto est = estimateJitter(pr, s, n, 3);
  ASSERT_TRUE(static_cast<bool>(est)) << errorOf(est.takeError());
  EXPECT_NEAR(est->rankBubbleRate[1], 0.0, 1e-12);

  std::mt19937 gen(12345);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto factor = [&](double cv) {
    double sigma = std::sqrt(std::log(1 + cv * cv));
    double z = std::sqrt(-2 * std::log(1 - u(gen))) *
               std::cos(2 * M_PI * u(gen));
    return std::exp(sigma * z - sigma * sigma / 2);
  };
  double sum = 0, sumSq = 0;
  for (int i = 0; i < n; ++i) {
    double f0 = 1 * factor(0.3), f1 = 2 * factor(0.1);
    double b0 = 5 * factor(0.2), b1 = 3 * factor(0.4);
    double w0 = 6 * factor(0.25);
    double x = (f1 + b1) / (f0 + f1 + b1 + b0 + w0);
    sum += x;
    sumSq += x * x;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  double se = std::sqrt(2 * var / n);
  EXPECT_NEAR(est->rankBubbleRate[0], mean, 5 * se);
  // The makespan f0 + f1 + b1 + b0 + w0 is linear in the durations, so its
  // expectation is the sum of the means, 17 ms (the factors have mean 1);
  // its standard deviation is sqrt((0.3)^2 + (0.2)^2 + (1.0)^2 + (1.2)^2 +
  // (1.5)^2) ms, about 2.2 ms.
  EXPECT_NEAR(est->makespan, 17.0, 5 * 2.2 / std::sqrt(double(n)));
}

TEST(Jitter, Errors) {
  Problem pr = twoStageProblem();
  Schedule s = twoRankOneMicrobatch();
  EXPECT_NE(errorOf(estimateJitter(pr, s, 0).takeError()).find("samples = 0"),
            std::string::npos);
  pr.cvB = {0.1};
  EXPECT_NE(errorOf(estimateJitter(pr, s).takeError())
                .find("cvB has 1 values for 2 stages"),
            std::string::npos);
  pr.cvB = {0.1, -0.2};
  EXPECT_NE(errorOf(estimateJitter(pr, s).takeError()).find("must be >= 0"),
            std::string::npos);
}

} // namespace
