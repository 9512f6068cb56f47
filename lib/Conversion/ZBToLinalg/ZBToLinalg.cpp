//===- ZBToLinalg.cpp - convert-zb-to-linalg ------------------------------===//
//
// The structured patterns of convert-zb-to-linalg (broadcasts, reductions,
// shape ops, gathers and scatters, matmuls), the pattern set and legality
// of include/zb/Conversion/ZBToLinalg/ZBToLinalg.h, and the pass. The
// elementwise patterns are in Elementwise.cpp, the composite decompositions
// in Decompose.cpp.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/ZBToLinalg/ZBToLinalg.h"
#include "../ConversionUtils.h"
#include "LinalgBuilders.h"
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>
#include <optional>

namespace zb {
#define GEN_PASS_DEF_CONVERTZBTOLINALG
#include "zb/Conversion/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;
using namespace zb::linalg_lowering;
using conversion::FunctionPattern;

namespace {

//===-- Builders ----------------------------------------------------------===//

Value addF(OpBuilder &b, Location l, ValueRange a) {
  return arith::AddFOp::create(b, l, a[0], a[1]).getResult();
}

/// Sum over `axes` of `input` into a tensor of type `resultTy`, times
/// `scale` when given. A float type narrower than f32 (bf16 under autocast)
/// is accumulated in f32 and rounded once at the end, as torch's reduction
/// kernels do for bfloat16.
Value reduceSum(OpBuilder &b, Location loc, Value input,
                RankedTensorType resultTy, ArrayRef<int64_t> axes,
                std::optional<double> scale = std::nullopt) {
  Type elem = resultTy.getElementType();
  auto narrow = llvm::dyn_cast<FloatType>(elem);
  if (!narrow || narrow.getWidth() >= 32) {
    Value sum = reduceWith(b, loc, input, resultTy, axes,
                           floatConst(b, loc, elem, 0.0), addF);
    if (!scale)
      return sum;
    return elementwise(b, loc, resultTy, ValueRange{sum},
                       [&](OpBuilder &nb, Location l, ValueRange args) {
                         Value c = floatConst(nb, l, elem, *scale);
                         return arith::MulFOp::create(nb, l, args[0], c)
                             .getResult();
                       });
  }
  Type f32 = b.getF32Type();
  Value acc = reduceWith(
      b, loc, input, resultTy.clone(f32), axes, floatConst(b, loc, f32, 0.0),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, l, f32, args[0]);
        return arith::AddFOp::create(nb, l, x, args[1]).getResult();
      });
  return elementwise(b, loc, resultTy, ValueRange{acc},
                     [&](OpBuilder &nb, Location l, ValueRange args) {
                       Value x = args[0];
                       if (scale)
                         x = arith::MulFOp::create(
                             nb, l, x, floatConst(nb, l, f32, *scale));
                       return arith::TruncFOp::create(nb, l, elem, x)
                           .getResult();
                     });
}

/// linalg.transpose of `x` with result dim i = operand dim perm[i].
Value transposeN(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return linalg::TransposeOp::create(b, loc, x,
                                     emptyLike(b, loc, t.clone(shape)), perm)
      .getResult()[0];
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(
      values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

/// Static strided tensor.extract_slice.
Value extractSlice(OpBuilder &b, Location loc, Value x,
                   RankedTensorType resultTy, ArrayRef<int64_t> offsets,
                   ArrayRef<int64_t> strides) {
  return tensor::ExtractSliceOp::create(
      b, loc, resultTy, x, indexAttrs(b, offsets),
      indexAttrs(b, resultTy.getShape()), indexAttrs(b, strides));
}

/// Static strided tensor.insert_slice of `x` into `dest`.
Value insertSlice(OpBuilder &b, Location loc, Value x, Value dest,
                  ArrayRef<int64_t> offsets, ArrayRef<int64_t> strides) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  return tensor::InsertSliceOp::create(b, loc, x, dest, indexAttrs(b, offsets),
                                       indexAttrs(b, t.getShape()),
                                       indexAttrs(b, strides));
}

/// Affine map (d0, ..., d{n-1}) -> (d0, ..., d{k-1}).
AffineMap leadingDimsMap(OpBuilder &b, int64_t n, int64_t k) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < k; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(n, 0, exprs, b.getContext());
}

/// A linalg.generic over the result of `op` (all parallel) reading one input
/// with `inputMap`.
Value generateInto(OpBuilder &b, Operation *op, Value input, AffineMap inputMap,
                   BodyFn body) {
  auto resultTy = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t n = resultTy.getRank();
  SmallVector<utils::IteratorType> its(n, utils::IteratorType::parallel);
  return buildGeneric(b, op->getLoc(), resultTy, ValueRange{input}, {inputMap},
                      b.getMultiDimIdentityMap(n), its,
                      emptyLike(b, op->getLoc(), resultTy), body);
}

