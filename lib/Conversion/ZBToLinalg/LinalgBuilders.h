//===- LinalgBuilders.h - builders of convert-zb-to-linalg ------*- C++ -*-===//
//
// Internal to lib/Conversion/ZBToLinalg: the linalg.generic, fill and
// constant builders the patterns share, and the pattern sets of the other
// files of this directory. Tensors are statically shaped.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_CONVERSION_ZBTOLINALG_LINALGBUILDERS_H
#define ZB_LIB_CONVERSION_ZBTOLINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace zb {
namespace linalg_lowering {

/// The scalar body of a linalg.generic: the block arguments (one element per
/// input, then the output's) -> the value to yield.
using BodyFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                              mlir::ValueRange)>;

/// linalg.generic of one result of type `resultTy` over `inputs` with the
/// given maps and iterators, writing into `init`.
mlir::Value buildGeneric(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType resultTy,
                         mlir::ValueRange inputs,
                         llvm::ArrayRef<mlir::AffineMap> inputMaps,
                         mlir::AffineMap outputMap,
                         llvm::ArrayRef<mlir::utils::IteratorType> iterators,
                         mlir::Value init, BodyFn body);

/// tensor.empty of type `t`.
mlir::Value emptyLike(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::RankedTensorType t);

/// Elementwise linalg.generic: identity maps, parallel iterators, into
/// tensor.empty.
mlir::Value elementwise(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType resultTy,
                        mlir::ValueRange inputs, BodyFn body);

/// arith.constant `v` of the float type `elem`.
mlir::Value floatConst(mlir::OpBuilder &b, mlir::Location loc, mlir::Type elem,
                       double v);

/// A tensor of type `t` filled with `value` (linalg.fill of tensor.empty).
mlir::Value filled(mlir::OpBuilder &b, mlir::Location loc,
                   mlir::RankedTensorType t, mlir::Value value);

/// Reduction over `axes` of `input` into a tensor of type `resultTy`,
/// starting from `initValue` and combining with `combine(element, acc)`.
mlir::Value reduceWith(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value input, mlir::RankedTensorType resultTy,
                       llvm::ArrayRef<int64_t> axes, mlir::Value initValue,
                       BodyFn combine);

/// arith.index_cast of an integer `v` to index.
mlir::Value toIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// The elementwise patterns (Elementwise.cpp).
void populateElementwisePatterns(mlir::RewritePatternSet &patterns,
                                 mlir::PatternBenefit benefit);

} // namespace linalg_lowering
} // namespace zb

#endif // ZB_LIB_CONVERSION_ZBTOLINALG_LINALGBUILDERS_H
