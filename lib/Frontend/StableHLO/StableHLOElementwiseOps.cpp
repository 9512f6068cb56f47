//===- StableHLOElementwiseOps.cpp - Elementwise ops on data --------------===//
//
// Elementwise ops with an operand that is not a compile-time constant:
// float arithmetic and math functions, compare (and jax.nn.one_hot's compare
// with an iota as zb.one_hot), select, convert, the booleans (and, or, xor,
// not) and clamp. Integer arithmetic on data is recorded as unsupported
// (Val::unsupported) and is an error only where it is used. The rows of
// these ops (populateElementwiseOps, at the end) hold the zb ops and the
// function of doubles of each. See StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

//===----------------------------------------------------------------------===//
// Arithmetic, sign, is_finite
//===----------------------------------------------------------------------===//

LogicalResult Importer::unsupportedInteger(Operation *op, Val &out) {
  out.unsupported = op;
  return success();
}

LogicalResult Importer::buildOnData(Operation *op, ArrayRef<Val> in, Val &out,
                                    BuildFn build) {
  zb::ZBBuilder zbb(b, loc);
  SmallVector<Value, 2> x;
  for (const Val &v : in) {
    FailureOr<Value> m = materialize(v);
    if (failed(m))
      return failure();
    x.push_back(*m);
  }
  if (!build)
    return error(op) << "unsupported on data (operands that are not "
                        "compile-time constants)";
  out.v = build(zbb, x);
  return success();
}

/// Float arithmetic and math functions.
LogicalResult Importer::importArithmetic(const OpDef &def, Operation *op,
                                         ArrayRef<Val> in, Val &out) {
  if (!isa<FloatType>(out.type.getElementType()))
    return unsupportedInteger(op, out);
  return buildOnData(op, in, out, def.build);
}

LogicalResult Importer::importAdd(const OpDef &def, Operation *op,
                                  ArrayRef<Val> in, Val &out) {
  if (!isa<FloatType>(out.type.getElementType()) && in.size() == 2) {
    // `i + n` (n a constant): the shift of the index normalisation.
    for (int i = 0; i < 2; ++i)
      if (in[i].v && !in[i].unsupported && in[1 - i].c)
        out.shiftedOf = in[i].v;
  }
  return importArithmetic(def, op, in, out);
}

/// sign(x) = x > 0 ? 1 : (x < 0 ? -1 : x): +-0 and NaN pass through as in
/// HLO; no gradient flows through the comparisons (sign' = 0).
LogicalResult Importer::importSign(const OpDef &, Operation *op,
                                   ArrayRef<Val> in, Val &out) {
  if (!isa<FloatType>(out.type.getElementType()))
    return unsupportedInteger(op, out);
  zb::ZBBuilder zbb(b, loc);
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  Value zero = zbb.splat(*x, 0.0);
  Value neg = zbb.select(zbb.compare("lt", *x, zero), zbb.splat(*x, -1.0),
                         zbb.mul(*x, zero));
  out.v = zbb.select(zbb.compare("gt", *x, zero), zbb.splat(*x, 1.0), neg);
  return success();
}

/// |x| < +inf: false for NaN (ordered compare) and for +-inf.
LogicalResult Importer::importIsFinite(const OpDef &, Operation *,
                                       ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  Value abs = zbb.max(*x, zbb.neg(*x));
  out.v = zbb.compare("lt", abs,
                      zbb.splat(abs, std::numeric_limits<double>::infinity()));
  return success();
}

//===----------------------------------------------------------------------===//
// compare, select, convert
//===----------------------------------------------------------------------===//

