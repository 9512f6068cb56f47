//===- IndexOps.cpp - ONNX Pad, GatherElements, GatherND, CumSum ---------===//
//
// The indexing ops of Hugging Face exports, on constants (folded) and on
// data:
//   Pad (constant mode)  transformers' label shift, `F.pad(labels, (0, 1),
//                        value=-100)`: zb.concat with constant blocks (any
//                        element type: int64 labels stay int64), zb.slice
//                        for negative pads.
//   GatherElements,      BERT's token_type_ids buffer, the padding mask
//   GatherND             expanded to [B, 1, 1, T]: with constant indices
//                        (what the exporter writes), the flat element
//                        indices are computed at import and the op is one
//                        zb.gather of rows of the data flattened to
//                        [rows, inner] (gradient: zb.scatter_add).
//   CumSum               RoBERTa's position ids: x [.., T] broadcast to
//                        [.., T, T], zb.causal_mask, zb.reduce_sum (exact in
//                        float32 below 2^24); exclusive subtracts x.
// Integer and boolean data go through float32 (ONNXImporter::toFloat).
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::toInts;

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> ONNXImporter::padAmounts(int64_t rank) {
  std::optional<std::string> mode = stringAttr("mode");
  if (mode && *mode != "constant") {
    nodeError() << "mode '" << *mode
                << "' is not supported (only 'constant')";
    return failure();
  }
  SmallVector<int64_t> given;
  if (opsetVersion < 11) {
    FailureOr<std::optional<SmallVector<int64_t>>> a = intsAttr("pads");
    if (failed(a))
      return failure();
    if (!*a) {
      nodeError() << "attribute 'pads' is required";
      return failure();
    }
    given = **a;
  } else {
    FailureOr<SmallVector<int64_t>> p = intsInput(1);
    if (failed(p))
      return failure();
    given = *p;
  }
  SmallVector<int64_t> axes;
  if (hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = intsInput(3);
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      FailureOr<int64_t> n = normalizeAxis(axis, rank, "axes");
      if (failed(n))
        return failure();
      axes.push_back(*n);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  if (given.size() != 2 * axes.size()) {
    nodeError() << "pads has " << given.size() << " entries; expected "
                << 2 * axes.size() << " (begin and end of " << axes.size()
                << " axes)";
    return failure();
  }
  SmallVector<int64_t> pads(2 * rank, 0);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    pads[axis] = given[i];
    pads[rank + axis] = given[axes.size() + i];
  }
  return pads;
}

/// The constant_value of a Pad node (input #2 since opset 11, attribute
/// `value` before), default 0.
static FailureOr<double> padValue(ONNXImporter &im) {
  if (im.opsetVersion < 11) {
    FailureOr<float> v = im.floatAttr("value", 0.0f);
    if (failed(v))
      return failure();
    return double(*v);
  }
  if (!im.hasInput(2))
    return 0.0;
  FailureOr<HostTensor> v = im.hostInput(2);
  if (failed(v))
    return failure();
  if (v->data.size() != 1) {
    im.nodeError() << "constant_value must be a scalar";
    return failure();
  }
  return v->data[0];
}

FailureOr<NodeResults> ONNXImporter::pad() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> pads = padAmounts(rank);
  FailureOr<double> value = padValue(*this);
  if (failed(pads) || failed(value))
    return failure();
  zb::ZBBuilder e(builder, loc);
  Value y = *x;
  for (int64_t d = 0; d < rank; ++d) {
    auto shape = llvm::to_vector(cast<RankedTensorType>(y.getType()).getShape());
    int64_t low = (*pads)[d], high = (*pads)[rank + d];
    if (low < 0 || high < 0) { // crop first
      int64_t begin = std::max<int64_t>(-low, 0),
              end = shape[d] - std::max<int64_t>(-high, 0);
      if (end < begin) {
        nodeError() << "pads " << low << ", " << high << " remove more than "
                    << "the " << shape[d] << " elements of axis " << d;
        return failure();
      }
      SmallVector<int64_t> start(rank, 0), limit(shape), strides(rank, 1);
      start[d] = begin;
      limit[d] = end;
      y = e.slice(y, start, limit, strides);
      shape[d] = end - begin;
    }
    SmallVector<Value> parts;
    for (int64_t amount : {low, int64_t(-1), high}) {
      if (amount == -1) {
        parts.push_back(y);
        continue;
      }
      if (amount <= 0)
        continue;
      HostTensor block;
      block.shape = shape;
      block.shape[d] = amount;
      block.type = type.getElementType();
      block.data.assign(block.numElements(), block.round(*value));
      parts.push_back(zb::ConstantOp::create(builder, loc, block.toAttr()));
    }
    if (parts.size() > 1)
      y = e.concat(parts, d);
  }
  return result(y);
}