//===-- Lowerings (one per op kind) ---------------------------------------===//

Value lowerConstant(OpBuilder &b, ConstantOp op, ConstantOp::Adaptor) {
  return arith::ConstantOp::create(b, op.getLoc(),
                                   llvm::cast<TypedAttr>(op.getValue()));
}

/// Operand dim i reads result dim dims[i], or 0 where a size-1 dim is
/// broadcast.
Value lowerBroadcastInDim(OpBuilder &b, BroadcastInDimOp op,
                          BroadcastInDimOp::Adaptor a) {
  RankedTensorType resultTy = op.getType();
  auto inTy = llvm::cast<RankedTensorType>(a.getOperand().getType());
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(op.getDims()))
    exprs.push_back(inTy.getDimSize(i) == 1 && resultTy.getDimSize(d) != 1
                        ? b.getAffineConstantExpr(0)
                        : b.getAffineDimExpr(d));
  AffineMap inMap =
      AffineMap::get(resultTy.getRank(), 0, exprs, b.getContext());
  return generateInto(
      b, op, a.getOperand(), inMap,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

Value lowerReduceSum(OpBuilder &b, ReduceSumOp op, ReduceSumOp::Adaptor a) {
  return reduceSum(b, op.getLoc(), a.getOperand(), op.getType(), op.getAxes());
}

/// The sum times 1/count (count = product of the reduced dims).
Value lowerReduceMean(OpBuilder &b, ReduceMeanOp op, ReduceMeanOp::Adaptor a) {
  Location loc = op.getLoc();
  RankedTensorType resultTy = op.getType();
  auto inTy = llvm::cast<RankedTensorType>(a.getOperand().getType());
  int64_t count = 1;
  for (int64_t axis : op.getAxes())
    count *= inTy.getDimSize(axis);
  return reduceSum(b, loc, a.getOperand(), resultTy, op.getAxes(),
                   1.0 / count);
}

Value lowerReduceMax(OpBuilder &b, ReduceMaxOp op, ReduceMaxOp::Adaptor a) {
  RankedTensorType resultTy = op.getType();
  Value negInf = floatConst(b, op.getLoc(), resultTy.getElementType(),
                            -std::numeric_limits<double>::infinity());
  return reduceWith(
      b, op.getLoc(), a.getOperand(), resultTy, op.getAxes(), negInf,
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::MaximumFOp::create(nb, l, args[0], args[1]).getResult();
      });
}

Value lowerReshape(OpBuilder &b, ReshapeOp op, ReshapeOp::Adaptor a) {
  return conversion::reshapeThroughFlat(b, op.getLoc(), a.getOperand(),
                                        op.getType());
}

Value lowerTranspose(OpBuilder &b, TransposeOp op, TransposeOp::Adaptor a) {
  return transposeN(b, op.getLoc(), a.getOperand(), op.getPermutation());
}

Value lowerSlice(OpBuilder &b, SliceOp op, SliceOp::Adaptor a) {
  return extractSlice(b, op.getLoc(), a.getOperand(), op.getType(),
                      op.getStart(), op.getStrides());
}

/// Zeros with the operand inserted at `low`, interior padding as stride.
Value lowerPad(OpBuilder &b, PadOp op, PadOp::Adaptor a) {
  RankedTensorType resultTy = op.getType();
  Value init =
      filled(b, op.getLoc(), resultTy,
             floatConst(b, op.getLoc(), resultTy.getElementType(), 0.0));
  SmallVector<int64_t> strides;
  for (int64_t i : op.getInterior())
    strides.push_back(i + 1);
  return insertSlice(b, op.getLoc(), a.getOperand(), init, op.getLow(),
                     strides);
}

Value lowerConcat(OpBuilder &b, ConcatOp op, ConcatOp::Adaptor a) {
  RankedTensorType resultTy = op.getType();
  Value acc = emptyLike(b, op.getLoc(), resultTy);
  SmallVector<int64_t> offsets(resultTy.getRank(), 0);
  SmallVector<int64_t> strides(resultTy.getRank(), 1);
  int64_t axis = op.getAxis();
  for (Value in : a.getInputs()) {
    acc = insertSlice(b, op.getLoc(), in, acc, offsets, strides);
    offsets[axis] +=
        llvm::cast<RankedTensorType>(in.getType()).getDimSize(axis);
  }
  return acc;
}

