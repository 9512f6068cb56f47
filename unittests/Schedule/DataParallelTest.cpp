//===- DataParallelTest.cpp - The data-parallel gradient all-reduce -------===//
//
// simulateDataParallel against timelines worked out by hand: 1F1B with one
// stage per rank (the all-reduce after the rank's last W either way), ZB-V
// with two stages per rank (Appendix A: the later stage's all-reduce runs
// during the W passes of the first one), the cost formula, D = 1 as the
// pipeline alone, the order overlapped <= after backward on every schedule,
// the validation's messages, and the report, trace and SVG outputs; the
// buckets of Appendix A (each bucket's all-reduce started during the last
// W, in proportion to the gradient bytes the W has produced) by hand.
//
// All timelines: T_F = T_B = T_W = 1 ms per rank (per chunk 1/V of it),
// T_comm = 0.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/DataParallel.h"
#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Report.h"

#include "llvm/Support/JSON.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

Problem unitProblem(int p, int m, int v = 1) {
  Problem problem;
  problem.numRanks = p;
  problem.numMicrobatches = m;
  problem.numChunks = v;
  problem.costF = {1};
  problem.costB = {1};
  problem.costW = {1};
  return problem;
}

/// D = 2, bandwidth 1 GB/s = 1e6 bytes/ms, latency 0.5 ms: an all-reduce of
/// B bytes takes 0.5 + 2 (1/2) B / 1e6 = 0.5 + B / 1e6 ms.
DataParallelModel twoPipelines(std::vector<double> bytes) {
  DataParallelModel model;
  model.numReplicas = 2;
  model.bandwidthGBps = 1;
  model.latencyMs = 0.5;
  model.paramBytes = std::move(bytes);
  return model;
}

struct Simulated {
  Problem problem;
  Schedule schedule;
  SimResult sim;
  DataParallelTiming dp;
};

Simulated run(Problem problem, llvm::StringRef name,
              const DataParallelModel &model) {
  Simulated r;
  r.problem = std::move(problem);
  auto s = buildSchedule(r.problem, name);
  EXPECT_TRUE(static_cast<bool>(s)) << (s ? "" : errorOf(s.takeError()));
  r.schedule = std::move(*s);
  r.sim = simulate(r.problem, r.schedule);
  auto t = simulateDataParallel(r.problem, r.schedule, r.sim, model);
  EXPECT_TRUE(static_cast<bool>(t)) << (t ? "" : errorOf(t.takeError()));
  r.dp = std::move(*t);
  return r;
}

TEST(DataParallel, AllReduceTimeIsTheRingBusBandwidthModel) {
  DataParallelModel m;
  m.numReplicas = 4;
  m.bandwidthGBps = 50;
  m.latencyMs = 0.01;
  // 0.01 + 2 * 3/4 * 1e9 bytes / (50e9 bytes/s) = 0.01 + 0.03 s = 30.01 ms.
  EXPECT_DOUBLE_EQ(allReduceTime(m, 1e9), 30.01);
  // D = 8: 2 * 7/8 = 1.75; 2e8 bytes / 50e9 = 4 ms -> 7 ms + 0.01.
  m.numReplicas = 8;
  EXPECT_DOUBLE_EQ(allReduceTime(m, 2e8), 7.01);
  // Nothing to reduce: no all-reduce, no latency.
  EXPECT_EQ(allReduceTime(m, 0), 0);
  m.numReplicas = 1;
  EXPECT_EQ(allReduceTime(m, 1e9), 0);
}

TEST(DataParallel, ParamBytesFollowTheProblemsConvention) {
  Problem problem = unitProblem(2, 4, 2);
  std::vector<int> map = vShapeStageToRank(2); // stages 0..3 on 0, 1, 1, 0
  DataParallelModel m;
  // One value: every rank's bytes, half per chunk.
  m.paramBytes = {8};
  EXPECT_EQ(resolveParamBytes(m, problem, map),
            (std::vector<double>{4, 4, 4, 4}));
  // Per rank.
  m.paramBytes = {4, 6};
  EXPECT_EQ(resolveParamBytes(m, problem, map),
            (std::vector<double>{2, 3, 3, 2}));
  // Per global stage, as is.
  m.paramBytes = {1, 2, 3, 4};
  EXPECT_EQ(resolveParamBytes(m, problem, map),
            (std::vector<double>{1, 2, 3, 4}));
}

