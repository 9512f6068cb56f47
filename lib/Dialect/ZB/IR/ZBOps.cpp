//===- ZBOps.cpp - zb dialect ops: verifiers, folders, gradient rules -----===//
//
// Gradient rules follow standard reverse-mode differentiation; each operand's
// gradient is built separately (GradientOpInterface), which is what lets
// zb-split-backward separate B (activation gradients) from W (parameter
// gradients), Zero Bubble paper Section 2.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Dialect/ZB/IR/ZBBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace zb;

#include "zb/Dialect/ZB/IR/ZBInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "zb/Dialect/ZB/IR/ZBOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers for gradient rules
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// A splat constant of `type` holding `value`.
static Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  auto elemTy = llvm::cast<FloatType>(type.getElementType());
  auto attr = DenseElementsAttr::get(type, FloatAttr::get(elemTy, value));
  return ConstantOp::create(b, loc, attr);
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  Attribute value;
  if (parser.parseAttribute(value) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements)
    return parser.emitError(parser.getNameLoc(),
                            "expected a typed elements attribute");
  result.addAttribute("value", elements);
  result.addTypes(elements.getType());
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printAttribute(getValue());
  p.printOptionalAttrDict((*this)->getAttrs(), /*elidedAttrs=*/{"value"});
}

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getType())
    return emitOpError("value type ")
           << getValue().getType() << " does not match result type "
           << getType();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

Value AddOp::buildOperandGradient(OpBuilder &, unsigned, Value g) { return g; }

Value SubOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i == 0)
    return g;
  return NegOp::create(b, getLoc(), g.getType(), g);
}

Value MulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  Value other = i == 0 ? getRhs() : getLhs();
  return MulOp::create(b, getLoc(), g.getType(), g, other);
}

Value DivOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  Location loc = getLoc();
  Type t = g.getType();
  if (i == 0) // d/dx (x / y) = 1 / y
    return DivOp::create(b, loc, t, g, getRhs());
  // d/dy (x / y) = -(x / y) / y = -result / y
  Value q = DivOp::create(b, loc, t, MulOp::create(b, loc, t, g, getResult()),
                          getRhs());
  return NegOp::create(b, loc, t, q);
}

Value NegOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return NegOp::create(b, getLoc(), g.getType(), g);
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand(); // -(-x) = x
  return {};
}

Value ReluOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  Location loc = getLoc();
  RankedTensorType t = tensorType(g);
  Value zero = splat(b, loc, t, 0.0);
  auto maskTy = RankedTensorType::get(t.getShape(), b.getI1Type());
  Value positive =
      CompareOp::create(b, loc, maskTy, b.getStringAttr("gt"), getOperand(),
                        zero);
  return SelectOp::create(b, loc, t, positive, g, zero);
}

Value ExpOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return MulOp::create(b, getLoc(), g.getType(), g, getResult());
}

Value LogOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return DivOp::create(b, getLoc(), g.getType(), g, getOperand());
}

Value TanhOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  Location loc = getLoc();
  RankedTensorType t = tensorType(g);
  Value one = splat(b, loc, t, 1.0);
  Value sq = MulOp::create(b, loc, t, getResult(), getResult());
  Value d = SubOp::create(b, loc, t, one, sq);
  return MulOp::create(b, loc, t, g, d);
}

//===----------------------------------------------------------------------===//
// CompareOp / SelectOp
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::verify() {
  static const char *const kPredicates[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  if (!llvm::is_contained(kPredicates, getPredicate()))
    return emitOpError("unknown predicate '")
           << getPredicate() << "'; expected one of eq, ne, lt, le, gt, ge";
  if (getLhs().getType() != getRhs().getType())
    return emitOpError("operand types differ: ")
           << getLhs().getType() << " vs " << getRhs().getType();
  if (tensorType(getLhs()).getShape() != getType().getShape())
    return emitOpError("result shape must match the operand shape");
  return success();
}

Value CompareOp::buildOperandGradient(OpBuilder &, unsigned, Value) {
  return Value(); // piecewise constant: no gradient flows
}

LogicalResult SelectOp::verify() {
  if (getOnTrue().getType() != getType() || getOnFalse().getType() != getType())
    return emitOpError("on_true and on_false must have the result type ")
           << getType();
  if (getCond().getType().getShape() != getType().getShape())
    return emitOpError("condition shape must match the result shape");
  return success();
}

Value SelectOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i == 0)
    return Value();
  Location loc = getLoc();
  Value zero = splat(b, loc, tensorType(g), 0.0);
  if (i == 1)
    return SelectOp::create(b, loc, g.getType(), getCond(), g, zero);
  return SelectOp::create(b, loc, g.getType(), getCond(), zero, g);
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType a = tensorType(getLhs()), b = tensorType(getRhs());
  if (a.getRank() != 2 || b.getRank() != 2 || getType().getRank() != 2)
    return emitOpError("expects 2-D operands and result, got ")
           << a << ", " << b << " -> " << getType();
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != getType().getElementType())
    return emitOpError("element types of operands and result must match");
  int64_t m = getTransposeLhs() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t k = getTransposeLhs() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t k2 = getTransposeRhs() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = getTransposeRhs() ? b.getDimSize(0) : b.getDimSize(1);
  if (k != k2)
    return emitOpError("contraction sizes differ: op(lhs) is ")
           << m << "x" << k << ", op(rhs) is " << k2 << "x" << n;
  if (getType().getDimSize(0) != m || getType().getDimSize(1) != n)
    return emitOpError("result must be ")
           << m << "x" << n << ", got " << getType();
  return success();
}

