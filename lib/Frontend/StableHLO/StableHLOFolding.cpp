//===- StableHLOFolding.cpp - StableHLO ops on constants ------------------===//
//
// Every op whose operands are all compile-time constants (masks, iota
// arithmetic, cosine/sine tables) is folded at import on HostTensors, in
// double precision rounded to the result's element type. See
// StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace zb::frontend::stablehlo_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;

/// Elementwise function of doubles for the ops that fold.
static std::optional<std::function<double(ArrayRef<double>)>>
elementwiseFn(StringRef name, bool isInt, bool isBool, StringRef direction) {
  using F = std::function<double(ArrayRef<double>)>;
  auto u = [](double (*f)(double)) -> F {
    return [f](ArrayRef<double> a) { return f(a[0]); };
  };
  if (name == "stablehlo.add")
    return F([](ArrayRef<double> a) { return a[0] + a[1]; });
  if (name == "stablehlo.subtract")
    return F([](ArrayRef<double> a) { return a[0] - a[1]; });
  if (name == "stablehlo.multiply")
    return F([](ArrayRef<double> a) { return a[0] * a[1]; });
  if (name == "stablehlo.divide") {
    if (isInt)
      return F([](ArrayRef<double> a) {
        return a[1] == 0 ? -1.0 : std::trunc(a[0] / a[1]);
      });
    return F([](ArrayRef<double> a) { return a[0] / a[1]; });
  }
  if (name == "stablehlo.remainder")
    return F([](ArrayRef<double> a) { return std::fmod(a[0], a[1]); });
  if (name == "stablehlo.maximum")
    return F([](ArrayRef<double> a) { return std::max(a[0], a[1]); });
  if (name == "stablehlo.minimum")
    return F([](ArrayRef<double> a) { return std::min(a[0], a[1]); });
  if (name == "stablehlo.power")
    return F([](ArrayRef<double> a) { return std::pow(a[0], a[1]); });
  if (name == "stablehlo.and")
    return F([](ArrayRef<double> a) {
      return (double)((int64_t)a[0] & (int64_t)a[1]);
    });
  if (name == "stablehlo.or")
    return F([](ArrayRef<double> a) {
      return (double)((int64_t)a[0] | (int64_t)a[1]);
    });
  if (name == "stablehlo.xor")
    return F([](ArrayRef<double> a) {
      return (double)((int64_t)a[0] ^ (int64_t)a[1]);
    });
  if (name == "stablehlo.not") {
    if (isBool)
      return F([](ArrayRef<double> a) { return a[0] == 0 ? 1.0 : 0.0; });
    return F([](ArrayRef<double> a) { return (double)~(int64_t)a[0]; });
  }
  if (name == "stablehlo.clamp") // clamp(min, x, max)
    return F([](ArrayRef<double> a) {
      return std::min(std::max(a[1], a[0]), a[2]);
    });
  if (name == "stablehlo.negate")
    return F([](ArrayRef<double> a) { return -a[0]; });
  if (name == "stablehlo.exponential")
    return u(std::exp);
  if (name == "stablehlo.log")
    return u(std::log);
  if (name == "stablehlo.tanh")
    return u(std::tanh);
  if (name == "stablehlo.sqrt")
    return u(std::sqrt);
  if (name == "stablehlo.cosine")
    return u(std::cos);
  if (name == "stablehlo.sine")
    return u(std::sin);
  if (name == "stablehlo.abs")
    return u(std::fabs);
  if (name == "stablehlo.floor")
    return u(std::floor);
  if (name == "stablehlo.ceil")
    return u(std::ceil);
  if (name == "chlo.erf")
    return u(std::erf);
  if (name == "stablehlo.exponential_minus_one")
    return u(std::expm1);
  if (name == "stablehlo.log_plus_one")
    return u(std::log1p);
  if (name == "stablehlo.rsqrt")
    return F([](ArrayRef<double> a) { return 1.0 / std::sqrt(a[0]); });
  if (name == "stablehlo.logistic")
    return F([](ArrayRef<double> a) { return 1.0 / (1.0 + std::exp(-a[0])); });
  if (name == "chlo.square")
    return F([](ArrayRef<double> a) { return a[0] * a[0]; });
  if (name == "stablehlo.convert")
    return F([](ArrayRef<double> a) { return a[0]; });
  if (name == "stablehlo.select")
    return F([](ArrayRef<double> a) { return a[0] != 0 ? a[1] : a[2]; });
  if (name == "stablehlo.compare") {
    auto cmp = llvm::StringSwitch<int>(direction)
                   .Case("EQ", 0)
                   .Case("NE", 1)
                   .Case("LT", 2)
                   .Case("LE", 3)
                   .Case("GT", 4)
                   .Case("GE", 5)
                   .Default(-1);
    if (cmp < 0)
      return std::nullopt;
    return F([cmp](ArrayRef<double> a) {
      bool r[] = {a[0] == a[1], a[0] != a[1],
                  a[0]<a[1], a[0] <= a[1], a[0]> a[1], a[0] >= a[1]};
      return r[cmp] ? 1.0 : 0.0;
    });
  }
  return std::nullopt;
}