// 1F1B, p = 2, m = 2 (fused backward, makespan): rank 0 runs F0 [0,1],
// F1 [1,2], B0 [4,5], W0 [5,6], B1 [7,8], W1 [8,9]; rank 1 F0 [1,2],
// B0 [2,3], W0 [3,4], F1 [4,5], B1 [5,6], W1 [6,7]. One all-reduce of 1e6
// bytes takes 1.5 ms: after the last W of each rank's only stage.
TEST(DataParallel, OneF1BByHand) {
  Simulated r = run(unitProblem(2, 2), "1f1b", twoPipelines({1e6}));
  ASSERT_DOUBLE_EQ(r.sim.makespan, 9);
  ASSERT_DOUBLE_EQ(r.sim.idealTime, 6);
  for (const AllReduceTimeline *t : {&r.dp.overlapped, &r.dp.afterBackward}) {
    ASSERT_EQ(t->ranks.size(), 2u);
    const RankAllReduces &r0 = t->ranks[0], &r1 = t->ranks[1];
    ASSERT_EQ(r0.allReduces.size(), 1u);
    ASSERT_EQ(r1.allReduces.size(), 1u);
    EXPECT_EQ(r0.allReduces[0].stage, 0);
    EXPECT_DOUBLE_EQ(r0.allReduces[0].bytes, 1e6);
    EXPECT_DOUBLE_EQ(r0.allReduces[0].duration, 1.5);
    EXPECT_DOUBLE_EQ(r0.allReduces[0].ready, 9);
    EXPECT_DOUBLE_EQ(r0.allReduces[0].start, 9);
    EXPECT_DOUBLE_EQ(r0.allReduces[0].end, 10.5);
    EXPECT_EQ(r1.allReduces[0].stage, 1);
    EXPECT_DOUBLE_EQ(r1.allReduces[0].ready, 7);
    EXPECT_DOUBLE_EQ(r1.allReduces[0].start, 7);
    EXPECT_DOUBLE_EQ(r1.allReduces[0].end, 8.5);
    EXPECT_DOUBLE_EQ(r0.computeStart, 0);
    EXPECT_DOUBLE_EQ(r0.computeEnd, 9);
    EXPECT_DOUBLE_EQ(r1.computeStart, 1);
    EXPECT_DOUBLE_EQ(r1.computeEnd, 7);
    EXPECT_DOUBLE_EQ(r0.exposed, 1.5);
    EXPECT_DOUBLE_EQ(r1.exposed, 1.5);
    EXPECT_DOUBLE_EQ(t->makespan, 10.5);
    EXPECT_DOUBLE_EQ(t->stepTime, 10.5); // 1F1B: makespan convention
    EXPECT_DOUBLE_EQ(t->exposed, 1.5);
    EXPECT_DOUBLE_EQ(t->bubbleRate, (10.5 - 6) / 10.5);
  }
  EXPECT_DOUBLE_EQ(r.dp.pipelineCost, 9);
  EXPECT_DOUBLE_EQ(r.dp.idealTime, 6);
}

// ZB-V, p = 2, m = 4 (stage span): rank 0 holds stages 0 and 3, rank 1
// stages 1 and 2 (T = 0.5 per chunk). Rank 0's last W of stage 3 ends at 11
// (W3 of stage 3 [10.5, 11]), of stage 0 at 12, its last action; rank 1
// starts at 0.5, its last W of stage 2 ends at 12, of stage 1 at 12.5.
// 2e6 bytes per rank: 1e6 per stage, 1.5 ms per all-reduce.
TEST(DataParallel, ZBVOverlapsTheLaterStagesAllReduceWithW) {
  Simulated r = run(unitProblem(2, 4, 2), "zb-v", twoPipelines({2e6}));
  ASSERT_EQ(r.schedule.costConvention, CostConvention::StageSpan);
  ASSERT_DOUBLE_EQ(r.sim.stageSpan, 12);
  const RankAllReduces &o0 = r.dp.overlapped.ranks[0];
  ASSERT_EQ(o0.allReduces.size(), 2u);
  // Stage 3 first: ready at 11, before the rank's last W ends (12).
  EXPECT_EQ(o0.allReduces[0].stage, 3);
  EXPECT_DOUBLE_EQ(o0.allReduces[0].ready, 11);
  EXPECT_DOUBLE_EQ(o0.allReduces[0].start, 11);
  EXPECT_DOUBLE_EQ(o0.allReduces[0].end, 12.5);
  EXPECT_LT(o0.allReduces[0].start, o0.computeEnd);
  // It overlaps the W passes of stage 0 that end the step.
  int overlappedW = 0;
  for (const TimedAction &t : r.sim.timeline[0])
    if (t.action.kind == ActionKind::W && t.action.stage == 0 &&
        t.start >= o0.allReduces[0].start && t.end <= o0.allReduces[0].end)
      ++overlappedW;
  EXPECT_EQ(overlappedW, 2); // W2 [11, 11.5] and W3 [11.5, 12] of stage 0
  // Stage 0 waits for the stream: ready 12, starts 12.5.
  EXPECT_EQ(o0.allReduces[1].stage, 0);
  EXPECT_DOUBLE_EQ(o0.allReduces[1].ready, 12);
  EXPECT_DOUBLE_EQ(o0.allReduces[1].start, 12.5);
  EXPECT_DOUBLE_EQ(o0.allReduces[1].end, 14);
  EXPECT_DOUBLE_EQ(o0.exposed, 2);
  const RankAllReduces &o1 = r.dp.overlapped.ranks[1];
  ASSERT_EQ(o1.allReduces.size(), 2u);
  EXPECT_EQ(o1.allReduces[0].stage, 2);
  EXPECT_DOUBLE_EQ(o1.allReduces[0].start, 12);
  EXPECT_DOUBLE_EQ(o1.allReduces[0].end, 13.5);
  EXPECT_EQ(o1.allReduces[1].stage, 1);
  EXPECT_DOUBLE_EQ(o1.allReduces[1].ready, 12.5);
  EXPECT_DOUBLE_EQ(o1.allReduces[1].start, 13.5);
  EXPECT_DOUBLE_EQ(o1.allReduces[1].end, 15);
  EXPECT_DOUBLE_EQ(o1.computeStart, 0.5);
  EXPECT_DOUBLE_EQ(o1.exposed, 2.5);
  // Stage span: rank 0 14 - 0, rank 1 15 - 0.5; makespan 15.
  EXPECT_DOUBLE_EQ(r.dp.overlapped.stageSpan, 14.5);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.makespan, 15);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.stepTime, 14.5);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.exposed, 2.5);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.bubbleRate, 2.5 / 14.5);

  // After backward: both all-reduces after the rank's last action.
  const RankAllReduces &a0 = r.dp.afterBackward.ranks[0];
  EXPECT_EQ(a0.allReduces[0].stage, 3);
  EXPECT_DOUBLE_EQ(a0.allReduces[0].start, 12);
  EXPECT_DOUBLE_EQ(a0.allReduces[0].end, 13.5);
  EXPECT_DOUBLE_EQ(a0.allReduces[1].start, 13.5);
  EXPECT_DOUBLE_EQ(a0.allReduces[1].end, 15);
  EXPECT_DOUBLE_EQ(a0.exposed, 3);
  const RankAllReduces &a1 = r.dp.afterBackward.ranks[1];
  EXPECT_DOUBLE_EQ(a1.allReduces[0].start, 12.5);
  EXPECT_DOUBLE_EQ(a1.allReduces[1].end, 15.5);
  EXPECT_DOUBLE_EQ(a1.exposed, 3);
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.stageSpan, 15);
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.stepTime, 15);
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.bubbleRate, 0.2);
  // The overlap saves 0.5 ms of the step.
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.stepTime - r.dp.overlapped.stepTime, 0.5);
}

