//===- ZBToLinalg.cpp - convert-zb-to-linalg ------------------------------===//
//
// Lowers zb compute ops on tensors to linalg.generic / arith / math / tensor.
// (f32 matmuls are lowered to OpenBLAS by convert-zb-to-runtime first; other
// element types become linalg.matmul here.)
//
// Composite ops (softmax, layer_norm, rms_norm, cross_entropy) are first
// decomposed into simpler zb ops (ZBBuilder), which are then lowered like the
// others. zb.scatter_add becomes an scf.for over the index list.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

namespace zb {
#define GEN_PASS_DEF_CONVERTZBTOLINALG
#include "zb/Conversion/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

using BodyFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// linalg.generic over the result's shape with the given input maps.
Value buildGeneric(OpBuilder &b, Location loc, RankedTensorType resultTy,
                   ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                   AffineMap outputMap,
                   ArrayRef<utils::IteratorType> iterators, Value init,
                   BodyFn body) {
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

/// Elementwise op: all maps identity.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultTy,
                  ValueRange inputs, BodyFn body) {
  AffineMap id = b.getMultiDimIdentityMap(resultTy.getRank());
  SmallVector<AffineMap> maps(inputs.size(), id);
  SmallVector<utils::IteratorType> its(resultTy.getRank(),
                                       utils::IteratorType::parallel);
  return buildGeneric(b, loc, resultTy, inputs, maps, id, its,
                      emptyLike(b, loc, resultTy), body);
}

Value zeroOf(OpBuilder &b, Location loc, Type elem) {
  return arith::ConstantOp::create(b, loc, elem, b.getFloatAttr(elem, 0.0));
}

Value floatConst(OpBuilder &b, Location loc, Type elem, double v) {
  return arith::ConstantOp::create(b, loc, elem, b.getFloatAttr(elem, v));
}

/// A tensor of type `t` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType t, Value value) {
  return linalg::FillOp::create(b, loc, ValueRange{value},
                                ValueRange{emptyLike(b, loc, t)})
      .getResult(0);
}

/// Reduction over `axes` of `input` into a tensor of type `resultTy`,
/// starting from `initValue` and combining with `combine(element, acc)`.
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

/// Sum over `axes` of `input` into a tensor of type `resultTy`.
Value reduceSum(OpBuilder &b, Location loc, Value input,
                RankedTensorType resultTy, ArrayRef<int64_t> axes) {
  return reduceWith(b, loc, input, resultTy, axes,
                    zeroOf(b, loc, resultTy.getElementType()),
                    [](OpBuilder &nb, Location l, ValueRange a) {
                      return arith::AddFOp::create(nb, l, a[0], a[1])
                          .getResult();
                    });
}

/// Reshape between static shapes via a 1-D tensor.
Value reshape(OpBuilder &b, Location loc, Value input,
              RankedTensorType resultTy) {
  auto inTy = llvm::cast<RankedTensorType>(input.getType());
  auto flatTy =
      RankedTensorType::get({inTy.getNumElements()}, inTy.getElementType());
  auto allDims = [](int64_t rank) {
    ReassociationIndices all;
    for (int64_t i = 0; i < rank; ++i)
      all.push_back(i);
    return all;
  };
  Value flat = input;
  if (inTy.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatTy, input,
                                         ArrayRef<ReassociationIndices>{});
  else if (inTy.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, flatTy, input,
        ArrayRef<ReassociationIndices>{allDims(inTy.getRank())});
  if (resultTy.getRank() == 1)
    return flat;
  if (resultTy.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, resultTy, flat,
                                           ArrayRef<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(
      b, loc, resultTy, flat,
      ArrayRef<ReassociationIndices>{allDims(resultTy.getRank())});
}

Value transpose2d(OpBuilder &b, Location loc, Value x) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  auto outTy = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)},
                                     t.getElementType());
  return linalg::TransposeOp::create(b, loc, x, emptyLike(b, loc, outTy),
                                     ArrayRef<int64_t>{1, 0})
      .getResult()[0];
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
  return llvm::map_to_vector(values, [&](int64_t v) -> OpFoldResult {
    return b.getIndexAttr(v);
  });
}