FailureOr<HostTensor> ONNXImporter::foldPad(ArrayRef<HostTensor> in) {
  int64_t rank = in[0].shape.size();
  FailureOr<SmallVector<int64_t>> pads = padAmounts(rank);
  FailureOr<double> value = padValue(*this);
  if (failed(pads) || failed(value))
    return failure();
  HostTensor r;
  r.type = in[0].type;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = in[0].shape[d] + (*pads)[d] + (*pads)[rank + d];
    if (n < 0 || n > kMaxFoldElements) {
      nodeError() << "pads give axis " << d << " size " << n;
      return failure();
    }
    r.shape.push_back(n);
  }
  if (r.numElements() > kMaxFoldElements) {
    nodeError() << "the folded result " << formatShape(r.shape)
                << " is too large";
    return failure();
  }
  r.data.assign(r.numElements(), r.round(*value));
  SmallVector<int64_t> src(rank);
  for (int64_t i = 0, n = r.numElements(); i < n; ++i) {
    SmallVector<int64_t> idx = zb::frontend::delinearize(i, r.shape);
    bool inside = true;
    for (int64_t d = 0; d < rank && inside; ++d) {
      src[d] = idx[d] - (*pads)[d];
      inside = src[d] >= 0 && src[d] < in[0].shape[d];
    }
    if (inside)
      r.data[i] = in[0].data[zb::frontend::linearize(src, in[0].shape)];
  }
  return r;
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

FailureOr<HostTensor>
ONNXImporter::gatherElementsIndices(ArrayRef<int64_t> data,
                                    const HostTensor &idx, int64_t axis) {
  if (idx.isFloat() || idx.shape.size() != data.size()) {
    nodeError() << "indices must be integers of the data's rank "
                << data.size() << ", got " << formatShape(idx.shape);
    return failure();
  }
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && idx.shape[d] > data[d]) {
      nodeError() << "indices " << formatShape(idx.shape)
                  << " exceed the data " << formatShape(data) << " on axis "
                  << d;
      return failure();
    }
  HostTensor flat;
  flat.shape = idx.shape;
  flat.type = builder.getI64Type();
  flat.data.resize(idx.data.size());
  int64_t dim = data[axis];
  for (size_t i = 0; i < idx.data.size(); ++i) {
    SmallVector<int64_t> pos = zb::frontend::delinearize(int64_t(i), idx.shape);
    int64_t v = int64_t(idx.data[i]);
    if (v < -dim || v >= dim) {
      nodeError() << "index " << v << " is out of range [" << -dim << ", "
                  << dim << ") of axis " << axis;
      return failure();
    }
    pos[axis] = v < 0 ? v + dim : v;
    flat.data[i] = double(zb::frontend::linearize(pos, data));
  }
  return flat;
}

