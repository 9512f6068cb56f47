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
  if (!isa<FloatType>(out.type.getElementType())) {
    // Integer arithmetic on data: only allowed where a pattern removes it.
    out.unsupported = op;
    return success();
  }
  return importArithmetic(op, in, out);
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
  FailureOr<Value> l = asFloat(in[0]), r = asFloat(in[1]);
  if (failed(l) || failed(r))
    return failure();
  if (l->getType() != r->getType())
    r = zbb.cast(*r, cast<RankedTensorType>(l->getType()).getElementType());
  out.v = zbb.compare(pred, *l, *r);
  return success();
}

/// select of floats; of integers only the index normalisation of table[x].
LogicalResult Importer::importSelect(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  zb::ZBBuilder zbb(b, loc);
  Type resultElem = out.type.getElementType();
  if (!isa<FloatType>(resultElem)) {
    // select(x < 0, x + n, x): the index normalisation of table[x]; the
    // indices are in range, so this is x.
    Operation *cmp = op->getOperand(0).getDefiningOp();
    Value x = op->getOperand(2);
    if (cmp && cmp->getName().getStringRef() == "stablehlo.compare" &&
        cmp->getOperand(0) == x && compareDirection(cmp) == "LT") {
      FailureOr<Val> zero = get(cmp->getOperand(1));
      if (succeeded(zero) && zero->c &&
          llvm::all_of(zero->c->data, [](double d) { return d == 0.0; })) {
        out = in[2];
        return success();
      }
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
    auto perm = i64Array(op, "permutation");
    FailureOr<Value> x = materialize(in[0]);
    if (failed(perm) || failed(x))
      return failure();
    if ((int64_t)perm->size() != in[0].type.getRank())
      return error(op) << "permutation does not match the operand rank";
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
    out.v = zbb.slice(*x, *s, *l, *st);
    return success();
  }
  // stablehlo.concatenate
  auto dim = i64Array(op, "dimension");
  if (failed(dim) || dim->size() != 1)
    return error(op) << "missing 'dimension'";
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

LogicalResult Importer::importReduce(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1)
    return error(op) << "only single-operand reductions are supported";
  Region &body = op->getRegion(0);
  if (!body.hasOneBlock() || body.front().getNumArguments() != 2)
    return error(op) << "malformed reduction body";
  Block &blk = body.front();
  auto it = blk.begin();
  if (blk.getOperations().size() != 2)
    return error(op) << "only reductions with a single add, maximum or "
                        "minimum in the body are supported";
  Operation &combiner = *it;
  Operation &ret = *std::next(it);
  StringRef kind = combiner.getName().getStringRef();
  bool argsOk = combiner.getNumOperands() == 2 &&
                ((combiner.getOperand(0) == blk.getArgument(0) &&
                  combiner.getOperand(1) == blk.getArgument(1)) ||
                 (combiner.getOperand(0) == blk.getArgument(1) &&
                  combiner.getOperand(1) == blk.getArgument(0)));
  if (!argsOk || ret.getNumOperands() != 1 ||
      ret.getOperand(0) != combiner.getResult(0) ||
      (kind != "stablehlo.add" && kind != "stablehlo.maximum" &&
       kind != "stablehlo.minimum"))
    return error(op) << "only reductions with a single add, maximum or "
                        "minimum in the body are supported (found '"
                     << kind << "')";
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, "dimensions");
  if (failed(dims))
    return failure();
  if (!in[1].c || in[1].c->numElements() != 1)
    return error(op) << "the initial value must be a scalar constant";
  double init = in[1].c->data[0];
  if (!isa<FloatType>(out.type.getElementType()))
    return error(op) << "reductions of integer data are not supported";
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  zb::ZBBuilder zbb(b, loc);
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

LogicalResult Importer::importGather(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  Attribute a = op->getAttr("dimension_numbers");
  std::string text = a ? attrText(a) : "";
  auto offset = parseIntList(text, "offset_dims");
  auto collapsed = parseIntList(text, "collapsed_slice_dims");
  auto startMap = parseIntList(text, "start_index_map");
  auto ivd = parseIntList(text, "index_vector_dim");
  auto obd = parseIntList(text, "operand_batching_dims");
  FailureOr<SmallVector<int64_t>> sizes = i64Array(op, "slice_sizes");
  if (!a || !balanced(text) || failed(offset) || failed(collapsed) ||
      failed(startMap) || failed(ivd) || ivd->size() != 1 || failed(obd) ||
      failed(sizes))
    return error(op) << "cannot parse gather dimension_numbers '" << text
                     << "'";
  RankedTensorType tableT = in[0].type, idxT = in[1].type;
  int64_t ri = idxT.getRank(), ro = tableT.getRank();
  int64_t vecDim = (*ivd)[0];
  bool trailing = vecDim == ri - 1 && ri > 0 && idxT.getDimSize(ri - 1) == 1;
  int64_t batchRank = trailing ? ri - 1 : ri;
  bool ok = (trailing || vecDim == ri) && obd->empty() &&
            *collapsed == SmallVector<int64_t>{0} &&
            *startMap == SmallVector<int64_t>{0} &&
            (int64_t)offset->size() == ro - 1 && (int64_t)sizes->size() == ro &&
            (*sizes)[0] == 1;
  for (int64_t i = 0; ok && i < ro - 1; ++i)
    ok = (*offset)[i] == batchRank + i &&
         (*sizes)[i + 1] == tableT.getDimSize(i + 1);
  if (!ok)
    return error(op) << "only the embedding-lookup form of gather "
                        "(table[indices]) is supported, not '"
                     << text << "'";
  FailureOr<Value> table = materialize(in[0]);
  FailureOr<Value> idx = asIndex(in[1]);
  if (failed(table) || failed(idx))
    return failure();
  zb::ZBBuilder zbb(b, loc);
  Value indices = *idx;
  if (trailing)
    indices = zbb.reshape(indices, idxT.getShape().drop_back());
  out.v = zbb.gather(*table, indices);
  return success();
}
