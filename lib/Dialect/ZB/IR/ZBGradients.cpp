//===- ZBGradients.cpp - zb gradient rules (GradientOpInterface) ----------===//
//
// The reverse-mode gradient rules of the zb ops, written with ZBBuilder so
// that each reads like its formula. Each operand's gradient is built
// separately (GradientOpInterface::buildOperandGradient), which is what lets
// zb-split-backward separate B (activation gradients) from W (parameter
// gradients), Zero Bubble paper Section 2. A rule returns a value of the
// operand's type, or a null Value for an operand that is not differentiable
// (integer indices and targets, boolean conditions).
//
// The verifiers and folders are in ZBOps.cpp, the builder in ZBBuilder.cpp.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBAttention.h"
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "ZBOpsUtils.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace zb;
using zb::detail::tensorType;

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

Value AddOp::buildOperandGradient(OpBuilder &, unsigned, Value g) { return g; }

Value SubOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i == 0)
    return g;
  return ZBBuilder(b, getLoc()).neg(g);
}

Value MulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  Value other = i == 0 ? getRhs() : getLhs();
  return ZBBuilder(b, getLoc()).mul(g, other);
}

Value DivOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  if (i == 0) // d/dx (x / y) = 1 / y
    return e.div(g, getRhs());
  // d/dy (x / y) = -(x / y) / y = -result / y
  return e.neg(e.div(e.mul(g, getResult()), getRhs()));
}

Value NegOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc()).neg(g);
}

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
  Value share = e.select(
      e.compare("gt", self, other), e.splat(g, 1.0),
      e.select(e.compare("eq", self, other), e.splat(g, 0.5), e.splat(g, 0.0)));
  return e.mul(g, share);
}

Value CastOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  Type src = tensorType(getOperand()).getElementType();
  if (!llvm::isa<FloatType>(src) ||
      !llvm::isa<FloatType>(getType().getElementType()))
    return Value(); // integers are not differentiable
  return ZBBuilder(b, getLoc()).cast(g, src);
}

Value CompareOp::buildOperandGradient(OpBuilder &, unsigned, Value) {
  return Value(); // piecewise constant: no gradient flows
}

Value SelectOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i == 0)
    return Value(); // the condition
  ZBBuilder e(b, getLoc());
  Value zero = e.splat(g, 0.0);
  if (i == 1)
    return e.select(getCond(), g, zero);
  return e.select(getCond(), zero, g);
}

//===----------------------------------------------------------------------===//
// Elementwise functions and activations
//===----------------------------------------------------------------------===//

Value ExpOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc()).mul(g, getResult());
}

Value LogOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc()).div(g, getOperand());
}

Value TanhOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // 1 - y^2
  Value one = e.splat(g, 1.0);
  Value sq = e.mul(getResult(), getResult());
  return e.mul(g, e.sub(one, sq));
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

Value ReluOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // g where x > 0, else 0
  Value zero = e.splat(g, 0.0);
  return e.select(e.compare("gt", getOperand(), zero), g, zero);
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

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

Value MatmulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  Value A = getLhs(), B = getRhs();
  if (i == 0) {
    // d op(A) = g * op(B)^T; dA = ta ? (d op(A))^T = op(B) * g^T : d op(A).
    if (!ta)
      return e.matmul(g, B, false, !tb);
    return e.matmul(B, g, tb, true);
  }
  // d op(B) = op(A)^T * g; dB = tb ? g^T * op(A) : d op(B).
  if (!tb)
    return e.matmul(A, g, !ta, false);
  return e.matmul(g, A, true, ta);
}

Value BatchMatmulOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc()); // MatmulOp's rule per batch entry
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  Value A = getLhs(), B = getRhs();
  if (i == 0)
    return ta ? e.batchMatmul(B, g, tb, true) : e.batchMatmul(g, B, false, !tb);
  return tb ? e.batchMatmul(g, A, true, ta) : e.batchMatmul(A, g, !ta, false);
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

Value BroadcastInDimOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  RankedTensorType in = tensorType(getOperand());
  RankedTensorType out = getType();
  // Sum over every result dimension that was created or expanded.
  SmallVector<int64_t> axes;
  ArrayRef<int64_t> dims = getDims();
  for (int64_t d = 0; d < out.getRank(); ++d) {
    auto *it = llvm::find(dims, d);
    if (it == dims.end() ||
        (in.getDimSize(it - dims.begin()) == 1 && out.getDimSize(d) != 1))
      axes.push_back(d);
  }
  ZBBuilder e(b, getLoc());
  return e.reshape(e.reduceSum(g, axes), in.getShape());
}

Value ReshapeOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ReshapeOp::create(b, getLoc(), getOperand().getType(), g);
}

Value TransposeOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return ZBBuilder(b, getLoc()).transpose(g, inverse);
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

