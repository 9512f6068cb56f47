//===- ZBToRuntime.cpp - convert-zb-to-runtime ----------------------------===//
//
// The patterns of include/zb/Conversion/ZBToRuntime/ZBToRuntime.h: f32
// zb.matmul -> zbrt_sgemm_memref, zb.batch_matmul -> zbrt_sgemm_batched_memref
// (OpenBLAS on the CPU, cuBLAS on a GPU), bf16 ones -> zbrt_gemm_bf16[_batched]
// _memref (float32 accumulation), zb.send /
// zb.recv -> zbrt_{send,recv}_memref[_i64|_i32|_bf16] (MPI), on tensors before
// bufferization; and the pass. Function names come from zbrt/Symbols.h.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/ZBToRuntime/ZBToRuntime.h"
#include "../ConversionUtils.h"
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"

#include "zbrt/Symbols.h"

namespace zb {
#define GEN_PASS_DEF_CONVERTZBTORUNTIME
#include "zb/Conversion/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;
using conversion::FunctionPattern;
namespace sym = zbrt::symbols;

namespace {

//===-- Buffers and declarations ------------------------------------------===//

/// memref<?x...xT, strided<[?, ...], offset: ?>> of the given rank.
MemRefType dynamicStrided(MLIRContext *ctx, int64_t rank, Type elem) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(shape, elem, layout);
}

/// The buffer of tensor `t` as a memref of its static shape with a dynamic
/// strided layout (bufferization.to_buffer read_only).
Value stridedBufferOf(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> strides(tt.getRank(), ShapedType::kDynamic);
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  auto ty = MemRefType::get(tt.getShape(), tt.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, ty, t, /*read_only=*/true);
}

/// The buffer of `t` as a fully dynamic strided memref (the call argument).
Value bufferOf(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  return memref::CastOp::create(
      b, loc, dynamicStrided(b.getContext(), tt.getRank(), tt.getElementType()),
      stridedBufferOf(b, loc, t));
}

/// A fresh buffer of `type` and the same as a fully dynamic strided memref.
std::pair<Value, Value> allocForCall(OpBuilder &b, Location loc,
                                     MemRefType type) {
  Value buffer = memref::AllocOp::create(b, loc, type);
  Value arg = memref::CastOp::create(
      b, loc,
      dynamicStrided(b.getContext(), type.getRank(), type.getElementType()),
      buffer);
  return {buffer, arg};
}

/// The tensor of a buffer this conversion allocated and a call filled.
Value tensorOf(OpBuilder &b, Location loc, Value buffer) {
  auto mt = llvm::cast<MemRefType>(buffer.getType());
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(mt.getShape(), mt.getElementType()), buffer,
      /*restrict=*/true, /*writable=*/true);
}

Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

/// Declares `void name(args...)` (private, at the start of the module that
/// holds `user`) unless the module has it.
void declareRuntimeFunction(OpBuilder &b, Operation *user, StringRef name,
                            TypeRange args) {
  auto module = user->getParentOfType<ModuleOp>();
  if (module.lookupSymbol<func::FuncOp>(name))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name,
                                b.getFunctionType(args, {}));
  f.setPrivate();
}

//===-- Matmuls -----------------------------------------------------------===//

/// The runtime GEMMs: f32 (zbrt_sgemm_memref) and bf16 operands and result
/// with float32 accumulation (zbrt_gemm_bf16_memref, autocast's matmuls).
bool hasRuntimeGemm(RankedTensorType t) {
  return t.getElementType().isF32() || t.getElementType().isBF16();
}

/// The runtime function of a (batched) GEMM of `elem` operands.
const char *gemmFunction(Type elem, bool batched) {
  if (elem.isBF16())
    return batched ? sym::GemmBf16BatchedMemref : sym::GemmBf16Memref;
  return batched ? sym::SgemmBatchedMemref : sym::SgemmMemref;
}