/// Static strided tensor.extract_slice.
Value extractSlice(OpBuilder &b, Location loc, Value x,
                   RankedTensorType resultTy, ArrayRef<int64_t> offsets,
                   ArrayRef<int64_t> strides) {
  return tensor::ExtractSliceOp::create(b, loc, resultTy, x,
                                        indexAttrs(b, offsets),
                                        indexAttrs(b, resultTy.getShape()),
                                        indexAttrs(b, strides));
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

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

/// zb.scatter_add: result = 0; for n in order: result[idx[n], :] += upd[n, :].
Value lowerScatterAdd(OpBuilder &b, Location loc, ScatterAddOp op) {
  auto resTy = op.getType();
  auto idxTy = llvm::cast<RankedTensorType>(op.getIndices().getType());
  Type elem = resTy.getElementType();
  int64_t n = idxTy.getNumElements();
  int64_t rows = resTy.getDimSize(0);
  int64_t r = resTy.getNumElements() / std::max<int64_t>(rows, 1);
  if (rows == 0)
    r = 1;
  Value idx = reshape(b, loc, op.getIndices(),
                      RankedTensorType::get({n}, idxTy.getElementType()));
  auto flatUpdTy = RankedTensorType::get({n, r}, elem);
  auto flatResTy = RankedTensorType::get({rows, r}, elem);
  Value upd = reshape(b, loc, op.getUpdates(), flatUpdTy);
  Value init = filled(b, loc, flatResTy, zeroOf(b, loc, elem));
  auto rowTy = RankedTensorType::get({1, r}, elem);
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, n);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, ValueRange{init},
      [&](OpBuilder &lb2, Location l, Value iv, ValueRange iter) {
        Value row = toIndex(lb2, l, tensor::ExtractOp::create(
                                        lb2, l, idx, ValueRange{iv}));
        SmallVector<OpFoldResult> accOff{row, lb2.getIndexAttr(0)};
        SmallVector<OpFoldResult> updOff{iv, lb2.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = indexAttrs(lb2, {1, r});
        SmallVector<OpFoldResult> ones = indexAttrs(lb2, {1, 1});
        Value cur = tensor::ExtractSliceOp::create(lb2, l, rowTy, iter[0],
                                                   accOff, sizes, ones);
        Value u = tensor::ExtractSliceOp::create(lb2, l, rowTy, upd, updOff,
                                                 sizes, ones);
        AffineMap id = lb2.getMultiDimIdentityMap(2);
        Value sum = buildGeneric(
            lb2, l, rowTy, ValueRange{u}, {id}, id,
            {utils::IteratorType::parallel, utils::IteratorType::parallel},
            cur, [](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::AddFOp::create(nb, nl, a[1], a[0]).getResult();
            });
        Value next = tensor::InsertSliceOp::create(lb2, l, sum, iter[0],
                                                   accOff, sizes, ones);
        scf::YieldOp::create(lb2, l, next);
      });
  return reshape(b, loc, loop.getResult(0), resTy);
}

/// zb.batch_matmul: collapse the batch dims, linalg.batch_matmul, expand.
Value lowerBatchMatmul(OpBuilder &b, Location loc, BatchMatmulOp mm) {
  auto collapse = [&](Value x) -> Value {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    int64_t r = t.getRank();
    if (r == 3)
      return x;
    int64_t batch = 1;
    for (int64_t d = 0; d < r - 2; ++d)
      batch *= t.getDimSize(d);
    ReassociationIndices lead;
    for (int64_t d = 0; d < r - 2; ++d)
      lead.push_back(d);
    auto ty = RankedTensorType::get(
        {batch, t.getDimSize(r - 2), t.getDimSize(r - 1)}, t.getElementType());
    return tensor::CollapseShapeOp::create(
        b, loc, ty, x,
        ArrayRef<ReassociationIndices>{lead, {r - 2}, {r - 1}});
  };
  Value a = collapse(mm.getLhs()), bb = collapse(mm.getRhs());
  if (mm.getTransposeLhs())
    a = transposeN(b, loc, a, {0, 2, 1});
  if (mm.getTransposeRhs())
    bb = transposeN(b, loc, bb, {0, 2, 1});
  auto at = llvm::cast<RankedTensorType>(a.getType());
  auto bt = llvm::cast<RankedTensorType>(bb.getType());
  auto resTy = mm.getType();
  auto res3Ty = RankedTensorType::get(
      {at.getDimSize(0), at.getDimSize(1), bt.getDimSize(2)},
      resTy.getElementType());
  Value init = filled(b, loc, res3Ty, zeroOf(b, loc, resTy.getElementType()));
  Value c = linalg::BatchMatmulOp::create(b, loc, TypeRange{res3Ty},
                                          ValueRange{a, bb}, ValueRange{init})
                .getResult(0);
  int64_t r = resTy.getRank();
  if (r == 3)
    return c;
  ReassociationIndices lead;
  for (int64_t d = 0; d < r - 2; ++d)
    lead.push_back(d);
  return tensor::ExpandShapeOp::create(
      b, loc, resTy, c,
      ArrayRef<ReassociationIndices>{lead, {r - 2}, {r - 1}});
}

