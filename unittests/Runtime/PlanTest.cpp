//===- PlanTest.cpp - plan.json: the one reader and the one writer --------===//
//
// zb/Formats/Plan.h: a plan written by writePlan reads back equal, field by
// field; the plan.json files zb-compile wrote (Inputs/compiled/, copied from
// zb-compile's output with the paths shortened) are re-written byte for
// byte; the hand-written fixtures of Inputs/ load; and every reader error
// names the file and the field.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Checkpoint.h"
#include "zb/Formats/Plan.h"
#include "zb/Support/Limits.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <unistd.h>

#include <functional>
#include <string>

using namespace zb::formats;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/zb-plantest-" + std::to_string(getpid()) +
         "-" + name;
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(!!buf) << path;
  return buf ? (*buf)->getBuffer().str() : "";
}

/// A plan with every field of the schema set to a value other than its
/// default.
Plan fullPlan() {
  Plan p;
  p.model = "examples/gpt/model.onnx";
  p.numRanks = 2;
  p.dataParallel = 3;
  p.numStages = 4;
  p.numChunks = 2;
  p.numMicrobatches = 8;
  p.microbatchSize = 3;
  p.schedule = "zb-v";
  p.target = zb::Target::Cpu;
  p.data = "/data/gpt";
  p.paramsChecksum = "0123456789abcdef";
  p.optimizer = {zb::Optimizer::AdamW, 0.125, 0.8, 0.95, 1e-6, 0.5};
  p.params.push_back({"wte", {32, 8}, 0, 0, 0, {{0, 0}, {3, 0}}});
  p.params.push_back({"ln.bias", {8}, 1, 2, 1024, {}});
  p.inputs.push_back({"tokens", {4}, DType::Int64, 0, 0});
  p.inputs.push_back({"targets", {4}, DType::Int32, 0, 3});
  p.inputs.push_back({"mask", {4, 4}, DType::Float32, 1, 1});
  for (int32_t s = 0; s < 4; ++s)
    p.stages.push_back({s, s == 0 || s == 3 ? 0 : 1, 0.5 + s, 1.25, 0.75, 0.01,
                        4096 * (s + 1), 2048});
  p.predicted.push_back(
      {"1f1b", 0.3125, 1.5, {0.25, 0.375}, std::nullopt, std::nullopt});
  p.predicted.push_back({"zb-v", 0.0625, 1.25, {0.0625, 0.125},
                         JitterInfo{400, 0.1, 1.375, {0.09, 0.11}},
                         DataParallelPrediction{3, 12.5, 0.03125, 1.75, 0.25,
                                                0.125, 2.0, 0.5}});
  p.ranks.push_back({0,
                     "rank0.so",
                     "zb_rank_main",
                     {{ArgKind::Param, 0},
                      {ArgKind::Grad, 0},
                      {ArgKind::Input, 0},
                      {ArgKind::Input, 1}}});
  p.ranks.push_back({1,
                     "rank1.so",
                     "zb_rank_main",
                     {{ArgKind::Param, 1},
                      {ArgKind::Grad, 1},
                      {ArgKind::Input, 2},
                      {ArgKind::Loss, -1}}});
  p.ranks[0].sends = std::vector<SentMessage>{{1, 0, 1024}, {1, 2048, 96}};
  p.ranks[1].sends = std::vector<SentMessage>{{0, 3, 1024}};
  return p;
}

