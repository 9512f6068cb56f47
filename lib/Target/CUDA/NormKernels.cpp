//===- NormKernels.cpp - one-kernel layer norm and RMS norm ---------------===//
//
// zb-gpu-norm-calls (tensor level: each float32 zb.layer_norm and
// zb.rms_norm, with the cast to a narrower float that may read it, becomes a
// call on buffers) and zb-gpu-norm-kernels (after gpu-kernel-outlining: each
// such call becomes the launch of one kernel, a warp per row: the row's sum
// and centred sum of squares reduced across the warp with shuffles, then
// the normalised row written once). Decomposed, a norm is five kernels that
// read the row five times (mean, centring, variance, normalisation and the
// cast); this kernel reads it three times from one warp (L1) and writes it
// once. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "KernelCalls.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUNORMCALLS
#define GEN_PASS_DEF_ZBGPUNORMKERNELS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb::gpu_calls;

namespace {

constexpr StringLiteral kNormPrefix = "__zb_gpu_norm_";
/// Rows per block (one per warp).
constexpr int64_t kWarps = 4;

//===-- zb-gpu-norm-calls -------------------------------------------------===//

/// The float32 norm `op` as a call: x [R, D], weight [D], bias [D] (layer
/// norm), y [R, D] in the type of the one cast that reads the result when
/// there is such a cast (it is then replaced), else float32.
void lowerNorm(ModuleOp module, SymbolTable &symbols, int64_t &next,
               Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  bool layer = isa<zb::LayerNormOp>(op);
  Value result = op->getResult(0);
  // A cast to a narrower float (autocast's bfloat16 copy for the next
  // GEMM) is written by the kernel instead.
  Value out = result;
  if (result.hasOneUse())
    if (auto cast = dyn_cast<zb::CastOp>(*result.getUsers().begin()))
      if (isa<FloatType>(cast.getType().getElementType()) &&
          cast.getType().getElementType().getIntOrFloatBitWidth() < 32)
        out = cast.getResult();
  SmallVector<Value> args = {readOnlyBuffer(b, loc, op->getOperand(0), 1),
                             readOnlyBuffer(b, loc, op->getOperand(1), 0)};
  if (layer)
    args.push_back(readOnlyBuffer(b, loc, op->getOperand(2), 0));
  auto xt = cast<MemRefType>(args[0].getType());
  auto outType = cast<RankedTensorType>(out.getType());
  Value y = memref::AllocOp::create(
      b, loc, MemRefType::get(xt.getShape(), outType.getElementType()));
  args.push_back(y);
  std::string name = declareCallee(module, symbols, next, kNormPrefix,
                                   ValueRange(args).getTypes(), loc);
  auto call = func::CallOp::create(b, loc, name, TypeRange{}, args);
  call->setAttr("zb.epsilon", op->getAttr("epsilon"));
  call->setAttr("zb.norm", b.getStringAttr(layer ? "layer" : "rms"));
  replaceByBuffer(b, loc, out, y, 1);
  if (out != result)
    out.getDefiningOp()->erase();
  op->erase();
}

/// Whether the kernel runs `op`: float32 input, weight, bias and result of
/// static shape, the input of rank >= 2 (rows; a single row is left to the
/// decomposition).
bool eligible(Operation *op) {
  if (!isa<zb::LayerNormOp, zb::RmsNormOp>(op))
    return false;
  for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                   op->getResultTypes())) {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || !rt.hasStaticShape() || !rt.getElementType().isF32())
      return false;
  }
  auto x = cast<RankedTensorType>(op->getOperand(0).getType());
  return x.getRank() >= 2 && x.getNumElements() > 0;
}

struct ZBGpuNormCallsPass
    : public zb::impl::ZBGpuNormCallsBase<ZBGpuNormCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (eligible(op))
        ops.push_back(op);
    });
    SymbolTable symbols(module);
    int64_t next = 0;
    for (Operation *op : ops)
      lowerNorm(module, symbols, next, op);
  }
};

//===-- zb-gpu-norm-kernels -----------------------------------------------===//