// A short all-reduce (0.1 + 0.5 = 0.6 ms per stage) hides entirely behind
// the other stage's W: only the last stage's is exposed; after backward
// both are.
TEST(DataParallel, ShortAllReduceHidesBehindTheOtherStage) {
  DataParallelModel m = twoPipelines({1e6}); // 5e5 bytes per stage
  m.latencyMs = 0.1;
  Simulated r = run(unitProblem(2, 4, 2), "zb-v", m);
  const RankAllReduces &o0 = r.dp.overlapped.ranks[0];
  EXPECT_DOUBLE_EQ(o0.allReduces[0].duration, 0.6);
  EXPECT_DOUBLE_EQ(o0.allReduces[0].start, 11);
  EXPECT_DOUBLE_EQ(o0.allReduces[0].end, 11.6);
  EXPECT_DOUBLE_EQ(o0.allReduces[1].start, 12);
  EXPECT_DOUBLE_EQ(o0.allReduces[1].end, 12.6);
  EXPECT_DOUBLE_EQ(o0.exposed, 0.6);
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.ranks[0].exposed, 1.2);
  // Rank 1: stage 2 [12, 12.6], stage 1 ready 12.5, [12.6, 13.2].
  EXPECT_DOUBLE_EQ(r.dp.overlapped.ranks[1].allReduces[1].start, 12.6);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.ranks[1].exposed, 13.2 - 12.5);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.stepTime, 13.2 - 0.5);
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.stepTime, 13.7 - 0.5);
}

// Buckets (Appendix A), by hand on the 1F1B timeline of OneF1BByHand: rank
// 0's last W (stage 0) is [8, 9], rank 1's (stage 1) [6, 7]. D = 2, 1 GB/s,
// latency 0.125 ms: an all-reduce of B bytes takes 0.125 + B / 1e6 ms.
// 2e6 bytes per stage.
//  K = 1: one all-reduce of 2.125 ms at the W's end: rank 0 [9, 11.125],
//         rank 1 [7, 9.125]; exposed 2.125, step 11.125.
//  K = 4: four of 5e5 bytes, 0.625 ms each, ready a quarter of the W apart:
//         rank 0 at 8.25, 8.5, 8.75, 9 -> [8.25, 8.875], [8.875, 9.5],
//         [9.5, 10.125], [10.125, 10.75] (each waits for the stream after
//         the first); rank 1 the same 2 ms earlier, ending 8.75. Exposed
//         10.75 - 9 = 1.75 < 2.125, step 10.75 < 11.125. After backward the
//         four latencies cost: 9 + 4 * 0.625 = 11.5.
TEST(DataParallel, BucketsStartDuringTheLastW) {
  DataParallelModel m = twoPipelines({2e6});
  m.latencyMs = 0.125;
  Simulated one = run(unitProblem(2, 2), "1f1b", m);
  m.bucketsPerStage = 4;
  Simulated four = run(unitProblem(2, 2), "1f1b", m);
  ASSERT_DOUBLE_EQ(four.sim.makespan, 9);

  const RankAllReduces &k1 = one.dp.overlapped.ranks[0];
  ASSERT_EQ(k1.allReduces.size(), 1u);
  EXPECT_EQ(k1.allReduces[0].bucket, 0);
  EXPECT_DOUBLE_EQ(k1.allReduces[0].ready, 9);
  EXPECT_DOUBLE_EQ(k1.allReduces[0].end, 11.125);
  EXPECT_DOUBLE_EQ(one.dp.overlapped.exposed, 2.125);
  EXPECT_DOUBLE_EQ(one.dp.overlapped.stepTime, 11.125);

  const double ready0[] = {8.25, 8.5, 8.75, 9};
  const double start0[] = {8.25, 8.875, 9.5, 10.125};
  const RankAllReduces &r0 = four.dp.overlapped.ranks[0];
  ASSERT_EQ(r0.allReduces.size(), 4u);
  for (int j = 0; j < 4; ++j) {
    SCOPED_TRACE(j);
    const StageAllReduce &a = r0.allReduces[j];
    EXPECT_EQ(a.stage, 0);
    EXPECT_EQ(a.bucket, j);
    EXPECT_DOUBLE_EQ(a.bytes, 5e5);
    EXPECT_DOUBLE_EQ(a.duration, 0.625);
    EXPECT_DOUBLE_EQ(a.ready, ready0[j]);
    EXPECT_DOUBLE_EQ(a.start, start0[j]);
    EXPECT_DOUBLE_EQ(a.end, start0[j] + 0.625);
    // Rank 1: the same, 2 ms earlier.
    const StageAllReduce &b = four.dp.overlapped.ranks[1].allReduces[j];
    EXPECT_EQ(b.stage, 1);
    EXPECT_EQ(b.bucket, j);
    EXPECT_DOUBLE_EQ(b.ready, ready0[j] - 2);
    EXPECT_DOUBLE_EQ(b.start, start0[j] - 2);
  }
  EXPECT_DOUBLE_EQ(r0.end, 10.75);
  EXPECT_DOUBLE_EQ(r0.exposed, 1.75);
  EXPECT_DOUBLE_EQ(four.dp.overlapped.ranks[1].end, 8.75);
  EXPECT_DOUBLE_EQ(four.dp.overlapped.exposed, 1.75);
  EXPECT_DOUBLE_EQ(four.dp.overlapped.stepTime, 10.75);
  EXPECT_DOUBLE_EQ(four.dp.overlapped.bubbleRate, (10.75 - 6) / 10.75);
  EXPECT_LT(four.dp.overlapped.stepTime, one.dp.overlapped.stepTime);
  EXPECT_LT(four.dp.overlapped.exposed, one.dp.overlapped.exposed);
  // After backward: four all-reduces back to back from 9.
  const RankAllReduces &a0 = four.dp.afterBackward.ranks[0];
  ASSERT_EQ(a0.allReduces.size(), 4u);
  EXPECT_DOUBLE_EQ(a0.allReduces[0].start, 9);
  EXPECT_DOUBLE_EQ(a0.allReduces[3].end, 11.5);
  EXPECT_DOUBLE_EQ(four.dp.afterBackward.exposed, 2.5);
}

