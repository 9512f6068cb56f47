//===- ZBToRuntime.cpp - convert-zb-to-runtime ----------------------------===//
//
// zb.matmul (f32) -> zbrt_sgemm_memref (OpenBLAS), zb.batch_matmul (f32) ->
// an scf.for over the batch calling zbrt_sgemm_memref on 2-D subviews,
// zb.send / zb.recv ->
// zbrt_send_memref / zbrt_recv_memref (MPI). Runs on tensors before
// bufferization: buffers enter the calls as memrefs with a fully dynamic
// strided layout, so any buffer the bufferizer picks can be passed without a
// copy and the calls are real uses for buffer deallocation.
//
//===----------------------------------------------------------------------===//
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace zb {
#define GEN_PASS_DEF_CONVERTZBTORUNTIME
#include "zb/Conversion/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

/// memref<?x...xT, strided<[?, ...], offset: ?>> of the given rank.
static MemRefType dynamicStrided(MLIRContext *ctx, int64_t rank, Type elem) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout =
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(shape, elem, layout);
}

/// The buffer of `t` as a dynamically shaped strided memref.
static Value bufferOf(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> strides(tt.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       strides);
  auto staticTy = MemRefType::get(tt.getShape(), tt.getElementType(), layout);
  Value m = bufferization::ToBufferOp::create(b, loc, staticTy, t,
                                              /*read_only=*/true);
  return memref::CastOp::create(
      b, loc, dynamicStrided(b.getContext(), tt.getRank(), tt.getElementType()),
      m);
}

/// Flattens a tensor of any rank to 1-D (rank 0 becomes tensor<1xT>).
static Value flatten(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  auto flatTy = RankedTensorType::get({tt.getNumElements()},
                                      tt.getElementType());
  if (tt.getRank() == 1)
    return t;
  if (tt.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatTy, t,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < tt.getRank(); ++i)
    all.push_back(i);
  return tensor::CollapseShapeOp::create(b, loc, flatTy, t,
                                         ArrayRef<ReassociationIndices>{all});
}

