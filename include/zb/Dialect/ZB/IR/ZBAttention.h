//===- ZBAttention.h - zb.attention in primitive zb ops ---------*- C++ -*-===//
//
// zb.attention and zb.attention_grad written with the primitive zb ops
// (batch_matmul, exp, reductions, casts). zb-decompose-attention lowers the
// two ops with these builders, and the gradient rule of zb.attention uses
// them for the gradient of a mask that depends on a parameter (which
// zb.attention_grad does not produce). The formulas are FlashAttention's
// (Dao 2023, Algorithms 1 and 2) computed whole rather than blockwise: S and
// the probabilities exist only inside the op, and the backward pass
// recomputes them from the saved log-sum-exp.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DIALECT_ZB_IR_ZBATTENTION_H
#define ZB_DIALECT_ZB_IR_ZBATTENTION_H

#include "zb/Dialect/ZB/IR/ZBBuilder.h"

namespace zb {

/// The operands and attributes of one attention (zb.attention's).
struct AttentionSpec {
  mlir::Value query; ///< [batch..., Tq, D]
  mlir::Value key;   ///< [batch..., Tk, D]
  mlir::Value value; ///< [batch..., Tk, Dv]
  mlir::Value mask;  ///< additive, broadcastable to the scores; may be null
  double scale = 1.0;
  bool causal = false;
};

/// S = scale * query key^T (+ mask broadcast) with keys after the query set
/// to -inf where `spec.causal`, as a [batch..., Tq, Tk] tensor of
/// `statElem` (the product runs in the query's type, then is cast).
mlir::Value buildAttentionScores(ZBBuilder &e, const AttentionSpec &spec,
                                 mlir::Type statElem);

/// zb.attention: {softmax(S) value in the query's type, logsumexp(S) in
/// `lseElem`}; the softmax is exp(S - max) / sum as zb.softmax decomposes.
std::pair<mlir::Value, mlir::Value>
buildAttentionForward(ZBBuilder &e, const AttentionSpec &spec,
                      mlir::Type lseElem);

/// The gradients of one attention (zb.attention_grad), and the gradient of
/// the scores S (before the mask is added, after the scale: the gradient of
/// an additive mask, before the reduction to its shape).
struct AttentionGradients {
  mlir::Value query, key, value, scores;
};

/// zb.attention_grad's formulas from the forward's `result` and `lse`, the
/// gradient `resultGrad` of the result and, when non-null, `lseGrad` of lse.
AttentionGradients buildAttentionBackward(ZBBuilder &e,
                                          const AttentionSpec &spec,
                                          mlir::Value result, mlir::Value lse,
                                          mlir::Value resultGrad,
                                          mlir::Value lseGrad);

/// The gradient of an additive mask of type `maskType` from the gradient of
/// the scores: summed over the dimensions the mask broadcasts.
mlir::Value reduceToMask(ZBBuilder &e, mlir::Value scoresGrad,
                         mlir::RankedTensorType maskType);

} // namespace zb

#endif // ZB_DIALECT_ZB_IR_ZBATTENTION_H
