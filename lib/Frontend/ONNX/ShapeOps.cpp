//===- ShapeOps.cpp - ONNX shape ops -----------------------------------===//
//
// Shape (always a constant), Reshape/Unsqueeze/Squeeze/Flatten, Transpose,
// Expand, Concat, Slice, Split and Gather on tensors, and the shape
// computations their folds share (ConstantFolding.cpp).
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace zb::frontend::onnx_import;

/// Shape: always a constant (static shapes), with opset-15 start/end.
FailureOr<NodeResults> ONNXImporter::shape() {
  FailureOr<ImportedValue> x = lookup(0);
  FailureOr<int64_t> start = intAttr("start", 0);
  if (failed(x) || failed(start))
    return failure();
  ArrayRef<int64_t> s = typeOf(*x).getShape();
  int64_t rank = s.size();
  FailureOr<int64_t> end = intAttr("end", rank);
  if (failed(end))
    return failure();
  auto clampIndex = [&](int64_t v) {
    return std::min(std::max(v < 0 ? v + rank : v, int64_t(0)), rank);
  };
  int64_t b = clampIndex(*start), e = clampIndex(*end);
  SmallVector<int64_t> dims;
  for (int64_t i = b; i < e; ++i)
    dims.push_back(s[i]);
  return NodeResults{{Value(), DenseElementsAttr::get(
                                   RankedTensorType::get({int64_t(dims.size())},
                                                         builder.getI64Type()),
                                   ArrayRef<int64_t>(dims))}};
}

/// Reshape / Unsqueeze / Squeeze / Flatten of a tensor: zb.reshape.
FailureOr<NodeResults> ONNXImporter::reshape() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SmallVector<int64_t>> shape = reshapeTarget(type.getShape());
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) == type.getShape())
    return result(*x);
  return result(zb::ReshapeOp::create(
      builder, loc, RankedTensorType::get(*shape, type.getElementType()), *x));
}

FailureOr<NodeResults> ONNXImporter::transpose() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SmallVector<int64_t>> perm = permutation(type.getRank());
  if (failed(perm))
    return failure();
  if (llvm::equal(*perm, llvm::seq<int64_t>(0, type.getRank())))
    return result(*x);
  SmallVector<int64_t> shape;
  for (int64_t p : *perm)
    shape.push_back(type.getDimSize(p));
  return result(zb::TransposeOp::create(
      builder, loc, RankedTensorType::get(shape, type.getElementType()), *x,
      *perm));
}

FailureOr<NodeResults> ONNXImporter::expand() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<SmallVector<int64_t>> target = failure();
  if (failed(x) || failed(target = intsInput(1)))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(type.getShape(), *target);
  if (!shape) {
    nodeError() << "cannot expand " << type << " to " << formatShape(*target);
    return failure();
  }
  FailureOr<Value> y = broadcastTo(*x, *shape);
  if (failed(y))
    return failure();
  return result(*y);
}

/// Tile(x, repeats) as the broadcast of x [d0, d1, ...] into
/// [r0, d0, r1, d1, ...] (x on the odd dimensions) reshaped to
/// [r0 * d0, r1 * d1, ...]; `wide` and `dims` are that broadcast's shape and
/// dimensions, `shape` the result's.
LogicalResult ONNXImporter::tileShapes(ArrayRef<int64_t> in,
                                       ArrayRef<int64_t> repeats,
                                       SmallVector<int64_t> &wide,
                                       SmallVector<int64_t> &dims,
                                       SmallVector<int64_t> &shape) {
  if (repeats.size() != in.size()) {
    nodeError() << "repeats has " << repeats.size()
                << " entries, the input has rank " << in.size();
    return failure();
  }
  for (auto [i, r] : llvm::enumerate(repeats)) {
    if (r < 1 || r > kMaxElements / in[i]) {
      nodeError() << "repeat " << r << " of dimension " << i
                  << " is not supported (at least 1)";
      return failure();
    }
    wide.append({r, in[i]});
    dims.push_back(2 * i + 1);
    shape.push_back(r * in[i]);
  }
  double total = 1;
  for (int64_t d : shape)
    total *= double(d);
  if (total > double(kMaxElements)) {
    nodeError() << "the result " << formatShape(shape) << " is too large";
    return failure();
  }
  return success();
}

