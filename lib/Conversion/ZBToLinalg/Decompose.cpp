//===- Decompose.cpp - composite zb ops into simpler zb ops ---------------===//
//
// softmax, layer_norm, rms_norm and cross_entropy become reductions,
// broadcasts and elementwise zb ops (ZBBuilder), which the other patterns of
// convert-zb-to-linalg then lower. See
// include/zb/Conversion/ZBToLinalg/ZBToLinalg.h.
//
//===----------------------------------------------------------------------===//
#include "../ConversionUtils.h"
#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "zb/Conversion/ZBToLinalg/ZBToLinalg.h"
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

using namespace mlir;
using namespace zb;

namespace {

/// exp(x - max) / sum(exp(x - max)) along the axis.
Value decomposeSoftmax(OpBuilder &b, SoftmaxOp op, SoftmaxOp::Adaptor a) {
  ZBBuilder e(b, op.getLoc());
  Value x = a.getOperand();
  auto t = op.getType();
  int64_t axis = op.getAxis();
  Value m = e.unreduce(e.reduceMax(x, {axis}), t, {axis});
  Value ex = e.exp(e.sub(x, m));
  return e.div(ex, e.unreduce(e.reduceSum(ex, {axis}), t, {axis}));
}

/// (x - mean) * rsqrt(var + eps) * weight + bias over the last dim (biased
/// variance).
Value decomposeLayerNorm(OpBuilder &b, LayerNormOp op, LayerNormOp::Adaptor a) {
  ZBBuilder e(b, op.getLoc());
  auto t = op.getType();
  int64_t last = t.getRank() - 1;
  Value x = a.getInput();
  Value xc = e.sub(x, e.unreduce(e.reduceMean(x, {last}), t, {last}));
  Value var = e.reduceMean(e.mul(xc, xc), {last});
  Value rstd =
      e.rsqrt(e.add(var, e.splat(var, op.getEpsilon().convertToDouble())));
  Value xhat = e.mul(xc, e.unreduce(rstd, t, {last}));
  return e.add(e.mul(xhat, e.broadcast(a.getWeight(), t, {last})),
               e.broadcast(a.getBias(), t, {last}));
}

/// x * rsqrt(mean(x^2) + eps) * weight over the last dim.
Value decomposeRmsNorm(OpBuilder &b, RmsNormOp op, RmsNormOp::Adaptor a) {
  ZBBuilder e(b, op.getLoc());
  auto t = op.getType();
  int64_t last = t.getRank() - 1;
  Value x = a.getInput();
  Value ms = e.reduceMean(e.mul(x, x), {last});
  Value rstd =
      e.rsqrt(e.add(ms, e.splat(ms, op.getEpsilon().convertToDouble())));
  return e.mul(e.mul(x, e.unreduce(rstd, t, {last})),
               e.broadcast(a.getWeight(), t, {last}));
}

/// picked[i...] = logits[i..., targets[i...]] in `compute` (0 where the
/// target is outside [0, C): an ignore_index position), reading one logit
/// per row: a linalg.generic over the targets with a tensor.extract. The
/// sum of the logits times the one-hot of the targets is the same value
/// (x + 0 = x) but reads every logit once more: for GPT-2's 50257 classes a
/// third pass over the largest tensor of the step. Null for a dynamic C.
Value pickTargets(OpBuilder &b, Location loc, Value logits, Value targets,
                  Type compute) {
  auto xt = llvm::cast<RankedTensorType>(logits.getType());
  auto tt = llvm::cast<RankedTensorType>(targets.getType());
  int64_t c = xt.getDimSize(xt.getRank() - 1);
  if (ShapedType::isDynamic(c) || !tt.hasStaticShape())
    return Value();
  auto resultTy = RankedTensorType::get(tt.getShape(), compute);
  return linalg_lowering::elementwise(
      b, loc, resultTy, ValueRange{targets},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value idx = linalg_lowering::toIndex(nb, l, args[0]);
        Value inRange = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ult, idx,
            arith::ConstantIndexOp::create(nb, l, c));
        Value col = arith::SelectOp::create(
            nb, l, inRange, idx, arith::ConstantIndexOp::create(nb, l, 0));
        SmallVector<Value> coords;
        for (int64_t d = 0; d < tt.getRank(); ++d)
          coords.push_back(linalg::IndexOp::create(nb, l, d));
        coords.push_back(col);
        Value v = tensor::ExtractOp::create(nb, l, logits, coords);
        if (v.getType() != compute)
          v = arith::ExtFOp::create(nb, l, compute, v);
        return arith::SelectOp::create(
            nb, l, inRange, v, linalg_lowering::floatConst(nb, l, compute, 0.0));
      });
}

/// mean over the samples of logsumexp(logits) - logits[target], with the
/// max subtracted inside the log-sum-exp, computed in the result's type
/// (bfloat16 logits widen inside the fused reductions); the op's lse
/// result when it has one.
SmallVector<Value> decomposeCrossEntropy(OpBuilder &b, CrossEntropyOp op,
                                         CrossEntropyOp::Adaptor a) {
  ZBBuilder e(b, op.getLoc());
  Type compute = op.getResult().getType().getElementType();
  Value x = a.getLogits();
  if (llvm::cast<RankedTensorType>(x.getType()).getElementType() != compute)
    x = e.cast(x, compute);
  auto t = llvm::cast<RankedTensorType>(x.getType());
  int64_t last = t.getRank() - 1;
  Value m = e.reduceMax(x, {last});
  Value sumExp = e.reduceSum(e.exp(e.sub(x, e.unreduce(m, t, {last}))), {last});
  Value lse = e.add(e.log(sumExp), m);
  Value picked = pickTargets(b, op.getLoc(), a.getLogits(), a.getTargets(),
                             compute);
  if (!picked)
    picked =
        e.reduceSum(e.mul(x, e.oneHot(a.getTargets(), t.getDimSize(last),
                                      t.getElementType())),
                    {last});
  Value perSample = e.sub(lse, picked);
  auto samples = llvm::to_vector(llvm::seq<int64_t>(0, last));
  Value loss;
  if (std::optional<int64_t> ignore = op.getIgnoreIndex()) {
    // The mean over the positions whose target is not ignore_index.
    Value valid =
        e.notEqualMask(a.getTargets(), *ignore, t.getElementType());
    loss = e.div(e.reduceSum(e.mul(perSample, valid), samples),
                 e.reduceSum(valid, samples));
  } else {
    loss = e.reduceMean(perSample, samples);
  }
  if (op.getLse())
    return {loss, lse};
  return {loss};
}

} // namespace

void zb::populateZBDecomposeCompositePatterns(RewritePatternSet &patterns,
                                              PatternBenefit benefit) {
  patterns
      .add<conversion::FunctionPattern<SoftmaxOp, decomposeSoftmax>,
           conversion::FunctionPattern<LayerNormOp, decomposeLayerNorm>,
           conversion::FunctionPattern<RmsNormOp, decomposeRmsNorm>,
           conversion::FunctionPattern<CrossEntropyOp, decomposeCrossEntropy>>(
          patterns.getContext(), benefit);
}
