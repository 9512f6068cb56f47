//===- HeadViews.h - attention operands as views of token-major tensors ---===//
//
// Exporters write the heads of an attention as views of a token-major
// tensor: the projection's [B T, H D] (or [B, T, H D]) output reshaped to
// [B, T, H, D] and transposed to [B, H, T, D] (GPT-2's c_attn split into q,
// k and v first), and the result transposed and reshaped back. Run as
// written, each view is a copy. zb-split-backward (rebuild-attention-views)
// and zb-gpu-attention-calls recognise them so that the fused attention
// kernels read and write the token-major tensors themselves, as
// FlashAttention's kernels take [B, T, H, D] operands.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TRANSFORMS_HEADVIEWS_H
#define ZB_TRANSFORMS_HEADVIEWS_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace zb {

/// An attention operand [B, H, T, D] that is a view of a token-major tensor
/// X [..., W]: zb.transpose [0, 2, 1, 3] of a zb.reshape of X, or of a
/// zb.slice of X on its last axis (the other axes whole, unit strides) or
/// one result of a zb.split of X on its last axis. Element (b, h, t, d) is
/// X's element at row b T + t (X's leading dimensions collapsed into rows)
/// and column `offset` + h D + d. All shapes static.
struct HeadView {
  mlir::Value source;  ///< X
  int64_t offset = 0;  ///< the heads' first column in X's last dimension
  /// The view's ops in dataflow order: [slice or split,] reshape, transpose.
  llvm::SmallVector<mlir::Operation *, 3> ops;
};

/// The head view `operand` is, if it is one.
std::optional<HeadView> matchHeadView(mlir::Value operand);

/// The token-major tensor [..., H D] that the heads of `result` [B, H, T, D]
/// become through `user`, a zb.transpose [0, 2, 1, 3] of `result` whose only
/// use is a zb.reshape with a last dimension of H D (the reshape's result),
/// or null.
mlir::Value mergedHeadsThrough(mlir::Value result, mlir::Operation *user);

/// mergedHeadsThrough of the only use of `result` (null when it has
/// several).
mlir::Value matchMergedHeads(mlir::Value result);

} // namespace zb

#endif // ZB_TRANSFORMS_HEADVIEWS_H
