//===- ConstantFolding.cpp - ONNX nodes folded at import ------------------===//
//
// A node of a foldable op whose inputs are all constants known at import is
// evaluated on HostTensors (zb/Frontend/HostTensor.h), in double precision
// rounded to the element type after every op, so that the exporters' shape
// plumbing (Shape/Gather/Concat chains, masks, rotary tables) leaves no op
// behind. The fold table lists the foldable ops, the inputs each needs, and
// the ops that exist only folded. See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::broadcastHost;
using zb::frontend::broadcastShapes;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::toInts;

//===----------------------------------------------------------------------===//
// The fold table
//===----------------------------------------------------------------------===//

namespace {
using I = ONNXImporter;
/// Foldable ops: type, inputs needed, fold only, fold.
const FoldRule kFoldRules[] = {
    // Elementwise unary.
    {"Identity", 1, false, &I::foldUnary},
    {"Neg", 1, false, &I::foldUnary},
    {"Sqrt", 1, false, &I::foldUnary},
    {"Reciprocal", 1, false, &I::foldUnary},
    {"Exp", 1, false, &I::foldUnary},
    {"Log", 1, false, &I::foldUnary},
    {"Tanh", 1, false, &I::foldUnary},
    {"Erf", 1, false, &I::foldUnary},
    {"Sigmoid", 1, false, &I::foldUnary},
    {"Relu", 1, false, &I::foldUnary},
    {"Cos", 1, true, &I::foldUnary},
    {"Sin", 1, true, &I::foldUnary},
    {"Not", 1, false, &I::foldUnary},
    {"IsNaN", 1, false, &I::foldClass},
    {"IsInf", 1, false, &I::foldClass},
    // Elementwise binary (Max and Min: variadic) with numpy broadcasting.
    {"Add", 2, false, &I::foldBinary},
    {"Sub", 2, false, &I::foldBinary},
    {"Mul", 2, false, &I::foldBinary},
    {"Div", 2, false, &I::foldBinary},
    {"Pow", 2, false, &I::foldBinary},
    {"Max", 1, true, &I::foldBinary},
    {"Min", 1, true, &I::foldBinary},
    {"Equal", 2, false, &I::foldBinary},
    {"Less", 2, false, &I::foldBinary},
    {"LessOrEqual", 2, false, &I::foldBinary},
    {"Greater", 2, false, &I::foldBinary},
    {"GreaterOrEqual", 2, false, &I::foldBinary},
    {"And", 2, false, &I::foldBinary},
    {"Or", 2, false, &I::foldBinary},
    {"Xor", 2, false, &I::foldBinary},
    {"Where", 3, false, &I::foldWhere},
    {"Cast", 1, false, &I::foldCast},
    {"CastLike", 2, false, &I::foldCastLike},
    // Shapes and index arithmetic.
    {"Gather", 2, false, &I::foldGather},
    {"Reshape", 2, false, &I::foldReshape},
    {"Unsqueeze", 1, false, &I::foldReshape},
    {"Squeeze", 1, false, &I::foldReshape},
    {"Flatten", 1, false, &I::foldReshape},
    {"Concat", 1, false, &I::foldConcat},
    {"Expand", 2, false, &I::foldExpand},
    {"Tile", 2, false, &I::foldTile},
    {"Slice", 3, false, &I::foldSlice},
    {"Transpose", 1, false, &I::foldTranspose},
    {"Range", 3, true, &I::foldRange},
    {"ConstantOfShape", 1, true, &I::foldConstantOfShape},
    {"Trilu", 1, true, &I::foldTrilu},
    {"Pad", 2, false, &I::foldPad},
    {"GatherElements", 2, false, &I::foldGatherElements},
    {"GatherND", 2, false, &I::foldGatherND},
    {"CumSum", 2, false, &I::foldCumSum},
};
} // namespace

const FoldRule *
zb::frontend::onnx_import::findFoldRule(llvm::StringRef opType) {
  const FoldRule *rule = llvm::find_if(
      kFoldRules, [&](const FoldRule &r) { return r.opType == opType; });
  return rule == std::end(kFoldRules) ? nullptr : rule;
}