/// Builds op(x) * op(y) with the given transposes; infers the result type.
static Value buildMatmul(OpBuilder &b, Location loc, Value x, Value y, bool tx,
                         bool ty) {
  RankedTensorType xt = tensorType(x), yt = tensorType(y);
  int64_t m = tx ? xt.getDimSize(1) : xt.getDimSize(0);
  int64_t n = ty ? yt.getDimSize(0) : yt.getDimSize(1);
  auto resTy = RankedTensorType::get({m, n}, xt.getElementType());
  auto op = MatmulOp::create(b, loc, resTy, x, y);
  if (tx)
    op.setTransposeLhs(true);
  if (ty)
    op.setTransposeRhs(true);
  return op;
}

Value MatmulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  Location loc = getLoc();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  Value A = getLhs(), B = getRhs();
  if (i == 0) {
    // d op(A) = g * op(B)^T; dA = ta ? (d op(A))^T = op(B) * g^T : d op(A).
    if (!ta)
      return buildMatmul(b, loc, g, B, false, !tb);
    return buildMatmul(b, loc, B, g, tb, true);
  }
  // d op(B) = op(A)^T * g; dB = tb ? g^T * op(A) : d op(B).
  if (!tb)
    return buildMatmul(b, loc, A, g, !ta, false);
  return buildMatmul(b, loc, g, A, true, ta);
}

//===----------------------------------------------------------------------===//
// BroadcastInDimOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastInDimOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError("expects one entry in dims per operand dimension (")
           << in.getRank() << "), got " << dims.size();
  if (in.getElementType() != getType().getElementType())
    return emitOpError("element type must not change");
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= getType().getRank())
      return emitOpError("dims[") << i << "] = " << d << " is out of range";
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("dims must be strictly increasing");
    int64_t s = in.getDimSize(i);
    if (s != 1 && s != getType().getDimSize(d))
      return emitOpError("operand dimension ")
             << i << " (size " << s << ") cannot broadcast to result dimension "
             << d << " (size " << getType().getDimSize(d) << ")";
  }
  return success();
}

Value BroadcastInDimOp::buildOperandGradient(OpBuilder &b, unsigned,
                                             Value g) {
  Location loc = getLoc();
  RankedTensorType in = tensorType(getOperand());
  RankedTensorType out = getType();
  // Sum over every result dimension that was created or expanded.
  SmallVector<int64_t> axes;
  SmallVector<int64_t> keptShape;
  ArrayRef<int64_t> dims = getDims();
  for (int64_t d = 0; d < out.getRank(); ++d) {
    auto *it = llvm::find(dims, d);
    if (it == dims.end()) {
      axes.push_back(d);
      continue;
    }
    int64_t i = it - dims.begin();
    if (in.getDimSize(i) == 1 && out.getDimSize(d) != 1)
      axes.push_back(d);
    else
      keptShape.push_back(out.getDimSize(d));
  }
  Value r = g;
  if (!axes.empty()) {
    auto redTy = RankedTensorType::get(keptShape, in.getElementType());
    r = ReduceSumOp::create(b, loc, redTy, g, b.getDenseI64ArrayAttr(axes));
  }
  if (r.getType() != in)
    r = ReshapeOp::create(b, loc, in, r);
  return r;
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  if (!in.hasStaticShape() || !getType().hasStaticShape())
    return emitOpError("expects static shapes");
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError("element count changes from ")
           << in.getNumElements() << " to " << getType().getNumElements();
  if (in.getElementType() != getType().getElementType())
    return emitOpError("element type must not change");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto c = llvm::dyn_cast_if_present<DenseElementsAttr>(
          adaptor.getOperand()))
    return c.reshape(getType());
  return {};
}