FailureOr<HostTensor>
ONNXImporter::gatherNDIndices(ArrayRef<int64_t> data, const HostTensor &idx,
                              int64_t batchDims, int64_t &inner) {
  int64_t q = idx.shape.size(), r = data.size();
  if (idx.isFloat() || q < 1 || batchDims < 0 || batchDims >= std::min(q, r)) {
    nodeError() << "integer indices of rank >= 1 and batch_dims in [0, "
                << "min(ranks)) expected, got indices "
                << formatShape(idx.shape) << ", batch_dims " << batchDims;
    return failure();
  }
  int64_t k = idx.shape.back();
  if (k < 1 || batchDims + k > r) {
    nodeError() << "the last dimension of the indices (" << k
                << ") plus batch_dims must not exceed the data's rank " << r;
    return failure();
  }
  for (int64_t d = 0; d < batchDims; ++d)
    if (idx.shape[d] != data[d]) {
      nodeError() << "batch dimension " << d << " differs: indices "
                  << formatShape(idx.shape) << ", data " << formatShape(data);
      return failure();
    }
  ArrayRef<int64_t> lead = data.take_front(batchDims + k);
  inner = zb::frontend::numElements(data.drop_front(batchDims + k));
  HostTensor rows;
  rows.shape.assign(idx.shape.begin(), idx.shape.end() - 1);
  rows.type = builder.getI64Type();
  int64_t n = rows.numElements();
  rows.data.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<int64_t> pos = zb::frontend::delinearize(i, rows.shape);
    SmallVector<int64_t> at(pos.begin(), pos.begin() + batchDims);
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = int64_t(idx.data[i * k + j]);
      int64_t dim = lead[batchDims + j];
      if (v < -dim || v >= dim) {
        nodeError() << "index " << v << " is out of range [" << -dim << ", "
                    << dim << ") of data axis " << batchDims + j;
        return failure();
      }
      at.push_back(v < 0 ? v + dim : v);
    }
    rows.data[i] = double(zb::frontend::linearize(at, lead));
  }
  return rows;
}

FailureOr<NodeResults> ONNXImporter::gatherRows(Value data, int64_t inner,
                                                const HostTensor &rows,
                                                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(data.getType());
  zb::ZBBuilder e(builder, loc);
  Value f = toFloat(data);
  Value table = e.reshape(f, {type.getNumElements() / inner, inner});
  Value indices = zb::ConstantOp::create(builder, loc, rows.toAttr());
  Value g = e.gather(table, indices);
  return result(fromFloat(e.reshape(g, shape), type.getElementType()));
}

/// Indices that are not constants (a data-dependent gather) are refused.
static LogicalResult requireConstantIndices(ONNXImporter &im,
                                            const ImportedValue &idx) {
  if (idx.constant)
    return success();
  im.nodeError() << "indices computed from data are not supported (only "
                    "constant indices, as torch.onnx.export writes for "
                    "masks and buffers)";
  return failure();
}

/// GatherElements with indices computed from data (RoBERTa gathers its
/// token_type_ids buffer with the position ids): the flat element index
/// idx * stride[axis] + (the other coordinates' part, a constant), negative
/// indices wrapped, computed in float32 (the data must have fewer than 2^24
/// elements), then one zb.gather of the flattened data.
static FailureOr<NodeResults> gatherElementsOnData(ONNXImporter &im,
                                                   Value data, Value idx,
                                                   int64_t axis) {
  auto type = cast<RankedTensorType>(data.getType());
  auto it = cast<RankedTensorType>(idx.getType());
  if (it.getRank() != type.getRank()) {
    im.nodeError() << "indices " << it << " must have the data's rank "
                   << type.getRank();
    return failure();
  }
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != axis && it.getDimSize(d) > type.getDimSize(d)) {
      im.nodeError() << "indices " << it << " exceed the data " << type
                     << " on axis " << d;
      return failure();
    }
  if (type.getNumElements() >= (int64_t(1) << 24)) {
    im.nodeError() << "indices computed from data into a tensor of "
                   << type.getNumElements()
                   << " elements are not supported (at most 2^24)";
    return failure();
  }
  zb::ZBBuilder e(im.builder, im.loc);
  SmallVector<int64_t> strides = zb::frontend::stridesOf(type.getShape());
  HostTensor base;
  base.shape.assign(it.getShape().begin(), it.getShape().end());
  base.type = im.builder.getF32Type();
  base.data.resize(base.numElements());
  for (int64_t i = 0, n = base.numElements(); i < n; ++i) {
    SmallVector<int64_t> pos = zb::frontend::delinearize(i, base.shape);
    pos[axis] = 0;
    base.data[i] = double(zb::frontend::linearize(pos, type.getShape()));
  }
  Value f = im.toFloat(idx);
  int64_t dim = type.getDimSize(axis);
  // idx < 0 ? idx + dim : idx
  Value wrapped = e.select(e.compare("lt", f, e.splat(f, 0.0)),
                           e.add(f, e.splat(f, double(dim))), f);
  Value flat = e.add(e.scale(wrapped, double(strides[axis])),
                     zb::ConstantOp::create(im.builder, im.loc, base.toAttr()));
  Value indices = im.fromFloat(flat, im.builder.getI64Type());
  Value table = e.reshape(im.toFloat(data), {type.getNumElements(), 1});
  Value g = e.reshape(e.gather(table, indices), it.getShape());
  return ONNXImporter::result(im.fromFloat(g, type.getElementType()));
}