LogicalResult Importer::fold(Operation *op, ArrayRef<Val> in, Val &out) {
  StringRef name = op->getName().getStringRef();
  std::optional<FailureOr<HostTensor>> structural =
      foldStructural(op, in, out.type);
  FailureOr<HostTensor> r =
      structural                        ? std::move(*structural)
      : name == "stablehlo.gather"      ? foldGather(op, in, out.type)
      : name == "stablehlo.reduce"      ? foldReduce(op, in, out.type)
                                        : foldElementwise(op, in, out.type);
  if (failed(r))
    return failure();
  // The folded result must have the declared result shape.
  if (r->shape != out.type.getShape())
    return error(op) << "folds to shape " << formatShape(r->shape)
                     << " but the result type is " << out.type;
  r->type = out.type.getElementType();
  out.c = std::make_shared<HostTensor>(std::move(*r));
  return success();
}

std::optional<FailureOr<HostTensor>>
Importer::foldStructural(Operation *op, ArrayRef<Val> in,
                         RankedTensorType type) {
  StringRef name = op->getName().getStringRef();
  ArrayRef<int64_t> shape = type.getShape();
  Type elem = type.getElementType();
  auto err = [&] { return error(op); };
  if (name == "stablehlo.iota") {
    FailureOr<SmallVector<int64_t>> dim = i64Array(op, "iota_dimension");
    if (failed(dim))
      return failure();
    if (dim->size() != 1 || (*dim)[0] < 0 || (*dim)[0] >= (int64_t)shape.size())
      return error(op) << "bad iota_dimension";
    return zb::frontend::iotaHost(shape, (*dim)[0], elem);
  }
  if (name == "stablehlo.broadcast_in_dim") {
    FailureOr<SmallVector<int64_t>> dims = i64Array(op, "broadcast_dimensions");
    if (failed(dims))
      return failure();
    return zb::frontend::broadcastInDimHost(*in[0].c, shape, *dims, err);
  }
  if (name == "stablehlo.reshape")
    return zb::frontend::reshapeHost(*in[0].c, shape, err);
  if (name == "stablehlo.transpose") {
    FailureOr<SmallVector<int64_t>> perm = i64Array(op, "permutation");
    if (failed(perm))
      return failure();
    return zb::frontend::transposeHost(*in[0].c, *perm, err);
  }
  if (name == "stablehlo.slice") {
    FailureOr<SmallVector<int64_t>> start = i64Array(op, "start_indices");
    FailureOr<SmallVector<int64_t>> step = i64Array(op, "strides");
    if (failed(start) || failed(step))
      return failure();
    return zb::frontend::sliceHost(*in[0].c, *start, *step, shape, err);
  }
  if (name == "stablehlo.reverse") {
    FailureOr<SmallVector<int64_t>> dims = i64Array(op, "dimensions");
    if (failed(dims))
      return failure();
    return zb::frontend::reverseHost(*in[0].c, *dims, err);
  }
  if (name == "stablehlo.dynamic_slice") {
    FailureOr<SmallVector<int64_t>> sizes = i64Array(op, "slice_sizes");
    if (failed(sizes))
      return failure();
    FailureOr<SmallVector<int64_t>> start =
        staticStarts(op, in, 1, in[0].c->shape, *sizes);
    if (failed(start))
      return failure();
    SmallVector<int64_t> step(start->size(), 1);
    return zb::frontend::sliceHost(*in[0].c, *start, step, shape, err);
  }
  if (name == "stablehlo.dynamic_update_slice") {
    const HostTensor &base = *in[0].c, &upd = *in[1].c;
    if (upd.shape.size() != base.shape.size())
      return error(op) << "update rank differs from the operand's";
    FailureOr<SmallVector<int64_t>> start =
        staticStarts(op, in, 2, base.shape, upd.shape);
    if (failed(start))
      return failure();
    HostTensor r = base;
    for (int64_t i = 0, n = upd.numElements(); i < n; ++i) {
      SmallVector<int64_t> idx = zb::frontend::delinearize(i, upd.shape);
      for (size_t d = 0; d < idx.size(); ++d)
        idx[d] += (*start)[d];
      r.data[zb::frontend::linearize(idx, base.shape)] = upd.data[i];
    }
    return r;
  }
  if (name == "stablehlo.concatenate") {
    FailureOr<SmallVector<int64_t>> dim = i64Array(op, "dimension");
    if (failed(dim))
      return failure();
    if (dim->size() != 1)
      return error(op) << "bad dimension";
    SmallVector<HostTensor> inputs;
    for (const Val &v : in)
      inputs.push_back(*v.c);
    return zb::frontend::concatHost(inputs, (*dim)[0], err);
  }
  return std::nullopt;
}

