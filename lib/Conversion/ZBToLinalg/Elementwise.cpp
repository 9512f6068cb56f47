//===- Elementwise.cpp - elementwise zb ops to linalg.generic -------------===//
//
// One pattern per elementwise zb op, all of one template: a linalg.generic
// with identity maps whose body is the op's scalar form (the functions
// below). See include/zb/Conversion/ZBToLinalg/ZBToLinalg.h.
//
//===----------------------------------------------------------------------===//
#include "../ConversionUtils.h"
#include "LinalgBuilders.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace zb;
using namespace zb::linalg_lowering;

namespace {

/// The scalar form of an elementwise op: (builder, location, the zb op, the
/// body's block arguments: one element per operand, then the output's) ->
/// the result element.
using ScalarFn = Value (*)(OpBuilder &, Location, Operation *, ValueRange);

template <typename ScalarOp>
Value unary(OpBuilder &b, Location l, Operation *, ValueRange a) {
  return ScalarOp::create(b, l, a[0]).getResult();
}

template <typename ScalarOp>
Value binary(OpBuilder &b, Location l, Operation *, ValueRange a) {
  return ScalarOp::create(b, l, a[0], a[1]).getResult();
}

/// max(x, 0) as an unordered compare and a select: NaN stays NaN, as in
/// PyTorch and JAX (an ordered compare would map it to 0 and hide it).
Value relu(OpBuilder &b, Location l, Operation *, ValueRange a) {
  Value x = a[0];
  Value zero = floatConst(b, l, x.getType(), 0.0);
  Value pos = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UGT, x, zero);
  return arith::SelectOp::create(b, l, pos, x, zero).getResult();
}

/// 1 / sqrt(x): convert-math-to-libm would turn math.rsqrt into a call of
/// `rsqrt`, which libm does not have.
Value rsqrt(OpBuilder &b, Location l, Operation *, ValueRange a) {
  Value x = a[0];
  Value one = floatConst(b, l, x.getType(), 1.0);
  return arith::DivFOp::create(b, l, one, math::SqrtOp::create(b, l, x))
      .getResult();
}

/// sigmoid (1 / (1 + exp(-x))), or silu (x / (1 + exp(-x))) with TimesX.
template <bool TimesX>
Value logistic(OpBuilder &b, Location l, Operation *, ValueRange a) {
  Value x = a[0];
  Value one = floatConst(b, l, x.getType(), 1.0);
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  return arith::DivFOp::create(b, l, TimesX ? x : one,
                               arith::AddFOp::create(b, l, one, e))
      .getResult();
}

/// 0.5 x (1 + erf(x / sqrt 2)), or with approximate = "tanh"
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Value gelu(OpBuilder &b, Location l, Operation *op, ValueRange a) {
  bool useTanh = llvm::cast<GeluOp>(op).getApproximate() == "tanh";
  Value x = a[0];
  Type t = x.getType();
  auto c = [&](double v) { return floatConst(b, l, t, v); };
  auto mul = [&](Value p, Value q) {
    return arith::MulFOp::create(b, l, p, q).getResult();
  };
  Value inner;
  if (useTanh) {
    Value x3 = mul(mul(x, x), x);
    Value u = arith::AddFOp::create(b, l, x, mul(c(0.044715), x3));
    inner = math::TanhOp::create(b, l, mul(c(std::sqrt(2.0 / M_PI)), u));
  } else {
    inner = math::ErfOp::create(b, l, mul(x, c(M_SQRT1_2)));
  }
  Value onePlus = arith::AddFOp::create(b, l, c(1.0), inner);
  return mul(mul(c(0.5), x), onePlus);
}

/// Element type conversion to the result's: float extension / truncation,
/// i1 as unsigned, other integers as signed; to an integer, floats truncate
/// toward zero and integers sign-extend or truncate.
Value cast(OpBuilder &b, Location l, Operation *op, ValueRange a) {
  Type dst =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  Value x = a[0];
  Type src = x.getType();
  if (src == dst)
    return x;
  if (auto dstI = llvm::dyn_cast<IntegerType>(dst)) {
    if (llvm::isa<FloatType>(src))
      return arith::FPToSIOp::create(b, l, dst, x);
    unsigned from = src.getIntOrFloatBitWidth();
    if (from > dstI.getWidth())
      return arith::TruncIOp::create(b, l, dst, x);
    if (src.isInteger(1))
      return arith::ExtUIOp::create(b, l, dst, x);
    return arith::ExtSIOp::create(b, l, dst, x);
  }
  if (auto srcF = llvm::dyn_cast<FloatType>(src)) {
    if (srcF.getWidth() < llvm::cast<FloatType>(dst).getWidth())
      return arith::ExtFOp::create(b, l, dst, x);
    return arith::TruncFOp::create(b, l, dst, x);
  }
  if (src.isInteger(1))
    return arith::UIToFPOp::create(b, l, dst, x);
  return arith::SIToFPOp::create(b, l, dst, x);
}

