//===- Plan.cpp - plan.json: the Plan struct and its names ----------------===//
//
// The parts of zb/Formats/Plan.h that the reader (PlanReader.cpp) and the
// writer (PlanWriter.cpp) share: element counts, shapes, and the one table
// of names for dtypes and argument kinds.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Plan.h"
#include "zb/Support/Limits.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace zb::formats;

static int64_t product(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

int64_t ParamInfo::numElements() const { return product(shape); }

int64_t InputInfo::sampleElements() const { return product(sampleShape); }

namespace {

/// The names of plan.json's enumerations, one table each, for the reader
/// and the writer.
const std::pair<DType, const char *> kDTypeNames[] = {
    {DType::Float32, "float32"},
    {DType::Int64, "int64"},
    {DType::Int32, "int32"}};
const std::pair<ArgKind, const char *> kArgKindNames[] = {
    {ArgKind::Param, "param"},
    {ArgKind::Grad, "grad"},
    {ArgKind::Input, "input"},
    {ArgKind::Loss, "loss"}};

template <typename E, size_t N>
const char *nameOf(const std::pair<E, const char *> (&table)[N], E value) {
  for (const auto &[e, name] : table)
    if (e == value)
      return name;
  return "?";
}

template <typename E, size_t N>
std::optional<E> valueOf(const std::pair<E, const char *> (&table)[N],
                         StringRef name) {
  for (const auto &[e, n] : table)
    if (name == n)
      return e;
  return std::nullopt;
}

} // namespace

const char *zb::formats::dtypeName(DType t) { return nameOf(kDTypeNames, t); }

int64_t zb::formats::dtypeBytes(DType t) { return t == DType::Int64 ? 8 : 4; }

std::optional<DType> zb::formats::dtypeFromName(StringRef name) {
  return valueOf(kDTypeNames, name);
}

const char *zb::formats::argKindName(ArgKind k) {
  return nameOf(kArgKindNames, k);
}

std::optional<ArgKind> zb::formats::argKindFromName(StringRef name) {
  return valueOf(kArgKindNames, name);
}

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

StringRef Plan::targetText() const {
  return target ? targetName(*target) : StringRef();
}

StringRef Plan::optimizerSyncText() const {
  return optimizerSync == zb::sched::OptimizerSync::None
             ? StringRef()
             : zb::sched::optimizerSyncName(optimizerSync);
}

int32_t Plan::lossRank() const {
  for (const RankInfo &r : ranks)
    for (const ArgInfo &a : r.args)
      if (a.kind == ArgKind::Loss)
        return r.rank;
  return -1;
}

const PredictedInfo *Plan::predictedForThisPlan() const {
  for (const PredictedInfo &p : predicted)
    if (p.schedule == schedule)
      return &p;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Rank program fingerprints
//===----------------------------------------------------------------------===//

std::string zb::formats::rankFingerprint(const Plan &plan, int32_t rank) {
  json::Array args;
  for (const ArgInfo &a : plan.ranks[rank].args) {
    json::Object o{{"kind", argKindName(a.kind)}};
    json::Array shape;
    for (int64_t d : plan.argShape(a))
      shape.push_back(d);
    o["shape"] = std::move(shape);
    if (a.kind == ArgKind::Param || a.kind == ArgKind::Grad) {
      o["index"] = a.index;
      o["name"] = plan.params[a.index].name;
      o["dtype"] = "float32";
    } else if (a.kind == ArgKind::Input) {
      o["index"] = a.index;
      o["name"] = plan.inputs[a.index].name;
      o["dtype"] = dtypeName(plan.inputs[a.index].dtype);
    } else {
      o["dtype"] = "float32";
    }
    args.push_back(std::move(o));
  }
  json::Object root{{"format", "zb-rank-program"},
                    {"version", 1},
                    {"rank", rank},
                    {"num_ranks", plan.numRanks},
                    {"num_stages", plan.numStages},
                    {"num_chunks", plan.numChunks},
                    {"num_microbatches", plan.numMicrobatches},
                    {"microbatch_size", plan.microbatchSize},
                    {"schedule", plan.schedule},
                    {"target", plan.targetText()},
                    {"optimizer_sync", plan.optimizerSyncText()},
                    {"args", std::move(args)}};
  std::string text;
  raw_string_ostream os(text);
  os << json::Value(std::move(root));
  return text;
}

/// The first place where `a` and `b` differ, as "args[2].shape", with both
/// values; "" when equal.
static std::string firstDifference(const json::Value &a, const json::Value &b,
                                   const std::string &at, std::string &va,
                                   std::string &vb) {
  auto show = [](const json::Value &v) {
    std::string t;
    raw_string_ostream os(t);
    os << v;
    return t;
  };
  const json::Object *oa = a.getAsObject(), *ob = b.getAsObject();
  const json::Array *aa = a.getAsArray(), *ab = b.getAsArray();
  if (oa && ob) {
    for (const auto &[k, v] : *oa) {
      std::string sub = at.empty() ? k.str() : at + "." + k.str();
      const json::Value *w = ob->get(k);
      if (!w) {
        va = show(v);
        vb = "nothing";
        return sub;
      }
      std::string d = firstDifference(v, *w, sub, va, vb);
      if (!d.empty())
        return d;
    }
    for (const auto &[k, v] : *ob)
      if (!oa->get(k)) {
        va = "nothing";
        vb = show(v);
        return at.empty() ? k.str() : at + "." + k.str();
      }
    return "";
  }
  // Arrays of scalars (shapes) compare whole; arrays of objects per item.
  if (aa && ab && aa->size() == ab->size() && !aa->empty() &&
      (*aa)[0].getAsObject()) {
    for (size_t i = 0; i < aa->size(); ++i) {
      std::string d = firstDifference((*aa)[i], (*ab)[i],
                                      at + "[" + std::to_string(i) + "]", va,
                                      vb);
      if (!d.empty())
        return d;
    }
    return "";
  }
  if (a == b)
    return "";
  va = show(a);
  vb = show(b);
  return at.empty() ? "(the document)" : at;
}

Error zb::formats::checkRankFingerprint(const Plan &plan, int32_t rank,
                                     StringRef programFingerprint) {
  const std::string expected = rankFingerprint(plan, rank);
  if (programFingerprint == expected)
    return Error::success();
  const std::string &lib = plan.ranks[rank].library;
  Expected<json::Value> got = json::parse(programFingerprint);
  if (!got) {
    consumeError(got.takeError());
    return createStringError(
        inconvertibleErrorCode(),
        formatv("{0}: {1} (ranks[{2}]) carries a malformed zb_rank_fingerprint",
                plan.path, lib, rank)
            .str());
  }
  Expected<json::Value> want = json::parse(expected);
  std::string va, vb;
  std::string at = firstDifference(*got, *want, "", va, vb);
  return createStringError(
      inconvertibleErrorCode(),
      formatv("{0}: {1} (ranks[{2}]) was compiled for {3} {4}, plan.json has "
              "{5}: the plan directory mixes outputs of different "
              "compilations (recompile with zb-compile)",
              plan.path, lib, rank, at, va, vb)
          .str());
}

namespace {
/// "a shape's" check: each dimension and the element count (with
/// `leading` samples in front of `dims` for an input's microbatch).
llvm::Error checkShape(const std::string &what, int64_t leading,
                       const std::vector<int64_t> &dims) {
  int64_t elements = leading;
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d > zb::limits::kMaxDimension)
      return createStringError(
          formatv("{0}: dimension {1} is {2}; zb-run accepts dimensions up "
                  "to {3}",
                  what, i, d, zb::limits::kMaxDimension)
              .str());
    if (__builtin_mul_overflow(elements, d, &elements) ||
        elements > zb::limits::kMaxTensorElements)
      return createStringError(
          formatv("{0}: more than {1} elements (2^40){2}; zb-run accepts at "
                  "most that many in one tensor: use a smaller model or "
                  "microbatch",
                  what, zb::limits::kMaxTensorElements,
                  leading > 1 ? " in a microbatch" : "")
              .str());
  }
  return llvm::Error::success();
}

llvm::Error outOfRange(StringRef what, int64_t value, int64_t max,
                       StringRef fix) {
  return createStringError(
      formatv("{0} is {1}; zb-run accepts at most {2}: {3}", what, value, max,
              fix)
          .str());
}
} // namespace