Value ReshapeOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ReshapeOp::create(b, getLoc(), getOperand().getType(), g);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Checks that `axes` are distinct, in range and strictly increasing, and that
/// the result shape is the operand shape with those axes removed.
static LogicalResult verifyReduction(Operation *op, RankedTensorType in,
                                     RankedTensorType out,
                                     ArrayRef<int64_t> axes) {
  SmallVector<int64_t> expected;
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= in.getRank())
      return op->emitOpError("axis ") << a << " is out of range for rank "
                                      << in.getRank();
    if (i > 0 && a <= axes[i - 1])
      return op->emitOpError("axes must be strictly increasing");
  }
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      expected.push_back(in.getDimSize(d));
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("result shape must be the operand shape without "
                           "the reduced axes");
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("element type must not change");
  return success();
}

/// Broadcasts the reduced gradient `g` back to the operand shape of a
/// reduction over `axes`.
static Value unreduce(OpBuilder &b, Location loc, Value g, RankedTensorType in,
                      ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      kept.push_back(d);
  return BroadcastInDimOp::create(b, loc, in, g, b.getDenseI64ArrayAttr(kept));
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(),
                         getAxes());
}

Value ReduceSumOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return unreduce(b, getLoc(), g, tensorType(getOperand()), getAxes());
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(),
                         getAxes());
}

Value ReduceMeanOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  RankedTensorType in = tensorType(getOperand());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= in.getDimSize(a);
  Location loc = getLoc();
  Value scale = splat(b, loc, tensorType(g), 1.0 / static_cast<double>(count));
  Value scaled = MulOp::create(b, loc, g.getType(), g, scale);
  return unreduce(b, loc, scaled, in, getAxes());
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

LogicalResult SendOp::verify() {
  if (static_cast<int64_t>(getPeer()) < 0)
    return emitOpError("peer rank must be non-negative");
  if (!getValue().getType().hasStaticShape())
    return emitOpError("expects a statically shaped tensor");
  return success();
}

LogicalResult RecvOp::verify() {
  if (static_cast<int64_t>(getPeer()) < 0)
    return emitOpError("peer rank must be non-negative");
  if (!getType().hasStaticShape())
    return emitOpError("expects a statically shaped tensor");
  return success();
}

//===----------------------------------------------------------------------===//
// ZBBuilder
//===----------------------------------------------------------------------===//