/// Decomposes a composite op into simpler zb ops; null if `op` is not one.
Value decompose(OpBuilder &b, Operation *op) {
  ZBBuilder e(b, op->getLoc());
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](SoftmaxOp sm) {
        Value x = sm.getOperand();
        auto t = sm.getType();
        int64_t axis = sm.getAxis();
        Value m = e.unreduce(e.reduceMax(x, {axis}), t, {axis});
        Value ex = e.exp(e.sub(x, m));
        return e.div(ex, e.unreduce(e.reduceSum(ex, {axis}), t, {axis}));
      })
      .Case([&](LayerNormOp ln) {
        auto t = ln.getType();
        int64_t last = t.getRank() - 1;
        Value x = ln.getInput();
        Value xc = e.sub(x, e.unreduce(e.reduceMean(x, {last}), t, {last}));
        Value var = e.reduceMean(e.mul(xc, xc), {last});
        Value rstd = e.rsqrt(
            e.add(var, e.splat(var, ln.getEpsilon().convertToDouble())));
        Value xhat = e.mul(xc, e.unreduce(rstd, t, {last}));
        return e.add(e.mul(xhat, e.broadcast(ln.getWeight(), t, {last})),
                     e.broadcast(ln.getBias(), t, {last}));
      })
      .Case([&](RmsNormOp rn) {
        auto t = rn.getType();
        int64_t last = t.getRank() - 1;
        Value x = rn.getInput();
        Value ms = e.reduceMean(e.mul(x, x), {last});
        Value rstd =
            e.rsqrt(e.add(ms, e.splat(ms, rn.getEpsilon().convertToDouble())));
        return e.mul(e.mul(x, e.unreduce(rstd, t, {last})),
                     e.broadcast(rn.getWeight(), t, {last}));
      })
      .Case([&](CrossEntropyOp ce) {
        Value x = ce.getLogits();
        auto t = llvm::cast<RankedTensorType>(x.getType());
        int64_t last = t.getRank() - 1;
        Value m = e.reduceMax(x, {last});
        Value sumExp =
            e.reduceSum(e.exp(e.sub(x, e.unreduce(m, t, {last}))), {last});
        Value lse = e.add(e.log(sumExp), m);
        Value picked = e.reduceSum(
            e.mul(x, e.oneHot(ce.getTargets(), t.getDimSize(last),
                              t.getElementType())),
            {last});
        Value perSample = e.sub(lse, picked);
        return e.reduceMean(perSample,
                            llvm::to_vector(llvm::seq<int64_t>(0, last)));
      })
      .Default([](Operation *) { return Value(); });
}

arith::CmpFPredicate predicateOf(StringRef p) {
  return llvm::StringSwitch<arith::CmpFPredicate>(p)
      .Case("eq", arith::CmpFPredicate::OEQ)
      .Case("ne", arith::CmpFPredicate::UNE)
      .Case("lt", arith::CmpFPredicate::OLT)
      .Case("le", arith::CmpFPredicate::OLE)
      .Case("gt", arith::CmpFPredicate::OGT)
      .Default(arith::CmpFPredicate::OGE);
}

