//===- ElementwiseOps.cpp - ONNX elementwise ops -----------------------===//
//
// Add/Sub/Mul/Div with numpy broadcasting (a constant additive causal mask
// becomes zb.causal_mask), unary math and activations, Pow, Reciprocal,
// Where, Cast, Identity and Dropout (inference).
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"

#include <cmath>
#include <limits>
#include <type_traits>

using namespace mlir;
using namespace zb::frontend::onnx_import;

/// Add / Sub / Mul / Div with numpy (multidirectional) broadcasting.
template <typename OpTy> FailureOr<NodeResults> ONNXImporter::binary() {
  FailureOr<ImportedValue> lhs = lookup(0), rhs = failure();
  if (failed(lhs) || failed(rhs = lookup(1)))
    return failure();
  RankedTensorType lhsType = typeOf(*lhs), rhsType = typeOf(*rhs);
  // Integer arithmetic on data (RoBERTa's position ids: cumsum(mask) * mask
  // + pad): in float32, truncated back (Div: toward zero, as ONNX's integer
  // Div); exact below 2^24.
  Type lhsElt = lhsType.getElementType();
  if (lhsElt == rhsType.getElementType() && isa<IntegerType>(lhsElt) &&
      !lhsElt.isInteger(1)) {
    FailureOr<std::pair<Value, Value>> ab = floatOperands();
    if (failed(ab))
      return failure();
    Value f = OpTy::create(builder, loc, ab->first.getType(), ab->first,
                           ab->second);
    return result(fromFloat(f, lhsElt));
  }
  RankedTensorType types[] = {lhsType, rhsType};
  for (auto [i, type] : llvm::enumerate(types)) {
    if (!isa<FloatType>(type.getElementType())) {
      nodeError() << "input #" << i << " has element type "
                  << type.getElementType()
                  << "; only floating-point tensors are supported";
      return failure();
    }
  }
  // x + mask with a constant additive causal mask (0 where k <= q, -inf
  // where k > q, e.g. full(-inf).triu(1)) is zb.causal_mask.
  if constexpr (std::is_same_v<OpTy, zb::AddOp>) {
    for (int side = 0; side < 2; ++side) {
      ImportedValue &mask = side ? *rhs : *lhs, &other = side ? *lhs : *rhs;
      RankedTensorType otherType = side ? lhsType : rhsType;
      if (!mask.constant || other.constant || mask.constant.isSplat() ||
          otherType.getRank() < 2 || typeOf(mask).getRank() < 2 ||
          typeOf(mask).getShape().take_back(2) !=
              otherType.getShape().take_back(2) ||
          !broadcastShapes(otherType.getShape(), typeOf(mask).getShape()) ||
          *broadcastShapes(otherType.getShape(), typeOf(mask).getShape()) !=
              otherType.getShape() ||
          !isCausalPattern(HostTensor::fromAttr(mask.constant),
                           -std::numeric_limits<double>::infinity(), 0.0))
        continue;
      return result(zb::CausalMaskOp::create(builder, loc, otherType,
                                             other.value, FloatAttr()));
    }
  }
  if (lhsType.getElementType() != rhsType.getElementType()) {
    nodeError() << "operand element types differ: " << lhsType << " and "
                << rhsType;
    return failure();
  }
  int64_t rank = std::max(lhsType.getRank(), rhsType.getRank());
  SmallVector<int64_t> shape(rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhsType.getRank()
                    ? 1
                    : lhsType.getDimSize(i - (rank - lhsType.getRank()));
    int64_t r = i < rank - rhsType.getRank()
                    ? 1
                    : rhsType.getDimSize(i - (rank - rhsType.getRank()));
    if (l != r && l != 1 && r != 1) {
      nodeError() << "operand shapes are not broadcastable: " << lhsType
                  << " and " << rhsType;
      return failure();
    }
    shape[i] = l == 1 ? r : l;
  }
  FailureOr<Value> l = broadcastInput(0, shape), r = failure();
  if (failed(l) || failed(r = broadcastInput(1, shape)))
    return failure();
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  return result(OpTy::create(builder, loc, type, *l, *r));
}

template <typename OpTy> FailureOr<NodeResults> ONNXImporter::unary() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  return result(OpTy::create(builder, loc, x->getType(), *x));
}

/// Gelu (ONNX opset 20, what torch.onnx.export writes from opset 20 on):
/// approximate "none" (erf) or "tanh" -> zb.gelu with the same attribute.
FailureOr<NodeResults> ONNXImporter::gelu() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  std::string approximate = stringAttr("approximate").value_or("none");
  if (approximate != "none" && approximate != "tanh") {
    nodeError() << "Gelu approximate must be \"none\" or \"tanh\", got \""
                << approximate << "\"";
    return failure();
  }
  auto op = zb::GeluOp::create(builder, loc, x->getType(), *x);
  op.setApproximate(approximate);
  return result(op);
}

