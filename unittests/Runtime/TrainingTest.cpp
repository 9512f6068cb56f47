//===- TrainingTest.cpp - lr schedules, weight-decay groups (Training.h) --===//
//
// The learning-rate schedules against PyTorch's schedulers stepped by
// PyTorch itself (Inputs/lr_schedules_torch.json, 12 settings, written by
// python/export/lr_schedule_fixtures.py with torch.optim.AdamW and
// torch.optim.lr_scheduler), the weight-decay groups on hand-made plans, the
// settings' JSON round trip and their errors, and zb-run's resolution of
// plan, checkpoint and flags (resolveTrainingSettings).
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Training.h"
#include "zb/Runner/Runner.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace zb::formats;
using namespace zb::runner;

namespace {

std::string errorOf(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : "<no error>";
}
template <typename T> std::string errorOf(llvm::Expected<T> v) {
  return v ? "<no error>" : llvm::toString(v.takeError());
}

TEST(LrScheduleTest, MatchesPyTorchSchedulers) {
  auto buffer = llvm::MemoryBuffer::getFile(ZB_INPUTS_DIR
                                            "/lr_schedules_torch.json");
  ASSERT_TRUE(bool(buffer)) << "missing Inputs/lr_schedules_torch.json";
  llvm::Expected<llvm::json::Value> doc =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const llvm::json::Array *cases = doc->getAsObject()->getArray("schedules");
  ASSERT_TRUE(cases);
  ASSERT_GE(cases->size(), 6u);
  int kinds[3] = {0, 0, 0};
  for (const llvm::json::Value &c : *cases) {
    const llvm::json::Object &o = *c.getAsObject();
    LrSchedule s;
    llvm::Expected<LrScheduleKind> kind =
        parseLrSchedule(*o.getString("schedule"));
    ASSERT_TRUE(bool(kind));
    s.kind = *kind;
    ++kinds[(int)s.kind];
    s.lr = *o.getNumber("lr");
    s.warmupSteps = *o.getInteger("warmup_steps");
    s.decaySteps = *o.getInteger("decay_steps");
    s.minLr = *o.getNumber("min_lr");
    ASSERT_FALSE(checkLrSchedule(s));
    const llvm::json::Array &lrs = *o.getArray("lrs");
    ASSERT_FALSE(lrs.empty());
    for (size_t i = 0; i < lrs.size(); ++i) {
      const double torch = *lrs[i].getAsNumber(), zb = s.at((int64_t)i + 1);
      EXPECT_NEAR(zb, torch, 1e-12 * s.lr)
          << lrScheduleName(s.kind).str() << " W=" << s.warmupSteps
          << " D=" << s.decaySteps << " step " << i + 1;
    }
  }
  EXPECT_GT(kinds[0], 0);
  EXPECT_GT(kinds[1], 0);
  EXPECT_GT(kinds[2], 0);
}

TEST(LrScheduleTest, ShapeByHand) {
  LrSchedule s{LrScheduleKind::Cosine, 1.0, 4, 14, 0.1};
  EXPECT_DOUBLE_EQ(s.at(1), 0.25); // warmup 1/4
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(5), 1.0);  // t = 0: the peak again
  EXPECT_DOUBLE_EQ(s.at(14), 0.1); // reaches the floor at D
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
  // Halfway (t = T / 2 = 4.5 is not a step; T = 9, step 9.5): the mean of
  // lr and floor lies between steps 9 and 10.
  EXPECT_GT(s.at(9), 0.55);
  EXPECT_LT(s.at(10), 0.55);
  s.kind = LrScheduleKind::Linear;
  EXPECT_DOUBLE_EQ(s.at(5), 1.0);
  EXPECT_NEAR(s.at(8), 1.0 - 0.9 * 3 / 9, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(20), 0.1);
  s.kind = LrScheduleKind::Constant;
  EXPECT_DOUBLE_EQ(s.at(3), 0.75);
  EXPECT_DOUBLE_EQ(s.at(100), 1.0);
  LrSchedule none{LrScheduleKind::Constant, 0.5, 0, 0, 0};
  EXPECT_DOUBLE_EQ(none.at(1), 0.5);
}

