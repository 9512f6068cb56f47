//===- HostTensor.cpp - Constant tensors folded at import -----------------===//
//
// See include/zb/Frontend/HostTensor.h. Every fold walks the result in
// row-major order and computes the operand element it reads from the
// operand's row-major strides.
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/HostTensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace zb::frontend;

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

int64_t zb::frontend::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SmallVector<int64_t> zb::frontend::stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

SmallVector<int64_t> zb::frontend::delinearize(int64_t i,
                                               ArrayRef<int64_t> shape) {
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    index[d] = i % shape[d];
    i /= shape[d];
  }
  return index;
}

int64_t zb::frontend::linearize(ArrayRef<int64_t> index,
                                ArrayRef<int64_t> shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + index[d];
  return i;
}

std::string zb::frontend::formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<SmallVector<int64_t>>
zb::frontend::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    shape[i] = x == 1 ? y : x;
  }
  return shape;
}

bool zb::frontend::broadcastsTo(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  if (in.size() > out.size())
    return false;
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1 && in[d] != out[offset + d])
      return false;
  return true;
}

/// Steps the row-major multi-index `idx` over `shape` to the next element
/// (wrapping to all zeros after the last), moving the linear operand position
/// `src` by `stride[d]` per step along result dimension d.
static void nextIndex(MutableArrayRef<int64_t> idx, ArrayRef<int64_t> shape,
                      ArrayRef<int64_t> stride, int64_t &src) {
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    src += stride[d];
    if (++idx[d] < shape[d])
      return;
    src -= stride[d] * idx[d];
    idx[d] = 0;
  }
}

/// For every element of `out`, the element of `in` it reads when operand
/// dimension k maps to result dimension dims[k] (size-1 operand dimensions
/// read index 0). Preconditions checked by the callers.
static std::vector<int64_t> inDimIndexMap(ArrayRef<int64_t> in,
                                          ArrayRef<int64_t> out,
                                          ArrayRef<int64_t> dims) {
  int64_t n = numElements(out);
  std::vector<int64_t> map(n);
  SmallVector<int64_t> inStrides = stridesOf(in);
  // The operand stride that each result dimension advances (0 if the result
  // dimension is new or stretches a size-1 operand dimension).
  SmallVector<int64_t> step(out.size(), 0);
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1)
      step[dims[k]] += inStrides[k];
  SmallVector<int64_t> idx(out.size(), 0);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = src;
    nextIndex(idx, out, step, src);
  }
  return map;
}

std::vector<int64_t> zb::frontend::broadcastIndexMap(ArrayRef<int64_t> in,
                                                     ArrayRef<int64_t> out) {
  SmallVector<int64_t> dims;
  for (size_t k = 0; k < in.size(); ++k)
    dims.push_back(int64_t(out.size() - in.size() + k));
  return inDimIndexMap(in, out, dims);
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

double zb::frontend::roundToElementType(Type elem, double v) {
  if (elem.isF32())
    return double(float(v));
  if (elem.isF64())
    return v;
  if (auto f = dyn_cast<FloatType>(elem)) {
    bool lost;
    APFloat a(v);
    a.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    a.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return a.convertToDouble();
  }
  if (elem.isInteger(1))
    return v != 0.0 ? 1.0 : 0.0;
  return std::trunc(v);
}

int64_t zb::frontend::toInt64Saturated(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(v))
    return 0;
  if (v >= kTwo63)
    return std::numeric_limits<int64_t>::max();
  if (v < -kTwo63)
    return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

bool HostTensor::isFloat() const { return isa<FloatType>(type); }
bool HostTensor::isBool() const { return type.isInteger(1); }

bool HostTensor::isSupportedElementType(Type elem) {
  return isa<FloatType, IntegerType, IndexType>(elem);
}

HostTensor HostTensor::fromAttr(DenseElementsAttr attr) {
  HostTensor t;
  t.shape.assign(attr.getType().getShape().begin(),
                 attr.getType().getShape().end());
  t.type = attr.getElementType();
  t.data.reserve(attr.getNumElements());
  if (t.isFloat()) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      t.data.push_back(v.convertToDouble());
    }
  } else if (t.isBool()) {
    for (bool v : attr.getValues<bool>())
      t.data.push_back(v ? 1.0 : 0.0);
  } else {
    for (const APInt &v : attr.getValues<APInt>())
      t.data.push_back(double(v.getSExtValue()));
  }
  return t;
}