/// Pow with a constant scalar exponent: x^1 -> x, x^2 -> x * x, x^0.5 ->
/// sqrt, x^-0.5 -> rsqrt, else zb.pow with the exponent as a splat.
FailureOr<NodeResults> ONNXImporter::pow() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<ImportedValue> e = lookup(1);
  if (failed(x) || failed(e))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::optional<double> exponent;
  if (e->constant && e->constant.getNumElements() == 1)
    exponent = HostTensor::fromAttr(e->constant).data[0];
  if (!exponent) {
    FailureOr<Value> ev = floatInput(1);
    if (failed(ev))
      return failure();
    auto eType = cast<RankedTensorType>(ev->getType());
    std::optional<SmallVector<int64_t>> shape =
        broadcastShapes(type.getShape(), eType.getShape());
    if (eType.getElementType() != type.getElementType() || !shape) {
      nodeError() << "a computed exponent must have the element type of the "
                     "base and broadcast with it: base "
                  << type << ", exponent " << eType;
      return failure();
    }
    FailureOr<Value> base = broadcastTo(*x, *shape), exp = failure();
    if (failed(base) || failed(exp = broadcastTo(*ev, *shape)))
      return failure();
    return result(
        zb::PowOp::create(builder, loc, base->getType(), *base, *exp));
  }
  Value y;
  if (*exponent == 1.0)
    y = *x;
  else if (*exponent == 2.0)
    y = zb::MulOp::create(builder, loc, type, *x, *x);
  else if (*exponent == 0.5)
    y = zb::SqrtOp::create(builder, loc, type, *x);
  else if (*exponent == -0.5)
    y = zb::RsqrtOp::create(builder, loc, type, *x);
  else
    y = zb::PowOp::create(builder, loc, type, *x,
                          splatConstant(type, *exponent));
  return result(y);
}

FailureOr<NodeResults> ONNXImporter::reciprocal() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  return result(
      zb::DivOp::create(builder, loc, type, splatConstant(type, 1.0), *x));
}

/// Where(cond, x, y). A constant causal condition with a constant fill
/// becomes zb.causal_mask, anything else zb.select.
FailureOr<NodeResults> ONNXImporter::where() {
  FailureOr<ImportedValue> cond = lookup(0), x = failure(), y = failure();
  if (failed(cond) || failed(x = lookup(1)) || failed(y = lookup(2)))
    return failure();
  RankedTensorType ct = typeOf(*cond), xt = typeOf(*x), yt = typeOf(*y);
  if (!ct.getElementType().isInteger(1) ||
      xt.getElementType() != yt.getElementType()) {
    nodeError() << "expected a boolean condition and two tensors of one "
                   "element type, got "
                << ct << ", " << xt << ", " << yt;
    return failure();
  }
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(ct.getShape(), xt.getShape());
  if (shape)
    shape = broadcastShapes(*shape, yt.getShape());
  if (!shape) {
    nodeError() << "operand shapes are not broadcastable: " << ct << ", " << xt
                << ", " << yt;
    return failure();
  }
  auto type = RankedTensorType::get(*shape, xt.getElementType());
  if (cond->constant && shape->size() >= 2) {
    HostTensor c = HostTensor::fromAttr(cond->constant);
    // where(k > q, fill, y) or where(k <= q, y, fill)
    for (int fillSide = 1; fillSide <= 2; ++fillSide) {
      ImportedValue &fill = fillSide == 1 ? *x : *y;
      ImportedValue &other = fillSide == 1 ? *y : *x;
      if (!fill.constant || !fill.constant.isSplat() || other.constant ||
          typeOf(other).getShape() != ArrayRef<int64_t>(*shape))
        continue;
      bool causal = fillSide == 1 ? isCausalPattern(c, 1.0, 0.0)
                                  : isCausalPattern(c, 0.0, 1.0);
      if (!causal)
        continue;
      if (fill.constant.getNumElements() == 0)
        continue;
      double f = HostTensor::fromAttr(fill.constant).data[0];
      FloatAttr fillAttr;
      if (!(std::isinf(f) && f < 0))
        fillAttr = builder.getF64FloatAttr(f);
      return result(
          zb::CausalMaskOp::create(builder, loc, type, other.value, fillAttr));
    }
  }
  Value c;
  if (cond->constant) {
    FailureOr<HostTensor> cb =
        broadcastHost(HostTensor::fromAttr(cond->constant), *shape,
                      [&] { return nodeError(); });
    if (failed(cb))
      return failure();
    c = zb::ConstantOp::create(builder, loc, cb->toAttr());
  } else {
    FailureOr<Value> wide = broadcastTo(cond->value, *shape);
    if (failed(wide))
      return failure();
    c = *wide;
  }
  FailureOr<Value> a = broadcastInput(1, *shape), b = failure();
  if (failed(a) || failed(b = broadcastInput(2, *shape)))
    return failure();
  if (!isa<FloatType>(xt.getElementType())) {
    // Integer or boolean branches (ids, masks): selected as float32.
    Value f = zb::SelectOp::create(
        builder, loc, type.clone(builder.getF32Type()), c, toFloat(*a),
        toFloat(*b));
    return result(fromFloat(f, xt.getElementType()));
  }
  return result(zb::SelectOp::create(builder, loc, type, c, *a, *b));
}