FailureOr<NodeResults> ONNXImporter::tile() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<SmallVector<int64_t>> repeats = failure();
  if (failed(x) || failed(repeats = intsInput(1)))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  SmallVector<int64_t> wide, dims, shape;
  if (failed(tileShapes(type.getShape(), *repeats, wide, dims, shape)))
    return failure();
  Value y = zb::BroadcastInDimOp::create(
      builder, loc, RankedTensorType::get(wide, type.getElementType()), *x,
      dims);
  return result(zb::ReshapeOp::create(
      builder, loc, RankedTensorType::get(shape, type.getElementType()), y));
}

FailureOr<NodeResults> ONNXImporter::concat() {
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(axisAttr))
    return failure();
  SmallVector<Value> inputs;
  for (int i = 0; i < numInputs(); ++i) {
    FailureOr<Value> v = tensorInput(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty()) {
    nodeError() << "expected at least one input";
    return failure();
  }
  auto first = cast<RankedTensorType>(inputs[0].getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, first.getRank(), "axis");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType()) {
      nodeError() << "inputs differ in rank or element type: " << first
                  << " and " << t;
      return failure();
    }
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != *axis && t.getDimSize(d) != first.getDimSize(d)) {
        nodeError() << "inputs differ in dimension " << d << ": " << first
                    << " and " << t;
        return failure();
      }
    shape[*axis] += t.getDimSize(*axis);
  }
  if (inputs.size() == 1)
    return result(inputs[0]);
  return result(zb::ConcatOp::create(
      builder, loc, RankedTensorType::get(shape, first.getElementType()),
      inputs, uint64_t(*axis)));
}

FailureOr<NodeResults> ONNXImporter::slice() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SliceSpec> spec = sliceSpec(type.getShape());
  if (failed(spec))
    return failure();
  if (ArrayRef<int64_t>(spec->shape) == type.getShape() &&
      spec->reversed.empty())
    return result(*x);
  SmallVector<int64_t> limit;
  for (int64_t d = 0; d < type.getRank(); ++d)
    limit.push_back(spec->shape[d] == 0
                        ? spec->start[d]
                        : spec->start[d] +
                              (spec->shape[d] - 1) * spec->step[d] + 1);
  Value y = *x;
  if (ArrayRef<int64_t>(spec->shape) != type.getShape())
    y = zb::SliceOp::create(
        builder, loc,
        RankedTensorType::get(spec->shape, type.getElementType()), *x,
        spec->start, limit, spec->step);
  // A reversed axis: moved first, its rows gathered in reverse order
  // (constant indices; gradient by zb.scatter_add), moved back.
  for (int64_t axis : spec->reversed) {
    int64_t n = spec->shape[axis];
    if (n <= 1)
      continue;
    auto yt = cast<RankedTensorType>(y.getType());
    SmallVector<int64_t> perm = {axis};
    for (int64_t d = 0; d < yt.getRank(); ++d)
      if (d != axis)
        perm.push_back(d);
    zb::ZBBuilder e(builder, loc);
    Value front = e.transpose(toFloat(y), perm);
    HostTensor rows;
    rows.type = builder.getI64Type();
    rows.shape = {n};
    for (int64_t i = n - 1; i >= 0; --i)
      rows.data.push_back(double(i));
    Value flipped = e.gather(
        front, zb::ConstantOp::create(builder, loc, rows.toAttr()));
    y = fromFloat(e.transpose(flipped, invertPermutationVector(perm)), yt.getElementType());
  }
  return result(y);
}