DenseElementsAttr HostTensor::toAttr(Type elem) const {
  if (!elem)
    elem = type;
  auto tensorType = RankedTensorType::get(shape, elem);
  // A splat (bitwise equal values: 0.0 and -0.0 differ) is built from one
  // value; DenseElementsAttr stores it once either way.
  bool splat = !data.empty() && llvm::all_of(data, [&](double v) {
    return std::memcmp(&v, &data[0], sizeof(double)) == 0;
  });
  ArrayRef<double> values =
      splat ? ArrayRef<double>(data).take_front(1) : ArrayRef<double>(data);
  if (elem.isInteger(1)) {
    SmallVector<bool> bits;
    bits.reserve(values.size());
    for (double v : values)
      bits.push_back(v != 0.0);
    return DenseElementsAttr::get(tensorType, ArrayRef<bool>(bits));
  }
  if (auto ft = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> vals;
    vals.reserve(values.size());
    for (double v : values) {
      APFloat f(v);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(f);
    }
    return DenseElementsAttr::get(tensorType, vals);
  }
  unsigned width = isa<IndexType>(elem) ? IndexType::kInternalStorageBitWidth
                                        : elem.getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  vals.reserve(values.size());
  for (double v : values)
    vals.push_back(APInt(width, uint64_t(toInt64Saturated(v)),
                         /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(tensorType, vals);
}

SmallVector<int64_t> zb::frontend::toInts(const HostTensor &t) {
  SmallVector<int64_t> v;
  v.reserve(t.data.size());
  for (double d : t.data)
    v.push_back(toInt64Saturated(d));
  return v;
}

//===----------------------------------------------------------------------===//
// Folds
//===----------------------------------------------------------------------===//

/// A tensor of `shape` and `type` whose element i is `t.data[map[i]]`.
static HostTensor gathered(const HostTensor &t, ArrayRef<int64_t> shape,
                           const std::vector<int64_t> &map) {
  HostTensor r;
  r.shape.assign(shape.begin(), shape.end());
  r.type = t.type;
  r.data.reserve(map.size());
  for (int64_t i : map)
    r.data.push_back(t.data[i]);
  return r;
}

FailureOr<HostTensor> zb::frontend::reshapeHost(const HostTensor &t,
                                                ArrayRef<int64_t> shape,
                                                EmitErrorFn emitError) {
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }) ||
      numElements(shape) != t.numElements()) {
    emitError() << "cannot reshape " << formatShape(t.shape) << " to "
                << formatShape(shape);
    return failure();
  }
  HostTensor r = t;
  r.shape.assign(shape.begin(), shape.end());
  return r;
}

FailureOr<HostTensor> zb::frontend::broadcastHost(const HostTensor &t,
                                                  ArrayRef<int64_t> shape,
                                                  EmitErrorFn emitError) {
  if (!broadcastsTo(t.shape, shape)) {
    emitError() << "cannot broadcast " << formatShape(t.shape) << " to "
                << formatShape(shape);
    return failure();
  }
  return gathered(t, shape, broadcastIndexMap(t.shape, shape));
}

FailureOr<HostTensor> zb::frontend::broadcastInDimHost(const HostTensor &t,
                                                       ArrayRef<int64_t> shape,
                                                       ArrayRef<int64_t> dims,
                                                       EmitErrorFn emitError) {
  if (dims.size() != t.shape.size()) {
    emitError() << dims.size()
                << " broadcast dimensions for an operand of rank "
                << t.shape.size();
    return failure();
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0 || dims[k] >= int64_t(shape.size())) {
      emitError() << "broadcast dimension " << dims[k]
                  << " is out of range for result rank " << shape.size();
      return failure();
    }
    if (t.shape[k] != 1 && t.shape[k] != shape[dims[k]]) {
      emitError() << "operand dimension " << k << " of size " << t.shape[k]
                  << " cannot broadcast to result dimension " << dims[k]
                  << " of size " << shape[dims[k]];
      return failure();
    }
  }
  return gathered(t, shape, inDimIndexMap(t.shape, shape, dims));
}

