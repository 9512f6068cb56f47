//===- Training.cpp - A training run's optimizer settings -----------------===//
//
// See zb/Formats/Training.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Training.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace zb::formats;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A number as %g prints it (formatv's default for doubles is fixed-point).
std::string g(double x) { return llvm::formatv("{0}", llvm::format("%g", x)).str(); }

constexpr std::pair<LrScheduleKind, StringLiteral> kLrSchedules[] = {
    {LrScheduleKind::Constant, "constant"},
    {LrScheduleKind::Cosine, "cosine"},
    {LrScheduleKind::Linear, "linear"},
};

} // namespace

StringRef zb::formats::lrScheduleName(LrScheduleKind kind) {
  for (const auto &[k, name] : kLrSchedules)
    if (k == kind)
      return name;
  return "?";
}

Expected<LrScheduleKind> zb::formats::parseLrSchedule(StringRef name) {
  for (const auto &[k, n] : kLrSchedules)
    if (n == name)
      return k;
  return makeError("must be constant, cosine or linear, got '" + name + "'");
}

double LrSchedule::at(int64_t step) const {
  if (step <= warmupSteps)
    return lr * (double)step / (double)warmupSteps;
  if (kind == LrScheduleKind::Constant)
    return lr;
  const int64_t t = step - warmupSteps - 1, total = decaySteps - warmupSteps - 1;
  const double f =
      total <= 0 ? 1.0 : (double)std::min(t, total) / (double)total;
  if (kind == LrScheduleKind::Cosine)
    return minLr + (lr - minLr) * (1.0 + std::cos(llvm::numbers::pi * f)) / 2;
  return lr + (minLr - lr) * f;
}

Error zb::formats::checkLrSchedule(const LrSchedule &s) {
  if (!isValidLearningRate(s.lr))
    return makeError(formatv("--lr must be a finite float32 number > 0 (at "
                             "most 3.4e38), got {0}",
                             g(s.lr)));
  if (!(s.minLr >= 0) || !(s.minLr <= s.lr))
    return makeError(formatv("--min-lr must be in [0, lr = {0}], got {1}",
                             g(s.lr), g(s.minLr)));
  if (s.warmupSteps < 0)
    return makeError(
        formatv("--warmup-steps must be >= 0, got {0}", s.warmupSteps));
  if (s.kind != LrScheduleKind::Constant && s.decaySteps <= s.warmupSteps)
    return makeError(formatv("--decay-steps {0} must exceed --warmup-steps "
                             "{1} (the {2} decay runs from step W+1 to D)",
                             s.decaySteps, s.warmupSteps,
                             lrScheduleName(s.kind)));
  return Error::success();
}

TrainingSettings zb::formats::trainingSettings(const OptimizerInfo &o) {
  TrainingSettings s;
  s.optimizer = o.kind;
  s.lr.lr = o.lr;
  s.beta1 = o.beta1;
  s.beta2 = o.beta2;
  s.eps = o.eps;
  s.weightDecay = o.kind == Optimizer::AdamW ? o.weightDecay : 0.0;
  return s;
}

Error zb::formats::checkTrainingSettings(const TrainingSettings &s) {
  if (Error e = checkLrSchedule(s.lr))
    return e;
  for (auto [flag, beta] : {std::pair{"first", s.beta1}, {"second", s.beta2}})
    if (!(beta >= 0 && beta < 1))
      return makeError(formatv("--betas: the {0} beta must be in [0, 1), got "
                               "{1}",
                               flag, g(beta)));
  if (!(s.eps > 0) || !std::isfinite(s.eps))
    return makeError(formatv("--eps must be a finite number > 0, got {0}",
                             g(s.eps)));
  if (!(s.weightDecay >= 0) || !std::isfinite(s.weightDecay))
    return makeError(formatv("--weight-decay must be a finite number >= 0, "
                             "got {0}",
                             g(s.weightDecay)));
  if (s.weightDecay > 0 && s.optimizer != Optimizer::AdamW)
    return makeError("--weight-decay needs AdamW: compile the plan with "
                     "zb-compile --optimizer adamw");
  if (s.lr.lr * s.weightDecay >= 1)
    return makeError(formatv("--weight-decay {0} with --lr {1}: AdamW "
                             "multiplies the parameters by 1 - lr * "
                             "weight_decay, which must stay > 0",
                             g(s.weightDecay), g(s.lr.lr)));
  return Error::success();
}

