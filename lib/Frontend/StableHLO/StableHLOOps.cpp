//===- StableHLOOps.cpp - StableHLO ops on data -> zb ops -----------------===//
//
// The ops with an operand that is not a compile-time constant: elementwise
// arithmetic, compare/select/convert, broadcast_in_dim and the shape ops,
// dot_general (-> zb.matmul / zb.batch_matmul with transposes and reshapes),
// reduce and gather. Integer arithmetic on data is recorded as unsupported
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

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// broadcast_in_dim and the shape ops
//===----------------------------------------------------------------------===//

/// broadcast_in_dim of floats; of integer data a reshape when it only inserts
/// size-1 dimensions, else a broadcast through floats.
LogicalResult Importer::importBroadcastInDim(Operation *op, ArrayRef<Val> in,
                                             Val &out) {
  zb::ZBBuilder zbb(b, loc);
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, "broadcast_dimensions");
  if (failed(dims))
    return failure();
  RankedTensorType st = in[0].type;
  bool increasing = true;
  for (size_t i = 0; i < dims->size(); ++i)
    increasing &= ((*dims)[i] >= 0 && (*dims)[i] < out.type.getRank()) &&
                  (i == 0 || (*dims)[i] > (*dims)[i - 1]);
  if (!increasing || (int64_t)dims->size() != st.getRank())
    return error(op) << "broadcast_dimensions must be increasing and "
                        "one per operand dimension";
  if (isa<FloatType>(st.getElementType())) {
    FailureOr<Value> x = materialize(in[0]);
    if (failed(x))
      return failure();
    out.v = zbb.broadcast(*x, out.type, *dims);
  } else if (st.getNumElements() == out.type.getNumElements()) {
    // Only inserts size-1 dimensions: a reshape keeps integer data.
    FailureOr<Value> x = materialize(in[0]);
    if (failed(x))
      return failure();
    out.v = zbb.reshape(*x, out.type.getShape());
  } else {
    // Integer or boolean data broadcast: through floats.
    FailureOr<Value> x = asFloat(in[0]);
    if (failed(x))
      return failure();
    Type fe = cast<RankedTensorType>(x->getType()).getElementType();
    Value bx = zbb.broadcast(*x, out.type.clone(fe), *dims);
    if (st.getElementType().isInteger(1))
      bx = zbb.compare("ne", bx,
                       zbb.splat(cast<RankedTensorType>(bx.getType()), 0.0));
    out.v = bx;
  }
  return success();
}

/// reshape, transpose, slice and concatenate of data.
LogicalResult Importer::importShapeOp(Operation *op, ArrayRef<Val> in,
                                      Val &out) {
  StringRef name = op->getName().getStringRef();
  zb::ZBBuilder zbb(b, loc);
  if (name == "stablehlo.reshape") {
    FailureOr<Value> x = materialize(in[0]);
    if (failed(x))
      return failure();
    out.v = zbb.reshape(*x, out.type.getShape());
    return success();
  }
  if (name == "stablehlo.transpose") {
    auto perm = dimensionsAttr(op, "permutation", in[0].type.getRank(),
                               /*permutation=*/true);
    FailureOr<Value> x = materialize(in[0]);
    if (failed(perm) || failed(x))
      return failure();
    out.v = zbb.transpose(*x, *perm);
    return success();
  }
  if (name == "stablehlo.slice") {
    auto s = i64Array(op, "start_indices");
    auto l = i64Array(op, "limit_indices");
    auto st = i64Array(op, "strides");
    FailureOr<Value> x = materialize(in[0]);
    if (failed(s) || failed(l) || failed(st) || failed(x))
      return failure();
    ArrayRef<int64_t> shape = in[0].type.getShape();
    if (s->size() != shape.size() || l->size() != shape.size() ||
        st->size() != shape.size())
      return error(op) << "start_indices, limit_indices and strides need "
                       << shape.size() << " entries each (the operand rank)";
    for (size_t d = 0; d < shape.size(); ++d)
      if ((*s)[d] < 0 || (*s)[d] > (*l)[d] || (*l)[d] > shape[d] ||
          (*st)[d] < 1)
        return error(op) << "dimension " << d << ": start " << (*s)[d]
                         << ", limit " << (*l)[d] << ", stride " << (*st)[d]
                         << " do not fit 0 <= start <= limit <= " << shape[d]
                         << ", stride >= 1";
    out.v = zbb.slice(*x, *s, *l, *st);
    return success();
  }
  // stablehlo.concatenate
  auto dim = i64Array(op, "dimension");
  if (failed(dim) || dim->size() != 1)
    return error(op) << "missing 'dimension'";
  if ((*dim)[0] < 0 || (*dim)[0] >= out.type.getRank())
    return error(op) << "dimension " << (*dim)[0] << " is out of range for rank "
                     << out.type.getRank();
  SmallVector<Value> xs;
  for (const Val &v : in) {
    FailureOr<Value> x =
        isa<FloatType>(out.type.getElementType()) ? asFloat(v) : materialize(v);
    if (failed(x))
      return failure();
    xs.push_back(*x);
  }
  out.v = zbb.concat(xs, (*dim)[0]);
  return success();
}

