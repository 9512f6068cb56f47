//===- PlanReader.cpp - plan.json: the one reader
//--------------------------===//
//
// parsePlan/loadPlan of zb/Formats/Plan.h. Every message is
// "<file>: <field path>: <problem>".
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Plan.h"
#include "zb/Support/Limits.h"

#include <cmath>
#include "zb/Support/JSON.h"
#include "zb/Schedule/IO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <limits>

using namespace llvm;
using namespace zb::formats;

#define ZB_ASSIGN(lhs, expr)                                                   \
  do {                                                                         \
    auto zbTmp = (expr);                                                       \
    if (!zbTmp)                                                                \
      return zbTmp.takeError();                                                \
    lhs = std::move(*zbTmp);                                                   \
  } while (false)

#define ZB_CHECK(expr)                                                         \
  do {                                                                         \
    if (Error zbErr = (expr))                                                  \
      return zbErr;                                                            \
  } while (false)

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

/// The fields of one JSON object at `prefix` ("" for the root,
/// "params[3]", "predicted.zb-h1.jitter", ...), read with messages
/// "<file>: <prefix>.<key>: <problem>". Optional fields take a default that
/// is returned when the key is absent.
class Fields {
public:
  Fields(StringRef file, const json::Object &o, std::string prefix)
      : file(file), o(o), prefix(std::move(prefix)) {}

  /// The object `v` (an element or a value) at field path `field`.
  static Expected<Fields> of(StringRef file, const json::Value &v,
                             const Twine &field) {
    if (const json::Object *obj = v.getAsObject())
      return Fields(file, *obj, field.str());
    return fail(file, field, "expected an object");
  }
  static Error fail(StringRef file, const Twine &field, const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             file + ": " + field + ": " + message);
  }

  std::string field(StringRef key) const {
    return prefix.empty() ? key.str() : prefix + "." + key.str();
  }
  Error error(StringRef key, const Twine &message) const {
    return fail(file, field(key), message);
  }
  bool has(StringRef key) const { return o.get(key) != nullptr; }
  const json::Object &object() const { return o; }

  Expected<Fields> object(StringRef key) const {
    auto v = get(key);
    if (!v)
      return v.takeError();
    return of(file, **v, field(key));
  }
  Expected<const json::Array *> array(StringRef key) const {
    auto v = get(key);
    if (!v)
      return v.takeError();
    if (const json::Array *a = (*v)->getAsArray())
      return a;
    return error(key, "expected an array");
  }
  Expected<int64_t> integer(StringRef key, int64_t min, int64_t max = kMaxInt,
                            std::optional<int64_t> dflt = std::nullopt) const {
    if (dflt && !has(key))
      return *dflt;
    auto v = get(key);
    if (!v)
      return v.takeError();
    return integerValue(**v, field(key), min, max);
  }
  Expected<int64_t> integerValue(const json::Value &v, const Twine &at,
                                 int64_t min, int64_t max) const {
    std::optional<int64_t> i = v.getAsInteger();
    if (!i)
      return fail(file, at, "expected an integer");
    if (*i < min || *i > max)
      return fail(file, at,
                  formatv("{0} out of range [{1}, {2}]", *i, min, max).str());
    return *i;
  }
  Expected<double> number(StringRef key,
                          std::optional<double> dflt = std::nullopt) const {
    if (dflt && !has(key))
      return *dflt;
    auto v = get(key);
    if (!v)
      return v.takeError();
    if (std::optional<double> d = (*v)->getAsNumber()) {
      // JSON numbers such as 1e999 parse as infinity.
      if (!std::isfinite(*d))
        return error(key, "expected a finite number");
      return *d;
    }
    return error(key, "expected a number");
  }
  Expected<std::string>
  string(StringRef key, std::optional<StringRef> dflt = std::nullopt) const {
    if (dflt && !has(key))
      return dflt->str();
    auto v = get(key);
    if (!v)
      return v.takeError();
    if (std::optional<StringRef> s = (*v)->getAsString())
      return s->str();
    return error(key, "expected a string");
  }
  Expected<bool> boolean(StringRef key, bool dflt) const {
    if (!has(key))
      return dflt;
    auto v = get(key);
    if (!v)
      return v.takeError();
    if (std::optional<bool> b = (*v)->getAsBoolean())
      return *b;
    return error(key, "expected true or false");
  }
  /// A list of strings (absent: empty).
  Expected<std::vector<std::string>> strings(StringRef key) const {
    std::vector<std::string> out;
    if (!has(key))
      return out;
    const json::Array *arr = nullptr;
    ZB_ASSIGN(arr, array(key));
    for (auto [i, v] : enumerate(*arr)) {
      std::optional<StringRef> s = v.getAsString();
      if (!s)
        return error(key, "expected an array of strings (element " +
                              Twine(i) + ")");
      out.push_back(s->str());
    }
    return out;
  }
  /// A list of dimensions, each in [0, zb::limits::kMaxDimension], at most
  /// zb::limits::kMaxTensorElements elements.
  Expected<std::vector<int64_t>> shape(StringRef key) const {
    const json::Array *arr = nullptr;
    ZB_ASSIGN(arr, array(key));
    std::vector<int64_t> dims;
    for (auto [i, v] : enumerate(*arr)) {
      int64_t d = 0;
      ZB_ASSIGN(d, integerValue(v, field(key) + "[" + Twine(i) + "]", 0,
                                zb::limits::kMaxDimension));
      dims.push_back(d);
    }
    // Element counts stay far from int64 overflow (2^60 elements claimed by
    // an edited shape used to wrap around).
    int64_t n = 1;
    for (int64_t d : dims)
      if (__builtin_mul_overflow(n, d, &n) || n > zb::limits::kMaxTensorElements)
        return error(key, formatv("more than 2^40 elements").str());
    return dims;
  }
  /// An array of numbers, one per rank (`count` entries).
  Expected<std::vector<double>> perRank(StringRef key, int64_t count) const {
    const json::Array *arr = nullptr;
    ZB_ASSIGN(arr, array(key));
    if ((int64_t)arr->size() != count)
      return error(
          key, formatv("{0} values for {1} ranks", arr->size(), count).str());
    std::vector<double> out;
    for (auto [i, v] : enumerate(*arr)) {
      std::optional<double> d = v.getAsNumber();
      if (!d)
        return fail(file, field(key) + "[" + Twine(i) + "]",
                    "expected a number");
      out.push_back(*d);
    }
    return out;
  }