/// Split: sizes from input #1 (opset 13+), the `split` attribute, or equal
/// parts (one per output; opset 18 `num_outputs`).
FailureOr<NodeResults> ONNXImporter::split() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> axis = axisOf(x, /*defaultAxis=*/0);
  if (failed(axis))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = intsInput(1);
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> s = intsAttr("split");
    if (failed(s))
      return failure();
    if (*s) {
      sizes = **s;
    } else {
      int64_t n = numOutputs();
      if (n == 0) {
        nodeError() << "has no outputs";
        return failure();
      }
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back((dim + n - 1) / n);
      sizes.back() = dim - (n - 1) * ((dim + n - 1) / n);
    }
  }
  if (int64_t(sizes.size()) != numOutputs()) {
    nodeError() << "split sizes " << formatShape(sizes) << " do not split "
                << dim << " into " << numOutputs() << " parts";
    return failure();
  }
  return splitInto(*x, *axis, sizes);
}

FailureOr<NodeResults> ONNXImporter::splitInto(Value x, int64_t axis,
                                               ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t dim = type.getDimSize(axis);
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (total != dim || sizes.empty() ||
      llvm::any_of(sizes, [](int64_t s) { return s <= 0; })) {
    nodeError() << "split sizes " << formatShape(sizes) << " do not split "
                << dim << " into " << sizes.size() << " parts";
    return failure();
  }
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = s;
    types.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  auto op = zb::SplitOp::create(builder, loc, types, x, uint64_t(axis));
  NodeResults results;
  for (Value r : op.getResults())
    results.push_back({r, {}});
  return results;
}

/// SplitToSequence (what torch.split / chunk export to without the
/// optimizer): the parts of a zb.split as a sequence. `split` is a scalar
/// (parts of that size, the last one smaller), a 1-D list of sizes, or
/// absent (parts of size 1, the axis removed unless keepdims).
FailureOr<NodeResults> ONNXImporter::splitToSequence() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> axis = axisOf(x, /*defaultAxis=*/0);
  FailureOr<int64_t> keepDims = intAttr("keepdims", 1);
  if (failed(axis) || failed(keepDims))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (hasInput(1)) {
    FailureOr<DenseElementsAttr> split = constantInput(1);
    if (failed(split))
      return failure();
    FailureOr<SmallVector<int64_t>> s = intsInput(1);
    if (failed(s))
      return failure();
    if (split->getType().getRank() == 0) {
      int64_t size = s->front();
      if (size <= 0) {
        nodeError() << "split size " << size << " must be positive";
        return failure();
      }
      for (int64_t done = 0; done < dim; done += size)
        sizes.push_back(std::min(size, dim - done));
    } else {
      sizes = *s;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = *keepDims == 0;
  }
  FailureOr<NodeResults> parts = splitInto(*x, *axis, sizes);
  if (failed(parts))
    return failure();
  ImportedValue sequence;
  sequence.isSequence = true;
  for (ImportedValue &part : *parts) {
    if (squeeze) {
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + *axis);
      part.value = zb::ReshapeOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()),
          part.value);
    }
    sequence.sequence.push_back(part);
  }
  return NodeResults{sequence};
}

/// SequenceAt(sequence, position) with a constant position (negative counts
/// from the end).
FailureOr<NodeResults> ONNXImporter::sequenceAt() {
  FailureOr<ImportedValue> seq = sequenceInput(0);
  FailureOr<SmallVector<int64_t>> position = failure();
  if (failed(seq) || failed(position = intsInput(1)))
    return failure();
  int64_t n = seq->sequence.size();
  if (position->size() != 1 || position->front() < -n ||
      position->front() >= n) {
    nodeError() << "position " << formatShape(*position)
                << " is out of range for a sequence of " << n << " tensors";
    return failure();
  }
  int64_t i = position->front() < 0 ? position->front() + n : position->front();
  return NodeResults{seq->sequence[i]};
}