//===----------------------------------------------------------------------===//
// dot_general
//===----------------------------------------------------------------------===//

namespace {
/// The dimension numbers of a dot_general.
struct DotDims {
  SmallVector<int64_t> lhsBatch, rhsBatch, lhsContracting, rhsContracting;
};
} // namespace

/// Parses `#stablehlo.dot<lhs_batching_dimensions = [...], ...>`; failure on
/// malformed text or lists of different lengths.
static FailureOr<DotDims> parseDotDims(StringRef text) {
  auto lb = parseIntList(text, "lhs_batching_dimensions");
  auto rb = parseIntList(text, "rhs_batching_dimensions");
  auto lc = parseIntList(text, "lhs_contracting_dimensions");
  auto rc = parseIntList(text, "rhs_contracting_dimensions");
  if (!balanced(text) || failed(lb) || failed(rb) || failed(lc) || failed(rc) ||
      lb->size() != rb->size() || lc->size() != rc->size())
    return failure();
  return DotDims{*lb, *rb, *lc, *rc};
}

/// True if `dims` are distinct dimensions of a tensor of rank `rank`.
static bool distinctInRange(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d])
      return false;
    seen[d] = true;
  }
  return true;
}

/// The dimensions of a tensor of rank `rank` not in `used`, in order.
static SmallVector<int64_t> freeDims(ArrayRef<int64_t> used, int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(used, d))
      out.push_back(d);
  return out;
}

/// The product of the sizes of dimensions `dims` of `t`.
static int64_t product(RankedTensorType t, ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= t.getDimSize(d);
  return p;
}

/// Brings an operand to [batch, rows, cols] (or [rows, cols] when not
/// `batched`) where (rows, cols) = the (first, second) dimension groups,
/// using the transpose flag (`transposed`) instead of a zb.transpose when the
/// operand is already in (second, first) order.
static Value toMatrices(zb::ZBBuilder &zbb, Value v, ArrayRef<int64_t> bd,
                        ArrayRef<int64_t> first, ArrayRef<int64_t> second,
                        bool batched, int64_t batch, int64_t rows, int64_t cols,
                        bool &transposed) {
  auto concat = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b2,
                   ArrayRef<int64_t> c) {
    SmallVector<int64_t> p(a);
    p.append(b2.begin(), b2.end());
    p.append(c.begin(), c.end());
    return p;
  };
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] != (int64_t)i)
        return false;
    return true;
  };
  SmallVector<int64_t> shape;
  if (batched)
    shape.push_back(batch);
  SmallVector<int64_t> natural = concat(bd, first, second);
  SmallVector<int64_t> swapped = concat(bd, second, first);
  transposed = false;
  if (!isIdentity(natural) && isIdentity(swapped)) {
    transposed = true;
    shape.append({cols, rows});
    return zbb.reshape(v, shape);
  }
  shape.append({rows, cols});
  if (!isIdentity(natural))
    v = zbb.transpose(v, natural);
  return zbb.reshape(v, shape);
}