/// jax.nn.one_hot(x, C): `compare EQ` of the integer data x broadcast along
/// the class axis with an iota along it (a constant of the result's shape).
/// Returns `zb.one_hot(x) != 0` (moved to the class axis), which keeps the
/// [N..., C] iota out of the zb IR; nullopt for any other compare.
std::optional<Value> Importer::oneHotCompare(Operation *op, int side,
                                             ArrayRef<Val> in,
                                             RankedTensorType type) {
  const Val &iota = in[1 - side];
  Operation *bc = op->getOperand(side).getDefiningOp();
  if (!iota.c || !bc ||
      bc->getName().getStringRef() != "stablehlo.broadcast_in_dim" ||
      ArrayRef<int64_t>(iota.c->shape) != type.getShape())
    return std::nullopt;
  FailureOr<Val> src = get(bc->getOperand(0));
  FailureOr<SmallVector<int64_t>> dims = i64Array(bc, "broadcast_dimensions");
  if (failed(src) || failed(dims) || !src->v || src->unsupported ||
      !isa<IntegerType>(src->type.getElementType()) ||
      src->type.getElementType().isInteger(1) ||
      (int64_t)dims->size() != src->type.getRank())
    return std::nullopt;
  auto et = src->type.getElementType();
  if (!et.isInteger(32) && !et.isInteger(64))
    return std::nullopt;
  int64_t rank = type.getRank();
  // The class axis: the one result dimension the indices do not span.
  std::optional<int64_t> axis;
  for (int64_t d = 0; d < rank; ++d) {
    auto it = llvm::find(*dims, d);
    int64_t size = it == dims->end()
                       ? 1
                       : src->type.getDimSize(it - dims->begin());
    if (it != dims->end() && size == type.getDimSize(d))
      continue; // spanned by the indices
    if (axis || size != 1)
      return std::nullopt;
    axis = d;
  }
  if (!axis)
    return std::nullopt;
  // Every other operand dimension is size 1 or maps to a spanned one.
  for (auto [k, d] : llvm::enumerate(*dims))
    if (d < 0 || d >= rank ||
        (d == *axis && src->type.getDimSize(k) != 1))
      return std::nullopt;
  // The constant is the coordinate along the class axis.
  ArrayRef<int64_t> shape = type.getShape();
  for (int64_t i = 0, n = iota.c->numElements(); i < n; ++i)
    if (iota.c->data[i] != zb::frontend::delinearize(i, shape)[*axis])
      return std::nullopt;
  zb::ZBBuilder zbb(b, loc);
  SmallVector<int64_t> idxShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      idxShape.push_back(shape[d]);
  Value idx = zbb.reshape(src->v, idxShape);
  Value oh = zbb.oneHot(idx, shape[*axis], b.getF32Type());
  if (*axis != rank - 1) {
    SmallVector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(d == *axis ? rank - 1 : d < *axis ? d : d - 1);
    oh = zbb.transpose(oh, perm);
  }
  Value zero = zbb.splat(oh, 0.0);
  return zbb.compare("ne", oh, zero);
}

/// compare on floats (integers compared as floats, exact below 2^24).
LogicalResult Importer::importCompare(const OpDef &, Operation *op,
                                      ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  std::string dir = compareDirection(op);
  StringRef pred = llvm::StringSwitch<StringRef>(dir)
                       .Case("EQ", "eq")
                       .Case("NE", "ne")
                       .Case("LT", "lt")
                       .Case("LE", "le")
                       .Case("GT", "gt")
                       .Case("GE", "ge")
                       .Default("");
  if (pred.empty())
    return badComparison(op);
  if (pred == "eq")
    for (int side = 0; side < 2; ++side)
      if (std::optional<Value> oh = oneHotCompare(op, side, in, out.type)) {
        out.v = *oh;
        return success();
      }
  FailureOr<Value> l = asFloat(in[0]), r = asFloat(in[1]);
  if (failed(l) || failed(r))
    return failure();
  if (l->getType() != r->getType())
    r = zbb.cast(*r, cast<RankedTensorType>(l->getType()).getElementType());
  out.v = zbb.compare(pred, *l, *r);
  // `i < 0` on integer data: the test of the index normalisation.
  if (pred == "lt" && in[0].v && !in[0].unsupported &&
      isa<IntegerType>(in[0].type.getElementType()) && in[1].c &&
      llvm::all_of(in[1].c->data, [](double d) { return d == 0.0; }))
    out.negTestOf = in[0].v;
  return success();
}

