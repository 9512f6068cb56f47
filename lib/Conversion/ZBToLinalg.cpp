//===- ZBToLinalg.cpp - convert-zb-to-linalg ------------------------------===//
//
// Lowers zb compute ops on tensors to linalg.generic / arith / math / tensor.
// (f32 matmuls are lowered to OpenBLAS by convert-zb-to-runtime first; other
// element types become linalg.matmul here.)
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

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

/// Sum over `axes` of `input` into a tensor of type `resultTy`.
Value reduceSum(OpBuilder &b, Location loc, Value input,
                RankedTensorType resultTy, ArrayRef<int64_t> axes) {
  auto inTy = llvm::cast<RankedTensorType>(input.getType());
  Value init = linalg::FillOp::create(
                   b, loc, ValueRange{zeroOf(b, loc, inTy.getElementType())},
                   ValueRange{emptyLike(b, loc, resultTy)})
                   .getResult(0);
  SmallVector<AffineExpr> kept;
  SmallVector<utils::IteratorType> its;
  for (int64_t d = 0; d < inTy.getRank(); ++d) {
    bool reduced = llvm::is_contained(axes, d);
    its.push_back(reduced ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
    if (!reduced)
      kept.push_back(b.getAffineDimExpr(d));
  }
  AffineMap outMap =
      AffineMap::get(inTy.getRank(), 0, kept, b.getContext());
  return buildGeneric(b, loc, resultTy, ValueRange{input},
                      {b.getMultiDimIdentityMap(inTy.getRank())}, outMap, its,
                      init, [](OpBuilder &nb, Location l, ValueRange a) {
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
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa<ZBDialect>(op->getDialect()))
        work.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : work) {
      b.setInsertionPoint(op);
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