TEST(LrScheduleTest, Errors) {
  EXPECT_EQ(errorOf(checkLrSchedule({LrScheduleKind::Cosine, 1, 5, 5, 0})),
            "--decay-steps 5 must exceed --warmup-steps 5 (the cosine decay "
            "runs from step W+1 to D)");
  EXPECT_EQ(errorOf(checkLrSchedule({LrScheduleKind::Linear, 1, 0, 9, 2})),
            "--min-lr must be in [0, lr = 1], got 2");
  EXPECT_EQ(errorOf(checkLrSchedule({LrScheduleKind::Constant, 1, -1, 0, 0})),
            "--warmup-steps must be >= 0, got -1");
  EXPECT_NE(errorOf(checkLrSchedule({LrScheduleKind::Constant, 0, 0, 0, 0})),
            "<no error>");
  EXPECT_EQ(errorOf(parseLrSchedule("step")),
            "must be constant, cosine or linear, got 'step'");
}

Plan planWithParams() {
  Plan plan;
  auto add = [&](const char *name, std::vector<int64_t> shape) {
    ParamInfo p;
    p.name = name;
    p.shape = std::move(shape);
    plan.params.push_back(p);
  };
  add("transformer.wte.weight", {96, 32});
  add("transformer.wpe.weight", {16, 32});
  add("model.embed_tokens.weight", {96, 32});
  add("h.0.ln_1.weight", {32});
  add("h.0.attn.c_attn.weight", {32, 96});
  add("h.0.attn.c_attn.bias", {96});
  add("lm_head.weight", {96, 32});
  add("scale", {});
  return plan;
}

TEST(WeightDecayMaskTest, Groups) {
  Plan plan = planWithParams();
  using V = std::vector<bool>;
  auto mask = [&](llvm::StringRef spec) {
    llvm::Expected<V> m = weightDecayMask(plan, spec);
    EXPECT_TRUE(bool(m)) << errorOf(m.takeError());
    return m ? *m : V{};
  };
  // Default: 1-D (and 0-D) and embeddings undecayed.
  EXPECT_EQ(mask("1d,embeddings"),
            (V{false, false, false, false, true, false, true, false}));
  // nanoGPT's rule: every tensor of 2 or more dimensions decays.
  EXPECT_EQ(mask("1d"), (V{true, true, true, false, true, false, true, false}));
  EXPECT_EQ(mask(""), V(8, true));
  EXPECT_EQ(mask("none"), V(8, true));
  EXPECT_EQ(mask(" lm_head.* , *.bias"),
            (V{true, true, true, true, true, false, false, true}));
  EXPECT_EQ(mask("h.[0-9].*"),
            (V{true, true, true, false, false, false, true, true}));
  EXPECT_NE(errorOf(weightDecayMask(plan, "1d,[a-")).find(
                "--no-decay: bad pattern '[a-'"),
            std::string::npos);
}