FailureOr<NodeResults> ONNXImporter::gatherElements() {
  FailureOr<Value> data = tensorInput(0);
  FailureOr<ImportedValue> idx = lookup(1);
  if (failed(data) || failed(idx))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  FailureOr<int64_t> axis = axisOf(data, 0);
  if (failed(axis))
    return failure();
  if (!idx->constant) {
    Type it = typeOf(*idx).getElementType();
    if (!it.isInteger(32) && !it.isInteger(64)) {
      nodeError() << "indices must be i32 or i64, got " << typeOf(*idx);
      return failure();
    }
    return gatherElementsOnData(*this, *data, materialize(*idx), *axis);
  }
  HostTensor h = HostTensor::fromAttr(idx->constant);
  FailureOr<HostTensor> flat =
      gatherElementsIndices(type.getShape(), h, *axis);
  if (failed(flat))
    return failure();
  return gatherRows(*data, 1, *flat, h.shape);
}

FailureOr<NodeResults> ONNXImporter::gatherND() {
  FailureOr<Value> data = tensorInput(0);
  FailureOr<ImportedValue> idx = lookup(1);
  FailureOr<int64_t> batchDims = intAttr("batch_dims", 0);
  if (failed(data) || failed(idx) || failed(batchDims) ||
      failed(requireConstantIndices(*this, *idx)))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  HostTensor h = HostTensor::fromAttr(idx->constant);
  int64_t inner = 1;
  FailureOr<HostTensor> rows =
      gatherNDIndices(type.getShape(), h, *batchDims, inner);
  if (failed(rows))
    return failure();
  SmallVector<int64_t> shape(rows->shape);
  int64_t k = h.shape.back();
  shape.append(type.getShape().begin() + *batchDims + k,
               type.getShape().end());
  return gatherRows(*data, inner, *rows, shape);
}

FailureOr<HostTensor>
ONNXImporter::foldGatherElements(ArrayRef<HostTensor> in) {
  int64_t rank = in[0].shape.size();
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(axisAttr))
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, rank, "axis");
  if (failed(axis))
    return failure();
  FailureOr<HostTensor> flat =
      gatherElementsIndices(in[0].shape, in[1], *axis);
  if (failed(flat))
    return failure();
  HostTensor r = *flat;
  r.type = in[0].type;
  for (double &v : r.data)
    v = in[0].data[int64_t(v)];
  return r;
}

