//===- Plan.cpp - zb-run: plan.json reader --------------------------------===//

#include "Plan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace zb::run;

int64_t ParamInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t InputInfo::sampleElements() const {
  int64_t n = 1;
  for (int64_t d : sampleShape)
    n *= d;
  return n;
}

const char *zb::run::dtypeName(DType t) {
  switch (t) {
  case DType::Float32:
    return "float32";
  case DType::Int64:
    return "int64";
  case DType::Int32:
    return "int32";
  }
  return "?";
}

int64_t zb::run::dtypeBytes(DType t) { return t == DType::Int64 ? 8 : 4; }

std::vector<int64_t> Plan::argShape(const ArgInfo &arg) const {
  switch (arg.kind) {
  case ArgKind::Param:
  case ArgKind::Grad:
    return params[arg.index].shape;
  case ArgKind::Input: {
    std::vector<int64_t> shape = {numMicrobatches, microbatchSize};
    const auto &sample = inputs[arg.index].sampleShape;
    shape.insert(shape.end(), sample.begin(), sample.end());
    return shape;
  }
  case ArgKind::Loss:
    return {};
  }
  return {};
}

int32_t Plan::lossRank() const {
  for (const RankInfo &r : ranks)
    for (const ArgInfo &a : r.args)
      if (a.kind == ArgKind::Loss)
        return r.rank;
  return -1;
}

namespace {

/// Field accessors that produce "<file>: <field path>: <problem>" errors.
class Reader {
public:
  explicit Reader(StringRef file) : file(file.str()) {}

  Error error(const Twine &field, const Twine &message) const {
    return createStringError(inconvertibleErrorCode(),
                             file + ": " + field + ": " + message);
  }

  Expected<const json::Object *> object(const json::Value *v,
                                        const Twine &field) const {
    if (!v)
      return error(field, "missing");
    if (const json::Object *o = v->getAsObject())
      return o;
    return error(field, "expected an object");
  }
  Expected<const json::Array *> array(const json::Object &o, StringRef key,
                                      const Twine &field) const {
    const json::Value *v = o.get(key);
    if (!v)
      return error(field, "missing");
    if (const json::Array *a = v->getAsArray())
      return a;
    return error(field, "expected an array");
  }
  Expected<int64_t>
  integer(const json::Object &o, StringRef key, const Twine &field, int64_t min,
          int64_t max = std::numeric_limits<int64_t>::max()) const {
    const json::Value *v = o.get(key);
    if (!v)
      return error(field, "missing");
    return integerValue(*v, field, min, max);
  }
  Expected<int64_t> integerValue(const json::Value &v, const Twine &field,
                                 int64_t min, int64_t max) const {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i)
      return error(field, "expected an integer");
    if (*i < min || *i > max)
      return error(field,
                   formatv("{0} out of range [{1}, {2}]", *i, min, max).str());
    return *i;
  }
  Expected<double> number(const json::Object &o, StringRef key,
                          const Twine &field) const {
    const json::Value *v = o.get(key);
    if (!v)
      return error(field, "missing");
    if (std::optional<double> d = v->getAsNumber())
      return *d;
    return error(field, "expected a number");
  }
  /// An array of numbers, one per rank (`count` entries).
  Expected<std::vector<double>> perRank(const json::Object &o, StringRef key,
                                        const Twine &field,
                                        int64_t count) const {
    auto arr = array(o, key, field);
    if (!arr)
      return arr.takeError();
    if ((int64_t)(*arr)->size() != count)
      return error(field, formatv("{0} values for {1} ranks", (*arr)->size(),
                                  count)
                              .str());
    std::vector<double> out;
    for (auto [i, v] : enumerate(**arr)) {
      std::optional<double> d = v.getAsNumber();
      if (!d)
        return error(field + "[" + Twine(i) + "]", "expected a number");
      out.push_back(*d);
    }
    return out;
  }
  Expected<std::string> string(const json::Object &o, StringRef key,
                               const Twine &field) const {
    const json::Value *v = o.get(key);
    if (!v)
      return error(field, "missing");
    if (std::optional<StringRef> s = v->getAsString())
      return s->str();
    return error(field, "expected a string");
  }
  Expected<std::vector<int64_t>> shape(const json::Object &o, StringRef key,
                                       const Twine &field) const {
    auto arr = array(o, key, field);
    if (!arr)
      return arr.takeError();
    std::vector<int64_t> dims;
    for (auto [i, v] : enumerate(**arr)) {
      auto d = integerValue(v, field + "[" + Twine(i) + "]", 0,
                            std::numeric_limits<int32_t>::max());
      if (!d)
        return d.takeError();
      dims.push_back(*d);
    }
    return dims;
  }

private:
  std::string file;
};