Value ZBBuilder::add(Value x, Value y) {
  return AddOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::sub(Value x, Value y) {
  return SubOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::mul(Value x, Value y) {
  return MulOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::div(Value x, Value y) {
  return DivOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::max(Value x, Value y) {
  return MaxOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::pow(Value x, Value y) {
  return PowOp::create(b, loc, x.getType(), x, y);
}
Value ZBBuilder::neg(Value x) { return NegOp::create(b, loc, x.getType(), x); }
Value ZBBuilder::exp(Value x) { return ExpOp::create(b, loc, x.getType(), x); }
Value ZBBuilder::log(Value x) { return LogOp::create(b, loc, x.getType(), x); }
Value ZBBuilder::tanh(Value x) {
  return TanhOp::create(b, loc, x.getType(), x);
}
Value ZBBuilder::sqrt(Value x) {
  return SqrtOp::create(b, loc, x.getType(), x);
}
Value ZBBuilder::rsqrt(Value x) {
  return RsqrtOp::create(b, loc, x.getType(), x);
}
Value ZBBuilder::erf(Value x) { return ErfOp::create(b, loc, x.getType(), x); }
Value ZBBuilder::sigmoid(Value x) {
  return SigmoidOp::create(b, loc, x.getType(), x);
}
Value ZBBuilder::scale(Value x, double c) {
  if (c == 1.0)
    return x;
  return mul(x, splat(x, c));
}
Value ZBBuilder::splat(Value like, double value) {
  return splat(tensorType(like), value);
}
Value ZBBuilder::splat(RankedTensorType type, double value) {
  return ::splat(b, loc, type, value);
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
Value ZBBuilder::slice(Value x, ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
                       ArrayRef<int64_t> strides) {
  auto t = tensorType(x);
  SmallVector<int64_t> shape;
  for (auto [s, l, st] : llvm::zip_equal(start, limit, strides))
    shape.push_back((l - s + st - 1) / st);
  return SliceOp::create(b, loc, t.clone(shape), x,
                         b.getDenseI64ArrayAttr(start),
                         b.getDenseI64ArrayAttr(limit),
                         b.getDenseI64ArrayAttr(strides));
}
Value ZBBuilder::pad(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                     ArrayRef<int64_t> interior) {
  auto t = tensorType(x);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < t.getRank(); ++d) {
    int64_t n = t.getDimSize(d);
    shape.push_back(low[d] + high[d] + n + std::max<int64_t>(n - 1, 0) *
                                               interior[d]);
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
  return BatchMatmulOp::create(b, loc, matmulResultType(x, y, tx, ty), x, y,
                               tx, ty);
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
Value ZBBuilder::softmax(Value x, int64_t axis) {
  return SoftmaxOp::create(b, loc, x.getType(), x, b.getI64IntegerAttr(axis));
}
Value ZBBuilder::causalMask(Value x, double fill) {
  return CausalMaskOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(fill));
}

//===----------------------------------------------------------------------===//
// New elementwise ops: gradient rules and verifiers
//===----------------------------------------------------------------------===//

Value PowOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  Value x = getLhs(), y = getRhs();
  if (i == 0) // d/dx x^y = y * x^(y - 1)
    return e.mul(g, e.mul(y, e.pow(x, e.sub(y, e.splat(y, 1.0)))));
  // d/dy x^y = log(x) * x^y
  return e.mul(g, e.mul(e.log(x), getResult()));
}

Value MaxOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  Value self = i == 0 ? getLhs() : getRhs();
  Value other = i == 0 ? getRhs() : getLhs();
  // 1 where self is larger, 1/2 on ties, 0 elsewhere.
  Value share = e.select(e.compare("gt", self, other), e.splat(g, 1.0),
                         e.select(e.compare("eq", self, other),
                                  e.splat(g, 0.5), e.splat(g, 0.0)));
  return e.mul(g, share);
}

Value SqrtOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // d sqrt(x) = 1 / (2 sqrt(x))
  return e.div(e.scale(g, 0.5), getResult());
}

Value RsqrtOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
  Value y = getResult();
  return e.mul(e.scale(g, -0.5), e.mul(y, e.mul(y, y)));
}

Value ErfOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // d erf(x) = 2/sqrt(pi) exp(-x^2)
  Value x = getOperand();
  Value d = e.scale(e.exp(e.neg(e.mul(x, x))), 2.0 / std::sqrt(M_PI));
  return e.mul(g, d);
}

Value SigmoidOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // y (1 - y)
  Value y = getResult();
  return e.mul(g, e.mul(y, e.sub(e.splat(y, 1.0), y)));
}

Value SiluOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // s (1 + x (1 - s)), s = sigmoid(x)
  Value x = getOperand();
  Value s = e.sigmoid(x);
  Value one = e.splat(x, 1.0);
  return e.mul(g, e.mul(s, e.add(one, e.mul(x, e.sub(one, s)))));
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

Value GeluOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc());
  Value x = getOperand();
  Value one = e.splat(x, 1.0);
  if (getApproximate() == "tanh") {
    // y = x/2 (1 + t), t = tanh(k (x + c x^3));
    // y' = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 c x^2)
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value x2 = e.mul(x, x);
    Value u = e.scale(e.add(x, e.scale(e.mul(x2, x), c)), k);
    Value t = e.tanh(u);
    Value du = e.scale(e.add(one, e.scale(x2, 3.0 * c)), k);
    Value d = e.add(e.scale(e.add(one, t), 0.5),
                    e.mul(e.scale(x, 0.5), e.mul(e.sub(one, e.mul(t, t)), du)));
    return e.mul(g, d);
  }
  // y = x Phi(x); y' = Phi(x) + x phi(x),
  // Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
  Value cdf = e.scale(e.add(one, e.erf(e.scale(x, M_SQRT1_2))), 0.5);
  Value pdf =
      e.scale(e.exp(e.scale(e.mul(x, x), -0.5)), 1.0 / std::sqrt(2.0 * M_PI));
  return e.mul(g, e.add(cdf, e.mul(x, pdf)));
}

LogicalResult CastOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  if (in.getShape() != getType().getShape())
    return emitOpError("shape must not change: ")
           << in << " -> " << getType();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

Value CastOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  Type src = tensorType(getOperand()).getElementType();
  if (!llvm::isa<FloatType>(src))
    return Value(); // integers are not differentiable
  return ZBBuilder(b, getLoc()).cast(g, src);
}

//===----------------------------------------------------------------------===//
// BatchMatmulOp
//===----------------------------------------------------------------------===//