LogicalResult Importer::importDotGeneral(Operation *op, ArrayRef<Val> in,
                                         Val &out) {
  Attribute a = op->getAttr("dot_dimension_numbers");
  std::string text = a ? attrText(a) : "";
  FailureOr<DotDims> dims = parseDotDims(text);
  if (!a || failed(dims))
    return error(op) << "cannot parse dot_dimension_numbers '" << text << "'";
  const SmallVector<int64_t> &lb = dims->lhsBatch, &rb = dims->rhsBatch,
                             &lc = dims->lhsContracting,
                             &rc = dims->rhsContracting;
  FailureOr<Value> l = materialize(in[0]), r = materialize(in[1]);
  if (failed(l) || failed(r))
    return failure();
  auto lt = cast<RankedTensorType>(l->getType());
  auto rt = cast<RankedTensorType>(r->getType());
  if (!isa<FloatType>(lt.getElementType()) ||
      lt.getElementType() != rt.getElementType())
    return error(op) << "dot_general needs float operands of one type";
  SmallVector<int64_t> lAll(lb), rAll(rb);
  lAll.append(lc);
  rAll.append(rc);
  if (!distinctInRange(lAll, lt.getRank()) ||
      !distinctInRange(rAll, rt.getRank()))
    return error(op) << "dot_dimension_numbers out of range: '" << text << "'";
  for (size_t i = 0; i < lb.size(); ++i)
    if (lt.getDimSize(lb[i]) != rt.getDimSize(rb[i]))
      return error(op) << "batch dimension sizes differ";
  for (size_t i = 0; i < lc.size(); ++i)
    if (lt.getDimSize(lc[i]) != rt.getDimSize(rc[i]))
      return error(op) << "contracting dimension sizes differ";

  SmallVector<int64_t> lf = freeDims(lAll, lt.getRank());
  SmallVector<int64_t> rf = freeDims(rAll, rt.getRank());
  int64_t batch = product(lt, lb), m = product(lt, lf), k = product(lt, lc),
          nn = product(rt, rf);
  bool batched = !lb.empty();
  zb::ZBBuilder zbb(b, loc);
  bool tl, tr;
  Value lhs = toMatrices(zbb, *l, lb, lf, lc, batched, batch, m, k, tl);
  Value rhs = toMatrices(zbb, *r, rb, rc, rf, batched, batch, k, nn, tr);
  Value prod = batched ? zbb.batchMatmul(lhs, rhs, tl, tr)
                       : zbb.matmul(lhs, rhs, tl, tr);
  if (prod.getType() != out.type.clone(lt.getElementType()))
    prod = zbb.reshape(prod, out.type.getShape());
  out.v = prod;
  return success();
}

//===----------------------------------------------------------------------===//
// reduce and gather
//===----------------------------------------------------------------------===//