private:
  Expected<const json::Value *> get(StringRef key) const {
    if (const json::Value *v = o.get(key))
      return v;
    return error(key, "missing");
  }

  StringRef file;
  const json::Object &o;
  std::string prefix;
};

/// parsePlan, one section of plan.json per member function.
class PlanParser {
public:
  PlanParser(StringRef path, const json::Object &root)
      : file(path), root(path, root, "") {
    plan.path = path.str();
    plan.dir = sys::path::parent_path(path).str();
    if (plan.dir.empty())
      plan.dir = ".";
  }

  Expected<Plan> parse() {
    ZB_CHECK(header());
    ZB_CHECK(optimizer());
    ZB_CHECK(params());
    ZB_CHECK(inputs());
    ZB_CHECK(stages());
    ZB_CHECK(predicted());
    ZB_CHECK(ranks());
    return std::move(plan);
  }

private:
  Error header();
  Error optimizer();
  Error placement(const Fields &f, int32_t &rank, int32_t &stage);
  Error params();
  Error inputs();
  Error stages();
  Error predicted();
  Error jitter(const Fields &f, PredictedInfo &p);
  Error dataParallel(const Fields &f, PredictedInfo &p);
  Error ranks();
  Error rankArgs(const Fields &f, RankInfo &r, int &lossCount);
  Error rankSends(const Fields &f, RankInfo &r);
  /// fn(element) for the elements of array `key` of `parent`, as objects.
  template <typename Fn>
  Error forEachElement(const Fields &parent, StringRef key, Fn fn);
  /// fn(object `key` of `f`) when `f` has `key`.
  template <typename Fn>
  static Error ifObject(const Fields &f, StringRef key, Fn fn) {
    if (!f.has(key))
      return Error::success();
    Expected<Fields> o = f.object(key);
    if (!o)
      return o.takeError();
    return fn(*o);
  }

  StringRef file;
  Fields root;
  Plan plan;
};