/// The general strided view: result dimension d reads operand dimension
/// perm[d] at start[perm[d]] + i * step[perm[d]], counted from the end where
/// reversed[perm[d]]. Arguments validated by the callers.
static HostTensor stridedView(const HostTensor &t, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> perm, ArrayRef<int64_t> start,
                              ArrayRef<int64_t> step, ArrayRef<bool> reversed) {
  size_t rank = shape.size();
  SmallVector<int64_t> inStrides = stridesOf(t.shape);
  // Per result dimension: the operand offset of index 0 and the operand
  // stride of one step.
  int64_t base = 0;
  SmallVector<int64_t> stride(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = perm[d];
    if (reversed[s]) {
      base += (t.shape[s] - 1 - start[s]) * inStrides[s];
      stride[d] = -step[s] * inStrides[s];
    } else {
      base += start[s] * inStrides[s];
      stride[d] = step[s] * inStrides[s];
    }
  }
  HostTensor r;
  r.shape.assign(shape.begin(), shape.end());
  r.type = t.type;
  int64_t n = numElements(shape);
  r.data.reserve(n);
  SmallVector<int64_t> idx(rank, 0);
  int64_t src = base;
  for (int64_t i = 0; i < n; ++i) {
    r.data.push_back(t.data[src]);
    nextIndex(idx, shape, stride, src);
  }
  return r;
}

FailureOr<HostTensor> zb::frontend::transposeHost(const HostTensor &t,
                                                  ArrayRef<int64_t> perm,
                                                  EmitErrorFn emitError) {
  size_t rank = t.shape.size();
  SmallVector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    if (!ok || p < 0 || p >= int64_t(rank) || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = true;
  }
  if (!ok) {
    emitError() << "permutation " << formatShape(perm)
                << " is not a permutation of 0.." << int64_t(rank) - 1;
    return failure();
  }
  SmallVector<int64_t> shape, zeros(rank, 0), ones(rank, 1);
  for (int64_t p : perm)
    shape.push_back(t.shape[p]);
  return stridedView(t, shape, perm, zeros, ones, SmallVector<bool>(rank));
}

FailureOr<HostTensor> zb::frontend::sliceHost(const HostTensor &t,
                                              ArrayRef<int64_t> start,
                                              ArrayRef<int64_t> step,
                                              ArrayRef<int64_t> shape,
                                              EmitErrorFn emitError) {
  size_t rank = t.shape.size();
  if (start.size() != rank || step.size() != rank || shape.size() != rank) {
    emitError() << "slice of a rank-" << rank << " tensor with " << start.size()
                << " starts, " << step.size() << " steps and " << shape.size()
                << " sizes";
    return failure();
  }
  for (size_t d = 0; d < rank; ++d) {
    bool ok = step[d] >= 1 && start[d] >= 0 && start[d] <= t.shape[d] &&
              shape[d] >= 0;
    // The last element read, computed without overflow.
    if (ok && shape[d] > 0)
      ok = start[d] < t.shape[d] &&
           shape[d] - 1 <= (t.shape[d] - 1 - start[d]) / step[d];
    if (!ok) {
      emitError() << "slice of dimension " << d << " (size " << t.shape[d]
                  << ") with start " << start[d] << ", step " << step[d]
                  << " and " << shape[d] << " elements is out of range";
      return failure();
    }
  }
  SmallVector<int64_t> perm;
  for (size_t d = 0; d < rank; ++d)
    perm.push_back(int64_t(d));
  return stridedView(t, shape, perm, start, step, SmallVector<bool>(rank));
}

FailureOr<HostTensor> zb::frontend::reverseHost(const HostTensor &t,
                                                ArrayRef<int64_t> dims,
                                                EmitErrorFn emitError) {
  size_t rank = t.shape.size();
  SmallVector<bool> reversed(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= int64_t(rank)) {
      emitError() << "dimension " << d << " is out of range for rank " << rank;
      return failure();
    }
    reversed[d] = true;
  }
  SmallVector<int64_t> perm, zeros(rank, 0), ones(rank, 1);
  for (size_t d = 0; d < rank; ++d)
    perm.push_back(int64_t(d));
  return stridedView(t, t.shape, perm, zeros, ones, reversed);
}

