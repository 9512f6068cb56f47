//===- RankProgramTest.cpp - one rank's program, buffers and data ---------===//
//
// zb/Runner/RankProgram.h without MPI, on the fixture fake1 (plan.json of
// Inputs/fake1, params.bin and input_0.pb from MakeFixtures.cpp, the rank
// program fake_rank0.so): what loadRankProgram reads, the memref
// descriptors it builds, the samples fillInputs feeds per step
// (docs/plan-json.md: step k uses samples (k*B + t) mod N), the SGD update
// with gradient scale 1 / num_microbatches, and the setup errors.
//
//===----------------------------------------------------------------------===//

#include "FakeData.h"

#include "zb/Runner/RankProgram.h"

#include "gtest/gtest.h"

using namespace zb::formats;
using namespace zb::runner;
using namespace zbtest;

namespace {

Plan fake1() {
  llvm::Expected<Plan> plan = loadPlan(std::string(ZB_FIXTURES_DIR) + "/fake1");
  EXPECT_TRUE(!!plan) << llvm::toString(plan.takeError());
  return plan ? std::move(*plan) : Plan();
}

std::string errorOf(llvm::Expected<std::unique_ptr<RankProgram>> rp) {
  return rp ? std::string("<no error>") : llvm::toString(rp.takeError());
}

TEST(RankProgram, LoadsParametersBuffersAndDescriptors) {
  Plan plan = fake1();
  auto rp = loadRankProgram(plan, 0, DataOptions(), /*forRun=*/false);
  ASSERT_TRUE(!!rp) << llvm::toString(rp.takeError());
  RankProgram &p = **rp;
  EXPECT_NE(p.entry, nullptr);
  std::vector<float> init = fakeParams();
  ASSERT_EQ(p.params.at(0).size(), 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(p.params.at(0).data()[i], init[i]);
  EXPECT_EQ(p.params.at(1).data()[0], init[3]);
  EXPECT_EQ(p.grads.at(1).size(), 1);
  EXPECT_TRUE(p.adamM.empty()); // sgd
  EXPECT_TRUE(p.hasLoss);
  ASSERT_EQ(p.descriptors.size(), 6u);
  // input x: [num_microbatches, microbatch_size] + sample_shape, row-major.
  const std::vector<int64_t> &x = p.descriptors[4];
  EXPECT_EQ(x[0], (int64_t)(intptr_t)p.inputs.at(0).bytes());
  EXPECT_EQ(std::vector<int64_t>(x.begin() + 2, x.end()),
            (std::vector<int64_t>{0, 2, 2, 3, 6, 3, 1}));
  // loss: a 0-d memref {allocated, aligned, offset}.
  EXPECT_EQ(p.descriptors[5].size(), 3u);
  EXPECT_EQ(p.argv[5], p.descriptors[5].data());
}

TEST(RankProgram, FeedsTheStepsSamplesAndAppliesSgd) {
  Plan plan = fake1();
  auto rp = loadRankProgram(plan, 0, DataOptions(), /*forRun=*/false);
  ASSERT_TRUE(!!rp) << llvm::toString(rp.takeError());
  RankProgram &p = **rp;
  const int64_t batch = 4; // 2 microbatches of 2
  for (int64_t step : {0, 1, 2}) {
    llvm::Error filled = fillInputs(p, step);
    ASSERT_FALSE(!!filled) << llvm::toString(std::move(filled));
    for (int64_t t = 0; t < batch; ++t)
      for (int64_t i = 0; i < kSampleSize; ++i)
        EXPECT_EQ(p.inputs.at(0).data()[t * kSampleSize + i],
                  fakeSample((step * batch + t) % kNumSamples, i))
            << "step " << step << " t " << t << " i " << i;
  }
  // w -= lr * g / num_microbatches, lr 0.1 (plan.json), 2 microbatches.
  for (int i = 0; i < 3; ++i)
    p.grads.at(0).data()[i] = 2.0f * (float)(i + 1);
  applyOptimizer(p, plan.optimizer, 0);
  std::vector<float> init = fakeParams();
  for (int i = 0; i < 3; ++i)
    EXPECT_FLOAT_EQ(p.params.at(0).data()[i],
                    init[i] - 0.1f * 2.0f * (float)(i + 1) / 2.0f);
  EXPECT_EQ(p.params.at(1).data()[0], init[3]); // zero gradient
  clearOutputs(p);
  EXPECT_EQ(p.grads.at(0).data()[2], 0.0f);
}

TEST(RankProgram, DataPathFromOptionsOrPlan) {
  Plan plan = fake1();
  llvm::Expected<std::string> d = dataPath(plan, DataOptions());
  ASSERT_TRUE(!!d);
  EXPECT_EQ(*d, plan.dir + "/.");
  DataOptions both;
  both.data = "a";
  both.inputs = "b";
  llvm::Expected<std::string> e = dataPath(plan, both);
  ASSERT_FALSE(!!e);
  EXPECT_EQ(llvm::toString(e.takeError()), "give --data or --inputs, not both");
  plan.data.clear();
  llvm::Expected<std::string> none = dataPath(plan, DataOptions());
  ASSERT_FALSE(!!none);
  EXPECT_EQ(llvm::toString(none.takeError()),
            plan.path + ": no \"data\" directory given: pass --data DIR");
}

TEST(RankProgram, SetupErrorsNameFileAndField) {
  Plan plan = fake1();
  plan.ranks[0].library = "nope.so";
  EXPECT_EQ(errorOf(loadRankProgram(plan, 0, DataOptions(), false)),
            plan.path + ": ranks[0].library: '" + plan.dir +
                "/nope.so' not found");
  plan = fake1();
  plan.ranks[0].args.erase(plan.ranks[0].args.begin()); // param 0
  EXPECT_EQ(errorOf(loadRankProgram(plan, 0, DataOptions(), false)),
            plan.path + ": ranks[0] has a grad argument for parameter 0 ('w') "
                        "but no param argument");
  plan = fake1();
  DataOptions missing;
  missing.data = plan.dir + "/nowhere";
  EXPECT_EQ(errorOf(loadRankProgram(plan, 0, missing, false)),
            plan.dir + "/nowhere/input_0.pb: cannot open (data for graph "
                       "input 'x')");
}

} // namespace