Error PlanParser::header() {
  std::string format;
  ZB_ASSIGN(format, root.string("format"));
  if (format != "zb-plan")
    return root.error("format", "expected \"zb-plan\", got \"" + format + "\"");
  int64_t version = 0;
  ZB_ASSIGN(version, root.integer("version", 0));
  if (version != 1)
    return root.error("version",
                      formatv("unsupported version {0} (this zb-run reads "
                              "version 1)",
                              version)
                          .str());
  ZB_ASSIGN(plan.model, root.string("model", StringRef()));
  ZB_ASSIGN(plan.numRanks, root.integer("num_ranks", 1, zb::limits::kMaxRanks));
  ZB_ASSIGN(plan.dataParallel, root.integer("data_parallel", 1,
                                            zb::limits::kMaxDataParallel, 1));
  ZB_ASSIGN(plan.numStages, root.integer("num_stages", 1, zb::limits::kMaxStages));
  ZB_ASSIGN(plan.numChunks,
            root.integer("num_chunks", 1, zb::limits::kMaxChunks, 1));
  ZB_ASSIGN(plan.directions, root.integer("directions", 1, 2, 1));
  ZB_ASSIGN(plan.numMicrobatches,
            root.integer("num_microbatches", 1, zb::limits::kMaxMicrobatches));
  ZB_ASSIGN(plan.microbatchSize,
            root.integer("microbatch_size", 1, zb::limits::kMaxMicrobatchSize));
  ZB_ASSIGN(plan.schedule, root.string("schedule", StringRef()));
  std::string target;
  ZB_ASSIGN(target, root.string("target", StringRef()));
  if (!target.empty()) {
    Expected<zb::Target> parsed = zb::parseTarget(target);
    if (!parsed)
      return root.error("target", toString(parsed.takeError()));
    plan.target = *parsed;
  }
  ZB_ASSIGN(plan.gpuArchs, root.strings("gpu_archs"));
  ZB_ASSIGN(plan.allowTf32, root.boolean("allow_tf32", false));
  std::string precision;
  ZB_ASSIGN(precision, root.string("precision", StringRef("fp32")));
  Expected<zb::Precision> parsedPrecision = zb::parsePrecision(precision);
  if (!parsedPrecision)
    return root.error("precision", toString(parsedPrecision.takeError()));
  plan.precision = *parsedPrecision;
  ZB_ASSIGN(plan.hostReadsDeviceMemory,
            root.boolean("host_reads_device_memory", true));
  ZB_ASSIGN(plan.data, root.string("data", StringRef()));
  ZB_ASSIGN(plan.paramsChecksum, root.string("params_checksum", StringRef()));
  if (root.has("params_checksum") &&
      (plan.paramsChecksum.size() != 16 ||
       !llvm::all_of(plan.paramsChecksum, [](char c) {
         return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
       })))
    return root.error("params_checksum",
                      "must be 16 lower-case hex digits (the XXH3-64 of "
                      "params.bin), got \"" +
                          plan.paramsChecksum + "\"");
  std::string sync;
  ZB_ASSIGN(sync, root.string("optimizer_sync", StringRef()));
  if (sync.empty())
    return Error::success();
  Expected<zb::sched::OptimizerSync> mode = zb::sched::parseOptimizerSync(sync);
  if (!mode || *mode != zb::sched::OptimizerSync::PostValidation) {
    if (!mode)
      consumeError(mode.takeError());
    return root.error("optimizer_sync",
                      "must be \"post-validation\" (or absent), got \"" +
                          sync + "\"");
  }
  plan.optimizerSync = *mode;
  return Error::success();
}

