//===- ZBOps.cpp - zb dialect ops: verifiers, folders, parsers ------------===//
//
// The op definitions generated from ZBOps.td, with their hand-written parts:
// verifiers (shapes, element types, attribute ranges), folders, and the custom
// assembly of zb.constant. The gradient rules (GradientOpInterface) are in
// ZBGradients.cpp, the ZBBuilder declared in ZBBuilder.h in ZBBuilder.cpp.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "ZBOpsUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace zb;
using zb::detail::tensorType;

#include "zb/Dialect/ZB/IR/ZBInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "zb/Dialect/ZB/IR/ZBOps.cpp.inc"

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

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand(); // -(-x) = x
  return {};
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

LogicalResult SelectOp::verify() {
  if (getOnTrue().getType() != getType() || getOnFalse().getType() != getType())
    return emitOpError("on_true and on_false must have the result type ")
           << getType();
  if (getCond().getType().getShape() != getType().getShape())
    return emitOpError("condition shape must match the result shape");
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// Checks that operands `a`, `b` and result `c` have one element type.
static LogicalResult verifySameElementType(Operation *op, RankedTensorType a,
                                           RankedTensorType b,
                                           RankedTensorType c) {
  if (a.getElementType() != b.getElementType() ||
      a.getElementType() != c.getElementType())
    return op->emitOpError("element types of operands and result must match");
  return success();
}

/// Checks op(lhs) * op(rhs) = result on the last two dimensions of `a`, `b`,
/// `c` (rank r >= 2 each; op transposes when `ta` / `tb`); `what` names the
/// result ("result", "result matrices").
static LogicalResult verifyContraction(Operation *op, RankedTensorType a,
                                       RankedTensorType b, RankedTensorType c,
                                       bool ta, bool tb, StringRef what) {
  int64_t r = a.getRank();
  int64_t m = a.getDimSize(ta ? r - 1 : r - 2);
  int64_t k = a.getDimSize(ta ? r - 2 : r - 1);
  int64_t k2 = b.getDimSize(tb ? r - 1 : r - 2);
  int64_t n = b.getDimSize(tb ? r - 2 : r - 1);
  if (k != k2)
    return op->emitOpError("contraction sizes differ: op(lhs) is ")
           << m << "x" << k << ", op(rhs) is " << k2 << "x" << n;
  if (c.getDimSize(r - 2) != m || c.getDimSize(r - 1) != n)
    return op->emitOpError()
           << what << " must be " << m << "x" << n << ", got " << c;
  return success();
}

LogicalResult MatmulOp::verify() {
  RankedTensorType a = tensorType(getLhs()), b = tensorType(getRhs());
  if (a.getRank() != 2 || b.getRank() != 2 || getType().getRank() != 2)
    return emitOpError("expects 2-D operands and result, got ")
           << a << ", " << b << " -> " << getType();
  if (failed(verifySameElementType(*this, a, b, getType())))
    return failure();
  return verifyContraction(*this, a, b, getType(), getTransposeLhs(),
                           getTransposeRhs(), "result");
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
  if (auto c =
          llvm::dyn_cast_if_present<DenseElementsAttr>(adaptor.getOperand()))
    return c.reshape(getType());
  return {};
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
      return op->emitOpError("axis ")
             << a << " is out of range for rank " << in.getRank();
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

LogicalResult ReduceSumOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(), getAxes());
}

LogicalResult ReduceMeanOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(), getAxes());
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
// Elementwise functions
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult CastOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  if (in.getShape() != getType().getShape())
    return emitOpError("shape must not change: ") << in << " -> " << getType();
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
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
  if (failed(verifySameElementType(*this, a, b, c)))
    return failure();
  if (a.getShape().drop_back(2) != b.getShape().drop_back(2) ||
      a.getShape().drop_back(2) != c.getShape().drop_back(2))
    return emitOpError("batch dimensions (all but the last two) of operands "
                       "and result must match");
  return verifyContraction(*this, a, b, c, getTransposeLhs(), getTransposeRhs(),
                           "result matrices");
}

//===----------------------------------------------------------------------===//
// ReduceMaxOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceMaxOp::verify() {
  return verifyReduction(*this, tensorType(getOperand()), getType(), getAxes());
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

//===----------------------------------------------------------------------===//
// SliceOp / PadOp
//===----------------------------------------------------------------------===//