FailureOr<NodeResults> ONNXImporter::fold(const FoldRule &rule) {
  SmallVector<HostTensor> in;
  for (int i = 0; i < numInputs(); ++i) {
    if (!hasInput(i)) {
      in.push_back({});
      continue;
    }
    FailureOr<HostTensor> t = hostInput(i);
    if (failed(t))
      return failure();
    in.push_back(std::move(*t));
  }
  size_t n = rule.minInputs;
  if (in.size() < n || llvm::any_of(llvm::seq<size_t>(0, n),
                                    [&](size_t i) { return !in[i].type; })) {
    nodeError() << "expected " << n << " inputs";
    return failure();
  }
  FailureOr<HostTensor> folded = (this->*rule.fold)(in);
  if (failed(folded))
    return failure();
  return NodeResults{{Value(), folded->toAttr()}};
}

//===----------------------------------------------------------------------===//
// Elementwise folds
//===----------------------------------------------------------------------===//

/// The function of an elementwise unary op, or null.
static double (*unaryFoldFn(llvm::StringRef op))(double) {
  using Fn = double (*)(double);
  return llvm::StringSwitch<Fn>(op)
      .Case("Identity", [](double x) { return x; })
      .Case("Neg", [](double x) { return -x; })
      .Case("Sqrt", [](double x) { return std::sqrt(x); })
      .Case("Reciprocal", [](double x) { return 1.0 / x; })
      .Case("Cos", [](double x) { return std::cos(x); })
      .Case("Sin", [](double x) { return std::sin(x); })
      .Case("Exp", [](double x) { return std::exp(x); })
      .Case("Log", [](double x) { return std::log(x); })
      .Case("Tanh", [](double x) { return std::tanh(x); })
      .Case("Erf", [](double x) { return std::erf(x); })
      .Case("Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); })
      .Case("Relu", [](double x) { return std::max(x, 0.0); })
      .Case("Not", [](double x) { return x != 0.0 ? 0.0 : 1.0; })
      .Default(nullptr);
}

/// The function of an elementwise binary op, or null.
static double (*binaryFoldFn(llvm::StringRef op))(double, double) {
  using Fn = double (*)(double, double);
  return llvm::StringSwitch<Fn>(op)
      .Case("Add", [](double a, double b) { return a + b; })
      .Case("Sub", [](double a, double b) { return a - b; })
      .Case("Mul", [](double a, double b) { return a * b; })
      .Case("Div", [](double a, double b) { return a / b; })
      .Case("Pow", [](double a, double b) { return std::pow(a, b); })
      .Case("Max", [](double a, double b) { return std::max(a, b); })
      .Case("Min", [](double a, double b) { return std::min(a, b); })
      .Case("Equal", [](double a, double b) { return double(a == b); })
      .Case("Less", [](double a, double b) { return double(a < b); })
      .Case("LessOrEqual", [](double a, double b) { return double(a <= b); })
      .Case("GreaterOrEqual",
            [](double a, double b) { return double(a >= b); })
      .Case("Xor", [](double a, double b) { return double(!a != !b); })
      .Case("Greater", [](double a, double b) { return double(a > b); })
      .Case("And", [](double a, double b) { return double(a && b); })
      .Case("Or", [](double a, double b) { return double(a || b); })
      .Default(nullptr);
}

FailureOr<HostTensor> ONNXImporter::foldUnary(ArrayRef<HostTensor> in) {
  double (*fn)(double) = unaryFoldFn(opType());
  HostTensor r = in[0];
  for (double &v : r.data)
    v = r.round(fn(v));
  return r;
}

/// A binary op, or Max/Min of any number of inputs (folded left to right);
/// comparisons and logic give booleans.
FailureOr<HostTensor> ONNXImporter::foldBinary(ArrayRef<HostTensor> in) {
  llvm::StringRef op = opType();
  double (*fn)(double, double) = binaryFoldFn(op);
  bool compare = llvm::StringSwitch<bool>(op)
                     .Cases({"Equal", "Less", "LessOrEqual", "Greater",
                             "GreaterOrEqual", "And", "Or", "Xor"},
                            true)
                     .Default(false);
  auto err = [&] { return nodeError(); };
  HostTensor acc = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    const HostTensor &b = in[k];
    std::optional<SmallVector<int64_t>> shape =
        broadcastShapes(acc.shape, b.shape);
    if (!shape) {
      nodeError() << "operand shapes are not broadcastable: "
                  << formatShape(acc.shape) << " and " << formatShape(b.shape);
      return failure();
    }
    if (!compare && acc.type != b.type && op != "Pow") {
      nodeError() << "operand element types differ";
      return failure();
    }
    FailureOr<HostTensor> r = zb::frontend::elementwiseHost(
        {&acc, &b}, *shape, compare ? builder.getI1Type() : acc.type,
        [&](ArrayRef<double> x) { return fn(x[0], x[1]); }, err);
    if (failed(r))
      return failure();
    acc = std::move(*r);
  }
  return acc;
}

