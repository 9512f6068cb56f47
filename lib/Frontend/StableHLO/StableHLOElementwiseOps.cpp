//===- StableHLOElementwiseOps.cpp - Elementwise ops on data --------------===//
//
// Elementwise ops with an operand that is not a compile-time constant:
// float arithmetic and math functions, compare (and jax.nn.one_hot's compare
// with an iota as zb.one_hot), select, convert, the booleans (and, or, xor,
// not) and clamp. Integer arithmetic on data is recorded as unsupported
// (Val::unsupported) and is an error only where it is used. See
// StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <functional>
#include <limits>

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

LogicalResult Importer::importElementwise(Operation *op, ArrayRef<Val> in,
                                          Val &out) {
  StringRef name = op->getName().getStringRef();
  if (name == "stablehlo.compare")
    return importCompare(op, in, out);
  if (name == "stablehlo.select")
    return importSelect(op, in, out);
  if (name == "stablehlo.convert")
    return importConvert(op, in, out);
  if (name == "stablehlo.sign" && isa<FloatType>(out.type.getElementType())) {
    // sign(x) = x > 0 ? 1 : (x < 0 ? -1 : x): +-0 and NaN pass through as
    // in HLO; no gradient flows through the comparisons (sign' = 0).
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
  if (name == "stablehlo.is_finite") {
    // |x| < +inf: false for NaN (ordered compare) and for +-inf.
    zb::ZBBuilder zbb(b, loc);
    FailureOr<Value> x = materialize(in[0]);
    if (failed(x))
      return failure();
    Value abs = zbb.max(*x, zbb.neg(*x));
    out.v = zbb.compare("lt", abs,
                        zbb.splat(abs, std::numeric_limits<double>::infinity()));
    return success();
  }
  bool logical = name == "stablehlo.and" || name == "stablehlo.or" ||
                 name == "stablehlo.xor" || name == "stablehlo.not";
  if (logical && out.type.getElementType().isInteger(1))
    return importLogical(op, in, out);
  if (name == "stablehlo.clamp" && isa<FloatType>(out.type.getElementType()))
    return importClamp(op, in, out);
  if (!isa<FloatType>(out.type.getElementType())) {
    // Integer arithmetic on data: only allowed where a pattern removes it.
    out.unsupported = op;
    // `i + n` (n a constant): the shift of the index normalisation.
    if (name == "stablehlo.add" && in.size() == 2)
      for (int i = 0; i < 2; ++i)
        if (in[i].v && !in[i].unsupported && in[1 - i].c)
          out.shiftedOf = in[i].v;
    return success();
  }
  return importArithmetic(op, in, out);
}

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
LogicalResult Importer::importCompare(Operation *op, ArrayRef<Val> in,
                                      Val &out) {
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
LogicalResult Importer::importSelect(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
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
LogicalResult Importer::importConvert(Operation *op, ArrayRef<Val> in,
                                      Val &out) {
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

/// Float arithmetic and math functions.
LogicalResult Importer::importArithmetic(Operation *op, ArrayRef<Val> in,
                                         Val &out) {
  StringRef name = op->getName().getStringRef();
  zb::ZBBuilder zbb(b, loc);
  SmallVector<Value, 2> x;
  for (const Val &v : in) {
    FailureOr<Value> m = materialize(v);
    if (failed(m))
      return failure();
    x.push_back(*m);
  }
  Value r =
      llvm::StringSwitch<std::function<Value()>>(name)
          .Case("stablehlo.add", [&] { return zbb.add(x[0], x[1]); })
          .Case("stablehlo.subtract", [&] { return zbb.sub(x[0], x[1]); })
          .Case("stablehlo.multiply", [&] { return zbb.mul(x[0], x[1]); })
          .Case("stablehlo.divide", [&] { return zbb.div(x[0], x[1]); })
          .Case("stablehlo.maximum", [&] { return zbb.max(x[0], x[1]); })
          .Case("stablehlo.minimum",
                [&] { return zbb.neg(zbb.max(zbb.neg(x[0]), zbb.neg(x[1]))); })
          .Case("stablehlo.power", [&] { return zbb.pow(x[0], x[1]); })
          .Case("stablehlo.negate", [&] { return zbb.neg(x[0]); })
          .Case("stablehlo.exponential", [&] { return zbb.exp(x[0]); })
          .Case("stablehlo.exponential_minus_one",
                [&] { return zbb.sub(zbb.exp(x[0]), zbb.splat(x[0], 1.0)); })
          .Case("stablehlo.log", [&] { return zbb.log(x[0]); })
          .Case("stablehlo.log_plus_one",
                [&] { return zbb.log(zbb.add(x[0], zbb.splat(x[0], 1.0))); })
          .Case("stablehlo.tanh", [&] { return zbb.tanh(x[0]); })
          .Case("stablehlo.sqrt", [&] { return zbb.sqrt(x[0]); })
          .Case("stablehlo.rsqrt", [&] { return zbb.rsqrt(x[0]); })
          .Case("stablehlo.logistic", [&] { return zbb.sigmoid(x[0]); })
          .Case("chlo.erf", [&] { return zbb.erf(x[0]); })
          .Case("chlo.erfc",
                [&] { return zbb.sub(zbb.splat(x[0], 1.0), zbb.erf(x[0])); })
          .Case("stablehlo.abs",
                [&] { return zbb.max(x[0], zbb.neg(x[0])); })
          .Case("chlo.square", [&] { return zbb.mul(x[0], x[0]); })
          .Default([] { return Value(); })();
  if (!r)
    return error(op) << "unsupported on data (operands that are not "
                        "compile-time constants)";
  out.v = r;
  return success();
}

/// Booleans on data (masks: the bounds checks of JAX's gathers, jnp.where
/// conditions): through floats 0/1, `and` = a * b != 0, `or` = max(a, b) !=
/// 0, `xor` = a != b, `not` = a == 0. No gradient flows through booleans.
LogicalResult Importer::importLogical(Operation *op, ArrayRef<Val> in,
                                      Val &out) {
  StringRef name = op->getName().getStringRef();
  zb::ZBBuilder zbb(b, loc);
  SmallVector<Value, 2> x;
  for (const Val &v : in) {
    if (!v.type.getElementType().isInteger(1))
      return error(op) << "operands must be booleans (i1)";
    FailureOr<Value> f = asFloat(v);
    if (failed(f))
      return failure();
    x.push_back(*f);
  }
  if (name == "stablehlo.not") {
    out.v = zbb.compare("eq", x[0], zbb.splat(x[0], 0.0));
    return success();
  }
  if (x.size() != 2 || x[0].getType() != x[1].getType())
    return error(op) << "operands must have the same shape";
  if (name == "stablehlo.xor") {
    out.v = zbb.compare("ne", x[0], x[1]);
    return success();
  }
  Value r = name == "stablehlo.and" ? zbb.mul(x[0], x[1]) : zbb.max(x[0], x[1]);
  Value zero = zbb.splat(r, 0.0);
  out.v = zbb.compare("ne", r, zero);
  return success();
}

/// clamp(min, x, max) = min(max(x, min), max) elementwise; a scalar min or
/// max is broadcast. The gradient flows to x where it is inside the bounds
/// (and to data bounds where they are active).
LogicalResult Importer::importClamp(Operation *op, ArrayRef<Val> in,
                                    Val &out) {
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