void expectSamePlan(const Plan &a, const Plan &b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.numRanks, b.numRanks);
  EXPECT_EQ(a.dataParallel, b.dataParallel);
  EXPECT_EQ(a.numStages, b.numStages);
  EXPECT_EQ(a.numChunks, b.numChunks);
  EXPECT_EQ(a.numMicrobatches, b.numMicrobatches);
  EXPECT_EQ(a.microbatchSize, b.microbatchSize);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.optimizer.kind, b.optimizer.kind);
  EXPECT_EQ(a.optimizer.lr, b.optimizer.lr);
  EXPECT_EQ(a.optimizer.beta1, b.optimizer.beta1);
  EXPECT_EQ(a.optimizer.beta2, b.optimizer.beta2);
  EXPECT_EQ(a.paramsChecksum, b.paramsChecksum);
  EXPECT_EQ(a.optimizer.eps, b.optimizer.eps);
  EXPECT_EQ(a.optimizer.weightDecay, b.optimizer.weightDecay);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    SCOPED_TRACE("params[" + std::to_string(i) + "]");
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].shape, b.params[i].shape);
    EXPECT_EQ(a.params[i].rank, b.params[i].rank);
    EXPECT_EQ(a.params[i].stage, b.params[i].stage);
    EXPECT_EQ(a.params[i].offsetBytes, b.params[i].offsetBytes);
    EXPECT_EQ(a.params[i].tiedCopies, b.params[i].tiedCopies);
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    SCOPED_TRACE("inputs[" + std::to_string(i) + "]");
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
    EXPECT_EQ(a.inputs[i].sampleShape, b.inputs[i].sampleShape);
    EXPECT_EQ(a.inputs[i].dtype, b.inputs[i].dtype);
    EXPECT_EQ(a.inputs[i].rank, b.inputs[i].rank);
    EXPECT_EQ(a.inputs[i].stage, b.inputs[i].stage);
  }
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    SCOPED_TRACE("stages[" + std::to_string(i) + "]");
    const StageCostInfo &x = a.stages[i], &y = b.stages[i];
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.tF, y.tF);
    EXPECT_EQ(x.tB, y.tB);
    EXPECT_EQ(x.tW, y.tW);
    EXPECT_EQ(x.tComm, y.tComm);
    EXPECT_EQ(x.mB, y.mB);
    EXPECT_EQ(x.mW, y.mW);
  }
  ASSERT_EQ(a.predicted.size(), b.predicted.size());
  for (size_t i = 0; i < a.predicted.size(); ++i) {
    const PredictedInfo &x = a.predicted[i], &y = b.predicted[i];
    SCOPED_TRACE("predicted." + x.schedule);
    EXPECT_EQ(x.schedule, y.schedule);
    EXPECT_EQ(x.bubbleRate, y.bubbleRate);
    EXPECT_EQ(x.makespanMs, y.makespanMs);
    EXPECT_EQ(x.rankBubbleRate, y.rankBubbleRate);
    ASSERT_EQ(x.dataParallel.has_value(), y.dataParallel.has_value());
    if (x.dataParallel) {
      EXPECT_EQ(x.dataParallel->dataParallel, y.dataParallel->dataParallel);
      EXPECT_EQ(x.dataParallel->bandwidthGBps, y.dataParallel->bandwidthGBps);
      EXPECT_EQ(x.dataParallel->latencyMs, y.dataParallel->latencyMs);
      EXPECT_EQ(x.dataParallel->stepMs, y.dataParallel->stepMs);
      EXPECT_EQ(x.dataParallel->bubbleRate, y.dataParallel->bubbleRate);
      EXPECT_EQ(x.dataParallel->exposedMs, y.dataParallel->exposedMs);
      EXPECT_EQ(x.dataParallel->afterBackwardStepMs,
                y.dataParallel->afterBackwardStepMs);
      EXPECT_EQ(x.dataParallel->afterBackwardExposedMs,
                y.dataParallel->afterBackwardExposedMs);
    }
    ASSERT_EQ(x.jitter.has_value(), y.jitter.has_value());
    if (x.jitter) {
      EXPECT_EQ(x.jitter->samples, y.jitter->samples);
      EXPECT_EQ(x.jitter->bubbleRate, y.jitter->bubbleRate);
      EXPECT_EQ(x.jitter->makespanMs, y.jitter->makespanMs);
      EXPECT_EQ(x.jitter->rankBubbleRate, y.jitter->rankBubbleRate);
    }
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    SCOPED_TRACE("ranks[" + std::to_string(r) + "]");
    EXPECT_EQ(a.ranks[r].rank, b.ranks[r].rank);
    EXPECT_EQ(a.ranks[r].library, b.ranks[r].library);
    EXPECT_EQ(a.ranks[r].entry, b.ranks[r].entry);
    ASSERT_EQ(a.ranks[r].args.size(), b.ranks[r].args.size());
    for (size_t j = 0; j < a.ranks[r].args.size(); ++j) {
      EXPECT_EQ(a.ranks[r].args[j].kind, b.ranks[r].args[j].kind) << j;
      EXPECT_EQ(a.ranks[r].args[j].index, b.ranks[r].args[j].index) << j;
    }
    EXPECT_EQ(a.ranks[r].sends, b.ranks[r].sends);
  }
}