FailureOr<HostTensor> ONNXImporter::foldWhere(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(in[0].shape, in[1].shape);
  if (shape)
    shape = broadcastShapes(*shape, in[2].shape);
  if (!shape || in[1].type != in[2].type) {
    nodeError() << "operands do not broadcast or differ in element type";
    return failure();
  }
  return zb::frontend::elementwiseHost(
      {&in[0], &in[1], &in[2]}, *shape, in[1].type,
      [](ArrayRef<double> x) { return x[0] != 0.0 ? x[1] : x[2]; }, err);
}

FailureOr<HostTensor> ONNXImporter::foldCast(ArrayRef<HostTensor> in) {
  FailureOr<int64_t> to = intAttr("to", 0);
  if (failed(to))
    return failure();
  Type t = convertElementType(int32_t(*to));
  if (!t) {
    nodeError() << "unsupported target type " << elementTypeName(int32_t(*to));
    return failure();
  }
  HostTensor r = in[0];
  r.type = t;
  for (double &v : r.data)
    v = r.round(v);
  return r;
}

FailureOr<HostTensor> ONNXImporter::foldCastLike(ArrayRef<HostTensor> in) {
  HostTensor r = in[0];
  r.type = in[1].type;
  for (double &v : r.data)
    v = r.round(v);
  return r;
}

//===----------------------------------------------------------------------===//
// Shape folds
//===----------------------------------------------------------------------===//

FailureOr<HostTensor> ONNXImporter::foldGather(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(axisAttr))
    return failure();
  const HostTensor &data = in[0], &idx = in[1];
  int64_t rank = data.shape.size();
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, rank, "axis");
  if (failed(axis) || idx.isFloat()) {
    if (succeeded(axis))
      nodeError() << "indices must be integers";
    return failure();
  }
  return zb::frontend::gatherHost(data, idx, *axis, err);
}

FailureOr<HostTensor> ONNXImporter::foldReshape(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  FailureOr<SmallVector<int64_t>> shape = reshapeTarget(in[0].shape);
  if (failed(shape))
    return failure();
  return zb::frontend::reshapeHost(in[0], *shape, err);
}

FailureOr<HostTensor> ONNXImporter::foldConcat(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(axisAttr))
    return failure();
  int64_t rank = in[0].shape.size();
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, rank, "axis");
  if (failed(axis))
    return failure();
  return zb::frontend::concatHost(in, *axis, err);
}

FailureOr<HostTensor> ONNXImporter::foldRange(ArrayRef<HostTensor> in) {
  if (in[0].data.size() != 1 || in[1].data.size() != 1 ||
      in[2].data.size() != 1) {
    nodeError() << "start, limit and delta must be scalars";
    return failure();
  }
  double start = in[0].data[0], limit = in[1].data[0], delta = in[2].data[0];
  double count = std::ceil((limit - start) / delta);
  if (delta == 0.0 || !std::isfinite(count) ||
      count > double(kMaxFoldElements)) {
    nodeError() << "invalid or too long range (" << start << ", " << limit
                << ", " << delta << ")";
    return failure();
  }
  int64_t n = std::max<int64_t>(int64_t(std::ceil((limit - start) / delta)), 0);
  if (n > kMaxFoldElements) {
    nodeError() << "too many elements";
    return failure();
  }
  HostTensor r;
  r.type = in[0].type;
  r.shape = {n};
  for (int64_t i = 0; i < n; ++i)
    r.data.push_back(r.round(start + double(i) * delta));
  return r;
}