std::string Importer::reduceKind(Operation *op) {
  static constexpr const char *kForms =
      "only reductions with a single add, maximum, minimum, and or or in the "
      "body are supported";
  if (op->getNumOperands() != 2 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1) {
    error(op) << "only single-operand reductions are supported";
    return "";
  }
  Region &body = op->getRegion(0);
  if (!body.hasOneBlock() || body.front().getNumArguments() != 2) {
    error(op) << "malformed reduction body";
    return "";
  }
  Block &blk = body.front();
  if (blk.getOperations().size() != 2) {
    error(op) << kForms;
    return "";
  }
  Operation &combiner = blk.front();
  Operation &ret = blk.back();
  std::string kind = combiner.getName().getStringRef().str();
  bool argsOk = combiner.getNumOperands() == 2 &&
                ((combiner.getOperand(0) == blk.getArgument(0) &&
                  combiner.getOperand(1) == blk.getArgument(1)) ||
                 (combiner.getOperand(0) == blk.getArgument(1) &&
                  combiner.getOperand(1) == blk.getArgument(0)));
  if (!argsOk || ret.getNumOperands() != 1 ||
      ret.getOperand(0) != combiner.getResult(0) ||
      !llvm::is_contained(
          {StringRef("stablehlo.add"), StringRef("stablehlo.maximum"),
           StringRef("stablehlo.minimum"), StringRef("stablehlo.and"),
           StringRef("stablehlo.or"), StringRef("stablehlo.multiply")},
          StringRef(kind))) {
    error(op) << kForms << " (found '" << kind << "')";
    return "";
  }
  return kind;
}

/// reduce of floats (add -> zb.reduce_sum, maximum -> zb.reduce_max,
/// minimum -> -reduce_max(-x)) and of booleans (jnp.all / jnp.any, the
/// bounds masks of JAX's gathers: and -> min, or -> max over 0/1 floats).
LogicalResult Importer::importReduce(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  std::string kind = reduceKind(op);
  if (kind.empty())
    return failure();
  FailureOr<SmallVector<int64_t>> dims =
      dimensionsAttr(op, "dimensions", in[0].type.getRank());
  if (failed(dims))
    return failure();
  if (!in[1].c || in[1].c->numElements() != 1)
    return error(op) << "the initial value must be a scalar constant";
  double init = in[1].c->data[0];
  zb::ZBBuilder zbb(b, loc);
  Type elem = out.type.getElementType();
  bool logical = kind == "stablehlo.and" || kind == "stablehlo.or";
  if (elem.isInteger(1) && logical) {
    FailureOr<Value> x = asFloat(in[0]);
    if (failed(x))
      return failure();
    Value r = kind == "stablehlo.or"
                  ? zbb.reduceMax(*x, *dims)
                  : zbb.neg(zbb.reduceMax(zbb.neg(*x), *dims));
    // A non-neutral initial value (false for and, true for or) decides.
    bool neutral = (init != 0.0) == (kind == "stablehlo.and");
    if (!neutral)
      r = zbb.splat(r, init != 0.0 ? 1.0 : 0.0);
    if (cast<RankedTensorType>(r.getType()).getShape() != out.type.getShape())
      r = zbb.reshape(r, out.type.getShape());
    out.v = zbb.compare("ne", r, zbb.splat(r, 0.0));
    return success();
  }
  if (!isa<FloatType>(elem))
    return error(op) << "reductions of integer data are not supported";
  if (kind != "stablehlo.add" && kind != "stablehlo.maximum" &&
      kind != "stablehlo.minimum")
    return error(op) << "a '" << kind
                     << "' reduction of data is not supported (add, maximum "
                        "and minimum are; and / or of booleans; any body on "
                        "constants)";
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  Value r;
  if (kind == "stablehlo.add") {
    r = zbb.reduceSum(*x, *dims);
    if (init != 0.0)
      r = zbb.add(r, zbb.splat(r, init));
  } else if (kind == "stablehlo.maximum") {
    r = zbb.reduceMax(*x, *dims);
    if (init != -std::numeric_limits<double>::infinity())
      r = zbb.max(r, zbb.splat(r, init));
  } else {
    r = zbb.neg(zbb.reduceMax(zbb.neg(*x), *dims));
    if (init != std::numeric_limits<double>::infinity())
      r = zbb.neg(zbb.max(zbb.neg(r), zbb.splat(r, -init)));
  }
  if (r.getType() != out.type)
    r = zbb.reshape(r, out.type.getShape());
  out.v = r;
  return success();
}