#define ZB_ASSIGN(lhs, expr)                                                   \
  do {                                                                         \
    auto zbTmp = (expr);                                                       \
    if (!zbTmp)                                                                \
      return zbTmp.takeError();                                                \
    lhs = std::move(*zbTmp);                                                   \
  } while (false)

} // namespace

Expected<Plan> zb::run::parsePlan(StringRef text, StringRef path) {
  Reader rd(path);
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return createStringError(
        inconvertibleErrorCode(),
        path + ": invalid JSON: " + toString(parsed.takeError()));
  const json::Object *root = nullptr;
  ZB_ASSIGN(root, rd.object(&*parsed, "(root)"));

  Plan plan;
  plan.path = path.str();
  plan.dir = sys::path::parent_path(path).str();
  if (plan.dir.empty())
    plan.dir = ".";

  std::string format;
  ZB_ASSIGN(format, rd.string(*root, "format", "format"));
  if (format != "zb-plan")
    return rd.error("format", "expected \"zb-plan\", got \"" + format + "\"");
  int64_t version = 0;
  ZB_ASSIGN(version, rd.integer(*root, "version", "version", 0));
  if (version != 1)
    return rd.error("version", formatv("unsupported version {0} (this zb-run "
                                       "reads version 1)",
                                       version)
                                   .str());
  if (root->get("model"))
    ZB_ASSIGN(plan.model, rd.string(*root, "model", "model"));
  int64_t v = 0;
  ZB_ASSIGN(v, rd.integer(*root, "num_ranks", "num_ranks", 1, 4096));
  plan.numRanks = (int32_t)v;
  ZB_ASSIGN(v, rd.integer(*root, "num_stages", "num_stages", 1, 1024));
  plan.numStages = (int32_t)v;
  ZB_ASSIGN(plan.numMicrobatches, rd.integer(*root, "num_microbatches",
                                             "num_microbatches", 1, 1 << 20));
  ZB_ASSIGN(plan.microbatchSize, rd.integer(*root, "microbatch_size",
                                            "microbatch_size", 1, 1 << 24));
  if (root->get("schedule"))
    ZB_ASSIGN(plan.schedule, rd.string(*root, "schedule", "schedule"));
  if (root->get("data"))
    ZB_ASSIGN(plan.data, rd.string(*root, "data", "data"));

  // optimizer
  if (const json::Value *ov = root->get("optimizer")) {
    const json::Object *o = nullptr;
    ZB_ASSIGN(o, rd.object(ov, "optimizer"));
    OptimizerInfo &opt = plan.optimizer;
    ZB_ASSIGN(opt.name, rd.string(*o, "name", "optimizer.name"));
    if (opt.name != "sgd" && opt.name != "adamw")
      return rd.error("optimizer.name",
                      "unknown optimizer \"" + opt.name +
                          "\" (expected \"sgd\" or \"adamw\")");
    ZB_ASSIGN(opt.lr, rd.number(*o, "lr", "optimizer.lr"));
    auto optional = [&](StringRef key, double &out) -> Error {
      if (!o->get(key))
        return Error::success();
      auto d = rd.number(*o, key, "optimizer." + key);
      if (!d)
        return d.takeError();
      out = *d;
      return Error::success();
    };
    if (Error e = optional("beta1", opt.beta1))
      return std::move(e);
    if (Error e = optional("beta2", opt.beta2))
      return std::move(e);
    if (Error e = optional("eps", opt.eps))
      return std::move(e);
    if (Error e = optional("weight_decay", opt.weightDecay))
      return std::move(e);
  }

  // params
  const json::Array *params = nullptr;
  ZB_ASSIGN(params, rd.array(*root, "params", "params"));
  for (auto [i, pv] : enumerate(*params)) {
    std::string field = formatv("params[{0}]", i).str();
    const json::Object *o = nullptr;
    ZB_ASSIGN(o, rd.object(&pv, field));
    ParamInfo p;
    ZB_ASSIGN(p.name, rd.string(*o, "name", field + ".name"));
    ZB_ASSIGN(p.shape, rd.shape(*o, "shape", field + ".shape"));
    ZB_ASSIGN(v, rd.integer(*o, "rank", field + ".rank", 0, plan.numRanks - 1));
    p.rank = (int32_t)v;
    ZB_ASSIGN(v,
              rd.integer(*o, "stage", field + ".stage", 0, plan.numStages - 1));
    p.stage = (int32_t)v;
    ZB_ASSIGN(p.offsetBytes,
              rd.integer(*o, "offset_bytes", field + ".offset_bytes", 0));
    if (p.offsetBytes % 4 != 0)
      return rd.error(
          field + ".offset_bytes",
          formatv("{0} is not a multiple of 4", p.offsetBytes).str());
    plan.params.push_back(std::move(p));
  }

  // inputs
  const json::Array *inputs = nullptr;
  ZB_ASSIGN(inputs, rd.array(*root, "inputs", "inputs"));
  for (auto [i, iv] : enumerate(*inputs)) {
    std::string field = formatv("inputs[{0}]", i).str();
    const json::Object *o = nullptr;
    ZB_ASSIGN(o, rd.object(&iv, field));
    InputInfo in;
    ZB_ASSIGN(in.name, rd.string(*o, "name", field + ".name"));
    ZB_ASSIGN(in.sampleShape,
              rd.shape(*o, "sample_shape", field + ".sample_shape"));
    if (o->get("dtype")) {
      std::string dtype;
      ZB_ASSIGN(dtype, rd.string(*o, "dtype", field + ".dtype"));
      if (dtype == "float32")
        in.dtype = DType::Float32;
      else if (dtype == "int64")
        in.dtype = DType::Int64;
      else if (dtype == "int32")
        in.dtype = DType::Int32;
      else
        return rd.error(field + ".dtype",
                        "unknown element type \"" + dtype +
                            "\" (expected float32, int64 or int32)");
    }
    ZB_ASSIGN(v, rd.integer(*o, "rank", field + ".rank", 0, plan.numRanks - 1));
    in.rank = (int32_t)v;
    ZB_ASSIGN(v,
              rd.integer(*o, "stage", field + ".stage", 0, plan.numStages - 1));
    in.stage = (int32_t)v;
    plan.inputs.push_back(std::move(in));
  }

  // predicted (optional)
  if (const json::Value *pv = root->get("predicted")) {
    const json::Object *o = nullptr;
    ZB_ASSIGN(o, rd.object(pv, "predicted"));
    for (const auto &kv : *o) {
      std::string field = ("predicted." + kv.first).str();
      const json::Object *e = nullptr;
      ZB_ASSIGN(e, rd.object(&kv.second, field));
      PredictedInfo p;
      p.schedule = kv.first.str();
      ZB_ASSIGN(p.bubbleRate,
                rd.number(*e, "bubble_rate", field + ".bubble_rate"));
      if (e->get("makespan_ms"))
        ZB_ASSIGN(p.makespanMs,
                  rd.number(*e, "makespan_ms", field + ".makespan_ms"));
      if (e->get("rank_bubble_rate"))
        ZB_ASSIGN(p.rankBubbleRate,
                  rd.perRank(*e, "rank_bubble_rate",
                             field + ".rank_bubble_rate", plan.numRanks));
      if (const json::Value *jv = e->get("jitter")) {
        const json::Object *jo = nullptr;
        ZB_ASSIGN(jo, rd.object(jv, field + ".jitter"));
        ZB_ASSIGN(p.jitterBubbleRate,
                  rd.number(*jo, "bubble_rate", field + ".jitter.bubble_rate"));
        ZB_ASSIGN(p.jitterRankBubbleRate,
                  rd.perRank(*jo, "rank_bubble_rate",
                             field + ".jitter.rank_bubble_rate",
                             plan.numRanks));
      }
      plan.predicted.push_back(std::move(p));
    }
    llvm::sort(plan.predicted,
               [](const PredictedInfo &a, const PredictedInfo &b) {
                 return a.schedule < b.schedule;
               });
  }

  // ranks
  const json::Array *ranks = nullptr;
  ZB_ASSIGN(ranks, rd.array(*root, "ranks", "ranks"));
  if ((int64_t)ranks->size() != plan.numRanks)
    return rd.error("ranks", formatv("{0} entries, but num_ranks is {1}",
                                     ranks->size(), plan.numRanks)
                                 .str());
  plan.ranks.resize(plan.numRanks);
  std::vector<bool> seen(plan.numRanks, false);
  int lossCount = 0;
  for (auto [i, rv] : enumerate(*ranks)) {
    std::string field = formatv("ranks[{0}]", i).str();
    const json::Object *o = nullptr;
    ZB_ASSIGN(o, rd.object(&rv, field));
    RankInfo r;
    ZB_ASSIGN(v, rd.integer(*o, "rank", field + ".rank", 0, plan.numRanks - 1));
    r.rank = (int32_t)v;
    if (seen[r.rank])
      return rd.error(field + ".rank",
                      formatv("rank {0} appears twice", r.rank).str());
    seen[r.rank] = true;
    ZB_ASSIGN(r.library, rd.string(*o, "library", field + ".library"));
    if (r.library.empty())
      return rd.error(field + ".library", "empty");
    ZB_ASSIGN(r.entry, rd.string(*o, "entry", field + ".entry"));
    if (r.entry.empty())
      return rd.error(field + ".entry", "empty");
    const json::Array *args = nullptr;
    ZB_ASSIGN(args, rd.array(*o, "args", field + ".args"));
    for (auto [j, av] : enumerate(*args)) {
      std::string afield = formatv("{0}.args[{1}]", field, j).str();
      const json::Object *ao = nullptr;
      ZB_ASSIGN(ao, rd.object(&av, afield));
      std::string kind;
      ZB_ASSIGN(kind, rd.string(*ao, "kind", afield + ".kind"));
      ArgInfo a;
      if (kind == "param")
        a.kind = ArgKind::Param;
      else if (kind == "grad")
        a.kind = ArgKind::Grad;
      else if (kind == "input")
        a.kind = ArgKind::Input;
      else if (kind == "loss")
        a.kind = ArgKind::Loss;
      else
        return rd.error(afield + ".kind",
                        "unknown kind \"" + kind +
                            "\" (expected param, grad, input or loss)");
      if (a.kind == ArgKind::Loss) {
        ++lossCount;
      } else {
        int64_t count = a.kind == ArgKind::Input ? (int64_t)plan.inputs.size()
                                                 : (int64_t)plan.params.size();
        if (count == 0)
          return rd.error(
              afield + ".index",
              formatv("refers to {0}, which is empty",
                      a.kind == ArgKind::Input ? "inputs" : "params")
                  .str());
        ZB_ASSIGN(a.index,
                  rd.integer(*ao, "index", afield + ".index", 0, count - 1));
      }
      r.args.push_back(a);
    }
    plan.ranks[r.rank] = std::move(r);
  }
  if (lossCount != 1)
    return rd.error("ranks", formatv("expected exactly one argument of kind "
                                     "\"loss\" over all ranks, found {0}",
                                     lossCount)
                                 .str());
  return plan;
}

Expected<Plan> zb::run::loadPlan(StringRef dir) {
  SmallString<256> path(dir);
  sys::path::append(path, "plan.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(), "%s: cannot read: %s",
                             path.c_str(), buf.getError().message().c_str());
  return parsePlan((*buf)->getBuffer(), path);
}