TEST(TrainingSettingsTest, JsonRoundTripAndErrors) {
  TrainingSettings s;
  s.optimizer = zb::Optimizer::AdamW;
  s.lr = {LrScheduleKind::Cosine, 6e-4, 100, 5000, 6e-5};
  s.beta1 = 0.9;
  s.beta2 = 0.95;
  s.eps = 1e-8;
  s.weightDecay = 0.1;
  s.noDecay = "1d";
  llvm::Expected<TrainingSettings> back =
      parseTrainingSettings(toJSON(s), "c.json");
  ASSERT_TRUE(bool(back)) << errorOf(back.takeError());
  EXPECT_EQ(back->lr.kind, s.lr.kind);
  EXPECT_EQ(back->lr.lr, s.lr.lr);
  EXPECT_EQ(back->lr.warmupSteps, 100);
  EXPECT_EQ(back->lr.decaySteps, 5000);
  EXPECT_EQ(back->lr.minLr, 6e-5);
  EXPECT_EQ(back->beta2, 0.95);
  EXPECT_EQ(back->weightDecay, 0.1);
  EXPECT_EQ(back->noDecay, "1d");

  llvm::json::Value bad = toJSON(s);
  bad.getAsObject()->erase("warmup_steps");
  EXPECT_EQ(errorOf(parseTrainingSettings(bad, "c.json")),
            "c.json: \"training\": \"warmup_steps\" must be an integer");
  bad = toJSON(s);
  (*bad.getAsObject())["beta1"] = 1.0;
  EXPECT_EQ(errorOf(parseTrainingSettings(bad, "c.json")),
            "c.json: \"training\": --betas: the first beta must be in [0, 1), "
            "got 1");

  TrainingSettings sgd;
  sgd.optimizer = zb::Optimizer::Sgd;
  sgd.weightDecay = 0.1;
  EXPECT_EQ(errorOf(checkTrainingSettings(sgd)),
            "--weight-decay needs AdamW: compile the plan with zb-compile "
            "--optimizer adamw");
  s.weightDecay = 1e4;
  s.lr.lr = 1e-3;
  EXPECT_NE(errorOf(checkTrainingSettings(s)).find("must stay > 0"),
            std::string::npos);
}

TEST(TrainingSettingsTest, PlanThenCheckpointThenFlags) {
  Plan plan;
  plan.optimizer.kind = zb::Optimizer::AdamW;
  plan.optimizer.lr = 0.01;
  plan.optimizer.weightDecay = 0.02;
  TrainingFlags flags;
  // The plan's alone: a constant lr, its weight decay.
  llvm::Expected<TrainingSettings> s =
      resolveTrainingSettings(flags, plan, std::nullopt, 50);
  ASSERT_TRUE(bool(s)) << errorOf(s.takeError());
  EXPECT_EQ(s->lr.kind, LrScheduleKind::Constant);
  EXPECT_EQ(s->lr.lr, 0.01);
  EXPECT_EQ(s->weightDecay, 0.02);
  EXPECT_EQ(s->noDecay, "1d,embeddings");
  // A cosine schedule without --decay-steps decays until the run's end.
  flags.lrSchedule = LrScheduleKind::Cosine;
  flags.warmupSteps = 5;
  s = resolveTrainingSettings(flags, plan, std::nullopt, 50);
  ASSERT_TRUE(bool(s));
  EXPECT_EQ(s->lr.decaySteps, 50);
  // A checkpoint's settings continue: its decay end, not this run's.
  TrainingSettings saved = *s;
  saved.lr.decaySteps = 80;
  saved.beta2 = 0.95;
  s = resolveTrainingSettings(TrainingFlags{}, plan, saved, 120);
  ASSERT_TRUE(bool(s));
  EXPECT_EQ(s->lr.kind, LrScheduleKind::Cosine);
  EXPECT_EQ(s->lr.decaySteps, 80);
  EXPECT_EQ(s->beta2, 0.95);
  // Flags win over the checkpoint.
  TrainingFlags more;
  more.decaySteps = 200;
  more.minLr = 0.001;
  s = resolveTrainingSettings(more, plan, saved, 120);
  ASSERT_TRUE(bool(s));
  EXPECT_EQ(s->lr.decaySteps, 200);
  EXPECT_EQ(s->lr.minLr, 0.001);
  // A decay end that defaults to a run shorter than the warmup.
  TrainingFlags shortRun;
  shortRun.lrSchedule = LrScheduleKind::Linear;
  shortRun.warmupSteps = 10;
  EXPECT_EQ(errorOf(resolveTrainingSettings(shortRun, plan, std::nullopt, 4)),
            "the linear decay ends at the run's last step, 4 (the default "
            "--decay-steps), which must exceed --warmup-steps 10: give "
            "--decay-steps or more --steps");
  more.warmupSteps = 300;
  EXPECT_EQ(errorOf(resolveTrainingSettings(more, plan, saved, 120)),
            "--decay-steps 200 must exceed --warmup-steps 300 (the cosine "
            "decay runs from step W+1 to D)");
}

} // namespace
