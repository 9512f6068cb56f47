//===- ReplayTest.cpp - zb-run's measured pass times and replay -----------===//
//
// zb/Runner/Replay.h without MPI: the per-stage statistics of traced passes
// (means, population coefficient of variation, shortest receive), the replay
// of a schedule with traced durations and T_comm = 0, and the prediction at
// the measured costs, against timelines worked out by hand.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Replay.h"

#include "zb/Schedule/IO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <unistd.h>

using namespace zb::formats;
using namespace zb::runner;
using zbrt::EventKind;
using zbrt::TraceEvent;

namespace {

TraceEvent pass(EventKind kind, int32_t rank, int32_t stage, int32_t mb,
                double beginUs, double endUs) {
  return TraceEvent{kind, rank, stage, mb, -1, -1, 0, beginUs, endUs};
}

TraceEvent recv(int32_t rank, double beginUs, double endUs) {
  return TraceEvent{EventKind::Recv, rank, -1, -1, 0, 7, 64, beginUs, endUs};
}

TraceEvent message(EventKind kind, int32_t rank, double beginUs, double endUs,
                   double workFromUs) {
  TraceEvent e{kind, rank, -1, -1, 1 - rank, 7, 64, beginUs, endUs};
  e.workFromUs = workFromUs;
  return e;
}

TEST(StageProfile, PassCostsIncludeTheirOwnMessageWork) {
  // Rank 0 runs stage 0. A receive waits 0.1 ms and works 0.2 ms before F;
  // F sends twice (0.05 ms each); a receive waits 0.5 ms and works 0.1 ms
  // before B; W sends 0.02 ms; the last receive's backend does not say.
  std::vector<TraceEvent> step = {
      message(EventKind::Recv, 0, 0, 300, 100),
      pass(EventKind::Forward, 0, 0, 0, 300, 1300),
      message(EventKind::Send, 0, 1300, 1350, 1300),
      message(EventKind::Send, 0, 1350, 1400, 1350),
      message(EventKind::Recv, 0, 1400, 2000, 1900),
      pass(EventKind::BackwardInput, 0, 0, 0, 2000, 2500),
      pass(EventKind::BackwardWeight, 0, 0, 0, 2500, 3000),
      message(EventKind::Send, 0, 3000, 3020, 3000),
      message(EventKind::Recv, 0, 3020, 3500, -1),
  };
  std::vector<PassCost> costs = passCosts(step, 0, 1);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].pass->kind, EventKind::Forward);
  EXPECT_NEAR(costs[0].ms, 1.0 + 0.2 + 0.05 + 0.05, 1e-12);
  EXPECT_NEAR(costs[1].ms, 0.5 + 0.1, 1e-12);
  EXPECT_NEAR(costs[2].ms, 0.5 + 0.02, 1e-12);
  EXPECT_TRUE(passCosts(step, 1, 1).empty()); // no pass of rank 1

  StageProfile p(1);
  p.add(step, 0);
  EXPECT_NEAR(p.meanMs(0, 0), 1.3, 1e-12);
  EXPECT_NEAR(p.meanMs(0, 1), 0.6, 1e-12);
  EXPECT_NEAR(p.meanMs(0, 2), 0.52, 1e-12);
  // T_comm: the shortest wait (0.1, 0.5, and 0.48 for the whole receive
  // whose backend does not say).
  EXPECT_NEAR(p.commMs(0), 0.1, 1e-12);
}

