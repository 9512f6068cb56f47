//===- Autocast.cpp - zb-autocast: bfloat16 mixed precision ----------------===//
//
// PyTorch's autocast for bfloat16 applied to the forward-and-loss function
// before autodiff, so that the backward pass differentiates through the
// casts as torch.autograd does through autocast's (the gradient of a cast
// is the gradient cast back: parameter gradients stay float32).
//
// The op lists are those of torch.autocast's CUDA policy
// (aten/src/ATen/autocast_mode.cpp; the "Autocast Op Reference" of the
// torch.amp documentation), mapped onto the zb ops:
//   - lower precision (inputs cast to bfloat16, result bfloat16; the GEMM
//     accumulates in float32): zb.matmul, zb.batch_matmul (torch: mm, bmm,
//     matmul, linear, addmm, baddbmm);
//   - float32 (inputs cast to float32): zb.exp, zb.log, zb.pow, zb.rsqrt,
//     zb.softmax, zb.layer_norm, zb.rms_norm, zb.cross_entropy,
//     zb.reduce_sum (torch: exp, log, pow, rsqrt, softmax, log_softmax,
//     layer_norm, rms_norm, nll_loss/cross_entropy, sum); zb adds
//     zb.reduce_mean and zb.scatter_add (torch's mean and index_add run in
//     the input type but accumulate in float32 inside one kernel; zb's
//     reductions are separate ops, so they stay float32);
//   - everything else runs at the widest float type of its operands, as
//     torch's type promotion does, with two weak kinds of operand that
//     adopt the type of the others: constants (torch's Python scalars and
//     0-dim tensors) and values computed from parameters alone when another
//     operand is an activation. The second is how an exported linear layer
//     (MatMul then Add of the bias) keeps torch's `linear`/`addmm`
//     semantics: the bias joins the bfloat16 product, as inside addmm.
// zb.attention (zb-fuse-attention) is torch's scaled_dot_product_attention,
// which autocast runs in lower precision: query, key, value and the result
// in bfloat16, the mask kept, the log-sum-exp float32; its
// decomposition computes the scores' softmax in the lse's type, as the
// flash kernels keep their row statistics in float32.
// Parameters stay float32 (the master weights; parameters exported in
// bfloat16 become float32 ones); each use in bfloat16 reads one cast of it. The function's results keep their types (the loss is
// float32).
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace zb {
#define GEN_PASS_DEF_ZBAUTOCAST
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

enum class CastPolicy { LowerPrecision, Float32, Promote, Keep };

CastPolicy policyOf(Operation *op) {
  if (isa<MatmulOp, BatchMatmulOp>(op))
    return CastPolicy::LowerPrecision;
  if (isa<ExpOp, LogOp, PowOp, RsqrtOp, SoftmaxOp, LayerNormOp, RmsNormOp,
          CrossEntropyOp, ReduceSumOp, ReduceMeanOp, ScatterAddOp>(op))
    return CastPolicy::Float32;
  // Explicit casts, constants and sources of fresh values keep their types.
  if (isa<CastOp, ConstantOp, OneHotOp, RecvOp, SendOp>(op))
    return CastPolicy::Keep;
  return CastPolicy::Promote;
}

FloatType floatElementOf(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s ? dyn_cast<FloatType>(s.getElementType()) : FloatType();
}

FloatType wider(FloatType a, FloatType b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return b.getWidth() > a.getWidth() ? b : a;
}

struct ZBAutocastPass : public zb::impl::ZBAutocastBase<ZBAutocastPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-autocast: no function named '") << function << "'";
      return signalPassFailure();
    }
    if (dtype != "bf16") {
      func.emitError("zb-autocast: dtype '")
          << dtype << "' is not supported (bf16 is)";
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("zb-autocast: expects a function of one block");
      return signalPassFailure();
    }
    if (failed(autocast(func)))
      return signalPassFailure();
  }

  LogicalResult autocast(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    FloatType low = BFloat16Type::get(ctx);
    FloatType f32 = Float32Type::get(ctx);
    Block &body = func.getBody().front();

    // Parameters exported in bfloat16 (PyTorch model.bfloat16(), JAX
    // bf16 params) become float32 master weights: their values widen
    // exactly (the driver writes params.bin in float32); each use reads a
    // cast by the policy below.
    SmallVector<Type> argTypes(func.getArgumentTypes());
    for (BlockArgument arg : body.getArguments()) {
      FloatType t = floatElementOf(arg.getType());
      if (!func.getArgAttr(arg.getArgNumber(), kParamAttr) || !t ||
          t.getWidth() >= 32)
        continue;
      Type master = cast<ShapedType>(arg.getType()).clone(f32);
      arg.setType(master);
      argTypes[arg.getArgNumber()] = master;
    }
    func.setFunctionType(
        FunctionType::get(ctx, argTypes, func.getFunctionType().getResults()));

    // Values computed from parameters and constants alone.
    llvm::DenseSet<Value> parameterOnly;
    for (BlockArgument arg : body.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr))
        parameterOnly.insert(arg);
    auto isConstant = [](Value v) {
      return v.getDefiningOp() && isa<ConstantOp>(v.getDefiningOp());
    };

    // One cast per (value, type), placed before its first user (the
    // function is one block: it dominates the later users).
    llvm::DenseMap<std::pair<Value, Type>, Value> casts;
    OpBuilder b(ctx);
    auto castTo = [&](Value v, FloatType to, Operation *user) -> Value {
      if (floatElementOf(v.getType()) == to)
        return v;
      auto key = std::make_pair(v, Type(to));
      if (Value c = casts.lookup(key))
        return c;
      b.setInsertionPoint(user);
      Value c = ZBBuilder(b, v.getLoc()).cast(v, to);
      casts[key] = c;
      return c;
    };

    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      bool fromParameters =
          op.getNumOperands() > 0 && llvm::all_of(op.getOperands(), [&](Value v) {
            return parameterOnly.contains(v) || isConstant(v);
          });
      CastPolicy policy = policyOf(&op);
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        for (unsigned i = 0; i < 3; ++i)
          op.setOperand(i, castTo(op.getOperand(i), low, &op));
        Value result = attention.getResult();
        result.setType(cast<ShapedType>(result.getType()).clone(low));
        // The softmax statistics in float32 (a model exported in bfloat16
        // has its softmax, hence lse, in bfloat16).
        Value lse = attention.getLse();
        lse.setType(cast<ShapedType>(lse.getType()).clone(f32));
        if (failed(verify(&op)))
          return op.emitError("zb-autocast: the op is not valid in ")
                 << low << " (the error above)";
        continue;
      }
      if (policy != CastPolicy::Keep || isa<CastOp>(op))
        if (fromParameters)
          for (Value r : op.getResults())
            parameterOnly.insert(r);
      if (policy == CastPolicy::Keep)
        continue;

      SmallVector<unsigned> floats;
      for (OpOperand &use : op.getOpOperands())
        if (floatElementOf(use.get().getType()))
          floats.push_back(use.getOperandNumber());
      if (floats.empty())
        continue;

      FloatType target;
      if (policy == CastPolicy::LowerPrecision) {
        target = low;
      } else if (policy == CastPolicy::Float32) {
        target = f32;
      } else {
        // The widest activation; else the widest non-constant; else keep.
        FloatType activations, others;
        for (unsigned i : floats) {
          Value v = op.getOperand(i);
          if (isConstant(v))
            continue;
          FloatType t = floatElementOf(v.getType());
          if (parameterOnly.contains(v))
            others = wider(others, t);
          else
            activations = wider(activations, t);
        }
        target = activations ? activations : others;
        if (!target)
          target = floatElementOf(op.getOperand(floats.front()).getType());
      }

      bool changed = false;
      for (unsigned i : floats) {
        Value v = op.getOperand(i);
        if (floatElementOf(v.getType()) == target)
          continue;
        op.setOperand(i, castTo(v, target, &op));
        changed = true;
      }
      for (OpResult r : op.getResults()) {
        FloatType t = floatElementOf(r.getType());
        if (!t || t == target)
          continue;
        r.setType(cast<ShapedType>(r.getType()).clone(target));
        changed = true;
      }
      if (changed && failed(verify(&op)))
        return op.emitError("zb-autocast: the op is not valid in ")
               << target << " (the error above)";
    }

    // The results keep the function's types (the loss stays float32),
    // except that a result narrower than float32 (the loss of a model
    // exported in bfloat16) becomes float32, as autocast's cross-entropy
    // returns it: the runtime reports and seeds a float32 loss.
    Operation *ret = body.getTerminator();
    FunctionType type = func.getFunctionType();
    SmallVector<Type> results(type.getResults());
    for (OpOperand &use : ret->getOpOperands()) {
      Type &want = results[use.getOperandNumber()];
      FloatType wantFloat = floatElementOf(want);
      if (wantFloat && wantFloat.getWidth() < 32) {
        wantFloat = f32;
        auto shaped = dyn_cast<ShapedType>(want);
        want = shaped ? Type(shaped.clone(f32)) : Type(f32);
      }
      if (use.get().getType() == want || !wantFloat)
        continue;
      use.set(castTo(use.get(), wantFloat, ret));
    }
    func.setFunctionType(FunctionType::get(ctx, type.getInputs(), results));
    return success();
  }
};

} // namespace