json::Value zb::formats::toJSON(const TrainingSettings &s) {
  return json::Object{{"optimizer", zb::optimizerName(s.optimizer)},
                      {"lr_schedule", lrScheduleName(s.lr.kind)},
                      {"lr", s.lr.lr},
                      {"warmup_steps", s.lr.warmupSteps},
                      {"decay_steps", s.lr.decaySteps},
                      {"min_lr", s.lr.minLr},
                      {"beta1", s.beta1},
                      {"beta2", s.beta2},
                      {"eps", s.eps},
                      {"weight_decay", s.weightDecay},
                      {"no_decay", s.noDecay}};
}

Expected<TrainingSettings>
zb::formats::parseTrainingSettings(const json::Value &v, StringRef path) {
  auto fail = [&](const Twine &what) {
    return makeError(path + ": \"training\": " + what);
  };
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("must be an object");
  TrainingSettings s;
  std::optional<StringRef> opt = o->getString("optimizer");
  Expected<zb::Optimizer> kind =
      opt ? zb::parseOptimizer(*opt) : Expected<zb::Optimizer>(makeError("absent"));
  if (!kind)
    return fail("\"optimizer\" " + toString(kind.takeError()));
  s.optimizer = *kind;
  std::optional<StringRef> sched = o->getString("lr_schedule");
  Expected<LrScheduleKind> lrKind =
      sched ? parseLrSchedule(*sched) : Expected<LrScheduleKind>(makeError("absent"));
  if (!lrKind)
    return fail("\"lr_schedule\" " + toString(lrKind.takeError()));
  s.lr.kind = *lrKind;
  for (auto [key, out] :
       {std::pair{"lr", &s.lr.lr}, {"min_lr", &s.lr.minLr},
        {"beta1", &s.beta1}, {"beta2", &s.beta2}, {"eps", &s.eps},
        {"weight_decay", &s.weightDecay}}) {
    std::optional<double> d = o->getNumber(key);
    if (!d)
      return fail(formatv("\"{0}\" must be a number", key));
    *out = *d;
  }
  for (auto [key, out] : {std::pair{"warmup_steps", &s.lr.warmupSteps},
                          {"decay_steps", &s.lr.decaySteps}}) {
    std::optional<int64_t> i = o->getInteger(key);
    if (!i)
      return fail(formatv("\"{0}\" must be an integer", key));
    *out = *i;
  }
  std::optional<StringRef> noDecay = o->getString("no_decay");
  if (!noDecay)
    return fail("\"no_decay\" must be a string");
  s.noDecay = noDecay->str();
  if (Error e = checkTrainingSettings(s))
    return fail(toString(std::move(e)));
  return s;
}

Expected<std::vector<bool>> zb::formats::weightDecayMask(const Plan &plan,
                                                         StringRef spec) {
  bool oneDim = false;
  std::vector<GlobPattern> globs;
  auto addGlob = [&](StringRef text) -> Error {
    Expected<GlobPattern> g = GlobPattern::create(text);
    if (!g)
      return makeError("--no-decay: bad pattern '" + text +
                       "': " + toString(g.takeError()));
    globs.push_back(std::move(*g));
    return Error::success();
  };
  SmallVector<StringRef> items;
  spec.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef raw : items) {
    StringRef item = raw.trim();
    if (item.empty() || item == "none")
      continue;
    if (item == "1d") {
      oneDim = true;
      continue;
    }
    static const StringRef kEmbeddings[] = {"*emb*", "*wte*", "*wpe*"};
    ArrayRef<StringRef> patterns =
        item == "embeddings" ? ArrayRef<StringRef>(kEmbeddings)
                             : ArrayRef<StringRef>(item);
    for (StringRef g : patterns)
      if (Error e = addGlob(g))
        return std::move(e);
  }
  std::vector<bool> decay;
  decay.reserve(plan.params.size());
  for (const ParamInfo &p : plan.params)
    decay.push_back(!(oneDim && p.shape.size() < 2) &&
                    llvm::none_of(globs, [&](const GlobPattern &g) {
                      return g.match(p.name);
                    }));
  return decay;
}