TEST(Plan, WriteThenReadIsEqualFieldByField) {
  Plan written = fullPlan();
  std::string dir = tempPath("roundtrip");
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  std::string path = dir + "/plan.json";
  ASSERT_FALSE(!!writePlan(written, path));
  llvm::Expected<Plan> read = loadPlan(dir);
  ASSERT_TRUE(!!read) << llvm::toString(read.takeError());
  EXPECT_EQ(read->path, path);
  EXPECT_EQ(read->dir, dir);
  expectSamePlan(written, *read);
  // What the plan says about itself survives too.
  EXPECT_EQ(read->lossRank(), 1);
  ASSERT_NE(read->predictedForThisPlan(), nullptr);
  EXPECT_EQ(read->predictedForThisPlan()->schedule, "zb-v");
  EXPECT_EQ(read->argShape(read->ranks[0].args[2]),
            (std::vector<int64_t>{8, 3, 4}));
  llvm::sys::fs::remove_directories(dir);
}

/// D is a number of the run: absent means 1, and a checkpoint's plan hash
/// does not see it (the parameters fit every D).
TEST(Plan, DataParallelDefaultsToOneAndLeavesThePlanHash) {
  Plan p = fullPlan();
  llvm::json::Value v = toJSON(p);
  EXPECT_EQ(v.getAsObject()->getInteger("data_parallel"), 3);
  v.getAsObject()->erase("data_parallel");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << v;
  llvm::Expected<Plan> read = parsePlan(text, "out/plan.json");
  ASSERT_TRUE(!!read) << llvm::toString(read.takeError());
  EXPECT_EQ(read->dataParallel, 1);
  Plan other = p;
  other.dataParallel = 7;
  EXPECT_EQ(zb::formats::planHash(p), zb::formats::planHash(other));
  other.numMicrobatches = 4;
  EXPECT_NE(zb::formats::planHash(p), zb::formats::planHash(other));
}

TEST(Plan, SgdWritesNoAdamParameters) {
  Plan p = fullPlan();
  p.optimizer = OptimizerInfo{zb::Optimizer::Sgd, 0.05};
  llvm::json::Value v = toJSON(p);
  const llvm::json::Object *opt = v.getAsObject()->getObject("optimizer");
  ASSERT_NE(opt, nullptr);
  EXPECT_EQ(opt->size(), 2u);
  EXPECT_EQ(opt->getNumber("lr"), 0.05);
}

/// zb-compile's own plan.json files: read, write, the same bytes.
TEST(Plan, RewritesZbCompileOutputByteForByte) {
  for (const char *name : {"mlp-zb-h1", "mlp-profiled", "gpt-tied-adamw"}) {
    SCOPED_TRACE(name);
    std::string source =
        std::string(ZB_INPUTS_DIR) + "/compiled/" + name + ".plan.json";
    std::string text = readFile(source);
    llvm::Expected<Plan> plan = parsePlan(text, source);
    ASSERT_TRUE(!!plan) << llvm::toString(plan.takeError());
    std::string out = tempPath(std::string(name) + ".json");
    ASSERT_FALSE(!!writePlan(*plan, out));
    EXPECT_EQ(readFile(out), text);
    std::remove(out.c_str());
  }
}

/// The hand-written fixtures load, and read the same after a rewrite.
TEST(Plan, HandWrittenFixturesLoadAndRoundTrip) {
  for (const char *name :
       {"fake1", "fake1_adamw", "fake2", "fake2_badsize", "fake2_killed",
        "fake2_segv", "bad_entry", "bad_shape", "fake1_cuda", "mlir1"}) {
    SCOPED_TRACE(name);
    llvm::Expected<Plan> plan =
        loadPlan(std::string(ZB_INPUTS_DIR) + "/" + name);
    ASSERT_TRUE(!!plan) << llvm::toString(plan.takeError());
    llvm::Expected<Plan> again =
        parsePlan(llvm::formatv("{0:2}", toJSON(*plan)).str(), plan->path);
    ASSERT_TRUE(!!again) << llvm::toString(again.takeError());
    expectSamePlan(*plan, *again);
  }
}

/// parsePlan's message for fullPlan() changed by `edit`.
std::string errorAfter(const std::function<void(llvm::json::Object &)> &edit) {
  llvm::json::Value v = toJSON(fullPlan());
  edit(*v.getAsObject());
  llvm::Expected<Plan> plan =
      parsePlan(llvm::formatv("{0}", v).str(), "out/plan.json");
  if (plan)
    return "<no error>";
  return llvm::toString(plan.takeError());
}

llvm::json::Object &at(llvm::json::Object &o, llvm::StringRef key,
                       size_t index) {
  return *(*o.getArray(key))[index].getAsObject();
}

