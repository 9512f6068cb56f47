//===- ZBBuilder.cpp - zb op builder with inferred types ------------------===//
//
// The builder declared in include/zb/Dialect/ZB/IR/ZBBuilder.h: every method
// computes its result type from the operands (the same rules the verifiers in
// ZBOps.cpp check) and creates one zb op, or returns the operand when the op
// would be the identity (a cast to the same type, a reduction over no axes,
// a broadcast or reshape to the same shape, scaling by 1).
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "ZBOpsUtils.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace zb;
using zb::detail::tensorType;

/// An elementwise op of type OpTy on `x` (and `rest`), of the type of `x`.
template <typename OpTy, typename... Rest>
static Value likeX(OpBuilder &b, Location loc, Value x, Rest... rest) {
  return OpTy::create(b, loc, x.getType(), x, rest...);
}

Value ZBBuilder::add(Value x, Value y) { return likeX<AddOp>(b, loc, x, y); }
Value ZBBuilder::sub(Value x, Value y) { return likeX<SubOp>(b, loc, x, y); }
Value ZBBuilder::mul(Value x, Value y) { return likeX<MulOp>(b, loc, x, y); }
Value ZBBuilder::div(Value x, Value y) { return likeX<DivOp>(b, loc, x, y); }
Value ZBBuilder::max(Value x, Value y) { return likeX<MaxOp>(b, loc, x, y); }
Value ZBBuilder::pow(Value x, Value y) { return likeX<PowOp>(b, loc, x, y); }
Value ZBBuilder::neg(Value x) { return likeX<NegOp>(b, loc, x); }
Value ZBBuilder::exp(Value x) { return likeX<ExpOp>(b, loc, x); }
Value ZBBuilder::log(Value x) { return likeX<LogOp>(b, loc, x); }
Value ZBBuilder::tanh(Value x) { return likeX<TanhOp>(b, loc, x); }
Value ZBBuilder::sqrt(Value x) { return likeX<SqrtOp>(b, loc, x); }
Value ZBBuilder::rsqrt(Value x) { return likeX<RsqrtOp>(b, loc, x); }
Value ZBBuilder::erf(Value x) { return likeX<ErfOp>(b, loc, x); }
Value ZBBuilder::sigmoid(Value x) { return likeX<SigmoidOp>(b, loc, x); }
Value ZBBuilder::scale(Value x, double c) {
  if (c == 1.0)
    return x;
  return mul(x, splat(x, c));
}
Value ZBBuilder::splat(Value like, double value) {
  return splat(tensorType(like), value);
}
Value ZBBuilder::splat(RankedTensorType type, double value) {
  auto elemTy = llvm::cast<FloatType>(type.getElementType());
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, FloatAttr::get(elemTy, value)));
}
Value ZBBuilder::compare(StringRef predicate, Value x, Value y) {
  auto t = tensorType(x);
  auto maskTy = RankedTensorType::get(t.getShape(), b.getI1Type());
  return CompareOp::create(b, loc, maskTy, b.getStringAttr(predicate), x, y);
}
Value ZBBuilder::select(Value cond, Value onTrue, Value onFalse) {
  return SelectOp::create(b, loc, onTrue.getType(), cond, onTrue, onFalse);
}
Value ZBBuilder::cast(Value x, Type elementType) {
  auto t = tensorType(x);
  if (t.getElementType() == elementType)
    return x;
  return CastOp::create(b, loc, t.clone(elementType), x);
}

/// The shape of `t` without the dimensions in `axes`.
static SmallVector<int64_t> shapeWithout(RankedTensorType t,
                                         ArrayRef<int64_t> axes) {
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      shape.push_back(t.getDimSize(d));
  return shape;
}

template <typename ReduceOpT>
static Value buildReduce(OpBuilder &b, Location loc, Value x,
                         ArrayRef<int64_t> axes) {
  if (axes.empty())
    return x;
  auto t = tensorType(x);
  auto resTy = RankedTensorType::get(shapeWithout(t, axes), t.getElementType());
  return ReduceOpT::create(b, loc, resTy, x, b.getDenseI64ArrayAttr(axes));
}

Value ZBBuilder::reduceSum(Value x, ArrayRef<int64_t> axes) {
  return buildReduce<ReduceSumOp>(b, loc, x, axes);
}
Value ZBBuilder::reduceMean(Value x, ArrayRef<int64_t> axes) {
  return buildReduce<ReduceMeanOp>(b, loc, x, axes);
}
Value ZBBuilder::reduceMax(Value x, ArrayRef<int64_t> axes) {
  return buildReduce<ReduceMaxOp>(b, loc, x, axes);
}
Value ZBBuilder::broadcast(Value x, RankedTensorType type,
                           ArrayRef<int64_t> dims) {
  if (x.getType() == type)
    return x;
  return BroadcastInDimOp::create(b, loc, type, x,
                                  b.getDenseI64ArrayAttr(dims));
}
Value ZBBuilder::unreduce(Value x, RankedTensorType type,
                          ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      kept.push_back(d);
  return broadcast(x, type, kept);
}