// Unequal buckets, given per stage (paramBytes empty with D = 2): stage 0
// {1e6, 0, 3e6} (B = 4e6) on rank 0's last W [8, 9] is ready at 8 + 1/4 =
// 8.25, 8.25 (no bytes: no all-reduce, 0 ms) and 9; latency 0.125: 1.125,
// 0 and 3.125 ms. Stream: [8.25, 9.375], [9.375, 9.375], [9.375, 12.5]:
// exposed 3.5. Stage 1 has no parameters: one entry of 0 bytes at its W's
// end (7), nothing exposed.
TEST(DataParallel, UnequalBucketBytes) {
  DataParallelModel m = twoPipelines({});
  m.latencyMs = 0.125;
  m.bucketBytes = {{1e6, 0, 3e6}, {}};
  Simulated r = run(unitProblem(2, 2), "1f1b", m);
  const RankAllReduces &r0 = r.dp.overlapped.ranks[0];
  ASSERT_EQ(r0.allReduces.size(), 3u);
  const double bytes[] = {1e6, 0, 3e6}, ready[] = {8.25, 8.25, 9},
               duration[] = {1.125, 0, 3.125}, start[] = {8.25, 9.375, 9.375};
  for (int j = 0; j < 3; ++j) {
    SCOPED_TRACE(j);
    EXPECT_EQ(r0.allReduces[j].bucket, j);
    EXPECT_DOUBLE_EQ(r0.allReduces[j].bytes, bytes[j]);
    EXPECT_DOUBLE_EQ(r0.allReduces[j].ready, ready[j]);
    EXPECT_DOUBLE_EQ(r0.allReduces[j].duration, duration[j]);
    EXPECT_DOUBLE_EQ(r0.allReduces[j].start, start[j]);
  }
  EXPECT_DOUBLE_EQ(r0.allReduces[2].end, 12.5);
  EXPECT_DOUBLE_EQ(r0.exposed, 3.5);
  const RankAllReduces &r1 = r.dp.overlapped.ranks[1];
  ASSERT_EQ(r1.allReduces.size(), 1u);
  EXPECT_EQ(r1.allReduces[0].stage, 1);
  EXPECT_EQ(r1.allReduces[0].bytes, 0);
  EXPECT_EQ(r1.allReduces[0].duration, 0);
  EXPECT_DOUBLE_EQ(r1.allReduces[0].ready, 7);
  EXPECT_EQ(r1.exposed, 0);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.stepTime, 12.5);
  // After backward: from 9, 1.125 + 0 + 3.125 -> 13.25.
  EXPECT_DOUBLE_EQ(r.dp.afterBackward.ranks[0].end, 13.25);

  // The smaller bucket last instead: {3e6, 1e6} is ready at 8.75 and 9:
  // [8.75, 11.875], [11.875, 13]; the large bucket first costs more here
  // than the 1e6 one did.
  m.bucketBytes = {{3e6, 1e6}, {}};
  r = run(unitProblem(2, 2), "1f1b", m);
  const RankAllReduces &s0 = r.dp.overlapped.ranks[0];
  ASSERT_EQ(s0.allReduces.size(), 2u);
  EXPECT_DOUBLE_EQ(s0.allReduces[0].ready, 8.75);
  EXPECT_DOUBLE_EQ(s0.allReduces[0].end, 11.875);
  EXPECT_DOUBLE_EQ(s0.allReduces[1].ready, 9);
  EXPECT_DOUBLE_EQ(s0.allReduces[1].end, 13);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.exposed, 4);
}