TEST(Plan, ReaderErrorsNameFileAndField) {
  using llvm::json::Object;
  struct Case {
    std::function<void(Object &)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](Object &o) { o.erase("num_ranks"); },
       "out/plan.json: num_ranks: missing"},
      {[](Object &o) { o["format"] = "zb-schedule"; },
       "out/plan.json: format: expected \"zb-plan\", got \"zb-schedule\""},
      {[](Object &o) { o["version"] = 2; },
       "out/plan.json: version: unsupported version 2 (this zb-run reads "
       "version 1)"},
      {[](Object &o) { o["num_stages"] = "four"; },
       "out/plan.json: num_stages: expected an integer"},
      {[](Object &o) { o["num_chunks"] = 0; },
       "out/plan.json: num_chunks: 0 out of range [1, 1024]"},
      {[](Object &o) { o["data_parallel"] = 0; },
       "out/plan.json: data_parallel: 0 out of range [1, 4096]"},
      {[](Object &o) { o["data_parallel"] = "two"; },
       "out/plan.json: data_parallel: expected an integer"},
      {[](Object &o) { o["params_checksum"] = "0123456789ABCDEF"; },
       "out/plan.json: params_checksum: must be 16 lower-case hex digits "
       "(the XXH3-64 of params.bin), got \"0123456789ABCDEF\""},
      {[](Object &o) { o["params_checksum"] = 7; },
       "out/plan.json: params_checksum: expected a string"},
      {[](Object &o) { (*o.getObject("optimizer"))["name"] = "lion"; },
       "out/plan.json: optimizer.name: unknown optimizer \"lion\" (expected "
       "\"sgd\" or \"adamw\")"},
      {[](Object &o) { (*o.getObject("optimizer"))["beta2"] = "x"; },
       "out/plan.json: optimizer.beta2: expected a number"},
      {[](Object &o) {
         at(o, "params", 0)["shape"] = llvm::json::Array{65536, 65536, 65536};
       },
       "out/plan.json: params[0].shape: more than 2^40 elements"},
      {[](Object &o) { (*o.getObject("optimizer"))["lr"] = 0; },
       "out/plan.json: optimizer.lr: 0 must be > 0 and a finite float32 "
       "(at most 3.4e38)"},
      {[](Object &o) { (*o.getObject("optimizer"))["lr"] = 1e39; },
       "out/plan.json: optimizer.lr: 1e+39 must be > 0 and a finite float32 "
       "(at most 3.4e38)"},
      {[](Object &o) {
         at(o, "ranks", 0)["library"] = std::string("rank0.so\0x", 10);
       },
       "out/plan.json: ranks[0].library: contains a NUL character (a file "
       "name cannot)"},
      {[](Object &o) { (*o.getObject("optimizer"))["beta1"] = 1; },
       "out/plan.json: optimizer.beta1: 1 must lie in (0, 1)"},
      {[](Object &o) { at(o, "ranks", 0)["library"] = "../rank0.so"; },
       "out/plan.json: ranks[0].library: '../rank0.so' must be a bare file "
       "name inside the plan directory (no '/', no '..')"},
      {[](Object &o) { at(o, "ranks", 1)["library"] = "/abs/rank1.so"; },
       "out/plan.json: ranks[1].library: '/abs/rank1.so' must be a bare "
       "file name inside the plan directory (no '/', no '..')"},
      {[](Object &o) { at(o, "params", 1)["offset_bytes"] = 1026; },
       "out/plan.json: params[1].offset_bytes: 1026 is not a multiple of 4"},
      {[](Object &o) { (*at(o, "params", 0).getArray("shape"))[1] = -8; },
       "out/plan.json: params[0].shape[1]: -8 out of range [0, 2147483647]"},
      {[](Object &o) {
         (*(*at(o, "params", 0).getArray("tied_copies"))[1]
               .getAsObject())["stage"] = 4;
       },
       "out/plan.json: params[0].tied_copies[1].stage: 4 out of range [0, "
       "3]"},
      {[](Object &o) { at(o, "inputs", 2)["dtype"] = "float16"; },
       "out/plan.json: inputs[2].dtype: unknown element type \"float16\" "
       "(expected float32, int64 or int32)"},
      {[](Object &o) { at(o, "inputs", 0)["rank"] = 2; },
       "out/plan.json: inputs[0].rank: 2 out of range [0, 1]"},
      {[](Object &o) { at(o, "stages", 3).erase("t_w"); },
       "out/plan.json: stages[3].t_w: missing"},
      {[](Object &o) { at(o, "stages", 1)["m_b"] = -1; },
       "out/plan.json: stages[1].m_b: -1 out of range [0, "
       "9223372036854775807]"},
      {[](Object &o) {
         (*(*o.getObject("predicted")).getObject("1f1b"))["rank_bubble_rate"] =
             llvm::json::Array{0.5};
       },
       "out/plan.json: predicted.1f1b.rank_bubble_rate: 1 values for 2 "
       "ranks"},
      {[](Object &o) {
         (*(*(*o.getObject("predicted")).getObject("zb-v")).getObject("jitter"))
             .erase("bubble_rate");
       },
       "out/plan.json: predicted.zb-v.jitter.bubble_rate: missing"},
      {[](Object &o) { o.getArray("ranks")->pop_back(); },
       "out/plan.json: ranks: 1 entries, but num_ranks is 2"},
      {[](Object &o) { at(o, "ranks", 1)["rank"] = 0; },
       "out/plan.json: ranks[1].rank: rank 0 appears twice"},
      {[](Object &o) { at(o, "ranks", 0)["entry"] = ""; },
       "out/plan.json: ranks[0].entry: empty"},
      {[](Object &o) {
         (*(*at(o, "ranks", 1).getArray("sends"))[0].getAsObject())["peer"] =
             1;
       },
       "out/plan.json: ranks[1].sends[0].peer: a rank does not send to "
       "itself"},
      {[](Object &o) {
         (*(*at(o, "ranks", 0).getArray("sends"))[1].getAsObject())["bytes"] =
             -4;
       },
       "out/plan.json: ranks[0].sends[1].bytes: -4 out of range [0, "
       "2147483647]"},
      {[](Object &o) {
         (*(*at(o, "ranks", 0).getArray("args"))[2].getAsObject())["kind"] =
             "weight";
       },
       "out/plan.json: ranks[0].args[2].kind: unknown kind \"weight\" "
       "(expected param, grad, input or loss)"},
      {[](Object &o) {
         (*(*at(o, "ranks", 0).getArray("args"))[3].getAsObject())["index"] = 3;
       },
       "out/plan.json: ranks[0].args[3].index: 3 out of range [0, 2]"},
      {[](Object &o) {
         at(o, "ranks", 0)
             .getArray("args")
             ->push_back(llvm::json::Object{{"kind", "loss"}});
       },
       "out/plan.json: ranks: expected exactly 1 argument(s) of kind \"loss\" "
       "over all ranks (one per direction), found 2"},
      {[](Object &o) { o["directions"] = 2; },
       "out/plan.json: ranks: expected exactly 2 argument(s) of kind \"loss\" "
       "over all ranks (one per direction), found 1"},
      {[](Object &o) { o["directions"] = 3; },
       "out/plan.json: directions: 3 out of range [1, 2]"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(errorAfter(c.edit), c.message);
}

