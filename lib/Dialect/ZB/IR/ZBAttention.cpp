//===- ZBAttention.cpp - zb.attention in primitive zb ops -----------------===//
//
// The builders of include/zb/Dialect/ZB/IR/ZBAttention.h.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBAttention.h"

#include "ZBOpsUtils.h"

#include <limits>

using namespace mlir;
using namespace zb;
using zb::detail::tensorType;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The axes 0..rank-1 (a broadcast that only widens size-1 dimensions).
SmallVector<int64_t> identityDims(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}
} // namespace

Value zb::buildAttentionScores(ZBBuilder &e, const AttentionSpec &spec,
                               Type statElem) {
  Value s = e.cast(e.batchMatmul(spec.query, spec.key, /*tx=*/false,
                                 /*ty=*/true),
                   statElem);
  s = e.scale(s, spec.scale);
  RankedTensorType st = tensorType(s);
  if (spec.mask)
    s = e.add(s, e.broadcast(e.cast(spec.mask, statElem), st,
                             identityDims(st.getRank())));
  if (spec.causal)
    s = e.causalMask(s, -kInf);
  return s;
}

std::pair<Value, Value> zb::buildAttentionForward(ZBBuilder &e,
                                                  const AttentionSpec &spec,
                                                  Type lseElem) {
  Value s = buildAttentionScores(e, spec, lseElem);
  RankedTensorType st = tensorType(s);
  int64_t last = st.getRank() - 1;
  Value m = e.reduceMax(s, {last});
  // A row whose every key is hidden (all -inf) gets max 0 and sum 1: its
  // probabilities are 0, its result 0 and its lse -inf (torch's
  // scaled_dot_product_attention guard, where(isnan(P), 0, P)). Other rows
  // compute exactly as zb.softmax's decomposition.
  Value hidden = e.compare("eq", m, e.splat(m, -kInf));
  m = e.select(hidden, e.splat(m, 0.0), m);
  Value ex = e.exp(e.sub(s, e.unreduce(m, st, {last})));
  Value l = e.reduceSum(ex, {last});
  Value p = e.div(ex, e.unreduce(e.select(hidden, e.splat(l, 1.0), l), st,
                                 {last}));
  Type elem = tensorType(spec.query).getElementType();
  Value result = e.batchMatmul(e.cast(p, elem), spec.value, false, false);
  Value lse = e.add(e.log(l), m);
  return {result, lse};
}

AttentionGradients zb::buildAttentionBackward(ZBBuilder &e,
                                              const AttentionSpec &spec,
                                              Value result, Value lse,
                                              Value resultGrad, Value lseGrad) {
  Type stat = tensorType(lse).getElementType();
  Type elem = tensorType(spec.query).getElementType();
  Value s = buildAttentionScores(e, spec, stat);
  RankedTensorType st = tensorType(s);
  int64_t last = st.getRank() - 1;
  // P = exp(S - lse): the probabilities, 0 where S is -inf (also in a
  // row of hidden keys, whose lse -inf is taken as 0).
  Value lseSafe = e.select(e.compare("eq", lse, e.splat(lse, -kInf)),
                           e.splat(lse, 0.0), lse);
  Value p = e.exp(e.sub(s, e.unreduce(lseSafe, st, {last})));
  Value pe = e.cast(p, elem);
  Value dv = e.batchMatmul(pe, resultGrad, /*tx=*/true, /*ty=*/false);
  Value dp = e.cast(e.batchMatmul(resultGrad, spec.value, false, true), stat);
  // Di = rowsum(dO * O) = rowsum(dP * P) (Dao 2023, Algorithm 2, line 19).
  Value di = e.reduceSum(e.mul(e.cast(resultGrad, stat), e.cast(result, stat)),
                         {last});
  if (lseGrad) // d lse / d S = P: dS = P * (dP - Di + d lse)
    di = e.sub(di, e.cast(lseGrad, stat));
  Value ds = e.mul(p, e.sub(dp, e.unreduce(di, st, {last})));
  Value dse = e.cast(e.scale(ds, spec.scale), elem);
  AttentionGradients g;
  g.query = e.batchMatmul(dse, spec.key, false, false);
  g.key = e.batchMatmul(dse, spec.query, /*tx=*/true, false);
  g.value = dv;
  g.scores = ds;
  return g;
}

Value zb::reduceToMask(ZBBuilder &e, Value scoresGrad,
                       RankedTensorType maskType) {
  RankedTensorType st = tensorType(scoresGrad);
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < st.getRank(); ++i)
    if (maskType.getDimSize(i) != st.getDimSize(i))
      axes.push_back(i);
  Value reduced = e.reduceSum(scoresGrad, axes);
  return e.cast(e.reshape(reduced, maskType.getShape()),
                maskType.getElementType());
}