// A V schedule's buckets of two stages on one rank share the stream in
// ready order. ZB-V p = 2, m = 4 (T = 0.5 per chunk, as
// ZBVOverlapsTheLaterStagesAllReduceWithW): rank 0's last W of stage 3 is
// [10.5, 11], of stage 0 [11.5, 12]. 2e6 bytes per rank (1e6 per stage),
// latency 0.0625 ms, K = 2: 5e5 bytes per bucket, 0.0625 + 0.5 = 0.5625
// ms. Ready: stage 3 at 10.75 and 11, stage 0 at 11.75 and 12. Stream:
// [10.75, 11.3125], [11.3125, 11.875], [11.875, 12.4375], [12.4375, 13]:
// exposed 1. K = 1 (1.0625 ms per stage): stage 3 [11, 12.0625], stage 0
// [12.0625, 13.125], exposed 1.125.
TEST(DataParallel, BucketsOfTwoStagesShareTheStream) {
  DataParallelModel m = twoPipelines({2e6});
  m.latencyMs = 0.0625;
  m.bucketsPerStage = 2;
  Simulated r = run(unitProblem(2, 4, 2), "zb-v", m);
  const RankAllReduces &r0 = r.dp.overlapped.ranks[0];
  ASSERT_EQ(r0.allReduces.size(), 4u);
  const int stage[] = {3, 3, 0, 0}, bucket[] = {0, 1, 0, 1};
  const double ready[] = {10.75, 11, 11.75, 12},
               start[] = {10.75, 11.3125, 11.875, 12.4375};
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(r0.allReduces[k].stage, stage[k]);
    EXPECT_EQ(r0.allReduces[k].bucket, bucket[k]);
    EXPECT_DOUBLE_EQ(r0.allReduces[k].ready, ready[k]);
    EXPECT_DOUBLE_EQ(r0.allReduces[k].start, start[k]);
    EXPECT_DOUBLE_EQ(r0.allReduces[k].duration, 0.5625);
  }
  EXPECT_DOUBLE_EQ(r0.end, 13);
  EXPECT_DOUBLE_EQ(r0.exposed, 1);
  m.bucketsPerStage = 1;
  Simulated k1 = run(unitProblem(2, 4, 2), "zb-v", m);
  EXPECT_DOUBLE_EQ(k1.dp.overlapped.ranks[0].allReduces[1].start, 12.0625);
  EXPECT_DOUBLE_EQ(k1.dp.overlapped.ranks[0].exposed, 1.125);
}

// K = 1 is the stage as the unit: on every schedule the same timeline as
// bucketBytes with one bucket per stage, every bucket 0 and ready at the
// stage's last B/W end; K equal buckets given as bucketBytes equal
// bucketsPerStage = K; and with K = 3 each bucket lies within its stage's
// last W, the last at its end, the stream one at a time.
TEST(DataParallel, OneBucketIsTheStageAndBucketsStayInTheLastW) {
  auto same = [](const AllReduceTimeline &x, const AllReduceTimeline &y) {
    ASSERT_EQ(x.ranks.size(), y.ranks.size());
    EXPECT_EQ(x.stepTime, y.stepTime);
    EXPECT_EQ(x.exposed, y.exposed);
    for (size_t r = 0; r < x.ranks.size(); ++r) {
      ASSERT_EQ(x.ranks[r].allReduces.size(), y.ranks[r].allReduces.size());
      for (size_t k = 0; k < x.ranks[r].allReduces.size(); ++k) {
        const StageAllReduce &a = x.ranks[r].allReduces[k],
                             &b = y.ranks[r].allReduces[k];
        EXPECT_EQ(a.stage, b.stage);
        EXPECT_EQ(a.bucket, b.bucket);
        EXPECT_EQ(a.bytes, b.bytes);
        EXPECT_EQ(a.ready, b.ready);
        EXPECT_EQ(a.start, b.start);
        EXPECT_EQ(a.end, b.end);
      }
    }
  };
  for (const ScheduleInfo &info : scheduleTable()) {
    if (info.kind == ScheduleKind::Ilp)
      continue;
    SCOPED_TRACE(info.name.str());
    Problem problem = unitProblem(4, 8, info.defaultChunks);
    problem.costF = {1, 1.5, 1, 2};
    problem.costW = {0.5, 1, 1, 0.5};
    auto s = buildSchedule(problem, info.kind);
    ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
    SimResult sim = simulate(problem, *s);
    int numStages = s->stageToRank.size();
    std::vector<double> perStage(numStages);
    for (int st = 0; st < numStages; ++st)
      perStage[st] = 1e6 * (st % 3 + 1);
    DataParallelModel m = twoPipelines(perStage);
    m.latencyMs = 0.0625;
    auto k1 = simulateDataParallel(problem, *s, sim, m);
    ASSERT_TRUE(static_cast<bool>(k1)) << errorOf(k1.takeError());
    // Each stage's last B/W pass, by hand from the timeline.
    std::vector<double> begin(numStages, -1), end(numStages, -1);
    for (const std::vector<TimedAction> &line : sim.timeline)
      for (const TimedAction &t : line)
        if (t.action.kind != ActionKind::F && t.end > end[t.action.stage]) {
          end[t.action.stage] = t.end;
          begin[t.action.stage] = t.start;
        }
    for (const RankAllReduces &rank : k1->overlapped.ranks)
      for (const StageAllReduce &a : rank.allReduces) {
        EXPECT_EQ(a.bucket, 0);
        EXPECT_EQ(a.ready, end[a.stage]);
        EXPECT_EQ(a.bytes, perStage[a.stage]);
      }
    DataParallelModel given = m;
    given.paramBytes.clear();
    for (double b : perStage)
      given.bucketBytes.push_back({b});
    auto g1 = simulateDataParallel(problem, *s, sim, given);
    ASSERT_TRUE(static_cast<bool>(g1)) << errorOf(g1.takeError());
    same(k1->overlapped, g1->overlapped);
    same(k1->afterBackward, g1->afterBackward);

    m.bucketsPerStage = 3;
    auto k3 = simulateDataParallel(problem, *s, sim, m);
    ASSERT_TRUE(static_cast<bool>(k3)) << errorOf(k3.takeError());
    given.bucketBytes.clear();
    for (double b : perStage)
      given.bucketBytes.push_back({b / 3, b / 3, b / 3});
    auto g3 = simulateDataParallel(problem, *s, sim, given);
    ASSERT_TRUE(static_cast<bool>(g3)) << errorOf(g3.takeError());
    same(k3->overlapped, g3->overlapped);
    EXPECT_LE(k3->overlapped.stepTime, k3->afterBackward.stepTime);
    for (const RankAllReduces &rank : k3->overlapped.ranks) {
      EXPECT_EQ(rank.allReduces.size(), 3u * problem.numChunks);
      double free = 0;
      for (const StageAllReduce &a : rank.allReduces) {
        EXPECT_GT(a.ready, begin[a.stage]);
        EXPECT_LE(a.ready, end[a.stage]);
        if (a.bucket == 2)
          EXPECT_EQ(a.ready, end[a.stage]);
        else
          EXPECT_DOUBLE_EQ(a.ready,
                           begin[a.stage] + (end[a.stage] - begin[a.stage]) *
                                                (a.bucket + 1) / 3.0);
        EXPECT_GE(a.start, std::max(a.ready, free));
        free = a.end;
      }
    }
  }
}