TEST(Plan, ReaderErrorsOnTheDocument) {
  auto error = [](llvm::StringRef text) {
    llvm::Expected<Plan> p = parsePlan(text, "p.json");
    return p ? std::string("<no error>") : llvm::toString(p.takeError());
  };
  EXPECT_EQ(error("[1, 2]"), "p.json: (root): expected an object");
  EXPECT_EQ(error("{\"format\": "),
            "p.json: invalid JSON: [1:11, byte=11]: Unexpected EOF");
  llvm::Expected<Plan> missing = loadPlan(tempPath("nowhere"));
  ASSERT_FALSE(!!missing);
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("nowhere/plan.json: cannot read: "),
            std::string::npos);
}

} // namespace

namespace {
/// checkPlanLimits's error for `plan` ("" when it passes), and whether
/// plan.json's reader, a second code path over the same table
/// (zb/Support/Limits.h), refuses the written plan too.
std::pair<std::string, bool> limitVerdicts(const Plan &plan,
                                           const std::string &name) {
  std::string message;
  if (llvm::Error e = checkPlanLimits(plan))
    message = llvm::toString(std::move(e));
  std::string dir = tempPath("limits-" + name);
  EXPECT_FALSE(llvm::sys::fs::create_directories(dir));
  EXPECT_FALSE(!!writePlan(plan, dir + "/plan.json"));
  llvm::Expected<Plan> read = loadPlan(dir);
  bool refused = !read;
  if (!read)
    llvm::consumeError(read.takeError());
  llvm::sys::fs::remove_directories(dir);
  return {message, refused};
}
} // namespace