/// Gather of a tensor: rows of a table (axis 0) -> zb.gather; one constant
/// index along another axis -> zb.slice + zb.reshape.
/// Gather of integer or boolean data (TorchScript's BERT gathers its
/// boolean mask): the float32 gather of the data, converted back.
FailureOr<NodeResults> ONNXImporter::gather() {
  FailureOr<Value> raw = tensorInput(0);
  if (failed(raw))
    return failure();
  Type elt = cast<RankedTensorType>(raw->getType()).getElementType();
  if (isa<FloatType>(elt))
    return gatherOf(*raw);
  FailureOr<NodeResults> r = gatherOf(toFloat(*raw));
  if (failed(r))
    return failure();
  return result(fromFloat(materialize((*r)[0]), elt));
}

FailureOr<NodeResults> ONNXImporter::gatherOf(Value dataValue) {
  FailureOr<Value> data = dataValue;
  FailureOr<ImportedValue> idx = lookup(1);
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(data) || failed(idx) || failed(axisAttr))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  RankedTensorType idxType = typeOf(*idx);
  if (!idxType.getElementType().isInteger(64) &&
      !idxType.getElementType().isInteger(32)) {
    nodeError() << "indices must be i32 or i64, got " << idxType;
    return failure();
  }
  int64_t dim = type.getDimSize(*axis);
  if (idx->constant) {
    HostTensor h = HostTensor::fromAttr(idx->constant);
    for (double &v : h.data) {
      if (v < -dim || v >= dim) {
        nodeError() << "index " << int64_t(v) << " is out of range [" << -dim
                    << ", " << dim << ")";
        return failure();
      }
      if (v < 0)
        v += dim;
    }
    if (h.shape.empty()) {
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
          strides(type.getRank(), 1), shape(type.getShape()), outShape;
      start[*axis] = int64_t(h.data[0]);
      limit[*axis] = start[*axis] + 1;
      shape[*axis] = 1;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (d != *axis)
          outShape.push_back(type.getDimSize(d));
      Value s = zb::SliceOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()),
          *data, start, limit, strides);
      return result(zb::ReshapeOp::create(
          builder, loc, RankedTensorType::get(outShape, type.getElementType()),
          s));
    }
    if (*axis == 0) {
      Value indices = zb::ConstantOp::create(builder, loc, h.toAttr());
      SmallVector<int64_t> shape(h.shape);
      shape.append(type.getShape().begin() + 1, type.getShape().end());
      return result(zb::GatherOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()),
          *data, indices));
    }
  }
  FailureOr<Value> indices = failure();
  if (idx->constant) { // negative indices wrapped
    HostTensor h = HostTensor::fromAttr(idx->constant);
    for (double &v : h.data)
      if (v < 0)
        v += dim;
    indices = Value(zb::ConstantOp::create(builder, loc, h.toAttr()));
  } else {
    indices = tensorInput(1);
  }
  if (failed(indices))
    return failure();
  // Another axis: moved first, gathered, the indices' dimensions put back
  // where the axis was.
  zb::ZBBuilder e(builder, loc);
  int64_t rank = type.getRank(), q = idxType.getRank();
  SmallVector<int64_t> perm = {*axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      perm.push_back(d);
  if (*axis == 0)
    return result(e.gather(*data, *indices));
  Value g = e.gather(e.transpose(*data, perm), *indices);
  // g: [idx..., d0 .. d(axis-1), d(axis+1) ...] -> [d0 .. d(axis-1), idx...,
  // d(axis+1) ...]
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < *axis; ++d)
    out.push_back(q + d);
  for (int64_t d = 0; d < q; ++d)
    out.push_back(d);
  for (int64_t d = *axis; d < rank - 1; ++d)
    out.push_back(q + d);
  return result(e.transpose(g, out));
}

/// Axes of Unsqueeze/Squeeze/Reduce*: the `axes` input #1 (newer opsets) or
/// attribute; nullopt when neither is given.
FailureOr<std::optional<SmallVector<int64_t>>> ONNXImporter::axesOperand() {
  if (hasInput(1)) {
    FailureOr<SmallVector<int64_t>> v = intsInput(1);
    if (failed(v))
      return failure();
    return std::optional<SmallVector<int64_t>>(*v);
  }
  return intsAttr("axes");
}