FailureOr<HostTensor> ONNXImporter::foldGatherND(ArrayRef<HostTensor> in) {
  FailureOr<int64_t> batchDims = intAttr("batch_dims", 0);
  if (failed(batchDims))
    return failure();
  int64_t inner = 1;
  FailureOr<HostTensor> rows =
      gatherNDIndices(in[0].shape, in[1], *batchDims, inner);
  if (failed(rows))
    return failure();
  HostTensor r;
  r.type = in[0].type;
  r.shape = rows->shape;
  int64_t k = in[1].shape.back();
  r.shape.append(in[0].shape.begin() + *batchDims + k, in[0].shape.end());
  if (r.numElements() > kMaxFoldElements) {
    nodeError() << "the folded result " << formatShape(r.shape)
                << " is too large";
    return failure();
  }
  for (double row : rows->data)
    for (int64_t j = 0; j < inner; ++j)
      r.data.push_back(in[0].data[int64_t(row) * inner + j]);
  return r;
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// The CumSum axis (input #1, a constant scalar) normalized to `rank`.
static FailureOr<int64_t> cumSumAxis(ONNXImporter &im, int64_t rank) {
  FailureOr<HostTensor> a = im.hostInput(1);
  if (failed(a))
    return failure();
  if (a->isFloat() || a->data.size() != 1) {
    im.nodeError() << "axis must be an integer scalar";
    return failure();
  }
  return im.normalizeAxis(int64_t(a->data[0]), rank, "axis");
}

/// True if element j contributes to element i of a CumSum along one axis.
static bool contributes(int64_t j, int64_t i, bool exclusive, bool reverse) {
  if (reverse)
    return exclusive ? j > i : j >= i;
  return exclusive ? j < i : j <= i;
}

FailureOr<NodeResults> ONNXImporter::cumSum() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> exclusive = intAttr("exclusive", 0),
                     reverse = intAttr("reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getElementType().isInteger(1)) {
    nodeError() << "booleans have no sum; got " << type;
    return failure();
  }
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = cumSumAxis(*this, rank);
  if (failed(axis))
    return failure();
  zb::ZBBuilder e(builder, loc);
  Value f = toFloat(*x);
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      perm.push_back(d);
  perm.push_back(*axis);
  Value moved = e.transpose(f, perm);
  auto movedShape =
      llvm::to_vector(cast<RankedTensorType>(moved.getType()).getShape());
  int64_t n = type.getDimSize(*axis);
  if (n > 8192) {
    nodeError() << "CumSum on data along an axis of " << n
                << " elements is not supported (at most 8192)";
    return failure();
  }
  int64_t rows = type.getNumElements() / std::max<int64_t>(n, 1);
  Value x2 = e.reshape(moved, {rows, n});
  // B[r, a, b] = x[r, b] (forward) or x[r, a] (reverse); zb.causal_mask
  // keeps b <= a; the sum over b (forward) or a (reverse) is the inclusive
  // sum; exclusive subtracts x. No constant matrix: the same ops on the GPU.
  auto ft = cast<RankedTensorType>(x2.getType());
  auto cube = RankedTensorType::get({rows, n, n}, ft.getElementType());
  Value b = e.broadcast(x2, cube, *reverse ? SmallVector<int64_t>{0, 1}
                                           : SmallVector<int64_t>{0, 2});
  Value sums = e.reduceSum(e.causalMask(b, 0.0), {*reverse ? 1 : 2});
  if (*exclusive)
    sums = e.sub(sums, x2);
  Value back = e.transpose(e.reshape(sums, movedShape),
                           invertPermutationVector(perm));
  return result(fromFloat(back, type.getElementType()));
}

FailureOr<HostTensor> ONNXImporter::foldCumSum(ArrayRef<HostTensor> in) {
  FailureOr<int64_t> exclusive = intAttr("exclusive", 0),
                     reverse = intAttr("reverse", 0);
  if (failed(exclusive) || failed(reverse))
    return failure();
  int64_t rank = in[0].shape.size();
  FailureOr<int64_t> axis = cumSumAxis(*this, rank);
  if (failed(axis))
    return failure();
  HostTensor r = in[0];
  int64_t n = in[0].shape[*axis];
  int64_t stride = zb::frontend::stridesOf(in[0].shape)[*axis];
  for (int64_t i = 0, total = r.numElements(); i < total; ++i) {
    int64_t pos = (i / stride) % n, base = i - pos * stride;
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j)
      if (contributes(j, pos, *exclusive, *reverse))
        sum += in[0].data[base + j * stride];
    r.data[i] = r.round(sum);
  }
  return r;
}

void zb::frontend::onnx_import::populateIndexHandlers(OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Pad", 2, &I::pad},
      {"GatherElements", 11, &I::gatherElements},
      {"GatherND", 11, &I::gatherND},
      {"CumSum", 11, &I::cumSum},
  };
  table.add(entries);
}
