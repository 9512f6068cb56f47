//===- StableHLOFolding.cpp - StableHLO ops on constants ------------------===//
//
// Every op whose operands are all compile-time constants (masks, iota
// arithmetic, cosine/sine tables) is folded at import on HostTensors, in
// double precision rounded to the result's element type: the folds the op
// table's rows name (OpDef::fold; an elementwise op's function of doubles
// is in its row). See StableHLOImporterImpl.h.
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

LogicalResult Importer::fold(const OpDef &def, Operation *op, ArrayRef<Val> in,
                             Val &out) {
  FailureOr<HostTensor> r = (this->*def.fold)(def, op, in, out.type);
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

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Operands of the result's size read element i, one-element operands
/// (scalars) element 0.
FailureOr<HostTensor>
Importer::foldElementwiseWith(Operation *op, ArrayRef<Val> in,
                              RankedTensorType type,
                              function_ref<double(ArrayRef<double>)> fn) {
  ArrayRef<int64_t> shape = type.getShape();
  Type elem = type.getElementType();
  auto err = [&] { return error(op); };
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
  return zb::frontend::elementwiseHost(ptrs, shape, elem, fn, err);
}

/// The element type of the first operand (of the result without operands).
static Type firstOperandType(ArrayRef<Val> in, RankedTensorType type) {
  return in.empty() ? type.getElementType() : in[0].c->type;
}

FailureOr<HostTensor> Importer::foldElementwise(const OpDef &def, Operation *op,
                                                ArrayRef<Val> in,
                                                RankedTensorType type) {
  if (!def.scalar)
    return error(op) << "cannot fold";
  return foldElementwiseWith(op, in, type, def.scalar);
}

FailureOr<HostTensor> Importer::foldDivide(const OpDef &def, Operation *op,
                                           ArrayRef<Val> in,
                                           RankedTensorType type) {
  if (!isa<IntegerType>(firstOperandType(in, type)))
    return foldElementwise(def, op, in, type);
  return foldElementwiseWith(op, in, type, [](ArrayRef<double> a) {
    return a[1] == 0 ? -1.0 : std::trunc(a[0] / a[1]);
  });
}

FailureOr<HostTensor> Importer::foldNot(const OpDef &, Operation *op,
                                        ArrayRef<Val> in,
                                        RankedTensorType type) {
  if (firstOperandType(in, type).isInteger(1))
    return foldElementwiseWith(
        op, in, type, [](ArrayRef<double> a) { return a[0] == 0 ? 1.0 : 0.0; });
  return foldElementwiseWith(
      op, in, type, [](ArrayRef<double> a) { return (double)~(int64_t)a[0]; });
}

FailureOr<HostTensor> Importer::foldCompare(const OpDef &, Operation *op,
                                            ArrayRef<Val> in,
                                            RankedTensorType type) {
  int cmp = llvm::StringSwitch<int>(compareDirection(op))
                .Case("EQ", 0)
                .Case("NE", 1)
                .Case("LT", 2)
                .Case("LE", 3)
                .Case("GT", 4)
                .Case("GE", 5)
                .Default(-1);
  if (cmp < 0)
    return badComparison(op);
  return foldElementwiseWith(op, in, type, [cmp](ArrayRef<double> a) {
    bool r[] = {a[0] == a[1], a[0] != a[1], a[0]<a[1], a[0] <= a[1], a[0]> a[1],
                a[0] >= a[1]};
    return r[cmp] ? 1.0 : 0.0;
  });
}

//===----------------------------------------------------------------------===//
// The ops that move or combine elements
//===----------------------------------------------------------------------===//

FailureOr<HostTensor> Importer::foldIota(const OpDef &, Operation *op,
                                         ArrayRef<Val>, RankedTensorType type) {
  ArrayRef<int64_t> shape = type.getShape();
  FailureOr<SmallVector<int64_t>> dim = i64Array(op, "iota_dimension");
  if (failed(dim))
    return failure();
  if (dim->size() != 1 || (*dim)[0] < 0 || (*dim)[0] >= (int64_t)shape.size())
    return error(op) << "bad iota_dimension";
  return zb::frontend::iotaHost(shape, (*dim)[0], type.getElementType());
}

FailureOr<HostTensor> Importer::foldBroadcastInDim(const OpDef &, Operation *op,
                                                   ArrayRef<Val> in,
                                                   RankedTensorType type) {
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, "broadcast_dimensions");
  if (failed(dims))
    return failure();
  return zb::frontend::broadcastInDimHost(*in[0].c, type.getShape(), *dims,
                                          [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldReshape(const OpDef &, Operation *op,
                                            ArrayRef<Val> in,
                                            RankedTensorType type) {
  return zb::frontend::reshapeHost(*in[0].c, type.getShape(),
                                   [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldTranspose(const OpDef &, Operation *op,
                                              ArrayRef<Val> in,
                                              RankedTensorType) {
  FailureOr<SmallVector<int64_t>> perm = i64Array(op, "permutation");
  if (failed(perm))
    return failure();
  return zb::frontend::transposeHost(*in[0].c, *perm,
                                     [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldSlice(const OpDef &, Operation *op,
                                          ArrayRef<Val> in,
                                          RankedTensorType type) {
  FailureOr<SmallVector<int64_t>> start = i64Array(op, "start_indices");
  FailureOr<SmallVector<int64_t>> step = i64Array(op, "strides");
  if (failed(start) || failed(step))
    return failure();
  return zb::frontend::sliceHost(*in[0].c, *start, *step, type.getShape(),
                                 [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldReverse(const OpDef &, Operation *op,
                                            ArrayRef<Val> in,
                                            RankedTensorType) {
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, "dimensions");
  if (failed(dims))
    return failure();
  return zb::frontend::reverseHost(*in[0].c, *dims, [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldDynamicSlice(const OpDef &, Operation *op,
                                                 ArrayRef<Val> in,
                                                 RankedTensorType type) {
  FailureOr<SmallVector<int64_t>> sizes = i64Array(op, "slice_sizes");
  if (failed(sizes))
    return failure();
  FailureOr<SmallVector<int64_t>> start =
      staticStarts(op, in, 1, in[0].c->shape, *sizes);
  if (failed(start))
    return failure();
  SmallVector<int64_t> step(start->size(), 1);
  return zb::frontend::sliceHost(*in[0].c, *start, step, type.getShape(),
                                 [&] { return error(op); });
}

FailureOr<HostTensor> Importer::foldDynamicUpdateSlice(const OpDef &,
                                                       Operation *op,
                                                       ArrayRef<Val> in,
                                                       RankedTensorType) {
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

FailureOr<HostTensor> Importer::foldConcatenate(const OpDef &, Operation *op,
                                                ArrayRef<Val> in,
                                                RankedTensorType) {
  FailureOr<SmallVector<int64_t>> dim = i64Array(op, "dimension");
  if (failed(dim))
    return failure();
  if (dim->size() != 1)
    return error(op) << "bad dimension";
  SmallVector<HostTensor> inputs;
  for (const Val &v : in)
    inputs.push_back(*v.c);
  return zb::frontend::concatHost(inputs, (*dim)[0], [&] { return error(op); });
}

//===----------------------------------------------------------------------===//
// gather and reduce
//===----------------------------------------------------------------------===//

FailureOr<HostTensor> Importer::foldGather(const OpDef &, Operation *op,
                                           ArrayRef<Val> in,
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

FailureOr<HostTensor> Importer::foldReduce(const OpDef &, Operation *op,
                                           ArrayRef<Val> in,
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