FailureOr<NodeResults> ONNXImporter::castNode() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> to = intAttr("to", 0);
  if (failed(x) || failed(to))
    return failure();
  Type target = convertElementType(int32_t(*to));
  if (!target) {
    nodeError() << "unsupported target type " << elementTypeName(int32_t(*to));
    return failure();
  }
  return castTo(*x, target);
}

/// CastLike(x, like) (opset 15): Cast to the element type of `like`.
FailureOr<NodeResults> ONNXImporter::castLike() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<ImportedValue> like = lookup(1);
  if (failed(x) || failed(like))
    return failure();
  return castTo(*x, typeOf(*like).getElementType());
}

FailureOr<NodeResults> ONNXImporter::castTo(Value x, Type target) {
  auto type = cast<RankedTensorType>(x.getType());
  if (target == type.getElementType())
    return result(x);
  // To bool: != 0 (NaN is true, as C and ONNX's reference); to an
  // integer: truncation toward zero (zb.cast).
  if (target.isInteger(1))
    return result(fromFloat(toFloat(x), target));
  if (!isa<FloatType>(target) && !target.isInteger(32) &&
      !target.isInteger(64)) {
    nodeError() << "a cast of a computed " << type << " to " << target
                << " is not supported (to floating point, bool, int32 or "
                   "int64)";
    return failure();
  }
  return result(zb::CastOp::create(
      builder, loc, RankedTensorType::get(type.getShape(), target), x));
}

FailureOr<NodeResults> ONNXImporter::identity() {
  FailureOr<ImportedValue> v = lookup(0);
  if (failed(v))
    return failure();
  return NodeResults{*v};
}

/// Dropout in inference mode (no training_mode input, or a constant false)
/// is the identity; the mask output is not supported.
FailureOr<NodeResults> ONNXImporter::dropout() {
  if (hasInput(2)) {
    FailureOr<DenseElementsAttr> mode = constantInput(2);
    if (failed(mode))
      return failure();
    if (mode->getNumElements() != 1 ||
        HostTensor::fromAttr(*mode).data[0] != 0.0) {
      nodeError() << "training mode is not supported (export the model in "
                     "eval mode)";
      return failure();
    }
  }
  if (hasOutput(1)) {
    nodeError() << "output mask is not supported";
    return failure();
  }
  return identity();
}

void zb::frontend::onnx_import::populateElementwiseHandlers(
    OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Add", 1, &I::binary<zb::AddOp>},
      {"Sub", 1, &I::binary<zb::SubOp>},
      {"Mul", 1, &I::binary<zb::MulOp>},
      {"Div", 1, &I::binary<zb::DivOp>},
      {"Relu", 1, &I::unary<zb::ReluOp>},
      {"Tanh", 1, &I::unary<zb::TanhOp>},
      {"Exp", 1, &I::unary<zb::ExpOp>},
      {"Log", 1, &I::unary<zb::LogOp>},
      {"Neg", 1, &I::unary<zb::NegOp>},
      {"Erf", 1, &I::unary<zb::ErfOp>},
      {"Gelu", 20, &I::gelu},
      {"Sqrt", 1, &I::unary<zb::SqrtOp>},
      {"Sigmoid", 1, &I::unary<zb::SigmoidOp>},
      {"Pow", 1, &I::pow},
      {"Reciprocal", 1, &I::reciprocal},
      {"Where", 1, &I::where},
      {"Cast", 1, &I::castNode},
      {"CastLike", 15, &I::castLike},
      {"Identity", 1, &I::identity},
      {"Dropout", 1, &I::dropout},
  };
  table.add(entries);
}
