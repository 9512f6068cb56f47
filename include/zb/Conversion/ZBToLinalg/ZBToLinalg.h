//===- ZBToLinalg.h - zb compute ops to linalg on tensors -------*- C++ -*-===//
//
// The patterns of convert-zb-to-linalg, for any pass that lowers zb compute
// ops on tensors: the CPU pass (lib/Conversion/ZBToLinalg) and a GPU path
// (which maps the resulting linalg ops to parallel loops and kernels) use the
// same patterns. They run before bufferization, work on statically shaped
// ranked tensors and need no type converter (tensor types are kept).
//
// What each op becomes (every result is a tensor of the op's result type):
//  - elementwise (add sub mul div pow max neg relu exp log tanh sqrt rsqrt
//    erf sigmoid silu gelu compare select cast causal_mask): one
//    linalg.generic with identity maps and parallel iterators over
//    tensor.empty; its body holds the scalar arith/math ops. rsqrt is
//    1 / sqrt(x) (libm has no rsqrt), sigmoid 1 / (1 + exp(-x)), silu
//    x / (1 + exp(-x)), gelu 0.5 x (1 + erf(x / sqrt 2)) or with "tanh"
//    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); causal_mask selects the
//    fill value where the key index exceeds the query index (linalg.index of
//    the last two dims);
//  - constant: arith.constant of the same dense attribute;
//  - broadcast_in_dim: linalg.generic whose input map drops the new dims and
//    maps broadcast size-1 dims to 0;
//  - reduce_sum / reduce_max: linalg.fill of 0 / -inf, then a linalg.generic
//    with reduction iterators over the reduced axes; reduce_mean: reduce_sum,
//    then an elementwise multiply by 1/count;
//  - reshape: tensor.collapse_shape to 1-D, then tensor.expand_shape;
//  - transpose: linalg.transpose; slice: tensor.extract_slice (strided);
//    pad: linalg.fill of 0 plus tensor.insert_slice (interior padding as
//    stride); concat: tensor.insert_slice per input; split: one
//    tensor.extract_slice per result;
//  - gather: linalg.generic over the result reading the table with
//    tensor.extract; one_hot: linalg.generic comparing each index with
//    linalg.index; scatter_add: an scf.for over the flattened indices, adding
//    each update row into the accumulated row (in index order, so repeated
//    indices sum deterministically);
//  - matmul: linalg.matmul on a zero-filled init (linalg.transpose first for
//    transpose_lhs/rhs); batch_matmul: the batch dims collapsed to one,
//    linalg.batch_matmul, expanded back;
//  - softmax, layer_norm, rms_norm, cross_entropy (composites): decomposed
//    into the simpler zb ops above (populateZBDecomposeCompositePatterns),
//    which the conversion driver then lowers with the patterns above.
// zb.send and zb.recv have no pattern here (convert-zb-to-runtime, or a GPU
// path's communication patterns, lower them).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_CONVERSION_ZBTOLINALG_ZBTOLINALG_H
#define ZB_CONVERSION_ZBTOLINALG_ZBTOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace mlir {
class ConversionTarget;
} // namespace mlir

namespace zb {

/// Adds the patterns that rewrite softmax, layer_norm, rms_norm and
/// cross_entropy into simpler zb ops (reductions, broadcasts, elementwise
/// ops), with the numerics of the ops' documentation (max-subtracted softmax
/// and log-sum-exp); the cross-entropy's target logits are read by index (a
/// linalg.generic over the targets with tensor.extract, 0 for a target
/// outside [0, C)), not as the sum of the logits times their one-hot.
void populateZBDecomposeCompositePatterns(mlir::RewritePatternSet &patterns,
                                          mlir::PatternBenefit benefit = 1);

/// Adds one conversion pattern per zb compute op (every zb op but zb.send and
/// zb.recv), see the file comment for what each becomes; includes
/// populateZBDecomposeCompositePatterns. Every pattern matches every op of
/// its kind that verifies (f32 matmuls included: on the CPU
/// convert-zb-to-runtime turns those into OpenBLAS calls first).
void populateZBToLinalgPatterns(mlir::RewritePatternSet &patterns,
                                mlir::PatternBenefit benefit = 1);

/// Marks linalg, tensor, arith, math and scf legal and every zb op but
/// zb.send / zb.recv illegal (those two are left for convert-zb-to-runtime).
void configureZBToLinalgConversionLegality(mlir::ConversionTarget &target);

} // namespace zb

#endif // ZB_CONVERSION_ZBTOLINALG_ZBTOLINALG_H
