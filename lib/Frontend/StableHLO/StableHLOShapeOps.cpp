//===- StableHLOShapeOps.cpp - Shape ops and gather on data ---------------===//
//
// Ops on data that move elements: broadcast_in_dim, reshape, transpose,
// slice, concatenate, and gather (table[indices], jnp.take_along_axis,
// x[jnp.arange(n), t]; parseGatherDims checks the dimension numbers, which
// the fold of gather uses too); the rows of these ops and of iota and
// reverse (folded only). See StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

//===----------------------------------------------------------------------===//
// broadcast_in_dim and the shape ops
//===----------------------------------------------------------------------===//

/// broadcast_in_dim of floats; of integer data a reshape when it only inserts
/// size-1 dimensions, else a broadcast through floats.
LogicalResult Importer::importBroadcastInDim(const OpDef &, Operation *op,
                                             ArrayRef<Val> in, Val &out) {
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

LogicalResult Importer::importReshape(const OpDef &, Operation *,
                                      ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  out.v = zbb.reshape(*x, out.type.getShape());
  return success();
}

LogicalResult Importer::importTranspose(const OpDef &, Operation *op,
                                        ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
  auto perm = dimensionsAttr(op, "permutation", in[0].type.getRank(),
                             /*permutation=*/true);
  FailureOr<Value> x = materialize(in[0]);
  if (failed(perm) || failed(x))
    return failure();
  out.v = zbb.transpose(*x, *perm);
  return success();
}

LogicalResult Importer::importSlice(const OpDef &, Operation *op,
                                    ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
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
    if ((*s)[d] < 0 || (*s)[d] > (*l)[d] || (*l)[d] > shape[d] || (*st)[d] < 1)
      return error(op) << "dimension " << d << ": start " << (*s)[d]
                       << ", limit " << (*l)[d] << ", stride " << (*st)[d]
                       << " do not fit 0 <= start <= limit <= " << shape[d]
                       << ", stride >= 1";
  out.v = zbb.slice(*x, *s, *l, *st);
  return success();
}

LogicalResult Importer::importConcatenate(const OpDef &, Operation *op,
                                          ArrayRef<Val> in, Val &out) {
  zb::ZBBuilder zbb(b, loc);
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
// gather
//===----------------------------------------------------------------------===//

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

/// Checks that the gather `op` has a form importGather supports, turning the
/// iota index components of x[jnp.arange(n), t] into batching dims first:
/// `g` gets its dimension numbers, `indices` the (data) index operand.
/// Returns the operand axis indexed, one index per element with a slice of 1
/// there; every other operand dimension is batching or a full slice (an
/// offset). Reports the error naming the dimension numbers.
FailureOr<int64_t> Importer::checkGatherForm(Operation *op, ArrayRef<Val> in,
                                             RankedTensorType resultT,
                                             GatherDims &g, Val &indices) {
  RankedTensorType tableT = in[0].type;
  std::string text = op->getAttr("dimension_numbers")
                         ? attrText(op->getAttr("dimension_numbers"))
                         : "";
  FailureOr<GatherDims> dims = parseGatherDims(
      op, tableT.getShape(), in[1].type.getShape(), resultT.getShape());
  if (failed(dims))
    return error(op) << "cannot parse gather dimension_numbers '" << text
                     << "' (or they do not match the operand shapes)";
  g = *dims;
  indices = in[1];
  auto unsupportedForm = [&] {
    return error(op) << "only the embedding-lookup (table[indices], "
                        "jnp.take), jnp.take_along_axis and "
                        "x[jnp.arange(n), t] forms of gather are supported, "
                        "not '"
                     << text << "'";
  };
  // x[jnp.arange(n), t]: index components that are iotas along a batch
  // dimension of the indices become batching dims; one data component
  // stays.
  if (g.startIndexMap.size() > 1 &&
      failed(iotaComponentsAsBatching(op, g, in[1].type, indices)))
    return unsupportedForm();
  // One index per element, on operand axis `a`, a slice of 1 there.
  if (g.startIndexMap.size() != 1)
    return unsupportedForm();
  int64_t a = g.startIndexMap[0];
  if (g.sliceSizes[a] != 1)
    return unsupportedForm();
  // Every other operand dim: batching, or a full slice (an offset).
  for (int64_t d = 0; d < tableT.getRank(); ++d) {
    if (d == a || llvm::is_contained(g.operandBatchingDims, d))
      continue;
    if (llvm::is_contained(g.collapsedSliceDims, d)) {
      if (tableT.getDimSize(d) != 1)
        return unsupportedForm();
      continue;
    }
    if (g.sliceSizes[d] != tableT.getDimSize(d))
      return unsupportedForm();
  }
  return a;
}

/// table[indices] on axis `a` (no batching dims): zb.gather on `a` brought to
/// the front, giving [IB..., operand dims but `a`...].
static Value gatherOnAxis(zb::ZBBuilder &zbb, Value table, Value indices,
                          int64_t a) {
  int64_t ro = cast<RankedTensorType>(table.getType()).getRank();
  SmallVector<int64_t> perm = {a};
  for (int64_t d = 0; d < ro; ++d)
    if (d != a)
      perm.push_back(d);
  Value t = table;
  if (a != 0)
    t = zbb.transpose(t, perm);
  return zbb.gather(t, indices);
}

/// jnp.take_along_axis on axis `a` with `indices` [IB...] (shape `ib`):
/// X = the operand as [batch (in IB order)..., offsets `offs` but `a`...,
/// a], broadcast over the unpaired index dims; times one_hot(indices) on
/// the last axis, summed over it: [IB..., offsets but `a`...].
static Value takeAlongAxis(zb::ZBBuilder &zbb, Value table, Value indices,
                           const GatherDims &g, int64_t a,
                           ArrayRef<int64_t> ib, ArrayRef<int64_t> offs) {
  auto tableT = cast<RankedTensorType>(table.getType());
  // Position in [IB...] of indices dimension `sd` (index vector removed).
  auto ibPos = [&](int64_t sd) {
    return sd > g.indexVectorDim ? sd - 1 : sd;
  };
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
  Value x = identity ? table : zbb.transpose(table, perm);
  Type fe = tableT.getElementType();
  auto fullT = RankedTensorType::get(full, fe);
  x = zbb.broadcast(x, fullT, xDims);
  Value oh = zbb.oneHot(indices, classes, fe);
  SmallVector<int64_t> ohDims;
  for (int64_t i = 0; i < (int64_t)ib.size(); ++i)
    ohDims.push_back(i);
  ohDims.push_back(full.size() - 1);
  oh = zbb.broadcast(oh, fullT, ohDims);
  return zbb.reduceSum(zbb.mul(x, oh), {(int64_t)full.size() - 1});
}

/// The gathered values `r` as [IB... (`nb` dims), offsets...] moved to the
/// result's order (offsets at offset_dims) and shape `resultT`.
static Value toGatherResult(zb::ZBBuilder &zbb, Value r, const GatherDims &g,
                            int64_t nb, RankedTensorType resultT) {
  int64_t rank = resultT.getRank();
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
  if (cast<RankedTensorType>(r.getType()).getShape() != resultT.getShape())
    r = zbb.reshape(r, resultT.getShape());
  return r;
}

/// gather on data, in three forms:
/// - table[indices] on one axis `a` (no batching dims, one index per
///   element, full slices elsewhere): zb.gather, with zb.transpose when `a`
///   is not the leading axis or the offsets come out in another order;
/// - jnp.take_along_axis (operand_batching_dims pair the indices' leading
///   dimensions with the operand's, one index per element on axis `a`):
///   sum over `a` of operand * one_hot(indices) (zb.one_hot, zb.mul,
///   zb.reduce_sum): differentiable in the operand, O(elements x classes);
/// - x[jnp.arange(n), t], taken as take_along_axis (checkGatherForm);
/// everything else is an error naming the dimension numbers. Indices are
/// assumed in range (StableHLO clamps them; zb.gather is undefined out of
/// range and the one-hot form gives 0), as JAX's default `fill` and
/// `promise_in_bounds` modes need for in-range indices.
LogicalResult Importer::importGather(const OpDef &, Operation *op,
                                     ArrayRef<Val> in, Val &out) {
  GatherDims g;
  Val indexVal;
  FailureOr<int64_t> axis = checkGatherForm(op, in, out.type, g, indexVal);
  if (failed(axis))
    return failure();
  int64_t a = *axis;
  RankedTensorType tableT = in[0].type, idxT = indexVal.type;
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
  for (int64_t d = 0; d < idxT.getRank(); ++d)
    if (d != g.indexVectorDim)
      ib.push_back(idxT.getDimSize(d));
  Value indices = *idx;
  if (g.indexVectorDim < idxT.getRank())
    indices = zbb.reshape(indices, ib);
  // The operand dims of the offsets, in order (`a` among them with size 1
  // when not collapsed).
  SmallVector<int64_t> offs;
  for (int64_t d = 0; d < tableT.getRank(); ++d)
    if (!llvm::is_contained(g.collapsedSliceDims, d) &&
        !llvm::is_contained(g.operandBatchingDims, d))
      offs.push_back(d);
  // The gathered values, then as [IB..., offsets...]: the operand dims but
  // `a` (and the batching ones) hold the offsets and the collapsed size-1
  // dims; `a` itself, when not collapsed, is size 1.
  Value r = g.operandBatchingDims.empty()
                ? gatherOnAxis(zbb, *table, indices, a)
                : takeAlongAxis(zbb, *table, indices, g, a, ib, offs);
  SmallVector<int64_t> shape(ib);
  for (int64_t d : offs)
    shape.push_back(d == a ? 1 : tableT.getDimSize(d));
  r = zbb.reshape(r, shape);
  out.v = toGatherResult(zbb, r, g, ib.size(), out.type);
  return success();
}

//===----------------------------------------------------------------------===//
// The rows of the shape ops
//===----------------------------------------------------------------------===//

void zb::frontend::stablehlo_import::populateShapeOps(OpTable &table) {
  using I = Importer;
  // name, on data, on constants.
  static const OpDef defs[] = {
      {"stablehlo.broadcast_in_dim", &I::importBroadcastInDim,
       &I::foldBroadcastInDim},
      {"stablehlo.reshape", &I::importReshape, &I::foldReshape},
      {"stablehlo.transpose", &I::importTranspose, &I::foldTranspose},
      {"stablehlo.slice", &I::importSlice, &I::foldSlice},
      {"stablehlo.concatenate", &I::importConcatenate, &I::foldConcatenate},
      {"stablehlo.gather", &I::importGather, &I::foldGather},
      // Constant operands only.
      {"stablehlo.iota", nullptr, &I::foldIota},
      {"stablehlo.reverse", nullptr, &I::foldReverse},
  };
  table.add(defs);
}