FailureOr<GatherDims> zb::frontend::stablehlo_import::parseGatherDims(
    Operation *op, ArrayRef<int64_t> operand, ArrayRef<int64_t> indices,
    ArrayRef<int64_t> result) {
  Attribute a = op->getAttr("dimension_numbers");
  std::string text = a ? attrText(a) : "";
  GatherDims g;
  auto offset = parseIntList(text, "offset_dims");
  auto collapsed = parseIntList(text, "collapsed_slice_dims");
  auto startMap = parseIntList(text, "start_index_map");
  auto ivd = parseIntList(text, "index_vector_dim");
  auto obd = parseIntList(text, "operand_batching_dims");
  auto sbd = parseIntList(text, "start_indices_batching_dims");
  auto sizes = dyn_cast_or_null<DenseI64ArrayAttr>(op->getAttr("slice_sizes"));
  if (!a || !balanced(text) || failed(offset) || failed(collapsed) ||
      failed(startMap) || failed(ivd) || ivd->size() != 1 || failed(obd) ||
      failed(sbd) || !sizes)
    return failure();
  g.offsetDims = *offset;
  g.collapsedSliceDims = *collapsed;
  g.startIndexMap = *startMap;
  g.operandBatchingDims = *obd;
  g.startIndicesBatchingDims = *sbd;
  g.sliceSizes.assign(sizes.asArrayRef().begin(), sizes.asArrayRef().end());
  g.indexVectorDim = (*ivd)[0];
  int64_t ro = operand.size(), ri = indices.size();
  if (g.indexVectorDim < 0 || g.indexVectorDim > ri ||
      (int64_t)g.sliceSizes.size() != ro ||
      g.operandBatchingDims.size() != g.startIndicesBatchingDims.size())
    return failure();
  int64_t vecSize = g.indexVectorDim < ri ? indices[g.indexVectorDim] : 1;
  if ((int64_t)g.startIndexMap.size() != vecSize)
    return failure();
  // Operand dimensions: each collapsed, batching or an offset (in order).
  SmallVector<int> role(ro, 0);
  for (int64_t d : g.collapsedSliceDims) {
    if (d < 0 || d >= ro || role[d] || g.sliceSizes[d] > 1)
      return failure();
    role[d] = 1;
  }
  for (int64_t d : g.operandBatchingDims) {
    if (d < 0 || d >= ro || role[d] || g.sliceSizes[d] > 1)
      return failure();
    role[d] = 2;
  }
  for (int64_t d : g.startIndexMap)
    if (d < 0 || d >= ro || role[d] == 2)
      return failure();
  for (int64_t d = 0; d < ro; ++d)
    if (g.sliceSizes[d] < 0 || g.sliceSizes[d] > operand[d])
      return failure();
  SmallVector<bool> idxUsed(ri, false);
  for (auto [od, sd] :
       llvm::zip_equal(g.operandBatchingDims, g.startIndicesBatchingDims)) {
    if (sd < 0 || sd >= ri || sd == g.indexVectorDim || idxUsed[sd] ||
        indices[sd] != operand[od])
      return failure();
    idxUsed[sd] = true;
  }
  // The result: batch dimensions (the indices' without the index vector)
  // where offset_dims are not, the offset slice sizes at offset_dims.
  SmallVector<int64_t> batch, offs;
  for (int64_t d = 0; d < ri; ++d)
    if (d != g.indexVectorDim)
      batch.push_back(indices[d]);
  for (int64_t d = 0; d < ro; ++d)
    if (!role[d])
      offs.push_back(g.sliceSizes[d]);
  if (offs.size() != g.offsetDims.size() ||
      (int64_t)result.size() != (int64_t)(batch.size() + offs.size()))
    return failure();
  size_t bi = 0, oi = 0;
  for (int64_t d = 0; d < (int64_t)result.size(); ++d) {
    bool isOffset = oi < g.offsetDims.size() && g.offsetDims[oi] == d;
    int64_t want = isOffset ? offs[oi++] : batch[bi++];
    if (result[d] != want)
      return failure();
  }
  if (oi != g.offsetDims.size())
    return failure();
  return g;
}

