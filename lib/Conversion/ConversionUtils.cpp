//===- ConversionUtils.cpp - pieces shared by the zb conversions ----------===//
#include "ConversionUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace zb {
namespace conversion {

/// The reassociation that groups dims [0, rank) into one.
static ReassociationIndices allDims(int64_t rank) {
  ReassociationIndices all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  return all;
}

/// The reassociation [[0 .. rank-3], [rank-2], [rank-1]] between a rank
/// `rank` tensor and its batch-collapsed rank-3 form.
static SmallVector<ReassociationIndices> batchGroups(int64_t rank) {
  return {allDims(rank - 2), {rank - 2}, {rank - 1}};
}

Value flatten(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  auto flatTy =
      RankedTensorType::get({tt.getNumElements()}, tt.getElementType());
  if (tt.getRank() == 1)
    return t;
  if (tt.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatTy, t,
                                         ArrayRef<ReassociationIndices>{});
  return tensor::CollapseShapeOp::create(
      b, loc, flatTy, t, ArrayRef<ReassociationIndices>{allDims(tt.getRank())});
}

Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(
      b, loc, type, flat,
      ArrayRef<ReassociationIndices>{allDims(type.getRank())});
}

Value reshapeThroughFlat(OpBuilder &b, Location loc, Value input,
                         RankedTensorType type) {
  return unflatten(b, loc, flatten(b, loc, input), type);
}

Value collapseBatchDims(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  int64_t r = tt.getRank();
  if (r == 3)
    return t;
  int64_t batch = 1;
  for (int64_t d = 0; d < r - 2; ++d)
    batch *= tt.getDimSize(d);
  auto ty = RankedTensorType::get(
      {batch, tt.getDimSize(r - 2), tt.getDimSize(r - 1)}, tt.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, ty, t, batchGroups(r));
}

Value expandBatchDims(OpBuilder &b, Location loc, Value t,
                      RankedTensorType type) {
  int64_t r = type.getRank();
  if (r == 3)
    return t;
  return tensor::ExpandShapeOp::create(b, loc, type, t, batchGroups(r));
}

LogicalResult applyZBConversion(Operation *root, const ConversionTarget &target,
                                RewritePatternSet &&patterns) {
  ConversionConfig config;
  config.foldingMode = DialectConversionFoldingMode::Never;
  return applyPartialConversion(root, target, std::move(patterns), config);
}

} // namespace conversion
} // namespace zb