TEST(StageProfile, MeansCoefficientOfVariationAndShortestReceive) {
  StageProfile p(2);
  // Rank 1 runs stage 1: F of 1 ms, then of 3 ms in the next step.
  p.add({pass(EventKind::Forward, 1, 1, 0, 0, 1000), recv(1, 0, 200),
         pass(EventKind::BackwardInput, 1, 1, 0, 1000, 1500),
         pass(EventKind::BackwardWeight, 1, 1, 0, 1500, -1)}, // still open
        1);
  p.add({pass(EventKind::Forward, 1, 1, 0, 0, 3000), recv(1, 0, 100),
         pass(EventKind::Forward, 1, 5, 0, 0, 3000)}, // no such stage
        1);
  EXPECT_DOUBLE_EQ(p.meanMs(1, 0), 2.0);
  EXPECT_DOUBLE_EQ(p.cv(1, 0), 0.5); // values 1, 3: sd 1, mean 2
  EXPECT_DOUBLE_EQ(p.meanMs(1, 1), 0.5);
  EXPECT_DOUBLE_EQ(p.cv(1, 1), 0.0);
  EXPECT_DOUBLE_EQ(p.meanMs(1, 2), 0.0);
  EXPECT_DOUBLE_EQ(p.commMs(1), 0.1);
  // Stage 0 ran nowhere.
  EXPECT_DOUBLE_EQ(p.meanMs(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(p.commMs(0), 0.0);

  Profile doc = p.toProfile("d/plan.json", 2);
  EXPECT_EQ(doc.plan, "d/plan.json");
  EXPECT_EQ(doc.steps, 2);
  ASSERT_EQ(doc.stages.size(), 2u);
  EXPECT_EQ(doc.stages[0].rank, -1);
  EXPECT_EQ(doc.stages[1].rank, 1);
  EXPECT_DOUBLE_EQ(doc.stages[1].tF, 2.0);
  EXPECT_DOUBLE_EQ(doc.stages[1].tComm, 0.1);
  EXPECT_EQ(doc.stages[1].cvF, 0.5);
  EXPECT_EQ(doc.stages[1].countF, 2);
  EXPECT_EQ(doc.stages[1].countB, 1);
  EXPECT_EQ(doc.stages[1].countW, 0);
}

/// Two stages on two ranks, one microbatch, B and W split: F0 F1 B1 W1 B0
/// W0. Planned with T_F = T_B = T_W = 1 ms and T_comm = 5 ms.
PlannedSchedule twoStages() {
  using zb::sched::Action;
  using zb::sched::ActionKind;
  PlannedSchedule ps;
  ps.problem.numRanks = 2;
  ps.problem.numMicrobatches = 1;
  ps.problem.costF = ps.problem.costB = ps.problem.costW = {1.0};
  ps.problem.costComm = {5.0};
  ps.schedule.name = "test";
  ps.schedule.stageToRank = {0, 1};
  for (int s = 0; s < 2; ++s)
    ps.schedule.perRank.push_back({Action{ActionKind::F, s, 0},
                                   Action{ActionKind::B, s, 0},
                                   Action{ActionKind::W, s, 0}});
  return ps;
}

/// The step as traced: T_F = 1, T_B = 2, T_W = 0.5 ms on both stages (the
/// begin times are the run's, with its communication).
std::vector<TraceEvent> tracedStep() {
  std::vector<TraceEvent> events;
  for (int32_t s = 0; s < 2; ++s) {
    double t = 10000.0 * s;
    events.push_back(pass(EventKind::Forward, s, s, 0, t, t + 1000));
    events.push_back(
        pass(EventKind::BackwardInput, s, s, 0, t + 3000, t + 5000));
    events.push_back(
        pass(EventKind::BackwardWeight, s, s, 0, t + 6000, t + 6500));
  }
  return events;
}

TEST(Replay, SimulatesTracedDurationsWithoutCommunication) {
  // By hand, T_comm = 0: rank 0 F [0, 1]; rank 1 F [1, 2], B [2, 4],
  // W [4, 4.5]; rank 0 B [4, 6], W [6, 6.5]. Rank 0 is busy 3.5 of 6.5 ms,
  // rank 1 3.5 of 3.5 ms.
  std::vector<double> b = replayStep(twoStages(), tracedStep());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0], 3.0 / 6.5, 1e-12);
  EXPECT_NEAR(b[1], 0.0, 1e-12);
}

TEST(Replay, CountsTheMessageWorkOfEachPass) {
  // Rank 1 receives F's output with 0.5 ms of its own work (after waiting
  // 2 ms): its F costs 1.5 ms. By hand, T_comm = 0: rank 0 F [0, 1]; rank 1
  // F [1, 2.5], B [2.5, 4.5], W [4.5, 5]; rank 0 B [4.5, 6.5], W [6.5, 7].
  // Rank 0 is busy 3.5 of 7 ms, rank 1 4 of 4 ms.
  std::vector<TraceEvent> events = tracedStep();
  events.push_back(message(EventKind::Recv, 1, 7500, 10000, 9500));
  std::vector<double> b = replayStep(twoStages(), events);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0], 0.5, 1e-12);
  EXPECT_NEAR(b[1], 0.0, 1e-12);
}

TEST(Replay, MissingActionGivesNothing) {
  std::vector<TraceEvent> events = tracedStep();
  events.pop_back();
  EXPECT_TRUE(replayStep(twoStages(), events).empty());
}

TEST(Replay, PredictionAtMeasuredCosts) {
  Plan plan;
  plan.numRanks = 2;
  plan.numStages = 2;
  StageProfile profile(2);
  for (int32_t r = 0; r < 2; ++r) {
    std::vector<TraceEvent> mine;
    for (const TraceEvent &e : tracedStep())
      if (e.rank == r)
        mine.push_back(e);
    profile.add(mine, r);
  }
  // No receive traced: T_comm = 0, and no jitter (cv = 0): the hand
  // timeline of SimulatesTracedDurationsWithoutCommunication.
  std::optional<MeasuredPrediction> m =
      predictAtMeasuredCosts(plan, twoStages(), profile);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->rankBubbleRate.size(), 2u);
  EXPECT_NEAR(m->rankBubbleRate[0], 3.0 / 6.5, 1e-12);
  EXPECT_NEAR(m->rankBubbleRate[1], 0.0, 1e-12);
  ASSERT_EQ(m->jitterRankBubbleRate.size(), 2u);
  EXPECT_NEAR(m->jitterRankBubbleRate[0], 3.0 / 6.5, 1e-9);

  StageProfile empty(2);
  EXPECT_FALSE(predictAtMeasuredCosts(plan, twoStages(), empty).has_value());
}

TEST(Replay, ReadsThePlannedScheduleNextToThePlan) {
  std::string dir =
      ::testing::TempDir() + "/zb-replaytest-" + std::to_string(getpid());
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  Plan plan;
  plan.dir = dir;
  plan.numRanks = 2;
  plan.numStages = 2;
  EXPECT_FALSE(readPlannedSchedule(plan).has_value()); // no schedule.json
  PlannedSchedule ps = twoStages();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(dir + "/schedule.json", ec);
    ASSERT_FALSE(ec);
    zb::sched::writeJSON(os, ps.problem, ps.schedule,
                         zb::sched::simulate(ps.problem, ps.schedule));
  }
  std::optional<PlannedSchedule> read = readPlannedSchedule(plan);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->schedule.perRank, ps.schedule.perRank);
  EXPECT_EQ(read->schedule.stageToRank, ps.schedule.stageToRank);
  plan.numStages = 3; // does not match: a note, no schedule
  EXPECT_FALSE(readPlannedSchedule(plan).has_value());
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