/// Returns the lowered value of `op`, or null if `op` is not a zb compute op.
Value lower(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto resultTy = op->getNumResults() == 1
                      ? llvm::dyn_cast<RankedTensorType>(
                            op->getResult(0).getType())
                      : RankedTensorType();
  auto binary = [&](auto makeOp) {
    return elementwise(b, loc, resultTy, op->getOperands(),
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return makeOp(nb, l, a[0], a[1]);
                       });
  };
  auto unary = [&](auto makeOp) {
    return elementwise(b, loc, resultTy, op->getOperands(),
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return makeOp(nb, l, a[0]);
                       });
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](ConstantOp c) -> Value {
        return arith::ConstantOp::create(b, loc,
                                         llvm::cast<TypedAttr>(c.getValue()));
      })
      .Case([&](AddOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return arith::AddFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](SubOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return arith::SubFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](MulOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return arith::MulFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](DivOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return arith::DivFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](NegOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return arith::NegFOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](ReluOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          Value zero = zeroOf(nb, l, x.getType());
          Value pos = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                            x, zero);
          return arith::SelectOp::create(nb, l, pos, x, zero).getResult();
        });
      })
      .Case([&](ExpOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return math::ExpOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](LogOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return math::LogOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](TanhOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return math::TanhOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](CompareOp c) {
        arith::CmpFPredicate pred = predicateOf(c.getPredicate());
        return elementwise(b, loc, resultTy, op->getOperands(),
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             return arith::CmpFOp::create(nb, l, pred, a[0],
                                                          a[1])
                                 .getResult();
                           });
      })
      .Case([&](SelectOp) {
        return elementwise(b, loc, resultTy, op->getOperands(),
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             return arith::SelectOp::create(nb, l, a[0], a[1],
                                                            a[2])
                                 .getResult();
                           });
      })
      .Case([&](BroadcastInDimOp bc) {
        auto inTy = llvm::cast<RankedTensorType>(bc.getOperand().getType());
        SmallVector<AffineExpr> exprs;
        for (auto [i, d] : llvm::enumerate(bc.getDims()))
          exprs.push_back(inTy.getDimSize(i) == 1 &&
                                  resultTy.getDimSize(d) != 1
                              ? b.getAffineConstantExpr(0)
                              : b.getAffineDimExpr(d));
        AffineMap inMap =
            AffineMap::get(resultTy.getRank(), 0, exprs, b.getContext());
        SmallVector<utils::IteratorType> its(resultTy.getRank(),
                                             utils::IteratorType::parallel);
        return buildGeneric(b, loc, resultTy, ValueRange{bc.getOperand()},
                            {inMap}, b.getMultiDimIdentityMap(resultTy.getRank()),
                            its, emptyLike(b, loc, resultTy),
                            [](OpBuilder &, Location, ValueRange a) {
                              return a[0];
                            });
      })
      .Case([&](ReduceSumOp r) {
        return reduceSum(b, loc, r.getOperand(), resultTy, r.getAxes());
      })
      .Case([&](ReduceMeanOp r) {
        auto inTy = llvm::cast<RankedTensorType>(r.getOperand().getType());
        int64_t count = 1;
        for (int64_t a : r.getAxes())
          count *= inTy.getDimSize(a);
        Value sum = reduceSum(b, loc, r.getOperand(), resultTy, r.getAxes());
        Type elem = resultTy.getElementType();
        return elementwise(b, loc, resultTy, ValueRange{sum},
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             Value scale = arith::ConstantOp::create(
                                 nb, l, elem,
                                 nb.getFloatAttr(elem, 1.0 / count));
                             return arith::MulFOp::create(nb, l, a[0], scale)
                                 .getResult();
                           });
      })
      .Case([&](ReshapeOp r) {
        return reshape(b, loc, r.getOperand(), resultTy);
      })
      .Case([&](PowOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return math::PowFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](MaxOp) {
        return binary([](OpBuilder &nb, Location l, Value x, Value y) {
          return arith::MaximumFOp::create(nb, l, x, y).getResult();
        });
      })
      .Case([&](SqrtOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return math::SqrtOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](RsqrtOp) {
        // 1 / sqrt(x): convert-math-to-libm would turn math.rsqrt into a
        // call of `rsqrt`, which libm does not have.
        return unary([](OpBuilder &nb, Location l, Value x) {
          Value one = floatConst(nb, l, x.getType(), 1.0);
          return arith::DivFOp::create(nb, l, one,
                                       math::SqrtOp::create(nb, l, x))
              .getResult();
        });
      })
      .Case([&](ErfOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          return math::ErfOp::create(nb, l, x).getResult();
        });
      })
      .Case([&](SigmoidOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          Value one = floatConst(nb, l, x.getType(), 1.0);
          Value e = math::ExpOp::create(nb, l, arith::NegFOp::create(nb, l, x));
          return arith::DivFOp::create(
                     nb, l, one, arith::AddFOp::create(nb, l, one, e))
              .getResult();
        });
      })
      .Case([&](SiluOp) {
        return unary([](OpBuilder &nb, Location l, Value x) {
          Value one = floatConst(nb, l, x.getType(), 1.0);
          Value e = math::ExpOp::create(nb, l, arith::NegFOp::create(nb, l, x));
          return arith::DivFOp::create(
                     nb, l, x, arith::AddFOp::create(nb, l, one, e))
              .getResult();
        });
      })
      .Case([&](GeluOp g) {
        bool useTanh = g.getApproximate() == "tanh";
        return unary([&](OpBuilder &nb, Location l, Value x) {
          Type t = x.getType();
          auto c = [&](double v) { return floatConst(nb, l, t, v); };
          auto mul = [&](Value p, Value q) {
            return arith::MulFOp::create(nb, l, p, q).getResult();
          };
          Value inner;
          if (useTanh) { // tanh(sqrt(2/pi) (x + 0.044715 x^3))
            Value x3 = mul(mul(x, x), x);
            Value u = arith::AddFOp::create(nb, l, x, mul(c(0.044715), x3));
            inner = math::TanhOp::create(
                nb, l, mul(c(std::sqrt(2.0 / M_PI)), u));
          } else { // erf(x / sqrt 2)
            inner = math::ErfOp::create(nb, l, mul(x, c(M_SQRT1_2)));
          }
          Value onePlus = arith::AddFOp::create(nb, l, c(1.0), inner);
          return mul(mul(c(0.5), x), onePlus);
        });
      })
      .Case([&](CastOp cast) {
        Type dst = resultTy.getElementType();
        return unary([&](OpBuilder &nb, Location l, Value x) -> Value {
          Type src = x.getType();
          if (src == dst)
            return x;
          if (auto srcF = llvm::dyn_cast<FloatType>(src)) {
            if (srcF.getWidth() < llvm::cast<FloatType>(dst).getWidth())
              return arith::ExtFOp::create(nb, l, dst, x);
            return arith::TruncFOp::create(nb, l, dst, x);
          }
          if (src.isInteger(1))
            return arith::UIToFPOp::create(nb, l, dst, x);
          return arith::SIToFPOp::create(nb, l, dst, x);
        });
      })
      .Case([&](ReduceMaxOp r) {
        Type elem = resultTy.getElementType();
        Value negInf = floatConst(b, loc, elem,
                                  -std::numeric_limits<double>::infinity());
        return reduceWith(b, loc, r.getOperand(), resultTy, r.getAxes(),
                          negInf, [](OpBuilder &nb, Location l, ValueRange a) {
                            return arith::MaximumFOp::create(nb, l, a[0], a[1])
                                .getResult();
                          });
      })
      .Case([&](TransposeOp t) {
        return transposeN(b, loc, t.getOperand(), t.getPermutation());
      })
      .Case([&](SliceOp s) {
        return extractSlice(b, loc, s.getOperand(), resultTy, s.getStart(),
                            s.getStrides());
      })
      .Case([&](PadOp p) {
        Value init =
            filled(b, loc, resultTy, zeroOf(b, loc, resultTy.getElementType()));
        SmallVector<int64_t> strides;
        for (int64_t i : p.getInterior())
          strides.push_back(i + 1);
        return insertSlice(b, loc, p.getOperand(), init, p.getLow(), strides);
      })
      .Case([&](ConcatOp c) {
        Value acc = emptyLike(b, loc, resultTy);
        SmallVector<int64_t> offsets(resultTy.getRank(), 0);
        SmallVector<int64_t> strides(resultTy.getRank(), 1);
        int64_t axis = c.getAxis();
        for (Value in : c.getInputs()) {
          acc = insertSlice(b, loc, in, acc, offsets, strides);
          offsets[axis] +=
              llvm::cast<RankedTensorType>(in.getType()).getDimSize(axis);
        }
        return acc;
      })
      .Case([&](GatherOp g) {
        auto idxTy = llvm::cast<RankedTensorType>(g.getIndices().getType());
        int64_t k = idxTy.getRank(), n = resultTy.getRank();
        SmallVector<utils::IteratorType> its(n, utils::IteratorType::parallel);
        Value table = g.getTable();
        return buildGeneric(
            b, loc, resultTy, ValueRange{g.getIndices()},
            {leadingDimsMap(b, n, k)}, b.getMultiDimIdentityMap(n), its,
            emptyLike(b, loc, resultTy),
            [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
              SmallVector<Value> coords{toIndex(nb, l, a[0])};
              for (int64_t d = k; d < n; ++d)
                coords.push_back(linalg::IndexOp::create(nb, l, d));
              return tensor::ExtractOp::create(nb, l, table, coords);
            });
      })
      .Case([&](ScatterAddOp s) { return lowerScatterAdd(b, loc, s); })
      .Case([&](OneHotOp oh) {
        int64_t n = resultTy.getRank();
        SmallVector<utils::IteratorType> its(n, utils::IteratorType::parallel);
        Type elem = resultTy.getElementType();
        return buildGeneric(
            b, loc, resultTy, ValueRange{oh.getIndices()},
            {leadingDimsMap(b, n, n - 1)}, b.getMultiDimIdentityMap(n), its,
            emptyLike(b, loc, resultTy),
            [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
              Value c = linalg::IndexOp::create(nb, l, n - 1);
              Value eq = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               toIndex(nb, l, a[0]), c);
              return arith::SelectOp::create(nb, l, eq,
                                             floatConst(nb, l, elem, 1.0),
                                             floatConst(nb, l, elem, 0.0));
            });
      })
      .Case([&](CausalMaskOp cm) {
        int64_t n = resultTy.getRank();
        double fill = cm.getFillValue();
        return unary([&](OpBuilder &nb, Location l, Value x) -> Value {
          Value q = linalg::IndexOp::create(nb, l, n - 2);
          Value k = linalg::IndexOp::create(nb, l, n - 1);
          Value future =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, k, q);
          return arith::SelectOp::create(
              nb, l, future, floatConst(nb, l, x.getType(), fill), x);
        });
      })
      .Case([&](BatchMatmulOp mm) { return lowerBatchMatmul(b, loc, mm); })
      .Case([&](MatmulOp mm) {
        Value a = mm.getLhs(), bb = mm.getRhs();
        if (mm.getTransposeLhs())
          a = transpose2d(b, loc, a);
        if (mm.getTransposeRhs())
          bb = transpose2d(b, loc, bb);
        Value init =
            linalg::FillOp::create(
                b, loc, ValueRange{zeroOf(b, loc, resultTy.getElementType())},
                ValueRange{emptyLike(b, loc, resultTy)})
                .getResult(0);
        return linalg::MatmulOp::create(b, loc, TypeRange{resultTy},
                                        ValueRange{a, bb}, ValueRange{init})
            .getResult(0);
      })
      .Default([](Operation *) { return Value(); });
}

