//===- ReductionOps.cpp - ONNX reductions, softmax, norms, loss --------===//
//
// Reductions over axes: ReduceMean/ReduceSum, Softmax, LayerNormalization
// and SoftmaxCrossEntropyLoss.
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"

using namespace mlir;
using namespace zb::frontend::onnx_import;

/// ReduceMean / ReduceSum. Axes come from the `axes` attribute (ReduceMean
/// before opset 18, ReduceSum before 13) or the constant second input.
template <typename OpTy> FailureOr<NodeResults> ONNXImporter::reduce() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<int64_t> keepDims = intAttr("keepdims", 1);
  FailureOr<int64_t> noopWithEmptyAxes = intAttr("noop_with_empty_axes", 0);
  if (failed(x) || failed(keepDims) || failed(noopWithEmptyAxes))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();

  SmallVector<int64_t> axes;
  if (hasInput(1)) {
    FailureOr<DenseElementsAttr> c = constantInput(1);
    if (failed(c))
      return failure();
    if (!c->getElementType().isSignlessInteger() ||
        c->getType().getRank() > 1) {
      nodeError() << "axes must be a 1-D integer tensor";
      return failure();
    }
    for (const APInt &v : c->getValues<APInt>())
      axes.push_back(v.getSExtValue());
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> attr = intsAttr("axes");
    if (failed(attr))
      return failure();
    if (*attr)
      axes = **attr;
  }
  if (axes.empty()) {
    if (*noopWithEmptyAxes)
      return result(*x);
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      nodeError() << "axis " << a << " is out of range for " << type;
      return failure();
    }
    reduced[a < 0 ? a + rank : a] = true;
  }
  SmallVector<int64_t> sortedAxes, resultShape, keepShape;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      sortedAxes.push_back(i);
      keepShape.push_back(1);
    } else {
      resultShape.push_back(type.getDimSize(i));
      keepShape.push_back(type.getDimSize(i));
    }
  }
  if (sortedAxes.empty()) // reducing a rank-0 tensor
    return result(*x);
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());
  Value y = OpTy::create(builder, loc, resultType, *x, sortedAxes);
  if (*keepDims)
    y = zb::ReshapeOp::create(
        builder, loc, RankedTensorType::get(keepShape, type.getElementType()),
        y);
  return result(y);
}

/// Softmax over `axis` (attribute, default `defaultAxis`); with
/// `lastAxisOnly` (the flattening semantics before opset 13) only the last
/// axis is supported.
FailureOr<NodeResults> ONNXImporter::softmaxOnAxis(int64_t defaultAxis,
                                                   bool lastAxisOnly) {
  FailureOr<Value> x = floatInput(0);
  FailureOr<int64_t> axis = axisOf(x, defaultAxis);
  if (failed(axis))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (*axis != type.getRank() - 1 && lastAxisOnly) {
    nodeError() << "Softmax before opset 13 (flattening semantics) is only "
                   "supported on the last axis";
    return failure();
  }
  return result(zb::SoftmaxOp::create(builder, loc, type, *x, uint64_t(*axis)));
}

FailureOr<NodeResults> ONNXImporter::softmaxBefore13() {
  return softmaxOnAxis(/*defaultAxis=*/1, /*lastAxisOnly=*/true);
}

FailureOr<NodeResults> ONNXImporter::softmax() {
  return softmaxOnAxis(/*defaultAxis=*/-1, /*lastAxisOnly=*/false);
}