Value ConcatOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  // The slice of `g` along the axis that input `i` fills.
  TypeRange pieces = getInputs().getTypes();
  int64_t axis = getAxis(), offset = 0;
  for (unsigned k = 0; k < i; ++k)
    offset += llvm::cast<RankedTensorType>(pieces[k]).getDimSize(axis);
  auto t = tensorType(g);
  SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()),
      strides(t.getRank(), 1);
  start[axis] = offset;
  limit[axis] =
      offset + llvm::cast<RankedTensorType>(pieces[i]).getDimSize(axis);
  return ZBBuilder(b, getLoc()).slice(g, start, limit, strides);
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
// Reductions
//===----------------------------------------------------------------------===//

Value ReduceSumOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc())
      .unreduce(g, tensorType(getOperand()), getAxes());
}

Value ReduceMeanOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  RankedTensorType in = tensorType(getOperand());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= in.getDimSize(a);
  ZBBuilder e(b, getLoc());
  // An explicit multiply (not e.scale) also when count == 1.
  Value scaled = e.mul(g, e.splat(g, 1.0 / static_cast<double>(count)));
  return e.unreduce(scaled, in, getAxes());
}

Value ReduceMaxOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc());
  RankedTensorType in = tensorType(getOperand());
  ArrayRef<int64_t> axes = getAxes();
  // Share g equally among the elements equal to the maximum.
  Value isMax =
      e.compare("eq", getOperand(), e.unreduce(getResult(), in, axes));
  Value count = e.reduceSum(e.cast(isMax, in.getElementType()), axes);
  Value share = e.unreduce(e.div(g, count), in, axes);
  return e.select(isMax, share, e.splat(in, 0.0));
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

Value GatherOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i != 0)
    return Value(); // indices are not differentiable
  return ZBBuilder(b, getLoc())
      .scatterAdd(g, getIndices(), tensorType(getTable()));
}

Value ScatterAddOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  if (i != 0)
    return Value(); // indices are not differentiable
  return ZBBuilder(b, getLoc()).gather(g, getIndices());
}

//===----------------------------------------------------------------------===//
// Composite ops
//===----------------------------------------------------------------------===//

Value SoftmaxOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  ZBBuilder e(b, getLoc()); // dx = y * (g - sum(g * y, axis))
  Value y = getResult();
  int64_t axis = getAxis();
  Value dot = e.unreduce(e.reduceSum(e.mul(g, y), {axis}), getType(), {axis});
  return e.mul(y, e.sub(g, dot));
}

/// Axes of `t` but the last one.
static SmallVector<int64_t> leadingAxes(RankedTensorType t) {
  return llvm::to_vector(llvm::seq<int64_t>(0, t.getRank() - 1));
}

/// rsqrt(meanSquare + epsilon), broadcast back over the last axis of `t`
/// (the normalization factor of layer_norm and rms_norm).
static Value inverseRms(ZBBuilder &e, Value meanSquare, double epsilon,
                        RankedTensorType t) {
  int64_t last = t.getRank() - 1;
  Value rstd = e.rsqrt(e.add(meanSquare, e.splat(meanSquare, epsilon)));
  return e.unreduce(rstd, t, {last});
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
  Value rstdB = inverseRms(e, e.reduceMean(e.mul(xc, xc), {last}),
                           getEpsilon().convertToDouble(), t);
  Value xhat = e.mul(xc, rstdB);
  if (i == 1) // d weight = sum over the leading dims of g * x_hat
    return e.reduceSum(e.mul(g, xhat), lead);
  // dx = rstd * (gw - mean(gw) - x_hat * mean(gw * x_hat)), gw = g * weight.
  Value gw = e.mul(g, e.broadcast(getWeight(), t, {last}));
  Value meanGw = e.unreduce(e.reduceMean(gw, {last}), t, {last});
  Value meanGwX = e.unreduce(e.reduceMean(e.mul(gw, xhat), {last}), t, {last});
  return e.mul(rstdB, e.sub(e.sub(gw, meanGw), e.mul(xhat, meanGwX)));
}

Value RmsNormOp::buildOperandGradient(OpBuilder &b, unsigned i, Value g) {
  ZBBuilder e(b, getLoc());
  RankedTensorType t = getType();
  int64_t last = t.getRank() - 1;
  Value x = getInput();
  Value rstdB = inverseRms(e, e.reduceMean(e.mul(x, x), {last}),
                           getEpsilon().convertToDouble(), t);
  if (i == 1) // d weight = sum over the leading dims of g * x * rstd
    return e.reduceSum(e.mul(g, e.mul(x, rstdB)), leadingAxes(t));
  // dx = rstd * (gw - x * rstd^2 * mean(gw * x)), gw = g * weight.
  Value gw = e.mul(g, e.broadcast(getWeight(), t, {last}));
  Value meanGwX = e.unreduce(e.reduceMean(e.mul(gw, x), {last}), t, {last});
  Value corr = e.mul(x, e.mul(e.mul(rstdB, rstdB), meanGwX));
  return e.mul(rstdB, e.sub(gw, corr));
}