FailureOr<HostTensor> ONNXImporter::foldTile(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  SmallVector<int64_t> wide, dims, shape;
  if (failed(tileShapes(in[0].shape, toInts(in[1]), wide, dims, shape)))
    return failure();
  if (zb::frontend::numElements(shape) > kMaxFoldElements) {
    nodeError() << "folding a tensor of " << zb::frontend::numElements(shape)
                << " elements is not supported";
    return failure();
  }
  FailureOr<HostTensor> t = broadcastInDimHost(in[0], wide, dims, err);
  if (failed(t))
    return failure();
  return reshapeHost(*t, shape, err);
}

FailureOr<HostTensor> ONNXImporter::foldExpand(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  SmallVector<int64_t> target = toInts(in[1]);
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(in[0].shape, target);
  if (!shape) {
    nodeError() << "cannot expand " << formatShape(in[0].shape) << " to "
                << formatShape(target);
    return failure();
  }
  int64_t n = 1;
  for (int64_t d : *shape) {
    if (d < 0 || (d && n > kMaxFoldElements / d)) {
      nodeError() << "the folded result " << formatShape(*shape)
                  << " is too large";
      return failure();
    }
    n *= d;
  }
  return broadcastHost(in[0], *shape, err);
}

FailureOr<HostTensor>
ONNXImporter::foldConstantOfShape(ArrayRef<HostTensor> in) {
  HostTensor r;
  r.shape = toInts(in[0]);
  r.type = builder.getF32Type();
  double value = 0.0;
  FailureOr<std::optional<DenseElementsAttr>> v = tensorAttr("value");
  if (failed(v))
    return failure();
  if (*v) {
    HostTensor h = HostTensor::fromAttr(**v);
    if (h.data.size() != 1) {
      nodeError() << "value must have one element";
      return failure();
    }
    r.type = h.type;
    value = h.data[0];
  }
  int64_t n = 1;
  for (int64_t d : r.shape) {
    if (d < 0 || d > kMaxFoldElements || (d && n > kMaxFoldElements / d)) {
      nodeError() << "invalid or too large shape " << formatShape(r.shape);
      return failure();
    }
    n *= d;
  }
  r.data.assign(n, value);
  return r;
}

FailureOr<HostTensor> ONNXImporter::foldSlice(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  FailureOr<SliceSpec> spec = sliceSpec(in[0].shape);
  if (failed(spec))
    return failure();
  FailureOr<HostTensor> r = zb::frontend::sliceHost(
      in[0], spec->start, spec->step, spec->shape, err);
  if (failed(r) || spec->reversed.empty())
    return r;
  return zb::frontend::reverseHost(*r, spec->reversed, err);
}

FailureOr<HostTensor> ONNXImporter::foldTrilu(ArrayRef<HostTensor> in) {
  FailureOr<int64_t> upper = intAttr("upper", 1);
  if (failed(upper))
    return failure();
  int64_t k = 0;
  if (in.size() > 1 && in[1].type)
    k = toInts(in[1]).front();
  HostTensor r = in[0];
  if (r.shape.size() < 2) {
    nodeError() << "input must have rank >= 2";
    return failure();
  }
  int64_t rows = r.shape[r.shape.size() - 2], cols = r.shape.back();
  for (int64_t i = 0, n = r.numElements(); i < n; ++i) {
    int64_t c = i % cols, row = (i / cols) % rows;
    bool keep = *upper ? c - row >= k : c - row <= k;
    if (!keep)
      r.data[i] = 0.0;
  }
  return r;
}

FailureOr<HostTensor> ONNXImporter::foldTranspose(ArrayRef<HostTensor> in) {
  auto err = [&] { return nodeError(); };
  FailureOr<SmallVector<int64_t>> perm = permutation(in[0].shape.size());
  if (failed(perm))
    return failure();
  return zb::frontend::transposeHost(in[0], *perm, err);
}

/// IsNaN, IsInf (detect_positive / detect_negative) -> booleans.
FailureOr<HostTensor> ONNXImporter::foldClass(ArrayRef<HostTensor> in) {
  FailureOr<int64_t> pos = intAttr("detect_positive", 1),
                     neg = intAttr("detect_negative", 1);
  if (failed(pos) || failed(neg))
    return failure();
  bool nan = opType() == "IsNaN";
  HostTensor r = in[0];
  r.type = builder.getI1Type();
  for (double &v : r.data)
    v = nan ? double(std::isnan(v))
            : double(std::isinf(v) && (v > 0 ? *pos : *neg));
  return r;
}