FailureOr<SmallVector<int64_t>>
ONNXImporter::reshapeTarget(ArrayRef<int64_t> in) {
  llvm::StringRef op = opType();
  if (op == "Unsqueeze")
    return unsqueezeShape(in);
  if (op == "Squeeze")
    return squeezeShape(in);
  if (op == "Flatten")
    return flattenShape(in);
  return reshapeShape(in);
}

/// Unsqueeze: a dimension of 1 inserted at each of the axes (of the result).
FailureOr<SmallVector<int64_t>>
ONNXImporter::unsqueezeShape(ArrayRef<int64_t> in) {
  FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand();
  if (failed(axes))
    return failure();
  if (!*axes) {
    nodeError() << "axes are missing";
    return failure();
  }
  int64_t rank = int64_t(in.size() + (*axes)->size());
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : **axes) {
    FailureOr<int64_t> n = normalizeAxis(a, rank, "axis");
    if (failed(n))
      return failure();
    if (inserted[*n]) {
      nodeError() << "axis " << a << " is repeated";
      return failure();
    }
    inserted[*n] = true;
  }
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : in[next++]);
  return shape;
}

/// Squeeze: the given dimensions of size 1 removed (all of them by default).
FailureOr<SmallVector<int64_t>>
ONNXImporter::squeezeShape(ArrayRef<int64_t> in) {
  FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand();
  if (failed(axes))
    return failure();
  int64_t rank = in.size();
  SmallVector<bool> removed(rank, false);
  if (*axes) {
    for (int64_t a : **axes) {
      FailureOr<int64_t> n = normalizeAxis(a, rank, "axis");
      if (failed(n))
        return failure();
      if (in[*n] != 1) {
        nodeError() << "cannot squeeze dimension " << a << " of size "
                    << in[*n];
        return failure();
      }
      removed[*n] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      removed[i] = in[i] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    if (!removed[i])
      shape.push_back(in[i]);
  return shape;
}

/// Flatten: [prod(in[:axis]), prod(in[axis:])].
FailureOr<SmallVector<int64_t>>
ONNXImporter::flattenShape(ArrayRef<int64_t> in) {
  FailureOr<int64_t> axis = intAttr("axis", 1);
  if (failed(axis))
    return failure();
  int64_t rank = in.size();
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a > rank) {
    nodeError() << "axis " << *axis << " is out of range for rank " << rank;
    return failure();
  }
  int64_t outer = 1;
  for (int64_t i = 0; i < a; ++i)
    outer *= in[i];
  return SmallVector<int64_t>{outer, zb::frontend::numElements(in) /
                                         std::max<int64_t>(outer, 1)};
}

/// Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred.
FailureOr<SmallVector<int64_t>>
ONNXImporter::reshapeShape(ArrayRef<int64_t> in) {
  int64_t inElements = zb::frontend::numElements(in);
  FailureOr<SmallVector<int64_t>> target = intsInput(1);
  FailureOr<int64_t> allowZero = intAttr("allowzero", 0);
  if (failed(target) || failed(allowZero))
    return failure();
  SmallVector<int64_t> shape;
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !*allowZero) {
      if (i >= in.size()) {
        nodeError() << "shape entry #" << i << " is 0 but the input has rank "
                    << in.size();
        return failure();
      }
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0) {
        nodeError() << "more than one -1 in the shape";
        return failure();
      }
      inferred = i;
      shape.push_back(1);
      continue;
    }
    if (d < 0 || d > kMaxElements) {
      nodeError() << "invalid shape entry " << d;
      return failure();
    }
    known *= std::max<int64_t>(d, 1);
    shape.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || inElements % known != 0) {
      nodeError() << "cannot infer -1: " << inElements
                  << " elements do not divide into " << formatShape(shape);
      return failure();
    }
    shape[inferred] = inElements / known;
  }
  int64_t outElements = 1;
  for (int64_t d : shape)
    outElements *= d;
  if (outElements != inElements) {
    nodeError() << "cannot reshape " << formatShape(in) << " to "
                << formatShape(shape);
    return failure();
  }
  return shape;
}