/// Ordered comparisons (ne is unordered: true for NaN).
arith::CmpFPredicate predicateOf(StringRef p) {
  return llvm::StringSwitch<arith::CmpFPredicate>(p)
      .Case("eq", arith::CmpFPredicate::OEQ)
      .Case("ne", arith::CmpFPredicate::UNE)
      .Case("lt", arith::CmpFPredicate::OLT)
      .Case("le", arith::CmpFPredicate::OLE)
      .Case("gt", arith::CmpFPredicate::OGT)
      .Default(arith::CmpFPredicate::OGE);
}

Value compare(OpBuilder &b, Location l, Operation *op, ValueRange a) {
  arith::CmpFPredicate pred =
      predicateOf(llvm::cast<CompareOp>(op).getPredicate());
  return arith::CmpFOp::create(b, l, pred, a[0], a[1]).getResult();
}

Value select(OpBuilder &b, Location l, Operation *, ValueRange a) {
  return arith::SelectOp::create(b, l, a[0], a[1], a[2]).getResult();
}

/// The fill value where the key index (last dim) exceeds the query index
/// (the dim before), x elsewhere.
Value causalMask(OpBuilder &b, Location l, Operation *op, ValueRange a) {
  int64_t n =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  double fill = llvm::cast<CausalMaskOp>(op).getFillValue();
  Value x = a[0];
  Value q = linalg::IndexOp::create(b, l, n - 2);
  Value k = linalg::IndexOp::create(b, l, n - 1);
  Value future = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, k, q);
  return arith::SelectOp::create(b, l, future,
                                 floatConst(b, l, x.getType(), fill), x);
}

/// Whether `t` is a float type narrower than f32 (bf16 under autocast).
bool isNarrowFloat(Type t) {
  auto f = llvm::dyn_cast<FloatType>(t);
  return f && f.getWidth() < 32;
}

template <typename SourceOp, ScalarFn Scalar>
Value lowerElementwise(OpBuilder &b, SourceOp op,
                       typename SourceOp::Adaptor adaptor) {
  auto resultTy = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  return elementwise(
      b, op.getLoc(), resultTy, adaptor.getOperands(),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        // An op on bf16 computes its whole scalar form in f32 and rounds
        // once (torch's bfloat16 kernels: gelu, silu, ... in float), not
        // once per arith op of the form. zb.cast converts by itself.
        if (std::is_same_v<SourceOp, CastOp> ||
            llvm::none_of(args.drop_back().getTypes(), isNarrowFloat))
          return Scalar(nb, l, op, args);
        // The inputs widened; the output's element (unused) as it is.
        SmallVector<Value> wide;
        size_t numInputs = adaptor.getOperands().size();
        for (auto [i, a] : llvm::enumerate(args))
          wide.push_back(i < numInputs && isNarrowFloat(a.getType())
                             ? arith::ExtFOp::create(nb, l, nb.getF32Type(), a)
                                   .getResult()
                             : a);
        Value r = Scalar(nb, l, op, wide);
        Type elem = resultTy.getElementType();
        return isNarrowFloat(elem)
                   ? arith::TruncFOp::create(nb, l, elem, r).getResult()
                   : r;
      });
}

/// The pattern of the elementwise op `SourceOp` with scalar form `Scalar`.
template <typename SourceOp, ScalarFn Scalar>
using Elementwise =
    conversion::FunctionPattern<SourceOp, lowerElementwise<SourceOp, Scalar>>;

} // namespace

void zb::linalg_lowering::populateElementwisePatterns(
    RewritePatternSet &patterns, PatternBenefit benefit) {
  patterns.add<
      Elementwise<AddOp, binary<arith::AddFOp>>,
      Elementwise<SubOp, binary<arith::SubFOp>>,
      Elementwise<MulOp, binary<arith::MulFOp>>,
      Elementwise<DivOp, binary<arith::DivFOp>>,
      Elementwise<PowOp, binary<math::PowFOp>>,
      Elementwise<MaxOp, binary<arith::MaximumFOp>>,
      Elementwise<NegOp, unary<arith::NegFOp>>,
      Elementwise<ExpOp, unary<math::ExpOp>>,
      Elementwise<LogOp, unary<math::LogOp>>,
      Elementwise<TanhOp, unary<math::TanhOp>>,
      Elementwise<SqrtOp, unary<math::SqrtOp>>,
      Elementwise<ErfOp, unary<math::ErfOp>>, Elementwise<ReluOp, relu>,
      Elementwise<RsqrtOp, rsqrt>, Elementwise<SigmoidOp, logistic<false>>,
      Elementwise<SiluOp, logistic<true>>, Elementwise<GeluOp, gelu>,
      Elementwise<CastOp, cast>, Elementwise<CompareOp, compare>,
      Elementwise<SelectOp, select>, Elementwise<CausalMaskOp, causalMask>>(
      patterns.getContext(), benefit);
}