/// Operands of the result's size read element i, one-element operands
/// (scalars) element 0.
FailureOr<HostTensor> Importer::foldElementwise(Operation *op, ArrayRef<Val> in,
                                                RankedTensorType type) {
  StringRef name = op->getName().getStringRef();
  ArrayRef<int64_t> shape = type.getShape();
  Type elem = type.getElementType();
  auto err = [&] { return error(op); };
  Type firstType = in.empty() ? elem : in[0].c->type;
  bool isInt = isa<IntegerType>(firstType);
  auto fn = elementwiseFn(name, isInt, firstType.isInteger(1),
                          compareDirection(op));
  if (!fn) {
    if (name == "stablehlo.compare")
      return badComparison(op);
    return error(op) << "cannot fold";
  }
  int64_t n = zb::frontend::numElements(shape);
  SmallVector<HostTensor> operands;
  SmallVector<const HostTensor *> ptrs;
  for (const Val &v : in) {
    int64_t size = v.c->numElements();
    if (n == 0) {
      operands.push_back(HostTensor{{}, v.c->type, {}});
      operands.back().shape.assign(shape.begin(), shape.end());
      continue;
    }
    if (size != n && size != 1)
      return error(op) << "operand shapes differ";
    operands.push_back(*v.c);
    if (size == n)
      operands.back().shape.assign(shape.begin(), shape.end());
    else
      operands.back().shape.clear();
  }
  for (const HostTensor &t : operands)
    ptrs.push_back(&t);
  return zb::frontend::elementwiseHost(ptrs, shape, elem, *fn, err);
}