LogicalResult BatchMatmulOp::verify() {
  RankedTensorType a = tensorType(getLhs()), b = tensorType(getRhs());
  RankedTensorType c = getType();
  int64_t r = a.getRank();
  if (r < 3 || b.getRank() != r || c.getRank() != r)
    return emitOpError("expects operands and result of the same rank >= 3, "
                       "got ")
           << a << ", " << b << " -> " << c;
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != c.getElementType())
    return emitOpError("element types of operands and result must match");
  if (a.getShape().drop_back(2) != b.getShape().drop_back(2) ||
      a.getShape().drop_back(2) != c.getShape().drop_back(2))
    return emitOpError("batch dimensions (all but the last two) of operands "
                       "and result must match");
  int64_t m = getTransposeLhs() ? a.getDimSize(r - 1) : a.getDimSize(r - 2);
  int64_t k = getTransposeLhs() ? a.getDimSize(r - 2) : a.getDimSize(r - 1);
  int64_t k2 = getTransposeRhs() ? b.getDimSize(r - 1) : b.getDimSize(r - 2);
  int64_t n = getTransposeRhs() ? b.getDimSize(r - 2) : b.getDimSize(r - 1);
  if (k != k2)
    return emitOpError("contraction sizes differ: op(lhs) is ")
           << m << "x" << k << ", op(rhs) is " << k2 << "x" << n;
  if (c.getDimSize(r - 2) != m || c.getDimSize(r - 1) != n)
    return emitOpError("result matrices must be ")
           << m << "x" << n << ", got " << c;
  return success();
}

Value BatchMatmulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  Value A = getLhs(), B = getRhs();
  if (i == 0)
    return ta ? e.batchMatmul(B, g, tb, true) : e.batchMatmul(g, B, false, !tb);
  return tb ? e.batchMatmul(g, A, true, ta) : e.batchMatmul(A, g, !ta, false);
}

//===----------------------------------------------------------------------===//
// ReduceMaxOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceMaxOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(),
                         getAxes());
}

Value ReduceMaxOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc());
  RankedTensorType in = tensorType(getOperand());
  ArrayRef<int64_t> axes = getAxes();
  // Share g equally among the elements equal to the maximum.
  Value isMax = e.compare("eq", getOperand(), e.unreduce(getResult(), in, axes));
  Value count = e.reduceSum(e.cast(isMax, in.getElementType()), axes);
  Value share = e.unreduce(e.div(g, count), in, axes);
  return e.select(isMax, share, e.splat(in, 0.0));
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError("permutation must have one entry per dimension (")
           << in.getRank() << "), got " << perm.size();
  SmallVector<bool> seen(in.getRank(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError("permutation must be a permutation of 0..")
             << in.getRank() - 1;
    seen[p] = true;
  }
  if (in.getElementType() != getType().getElementType())
    return emitOpError("element type must not change");
  for (auto [i, p] : llvm::enumerate(perm))
    if (getType().getDimSize(i) != in.getDimSize(p))
      return emitOpError("result dimension ")
             << i << " must have the size of operand dimension " << p << " ("
             << in.getDimSize(p) << "), got " << getType().getDimSize(i);
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getOperand();
  // transpose(transpose(x, p1), p2) = transpose(x, p1[p2[i]]).
  if (auto inner = getOperand().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner.getPermutation()[p]);
    setPermutation(composed);
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  return {};
}

Value TransposeOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return ZBBuilder(b, getLoc()).transpose(g, inverse);
}

//===----------------------------------------------------------------------===//
// SliceOp / PadOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  int64_t r = in.getRank();
  if (static_cast<int64_t>(getStart().size()) != r ||
      static_cast<int64_t>(getLimit().size()) != r ||
      static_cast<int64_t>(getStrides().size()) != r)
    return emitOpError("start, limit and strides must have one entry per "
                       "dimension (")
           << r << ")";
  if (in.getElementType() != getType().getElementType() ||
      getType().getRank() != r)
    return emitOpError("result must have the operand's rank and element type");
  for (int64_t d = 0; d < r; ++d) {
    int64_t s = getStart()[d], l = getLimit()[d], st = getStrides()[d];
    if (s < 0 || s > l || l > in.getDimSize(d))
      return emitOpError("dimension ")
             << d << ": expected 0 <= start (" << s << ") <= limit (" << l
             << ") <= size (" << in.getDimSize(d) << ")";
    if (st < 1)
      return emitOpError("dimension ") << d << ": stride must be >= 1";
    int64_t n = (l - s + st - 1) / st;
    if (getType().getDimSize(d) != n)
      return emitOpError("result dimension ")
             << d << " must have size " << n << ", got "
             << getType().getDimSize(d);
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getType() == getOperand().getType() &&
      llvm::all_of(getStart(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getStrides(), [](int64_t s) { return s == 1; }))
    return getOperand();
  return {};
}

