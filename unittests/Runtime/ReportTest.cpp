//===- ReportTest.cpp - what zb-run's rank 0 prints -----------------------===//
//
// zb/Runner/Report.h on a report filled by hand: the exact text lines (the
// formats test/Tools/zb-compile-output.test and ZbRunTest.cpp match), the
// JSON document read back, and the gradient report in both formats.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Report.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace zb::formats;
using namespace zb::runner;

namespace {

Plan twoRankPlan() {
  Plan plan;
  plan.path = "out/plan.json";
  plan.schedule = "zb-h1";
  plan.numRanks = 2;
  plan.numStages = 2;
  plan.numMicrobatches = 8;
  plan.microbatchSize = 16;
  plan.params = {ParamInfo{"fc1.weight"}, ParamInfo{"fc1.bias"}};
  plan.predicted.push_back({"1f1b", 0.3153, 0.1106, {0.3153, 0.661}, {}});
  plan.predicted.push_back({"zb-h1",
                            0.2957,
                            0.1076,
                            {0.2957, 0.655},
                            JitterInfo{400, 0.31, 0.11, {0.3, 0.7}}});
  return plan;
}

RunReport threeSteps() {
  RunReport r;
  r.steps = {{1, 0.412, 1.62}, {2, 0.3557, 0.18}, {3, 0.3821, 0.12}};
  r.realizedBubbleRate = {0.5729, std::nullopt};
  r.replayedBubbleRate = {0.0, 0.6944};
  r.replaySteps = 2;
  r.atMeasured = MeasuredPrediction{{0.1045, 0.7144}, {0.111, 0.7152}};
  r.peakHeapBytes = {401856, 155648};
  r.traceFile = "t.json";
  r.profileFile = "p.json";
  return r;
}

TEST(Report, MeasuredStepsLeaveTheFirstOut) {
  RunReport r = threeSteps();
  EXPECT_DOUBLE_EQ(r.meanStepTimeMs(), 0.15);
  EXPECT_EQ(r.measuredSteps(), "steps 2-3");
  r.steps.resize(1);
  EXPECT_DOUBLE_EQ(r.meanStepTimeMs(), 1.62);
  EXPECT_EQ(r.measuredSteps(), "step 1");
}

TEST(Report, StepLine) {
  std::string s;
  llvm::raw_string_ostream os(s);
  StepResult step;
  step.step = 3;
  step.loss = 0.4119984;
  step.timeMs = 1.625;
  step.lr = 6e-4;
  printStepLine(os, step);
  EXPECT_EQ(s, "step   3  loss 0.411998  time 1.62 ms  lr 6.00e-04\n");
  s.clear();
  step.gradNorm = 1.23456;
  step.tokensPerSecond = 24380.6;
  step.etaSeconds = 3725;
  printStepLine(os, step, /*newline=*/false);
  EXPECT_EQ(s, "step   3  loss 0.411998  time 1.62 ms  lr 6.00e-04  norm 1.2346"
               "  24381 tok/s  eta 1h02m");
  s.clear();
  step.skipped = true;
  step.etaSeconds = 65;
  printStepLine(os, step);
  EXPECT_EQ(s, "step   3  loss 0.411998  time 1.62 ms  lr 6.00e-04  skipped"
               "  24381 tok/s  eta 1m05s\n");
}

TEST(Report, TextLines) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printTextReport(os, twoRankPlan(), threeSteps());
  EXPECT_EQ(s,
            "schedule zb-h1: 2 ranks, 2 stages, 8 microbatches of 16\n"
            "predicted bubble rate  1f1b   0.3153  (makespan 0.111 ms)\n"
            "predicted bubble rate  zb-h1  0.2957  (makespan 0.108 ms)  <- "
            "this plan\n"
            "realized mean step time 0.15 ms (steps 2-3)\n"
            "realized bubble rate  rank 0  0.5729 (mean over steps 2-3)  "
            "predicted 0.2957, with measured jitter 0.3000\n"
            "this plan replayed with this run's pass times (T_comm = 0, mean "
            "over 2 steps): bubble rate per rank 0.0000 0.6944\n"
            "this plan at this run's mean pass times (steps 2-3): bubble rate "
            "per rank 0.1045 0.7144, with this run's jitter 0.1110 0.7152\n"
            "peak heap per rank (memory pool, bytes): 401856 155648\n"
            "trace of step 3 written to t.json\n"
            "measured stage costs (steps 2-3) written to p.json\n");
}