FailureOr<HostTensor> Importer::foldGather(Operation *op, ArrayRef<Val> in,
                                           RankedTensorType type) {
  const HostTensor &operand = *in[0].c, &indices = *in[1].c;
  FailureOr<GatherDims> dims =
      parseGatherDims(op, operand.shape, indices.shape, type.getShape());
  if (failed(dims))
    return error(op) << "cannot parse gather dimension_numbers '"
                     << attrText(op->getAttr("dimension_numbers"))
                     << "' (or they do not match the operand shapes)";
  const GatherDims &g = *dims;
  int64_t ro = operand.shape.size(), ri = indices.shape.size();
  ArrayRef<int64_t> shape = type.getShape();
  HostTensor r{SmallVector<int64_t>(shape), type.getElementType(), {}};
  int64_t n = r.numElements();
  if (n > (int64_t(1) << 26))
    return error(op) << "folds to more than 2^26 elements";
  r.data.resize(n);
  // Operand dims that appear in the result as offsets, in order.
  SmallVector<int64_t> offsetOperandDims;
  for (int64_t d = 0; d < ro; ++d)
    if (!llvm::is_contained(g.collapsedSliceDims, d) &&
        !llvm::is_contained(g.operandBatchingDims, d))
      offsetOperandDims.push_back(d);
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<int64_t> res = zb::frontend::delinearize(i, shape);
    SmallVector<int64_t> batch, off;
    for (int64_t d = 0; d < (int64_t)shape.size(); ++d)
      (llvm::is_contained(g.offsetDims, d) ? off : batch).push_back(res[d]);
    // The indices' element at `batch` with the index vector dim = k.
    auto startAt = [&](int64_t k) {
      SmallVector<int64_t> at;
      for (int64_t d = 0, bi = 0; d < ri; ++d)
        at.push_back(d == g.indexVectorDim ? k : batch[bi++]);
      return zb::frontend::toInt64Saturated(
          indices.data[zb::frontend::linearize(at, indices.shape)]);
    };
    SmallVector<int64_t> idx(ro, 0);
    for (auto [k, d] : llvm::enumerate(g.startIndexMap))
      idx[d] = std::clamp<int64_t>(startAt(k), 0,
                                   operand.shape[d] - g.sliceSizes[d]);
    for (auto [od, sd] :
         llvm::zip_equal(g.operandBatchingDims, g.startIndicesBatchingDims))
      idx[od] = batch[sd > g.indexVectorDim ? sd - 1 : sd];
    for (auto [j, d] : llvm::enumerate(offsetOperandDims))
      idx[d] += off[j];
    r.data[i] = operand.data[zb::frontend::linearize(idx, operand.shape)];
  }
  return r;
}

FailureOr<HostTensor> Importer::foldReduce(Operation *op, ArrayRef<Val> in,
                                           RankedTensorType type) {
  std::string kind = reduceKind(op);
  if (kind.empty())
    return failure();
  const HostTensor &x = *in[0].c;
  FailureOr<SmallVector<int64_t>> dims =
      dimensionsAttr(op, "dimensions", (int64_t)x.shape.size());
  if (failed(dims))
    return failure();
  if (in[1].c->numElements() != 1)
    return error(op) << "the initial value must be a scalar";
  int64_t rank = x.shape.size();
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(*dims, d))
      continue;
    kept.push_back(x.shape[d]);
  }
  for (int64_t d : *dims)
    if (d < 0 || d >= rank)
      return error(op) << "reduction dimension " << d << " out of range";
  if (ArrayRef<int64_t>(kept) != type.getShape())
    return error(op) << "folds to shape " << formatShape(kept)
                     << " but the result type is " << type;
  std::function<double(double, double)> f =
      llvm::StringSwitch<std::function<double(double, double)>>(kind)
          .Case("stablehlo.add", [](double a, double b) { return a + b; })
          .Case("stablehlo.multiply", [](double a, double b) { return a * b; })
          .Case("stablehlo.maximum",
                [](double a, double b) { return std::max(a, b); })
          .Case("stablehlo.minimum",
                [](double a, double b) { return std::min(a, b); })
          .Case("stablehlo.and",
                [](double a, double b) {
                  return (double)((int64_t)a & (int64_t)b);
                })
          .Default([](double a, double b) {
            return (double)((int64_t)a | (int64_t)b);
          });
  HostTensor r{kept, type.getElementType(), {}};
  r.data.assign(r.numElements(), in[1].c->data[0]);
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    SmallVector<int64_t> idx = zb::frontend::delinearize(i, x.shape), k;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(*dims, d))
        k.push_back(idx[d]);
    double &acc = r.data[zb::frontend::linearize(k, kept)];
    acc = r.round(f(acc, x.data[i]));
  }
  return r;
}