/// Inverse of flatten: reshapes a 1-D tensor to `ty`.
static Value unflatten(OpBuilder &b, Location loc, Value flat,
                       RankedTensorType ty) {
  if (ty.getRank() == 1)
    return flat;
  if (ty.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, ty, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < ty.getRank(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, ty, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

/// Collapses the batch dimensions of a rank >= 3 tensor into one.
static Value collapseBatch(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  int64_t r = tt.getRank();
  if (r == 3)
    return t;
  int64_t batch = 1;
  ReassociationIndices lead;
  for (int64_t d = 0; d < r - 2; ++d) {
    batch *= tt.getDimSize(d);
    lead.push_back(d);
  }
  auto ty = RankedTensorType::get(
      {batch, tt.getDimSize(r - 2), tt.getDimSize(r - 1)}, tt.getElementType());
  return tensor::CollapseShapeOp::create(
      b, loc, ty, t, ArrayRef<ReassociationIndices>{lead, {r - 2}, {r - 1}});
}

/// The buffer of a rank-3 tensor as memref<BxMxK, strided<[?, ?, ?], offset: ?>>.
static Value stridedBufferOf(OpBuilder &b, Location loc, Value t) {
  auto tt = llvm::cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> strides(tt.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       strides);
  auto ty = MemRefType::get(tt.getShape(), tt.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, ty, t, /*read_only=*/true);
}

/// Matrix `i` of a rank-3 buffer, as a fully dynamic strided 2-D memref.
static Value matrixOf(OpBuilder &b, Location loc, Value buffer, Value i,
                      MemRefType mat) {
  auto bt = llvm::cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets{i, b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1),
                                  b.getIndexAttr(bt.getDimSize(1)),
                                  b.getIndexAttr(bt.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  MemRefType viewTy = memref::SubViewOp::inferRankReducedResultType(
      {bt.getDimSize(1), bt.getDimSize(2)}, bt, offsets, sizes, strides);
  Value view =
      memref::SubViewOp::create(b, loc, viewTy, buffer, offsets, sizes, strides);
  return memref::CastOp::create(b, loc, mat, view);
}

/// The runtime's send/recv entry for an element type: `base` for f32,
/// base + "_i64" / "_i32" for integers, "" when unsupported.
static StringRef commFunction(StringRef base, Type elem) {
  bool send = base.contains("send");
  if (elem.isF32())
    return base;
  if (elem.isInteger(64))
    return send ? "zbrt_send_memref_i64" : "zbrt_recv_memref_i64";
  if (elem.isInteger(32))
    return send ? "zbrt_send_memref_i32" : "zbrt_recv_memref_i32";
  return "";
}

static void declare(ModuleOp module, StringRef name, TypeRange args) {
  if (module.lookupSymbol<func::FuncOp>(name))
    return;
  OpBuilder b(module.getContext());
  b.setInsertionPointToStart(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name,
                                b.getFunctionType(args, {}));
  f.setPrivate();
}

namespace {
struct ConvertZBToRuntimePass
    : public zb::impl::ConvertZBToRuntimeBase<ConvertZBToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    MemRefType mat = dynamicStrided(ctx, 2, f32);

    SmallVector<Operation *> work;
    module.walk([&](Operation *op) {
      if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
        if (mm.getType().getElementType().isF32())
          work.push_back(op);
      } else if (auto bmm = llvm::dyn_cast<BatchMatmulOp>(op)) {
        if (bmm.getType().getElementType().isF32())
          work.push_back(op);
      } else if (llvm::isa<SendOp, RecvOp>(op)) {
        work.push_back(op);
      }
    });
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      auto i32c = [&](int64_t v) -> Value {
        return arith::ConstantIntOp::create(b, loc, v, 32);
      };
      if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
        declare(module, "zbrt_sgemm_memref", {mat, mat, mat, i32, i32});
        Value a = bufferOf(b, loc, mm.getLhs());
        Value bb = bufferOf(b, loc, mm.getRhs());
        RankedTensorType rt = mm.getType();
        Value c = memref::AllocOp::create(
            b, loc, MemRefType::get(rt.getShape(), rt.getElementType()));
        Value cd = memref::CastOp::create(b, loc, mat, c);
        func::CallOp::create(
            b, loc, "zbrt_sgemm_memref", TypeRange{},
            ValueRange{a, bb, cd, i32c(mm.getTransposeLhs() ? 1 : 0),
                       i32c(mm.getTransposeRhs() ? 1 : 0)});
        Value t = bufferization::ToTensorOp::create(b, loc, rt, c,
                                                    /*restrict=*/true,
                                                    /*writable=*/true);
        mm.getResult().replaceAllUsesWith(t);
        mm.erase();
        continue;
      }
      if (auto mm = llvm::dyn_cast<BatchMatmulOp>(op)) {
        declare(module, "zbrt_sgemm_memref", {mat, mat, mat, i32, i32});
        Value a = stridedBufferOf(b, loc, collapseBatch(b, loc, mm.getLhs()));
        Value bb = stridedBufferOf(b, loc, collapseBatch(b, loc, mm.getRhs()));
        RankedTensorType rt = mm.getType();
        int64_t r = rt.getRank();
        int64_t batch = llvm::cast<MemRefType>(a.getType()).getDimSize(0);
        auto c3Ty = MemRefType::get(
            {batch, rt.getDimSize(r - 2), rt.getDimSize(r - 1)}, f32);
        Value c = memref::AllocOp::create(b, loc, c3Ty);
        Value ta = i32c(mm.getTransposeLhs() ? 1 : 0);
        Value tb = i32c(mm.getTransposeRhs() ? 1 : 0);
        Value lb = arith::ConstantIndexOp::create(b, loc, 0);
        Value ub = arith::ConstantIndexOp::create(b, loc, batch);
        Value step = arith::ConstantIndexOp::create(b, loc, 1);
        scf::ForOp::create(
            b, loc, lb, ub, step, ValueRange{},
            [&](OpBuilder &lb2, Location l, Value iv, ValueRange) {
              func::CallOp::create(
                  lb2, l, "zbrt_sgemm_memref", TypeRange{},
                  ValueRange{matrixOf(lb2, l, a, iv, mat),
                             matrixOf(lb2, l, bb, iv, mat),
                             matrixOf(lb2, l, c, iv, mat), ta, tb});
              scf::YieldOp::create(lb2, l);
            });
        Value t = bufferization::ToTensorOp::create(
            b, loc, RankedTensorType::get(c3Ty.getShape(), f32), c,
            /*restrict=*/true, /*writable=*/true);
        if (r != 3) {
          ReassociationIndices lead;
          for (int64_t d = 0; d < r - 2; ++d)
            lead.push_back(d);
          t = tensor::ExpandShapeOp::create(
              b, loc, rt, t,
              ArrayRef<ReassociationIndices>{lead, {r - 2}, {r - 1}});
        }
        mm.getResult().replaceAllUsesWith(t);
        mm.erase();
        continue;
      }
      if (auto send = llvm::dyn_cast<SendOp>(op)) {
        auto tt = llvm::cast<RankedTensorType>(send.getValue().getType());
        StringRef fn = commFunction("zbrt_send_memref", tt.getElementType());
        if (fn.empty()) {
          send.emitOpError("can send f32, i64 and i32 tensors, not ")
              << tt.getElementType();
          return signalPassFailure();
        }
        declare(module, fn,
                {dynamicStrided(ctx, 1, tt.getElementType()), i32, i32});
        Value m = bufferOf(b, loc, flatten(b, loc, send.getValue()));
        func::CallOp::create(b, loc, fn, TypeRange{},
                             ValueRange{m, i32c(send.getPeer()),
                                        i32c(send.getTag())});
        send.erase();
        continue;
      }
      auto recv = llvm::cast<RecvOp>(op);
      RankedTensorType rt = recv.getType();
      Type elem = rt.getElementType();
      StringRef fn = commFunction("zbrt_recv_memref", elem);
      if (fn.empty()) {
        recv.emitOpError("can receive f32, i64 and i32 tensors, not ")
            << elem;
        return signalPassFailure();
      }
      MemRefType vecTy = dynamicStrided(ctx, 1, elem);
      declare(module, fn, {vecTy, i32, i32});
      auto flatTy = MemRefType::get({rt.getNumElements()}, elem);
      Value m = memref::AllocOp::create(b, loc, flatTy);
      Value md = memref::CastOp::create(b, loc, vecTy, m);
      func::CallOp::create(b, loc, fn, TypeRange{},
                           ValueRange{md, i32c(recv.getPeer()),
                                      i32c(recv.getTag())});
      Value t = bufferization::ToTensorOp::create(
          b, loc, RankedTensorType::get({rt.getNumElements()}, elem), m,
          /*restrict=*/true, /*writable=*/true);
      recv.getResult().replaceAllUsesWith(unflatten(b, loc, t, rt));
      recv.erase();
    }
  }
};
} // namespace