Value ZBBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto t = tensorType(x);
  if (t.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, t.clone(shape), x);
}
Value ZBBuilder::transpose(Value x, ArrayRef<int64_t> permutation) {
  auto t = tensorType(x);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(t.getDimSize(p));
  return TransposeOp::create(b, loc, t.clone(shape), x,
                             b.getDenseI64ArrayAttr(permutation));
}
Value ZBBuilder::slice(Value x, ArrayRef<int64_t> start,
                       ArrayRef<int64_t> limit, ArrayRef<int64_t> strides) {
  auto t = tensorType(x);
  SmallVector<int64_t> shape;
  for (auto [s, l, st] : llvm::zip_equal(start, limit, strides))
    shape.push_back((l - s + st - 1) / st);
  return SliceOp::create(
      b, loc, t.clone(shape), x, b.getDenseI64ArrayAttr(start),
      b.getDenseI64ArrayAttr(limit), b.getDenseI64ArrayAttr(strides));
}
Value ZBBuilder::pad(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                     ArrayRef<int64_t> interior) {
  auto t = tensorType(x);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t n = t.getDimSize(d);
    shape.push_back(low[d] + high[d] + n +
                    std::max<int64_t>(n - 1, 0) * interior[d]);
  }
  return PadOp::create(b, loc, t.clone(shape), x, b.getDenseI64ArrayAttr(low),
                       b.getDenseI64ArrayAttr(high),
                       b.getDenseI64ArrayAttr(interior));
}
Value ZBBuilder::concat(ValueRange xs, int64_t axis) {
  auto t = tensorType(xs.front());
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = 0;
  for (Value x : xs)
    shape[axis] += tensorType(x).getDimSize(axis);
  return ConcatOp::create(b, loc, t.clone(shape), xs,
                          b.getI64IntegerAttr(axis));
}

/// Shape of op(x) * op(y) on the last two dimensions, batch dims from x.
static RankedTensorType matmulResultType(Value x, Value y, bool tx, bool ty) {
  RankedTensorType xt = tensorType(x), yt = tensorType(y);
  int64_t r = xt.getRank();
  SmallVector<int64_t> shape(xt.getShape().drop_back(2));
  shape.push_back(tx ? xt.getDimSize(r - 1) : xt.getDimSize(r - 2));
  shape.push_back(ty ? yt.getDimSize(r - 2) : yt.getDimSize(r - 1));
  return RankedTensorType::get(shape, xt.getElementType());
}

Value ZBBuilder::matmul(Value x, Value y, bool tx, bool ty) {
  return MatmulOp::create(b, loc, matmulResultType(x, y, tx, ty), x, y, tx, ty);
}
Value ZBBuilder::batchMatmul(Value x, Value y, bool tx, bool ty) {
  return BatchMatmulOp::create(b, loc, matmulResultType(x, y, tx, ty), x, y, tx,
                               ty);
}

Value ZBBuilder::gather(Value table, Value indices) {
  auto tt = tensorType(table), it = tensorType(indices);
  SmallVector<int64_t> shape(it.getShape());
  llvm::append_range(shape, tt.getShape().drop_front());
  return GatherOp::create(b, loc, tt.clone(shape), table, indices);
}
Value ZBBuilder::scatterAdd(Value updates, Value indices,
                            RankedTensorType tableType) {
  return ScatterAddOp::create(b, loc, tableType, updates, indices);
}
Value ZBBuilder::oneHot(Value indices, int64_t classes, Type elementType) {
  SmallVector<int64_t> shape(tensorType(indices).getShape());
  shape.push_back(classes);
  return OneHotOp::create(b, loc, RankedTensorType::get(shape, elementType),
                          indices);
}
Value ZBBuilder::notEqualMask(Value indices, int64_t value, Type elementType) {
  Value x = cast(indices, elementType);
  return cast(compare("ne", x, splat(x, static_cast<double>(value))),
              elementType);
}
Value ZBBuilder::softmax(Value x, int64_t axis) {
  return SoftmaxOp::create(b, loc, x.getType(), x, b.getI64IntegerAttr(axis));
}
Value ZBBuilder::causalMask(Value x, double fill) {
  return CausalMaskOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(fill));
}
