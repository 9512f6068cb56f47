//===- Plan.cpp - plan.json: the Plan struct and its names ----------------===//
//
// The parts of zbhost/Plan.h that the reader (PlanReader.cpp) and the
// writer (PlanWriter.cpp) share: element counts, shapes, and the one table
// of names for dtypes and argument kinds.
//
//===----------------------------------------------------------------------===//

#include "zbhost/Plan.h"

using namespace llvm;
using namespace zb::host;

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

const char *zb::host::dtypeName(DType t) { return nameOf(kDTypeNames, t); }

int64_t zb::host::dtypeBytes(DType t) { return t == DType::Int64 ? 8 : 4; }

std::optional<DType> zb::host::dtypeFromName(StringRef name) {
  return valueOf(kDTypeNames, name);
}

const char *zb::host::argKindName(ArgKind k) {
  return nameOf(kArgKindNames, k);
}

std::optional<ArgKind> zb::host::argKindFromName(StringRef name) {
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
