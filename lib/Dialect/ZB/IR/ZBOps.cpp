//===- ZBOps.cpp - zb dialect ops: verifiers, folders, gradient rules -----===//
//
// Gradient rules follow standard reverse-mode differentiation; each operand's
// gradient is built separately (GradientOpInterface), which is what lets
// zb-split-backward separate B (activation gradients) from W (parameter
// gradients), Zero Bubble paper Section 2.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

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