FailureOr<HostTensor> zb::frontend::concatHost(ArrayRef<HostTensor> inputs,
                                               int64_t axis,
                                               EmitErrorFn emitError) {
  if (inputs.empty()) {
    emitError() << "nothing to concatenate";
    return failure();
  }
  const HostTensor &first = inputs.front();
  int64_t rank = first.shape.size();
  if (axis < 0 || axis >= rank) {
    emitError() << "axis " << axis << " is out of range for rank " << rank;
    return failure();
  }
  HostTensor r;
  r.type = first.type;
  r.shape = first.shape;
  r.shape[axis] = 0;
  for (const HostTensor &t : inputs) {
    if (int64_t(t.shape.size()) != rank || t.type != r.type) {
      emitError() << "inputs differ in rank or element type";
      return failure();
    }
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.shape[d] != first.shape[d]) {
        emitError() << "inputs differ in dimension " << d;
        return failure();
      }
    r.shape[axis] += t.shape[axis];
  }
  // Row-major: for every index of the dimensions before `axis`, each input
  // contributes one contiguous chunk of shape[axis:] elements.
  int64_t outer = numElements(ArrayRef<int64_t>(r.shape).take_front(axis));
  r.data.reserve(r.numElements());
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor &t : inputs) {
      int64_t chunk = numElements(ArrayRef<int64_t>(t.shape).drop_front(axis));
      r.data.insert(r.data.end(), t.data.begin() + o * chunk,
                    t.data.begin() + (o + 1) * chunk);
    }
  return r;
}

FailureOr<HostTensor> zb::frontend::gatherHost(const HostTensor &data,
                                               const HostTensor &indices,
                                               int64_t axis,
                                               EmitErrorFn emitError) {
  int64_t rank = data.shape.size();
  if (axis < 0 || axis >= rank) {
    emitError() << "axis " << axis << " is out of range for rank " << rank;
    return failure();
  }
  ArrayRef<int64_t> shape = data.shape;
  int64_t outer = numElements(shape.take_front(axis)), dim = shape[axis],
          inner = numElements(shape.drop_front(axis + 1));
  HostTensor r;
  r.type = data.type;
  r.shape.assign(shape.begin(), shape.begin() + axis);
  r.shape.append(indices.shape.begin(), indices.shape.end());
  r.shape.append(shape.begin() + axis + 1, shape.end());
  r.data.reserve(r.numElements());
  for (int64_t o = 0; o < outer; ++o)
    for (double dv : indices.data) {
      int64_t j = toInt64Saturated(dv);
      if (j < -dim || j >= dim) {
        emitError() << "index " << j << " is out of range [" << -dim << ", "
                    << dim << ")";
        return failure();
      }
      if (j < 0)
        j += dim;
      for (int64_t k = 0; k < inner; ++k)
        r.data.push_back(data.data[(o * dim + j) * inner + k]);
    }
  return r;
}

HostTensor zb::frontend::iotaHost(ArrayRef<int64_t> shape, int64_t dim,
                                  Type type) {
  HostTensor r;
  r.shape.assign(shape.begin(), shape.end());
  r.type = type;
  int64_t n = numElements(shape);
  int64_t stride = stridesOf(shape)[dim];
  r.data.reserve(n);
  for (int64_t i = 0; i < n; ++i)
    r.data.push_back(r.round(double((i / stride) % shape[dim])));
  return r;
}

FailureOr<HostTensor>
zb::frontend::elementwiseHost(ArrayRef<const HostTensor *> operands,
                              ArrayRef<int64_t> shape, Type resultType,
                              llvm::function_ref<double(ArrayRef<double>)> fn,
                              EmitErrorFn emitError) {
  // Per operand: read element i (same shape), element 0 (one element), or
  // through a broadcast index map.
  SmallVector<std::vector<int64_t>> maps(operands.size());
  SmallVector<int> kind(operands.size());
  for (auto [k, t] : llvm::enumerate(operands)) {
    if (!broadcastsTo(t->shape, shape)) {
      emitError() << "operand #" << k << " of shape " << formatShape(t->shape)
                  << " does not broadcast to " << formatShape(shape);
      return failure();
    }
    if (t->shape == ArrayRef<int64_t>(shape))
      kind[k] = 0;
    else if (t->numElements() == 1)
      kind[k] = 1;
    else {
      kind[k] = 2;
      maps[k] = broadcastIndexMap(t->shape, shape);
    }
  }
  HostTensor r;
  r.shape.assign(shape.begin(), shape.end());
  r.type = resultType;
  int64_t n = numElements(shape);
  r.data.resize(n);
  SmallVector<double, 3> args(operands.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < operands.size(); ++k)
      args[k] = operands[k]->data[kind[k] == 0   ? i
                                  : kind[k] == 1 ? 0
                                                 : maps[k][i]];
    r.data[i] = r.round(fn(args));
  }
  return r;
}