TEST(DataParallel, BucketValidationNamesTheFlagStageAndBucket) {
  Problem problem = unitProblem(2, 4, 2); // p*V = 4 stages
  auto check = [&](const DataParallelModel &m) {
    return errorOf(validateDataParallel(m, problem));
  };
  DataParallelModel m = twoPipelines({1e6});
  m.bucketsPerStage = 0;
  EXPECT_EQ(check(m), "dp-buckets must lie in [1, 4096] (all-reduce buckets "
                      "per stage), got 0");
  m.bucketsPerStage = kMaxBucketsPerStage + 1;
  EXPECT_EQ(check(m), "dp-buckets must lie in [1, 4096] (all-reduce buckets "
                      "per stage), got 4097");
  m.bucketsPerStage = kMaxBucketsPerStage;
  EXPECT_EQ(check(m), "");
  m.bucketsPerStage = 1;
  // bucketBytes: one list per global stage.
  m.bucketBytes = {{1}, {2}, {3}};
  EXPECT_EQ(check(m), "bucket bytes has 3 stages; expected one list per "
                      "global stage, p*V=4");
  m.bucketBytes = {{1, 2}, {}, {3, -4}, {5}};
  EXPECT_EQ(check(m), "bucket bytes of stage 2, bucket 1 must be finite, >= 0 "
                      "and at most 1e15, got -4");
  m.bucketBytes[2][1] = std::nan("");
  EXPECT_NE(check(m).find("bucket bytes of stage 2, bucket 1"),
            std::string::npos);
  m.bucketBytes[2][1] = 2e15;
  EXPECT_NE(check(m).find("bucket bytes of stage 2, bucket 1"),
            std::string::npos);
  m.bucketBytes[2][1] = 4;
  EXPECT_EQ(check(m), "");
  // bucketBytes stand in for paramBytes, even with D > 1.
  m.paramBytes.clear();
  EXPECT_EQ(check(m), "");
  m.bandwidthGBps = 1e-300;
  EXPECT_EQ(check(m), "dp-bandwidth 1e-300 GB/s makes the all-reduce of "
                      "bucket 0 of stage 0 (1 bytes) longer than 1e15 ms");
  // simulateDataParallel checks the stages against the schedule's.
  Problem p2 = unitProblem(2, 2);
  auto s = buildSchedule(p2, "1f1b");
  ASSERT_TRUE(static_cast<bool>(s));
  SimResult sim = simulate(p2, *s);
  DataParallelModel three = twoPipelines({});
  three.bucketBytes = {{1}, {2}, {3}};
  auto t = simulateDataParallel(p2, *s, sim, three);
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_EQ(errorOf(t.takeError()), "bucket bytes has 3 stages; expected one "
                                    "list per global stage, p*V=2");
  // zb-sched's flag.
  DataParallelFlags flags;
  flags.replicas = 2;
  flags.paramBytes = "1e6";
  flags.bucketsPerStage = 0;
  auto parsed = parseDataParallel(flags, p2);
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_NE(errorOf(parsed.takeError()).find("dp-buckets must lie"),
            std::string::npos);
  flags.bucketsPerStage = 8;
  parsed = parseDataParallel(flags, p2);
  ASSERT_TRUE(static_cast<bool>(parsed)) << errorOf(parsed.takeError());
  EXPECT_EQ(parsed->bucketsPerStage, 8);
  EXPECT_TRUE(parsed->bucketed());
  // --dp-buckets alone shows the section (and so its errors).
  DataParallelFlags alone;
  alone.bucketsPerStage = 0;
  EXPECT_TRUE(alone.enabled());
}

TEST(DataParallel, OneCopyIsThePipelineAlone) {
  DataParallelModel m;
  m.numReplicas = 1;
  m.paramBytes = {3e9};
  for (const char *name : {"1f1b", "zb-h1", "zb-2p", "1f1b-i", "zb-v"}) {
    SCOPED_TRACE(name);
    int v = llvm::StringRef(name) == "1f1b-i" || llvm::StringRef(name) == "zb-v"
                ? 2
                : 1;
    Simulated r = run(unitProblem(4, 8, v), name, m);
    for (const AllReduceTimeline *t : {&r.dp.overlapped, &r.dp.afterBackward}) {
      EXPECT_DOUBLE_EQ(t->stepTime, r.sim.cost);
      EXPECT_DOUBLE_EQ(t->makespan, r.sim.makespan);
      EXPECT_DOUBLE_EQ(t->stageSpan, r.sim.stageSpan);
      EXPECT_DOUBLE_EQ(t->bubbleRate, r.sim.bubbleRate);
      EXPECT_EQ(t->exposed, 0);
      for (const RankAllReduces &rank : t->ranks)
        for (const StageAllReduce &a : rank.allReduces)
          EXPECT_EQ(a.duration, 0);
    }
  }
  // Without bytes too.
  m.paramBytes.clear();
  Simulated r = run(unitProblem(4, 8), "zb-h1", m);
  EXPECT_DOUBLE_EQ(r.dp.overlapped.stepTime, r.sim.cost);
}