FailureOr<ONNXImporter::SliceSpec>
ONNXImporter::sliceSpec(ArrayRef<int64_t> in) {
  int64_t rank = in.size();
  FailureOr<SmallVector<int64_t>> starts = intsInput(1), ends = failure();
  if (failed(starts) || failed(ends = intsInput(2)))
    return failure();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = intsInput(3);
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  }
  if (hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = intsInput(4);
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size()) {
    nodeError() << "starts, ends, axes and steps differ in length";
    return failure();
  }
  SliceSpec spec;
  spec.start.assign(rank, 0);
  spec.step.assign(rank, 1);
  spec.shape.assign(in.begin(), in.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> axis = normalizeAxis(axes[i], rank, "axis");
    if (failed(axis))
      return failure();
    int64_t dim = in[*axis], step = steps[i];
    if (step == 0) {
      nodeError() << "step 0 is not allowed";
      return failure();
    }
    if (step < 0) {
      // ONNX: start clamped to [0, dim - 1], end to [-1, dim - 1]; the
      // elements s, s - |step|, ... > e, as a slice with step |step| from
      // the last of them, reversed (torch's flip, TorchScript's x[::-1]).
      auto clampTo = [&](int64_t v, int64_t lo) {
        if (v < 0)
          v = v < -dim ? lo : v + dim;
        return std::min(std::max(v, lo), dim - 1);
      };
      int64_t s = clampTo((*starts)[i], 0), e = clampTo((*ends)[i], -1);
      int64_t n = dim > 0 && s > e ? (s - e + (-step) - 1) / (-step) : 0;
      spec.start[*axis] = n ? s - (n - 1) * (-step) : 0;
      spec.step[*axis] = -step;
      spec.shape[*axis] = n;
      spec.reversed.push_back(*axis);
      continue;
    }
    auto clampIndex = [&](int64_t v) {
      if (v < 0)
        v = v < -dim ? 0 : v + dim;
      return std::min(v, dim);
    };
    int64_t s = clampIndex((*starts)[i]), e = clampIndex((*ends)[i]);
    spec.start[*axis] = s;
    spec.step[*axis] = step;
    spec.shape[*axis] = e > s ? (e - s + step - 1) / step : 0;
  }
  return spec;
}

FailureOr<SmallVector<int64_t>> ONNXImporter::permutation(int64_t rank) {
  FailureOr<std::optional<SmallVector<int64_t>>> perm = intsAttr("perm");
  if (failed(perm))
    return failure();
  SmallVector<int64_t> p;
  if (*perm)
    p = **perm;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      p.push_back(i);
  SmallVector<bool> seen(rank, false);
  if (int64_t(p.size()) != rank) {
    nodeError() << "perm has " << p.size() << " entries for rank " << rank;
    return failure();
  }
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[v]) {
      nodeError() << "perm is not a permutation of 0.." << rank - 1;
      return failure();
    }
    seen[v] = true;
  }
  return p;
}

void zb::frontend::onnx_import::populateShapeHandlers(OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Shape", 1, &I::shape},       {"Reshape", 1, &I::reshape},
      {"Unsqueeze", 1, &I::reshape}, {"Squeeze", 1, &I::reshape},
      {"Flatten", 1, &I::reshape},   {"Transpose", 1, &I::transpose},
      {"Expand", 1, &I::expand},     {"Concat", 1, &I::concat},
      {"Slice", 1, &I::slice},       {"Split", 1, &I::split},
      {"Gather", 1, &I::gather},     {"Tile", 1, &I::tile},
      {"SplitToSequence", 11, &I::splitToSequence},
      {"SequenceAt", 11, &I::sequenceAt},
  };
  table.add(entries);
}