Error PlanParser::optimizer() {
  return ifObject(root, "optimizer", [&](const Fields &f) -> Error {
    OptimizerInfo &opt = plan.optimizer;
    std::string name;
    ZB_ASSIGN(name, f.string("name"));
    Expected<zb::Optimizer> kind = zb::parseOptimizer(name);
    if (!kind) {
      consumeError(kind.takeError());
      return f.error("name", "unknown optimizer \"" + name +
                                 "\" (expected \"sgd\" or \"adamw\")");
    }
    opt.kind = *kind;
    ZB_ASSIGN(opt.lr, f.number("lr"));
    ZB_ASSIGN(opt.beta1, f.number("beta1", opt.beta1));
    ZB_ASSIGN(opt.beta2, f.number("beta2", opt.beta2));
    ZB_ASSIGN(opt.eps, f.number("eps", opt.eps));
    ZB_ASSIGN(opt.weightDecay, f.number("weight_decay", opt.weightDecay));
    // Ranges where the optimizer (and its in-place rollback) is defined.
    auto g = [](double v) { return formatv("{0}", format("%g", v)).str(); };
    if (!isValidLearningRate(opt.lr))
      return f.error("lr", g(opt.lr) + " must be > 0 and a finite float32 "
                                       "(at most 3.4e38)");
    if (!(opt.beta1 > 0 && opt.beta1 < 1))
      return f.error("beta1", g(opt.beta1) + " must lie in (0, 1)");
    if (!(opt.beta2 > 0 && opt.beta2 < 1))
      return f.error("beta2", g(opt.beta2) + " must lie in (0, 1)");
    if (!(opt.eps > 0))
      return f.error("eps", g(opt.eps) + " must be > 0");
    if (!(opt.weightDecay >= 0 &&
          (opt.kind != zb::Optimizer::AdamW || opt.lr * opt.weightDecay < 1)))
      return f.error("weight_decay", g(opt.weightDecay) +
                                         " must be >= 0 with lr * "
                                         "weight_decay < 1");
    return Error::success();
  });
}

Error PlanParser::placement(const Fields &f, int32_t &rank, int32_t &stage) {
  ZB_ASSIGN(rank, f.integer("rank", 0, plan.numRanks - 1));
  ZB_ASSIGN(stage, f.integer("stage", 0, plan.numStages - 1));
  return Error::success();
}

template <typename Fn>
Error PlanParser::forEachElement(const Fields &parent, StringRef key, Fn fn) {
  const json::Array *arr = nullptr;
  ZB_ASSIGN(arr, parent.array(key));
  for (auto [i, v] : enumerate(*arr)) {
    Expected<Fields> f =
        Fields::of(file, v, formatv("{0}[{1}]", parent.field(key), i));
    if (!f)
      return f.takeError();
    ZB_CHECK(fn(*f));
  }
  return Error::success();
}

Error PlanParser::params() {
  return forEachElement(root, "params", [&](const Fields &f) -> Error {
    ParamInfo p;
    ZB_ASSIGN(p.name, f.string("name"));
    ZB_ASSIGN(p.shape, f.shape("shape"));
    ZB_CHECK(placement(f, p.rank, p.stage));
    ZB_ASSIGN(p.offsetBytes, f.integer("offset_bytes", 0));
    if (p.offsetBytes % 4 != 0)
      return f.error(
          "offset_bytes",
          formatv("{0} is not a multiple of 4", p.offsetBytes).str());
    if (f.has("tied_copies"))
      ZB_CHECK(forEachElement(f, "tied_copies", [&](const Fields &c) -> Error {
        Placement copy;
        ZB_CHECK(placement(c, copy.rank, copy.stage));
        p.tiedCopies.push_back(copy);
        return Error::success();
      }));
    plan.params.push_back(std::move(p));
    return Error::success();
  });
}

Error PlanParser::inputs() {
  return forEachElement(root, "inputs", [&](const Fields &f) -> Error {
    InputInfo in;
    ZB_ASSIGN(in.name, f.string("name"));
    ZB_ASSIGN(in.sampleShape, f.shape("sample_shape"));
    std::string dtype;
    ZB_ASSIGN(dtype, f.string("dtype", dtypeName(DType::Float32)));
    std::optional<DType> t = dtypeFromName(dtype);
    if (!t)
      return f.error("dtype", "unknown element type \"" + dtype +
                                  "\" (expected float32, int64 or int32)");
    in.dtype = *t;
    // The whole step's batch of this input (num_microbatches x
    // microbatch_size samples) in 64 bits without overflow.
    int64_t batch = 0;
    if (__builtin_mul_overflow(plan.numMicrobatches, plan.microbatchSize,
                               &batch) ||
        __builtin_mul_overflow(batch, in.sampleElements(), &batch) ||
        batch > zb::limits::kMaxTensorElements)
      return f.error("sample_shape",
                     "num_microbatches x microbatch_size x the sample's "
                     "elements is more than 2^40");
    if (f.has("index_range"))
      ZB_ASSIGN(in.indexRange, f.integer("index_range", 1));
    if (f.has("index_ignore")) {
      int64_t ignore = 0;
      ZB_ASSIGN(ignore, f.integer("index_ignore", INT64_MIN));
      in.indexIgnore = ignore;
    }
    ZB_CHECK(placement(f, in.rank, in.stage));
    plan.inputs.push_back(std::move(in));
    return Error::success();
  });
}