/// The body of the norm kernel (arguments x, weight, [bias,] y): warp w of
/// block b normalises row min(4 b + w, R - 1); lane l reads the columns
/// l, l + 32, ... (a column past D as column D - 1, counted as 0 in the
/// sums and written again with its own value).
void buildNormBody(gpu::GPUFuncOp kernel, int64_t rows, int64_t d,
                   double epsilon, bool layer) {
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  Location loc = kernel.getLoc();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto f = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value x = kernel.getArgument(0), w = kernel.getArgument(1);
  Value bias = layer ? kernel.getArgument(2) : Value();
  Value y = kernel.getArgument(layer ? 3 : 2);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  Value row = arith::MinUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc,
                            arith::MulIOp::create(b, loc, block, idx(kWarps)),
                            warp),
      idx(rows - 1));
  const int64_t steps = (d + 31) / 32;

  // One pass over the lane's columns: `body(col, inRange, x)` for each.
  auto overColumns = [&](ValueRange init,
                         function_ref<SmallVector<Value>(Value, Value, Value,
                                                         ValueRange)>
                             body) {
    auto loop = scf::ForOp::create(b, loc, idx(0), idx(steps), idx(1), init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value col = arith::AddIOp::create(
        b, loc, lane,
        arith::MulIOp::create(b, loc, loop.getInductionVar(), idx(32)));
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          col, idx(d));
    col = arith::MinUIOp::create(b, loc, col, idx(d - 1));
    Value xv = memref::LoadOp::create(b, loc, x, ValueRange{row, col});
    SmallVector<Value> next = body(col, inRange, xv, loop.getRegionIterArgs());
    // Without loop-carried values the builder made the scf.yield already
    // (the body went before it).
    if (!init.empty())
      scf::YieldOp::create(b, loc, next);
    return loop.getResults();
  };
  // The sum over the warp (xor 16, 8, 4, 2, 1: every lane gets it).
  auto warpSum = [&](Value v) {
    Value width = arith::ConstantIntOp::create(b, loc, i32, 32);
    for (int64_t offset : {16, 8, 4, 2, 1}) {
      Value o = arith::ConstantIntOp::create(b, loc, i32, offset);
      Value other = gpu::ShuffleOp::create(b, loc, v, o, width,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      v = arith::AddFOp::create(b, loc, v, other);
    }
    return v;
  };
  auto masked = [&](Value inRange, Value v) -> Value {
    return arith::SelectOp::create(b, loc, inRange, v, f(0));
  };
  Value invD = f(1.0 / static_cast<double>(d));
  Value mean = f(0);
  if (layer) {
    Value sum = overColumns(
        {f(0)}, [&](Value, Value inRange, Value xv, ValueRange acc) {
          return SmallVector<Value>{
              arith::AddFOp::create(b, loc, acc[0], masked(inRange, xv))};
        })[0];
    mean = arith::MulFOp::create(b, loc, warpSum(sum), invD);
  }
  // Layer norm: the centred sum of squares; RMS norm: the sum of squares.
  Value squares = overColumns(
      {f(0)}, [&](Value, Value inRange, Value xv, ValueRange acc) {
        Value c = layer ? Value(arith::SubFOp::create(b, loc, xv, mean)) : xv;
        Value sq = arith::MulFOp::create(b, loc, c, c);
        return SmallVector<Value>{
            arith::AddFOp::create(b, loc, acc[0], masked(inRange, sq))};
      })[0];
  Value var = arith::MulFOp::create(b, loc, warpSum(squares), invD);
  // 1 / sqrt, as the decomposition computes zb.rsqrt (the CPU emulation
  // has no rsqrtf).
  Value rstd = arith::DivFOp::create(
      b, loc, f(1),
      math::SqrtOp::create(b, loc,
                           arith::AddFOp::create(b, loc, var, f(epsilon))));
  Type outElem = cast<MemRefType>(y.getType()).getElementType();
  overColumns({}, [&](Value col, Value, Value xv, ValueRange) {
    Value c = layer ? Value(arith::SubFOp::create(b, loc, xv, mean)) : xv;
    Value v = arith::MulFOp::create(b, loc, c, rstd);
    v = arith::MulFOp::create(
        b, loc, v, memref::LoadOp::create(b, loc, w, ValueRange{col}));
    if (layer)
      v = arith::AddFOp::create(
          b, loc, v, memref::LoadOp::create(b, loc, bias, ValueRange{col}));
    if (outElem != f32)
      v = arith::TruncFOp::create(b, loc, outElem, v);
    memref::StoreOp::create(b, loc, v, y, ValueRange{row, col});
    return SmallVector<Value>{};
  });
  gpu::ReturnOp::create(b, loc);
}

struct ZBGpuNormKernelsPass
    : public zb::impl::ZBGpuNormKernelsBase<ZBGpuNormKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee().starts_with(kNormPrefix))
        calls.push_back(call);
    });
    SymbolTable symbols(module);
    int64_t next = 0;
    for (func::CallOp call : calls) {
      Location loc = call.getLoc();
      auto kind = call->getAttrOfType<StringAttr>("zb.norm");
      auto eps = call->getAttrOfType<FloatAttr>("zb.epsilon");
      bool layer = kind && kind.getValue() == "layer";
      unsigned arity = layer ? 4 : 3;
      auto types = call.getOperandTypes();
      auto memref = [&](unsigned i) {
        return i < types.size() ? dyn_cast<MemRefType>(types[i])
                                : MemRefType();
      };
      bool valid = kind && (layer || kind.getValue() == "rms") && eps &&
                   call.getNumOperands() == arity;
      for (unsigned i = 0; valid && i < arity; ++i)
        valid = memref(i) && memref(i).hasStaticShape();
      int64_t rows = 0, d = 0;
      if (valid) {
        MemRefType x = memref(0), out = memref(arity - 1);
        rows = x.getRank() == 2 ? x.getDimSize(0) : 0;
        d = x.getRank() == 2 ? x.getDimSize(1) : 0;
        valid = rows > 0 && d > 0 && x.getElementType().isF32() &&
                out.getShape() == x.getShape() &&
                isa<FloatType>(out.getElementType());
        for (unsigned i = 1; valid && i + 1 < arity; ++i)
          valid = memref(i).getRank() == 1 && memref(i).getDimSize(0) == d &&
                  memref(i).getElementType().isF32();
      }
      if (!valid) {
        call.emitError("zb-gpu-norm-kernels: expected a call of "
                       "zb-gpu-norm-calls (zb.norm \"layer\" with x [R, D], "
                       "weight [D], bias [D], y [R, D], or \"rms\" without "
                       "bias; float32 static memrefs; zb.epsilon)");
        return signalPassFailure();
      }
      auto parent = call->getParentOfType<func::FuncOp>();
      int64_t blocks = (rows + kWarps - 1) / kWarps;
      auto kernel = createKernel(module, symbols, next, parent, "norm", types,
                                 blocks, 1, kWarps * 32, "row-norm", loc);
      buildNormBody(kernel, rows, d, eps.getValueAsDouble(), layer);
      launchBefore(call, kernel);
      eraseCall(module, symbols, call);
    }
  }
};

} // namespace