TEST(Report, TextWithoutOptionalParts) {
  Plan plan = twoRankPlan();
  plan.schedule = "";
  plan.predicted.clear();
  RunReport r;
  r.steps = {{1, 0.5, 2.0}};
  r.realizedBubbleRate = {0.25, 0.125};
  r.peakHeapBytes = {0, 64};
  std::string s;
  llvm::raw_string_ostream os(s);
  printTextReport(os, plan, r);
  EXPECT_EQ(s, "schedule ?: 2 ranks, 2 stages, 8 microbatches of 16\n"
               "realized mean step time 2.00 ms (step 1)\n"
               "realized bubble rate  rank 0  0.2500 (mean over step 1)\n"
               "realized bubble rate  rank 1  0.1250 (mean over step 1)\n"
               "peak heap per rank (memory pool, bytes): 0 64\n");
}

TEST(Report, JsonDocument) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printJsonReport(os, twoRankPlan(), threeSteps());
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(s);
  ASSERT_TRUE(!!v) << llvm::toString(v.takeError()) << s;
  const llvm::json::Object &o = *v->getAsObject();
  EXPECT_EQ(o.getString("plan"), "out/plan.json");
  EXPECT_EQ(o.getString("schedule"), "zb-h1");
  EXPECT_EQ(o.getInteger("num_microbatches"), 8);
  ASSERT_EQ(o.getArray("steps")->size(), 3u);
  EXPECT_EQ((*o.getArray("steps"))[2].getAsObject()->getNumber("loss"), 0.3821);
  EXPECT_EQ(o.getNumber("mean_step_time_ms"), threeSteps().meanStepTimeMs());
  const llvm::json::Object *zbh1 = o.getObject("predicted")->getObject("zb-h1");
  ASSERT_NE(zbh1, nullptr);
  EXPECT_EQ(zbh1->getNumber("makespan_ms"), 0.1076);
  EXPECT_EQ(zbh1->getObject("jitter")->getNumber("bubble_rate"), 0.31);
  EXPECT_EQ((*o.getArray("replayed_bubble_rate"))[1].getAsNumber(), 0.6944);
  EXPECT_EQ((*o.getObject("at_measured_costs")
                  ->getArray("jitter_rank_bubble_rate"))[0]
                .getAsNumber(),
            0.111);
  EXPECT_EQ((*o.getArray("peak_heap_bytes"))[0].getAsInteger(), 401856);
  const llvm::json::Array &realized = *o.getArray("realized_bubble_rate");
  EXPECT_EQ(realized[0].getAsNumber(), 0.5729);
  EXPECT_TRUE(realized[1].getAsNull().has_value());
  EXPECT_EQ(o.getString("trace"), "t.json");
  EXPECT_EQ(o.getString("profile"), "p.json");
}

/// D = 2 pipelines of the two-rank plan (rank 0 sends to 1 and back) on
/// ranks 0-2 of node a and rank 3 of node b: pipeline 0 and rank 0's group
/// {0, 2} share memory, pipeline 1 (2 -> 3) and group {1, 3} cross nodes.
RunReport mixedNodes() {
  RunReport r = threeSteps();
  r.dataParallel = 2;
  for (int w = 0; w < 4; ++w) {
    RankPlacement p;
    p.node = w < 3 ? "a" : "b";
    p.sharedMemoryGroup = w < 3 ? 0 : 3;
    r.placement.push_back(p);
    r.nodes.push_back(p.node);
  }
  return r;
}

Plan sendingPlan() {
  Plan plan = twoRankPlan();
  plan.ranks.resize(2);
  plan.ranks[0].rank = 0;
  plan.ranks[0].sends = std::vector<SentMessage>{{1, 0, 64}};
  plan.ranks[1].rank = 1;
  plan.ranks[1].sends = std::vector<SentMessage>{{0, 1, 64}};
  return plan;
}

