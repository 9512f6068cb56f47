//===- LinalgBuilders.cpp - linalg on tensors for convert-zb-to-linalg ----===//
#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace zb {
namespace linalg_lowering {

Value buildGeneric(OpBuilder &b, Location loc, RankedTensorType resultTy,
                   ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                   AffineMap outputMap, ArrayRef<utils::IteratorType> iterators,
                   Value init, BodyFn body) {
  SmallVector<AffineMap> maps(inputMaps.begin(), inputMaps.end());
  maps.push_back(outputMap);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultTy}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = body(nb, nloc, args);
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultTy,
                  ValueRange inputs, BodyFn body) {
  AffineMap id = b.getMultiDimIdentityMap(resultTy.getRank());
  SmallVector<AffineMap> maps(inputs.size(), id);
  SmallVector<utils::IteratorType> its(resultTy.getRank(),
                                       utils::IteratorType::parallel);
  return buildGeneric(b, loc, resultTy, inputs, maps, id, its,
                      emptyLike(b, loc, resultTy), body);
}

Value floatConst(OpBuilder &b, Location loc, Type elem, double v) {
  return arith::ConstantOp::create(b, loc, elem, b.getFloatAttr(elem, v));
}

Value filled(OpBuilder &b, Location loc, RankedTensorType t, Value value) {
  return linalg::FillOp::create(b, loc, ValueRange{value},
                                ValueRange{emptyLike(b, loc, t)})
      .getResult(0);
}

Value reduceWith(OpBuilder &b, Location loc, Value input,
                 RankedTensorType resultTy, ArrayRef<int64_t> axes,
                 Value initValue, BodyFn combine) {
  auto inTy = llvm::cast<RankedTensorType>(input.getType());
  Value init = filled(b, loc, resultTy, initValue);
  SmallVector<AffineExpr> kept;
  SmallVector<utils::IteratorType> its;
  for (int64_t d = 0; d < inTy.getRank(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    its.push_back(reduced ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
    if (!reduced)
      kept.push_back(b.getAffineDimExpr(d));
  }
  AffineMap outMap = AffineMap::get(inTy.getRank(), 0, kept, b.getContext());
  return buildGeneric(b, loc, resultTy, ValueRange{input},
                      {b.getMultiDimIdentityMap(inTy.getRank())}, outMap, its,
                      init, combine);
}

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

} // namespace linalg_lowering
} // namespace zb