Error PlanParser::stages() {
  if (!root.has("stages"))
    return Error::success();
  return forEachElement(root, "stages", [&](const Fields &f) -> Error {
    StageCostInfo s;
    ZB_CHECK(placement(f, s.rank, s.stage));
    ZB_ASSIGN(s.tF, f.number("t_f"));
    ZB_ASSIGN(s.tB, f.number("t_b"));
    ZB_ASSIGN(s.tW, f.number("t_w"));
    ZB_ASSIGN(s.tComm, f.number("t_comm"));
    ZB_ASSIGN(s.mB, f.integer("m_b", 0));
    ZB_ASSIGN(s.mW, f.integer("m_w", 0));
    plan.stages.push_back(s);
    return Error::success();
  });
}

Error PlanParser::jitter(const Fields &f, PredictedInfo &p) {
  return ifObject(f, "jitter", [&](const Fields &j) -> Error {
    JitterInfo info;
    if (j.has("samples"))
      ZB_ASSIGN(info.samples, j.integer("samples", 0));
    ZB_ASSIGN(info.bubbleRate, j.number("bubble_rate"));
    if (j.has("makespan_ms"))
      ZB_ASSIGN(info.makespanMs, j.number("makespan_ms"));
    ZB_ASSIGN(info.rankBubbleRate,
              j.perRank("rank_bubble_rate", plan.numRanks));
    p.jitter = std::move(info);
    return Error::success();
  });
}

Error PlanParser::dataParallel(const Fields &f, PredictedInfo &p) {
  return ifObject(f, "data_parallel", [&](const Fields &d) -> Error {
    DataParallelPrediction dp;
    ZB_ASSIGN(dp.dataParallel, d.integer("data_parallel", 1,
                                         zb::limits::kMaxDataParallel));
    ZB_ASSIGN(dp.bandwidthGBps, d.number("bandwidth_gbps"));
    ZB_ASSIGN(dp.latencyMs, d.number("latency_ms"));
    ZB_ASSIGN(dp.stepMs, d.number("step_ms"));
    ZB_ASSIGN(dp.bubbleRate, d.number("bubble_rate"));
    ZB_ASSIGN(dp.exposedMs, d.number("exposed_ms"));
    ZB_ASSIGN(dp.afterBackwardStepMs, d.number("after_backward_step_ms"));
    ZB_ASSIGN(dp.afterBackwardExposedMs,
              d.number("after_backward_exposed_ms"));
    p.dataParallel = dp;
    return Error::success();
  });
}

Error PlanParser::predicted() {
  ZB_CHECK(ifObject(root, "predicted", [&](const Fields &all) -> Error {
    for (const auto &kv : all.object()) {
      Expected<Fields> f =
          Fields::of(file, kv.second, all.field(kv.first.str()));
      if (!f)
        return f.takeError();
      PredictedInfo p;
      p.schedule = kv.first.str();
      ZB_ASSIGN(p.bubbleRate, f->number("bubble_rate"));
      if (f->has("makespan_ms"))
        ZB_ASSIGN(p.makespanMs, f->number("makespan_ms"));
      if (f->has("rank_bubble_rate"))
        ZB_ASSIGN(p.rankBubbleRate,
                  f->perRank("rank_bubble_rate", plan.numRanks));
      ZB_CHECK(jitter(*f, p));
      ZB_CHECK(dataParallel(*f, p));
      plan.predicted.push_back(std::move(p));
    }
    return Error::success();
  }));
  llvm::sort(plan.predicted,
             [](const PredictedInfo &a, const PredictedInfo &b) {
               return a.schedule < b.schedule;
             });
  return Error::success();
}