/// For a gather whose index vector is a concatenation (along the index
/// vector dimension) of constant components and one data component, as
/// JAX emits for `x[jnp.arange(n), t]`: each constant component k that is
/// an iota along a batch dimension j of the indices (its value at every
/// position is the position's coordinate j) and indexes an operand
/// dimension of the same size becomes the batching pair (operand dim, j);
/// `g` is rewritten to index with the data component alone, returned in
/// `indices`. Failure (nothing reported) for any other form.
LogicalResult Importer::iotaComponentsAsBatching(Operation *op, GatherDims &g,
                                                 RankedTensorType idxT,
                                                 Val &indices) {
  int64_t ri = idxT.getRank(), ivd = g.indexVectorDim;
  Operation *cat = op->getOperand(1).getDefiningOp();
  if (ivd >= ri || !cat ||
      cat->getName().getStringRef() != "stablehlo.concatenate")
    return failure();
  FailureOr<SmallVector<int64_t>> dim = i64Array(cat, "dimension");
  if (failed(dim) || dim->size() != 1 || (*dim)[0] != ivd ||
      !g.operandBatchingDims.empty())
    return failure();
  auto table = cast<RankedTensorType>(op->getOperand(0).getType());
  SmallVector<int64_t> batchShape;
  for (int64_t d = 0; d < ri; ++d)
    if (d != ivd)
      batchShape.push_back(idxT.getDimSize(d));
  std::optional<Val> data;
  int64_t dataComponent = -1, k = 0;
  GatherDims ng = g;
  ng.startIndexMap.clear();
  for (Value piece : cat->getOperands()) {
    FailureOr<Val> pv = get(piece);
    if (failed(pv) || pv->type.getRank() != ri)
      return failure();
    for (int64_t d = 0; d < ri; ++d)
      if (d != ivd && pv->type.getDimSize(d) != idxT.getDimSize(d))
        return failure();
    if (pv->c && ArrayRef<int64_t>(pv->c->shape) != pv->type.getShape())
      return failure();
    int64_t width = pv->type.getDimSize(ivd);
    if (k + width > (int64_t)g.startIndexMap.size())
      return failure();
    if (!pv->c) {
      if (data || width != 1 || pv->unsupported)
        return failure();
      data = *pv;
      dataComponent = k++;
      ng.startIndexMap.push_back(g.startIndexMap[dataComponent]);
      continue;
    }
    for (int64_t w = 0; w < width; ++w, ++k) {
      // Which batch dimension is this component an iota along?
      const HostTensor &c = *pv->c;
      int64_t operandDim = g.startIndexMap[k];
      std::optional<int64_t> along;
      for (int64_t j = 0; j < (int64_t)batchShape.size() && !along; ++j) {
        if (batchShape[j] != table.getDimSize(operandDim))
          continue;
        bool iota = true;
        for (int64_t i = 0, n = zb::frontend::numElements(batchShape);
             iota && i < n; ++i) {
          SmallVector<int64_t> at = zb::frontend::delinearize(i, batchShape);
          SmallVector<int64_t> full(at);
          full.insert(full.begin() + ivd, w);
          iota = c.data[zb::frontend::linearize(full, c.shape)] == at[j];
        }
        if (iota)
          along = j;
      }
      if (!along || g.sliceSizes[operandDim] != 1 ||
          !llvm::is_contained(g.collapsedSliceDims, operandDim))
        return failure();
      llvm::erase(ng.collapsedSliceDims, operandDim);
      ng.operandBatchingDims.push_back(operandDim);
      ng.startIndicesBatchingDims.push_back(*along >= ivd ? *along + 1
                                                          : *along);
    }
  }
  if (!data || k != (int64_t)g.startIndexMap.size())
    return failure();
  g = ng;
  indices = *data;
  return success();
}