// Every schedule: the stream runs one all-reduce at a time, none before its
// stage is ready, the baseline's none before the rank's last action, and
// the overlapped step is never longer than the baseline's.
TEST(DataParallel, OverlappedNeverLaterThanAfterBackward) {
  for (const ScheduleInfo &info : scheduleTable()) {
    if (info.kind == ScheduleKind::Ilp)
      continue; // CBC: covered by the others' orders
    SCOPED_TRACE(info.name.str());
    Problem problem = unitProblem(4, 8, info.defaultChunks);
    problem.costF = {1, 1.5, 1, 2};
    problem.costW = {0.5, 1, 1, 0.5};
    auto s = buildSchedule(problem, info.kind);
    ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
    SimResult sim = simulate(problem, *s);
    DataParallelModel m = twoPipelines({3e6, 1e6, 2e6, 5e5});
    m.numReplicas = 8;
    auto t = simulateDataParallel(problem, *s, sim, m);
    ASSERT_TRUE(static_cast<bool>(t)) << errorOf(t.takeError());
    EXPECT_LE(t->overlapped.stepTime, t->afterBackward.stepTime);
    EXPECT_GE(t->overlapped.stepTime, sim.cost);
    for (int r = 0; r < problem.numRanks; ++r) {
      const RankAllReduces &o = t->overlapped.ranks[r];
      const RankAllReduces &a = t->afterBackward.ranks[r];
      EXPECT_LE(o.end, a.end);
      EXPECT_GE(o.exposed, 0);
      EXPECT_EQ(o.allReduces.size(), static_cast<size_t>(problem.numChunks));
      double free = 0;
      for (const StageAllReduce &x : o.allReduces) {
        EXPECT_EQ(s->stageToRank[x.stage], r);
        EXPECT_GE(x.start, x.ready);
        EXPECT_GE(x.start, free);
        EXPECT_DOUBLE_EQ(x.end - x.start, allReduceTime(m, x.bytes));
        free = x.end;
      }
      EXPECT_GE(a.allReduces.front().start, a.computeEnd);
    }
  }
}

TEST(DataParallel, ValidationNamesTheField) {
  Problem problem = unitProblem(4, 8, 2);
  auto check = [&](DataParallelModel m) {
    return errorOf(validateDataParallel(m, problem));
  };
  DataParallelModel good = twoPipelines({1e6});
  EXPECT_EQ(check(good), "");
  DataParallelModel m = good;
  m.numReplicas = 0;
  EXPECT_EQ(check(m), "data-parallel must lie in [1, 4096] (pipelines whose "
                      "gradients are all-reduced), got 0");
  m.numReplicas = kMaxDataParallel + 1;
  EXPECT_NE(check(m).find("got 4097"), std::string::npos);
  m.numReplicas = kMaxDataParallel;
  EXPECT_EQ(check(m), "");
  m = good;
  m.bandwidthGBps = -1;
  EXPECT_EQ(check(m),
            "dp-bandwidth must be a finite number > 0 (GB/s), got -1");
  m.bandwidthGBps = 0;
  EXPECT_NE(check(m).find("dp-bandwidth"), std::string::npos);
  m.bandwidthGBps = std::numeric_limits<double>::infinity();
  EXPECT_NE(check(m).find("dp-bandwidth"), std::string::npos);
  m.bandwidthGBps = std::nan("");
  EXPECT_NE(check(m).find("dp-bandwidth"), std::string::npos);
  m.bandwidthGBps = 1e-300; // 1e6 bytes would take 1e300 ms
  EXPECT_EQ(check(m), "dp-bandwidth 1e-300 GB/s makes the all-reduce of 1e+06 "
                      "bytes longer than 1e15 ms");
  m = good;
  m.latencyMs = -0.5;
  EXPECT_EQ(check(m),
            "dp-latency must be finite, >= 0 and at most 1e15 (ms), got -0.5");
  m = good;
  m.paramBytes = {-1};
  EXPECT_EQ(check(m),
            "param-bytes must be finite, >= 0 and at most 1e15, got -1");
  m.paramBytes = {1, 2, 3};
  EXPECT_EQ(check(m), "param-bytes has 3 values; expected 1, p=4 or p*V=8");
  m.paramBytes.clear();
  EXPECT_EQ(check(m), "param-bytes is required with data-parallel 2 > 1 (the "
                      "parameter bytes: one value, p=4 values or p*V=8 "
                      "values)");
  // D = 1 needs no bytes.
  m.numReplicas = 1;
  EXPECT_EQ(check(m), "");
  // simulateDataParallel validates too, and wants a complete simulation.
  m = good;
  m.numReplicas = 0;
  Problem p2 = unitProblem(2, 2);
  auto s = buildSchedule(p2, "1f1b");
  ASSERT_TRUE(static_cast<bool>(s));
  SimResult sim = simulate(p2, *s);
  auto t = simulateDataParallel(p2, *s, sim, m);
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_NE(errorOf(t.takeError()).find("data-parallel must lie"),
            std::string::npos);
  sim.complete = false;
  t = simulateDataParallel(p2, *s, sim, good);
  ASSERT_FALSE(static_cast<bool>(t));
  EXPECT_EQ(errorOf(t.takeError()),
            "data-parallel: the simulation of '1f1b' is incomplete");
}