Value SliceOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  RankedTensorType in = tensorType(getOperand());
  SmallVector<int64_t> low, high, interior;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t s = getStart()[d], st = getStrides()[d];
    int64_t n = getType().getDimSize(d);
    int64_t last = n > 0 ? s + (n - 1) * st + 1 : s; // one past the last taken
    low.push_back(s);
    high.push_back(in.getDimSize(d) - last);
    interior.push_back(st - 1);
  }
  return ZBBuilder(b, getLoc()).pad(g, low, high, interior);
}

LogicalResult PadOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  int64_t r = in.getRank();
  if (static_cast<int64_t>(getLow().size()) != r ||
      static_cast<int64_t>(getHigh().size()) != r ||
      static_cast<int64_t>(getInterior().size()) != r)
    return emitOpError("low, high and interior must have one entry per "
                       "dimension (")
           << r << ")";
  if (in.getElementType() != getType().getElementType() ||
      getType().getRank() != r)
    return emitOpError("result must have the operand's rank and element type");
  for (int64_t d = 0; d < r; ++d) {
    int64_t lo = getLow()[d], hi = getHigh()[d], it = getInterior()[d];
    if (lo < 0 || hi < 0 || it < 0)
      return emitOpError("dimension ")
             << d << ": padding amounts must be non-negative";
    int64_t n = in.getDimSize(d);
    int64_t size = lo + hi + n + std::max<int64_t>(n - 1, 0) * it;
    if (getType().getDimSize(d) != size)
      return emitOpError("result dimension ")
             << d << " must have size " << size << ", got "
             << getType().getDimSize(d);
  }
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getType() == getOperand().getType() &&
      llvm::all_of(getInterior(), [](int64_t s) { return s == 0; }))
    return getOperand();
  return {};
}

Value PadOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  RankedTensorType in = tensorType(getOperand());
  SmallVector<int64_t> start, limit, strides;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t st = getInterior()[d] + 1, n = in.getDimSize(d);
    start.push_back(getLow()[d]);
    limit.push_back(n > 0 ? getLow()[d] + (n - 1) * st + 1 : getLow()[d]);
    strides.push_back(st);
  }
  return ZBBuilder(b, getLoc()).slice(g, start, limit, strides);
}

//===----------------------------------------------------------------------===//
// ConcatOp / SplitOp
//===----------------------------------------------------------------------===//

/// Checks that `pieces`, laid side by side along `axis`, make `whole`.
static LogicalResult verifyPieces(Operation *op, RankedTensorType whole,
                                  TypeRange pieces, int64_t axis,
                                  StringRef what) {
  if (pieces.empty())
    return op->emitOpError("expects at least one ") << what;
  if (axis < 0 || axis >= whole.getRank())
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << whole.getRank();
  int64_t total = 0;
  for (auto [i, t] : llvm::enumerate(pieces)) {
    auto pt = llvm::cast<RankedTensorType>(t);
    if (pt.getRank() != whole.getRank() ||
        pt.getElementType() != whole.getElementType())
      return op->emitOpError(what)
             << " #" << i << " must have rank " << whole.getRank()
             << " and element type " << whole.getElementType();
    for (int64_t d = 0; d < whole.getRank(); ++d)
      if (d != axis && pt.getDimSize(d) != whole.getDimSize(d))
        return op->emitOpError(what)
               << " #" << i << " differs in dimension " << d
               << " (size " << pt.getDimSize(d) << ", expected "
               << whole.getDimSize(d) << ")";
    total += pt.getDimSize(axis);
  }
  if (total != whole.getDimSize(axis))
    return op->emitOpError("sizes along axis ")
           << axis << " add up to " << total << ", expected "
           << whole.getDimSize(axis);
  return success();
}

LogicalResult ConcatOp::verify() {
  return verifyPieces(*this, getType(), getInputs().getTypes(), getAxis(),
                      "input");
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

/// The slice of `g` along `axis` that corresponds to piece `index` of `pieces`.
static Value pieceOf(ZBBuilder &e, Value g, TypeRange pieces, unsigned index,
                     int64_t axis) {
  int64_t offset = 0;
  for (unsigned i = 0; i < index; ++i)
    offset += llvm::cast<RankedTensorType>(pieces[i]).getDimSize(axis);
  auto t = tensorType(g);
  SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()),
      strides(t.getRank(), 1);
  start[axis] = offset;
  limit[axis] =
      offset + llvm::cast<RankedTensorType>(pieces[index]).getDimSize(axis);
  return e.slice(g, start, limit, strides);
}

