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
elementwiseFn(StringRef name, bool isInt, StringRef direction) {
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
  if (name == "stablehlo.not")
    return F([](ArrayRef<double> a) { return a[0] == 0 ? 1.0 : 0.0; });
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
  std::optional<FailureOr<HostTensor>> structural =
      foldStructural(op, in, out.type);
  FailureOr<HostTensor> r =
      structural ? std::move(*structural) : foldElementwise(op, in, out.type);
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
  bool isInt = isa<IntegerType>(in.empty() ? elem : in[0].c->type);
  auto fn = elementwiseFn(name, isInt, compareDirection(op));
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