struct ConvertZBToLinalgPass
    : public zb::impl::ConvertZBToLinalgBase<ConvertZBToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    OpBuilder b(&getContext());
    // Composite ops first become simpler zb ops.
    SmallVector<Operation *> composites;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa<SoftmaxOp, LayerNormOp, RmsNormOp, CrossEntropyOp>(op))
        composites.push_back(op);
    });
    for (Operation *op : composites) {
      b.setInsertionPoint(op);
      Value v = decompose(b, op);
      op->getResult(0).replaceAllUsesWith(v);
      op->erase();
    }

    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa<ZBDialect>(op->getDialect()))
        work.push_back(op);
    });
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      if (auto split = llvm::dyn_cast<SplitOp>(op)) {
        auto inTy = llvm::cast<RankedTensorType>(split.getOperand().getType());
        SmallVector<int64_t> offsets(inTy.getRank(), 0);
        SmallVector<int64_t> strides(inTy.getRank(), 1);
        for (Value r : split.getResults()) {
          auto rt = llvm::cast<RankedTensorType>(r.getType());
          r.replaceAllUsesWith(extractSlice(b, op->getLoc(),
                                            split.getOperand(), rt, offsets,
                                            strides));
          offsets[split.getAxis()] += rt.getDimSize(split.getAxis());
        }
        op->erase();
        continue;
      }
      Value v = lower(b, op);
      if (!v) {
        op->emitOpError("cannot be lowered to linalg (run "
                        "convert-zb-to-runtime first for send/recv)");
        return signalPassFailure();
      }
      op->getResult(0).replaceAllUsesWith(v);
      op->erase();
    }
  }
};
} // namespace