/// select of floats; of integers only the index normalisation of table[x].
LogicalResult Importer::importSelect(const OpDef &, Operation *op,
                                     ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  Type resultElem = out.type.getElementType();
  if (!isa<FloatType>(resultElem)) {
    // select(x < 0, x + n, x): the index normalisation of table[x] (also
    // through jnp.where's `_where` call); the indices are in range, so this
    // is x.
    Value x = in[2].v;
    if (x && !in[2].unsupported && in[0].negTestOf == x &&
        in[1].shiftedOf == x) {
      out = in[2];
      out.type = in[2].type;
      return success();
    }
    return error(op) << "select of integer data is not supported (only "
                        "the index normalisation select(x < 0, x + n, x))";
  }
  FailureOr<Value> c = materialize(in[0]);
  if (failed(c))
    return failure();
  FailureOr<Value> t = asFloat(in[1]), f = asFloat(in[2]);
  if (failed(t) || failed(f))
    return failure();
  auto ct = cast<RankedTensorType>(c->getType());
  if (ct.getRank() == 0 && out.type.getRank() > 0) {
    // A scalar predicate (jnp.var, jnp.where on a scalar): broadcast it
    // through float (zb.broadcast_in_dim takes floats) and compare back.
    Value asF = zbb.cast(*c, b.getF32Type());
    Value wide = zbb.broadcast(
        asF, RankedTensorType::get(out.type.getShape(), b.getF32Type()), {});
    c = zbb.compare("ne", wide, zbb.splat(wide, 0.0));
  }
  out.v = zbb.select(*c, *t, *f);
  return success();
}

/// convert to a float type (zb.cast), or between integer widths (no op).
LogicalResult Importer::importConvert(const OpDef &, Operation *op,
                                      ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  Type resultElem = out.type.getElementType();
  Type src = in[0].type.getElementType();
  if (isa<FloatType>(resultElem)) {
    FailureOr<Value> x =
        isa<FloatType>(src) ? materialize(in[0]) : asFloat(in[0]);
    if (failed(x))
      return failure();
    out.v = zbb.cast(*x, resultElem);
    return success();
  }
  if (isa<IntegerType>(src) && !src.isInteger(1) && !resultElem.isInteger(1)) {
    // Integer width changes keep the data's own type (zb index ops take
    // i32 and i64).
    out.v = in[0].v;
    out.unsupported = in[0].unsupported;
    out.shiftedOf = in[0].shiftedOf;
    out.negTestOf = in[0].negTestOf;
    return success();
  }
  return error(op) << "conversion of data from " << src << " to " << resultElem
                   << " is not supported";
}

//===----------------------------------------------------------------------===//
// Booleans and clamp
//===----------------------------------------------------------------------===//

/// Booleans on data (masks: the bounds checks of JAX's gathers, jnp.where
/// conditions): through floats 0/1, `and` = a * b != 0, `or` = max(a, b) !=
/// 0, `xor` = a != b, `not` = a == 0. No gradient flows through booleans.
FailureOr<SmallVector<Value, 2>> Importer::booleansAsFloats(Operation *op,
                                                            ArrayRef<Val> in) {
  SmallVector<Value, 2> x;
  for (const Val &v : in) {
    if (!v.type.getElementType().isInteger(1)) {
      error(op) << "operands must be booleans (i1)";
      return failure();
    }
    FailureOr<Value> f = asFloat(v);
    if (failed(f))
      return failure();
    x.push_back(*f);
  }
  return x;
}

LogicalResult Importer::importBitwise(Operation *op, ArrayRef<Val> in,
                                      Val &out) {
  if (!isa<FloatType>(out.type.getElementType()))
    return unsupportedInteger(op, out);
  return buildOnData(op, in, out, nullptr);
}

LogicalResult Importer::importLogical(const OpDef &def, Operation *op,
                                      ArrayRef<Val> in, Val &out) {
  if (!out.type.getElementType().isInteger(1))
    return importBitwise(op, in, out);
  FailureOr<SmallVector<Value, 2>> x = booleansAsFloats(op, in);
  if (failed(x))
    return failure();
  if (x->size() != 2 || (*x)[0].getType() != (*x)[1].getType())
    return error(op) << "operands must have the same shape";
  zb::ZBBuilder zbb(b, loc);
  out.v = def.build(zbb, *x);
  return success();
}