Value ConcatOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  return pieceOf(e, g, getInputs().getTypes(), i, getAxis());
}

LogicalResult SplitOp::verify() {
  return verifyPieces(*this, tensorType(getOperand()),
                      getResults().getTypes(), getAxis(), "result");
}

Value SplitOp::buildOperandGradient(OpBuilder &b, unsigned,
                                    ValueRange resultGrads) {
  ZBBuilder e(b, getLoc());
  SmallVector<Value> pieces;
  for (auto [r, g] : llvm::zip_equal(getResults(), resultGrads))
    pieces.push_back(g ? g : e.splat(tensorType(r), 0.0));
  return pieces.size() == 1 ? pieces.front() : e.concat(pieces, getAxis());
}

//===----------------------------------------------------------------------===//
// GatherOp / ScatterAddOp / OneHotOp
//===----------------------------------------------------------------------===//

/// Checks `rows` == indices.shape ++ table.shape[1:] for gather/scatter_add.
static LogicalResult verifyGatherShapes(Operation *op, RankedTensorType table,
                                        RankedTensorType indices,
                                        RankedTensorType rows,
                                        StringRef rowsName) {
  if (table.getRank() < 1)
    return op->emitOpError("the table must have rank >= 1");
  if (table.getElementType() != rows.getElementType())
    return op->emitOpError("element types of the table and ")
           << rowsName << " must match";
  SmallVector<int64_t> expected(indices.getShape());
  llvm::append_range(expected, table.getShape().drop_front());
  if (rows.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError("expects ")
           << rowsName
           << " of shape indices.shape ++ table.shape[1:] = "
           << RankedTensorType::get(expected, rows.getElementType())
           << ", got " << rows;
  return success();
}

LogicalResult GatherOp::verify() {
  return verifyGatherShapes(*this, tensorType(getTable()),
                            tensorType(getIndices()), getType(), "result");
}

Value GatherOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i != 0)
    return Value(); // indices are not differentiable
  return ZBBuilder(b, getLoc())
      .scatterAdd(g, getIndices(), tensorType(getTable()));
}

LogicalResult ScatterAddOp::verify() {
  return verifyGatherShapes(*this, getType(), tensorType(getIndices()),
                            tensorType(getUpdates()), "updates");
}

Value ScatterAddOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i != 0)
    return Value();
  return ZBBuilder(b, getLoc()).gather(g, getIndices());
}

LogicalResult OneHotOp::verify() {
  RankedTensorType in = tensorType(getIndices());
  if (getType().getRank() != in.getRank() + 1 ||
      getType().getShape().drop_back() != in.getShape())
    return emitOpError("result shape must be the indices' shape followed by "
                       "the number of classes, got ")
           << getType() << " for indices " << in;
  return success();
}

//===----------------------------------------------------------------------===//
// Composite ops
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t r = getType().getRank();
  if (static_cast<int64_t>(getAxis()) < 0 ||
      static_cast<int64_t>(getAxis()) >= r)
    return emitOpError("axis ") << getAxis() << " is out of range for rank "
                                << r;
  return success();
}

Value SoftmaxOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // dx = y * (g - sum(g * y, axis))
  Value y = getResult();
  int64_t axis = getAxis();
  Value dot = e.unreduce(e.reduceSum(e.mul(g, y), {axis}), getType(), {axis});
  return e.mul(y, e.sub(g, dot));
}

/// Checks the operands of layer_norm / rms_norm: `params` are 1-D of the
/// size of the last dimension of `input`, same element type.
static LogicalResult verifyNorm(Operation *op, RankedTensorType input,
                                RankedTensorType result, TypeRange params,
                                double epsilon) {
  if (input.getRank() < 1)
    return op->emitOpError("expects an input of rank >= 1");
  if (result != input)
    return op->emitOpError("result type must be the input type ") << input;
  int64_t d = input.getDimSize(input.getRank() - 1);
  for (Type t : params) {
    auto pt = llvm::cast<RankedTensorType>(t);
    if (pt.getRank() != 1 || pt.getDimSize(0) != d ||
        pt.getElementType() != input.getElementType())
      return op->emitOpError("weight and bias must be 1-D of the last "
                             "dimension's size and element type: ")
             << RankedTensorType::get({d}, input.getElementType())
             << ", got " << pt;
  }
  if (!(epsilon >= 0.0))
    return op->emitOpError("epsilon must be non-negative");
  return success();
}