/// Checks the per-dimension attribute lists of zb.slice / zb.pad (named
/// `names` in the message): one entry per operand dimension each, and a
/// result of the operand's rank and element type.
static LogicalResult verifyPerDimension(Operation *op, RankedTensorType in,
                                        RankedTensorType out,
                                        ArrayRef<ArrayRef<int64_t>> lists,
                                        StringRef names) {
  int64_t r = in.getRank();
  if (llvm::any_of(lists, [&](ArrayRef<int64_t> l) {
        return static_cast<int64_t>(l.size()) != r;
      }))
    return op->emitOpError()
           << names << " must have one entry per dimension (" << r << ")";
  if (in.getElementType() != out.getElementType() || out.getRank() != r)
    return op->emitOpError(
        "result must have the operand's rank and element type");
  return success();
}

/// Checks that result dimension `d` of `out` has size `size`.
static LogicalResult verifyResultDim(Operation *op, RankedTensorType out,
                                     int64_t d, int64_t size) {
  if (out.getDimSize(d) != size)
    return op->emitOpError("result dimension ")
           << d << " must have size " << size << ", got " << out.getDimSize(d);
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  if (failed(verifyPerDimension(*this, in, getType(),
                                {getStart(), getLimit(), getStrides()},
                                "start, limit and strides")))
    return failure();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t s = getStart()[d], l = getLimit()[d], st = getStrides()[d];
    if (s < 0 || s > l || l > in.getDimSize(d))
      return emitOpError("dimension ")
             << d << ": expected 0 <= start (" << s << ") <= limit (" << l
             << ") <= size (" << in.getDimSize(d) << ")";
    if (st < 1)
      return emitOpError("dimension ") << d << ": stride must be >= 1";
    if (failed(verifyResultDim(*this, getType(), d, (l - s + st - 1) / st)))
      return failure();
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

LogicalResult PadOp::verify() {
  RankedTensorType in = tensorType(getOperand());
  if (failed(verifyPerDimension(*this, in, getType(),
                                {getLow(), getHigh(), getInterior()},
                                "low, high and interior")))
    return failure();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t lo = getLow()[d], hi = getHigh()[d], it = getInterior()[d];
    if (lo < 0 || hi < 0 || it < 0)
      return emitOpError("dimension ")
             << d << ": padding amounts must be non-negative";
    int64_t n = in.getDimSize(d);
    int64_t size = lo + hi + n + std::max<int64_t>(n - 1, 0) * it;
    if (failed(verifyResultDim(*this, getType(), d, size)))
      return failure();
  }
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (getType() == getOperand().getType() &&
      llvm::all_of(getInterior(), [](int64_t s) { return s == 0; }))
    return getOperand();
  return {};
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
               << " #" << i << " differs in dimension " << d << " (size "
               << pt.getDimSize(d) << ", expected " << whole.getDimSize(d)
               << ")";
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

LogicalResult SplitOp::verify() {
  return verifyPieces(*this, tensorType(getOperand()), getResults().getTypes(),
                      getAxis(), "result");
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
           << rowsName << " of shape indices.shape ++ table.shape[1:] = "
           << RankedTensorType::get(expected, rows.getElementType()) << ", got "
           << rows;
  return success();
}

LogicalResult GatherOp::verify() {
  return verifyGatherShapes(*this, tensorType(getTable()),
                            tensorType(getIndices()), getType(), "result");
}

LogicalResult ScatterAddOp::verify() {
  return verifyGatherShapes(*this, getType(), tensorType(getIndices()),
                            tensorType(getUpdates()), "updates");
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
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << r;
  return success();
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
             << RankedTensorType::get({d}, input.getElementType()) << ", got "
             << pt;
  }
  if (!(epsilon >= 0.0))
    return op->emitOpError("epsilon must be non-negative");
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, tensorType(getInput()), getType(),
                    {getWeight().getType(), getBias().getType()},
                    getEpsilon().convertToDouble());
}

