//===- ConversionUtils.h - pieces shared by the zb conversions --*- C++ -*-===//
//
// Internal to lib/Conversion: the pattern template that both
// convert-zb-to-linalg and convert-zb-to-runtime build their patterns from,
// the static reshapes both need, and how both apply their patterns.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_CONVERSION_CONVERSIONUTILS_H
#define ZB_LIB_CONVERSION_CONVERSIONUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"

#include <type_traits>

namespace zb {
namespace conversion {

template <typename T> struct IsFailureOr : std::false_type {};
template <typename T>
struct IsFailureOr<mlir::FailureOr<T>> : std::true_type {};

/// The conversion pattern of one op kind, made of a function:
/// `Lower(rewriter, op, adaptor)` builds the replacement of `op` before it
/// from the converted operands (`adaptor`) and returns the replacement
/// values: a Value for a one-result op, a range for several (an empty one
/// for none). A FailureOr of those means the op may not match (or its
/// conversion fails after an error on the op): the pattern then fails.
template <typename SourceOp, auto Lower>
class FunctionPattern final : public mlir::OpConversionPattern<SourceOp> {
public:
  using mlir::OpConversionPattern<SourceOp>::OpConversionPattern;

  mlir::LogicalResult
  matchAndRewrite(SourceOp op, typename SourceOp::Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    auto replacement = Lower(rewriter, op, adaptor);
    if constexpr (IsFailureOr<decltype(replacement)>::value) {
      if (mlir::failed(replacement))
        return mlir::failure();
      rewriter.replaceOp(op, *replacement);
    } else {
      rewriter.replaceOp(op, replacement);
    }
    return mlir::success();
  }
};

/// `t` (a static ranked tensor) as a 1-D tensor of its element count:
/// tensor.collapse_shape (rank >= 2), tensor.expand_shape (rank 0), itself
/// (rank 1).
mlir::Value flatten(mlir::OpBuilder &b, mlir::Location loc, mlir::Value t);

/// Inverse of flatten: the 1-D tensor `flat` reshaped to `type` (same
/// element count).
mlir::Value unflatten(mlir::OpBuilder &b, mlir::Location loc, mlir::Value flat,
                      mlir::RankedTensorType type);

/// A static reshape of `input` to `type` through a 1-D tensor.
mlir::Value reshapeThroughFlat(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value input, mlir::RankedTensorType type);

/// A rank >= 3 tensor with its leading (batch) dims collapsed into one:
/// [B1, ..., Bk, M, N] -> [B1 * ... * Bk, M, N]; a rank-3 tensor unchanged.
mlir::Value collapseBatchDims(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value t);

/// Inverse of collapseBatchDims: the rank-3 tensor `t` expanded to `type`.
mlir::Value expandBatchDims(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value t, mlir::RankedTensorType type);

/// Applies the patterns `populatePatterns` adds to `root` as a partial
/// conversion to the target `configureLegality` sets up, without folding
/// (zb ops have folders; the conversions rewrite every op as written, so
/// their output does not depend on what folds).
mlir::LogicalResult applyZBConversion(
    mlir::Operation *root, void (*configureLegality)(mlir::ConversionTarget &),
    void (*populatePatterns)(mlir::RewritePatternSet &, mlir::PatternBenefit));

/// A pass that is one partial conversion (applyZBConversion with
/// `ConfigureLegality` and `PopulatePatterns`). `PassBase` is the tablegen'd
/// impl::<Pass>Base and `DerivedT` the pass, which may hide
/// `afterConversion` to check the converted IR.
template <typename DerivedT, template <typename> class PassBase,
          auto ConfigureLegality, auto PopulatePatterns>
class ConversionPass : public PassBase<DerivedT> {
public:
  void runOnOperation() override {
    mlir::Operation *root = this->getOperation();
    if (mlir::failed(
            applyZBConversion(root, ConfigureLegality, PopulatePatterns)) ||
        mlir::failed(DerivedT::afterConversion(root)))
      this->signalPassFailure();
  }
  static mlir::LogicalResult afterConversion(mlir::Operation *) {
    return mlir::success();
  }
};

} // namespace conversion
} // namespace zb

#endif // ZB_LIB_CONVERSION_CONVERSIONUTILS_H