llvm::Error zb::formats::checkPlanLimits(const Plan &plan) {
  namespace L = zb::limits;
  if (plan.numRanks > L::kMaxRanks)
    return outOfRange("the number of ranks", plan.numRanks, L::kMaxRanks,
                      "use fewer --stages");
  if (plan.numStages > L::kMaxStages)
    return outOfRange("the number of stages", plan.numStages, L::kMaxStages,
                      "use fewer --stages");
  if (plan.numChunks > L::kMaxChunks)
    return outOfRange("the number of chunks per rank", plan.numChunks,
                      L::kMaxChunks, "use fewer chunks");
  if (plan.numMicrobatches > L::kMaxMicrobatches)
    return outOfRange("the number of microbatches", plan.numMicrobatches,
                      L::kMaxMicrobatches, "use fewer --microbatches");
  if (plan.microbatchSize > L::kMaxMicrobatchSize && !plan.inputs.empty())
      return outOfRange("input '" + plan.inputs.front().name +
                            "': its first dimension, the microbatch size,",
                        plan.microbatchSize, L::kMaxMicrobatchSize,
                        "export the model with a smaller batch (its "
                        "first dimension is one microbatch) and train with "
                        "more --microbatches");
  for (const ParamInfo &p : plan.params)
    if (llvm::Error e = checkShape("parameter '" + p.name + "'", 1, p.shape))
      return e;
  for (const InputInfo &in : plan.inputs) {
    if (llvm::Error e = checkShape("input '" + in.name + "'",
                                   std::max<int64_t>(plan.microbatchSize, 1),
                                   in.sampleShape))
      return e;
    // A step's batch of it, as zb-run reads it (every microbatch at once).
    int64_t batch = 0;
    if (__builtin_mul_overflow(plan.numMicrobatches, plan.microbatchSize,
                               &batch) ||
        __builtin_mul_overflow(batch, in.sampleElements(), &batch) ||
        batch > L::kMaxTensorElements)
      return createStringError(
          formatv("input '{0}': a step's batch ({1} microbatches of {2} "
                  "samples) is more than {3} elements (2^40); zb-run reads "
                  "it whole: use fewer --microbatches or a smaller batch",
                  in.name, plan.numMicrobatches, plan.microbatchSize,
                  L::kMaxTensorElements)
              .str());
  }
  for (const RankInfo &r : plan.ranks)
    if (r.sends)
      for (const SentMessage &m : *r.sends)
        if (m.bytes > L::kMaxMessageBytes)
          return outOfRange(formatv("a message from rank {0} to rank {1} "
                                    "(tag {2}) in bytes",
                                    r.rank, m.peer, m.tag)
                                .str(),
                            m.bytes, L::kMaxMessageBytes,
                            "use a smaller microbatch, or more stages so "
                            "that a stage boundary carries less");
  return llvm::Error::success();
}