LogicalResult RmsNormOp::verify() {
  return verifyNorm(*this, tensorType(getInput()), getType(),
                    {getWeight().getType()}, getEpsilon().convertToDouble());
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
  RankedTensorType result = getResult().getType();
  auto logitsFloat = cast<FloatType>(logits.getElementType());
  auto resultFloat = dyn_cast<FloatType>(result.getElementType());
  if (result.getRank() != 0 || !resultFloat ||
      resultFloat.getWidth() < logitsFloat.getWidth() ||
      (resultFloat.getWidth() == logitsFloat.getWidth() &&
       resultFloat != logitsFloat))
    return emitOpError("result must be a 0-d tensor of the logits' element "
                       "type or a wider float type, got ")
           << result << " for logits " << logits;
  if (Value lse = getLse()) {
    auto lseType = cast<RankedTensorType>(lse.getType());
    if (lseType.getShape() != targets.getShape() ||
        lseType.getElementType() != result.getElementType())
      return emitOpError("lse must have the targets' shape and the result's "
                         "element type, got ")
             << lseType << " for targets " << targets << " and result "
             << result;
  }
  return success();
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

//===----------------------------------------------------------------------===//
// AttentionOp / AttentionGradOp
//===----------------------------------------------------------------------===//

/// Checks the operands shared by zb.attention and zb.attention_grad and
/// returns the shapes of its result `[batch..., Tq, Dv]` and lse
/// `[batch..., Tq]` (element types not set: the caller checks them).
static LogicalResult verifyAttention(Operation *op, Value query, Value key,
                                     Value value, Value mask, double scale,
                                     SmallVectorImpl<int64_t> &resultShape,
                                     SmallVectorImpl<int64_t> &lseShape) {
  RankedTensorType q = tensorType(query), k = tensorType(key),
                   v = tensorType(value);
  int64_t r = q.getRank();
  if (r < 3 || k.getRank() != r || v.getRank() != r)
    return op->emitOpError("expects query, key and value of one rank >= 3 "
                           "([batch..., T, D]), got ")
           << q << ", " << k << ", " << v;
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return op->emitOpError("query, key and value must have one element "
                           "type, got ")
           << q << ", " << k << ", " << v;
  if (q.getShape().drop_back(2) != k.getShape().drop_back(2) ||
      q.getShape().drop_back(2) != v.getShape().drop_back(2))
    return op->emitOpError("query, key and value must have the same batch "
                           "dimensions, got ")
           << q << ", " << k << ", " << v;
  if (q.getDimSize(r - 1) != k.getDimSize(r - 1))
    return op->emitOpError("query and key must have the same head size "
                           "(last dimension), got ")
           << q << " and " << k;
  if (k.getDimSize(r - 2) != v.getDimSize(r - 2))
    return op->emitOpError("key and value must have the same number of "
                           "keys (dimension ")
           << r - 2 << "), got " << k << " and " << v;
  if (!(scale > 0.0) || !std::isfinite(scale))
    return op->emitOpError("scale must be positive and finite, got ")
           << scale;
  SmallVector<int64_t> scores(q.getShape().drop_back());
  scores.push_back(k.getDimSize(r - 2));
  if (mask) {
    RankedTensorType m = tensorType(mask);
    bool ok = m.getRank() == r;
    for (int64_t i = 0; ok && i < r; ++i)
      ok = m.getDimSize(i) == scores[i] || m.getDimSize(i) == 1;
    if (!ok)
      return op->emitOpError("mask must have the scores' rank with each "
                             "dimension theirs or 1, scores ")
             << RankedTensorType::get(scores, q.getElementType())
             << ", got " << m;
  }
  resultShape.assign(q.getShape().begin(), q.getShape().end());
  resultShape.back() = v.getDimSize(r - 1);
  lseShape.assign(q.getShape().begin(), q.getShape().end() - 1);
  return success();
}

LogicalResult AttentionOp::verify() {
  SmallVector<int64_t> resultShape, lseShape;
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(),
                             getMask(), getScale().convertToDouble(),
                             resultShape, lseShape)))
    return failure();
  Type elem = tensorType(getQuery()).getElementType();
  auto want = RankedTensorType::get(resultShape, elem);
  if (getResult().getType() != want)
    return emitOpError("result must be ") << want << ", got "
                                          << getResult().getType();
  if (tensorType(getLse()).getShape() != ArrayRef<int64_t>(lseShape))
    return emitOpError("lse must have the shape ")
           << RankedTensorType::get(lseShape, tensorType(getLse()).getElementType())
           << " ([batch..., Tq]), got " << getLse().getType();
  return success();
}

LogicalResult AttentionGradOp::verify() {
  SmallVector<int64_t> resultShape, lseShape;
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(),
                             getMask(), getScale().convertToDouble(),
                             resultShape, lseShape)))
    return failure();
  Type elem = tensorType(getQuery()).getElementType();
  auto want = RankedTensorType::get(resultShape, elem);
  if (getResult().getType() != want || getResultGrad().getType() != want)
    return emitOpError("result and result_grad must be ")
           << want << ", got " << getResult().getType() << " and "
           << getResultGrad().getType();
  if (tensorType(getLse()).getShape() != ArrayRef<int64_t>(lseShape))
    return emitOpError("lse must have the shape [batch..., Tq], got ")
           << getLse().getType();
  if (getLseGrad() && getLseGrad().getType() != getLse().getType())
    return emitOpError("lse_grad must have lse's type ")
           << getLse().getType() << ", got " << getLseGrad().getType();
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError("the gradients must have the types of query, key "
                       "and value");
  return success();
}
