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

const char *zb::host::dtypeName(DType t) {
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

int64_t zb::host::dtypeBytes(DType t) { return t == DType::Int64 ? 8 : 4; }

std::optional<DType> zb::host::dtypeFromName(StringRef name) {
  for (DType t : {DType::Float32, DType::Int64, DType::Int32})
    if (name == dtypeName(t))
      return t;
  return std::nullopt;
}

const char *zb::host::argKindName(ArgKind k) {
  switch (k) {
  case ArgKind::Param:
    return "param";
  case ArgKind::Grad:
    return "grad";
  case ArgKind::Input:
    return "input";
  case ArgKind::Loss:
    return "loss";
  }
  return "?";
}

std::optional<ArgKind> zb::host::argKindFromName(StringRef name) {
  for (ArgKind k :
       {ArgKind::Param, ArgKind::Grad, ArgKind::Input, ArgKind::Loss})
    if (name == argKindName(k))
      return k;
  return std::nullopt;
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