/// Axes of `t` but the last one.
static SmallVector<int64_t> leadingAxes(RankedTensorType t) {
  return llvm::to_vector(llvm::seq<int64_t>(0, t.getRank() - 1));
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, tensorType(getInput()), getType(),
                    {getWeight().getType(), getBias().getType()},
                    getEpsilon().convertToDouble());
}

Value LayerNormOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  RankedTensorType t = getType();
  int64_t last = t.getRank() - 1;
  SmallVector<int64_t> lead = leadingAxes(t);
  if (i == 2) // d bias = sum over the leading dims of g
    return e.reduceSum(g, lead);
  // Recompute x_hat = (x - mean) * rstd.
  Value x = getInput();
  Value xc = e.sub(x, e.unreduce(e.reduceMean(x, {last}), t, {last}));
  Value var = e.reduceMean(e.mul(xc, xc), {last});
  Value rstd = e.rsqrt(e.add(var, e.splat(var, getEpsilon().convertToDouble())));
  Value rstdB = e.unreduce(rstd, t, {last});
  Value xhat = e.mul(xc, rstdB);
  if (i == 1) // d weight = sum over the leading dims of g * x_hat
    return e.reduceSum(e.mul(g, xhat), lead);
  // dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat)), gw = g * weight.
  Value gw = e.mul(g, e.broadcast(getWeight(), t, {last}));
  Value meanGw = e.unreduce(e.reduceMean(gw, {last}), t, {last});
  Value meanGwX =
      e.unreduce(e.reduceMean(e.mul(gw, xhat), {last}), t, {last});
  return e.mul(rstdB, e.sub(e.sub(gw, meanGw), e.mul(xhat, meanGwX)));
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, tensorType(getInput()), getType(),
                    {getWeight().getType()}, getEpsilon().convertToDouble());
}

Value RmsNormOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  RankedTensorType t = getType();
  int64_t last = t.getRank() - 1;
  Value x = getInput();
  Value ms = e.reduceMean(e.mul(x, x), {last});
  Value rstd = e.rsqrt(e.add(ms, e.splat(ms, getEpsilon().convertToDouble())));
  Value rstdB = e.unreduce(rstd, t, {last});
  if (i == 1) // d weight = sum over the leading dims of g * x * rstd
    return e.reduceSum(e.mul(g, e.mul(x, rstdB)), leadingAxes(t));
  // dx = rstd * (gw - x * rstd^2 * mean(gw * x)), gw = g * weight.
  Value gw = e.mul(g, e.broadcast(getWeight(), t, {last}));
  Value meanGwX = e.unreduce(e.reduceMean(e.mul(gw, x), {last}), t, {last});
  Value corr = e.mul(x, e.mul(e.mul(rstdB, rstdB), meanGwX));
  return e.mul(rstdB, e.sub(gw, corr));
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType logits = tensorType(getLogits());
  RankedTensorType targets = tensorType(getTargets());
  if (logits.getRank() < 1)
    return emitOpError("expects logits of rank >= 1 (classes last)");
  if (targets.getShape() != logits.getShape().drop_back())
    return emitOpError("targets must have the shape of the logits without "
                       "the class dimension, got ")
           << targets << " for logits " << logits;
  if (getType().getRank() != 0 ||
      getType().getElementType() != logits.getElementType())
    return emitOpError("result must be a 0-d tensor of the logits' element "
                       "type, got ")
           << getType();
  return success();
}

Value CrossEntropyOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i != 0)
    return Value(); // targets are not differentiable
  ZBBuilder e(b, getLoc());
  RankedTensorType t = tensorType(getLogits());
  int64_t last = t.getRank() - 1;
  int64_t count = t.getNumElements() / t.getDimSize(last);
  // (softmax(logits) - one_hot(targets)) * g / count
  Value p = e.softmax(getLogits(), last);
  Value oh = e.oneHot(getTargets(), t.getDimSize(last), t.getElementType());
  Value gs = e.broadcast(e.scale(g, 1.0 / static_cast<double>(count)), t, {});
  return e.mul(e.sub(p, oh), gs);
}

double CausalMaskOp::getFillValue() {
  if (std::optional<APFloat> f = getFill())
    return f->convertToDouble();
  return -std::numeric_limits<double>::infinity();
}

LogicalResult CausalMaskOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("expects rank >= 2 (queries x keys last), got ")
           << getType();
  return success();
}

Value CausalMaskOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc()).causalMask(g, 0.0);
}