/// gather on data, in three forms:
/// - table[indices] on one axis `a` (no batching dims, one index per
///   element, full slices elsewhere): zb.gather, with zb.transpose when `a`
///   is not the leading axis or the offsets come out in another order;
/// - jnp.take_along_axis (operand_batching_dims pair the indices' leading
///   dimensions with the operand's, one index per element on axis `a`):
///   sum over `a` of operand * one_hot(indices) (zb.one_hot, zb.mul,
///   zb.reduce_sum): differentiable in the operand, O(elements x classes);
/// everything else is an error naming the dimension numbers. Indices are
/// assumed in range (StableHLO clamps them; zb.gather is undefined out of
/// range and the one-hot form gives 0), as JAX's default `fill` and
/// `promise_in_bounds` modes need for in-range indices.
LogicalResult Importer::importGather(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  RankedTensorType tableT = in[0].type, idxT = in[1].type;
  std::string text = op->getAttr("dimension_numbers")
                         ? attrText(op->getAttr("dimension_numbers"))
                         : "";
  FailureOr<GatherDims> dims = parseGatherDims(
      op, tableT.getShape(), idxT.getShape(), out.type.getShape());
  if (failed(dims))
    return error(op) << "cannot parse gather dimension_numbers '" << text
                     << "' (or they do not match the operand shapes)";
  GatherDims g = *dims;
  int64_t ro = tableT.getRank(), ri = idxT.getRank();
  auto unsupportedForm = [&] {
    return error(op) << "only the embedding-lookup (table[indices], "
                        "jnp.take), jnp.take_along_axis and "
                        "x[jnp.arange(n), t] forms of gather are supported, "
                        "not '"
                     << text << "'";
  };
  Val indexVal = in[1];
  // x[jnp.arange(n), t]: index components that are iotas along a batch
  // dimension of the indices become batching dims; one data component
  // stays.
  if (g.startIndexMap.size() > 1) {
    if (failed(iotaComponentsAsBatching(op, g, idxT, indexVal)))
      return unsupportedForm();
    idxT = indexVal.type;
  }
  // One index per element, on operand axis `a`, a slice of 1 there.
  if (g.startIndexMap.size() != 1)
    return unsupportedForm();
  int64_t a = g.startIndexMap[0];
  if (g.sliceSizes[a] != 1)
    return unsupportedForm();
  // Every other operand dim: batching, or a full slice (an offset).
  SmallVector<int64_t> offsetOperandDims; // in operand order
  for (int64_t d = 0; d < ro; ++d) {
    if (d == a || llvm::is_contained(g.operandBatchingDims, d))
      continue;
    if (llvm::is_contained(g.collapsedSliceDims, d)) {
      if (tableT.getDimSize(d) != 1)
        return unsupportedForm();
      continue;
    }
    if (g.sliceSizes[d] != tableT.getDimSize(d))
      return unsupportedForm();
    offsetOperandDims.push_back(d);
  }

  FailureOr<Value> table = materialize(in[0]);
  FailureOr<Value> idx = asIndex(indexVal);
  if (failed(table) || failed(idx))
    return failure();
  if (!isa<FloatType>(tableT.getElementType()))
    return error(op) << "gather of integer data is not supported (only of "
                        "floating-point tables)";
  zb::ZBBuilder zbb(b, loc);
  // The indices without the index vector dimension: [IB...].
  SmallVector<int64_t> ib;
  for (int64_t d = 0; d < ri; ++d)
    if (d != g.indexVectorDim)
      ib.push_back(idxT.getDimSize(d));
  Value indices = *idx;
  if (g.indexVectorDim < ri)
    indices = zbb.reshape(indices, ib);
  int64_t nb = ib.size();
  // Position in [IB...] of indices dimension `sd` (index vector removed).
  auto ibPos = [&](int64_t sd) {
    return sd > g.indexVectorDim ? sd - 1 : sd;
  };

  // The gathered values as [IB..., offsets...] (offsets in operand order,
  // `a` among them with size 1 when not collapsed).
  Value r;
  SmallVector<int64_t> offs; // operand dims of the offsets, in order
  for (int64_t d = 0; d < ro; ++d)
    if (!llvm::is_contained(g.collapsedSliceDims, d) &&
        !llvm::is_contained(g.operandBatchingDims, d))
      offs.push_back(d);
  if (g.operandBatchingDims.empty()) {
    // zb.gather on axis `a` brought to the front: [IB..., rest...].
    SmallVector<int64_t> perm = {a};
    for (int64_t d = 0; d < ro; ++d)
      if (d != a)
        perm.push_back(d);
    Value t = *table;
    if (a != 0)
      t = zbb.transpose(t, perm);
    r = zbb.gather(t, indices);
    // `rest` (operand dims but `a`, in order) holds the offsets and the
    // collapsed size-1 dims; `a` itself, when not collapsed, is size 1.
    SmallVector<int64_t> shape(ib);
    for (int64_t d : offs)
      shape.push_back(d == a ? 1 : tableT.getDimSize(d));
    r = zbb.reshape(r, shape);
  } else {
    // take_along_axis: X = operand as [batch (in IB order)..., offsets...,
    // a], broadcast over the unpaired index dims; times one_hot(indices) on
    // the last axis, summed over it.
    SmallVector<std::pair<int64_t, int64_t>> pairs; // (IB position, operand)
    for (auto [od, sd] :
         llvm::zip_equal(g.operandBatchingDims, g.startIndicesBatchingDims))
      pairs.push_back({ibPos(sd), od});
    llvm::sort(pairs);
    SmallVector<int64_t> perm, xDims;
    for (auto [pos, od] : pairs) {
      perm.push_back(od);
      xDims.push_back(pos);
    }
    SmallVector<int64_t> full(ib);
    for (int64_t d : offs)
      if (d != a) {
        perm.push_back(d);
        xDims.push_back(full.size());
        full.push_back(tableT.getDimSize(d));
      }
    int64_t classes = tableT.getDimSize(a);
    perm.push_back(a);
    xDims.push_back(full.size());
    full.push_back(classes);
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity &= perm[i] == (int64_t)i;
    Value x = identity ? *table : zbb.transpose(*table, perm);
    Type fe = tableT.getElementType();
    auto fullT = RankedTensorType::get(full, fe);
    x = zbb.broadcast(x, fullT, xDims);
    Value oh = zbb.oneHot(indices, classes, fe);
    SmallVector<int64_t> ohDims;
    for (int64_t i = 0; i < nb; ++i)
      ohDims.push_back(i);
    ohDims.push_back(full.size() - 1);
    oh = zbb.broadcast(oh, fullT, ohDims);
    r = zbb.reduceSum(zbb.mul(x, oh), {(int64_t)full.size() - 1});
    SmallVector<int64_t> shape(ib);
    for (int64_t d : offs)
      shape.push_back(d == a ? 1 : tableT.getDimSize(d));
    r = zbb.reshape(r, shape);
  }
  // [IB..., offsets...] -> the result order (offsets at offset_dims).
  int64_t rank = out.type.getRank();
  SmallVector<int64_t> resPerm(rank);
  int64_t bi = 0, oi = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (oi < (int64_t)g.offsetDims.size() && g.offsetDims[oi] == d)
      resPerm[d] = nb + oi++;
    else
      resPerm[d] = bi++;
  }
  bool identity = true;
  for (int64_t d = 0; d < rank; ++d)
    identity &= resPerm[d] == d;
  if (!identity)
    r = zbb.transpose(r, resPerm);
  if (cast<RankedTensorType>(r.getType()).getShape() != out.type.getShape())
    r = zbb.reshape(r, out.type.getShape());
  out.v = r;
  return success();
}
