//===- StableHLOMatMulOps.cpp - dot_general on data -----------------------===//
//
// dot_general -> zb.matmul / zb.batch_matmul, each operand brought to
// [batch, rows, cols] with transposes (or the matmul's transpose flags) and
// reshapes. See StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

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

LogicalResult Importer::importDotGeneral(const OpDef &, Operation *op,
                                         ArrayRef<Val> in, Val &out) {
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

void zb::frontend::stablehlo_import::populateMatMulOps(OpTable &table) {
  using I = Importer;
  // On data even when both operands are constants (no fold).
  static const OpDef defs[] = {
      {"stablehlo.dot_general", &I::importDotGeneral, nullptr},
  };
  table.add(defs);
}