TEST(DataParallel, FlagsNameTheFlag) {
  Problem problem = unitProblem(4, 8);
  DataParallelFlags flags;
  EXPECT_FALSE(flags.enabled());
  flags.replicas = 2;
  EXPECT_TRUE(flags.enabled());
  auto m = parseDataParallel(flags, problem);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_NE(errorOf(m.takeError()).find("param-bytes is required"),
            std::string::npos);
  flags.paramBytes = "1e6,x";
  m = parseDataParallel(flags, problem);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_EQ(errorOf(m.takeError()), "--param-bytes: 'x' is not a number");
  flags.paramBytes = "1e6, 2e6,3e6,4e6";
  m = parseDataParallel(flags, problem);
  ASSERT_TRUE(static_cast<bool>(m)) << errorOf(m.takeError());
  EXPECT_EQ(m->paramBytes, (std::vector<double>{1e6, 2e6, 3e6, 4e6}));
  EXPECT_EQ(m->numReplicas, 2);
  EXPECT_DOUBLE_EQ(m->bandwidthGBps, 100);
  EXPECT_DOUBLE_EQ(m->latencyMs, 0.02);
}

TEST(DataParallel, ReportJSONTraceAndSVG) {
  ReportOptions options;
  options.problem.stages = 2;
  options.problem.microbatches = 4;
  options.scheduleName = "zb-v";
  options.dataParallel.replicas = 2;
  options.dataParallel.bandwidthGBps = 1;
  options.dataParallel.latencyMs = 0.5;
  options.dataParallel.paramBytes = "2e6";
  options.format = ReportFormat::JSON;
  options.verifyComm = false; // zb-v needs tag channels
  std::string text;
  llvm::raw_string_ostream os(text);
  ASSERT_EQ(errorOf(writeScheduleReport(os, options)), "");
  auto json = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(json)) << errorOf(json.takeError());
  const llvm::json::Object *dp =
      json->getAsObject()->getObject("data_parallel");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->getInteger("replicas"), 2);
  EXPECT_EQ(dp->getNumber("pipeline_cost_ms"), 12);
  EXPECT_EQ(dp->getObject("overlapped")->getNumber("step_ms"), 14.5);
  EXPECT_EQ(dp->getObject("after_backward")->getNumber("step_ms"), 15);
  const llvm::json::Object *rank0 =
      (*dp->getObject("overlapped")->getArray("ranks"))[0].getAsObject();
  EXPECT_EQ(rank0->getNumber("exposed_ms"), 2);
  const llvm::json::Object *first =
      (*rank0->getArray("all_reduces"))[0].getAsObject();
  EXPECT_EQ(first->getInteger("stage"), 3);
  EXPECT_EQ(first->getNumber("start"), 11);
  EXPECT_EQ(first->getNumber("end"), 12.5);

  // Without the flags the report has no data_parallel object.
  options.dataParallel = DataParallelFlags();
  text.clear();
  ASSERT_EQ(errorOf(writeScheduleReport(os, options)), "");
  json = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(json));
  EXPECT_EQ(json->getAsObject()->get("data_parallel"), nullptr);

  // The trace: the all-reduces on tid p + r, named per rank.
  Simulated r = run(unitProblem(2, 4, 2), "zb-v", twoPipelines({2e6}));
  std::string trace;
  llvm::raw_string_ostream tos(trace);
  writeTrace(tos, r.schedule, r.sim, nullptr, &r.dp);
  auto tj = llvm::json::parse(trace);
  ASSERT_TRUE(static_cast<bool>(tj)) << errorOf(tj.takeError());
  int bars = 0;
  std::vector<std::string> lanes;
  for (const llvm::json::Value &e :
       *tj->getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *o = e.getAsObject();
    if (o->getString("cat") ==
        std::optional<llvm::StringRef>("data_parallel")) {
      ++bars;
      int64_t tid = *o->getInteger("tid");
      EXPECT_TRUE(tid == 2 || tid == 3);
      if (o->getString("name") ==
          std::optional<llvm::StringRef>("all-reduce stage 3")) {
        EXPECT_EQ(tid, 2);
        EXPECT_EQ(o->getNumber("ts"), 11000);
        EXPECT_EQ(o->getNumber("dur"), 1500);
      }
    }
    if (o->getString("name") == std::optional<llvm::StringRef>("thread_name"))
      lanes.push_back(
          o->getObject("args")->getString("name").value_or("").str());
  }
  EXPECT_EQ(bars, 4);
  EXPECT_EQ(lanes,
            (std::vector<std::string>{"rank 0", "rank 1", "rank 0 all-reduce",
                                      "rank 1 all-reduce"}));

  // The SVG: one bar per stage.
  std::string svg;
  llvm::raw_string_ostream sos(svg);
  writeSVG(sos, r.problem, r.schedule, r.sim, nullptr, &r.dp);
  size_t count = 0;
  for (size_t at = svg.find("<title>all-reduce of stage");
       at != std::string::npos;
       at = svg.find("<title>all-reduce of stage", at + 1))
    ++count;
  EXPECT_EQ(count, 4u);
  EXPECT_NE(svg.find("all-reduce of stage 3 [11.000, 12.500]"),
            std::string::npos);
}

} // namespace