TEST(Report, RankTransports) {
  std::vector<RankTransports> t = rankTransports(sendingPlan(), mixedNodes());
  ASSERT_EQ(t.size(), 4u);
  using Peers = std::vector<std::pair<int32_t, std::string>>;
  EXPECT_EQ(t[0].pipeline, (Peers{{1, "mpi shared memory"}}));
  EXPECT_EQ(t[2].pipeline, (Peers{{3, "mpi network"}}));
  EXPECT_EQ(t[3].pipeline, (Peers{{2, "mpi network"}}));
  EXPECT_EQ(t[0].allReduce, "mpi shared memory");
  EXPECT_EQ(t[1].allReduce, "mpi network");
  // The CUDA backend: NCCL to rank 1; rank 2's group by host-staged MPI.
  RunReport cuda = mixedNodes();
  for (int w = 0; w < 4; ++w)
    cuda.placement[w].cudaDevice = w % 2;
  cuda.placement[0].ncclPeers = 1u << 1;
  cuda.placement[0].cudaAllReduce = "nccl";
  cuda.placement[2].hostStagedPeers = 1u << 3;
  cuda.placement[2].cudaAllReduce = "mpi: no NCCL";
  t = rankTransports(sendingPlan(), cuda);
  EXPECT_EQ(t[0].pipeline, (Peers{{1, "nccl"}}));
  EXPECT_EQ(t[0].allReduce, "nccl");
  EXPECT_EQ(t[2].pipeline, (Peers{{3, "host-staged mpi network"}}));
  EXPECT_EQ(t[2].allReduce, "host-staged mpi shared memory");
}

TEST(Report, NodeLines) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printTextReport(os, sendingPlan(), mixedNodes());
  EXPECT_NE(s.find("node a: ranks 0-2, cpu; pipeline messages mpi shared "
                   "memory (ranks 0-1), mpi network (rank 2); gradient "
                   "all-reduce mpi shared memory (ranks 0, 2), mpi network "
                   "(rank 1)\n"
                   "node b: rank 3, cpu; pipeline messages mpi network; "
                   "gradient all-reduce mpi network\n"),
            std::string::npos)
      << s;
  // Placement unknown: the ranks alone.
  RunReport bare = threeSteps();
  bare.nodes = {"vm", "vm"};
  s.clear();
  printTextReport(os, sendingPlan(), bare);
  EXPECT_NE(s.find("node vm: ranks 0-1\n"), std::string::npos) << s;
  // JSON: per world rank.
  s.clear();
  printJsonReport(os, sendingPlan(), mixedNodes());
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(s);
  ASSERT_TRUE(!!v) << llvm::toString(v.takeError()) << s;
  const llvm::json::Array &placement =
      *v->getAsObject()->getArray("placement");
  ASSERT_EQ(placement.size(), 4u);
  const llvm::json::Object &r2 = *placement[2].getAsObject();
  EXPECT_EQ(r2.getInteger("rank"), 2);
  EXPECT_EQ(r2.getString("node"), "a");
  EXPECT_EQ(r2.getString("device"), "cpu");
  EXPECT_EQ(r2.getObject("pipeline")->getString("3"), "mpi network");
  EXPECT_EQ(r2.getString("allreduce"), "mpi shared memory");
}

TEST(Report, Gradients) {
  std::string text, json;
  llvm::raw_string_ostream t(text), j(json);
  printGradientReport(t, 0.25, twoRankPlan(), {1.5, 0.125}, false);
  printGradientReport(j, 0.25, twoRankPlan(), {1.5, 0.125}, true);
  EXPECT_EQ(text, "loss 0.25\ngrad_norm fc1.weight 1.5\n"
                  "grad_norm fc1.bias 0.125\n");
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(json);
  ASSERT_TRUE(!!v) << llvm::toString(v.takeError());
  EXPECT_EQ(v->getAsObject()->getNumber("loss"), 0.25);
  EXPECT_EQ(v->getAsObject()->getObject("grad_norm")->getNumber("fc1.bias"),
            0.125);
}

} // namespace
