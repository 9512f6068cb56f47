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

/// The reshape between a tensor and its 1-D form: `v` to `type` where one
/// of the two is 1-D. Rank 0 and 1-D meet through tensor<1xT> (an empty
/// reassociation), other ranks group all dims into one.
static Value reshapeTo1DOrBack(OpBuilder &b, Location loc, Value v,
                               RankedTensorType type) {
  auto vt = llvm::cast<RankedTensorType>(v.getType());
  bool toFlat = type.getRank() == 1;
  int64_t rank = toFlat ? vt.getRank() : type.getRank();
  if (rank == 1)
    return v;
  SmallVector<ReassociationIndices> groups;
  if (rank > 0)
    groups.push_back(allDims(rank));
  // Flattening a scalar and unflattening a higher rank add dims: expand.
  if (toFlat == (rank == 0))
    return tensor::ExpandShapeOp::create(b, loc, type, v, groups);
  return tensor::CollapseShapeOp::create(b, loc, type, v, groups);
}

Value flatten(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  return reshapeTo1DOrBack(
      b, loc, t,
      RankedTensorType::get({tt.getNumElements()}, tt.getElementType()));
}

Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  return reshapeTo1DOrBack(b, loc, flat, type);
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

LogicalResult applyZBConversion(Operation *root,
                                void (*configureLegality)(ConversionTarget &),
                                void (*populatePatterns)(RewritePatternSet &,
                                                         PatternBenefit)) {
  ConversionTarget target(*root->getContext());
  configureLegality(target);
  RewritePatternSet patterns(root->getContext());
  populatePatterns(patterns, /*benefit=*/1);
  ConversionConfig config;
  config.foldingMode = DialectConversionFoldingMode::Never;
  return applyPartialConversion(root, target, std::move(patterns), config);
}

} // namespace conversion
} // namespace zb