LogicalResult Importer::importNot(const OpDef &, Operation *op,
                                  ArrayRef<Val> in, Val &out) {
  if (!out.type.getElementType().isInteger(1))
    return importBitwise(op, in, out);
  FailureOr<SmallVector<Value, 2>> x = booleansAsFloats(op, in);
  if (failed(x))
    return failure();
  zb::ZBBuilder zbb(b, loc);
  out.v = zbb.compare("eq", (*x)[0], zbb.splat((*x)[0], 0.0));
  return success();
}

/// clamp(min, x, max) = min(max(x, min), max) elementwise; a scalar min or
/// max is broadcast. The gradient flows to x where it is inside the bounds
/// (and to data bounds where they are active).
LogicalResult Importer::importClamp(const OpDef &, Operation *op,
                                    ArrayRef<Val> in, Val &out) {
  if (!isa<FloatType>(out.type.getElementType()))
    return unsupportedInteger(op, out);
  zb::ZBBuilder zbb(b, loc);
  SmallVector<Value, 3> x;
  for (const Val &v : in) {
    FailureOr<Value> f = asFloat(v);
    if (failed(f))
      return failure();
    auto t = cast<RankedTensorType>(f->getType());
    if (t.getShape() != out.type.getShape()) {
      if (t.getRank() != 0)
        return error(op) << "min and max must be scalars or of the operand's "
                            "shape";
      f = zbb.broadcast(*f, out.type.clone(t.getElementType()), {});
    }
    x.push_back(*f);
  }
  Value lo = zbb.max(x[1], x[0]);
  out.v = zbb.neg(zbb.max(zbb.neg(lo), zbb.neg(x[2])));
  return success();
}

//===----------------------------------------------------------------------===//
// The rows of the elementwise ops
//===----------------------------------------------------------------------===//