/// LayerNormalization (opset 17) over the last axis -> zb.layer_norm.
FailureOr<NodeResults> ONNXImporter::layerNorm() {
  FailureOr<Value> x = floatInput(0), w = failure();
  FailureOr<int64_t> axisAttr = intAttr("axis", -1);
  FailureOr<float> eps = floatAttr("epsilon", 1e-5f);
  if (failed(x) || failed(w = floatInput(1)) || failed(axisAttr) || failed(eps))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t d = type.getShape().back();
  auto vecType = RankedTensorType::get({d}, type.getElementType());
  if (*axis != type.getRank() - 1 || w->getType() != vecType) {
    nodeError() << "only normalization over the last axis with a 1-D scale "
                   "is supported, got "
                << type << " and scale " << w->getType();
    return failure();
  }
  Value b;
  if (hasInput(2)) {
    FailureOr<Value> bias = floatInput(2);
    if (failed(bias))
      return failure();
    if (bias->getType() != vecType) {
      nodeError() << "bias must be " << vecType << ", got " << bias->getType();
      return failure();
    }
    b = *bias;
  } else {
    b = splatConstant(vecType, 0.0);
  }
  for (int i = 1; i < numOutputs(); ++i)
    if (hasOutput(i)) {
      nodeError() << "outputs Mean and InvStdDev are not supported";
      return failure();
    }
  return result(zb::LayerNormOp::create(builder, loc, type, *x, *w, b,
                                        builder.getF64FloatAttr(double(*eps))));
}

/// SoftmaxCrossEntropyLoss (mean reduction, no weights) -> zb.cross_entropy.
FailureOr<NodeResults> ONNXImporter::softmaxCrossEntropy() {
  FailureOr<Value> scores = floatInput(0), labels = failure();
  if (failed(scores) || failed(labels = tensorInput(1)))
    return failure();
  std::optional<std::string> reduction = stringAttr("reduction");
  if (reduction && *reduction != "mean") {
    nodeError() << "reduction '" << *reduction
                << "' is not supported (only 'mean')";
    return failure();
  }
  if (hasInput(2)) {
    nodeError() << "class weights are not supported";
    return failure();
  }
  if (hasOutput(1)) {
    nodeError() << "output log_prob is not supported";
    return failure();
  }
  auto st = cast<RankedTensorType>(scores->getType());
  auto lt = cast<RankedTensorType>(labels->getType());
  if (st.getRank() < 2 || lt.getRank() != st.getRank() - 1 ||
      !isa<IntegerType>(lt.getElementType()) ||
      lt.getDimSize(0) != st.getDimSize(0) ||
      !llvm::equal(lt.getShape().drop_front(), st.getShape().drop_front(2))) {
    nodeError() << "scores [N, C, d...] and integer labels [N, d...] expected, "
                   "got "
                << st << " and " << lt;
    return failure();
  }
  Value logits = *scores;
  if (st.getRank() > 2) { // move the class dimension last
    SmallVector<int64_t> perm = {0}, shape = {st.getDimSize(0)};
    for (int64_t d = 2; d < st.getRank(); ++d) {
      perm.push_back(d);
      shape.push_back(st.getDimSize(d));
    }
    perm.push_back(1);
    shape.push_back(st.getDimSize(1));
    logits = zb::TransposeOp::create(
        builder, loc, RankedTensorType::get(shape, st.getElementType()), logits,
        perm);
  }
  // ignore_index (torch writes its default -100): those positions count
  // neither in the sum nor in the mean, as in torch.
  auto ce = zb::CrossEntropyOp::create(
      builder, loc, RankedTensorType::get({}, st.getElementType()), logits,
      *labels);
  if (std::optional<int64_t> ii = uncheckedIntAttr("ignore_index"))
    ce.setIgnoreIndex(*ii);
  return result(ce.getResult());
}

void zb::frontend::onnx_import::populateReductionHandlers(
    OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"ReduceMean", 1, &I::reduce<zb::ReduceMeanOp>},
      {"ReduceSum", 1, &I::reduce<zb::ReduceSumOp>},
      {"Softmax", 1, &I::softmaxBefore13},
      {"Softmax", 13, &I::softmax},
      {"LayerNormalization", 1, &I::layerNorm},
      {"SoftmaxCrossEntropyLoss", 1, &I::softmaxCrossEntropy},
  };
  table.add(entries);
}