Value CrossEntropyOp::buildOperandGradient(OpBuilder &b, unsigned i,
                                           ValueRange resultGrads) {
  if (i != 0)
    return Value(); // targets are not differentiable
  ZBBuilder e(b, getLoc());
  RankedTensorType logitsType = tensorType(getLogits());
  // Computed in the result's type (float32 for bfloat16 logits), rounded
  // to the logits' type at the end.
  Type compute = getResult().getType().getElementType();
  RankedTensorType t = logitsType.clone(compute);
  int64_t last = t.getRank() - 1;
  int64_t count = t.getNumElements() / t.getDimSize(last);
  Value x = getLogits();
  if (logitsType.getElementType() != compute)
    x = e.cast(x, compute);
  // softmax(logits): from the kept lse in one elementwise pass when the op
  // has it (zb-fuse-cross-entropy), else recomputed.
  Value p = getLse() ? e.exp(e.sub(x, e.unreduce(getLse(), t, {last})))
                     : e.softmax(x, last);
  Value g = resultGrads[0];
  Value gLse = resultGrads.size() > 1 ? resultGrads[1] : Value();
  Value d;
  if (g) {
    // (softmax(logits) - one_hot(targets)) * g / count, and with an
    // ignore_index (softmax - one_hot) * valid * g / count(valid).
    Value oh = e.oneHot(getTargets(), t.getDimSize(last), compute);
    if (std::optional<int64_t> ignore = getIgnoreIndex()) {
      Value valid = e.notEqualMask(getTargets(), *ignore, compute);
      auto dims = llvm::to_vector(llvm::seq<int64_t>(0, last));
      Value gs = e.broadcast(e.div(g, e.reduceSum(valid, dims)), t, {});
      d = e.mul(e.mul(e.sub(p, oh), e.unreduce(valid, t, {last})), gs);
    } else {
      Value gs =
          e.broadcast(e.scale(g, 1.0 / static_cast<double>(count)), t, {});
      d = e.mul(e.sub(p, oh), gs);
    }
  }
  if (gLse) { // d lse / d logits = softmax(logits)
    Value dl = e.mul(p, e.unreduce(gLse, t, {last}));
    d = d ? e.add(d, dl) : dl;
  }
  if (!d)
    return Value();
  if (logitsType.getElementType() != compute)
    d = e.cast(d, logitsType.getElementType());
  return d;
}

Value CausalMaskOp::buildOperandGradient(OpBuilder &b, unsigned, Value g) {
  return ZBBuilder(b, getLoc()).causalMask(g, 0.0);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Operand i of zb.attention: 0 query, 1 key, 2 value through one
/// zb.attention_grad (built for the first of them and found again, by its
/// operands, for the others: the three gradients come from one op), 3 the
/// mask (a mask computed from parameters: its gradient is the scores'
/// gradient summed to its shape, built from the primitive ops).
Value AttentionOp::buildOperandGradient(OpBuilder &b, unsigned i,
                                        ValueRange resultGrads) {
  ZBBuilder e(b, getLoc());
  Value dResult = resultGrads[0];
  Value dLse = resultGrads[1];
  if (!dResult) // only the lse reaches the loss
    dResult = e.splat(getResult().getType(), 0.0);
  AttentionSpec spec{getQuery(), getKey(), getValue(), getMask(),
                     getScale().convertToDouble(), getCausal()};
  if (getMask() && i == 3) {
    AttentionGradients g =
        buildAttentionBackward(e, spec, getResult(), getLse(), dResult, dLse);
    return reduceToMask(e, g.scores, tensorType(getMask()));
  }
  if (i > 2)
    return Value();
  AttentionGradOp grad;
  Block *block = b.getInsertionBlock();
  for (Operation *user : dResult.getUsers()) {
    auto g = llvm::dyn_cast<AttentionGradOp>(user);
    if (!g || g->getBlock() != block || g.getResultGrad() != dResult ||
        g.getQuery() != getQuery() || g.getKey() != getKey() ||
        g.getValue() != getValue() || g.getResult() != getResult() ||
        g.getLse() != getLse() || g.getMask() != getMask() ||
        g.getLseGrad() != dLse || g.getScale() != getScale() ||
        g.getCausal() != getCausal())
      continue;
    if (b.getInsertionPoint() != block->end() &&
        !g->isBeforeInBlock(&*b.getInsertionPoint()))
      continue;
    grad = g;
    break;
  }
  if (!grad)
    grad = AttentionGradOp::create(
        b, getLoc(), getQuery().getType(), getKey().getType(),
        getValue().getType(), getQuery(), getKey(), getValue(), getResult(),
        getLse(), dResult, getMask(), dLse, getScaleAttr(), getCausalAttr());
  return grad->getResult(i);
}