void zb::frontend::stablehlo_import::populateElementwiseOps(OpTable &table) {
  using I = Importer;
  using Z = zb::ZBBuilder;
  using Vs = ArrayRef<Value>;
  using Ds = ArrayRef<double>;
  // name, on data, on constants, then the zb ops on floats and the function
  // of doubles that importArithmetic / importLogical and foldElementwise use
  // (no function of doubles: "cannot fold").
  static const OpDef defs[] = {
      {"stablehlo.add", &I::importAdd, &I::foldElementwise,
       [](Z &z, Vs x) { return z.add(x[0], x[1]); },
       [](Ds a) { return a[0] + a[1]; }},
      {"stablehlo.subtract", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.sub(x[0], x[1]); },
       [](Ds a) { return a[0] - a[1]; }},
      {"stablehlo.multiply", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.mul(x[0], x[1]); },
       [](Ds a) { return a[0] * a[1]; }},
      {"stablehlo.divide", &I::importArithmetic, &I::foldDivide,
       [](Z &z, Vs x) { return z.div(x[0], x[1]); },
       [](Ds a) { return a[0] / a[1]; }},
      {"stablehlo.maximum", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.max(x[0], x[1]); },
       [](Ds a) { return std::max(a[0], a[1]); }},
      {"stablehlo.minimum", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.neg(z.max(z.neg(x[0]), z.neg(x[1]))); },
       [](Ds a) { return std::min(a[0], a[1]); }},
      {"stablehlo.power", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.pow(x[0], x[1]); },
       [](Ds a) { return std::pow(a[0], a[1]); }},
      {"stablehlo.negate", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.neg(x[0]); }, [](Ds a) { return -a[0]; }},
      {"stablehlo.exponential", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.exp(x[0]); },
       [](Ds a) { return std::exp(a[0]); }},
      {"stablehlo.exponential_minus_one", &I::importArithmetic,
       &I::foldElementwise,
       [](Z &z, Vs x) { return z.sub(z.exp(x[0]), z.splat(x[0], 1.0)); },
       [](Ds a) { return std::expm1(a[0]); }},
      {"stablehlo.log", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.log(x[0]); },
       [](Ds a) { return std::log(a[0]); }},
      {"stablehlo.log_plus_one", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.log(z.add(x[0], z.splat(x[0], 1.0))); },
       [](Ds a) { return std::log1p(a[0]); }},
      {"stablehlo.tanh", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.tanh(x[0]); },
       [](Ds a) { return std::tanh(a[0]); }},
      {"stablehlo.sqrt", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.sqrt(x[0]); },
       [](Ds a) { return std::sqrt(a[0]); }},
      {"stablehlo.rsqrt", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.rsqrt(x[0]); },
       [](Ds a) { return 1.0 / std::sqrt(a[0]); }},
      {"stablehlo.logistic", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.sigmoid(x[0]); },
       [](Ds a) { return 1.0 / (1.0 + std::exp(-a[0])); }},
      {"chlo.erf", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.erf(x[0]); },
       [](Ds a) { return std::erf(a[0]); }},
      {"chlo.erfc", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.sub(z.splat(x[0], 1.0), z.erf(x[0])); }},
      {"stablehlo.abs", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.max(x[0], z.neg(x[0])); },
       [](Ds a) { return std::fabs(a[0]); }},
      {"chlo.square", &I::importArithmetic, &I::foldElementwise,
       [](Z &z, Vs x) { return z.mul(x[0], x[0]); },
       [](Ds a) { return a[0] * a[0]; }},
      {"stablehlo.sign", &I::importSign, &I::foldElementwise},
      {"stablehlo.is_finite", &I::importIsFinite, &I::foldElementwise},
      {"stablehlo.compare", &I::importCompare, &I::foldCompare},
      {"stablehlo.select", &I::importSelect, &I::foldElementwise, nullptr,
       [](Ds a) { return a[0] != 0 ? a[1] : a[2]; }},
      {"stablehlo.convert", &I::importConvert, &I::foldElementwise, nullptr,
       [](Ds a) { return a[0]; }},
      // Booleans on data through 0/1 floats; bitwise on integer constants.
      {"stablehlo.and", &I::importLogical, &I::foldElementwise,
       [](Z &z, Vs x) {
         Value r = z.mul(x[0], x[1]);
         return z.compare("ne", r, z.splat(r, 0.0));
       },
       [](Ds a) { return (double)((int64_t)a[0] & (int64_t)a[1]); }},
      {"stablehlo.or", &I::importLogical, &I::foldElementwise,
       [](Z &z, Vs x) {
         Value r = z.max(x[0], x[1]);
         return z.compare("ne", r, z.splat(r, 0.0));
       },
       [](Ds a) { return (double)((int64_t)a[0] | (int64_t)a[1]); }},
      {"stablehlo.xor", &I::importLogical, &I::foldElementwise,
       [](Z &z, Vs x) { return z.compare("ne", x[0], x[1]); },
       [](Ds a) { return (double)((int64_t)a[0] ^ (int64_t)a[1]); }},
      {"stablehlo.not", &I::importNot, &I::foldNot},
      // clamp(min, x, max)
      {"stablehlo.clamp", &I::importClamp, &I::foldElementwise, nullptr,
       [](Ds a) { return std::min(std::max(a[1], a[0]), a[2]); }},
      // Constant operands only.
      {"stablehlo.cosine", nullptr, &I::foldElementwise, nullptr,
       [](Ds a) { return std::cos(a[0]); }},
      {"stablehlo.sine", nullptr, &I::foldElementwise, nullptr,
       [](Ds a) { return std::sin(a[0]); }},
      {"stablehlo.floor", nullptr, &I::foldElementwise, nullptr,
       [](Ds a) { return std::floor(a[0]); }},
      {"stablehlo.ceil", nullptr, &I::foldElementwise, nullptr,
       [](Ds a) { return std::ceil(a[0]); }},
      {"stablehlo.remainder", nullptr, &I::foldElementwise, nullptr,
       [](Ds a) { return std::fmod(a[0], a[1]); }},
  };
  table.add(defs);
}