// Issue 40: what zb-compile checks before it generates code is what zb-run's
// reader accepts: each value just past its limit is refused by both, naming
// the model's input or parameter; at the limit both accept.
TEST(Plan, LimitsAreCheckedAsTheReaderChecksThem) {
  EXPECT_EQ(limitVerdicts(fullPlan(), "ok"), std::make_pair(std::string(), false));

  Plan atLimit = fullPlan();
  atLimit.microbatchSize = zb::limits::kMaxMicrobatchSize;
  atLimit.params[0].shape = {int64_t(1) << 20, int64_t(1) << 20};
  atLimit.ranks[0].sends->front().bytes = zb::limits::kMaxMessageBytes;
  EXPECT_EQ(limitVerdicts(atLimit, "at"), std::make_pair(std::string(), false));
  atLimit = fullPlan();
  atLimit.numMicrobatches = zb::limits::kMaxMicrobatches;
  EXPECT_EQ(limitVerdicts(atLimit, "at-m"),
            std::make_pair(std::string(), false));

  Plan mb = fullPlan();
  mb.microbatchSize = zb::limits::kMaxMicrobatchSize + 1;
  auto [mbError, mbRefused] = limitVerdicts(mb, "mb");
  EXPECT_EQ(mbError,
            "input 'tokens': its first dimension, the microbatch size, is "
            "16777217; zb-run accepts at most 16777216: export the model "
            "with a smaller batch (its first dimension is one microbatch) and "
            "train with more --microbatches");
  EXPECT_TRUE(mbRefused);

  Plan many = fullPlan();
  many.numMicrobatches = zb::limits::kMaxMicrobatches + 1;
  auto [manyError, manyRefused] = limitVerdicts(many, "many");
  EXPECT_EQ(manyError, "the number of microbatches is 1048577; zb-run accepts "
                       "at most 1048576: use fewer --microbatches");
  EXPECT_TRUE(manyRefused);

  Plan big = fullPlan();
  big.params[0].shape = {int64_t(1) << 21, int64_t(1) << 20};
  auto [bigError, bigRefused] = limitVerdicts(big, "big");
  EXPECT_EQ(bigError, "parameter 'wte': more than 1099511627776 elements "
                      "(2^40); zb-run accepts at most that many in one "
                      "tensor: use a smaller model or microbatch");
  EXPECT_TRUE(bigRefused);

  Plan wide = fullPlan();
  wide.params[1].shape = {int64_t(1) << 31};
  auto [wideError, wideRefused] = limitVerdicts(wide, "wide");
  EXPECT_EQ(wideError, "parameter 'ln.bias': dimension 0 is 2147483648; "
                       "zb-run accepts dimensions up to 2147483647");
  EXPECT_TRUE(wideRefused);

  Plan message = fullPlan();
  message.ranks[0].sends->front().bytes = zb::limits::kMaxMessageBytes + 1;
  auto [messageError, messageRefused] = limitVerdicts(message, "message");
  EXPECT_NE(messageError.find("a message from rank 0 to rank 1 (tag "),
            std::string::npos)
      << messageError;
  EXPECT_NE(messageError.find("in bytes is 2147483648; zb-run accepts at "
                              "most 2147483647"),
            std::string::npos)
      << messageError;
  EXPECT_TRUE(messageRefused);

  // An input's microbatch (sample x microbatch size) past 2^40 elements:
  // zb-compile refuses it (zb-run would fail allocating it).
  Plan input = fullPlan();
  input.inputs[2].sampleShape = {int64_t(1) << 20, int64_t(1) << 19};
  EXPECT_EQ(limitVerdicts(input, "input").first,
            "input 'mask': more than 1099511627776 elements (2^40) in a "
            "microbatch; zb-run accepts at most that many in one tensor: use "
            "a smaller model or microbatch");
  // A step's batch of an input past 2^40 elements: both refuse it.
  Plan step = fullPlan();
  step.numMicrobatches = zb::limits::kMaxMicrobatches;
  step.microbatchSize = int64_t(1) << 17;
  auto [stepError, stepRefused] = limitVerdicts(step, "step");
  EXPECT_EQ(stepError, "input 'mask': a step's batch (1048576 microbatches "
                       "of 131072 samples) is more than 1099511627776 "
                       "elements (2^40); zb-run reads it whole: use fewer "
                       "--microbatches or a smaller batch");
  EXPECT_TRUE(stepRefused);
}