/// C = op(A) op(B) into a fresh buffer, one zbrt_sgemm_memref call (or
/// zbrt_gemm_bf16_memref for bf16).
FailureOr<Value> lowerMatmul(OpBuilder &b, MatmulOp op, MatmulOp::Adaptor a) {
  if (!hasRuntimeGemm(op.getType()))
    return failure();
  Location loc = op.getLoc();
  Type elem = op.getType().getElementType();
  const char *function = gemmFunction(elem, /*batched=*/false);
  MemRefType mat = dynamicStrided(b.getContext(), 2, elem);
  Type i32 = b.getI32Type();
  declareRuntimeFunction(b, op, function, {mat, mat, mat, i32, i32});
  Value lhs = bufferOf(b, loc, a.getLhs());
  Value rhs = bufferOf(b, loc, a.getRhs());
  RankedTensorType rt = op.getType();
  auto [c, cArg] =
      allocForCall(b, loc, MemRefType::get(rt.getShape(), rt.getElementType()));
  func::CallOp::create(b, loc, function, TypeRange{},
                       ValueRange{lhs, rhs, cArg,
                                  i32Const(b, loc, op.getTransposeLhs()),
                                  i32Const(b, loc, op.getTransposeRhs())});
  return tensorOf(b, loc, c);
}

/// A rank-3 buffer as a fully dynamic strided memref (the runtime's ABI).
Value asDynamic3D(OpBuilder &b, Location loc, Value buffer) {
  auto bt = llvm::cast<MemRefType>(buffer.getType());
  return memref::CastOp::create(
      b, loc, dynamicStrided(b.getContext(), 3, bt.getElementType()), buffer);
}

/// The batch dims collapsed into one, then one zbrt_sgemm_batched_memref
/// call for all the matrices (one cublasSgemmStridedBatched on a GPU).
FailureOr<Value> lowerBatchMatmul(OpBuilder &b, BatchMatmulOp op,
                                  BatchMatmulOp::Adaptor a) {
  if (!hasRuntimeGemm(op.getType()))
    return failure();
  Location loc = op.getLoc();
  Type elem = op.getType().getElementType();
  const char *function = gemmFunction(elem, /*batched=*/true);
  MemRefType batched = dynamicStrided(b.getContext(), 3, elem);
  declareRuntimeFunction(b, op, function,
                         {batched, batched, batched, b.getI32Type(),
                          b.getI32Type()});
  Value lhs = stridedBufferOf(
      b, loc, conversion::collapseBatchDims(b, loc, a.getLhs()));
  Value rhs = stridedBufferOf(
      b, loc, conversion::collapseBatchDims(b, loc, a.getRhs()));
  RankedTensorType rt = op.getType();
  int64_t r = rt.getRank();
  int64_t batch = llvm::cast<MemRefType>(lhs.getType()).getDimSize(0);
  Value c = memref::AllocOp::create(
      b, loc,
      MemRefType::get({batch, rt.getDimSize(r - 2), rt.getDimSize(r - 1)},
                      rt.getElementType()));
  Value ta = i32Const(b, loc, op.getTransposeLhs());
  Value tb = i32Const(b, loc, op.getTransposeRhs());
  func::CallOp::create(b, loc, function, TypeRange{},
                       ValueRange{asDynamic3D(b, loc, lhs),
                                  asDynamic3D(b, loc, rhs),
                                  asDynamic3D(b, loc, c), ta, tb});
  return conversion::expandBatchDims(b, loc, tensorOf(b, loc, c), rt);
}

//===-- Communication -----------------------------------------------------===//

/// The runtime function that sends (or receives) a 1-D memref of `elem`;
/// null for an element type the runtime cannot transfer.
const char *commFunction(bool send, Type elem) {
  if (elem.isF32())
    return send ? sym::SendMemref : sym::RecvMemref;
  if (elem.isInteger(64))
    return send ? sym::SendMemrefI64 : sym::RecvMemrefI64;
  if (elem.isInteger(32))
    return send ? sym::SendMemrefI32 : sym::RecvMemrefI32;
  if (elem.isBF16())
    return send ? sym::SendMemrefBf16 : sym::RecvMemrefBf16;
  return nullptr;
}