SmallVector<Value> lowerSplit(OpBuilder &b, SplitOp op, SplitOp::Adaptor a) {
  auto inTy = llvm::cast<RankedTensorType>(a.getOperand().getType());
  SmallVector<int64_t> offsets(inTy.getRank(), 0);
  SmallVector<int64_t> strides(inTy.getRank(), 1);
  SmallVector<Value> parts;
  for (Value r : op.getResults()) {
    auto rt = llvm::cast<RankedTensorType>(r.getType());
    parts.push_back(
        extractSlice(b, op.getLoc(), a.getOperand(), rt, offsets, strides));
    offsets[op.getAxis()] += rt.getDimSize(op.getAxis());
  }
  return parts;
}

/// result[i..., j...] = table[indices[i...], j...].
Value lowerGather(OpBuilder &b, GatherOp op, GatherOp::Adaptor a) {
  auto idxTy = llvm::cast<RankedTensorType>(a.getIndices().getType());
  int64_t k = idxTy.getRank(), n = op.getType().getRank();
  Value table = a.getTable();
  return generateInto(b, op, a.getIndices(), leadingDimsMap(b, n, k),
                      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        SmallVector<Value> coords{toIndex(nb, l, args[0])};
                        for (int64_t d = k; d < n; ++d)
                          coords.push_back(linalg::IndexOp::create(nb, l, d));
                        return tensor::ExtractOp::create(nb, l, table, coords);
                      });
}

/// result[i..., c] = indices[i...] == c ? 1 : 0.
Value lowerOneHot(OpBuilder &b, OneHotOp op, OneHotOp::Adaptor a) {
  int64_t n = op.getType().getRank();
  Type elem = op.getType().getElementType();
  return generateInto(
      b, op, a.getIndices(), leadingDimsMap(b, n, n - 1),
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value c = linalg::IndexOp::create(nb, l, n - 1);
        Value eq = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                         toIndex(nb, l, args[0]), c);
        return arith::SelectOp::create(nb, l, eq, floatConst(nb, l, elem, 1.0),
                                       floatConst(nb, l, elem, 0.0));
      });
}

/// acc[idx[n], :] += upd[n, :] for one n, in the scf.for of lowerScatterAdd.
Value scatterAddRow(OpBuilder &b, Location l, Value idx, Value upd, Value acc,
                    Value iv, RankedTensorType rowTy) {
  Value row =
      toIndex(b, l, tensor::ExtractOp::create(b, l, idx, ValueRange{iv}));
  SmallVector<OpFoldResult> accOff{row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> updOff{iv, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = indexAttrs(b, rowTy.getShape());
  SmallVector<OpFoldResult> ones = indexAttrs(b, {1, 1});
  Value cur =
      tensor::ExtractSliceOp::create(b, l, rowTy, acc, accOff, sizes, ones);
  Value u =
      tensor::ExtractSliceOp::create(b, l, rowTy, upd, updOff, sizes, ones);
  AffineMap id = b.getMultiDimIdentityMap(2);
  Value sum = buildGeneric(
      b, l, rowTy, ValueRange{u}, {id}, id,
      {utils::IteratorType::parallel, utils::IteratorType::parallel}, cur,
      [](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
      });
  return tensor::InsertSliceOp::create(b, l, sum, acc, accOff, sizes, ones);
}

/// result = 0; for n in order: result[idx[n], :] += upd[n, :] (rows of the
/// flattened trailing dims).
Value lowerScatterAdd(OpBuilder &b, ScatterAddOp op, ScatterAddOp::Adaptor a) {
  Location loc = op.getLoc();
  RankedTensorType resTy = op.getType();
  auto idxTy = llvm::cast<RankedTensorType>(a.getIndices().getType());
  Type elem = resTy.getElementType();
  int64_t n = idxTy.getNumElements();
  int64_t rows = resTy.getDimSize(0);
  int64_t r = resTy.getNumElements() / std::max<int64_t>(rows, 1);
  if (rows == 0)
    r = 1;
  Value idx = conversion::reshapeThroughFlat(
      b, loc, a.getIndices(),
      RankedTensorType::get({n}, idxTy.getElementType()));
  Value upd = conversion::reshapeThroughFlat(
      b, loc, a.getUpdates(), RankedTensorType::get({n, r}, elem));
  Value init = filled(b, loc, RankedTensorType::get({rows, r}, elem),
                      floatConst(b, loc, elem, 0.0));
  auto rowTy = RankedTensorType::get({1, r}, elem);
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, n);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, ValueRange{init},
      [&](OpBuilder &lb2, Location l, Value iv, ValueRange iter) {
        scf::YieldOp::create(
            lb2, l, scatterAddRow(lb2, l, idx, upd, iter[0], iv, rowTy));
      });
  return conversion::reshapeThroughFlat(b, loc, loop.getResult(0), resTy);
}

