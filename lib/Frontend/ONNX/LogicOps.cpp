//===- LogicOps.cpp - ONNX comparisons, logic and float classes ----------===//
//
// Equal/Less/LessOrEqual/Greater/GreaterOrEqual, And/Or/Xor/Not, IsNaN and
// IsInf on computed tensors (on constants they fold: ConstantFolding.cpp).
// These build the masks exporters write around attention: transformers'
// padding masks (`attention_mask.bool()` combined with the causal mask by
// And), RoBERTa's position ids (`input_ids != pad`), and torch's sdpa guard
// `Where(IsNaN(softmax), 0, softmax)` for fully masked rows. Booleans are
// zb.compare results (i1); integer and boolean operands are compared and
// combined through float32 (ONNXImporter::toFloat: exact below 2^24), as the
// StableHLO importer does. No gradient flows through a boolean.
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <limits>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::broadcastShapes;

FailureOr<std::pair<Value, Value>> ONNXImporter::floatOperands() {
  FailureOr<Value> lhs = tensorInput(0), rhs = failure();
  if (failed(lhs) || failed(rhs = tensorInput(1)))
    return failure();
  auto lt = cast<RankedTensorType>(lhs->getType());
  auto rt = cast<RankedTensorType>(rhs->getType());
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(lt.getShape(), rt.getShape());
  if (!shape) {
    nodeError() << "operand shapes are not broadcastable: " << lt << " and "
                << rt;
    return failure();
  }
  // Mixed float widths (f16 vs f32) are not an ONNX graph: one type each.
  bool lf = isa<FloatType>(lt.getElementType()),
       rf = isa<FloatType>(rt.getElementType());
  if (lf && rf && lt.getElementType() != rt.getElementType()) {
    nodeError() << "operand element types differ: " << lt << " and " << rt;
    return failure();
  }
  Value l = toFloat(*lhs), r = toFloat(*rhs);
  // An integer operand compared with a float one: in the float's type.
  Type ft = lf ? lt.getElementType()
               : (rf ? rt.getElementType() : builder.getF32Type());
  auto widen = [&](Value v) -> FailureOr<Value> {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != ft)
      v = zb::CastOp::create(builder, loc, t.clone(ft), v);
    return broadcastTo(v, *shape);
  };
  FailureOr<Value> a = widen(l), b = failure();
  if (failed(a) || failed(b = widen(r)))
    return failure();
  return std::make_pair(*a, *b);
}

/// Equal, Less, LessOrEqual, Greater, GreaterOrEqual: zb.compare.
FailureOr<NodeResults> ONNXImporter::compareNode() {
  FailureOr<std::pair<Value, Value>> ab = floatOperands();
  if (failed(ab))
    return failure();
  StringRef pred = llvm::StringSwitch<StringRef>(opType())
                       .Case("Equal", "eq")
                       .Case("Less", "lt")
                       .Case("LessOrEqual", "le")
                       .Case("Greater", "gt")
                       .Default("ge");
  return result(zb::ZBBuilder(builder, loc).compare(pred, ab->first,
                                                    ab->second));
}

/// And, Or, Xor on booleans: through 0/1 floats (a * b, max(a, b), a != b).
FailureOr<NodeResults> ONNXImporter::logicNode() {
  for (int i = 0; i < 2; ++i) {
    FailureOr<ImportedValue> v = lookup(i);
    if (failed(v))
      return failure();
    if (!typeOf(*v).getElementType().isInteger(1)) {
      nodeError() << "input #" << i << " must be a boolean tensor, got "
                  << typeOf(*v);
      return failure();
    }
  }
  FailureOr<std::pair<Value, Value>> ab = floatOperands();
  if (failed(ab))
    return failure();
  zb::ZBBuilder e(builder, loc);
  auto [a, b] = *ab;
  if (opType() == "Xor")
    return result(e.compare("ne", a, b));
  Value v = opType() == "And" ? e.mul(a, b) : e.max(a, b);
  return result(e.compare("ne", v, e.splat(v, 0.0)));
}

FailureOr<NodeResults> ONNXImporter::notNode() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  if (!cast<RankedTensorType>(x->getType()).getElementType().isInteger(1)) {
    nodeError() << "input #0 must be a boolean tensor, got " << x->getType();
    return failure();
  }
  zb::ZBBuilder e(builder, loc);
  Value f = toFloat(*x);
  return result(e.compare("eq", f, e.splat(f, 0.0)));
}

/// IsNaN(x): x != x (zb.compare "ne" is unordered: true for NaN).
FailureOr<NodeResults> ONNXImporter::isNaN() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  return result(zb::ZBBuilder(builder, loc).compare("ne", *x, *x));
}

/// IsInf(x) with detect_positive / detect_negative (default both):
/// x == +inf, x == -inf, or max(x, -x) == +inf.
FailureOr<NodeResults> ONNXImporter::isInf() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<int64_t> pos = intAttr("detect_positive", 1),
                     neg = intAttr("detect_negative", 1);
  if (failed(x) || failed(pos) || failed(neg))
    return failure();
  zb::ZBBuilder e(builder, loc);
  double inf = std::numeric_limits<double>::infinity();
  if (*pos && *neg)
    return result(
        e.compare("eq", e.max(*x, e.neg(*x)), e.splat(*x, inf)));
  if (*pos)
    return result(e.compare("eq", *x, e.splat(*x, inf)));
  if (*neg)
    return result(e.compare("eq", *x, e.splat(*x, -inf)));
  // Neither: all false.
  return result(e.compare("ne", e.splat(*x, 0.0), e.splat(*x, 0.0)));
}

void zb::frontend::onnx_import::populateLogicHandlers(OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Equal", 1, &I::compareNode},
      {"Less", 1, &I::compareNode},
      {"LessOrEqual", 12, &I::compareNode},
      {"Greater", 1, &I::compareNode},
      {"GreaterOrEqual", 12, &I::compareNode},
      {"And", 1, &I::logicNode},
      {"Or", 1, &I::logicNode},
      {"Xor", 1, &I::logicNode},
      {"Not", 1, &I::notNode},
      {"IsNaN", 9, &I::isNaN},
      {"IsInf", 10, &I::isInf},
  };
  table.add(entries);
}