/// Declares and calls `function(buffer, peer, tag)`.
void callComm(OpBuilder &b, Operation *op, const char *function, Value buffer,
              int64_t peer, int64_t tag) {
  Location loc = op->getLoc();
  declareRuntimeFunction(b, op, function,
                         {buffer.getType(), b.getI32Type(), b.getI32Type()});
  func::CallOp::create(
      b, loc, function, TypeRange{},
      ValueRange{buffer, i32Const(b, loc, peer), i32Const(b, loc, tag)});
}

/// The tensor flattened to 1-D and sent; no replacement values.
FailureOr<ValueRange> lowerSend(OpBuilder &b, SendOp op, SendOp::Adaptor a) {
  Type elem =
      llvm::cast<RankedTensorType>(a.getValue().getType()).getElementType();
  const char *function = commFunction(/*send=*/true, elem);
  if (!function)
    return op.emitOpError("can send f32, bf16, i64 and i32 tensors, not ") << elem;
  Value flat = conversion::flatten(b, op.getLoc(), a.getValue());
  callComm(b, op, function, bufferOf(b, op.getLoc(), flat), op.getPeer(),
           op.getTag());
  return ValueRange{};
}

/// A fresh 1-D buffer received into, reshaped to the result type.
FailureOr<Value> lowerRecv(OpBuilder &b, RecvOp op, RecvOp::Adaptor) {
  RankedTensorType rt = op.getType();
  Type elem = rt.getElementType();
  const char *function = commFunction(/*send=*/false, elem);
  if (!function)
    return op.emitOpError("can receive f32, bf16, i64 and i32 tensors, not ") << elem;
  Location loc = op.getLoc();
  auto [m, arg] =
      allocForCall(b, loc, MemRefType::get({rt.getNumElements()}, elem));
  callComm(b, op, function, arg, op.getPeer(), op.getTag());
  return conversion::unflatten(b, loc, tensorOf(b, loc, m), rt);
}

//===-- The pass ----------------------------------------------------------===//

struct ConvertZBToRuntimePass
    : conversion::ConversionPass<
          ConvertZBToRuntimePass, zb::impl::ConvertZBToRuntimeBase,
          configureZBToRuntimeConversionLegality, populateZBToRuntimePatterns> {
};

} // namespace

void zb::populateZBToRuntimeCommunicationPatterns(RewritePatternSet &patterns,
                                                  PatternBenefit benefit) {
  patterns.add<FunctionPattern<SendOp, lowerSend>,
               FunctionPattern<RecvOp, lowerRecv>>(patterns.getContext(),
                                                   benefit);
}

void zb::populateZBToRuntimeGemmPatterns(RewritePatternSet &patterns,
                                         PatternBenefit benefit) {
  patterns.add<FunctionPattern<MatmulOp, lowerMatmul>,
               FunctionPattern<BatchMatmulOp, lowerBatchMatmul>>(
      patterns.getContext(), benefit);
}

void zb::populateZBToRuntimePatterns(RewritePatternSet &patterns,
                                     PatternBenefit benefit) {
  populateZBToRuntimeCommunicationPatterns(patterns, benefit);
  populateZBToRuntimeGemmPatterns(patterns, benefit);
}

void zb::configureZBToRuntimeConversionLegality(ConversionTarget &target) {
  target
      .addLegalDialect<func::FuncDialect, memref::MemRefDialect,
                       bufferization::BufferizationDialect, arith::ArithDialect,
                       scf::SCFDialect, tensor::TensorDialect>();
  target.addIllegalOp<SendOp, RecvOp>();
  target.addDynamicallyLegalOp<MatmulOp>(
      [](MatmulOp op) { return !hasRuntimeGemm(op.getType()); });
  target.addDynamicallyLegalOp<BatchMatmulOp>(
      [](BatchMatmulOp op) { return !hasRuntimeGemm(op.getType()); });
}