Error PlanParser::rankArgs(const Fields &f, RankInfo &r, int &lossCount) {
  return forEachElement(f, "args", [&](const Fields &a) -> Error {
    std::string kind;
    ZB_ASSIGN(kind, a.string("kind"));
    std::optional<ArgKind> k = argKindFromName(kind);
    if (!k)
      return a.error("kind", "unknown kind \"" + kind +
                                 "\" (expected param, grad, input or loss)");
    ArgInfo arg;
    arg.kind = *k;
    if (arg.kind == ArgKind::Loss) {
      ++lossCount;
    } else {
      bool input = arg.kind == ArgKind::Input;
      int64_t count =
          input ? (int64_t)plan.inputs.size() : (int64_t)plan.params.size();
      if (count == 0)
        return a.error("index", formatv("refers to {0}, which is empty",
                                        input ? "inputs" : "params")
                                    .str());
      ZB_ASSIGN(arg.index, a.integer("index", 0, count - 1));
    }
    r.args.push_back(arg);
    return Error::success();
  });
}

/// "sends" (optional): the step function's messages, in order.
Error PlanParser::rankSends(const Fields &f, RankInfo &r) {
  if (!f.has("sends"))
    return Error::success();
  r.sends.emplace();
  return forEachElement(f, "sends", [&](const Fields &m) -> Error {
    SentMessage sent;
    ZB_ASSIGN(sent.peer, m.integer("peer", 0, plan.numRanks - 1));
    if (sent.peer == r.rank)
      return m.error("peer", "a rank does not send to itself");
    constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
    ZB_ASSIGN(sent.tag, m.integer("tag", 0, kMaxInt32));
    ZB_ASSIGN(sent.bytes, m.integer("bytes", 0, zb::limits::kMaxMessageBytes));
    r.sends->push_back(sent);
    return Error::success();
  });
}

Error PlanParser::ranks() {
  const json::Array *arr = nullptr;
  ZB_ASSIGN(arr, root.array("ranks"));
  if ((int64_t)arr->size() != plan.numRanks)
    return root.error("ranks", formatv("{0} entries, but num_ranks is {1}",
                                       arr->size(), plan.numRanks)
                                   .str());
  plan.ranks.resize(plan.numRanks);
  std::vector<bool> seen(plan.numRanks, false);
  int lossCount = 0;
  ZB_CHECK(forEachElement(root, "ranks", [&](const Fields &f) -> Error {
    RankInfo r;
    ZB_ASSIGN(r.rank, f.integer("rank", 0, plan.numRanks - 1));
    if (seen[r.rank])
      return f.error("rank", formatv("rank {0} appears twice", r.rank).str());
    seen[r.rank] = true;
    ZB_ASSIGN(r.library, f.string("library"));
    // The rank program is code zb-run loads: only a file of the plan
    // directory itself (RankProgram.cpp also refuses a symlink out of it).
    if (StringRef(r.library).contains('\0'))
      return f.error("library", "contains a NUL character (a file name "
                                "cannot)");
    if (r.library.empty() || r.library == "." || r.library == ".." ||
        StringRef(r.library).contains('/') ||
        StringRef(r.library).contains('\\'))
      return f.error("library", "'" + r.library +
                                    "' must be a bare file name inside the "
                                    "plan directory (no '/', no '..')");
    ZB_ASSIGN(r.entry, f.string("entry"));
    if (r.entry.empty())
      return f.error("entry", "empty");
    ZB_CHECK(rankArgs(f, r, lossCount));
    ZB_CHECK(rankSends(f, r));
    plan.ranks[r.rank] = std::move(r);
    return Error::success();
  }));
  // One loss per direction (dualpipe: the last stage of each route).
  if (lossCount != plan.directions)
    return root.error("ranks", formatv("expected exactly {0} argument(s) of "
                                       "kind \"loss\" over all ranks (one "
                                       "per direction), found {1}",
                                       plan.directions, lossCount)
                                   .str());
  return Error::success();
}

} // namespace

Expected<Plan> zb::formats::parsePlan(StringRef text, StringRef path) {
  if (Error e = zb::support::checkJSONNesting(text, path))
    return std::move(e);
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return createStringError(
        inconvertibleErrorCode(),
        path + ": invalid JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return Fields::fail(path, "(root)", "expected an object");
  return PlanParser(path, *root).parse();
}

Expected<Plan> zb::formats::loadPlan(StringRef dir) {
  SmallString<256> path(dir);
  sys::path::append(path, "plan.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(), "%s: cannot read: %s",
                             path.c_str(), buf.getError().message().c_str());
  return parsePlan((*buf)->getBuffer(), path);
}