Value lowerMatmul(OpBuilder &b, MatmulOp op, MatmulOp::Adaptor a) {
  Location loc = op.getLoc();
  RankedTensorType resultTy = op.getType();
  Value lhs = a.getLhs(), rhs = a.getRhs();
  if (op.getTransposeLhs())
    lhs = transposeN(b, loc, lhs, {1, 0});
  if (op.getTransposeRhs())
    rhs = transposeN(b, loc, rhs, {1, 0});
  Value init =
      linalg::FillOp::create(
          b, loc,
          ValueRange{floatConst(b, loc, resultTy.getElementType(), 0.0)},
          ValueRange{emptyLike(b, loc, resultTy)})
          .getResult(0);
  return linalg::MatmulOp::create(b, loc, TypeRange{resultTy},
                                  ValueRange{lhs, rhs}, ValueRange{init})
      .getResult(0);
}

/// The batch dims collapsed into one, linalg.batch_matmul, expanded back.
Value lowerBatchMatmul(OpBuilder &b, BatchMatmulOp op,
                       BatchMatmulOp::Adaptor a) {
  Location loc = op.getLoc();
  Value lhs = conversion::collapseBatchDims(b, loc, a.getLhs());
  Value rhs = conversion::collapseBatchDims(b, loc, a.getRhs());
  if (op.getTransposeLhs())
    lhs = transposeN(b, loc, lhs, {0, 2, 1});
  if (op.getTransposeRhs())
    rhs = transposeN(b, loc, rhs, {0, 2, 1});
  auto lt = llvm::cast<RankedTensorType>(lhs.getType());
  auto rt = llvm::cast<RankedTensorType>(rhs.getType());
  RankedTensorType resTy = op.getType();
  auto res3Ty = RankedTensorType::get(
      {lt.getDimSize(0), lt.getDimSize(1), rt.getDimSize(2)},
      resTy.getElementType());
  Value init =
      filled(b, loc, res3Ty, floatConst(b, loc, resTy.getElementType(), 0.0));
  Value c =
      linalg::BatchMatmulOp::create(b, loc, TypeRange{res3Ty},
                                    ValueRange{lhs, rhs}, ValueRange{init})
          .getResult(0);
  return conversion::expandBatchDims(b, loc, c, resTy);
}

//===-- The pass ----------------------------------------------------------===//

struct ConvertZBToLinalgPass
    : conversion::ConversionPass<
          ConvertZBToLinalgPass, zb::impl::ConvertZBToLinalgBase,
          configureZBToLinalgConversionLegality, populateZBToLinalgPatterns> {
  /// zb.send / zb.recv are legal here only so that the conversion leaves
  /// them for convert-zb-to-runtime: by now that should have run.
  static LogicalResult afterConversion(Operation *root) {
    WalkResult leftover = root->walk([](Operation *op) {
      if (!llvm::isa<SendOp, RecvOp>(op))
        return WalkResult::advance();
      op->emitOpError("cannot be lowered to linalg (run "
                      "convert-zb-to-runtime first for send/recv)");
      return WalkResult::interrupt();
    });
    return failure(leftover.wasInterrupted());
  }
};

} // namespace

void zb::populateZBToLinalgPatterns(RewritePatternSet &patterns,
                                    PatternBenefit benefit) {
  populateZBDecomposeCompositePatterns(patterns, benefit);
  populateElementwisePatterns(patterns, benefit);
  patterns.add<FunctionPattern<ConstantOp, lowerConstant>,
               FunctionPattern<BroadcastInDimOp, lowerBroadcastInDim>,
               FunctionPattern<ReduceSumOp, lowerReduceSum>,
               FunctionPattern<ReduceMeanOp, lowerReduceMean>,
               FunctionPattern<ReduceMaxOp, lowerReduceMax>,
               FunctionPattern<ReshapeOp, lowerReshape>,
               FunctionPattern<TransposeOp, lowerTranspose>,
               FunctionPattern<SliceOp, lowerSlice>,
               FunctionPattern<PadOp, lowerPad>,
               FunctionPattern<ConcatOp, lowerConcat>,
               FunctionPattern<SplitOp, lowerSplit>,
               FunctionPattern<GatherOp, lowerGather>,
               FunctionPattern<OneHotOp, lowerOneHot>,
               FunctionPattern<ScatterAddOp, lowerScatterAdd>,
               FunctionPattern<MatmulOp, lowerMatmul>,
               FunctionPattern<BatchMatmulOp, lowerBatchMatmul>>(
      patterns.getContext(), benefit);
}

void zb::configureZBToLinalgConversionLegality(ConversionTarget &target) {
  target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                         arith::ArithDialect, math::MathDialect,
                         scf::SCFDialect>();
  target.addIllegalDialect<ZBDialect>();
  target.addLegalOp<SendOp, RecvOp>();
}
