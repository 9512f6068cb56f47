//===- AttentionKernels.cpp - the fused attention kernels -----------------===//
//
// zb-gpu-attention-calls (tensor level: each zb.attention and
// zb.attention_grad the kernels can run becomes a call on buffers) and
// zb-gpu-attention-kernels (after gpu-kernel-outlining: each such call
// becomes the launches of FlashAttention-2's kernels, Dao 2023, Algorithm 1
// for the forward, Algorithm 2 split by output for the backward, on tensor
// cores through nvvm.mma.sync). See Passes.td.
//
// Fragment layouts of mma.sync.m16n8k16 (PTX ISA, "Matrix fragments for
// mma.m16n8k16 with floating point type"), for lane l of a warp with
// g = l / 4 and t = l % 4 (each A/B register holds two bfloat16, the first
// in the low half):
//   A (16 x 16, row major): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..),
//                           a3 (g+8, 2t+8..)
//   B (16 x 8, k x n):      b0 (k = 2t..2t+1, n = g), b1 (k = 2t+8.., n = g)
//   C, D (16 x 8, float):   c0, c1 (g, 2t, 2t+1), c2, c3 (g+8, 2t, 2t+1)
// zb-gpu-emulate's lock-step emulation of nvvm.mma.sync uses the same.
//
//===----------------------------------------------------------------------===//
#include "KernelCalls.h"
#include "zb/Target/CUDA/Passes.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/HeadViews.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"

#include <limits>

namespace zb {
#define GEN_PASS_DEF_ZBGPUATTENTIONCALLS
#define GEN_PASS_DEF_ZBGPUATTENTIONKERNELS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb::gpu_calls;

namespace {

constexpr StringLiteral kCalleePrefix = "__zb_gpu_attention_forward_";
constexpr StringLiteral kBackwardPrefix = "__zb_gpu_attention_backward_";
/// Query rows per block (16 per warp) and keys per iteration.
constexpr int64_t kRowsPerWarp = 16, kWarps = 4, kKeyBlock = 64;
/// bfloat16 elements after each row of a block staged in workgroup memory:
/// rows 2 D + 16 bytes apart, so that the 8 rows (g) and 4 column pairs (t)
/// of a B fragment fall in 32 different banks.
constexpr int64_t kPad = 8;

//===-- zb-gpu-attention-calls --------------------------------------------===//

/// Why the kernels cannot read `mask` (empty when they can, or no mask):
/// a static mask of float32, bfloat16 or float16, read as it is (each
/// dimension that of S or 1).
std::string ineligibleMask(Value mask) {
  if (!mask)
    return "";
  auto m = cast<RankedTensorType>(mask.getType());
  if (!m.hasStaticShape())
    return "has a mask of dynamic shape";
  if (!m.getElementType().isF32() && !m.getElementType().isBF16() &&
      !m.getElementType().isF16())
    return "has a mask that is not float32, bfloat16 or float16";
  return "";
}

/// Why the kernel cannot run `op` (empty when it can).
std::string ineligible(zb::AttentionOp op) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  auto lse = cast<RankedTensorType>(op.getLse().getType());
  if (std::string why = ineligibleMask(op.getMask()); !why.empty())
    return why;
  if (!q.getElementType().isBF16() || !k.getElementType().isBF16() ||
      !v.getElementType().isBF16() ||
      !op.getResult().getType().getElementType().isBF16())
    return "is not bfloat16";
  if (!lse.getElementType().isF32())
    return "has a lse that is not float32";
  if (!q.hasStaticShape() || !k.hasStaticShape() || !v.hasStaticShape())
    return "has a dynamic shape";
  int64_t r = q.getRank();
  int64_t d = q.getDimSize(r - 1), dv = v.getDimSize(r - 1);
  if (d % 16 || dv % 16 || d > 128 || dv > 128 || d == 0 || dv == 0)
    return "has head dimensions other than multiples of 16 up to 128";
  return "";
}

/// Why the backward kernels cannot run `op` (empty when they can).
std::string ineligible(zb::AttentionGradOp op) {
  if (std::string why = ineligibleMask(op.getMask()); !why.empty())
    return why;
  for (Value v : {op.getQuery(), op.getKey(), op.getValue(), op.getResult(),
                  op.getResultGrad(), op.getQueryGrad(), op.getKeyGrad(),
                  op.getValueGrad()})
    if (!cast<RankedTensorType>(v.getType()).getElementType().isBF16())
      return "is not bfloat16";
  if (!op.getLse().getType().getElementType().isF32() ||
      (op.getLseGrad() &&
       !cast<RankedTensorType>(op.getLseGrad().getType())
            .getElementType()
            .isF32()))
    return "has a lse that is not float32";
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  if (!q.hasStaticShape() || !v.hasStaticShape() ||
      !cast<RankedTensorType>(op.getKey().getType()).hasStaticShape())
    return "has a dynamic shape";
  int64_t d = q.getDimSize(q.getRank() - 1), dv = v.getDimSize(v.getRank() - 1);
  if (d % 16 || dv % 16 || d > 128 || dv > 128 || d == 0 || dv == 0)
    return "has head dimensions other than multiples of 16 up to 128";
  return "";
}

/// The operands and attributes every attention call ends with: the mask's
/// buffer as it is (all of its dimensions) last with `zb.mask`, and
/// `zb.batch_dims`, the scores' leading dimensions that the kernels'
/// (batch x head) index runs over (to find the mask's element).
void appendMask(OpBuilder &b, Location loc, Value mask,
                SmallVectorImpl<Value> &args) {
  if (!mask)
    return;
  auto mt = cast<RankedTensorType>(mask.getType());
  args.push_back(readOnlyBuffer(b, loc, mask, mt.getRank() - 1));
}
void setCallAttrs(OpBuilder &b, func::CallOp call, FloatAttr scale,
                  bool causal, Value mask, Value query) {
  call->setAttr("zb.scale", scale);
  if (causal)
    call->setAttr("zb.causal", b.getUnitAttr());
  if (!mask)
    return;
  call->setAttr("zb.mask", b.getUnitAttr());
  ArrayRef<int64_t> shape = cast<RankedTensorType>(query.getType()).getShape();
  call->setAttr("zb.batch_dims",
                b.getDenseI64ArrayAttr(shape.drop_back(2)));
}

/// Where the kernels read or write the [B, H, T, D] tensors of one call
/// (q, k, v, o; then dO, dq, dk, dv for the backward): in the call's
/// `zb.layout`, -1 for a [B H, T, D] buffer of the tensor itself, or the
/// column at which its heads start in a token-major [B T, W] buffer (HeadView,
/// zb/Transforms/HeadViews.h: the tensor the exporter's transpose and
/// reshape are views of, read or written in place).
struct Layouts {
  int64_t batch = 0, heads = 0;
  SmallVector<int64_t> columns;
  bool any() const {
    return llvm::any_of(columns, [](int64_t c) { return c >= 0; });
  }
  /// Whether a token-major tensor of `rows` x `width` can hold heads of
  /// `t` [B, H, T, D] at column `column`: the same B and H as the call's
  /// query, rows B T, 16-byte rows and heads (the kernels' 128-bit
  /// accesses).
  bool fits(RankedTensorType t, RankedTensorType x, int64_t column) const {
    if (t.getRank() != 4 || x.getRank() < 2 || !x.hasStaticShape())
      return false;
    int64_t width = x.getDimSize(x.getRank() - 1);
    return t.getDimSize(0) == batch && t.getDimSize(1) == heads &&
           x.getNumElements() / width == batch * t.getDimSize(2) &&
           width % 8 == 0 && column % 8 == 0 &&
           column + heads * t.getDimSize(3) <= width;
  }
  void setOn(OpBuilder &b, func::CallOp call, RankedTensorType q,
             RankedTensorType k, RankedTensorType v) const {
    if (!any())
      return;
    call->setAttr("zb.layout", b.getDenseI64ArrayAttr(columns));
    call->setAttr("zb.shape",
                  b.getDenseI64ArrayAttr({batch, heads, q.getDimSize(2),
                                          k.getDimSize(2), q.getDimSize(3),
                                          v.getDimSize(3)}));
  }
};

/// Erases `ops` (a view chain in dataflow order) from the last while
/// unused.
void eraseUnused(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty())
      op->erase();
}

/// The buffer the kernels read the [B, H, T, D] input `t` from: the
/// token-major tensor of its head view when it has one the kernels can
/// address (its column into `layouts`), else t's own [B H, T, D] (-1).
Value inputBuffer(OpBuilder &b, Location loc, Value t, Layouts &layouts,
                  SmallVectorImpl<Operation *> &views) {
  auto tt = cast<RankedTensorType>(t.getType());
  std::optional<zb::HeadView> view = zb::matchHeadView(t);
  if (layouts.heads && view &&
      layouts.fits(tt, cast<RankedTensorType>(view->source.getType()),
                   view->offset)) {
    layouts.columns.push_back(view->offset);
    views.append(view->ops.begin(), view->ops.end());
    return readOnlyBuffer(b, loc, view->source, 1);
  }
  layouts.columns.push_back(-1);
  return readOnlyBuffer(b, loc, t, 2);
}

/// The buffers the kernels write the [B, H, T, D] `results` to, replacing
/// them: where a result's only use is the transpose and reshape back to
/// the token-major layout (matchMergedHeads), a [B T, H D] buffer replacing
/// that reshape, and one [B T, W] buffer for a zb.concat on the last axis
/// of several such results; else a [B H, T, D] buffer of the result's own.
/// Their columns are appended to `layouts`. `finish`, after the call that
/// writes them, replaces the views' results and erases the views.
struct OutputBuffers {
  SmallVector<Value> buffers;
  /// (the token-major value a buffer replaces, the buffer)
  SmallVector<std::pair<Value, Value>> replaced;
  SmallVector<Operation *> views;

  void finish(OpBuilder &b, Location loc) {
    for (auto [value, buffer] : replaced)
      replaceByBuffer(b, loc, value, buffer, 1);
    eraseUnused(views);
  }
};
OutputBuffers outputBuffers(OpBuilder &b, Location loc, ValueRange results,
                            Layouts &layouts) {
  OutputBuffers out;
  SmallVector<Operation *> &views = out.views;
  SmallVector<Value> buffers(results.size());
  SmallVector<int64_t> columns(results.size(), -1);
  SmallVector<Value> merged(results.size());
  for (auto [i, r] : llvm::enumerate(results))
    if (layouts.heads)
      merged[i] = zb::matchMergedHeads(r);
  // A concat of merged results on its last axis: one buffer for all.
  for (auto [i, m] : llvm::enumerate(merged)) {
    if (!m || buffers[i] || !m.hasOneUse())
      continue;
    auto concat = dyn_cast<zb::ConcatOp>(*m.user_begin());
    auto ct = concat ? cast<RankedTensorType>(concat.getType())
                     : RankedTensorType();
    if (!ct || static_cast<int64_t>(concat.getAxis()) != ct.getRank() - 1)
      continue;
    SmallVector<std::pair<size_t, int64_t>> parts; // (result, column)
    int64_t column = 0;
    for (Value in : concat.getInputs()) {
      auto *it = llvm::find(merged, in);
      size_t j = it - merged.begin();
      if (it == merged.end() || !in.hasOneUse() ||
          !layouts.fits(cast<RankedTensorType>(results[j].getType()), ct,
                        column))
        break;
      parts.push_back({j, column});
      column += cast<RankedTensorType>(in.getType()).getDimSize(ct.getRank() - 1);
    }
    if (parts.size() != concat.getInputs().size())
      continue;
    int64_t width = ct.getDimSize(ct.getRank() - 1);
    Value buffer = memref::AllocOp::create(
        b, loc,
        MemRefType::get({ct.getNumElements() / width, width},
                        ct.getElementType()));
    for (auto [j, c] : parts) {
      buffers[j] = buffer;
      columns[j] = c;
      views.push_back(merged[j].getDefiningOp()->getOperand(0).getDefiningOp());
      views.push_back(merged[j].getDefiningOp());
    }
    out.replaced.push_back({concat.getResult(), buffer});
    views.push_back(concat);
  }
  for (auto [i, r] : llvm::enumerate(results)) {
    if (buffers[i])
      continue;
    auto rt = cast<RankedTensorType>(r.getType());
    if (Value m = merged[i];
        m && layouts.fits(rt, cast<RankedTensorType>(m.getType()), 0)) {
      auto mt = cast<RankedTensorType>(m.getType());
      int64_t width = mt.getDimSize(mt.getRank() - 1);
      buffers[i] = memref::AllocOp::create(
          b, loc,
          MemRefType::get({mt.getNumElements() / width, width},
                          mt.getElementType()));
      columns[i] = 0;
      out.replaced.push_back({m, buffers[i]});
      views.push_back(m.getDefiningOp()->getOperand(0).getDefiningOp());
      views.push_back(m.getDefiningOp());
      continue;
    }
    int64_t lead = rt.getNumElements() /
                   (rt.getDimSize(rt.getRank() - 2) * rt.getDimSize(rt.getRank() - 1));
    buffers[i] = memref::AllocOp::create(
        b, loc,
        MemRefType::get({lead, rt.getDimSize(rt.getRank() - 2),
                         rt.getDimSize(rt.getRank() - 1)},
                        rt.getElementType()));
  }
  llvm::append_range(layouts.columns, columns);
  out.buffers = std::move(buffers);
  return out;
}

/// The call's batch and heads when its query is [B, H, T, D] and
/// `tokenMajor` (token-major buffers possible), else none.
Layouts layoutsFor(Value query, bool tokenMajor) {
  Layouts l;
  auto qt = cast<RankedTensorType>(query.getType());
  if (tokenMajor && qt.getRank() == 4) {
    l.batch = qt.getDimSize(0);
    l.heads = qt.getDimSize(1);
  }
  return l;
}

/// zb.attention_grad -> __zb_gpu_attention_backward_N(q, k, v, o, lse, dO,
/// [lse_grad,] dq, dk, dv, di[, mask]) with `zb.scale`, `zb.causal`,
/// `zb.lse_grad` (when the lse_grad operand is there) and, where some of
/// the eight [B, H, T, D] tensors are token-major buffers, `zb.layout` and
/// `zb.shape` (Layouts); `di` is a float32 scratch buffer [BH, Tq] for
/// rowsum(dO * O) (- lse_grad).
void lowerBackward(ModuleOp module, SymbolTable &symbols, int64_t &next,
                   zb::AttentionGradOp op, bool tokenMajor) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Layouts layouts = layoutsFor(op.getQuery(), tokenMajor);
  SmallVector<Operation *> views;
  auto input = [&](Value t) { return inputBuffer(b, loc, t, layouts, views); };
  SmallVector<Value> args = {input(op.getQuery()), input(op.getKey()),
                             input(op.getValue()), input(op.getResult()),
                             readOnlyBuffer(b, loc, op.getLse(), 1)};
  Value dO = input(op.getResultGrad());
  args.push_back(dO);
  if (op.getLseGrad())
    args.push_back(readOnlyBuffer(b, loc, op.getLseGrad(), 1));
  Value results[3] = {op.getQueryGrad(), op.getKeyGrad(), op.getValueGrad()};
  OutputBuffers outputs = outputBuffers(b, loc, results, layouts);
  SmallVector<Value> &grads = outputs.buffers;
  auto qt = cast<RankedTensorType>(op.getQuery().getType());
  int64_t tq = qt.getDimSize(qt.getRank() - 2);
  Value di = memref::AllocOp::create(
      b, loc, MemRefType::get({qt.getNumElements() / (tq * qt.getDimSize(qt.getRank() - 1)), tq},
                              b.getF32Type()));
  llvm::append_range(args, grads);
  args.push_back(di);
  appendMask(b, loc, op.getMask(), args);
  std::string name =
      declareCallee(module, symbols, next, kBackwardPrefix,
                    ValueRange(args).getTypes(), loc);
  auto call = func::CallOp::create(b, loc, name, TypeRange{}, args);
  setCallAttrs(b, call, op.getScaleAttr(), op.getCausal(), op.getMask(),
               op.getQuery());
  layouts.setOn(b, call, qt, cast<RankedTensorType>(op.getKey().getType()),
                cast<RankedTensorType>(op.getValue().getType()));
  if (op.getLseGrad())
    call->setAttr("zb.lse_grad", b.getUnitAttr());
  for (int64_t i = 0; i < 3; ++i)
    if (layouts.columns[5 + i] < 0)
      replaceByBuffer(b, loc, results[i], grads[i], 2);
  outputs.finish(b, loc);
  op.erase();
  eraseUnused(views);
}

/// zb.attention -> __zb_gpu_attention_forward_N(q, k, v, o, lse[, mask])
/// with `zb.scale`, `zb.causal` (appendMask for the mask) and `zb.layout`
/// / `zb.shape` where token-major buffers are read or written (Layouts).
void lowerForward(ModuleOp module, SymbolTable &symbols, int64_t &next,
                  zb::AttentionOp op, bool tokenMajor) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Layouts layouts = layoutsFor(op.getQuery(), tokenMajor);
  SmallVector<Operation *> views;
  Value q = inputBuffer(b, loc, op.getQuery(), layouts, views);
  Value k = inputBuffer(b, loc, op.getKey(), layouts, views);
  Value v = inputBuffer(b, loc, op.getValue(), layouts, views);
  OutputBuffers outputs = outputBuffers(b, loc, op.getResult(), layouts);
  Value o = outputs.buffers[0];
  auto qt = cast<RankedTensorType>(op.getQuery().getType());
  int64_t tq = qt.getDimSize(qt.getRank() - 2);
  Value lse = memref::AllocOp::create(
      b, loc,
      MemRefType::get({qt.getNumElements() / (tq * qt.getDimSize(qt.getRank() - 1)), tq},
                      b.getF32Type()));
  SmallVector<Value> args = {q, k, v, o, lse};
  appendMask(b, loc, op.getMask(), args);
  std::string name = declareCallee(module, symbols, next, kCalleePrefix,
                                   ValueRange(args).getTypes(), loc);
  auto call = func::CallOp::create(b, loc, name, TypeRange{}, args);
  setCallAttrs(b, call, op.getScaleAttr(), op.getCausal(), op.getMask(),
               op.getQuery());
  layouts.setOn(b, call, qt, cast<RankedTensorType>(op.getKey().getType()),
                cast<RankedTensorType>(op.getValue().getType()));
  if (layouts.columns[3] < 0)
    replaceByBuffer(b, loc, op.getResult(), o, 2);
  replaceByBuffer(b, loc, op.getLse(), lse, 1);
  outputs.finish(b, loc);
  op.erase();
  eraseUnused(views);
}

/// The axis on which `p` pads and the [begin, end) its operand covers
/// there, when it pads on one axis only, without interior padding.
std::optional<std::tuple<int64_t, int64_t, int64_t>> paddedRange(zb::PadOp p) {
  std::optional<int64_t> axis;
  for (int64_t d = 0; d < (int64_t)p.getLow().size(); ++d) {
    if (p.getInterior()[d] != 0)
      return std::nullopt;
    if (p.getLow()[d] == 0 && p.getHigh()[d] == 0)
      continue;
    if (axis)
      return std::nullopt;
    axis = d;
  }
  if (!axis)
    return std::nullopt;
  int64_t begin = p.getLow()[*axis];
  return std::make_tuple(
      *axis, begin,
      begin + cast<RankedTensorType>(p.getOperand().getType())
                  .getDimSize(*axis));
}

/// zb.add of two zb.pads (each its only use) whose operands lie side by
/// side on the one axis they pad becomes the pad of their zb.concat (exact:
/// x + 0 = x), so that the gradient of q, k and v sliced from one
/// projection (autodiff's sum of three zero-padded pieces) is one concat
/// of the attention kernels' outputs, which they write in place
/// (outputBuffers). Nested concats on the same axis are merged.
void foldPadSums(ModuleOp module) {
  SmallVector<zb::AddOp> adds;
  module.walk([&](zb::AddOp add) { adds.push_back(add); });
  for (zb::AddOp add : adds) {
    auto x = add.getLhs().getDefiningOp<zb::PadOp>();
    auto y = add.getRhs().getDefiningOp<zb::PadOp>();
    if (!x || !y || x == y || !x->hasOneUse() || !y->hasOneUse() ||
        x.getType() != add.getType() || y.getType() != add.getType())
      continue;
    auto rx = paddedRange(x), ry = paddedRange(y);
    if (!rx || !ry || std::get<0>(*rx) != std::get<0>(*ry))
      continue;
    int64_t axis = std::get<0>(*rx);
    zb::PadOp first = x, second = y;
    if (std::get<2>(*ry) == std::get<1>(*rx))
      std::swap(first, second);
    else if (std::get<2>(*rx) != std::get<1>(*ry))
      continue;
    int64_t begin = std::min(std::get<1>(*rx), std::get<1>(*ry));
    SmallVector<Value> inputs;
    for (zb::PadOp p : {first, second}) {
      auto inner = p.getOperand().getDefiningOp<zb::ConcatOp>();
      if (inner && static_cast<int64_t>(inner.getAxis()) == axis && inner->hasOneUse())
        llvm::append_range(inputs, inner.getInputs());
      else
        inputs.push_back(p.getOperand());
    }
    OpBuilder b(add);
    auto at = cast<RankedTensorType>(add.getType());
    SmallVector<int64_t> shape(at.getShape());
    int64_t width = 0;
    for (Value in : inputs)
      width += cast<RankedTensorType>(in.getType()).getDimSize(axis);
    shape[axis] = width;
    Value concat = zb::ConcatOp::create(
        b, add.getLoc(), RankedTensorType::get(shape, at.getElementType()),
        inputs, b.getI64IntegerAttr(axis));
    Value sum = concat;
    if (width != at.getDimSize(axis)) {
      SmallVector<int64_t> low(at.getRank(), 0), high(at.getRank(), 0),
          interior(at.getRank(), 0);
      low[axis] = begin;
      high[axis] = at.getDimSize(axis) - begin - width;
      sum = zb::PadOp::create(b, add.getLoc(), at, concat,
                              b.getDenseI64ArrayAttr(low),
                              b.getDenseI64ArrayAttr(high),
                              b.getDenseI64ArrayAttr(interior));
    }
    add.getResult().replaceAllUsesWith(sum);
    add.erase();
    for (zb::PadOp p : {first, second}) {
      Operation *inner = p.getOperand().getDefiningOp();
      p.erase();
      if (inner && isa<zb::ConcatOp>(inner) && inner->use_empty())
        inner->erase();
    }
  }
}

struct ZBGpuAttentionCallsPass
    : public zb::impl::ZBGpuAttentionCallsBase<ZBGpuAttentionCallsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (tokenMajor)
      foldPadSums(module);
    SmallVector<zb::AttentionOp> ops;
    SmallVector<zb::AttentionGradOp> grads;
    module.walk([&](Operation *op) {
      if (auto fwd = dyn_cast<zb::AttentionOp>(op); fwd && ineligible(fwd).empty())
        ops.push_back(fwd);
      if (auto bwd = dyn_cast<zb::AttentionGradOp>(op);
          bwd && ineligible(bwd).empty())
        grads.push_back(bwd);
    });
    SymbolTable symbols(module);
    int64_t next = 0;
    for (zb::AttentionGradOp op : grads)
      lowerBackward(module, symbols, next, op, tokenMajor);
    for (zb::AttentionOp op : ops)
      lowerForward(module, symbols, next, op, tokenMajor);
  }
};

//===-- zb-gpu-attention-kernels ------------------------------------------===//

/// Builds the kernel body (file comment, Passes.td) with index and float
/// helpers at one insertion point.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  Type bf16, f32, i32, index;
  /// The alignment claimed for the 16-byte staging accesses (none: the
  /// elements', for the CPU emulation).
  llvm::MaybeAlign align;

  KernelBuilder(OpBuilder &b, Location loc, llvm::MaybeAlign align)
      : b(b), loc(loc), bf16(b.getBF16Type()), f32(b.getF32Type()),
        i32(b.getI32Type()), index(b.getIndexType()), align(align) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value addi(Value x, int64_t c) { return c ? add(x, idx(c)) : x; }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fcmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value icmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value minIndex(Value x, int64_t c) {
    return arith::MinUIOp::create(b, loc, x, idx(c));
  }

  /// The token-major operands [B T, W] (zb.layout): the first row and
  /// column of this block's (batch, head).
  llvm::DenseMap<Value, std::pair<Value, Value>> tokenMajor;

  /// The indices of (row, col): [bh, row, col] of an operand in global
  /// memory, [b T + row, column + h D + col] of a token-major one, [row,
  /// col] of a block staged in workgroup memory (row then counted from the
  /// block's first).
  static bool isStaged(Value mem) {
    return isa_and_nonnull<gpu::AddressSpaceAttr>(
        cast<MemRefType>(mem.getType()).getMemorySpace());
  }
  SmallVector<Value, 3> indicesOf(Value mem, Value bh, Value row, Value col) {
    if (isStaged(mem))
      return {row, col};
    if (auto it = tokenMajor.find(mem); it != tokenMajor.end())
      return {add(it->second.first, row), add(it->second.second, col)};
    return {bh, row, col};
  }
  /// Two consecutive bfloat16 of `mem` at (row, col) as one i32 (col even:
  /// one 32-bit load).
  Value loadPair(Value mem, Value bh, Value row, Value col) {
    Value v = vector::LoadOp::create(b, loc, VectorType::get({2}, bf16), mem,
                                     indicesOf(mem, bh, row, col),
                                     /*nontemporal=*/false,
                                     align ? llvm::MaybeAlign(4) : align);
    return toI32(v);
  }
  /// Copies rows [base, base + kKeyBlock) of `mem` [bh, T, D] (a row past
  /// `limit` as row limit - 1) into `tile` [kKeyBlock, D + kPad] in
  /// workgroup memory, 16 bytes per load and store: thread `tid` copies the
  /// block's 8-element vectors tid, tid + 128, ... (D / 16 of them).
  void stage(Value tid, Value mem, Value bh, Value base, int64_t limit,
             Value tile, llvm::MaybeAlign align) {
    int64_t d = cast<MemRefType>(tile.getType()).getDimSize(1) - kPad;
    int64_t perRow = d / 8, threads = kWarps * 32;
    auto type = VectorType::get({8}, bf16);
    for (int64_t i = 0; i < kKeyBlock * perRow / threads; ++i) {
      Value v = addi(tid, i * threads);
      Value r = arith::DivUIOp::create(b, loc, v, idx(perRow));
      Value c = mul(arith::RemUIOp::create(b, loc, v, idx(perRow)), idx(8));
      Value x = vector::LoadOp::create(
          b, loc, type, mem,
          indicesOf(mem, bh, minIndex(add(base, r), limit - 1), c),
          /*nontemporal=*/false, align);
      vector::StoreOp::create(b, loc, x, tile, ValueRange{r, c},
                              /*nontemporal=*/false, align);
    }
  }
  /// Stages the rows [base, base + kKeyBlock) of each (operand, tile) pair
  /// between two barriers: the block's threads have finished reading the
  /// previous rows before they are overwritten, and see all of the new
  /// ones after.
  void stageBlocks(Value tid, Value bh, Value base, int64_t limit,
                   ArrayRef<std::pair<Value, Value>> operandTiles) {
    gpu::BarrierOp::create(b, loc);
    for (auto [mem, tile] : operandTiles)
      stage(tid, mem, bh, base, limit, tile, align);
    gpu::BarrierOp::create(b, loc);
  }
  Value toI32(Value pair) {
    Value c = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32),
                                        pair);
    return vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{0});
  }
  /// Two bfloat16 scalars as one i32 (`lo` in the low half).
  Value pack(Value lo, Value hi) {
    return toI32(vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, bf16), ValueRange{lo, hi}));
  }
  Value toBf16(Value x) { return arith::TruncFOp::create(b, loc, bf16, x); }
  /// x rounded to bfloat16 and back.
  Value roundBf16(Value x) {
    return arith::ExtFOp::create(b, loc, f32, toBf16(x));
  }

  /// D = A B + C, one mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32.
  std::array<Value, 4> mma(ArrayRef<Value> a, ArrayRef<Value> bm,
                           ArrayRef<Value> c) {
    MLIRContext *ctx = b.getContext();
    auto structType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
    auto op = NVVM::MmaOp::create(
        b, loc, structType, a, bm, c, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    std::array<Value, 4> d;
    for (int64_t i = 0; i < 4; ++i)
      d[i] = LLVM::ExtractValueOp::create(b, loc, op.getResult(), i);
    return d;
  }

  /// A fragments (16 rows x 16 steps columns) of `mem` [bh, row, col]:
  /// a0 (rows[0], 2t..), a1 (rows[1], 2t..), a2 (rows[0], 2t+8..),
  /// a3 (rows[1], 2t+8..) for each step of 16 columns.
  SmallVector<std::array<Value, 4>> loadA(Value mem, Value bh,
                                          const Value rows[2], Value t2,
                                          int64_t steps) {
    SmallVector<std::array<Value, 4>> a(steps);
    for (int64_t ks = 0; ks < steps; ++ks)
      for (int64_t i = 0; i < 4; ++i)
        a[ks][i] = loadPair(mem, bh, rows[i % 2],
                            addi(t2, ks * 16 + (i >= 2 ? 8 : 0)));
    return a;
  }
  /// One 16 x 8 accumulator tile: sum over the steps of A[ks] B[ks], where
  /// B[k][n] = mem[bh, row, ks * 16 + k] (`row` the lane's n = g row).
  std::array<Value, 4> tileRowsB(ArrayRef<std::array<Value, 4>> a, Value mem,
                                 Value bh, Value row, Value t2) {
    std::array<Value, 4> acc = {f(0), f(0), f(0), f(0)};
    for (int64_t ks = 0; ks < (int64_t)a.size(); ++ks) {
      Value b0 = loadPair(mem, bh, row, addi(t2, ks * 16));
      Value b1 = loadPair(mem, bh, row, addi(t2, ks * 16 + 8));
      acc = mma(a[ks], {b0, b1}, acc);
    }
    return acc;
  }
  /// A fragments of 16 rows x keys 16 kk .. 16 kk + 15 from accumulator
  /// tiles 2 kk and 2 kk + 1 (float32, rounded to bfloat16).
  std::array<Value, 4> accToA(ArrayRef<std::array<Value, 4>> tiles,
                              int64_t kk) {
    std::array<Value, 4> a;
    for (int64_t i = 0; i < 4; ++i) {
      const std::array<Value, 4> &tile = tiles[2 * kk + i / 2];
      int64_t r = i % 2; // a0, a2: row g; a1, a3: row g + 8
      a[i] = pack(toBf16(tile[2 * r]), toBf16(tile[2 * r + 1]));
    }
    return a;
  }
  /// acc[nt] += A B for every 8-column tile nt of `mem` [bh, k, col], with
  /// B[k][n] = mem[bh, kRows[k], nt * 8 + g]: kRows for k = 2t, 2t+1,
  /// 2t+8, 2t+9.
  void accumulateColumnsB(const std::array<Value, 4> &a, Value mem, Value bh,
                          const Value kRows[4], Value g,
                          SmallVectorImpl<std::array<Value, 4>> &acc) {
    for (int64_t nt = 0; nt < (int64_t)acc.size(); ++nt) {
      Value col = addi(g, nt * 8);
      Value vals[4];
      for (int64_t j = 0; j < 4; ++j)
        vals[j] = memref::LoadOp::create(b, loc, mem,
                                         indicesOf(mem, bh, kRows[j], col));
      acc[nt] = mma(a, {pack(vals[0], vals[1]), pack(vals[2], vals[3])},
                    acc[nt]);
    }
  }
  /// Stores accumulator tiles as bfloat16 rows rows[0] (elements 0, 1) and
  /// rows[1] (2, 3) at columns nt * 8 + 2t.
  void storeTiles(ArrayRef<std::array<Value, 4>> acc, Value mem, Value bh,
                  const Value rows[2], Value t2) {
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t nt = 0; nt < (int64_t)acc.size(); ++nt) {
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, bf16),
            ValueRange{toBf16(acc[nt][2 * r]), toBf16(acc[nt][2 * r + 1])});
        vector::StoreOp::create(b, loc, pair, mem,
                                indicesOf(mem, bh, rows[r], addi(t2, nt * 8)));
      }
  }
  /// The float32 value of a bfloat16 element (row, col) of `mem`.
  Value loadF32(Value mem, Value bh, Value row, Value col) {
    Value x = memref::LoadOp::create(b, loc, mem, indicesOf(mem, bh, row, col));
    return arith::ExtFOp::create(b, loc, f32, x);
  }
  /// lse with -inf as 0 (a row of hidden keys).
  Value safeLse(Value lse) {
    const float inf = std::numeric_limits<float>::infinity();
    return select(fcmp(arith::CmpFPredicate::OEQ, lse, f(-inf)), f(0), lse);
  }

  /// max (or sum) of x over the 4 lanes of a quad (xor 1, then 2).
  Value quad(Value x, bool isMax) {
    Value width = arith::ConstantIntOp::create(b, loc, i32, 32);
    for (int64_t offset : {1, 2}) {
      Value o = arith::ConstantIntOp::create(b, loc, i32, offset);
      Value other = gpu::ShuffleOp::create(b, loc, x, o, width,
                                           gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      x = isMax ? fmax(x, other) : fadd(x, other);
    }
    return x;
  }
};

struct AttentionShape {
  int64_t bh, tq, tk, d, dv;
  double scale;
  bool causal;
  /// The scores' leading dimensions (product bh) when there is a mask.
  SmallVector<int64_t> batchDims;
  /// zb.layout (q, k, v, o[, dO, dq, dk, dv]: -1 or the heads' first
  /// column in a token-major buffer) and B, H from zb.shape; empty, 0
  /// without.
  SmallVector<int64_t> columns;
  int64_t batch = 0, heads = 0;

  /// (argument, T, D) of each [B, H, T, D] tensor in zb.layout's order:
  /// q, k, v, o are arguments 0-3, dO 5 and dq, dk, dv base..base+2 in the
  /// backward (base 6, or 7 after a lse_grad).
  std::array<std::tuple<unsigned, int64_t, int64_t>, 8>
  roles(unsigned base) const {
    return {{{0, tq, d}, {1, tk, d}, {2, tk, dv}, {3, tq, dv}, {5, tq, dv},
             {base, tq, d}, {base + 1, tk, d}, {base + 2, tk, dv}}};
  }

  /// Registers the token-major operands among `kernel`'s arguments with
  /// `e` (their rows and columns for the block's `bh`; roles).
  void registerTokenMajor(KernelBuilder &e, gpu::GPUFuncOp kernel, Value bh,
                          unsigned base) const {
    if (columns.empty())
      return;
    Value b = arith::DivUIOp::create(e.b, e.loc, bh, e.idx(heads));
    Value h = arith::RemUIOp::create(e.b, e.loc, bh, e.idx(heads));
    for (auto [i, column] : llvm::enumerate(columns)) {
      if (column < 0)
        continue;
      auto [arg, t, dim] = roles(base)[i];
      e.tokenMajor[kernel.getArgument(arg)] = {
          e.mul(b, e.idx(t)), e.addi(e.mul(h, e.idx(dim)), column)};
      // The kernel report's bytes: the heads' part of the buffer (2-byte
      // elements), not all of it.
      kernel.setArgAttr(arg, "zb.bytes",
                        e.b.getF64FloatAttr(2.0 * this->bh * t * dim));
    }
  }
};

/// Reads an additive mask [batch..., Tq or 1, Tk or 1] (each leading
/// dimension that of the scores or 1) for the (batch x head) index `bh`.
struct MaskReader {
  Value mem;                ///< null without a mask
  SmallVector<Value> lead;  ///< the mask's leading indices for this bh
  bool rowBroadcast = false, keyBroadcast = false;
  int64_t tq = 0, tk = 0;

  MaskReader() = default;
  /// The reader of `kernel`'s mask (its last argument) when `s` has one,
  /// else one that adds nothing.
  static MaskReader of(KernelBuilder &e, gpu::GPUFuncOp kernel, Value bh,
                       const AttentionShape &s) {
    if (s.batchDims.empty())
      return MaskReader();
    unsigned last = kernel.getFunctionType().getNumInputs() - 1;
    return MaskReader(e, kernel.getArgument(last), bh, s);
  }
  /// The leading indices from bh: index i is (bh / inner_i) % n_i, or 0
  /// where the mask has 1 (divisions by constants, once per thread).
  MaskReader(KernelBuilder &e, Value mem, Value bh, const AttentionShape &s)
      : mem(mem), tq(s.tq), tk(s.tk) {
    auto mt = cast<MemRefType>(mem.getType());
    int64_t r = mt.getRank();
    int64_t inner = 1;
    lead.resize(r - 2);
    for (int64_t i = r - 3; i >= 0; --i) {
      int64_t n = s.batchDims[i];
      if (mt.getDimSize(i) == 1) {
        lead[i] = e.idx(0);
      } else {
        Value x = arith::DivUIOp::create(e.b, e.loc, bh, e.idx(inner));
        lead[i] = arith::RemUIOp::create(e.b, e.loc, x, e.idx(n));
      }
      inner *= n;
    }
    rowBroadcast = mt.getDimSize(r - 2) == 1;
    keyBroadcast = mt.getDimSize(r - 1) == 1;
  }

  /// S = round_bf16(acc) * scale (+ mask[query, key]), -inf where `hidden`
  /// (as zb-decompose-attention: the product rounded as its bfloat16 GEMM
  /// writes it, scale and mask in float32).
  Value scores(KernelBuilder &e, Value acc, Value scale, Value hidden,
               Value query, Value key) const {
    Value sc = e.fmul(e.roundBf16(acc), scale);
    if (mem) {
      SmallVector<Value> at(lead);
      at.push_back(rowBroadcast ? e.idx(0) : e.minIndex(query, tq - 1));
      at.push_back(keyBroadcast ? e.idx(0) : e.minIndex(key, tk - 1));
      Value m = memref::LoadOp::create(e.b, e.loc, mem, at);
      if (!m.getType().isF32())
        m = arith::ExtFOp::create(e.b, e.loc, e.f32, m);
      sc = e.fadd(sc, m);
    }
    const float inf = std::numeric_limits<float>::infinity();
    return e.select(hidden, e.f(-inf), sc);
  }
};

/// The coordinates every attention kernel starts from: the lane's g and t
/// (and 2t), the (batch, head) and this warp's 16 rows from block x.
struct WarpRows {
  Value tid, blockX, bh, g, t2, first, rows[2];
};
WarpRows warpRows(KernelBuilder &e, int64_t limit) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  WarpRows w;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  w.tid = tid;
  w.blockX = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  w.bh = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value c32 = e.idx(32), c4 = e.idx(4);
  Value warp = arith::DivUIOp::create(b, loc, tid, c32);
  Value lane = arith::RemUIOp::create(b, loc, tid, c32);
  w.g = arith::DivUIOp::create(b, loc, lane, c4);
  w.t2 = e.mul(arith::RemUIOp::create(b, loc, lane, c4), e.idx(2));
  w.first = e.add(e.mul(w.blockX, e.idx(kRowsPerWarp * kWarps)),
                  e.mul(warp, e.idx(kRowsPerWarp)));
  // Rows past `limit` compute as row limit - 1 and store its values again.
  w.rows[0] = e.minIndex(e.add(w.first, w.g), limit - 1);
  w.rows[1] = e.minIndex(e.addi(e.add(w.first, w.g), 8), limit - 1);
  return w;
}

/// A block of kKeyBlock rows of `cols` bfloat16 (+ kPad) in `kernel`'s
/// workgroup memory, 16-byte aligned.
Value addTile(gpu::GPUFuncOp kernel, int64_t cols) {
  MLIRContext *ctx = kernel.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(
      ctx, gpu::GPUDialect::getWorkgroupAddressSpace());
  auto type = MemRefType::get({kKeyBlock, cols + kPad},
                              BFloat16Type::get(ctx),
                              MemRefLayoutAttrInterface(), workgroup);
  Value tile = kernel.addWorkgroupAttribution(type, kernel.getLoc());
  // 16-byte aligned for the 128-bit stores (the lowering's default is the
  // element's 2 bytes).
  kernel.setWorkgroupAttributionAttr(
      kernel.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(ctx, 64), 16));
  return tile;
}

/// Flattens accumulator tiles into loop-carried values and back.
void appendTiles(SmallVectorImpl<Value> &out,
                 ArrayRef<std::array<Value, 4>> tiles) {
  for (const std::array<Value, 4> &tile : tiles)
    out.append(tile.begin(), tile.end());
}
SmallVector<std::array<Value, 4>> takeTiles(ValueRange values, int64_t n) {
  SmallVector<std::array<Value, 4>> tiles(n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 4; ++j)
      tiles[i][j] = values[i * 4 + j];
  return tiles;
}

/// The forward kernel for `s` in `kernel` (arguments q, k, v, o, lse):
/// per warp 16 query rows; per key block S = round_bf16(Q K^T) scale
/// (masked), the online softmax, O += round_bf16(P) V; O / l in bfloat16
/// and lse = m + log(l).
void buildForwardBody(gpu::GPUFuncOp kernel, const AttentionShape &s,
                      llvm::MaybeAlign align) {
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  KernelBuilder e(b, kernel.getLoc(), align);
  Location loc = kernel.getLoc();
  Value q = kernel.getArgument(0), k = kernel.getArgument(1),
        v = kernel.getArgument(2), o = kernel.getArgument(3),
        lse = kernel.getArgument(4);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t dSteps = s.d / 16, dvTiles = s.dv / 8;
  const int64_t keyTiles = kKeyBlock / 8, keySteps = kKeyBlock / 16;
  WarpRows w = warpRows(e, s.tq);
  Value bh = w.bh, g = w.g, t2 = w.t2;
  s.registerTokenMajor(e, kernel, bh, 0);
  auto qa = e.loadA(q, bh, w.rows, t2, dSteps);
  MaskReader mask = MaskReader::of(e, kernel, bh, s);
  Value kTile = addTile(kernel, s.d), vTile = addTile(kernel, s.dv);

  // Key blocks [0, end): all of them, or up to the diagonal when causal (a
  // query block of 64 rows and a key block of 64 keys, both from 0).
  int64_t keyBlocks = (s.tk + kKeyBlock - 1) / kKeyBlock;
  Value end = e.idx(keyBlocks);
  if (s.causal)
    end = arith::MinUIOp::create(b, loc, end, e.addi(w.blockX, 1));

  // Loop state: m[2], l[2] (this lane's partial row sums), O's tiles.
  SmallVector<Value> init = {e.f(-inf), e.f(-inf), e.f(0), e.f(0)};
  init.append(dvTiles * 4, e.f(0));
  auto loop = scf::ForOp::create(b, loc, e.idx(0), end, e.idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange state = loop.getRegionIterArgs();
    Value mOld[2] = {state[0], state[1]}, lOld[2] = {state[2], state[3]};
    Value kBase = e.mul(loop.getInductionVar(), e.idx(kKeyBlock));
    e.stageBlocks(w.tid, bh, kBase, s.tk, {{k, kTile}, {v, vTile}});

    // S = Q K^T for 64 keys: 8 tiles of 8 keys.
    SmallVector<std::array<Value, 4>> sc(keyTiles);
    Value scale = e.f(s.scale);
    for (int64_t nt = 0; nt < keyTiles; ++nt) {
      std::array<Value, 4> acc =
          e.tileRowsB(qa, kTile, bh, e.addi(g, nt * 8), t2);
      for (int64_t i = 0; i < 4; ++i) {
        Value key = e.addi(e.add(kBase, t2), nt * 8 + (i & 1));
        Value hidden = e.icmp(arith::CmpIPredicate::uge, key, e.idx(s.tk));
        if (s.causal)
          hidden = arith::OrIOp::create(
              b, loc, hidden,
              e.icmp(arith::CmpIPredicate::ugt, key, w.rows[i / 2]));
        sc[nt][i] =
            mask.scores(e, acc[i], scale, hidden, w.rows[i / 2], key);
      }
    }
    // Online softmax per row (rows g: i = 0, 1; g + 8: i = 2, 3).
    Value mNew[2], mUse[2], alpha[2], lNew[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value mx = sc[0][2 * r];
      for (int64_t nt = 0; nt < keyTiles; ++nt)
        for (int64_t j = 0; j < 2; ++j)
          if (nt || j)
            mx = e.fmax(mx, sc[nt][2 * r + j]);
      mNew[r] = e.fmax(mOld[r], e.quad(mx, /*isMax=*/true));
      // 0 while the row has seen only hidden keys: exp(-inf - 0) = 0.
      mUse[r] = e.safeLse(mNew[r]);
      alpha[r] = e.exp(e.fsub(mOld[r], mUse[r]));
      lNew[r] = e.fmul(lOld[r], alpha[r]);
    }
    SmallVector<std::array<Value, 4>> p(keyTiles);
    for (int64_t nt = 0; nt < keyTiles; ++nt)
      for (int64_t i = 0; i < 4; ++i) {
        p[nt][i] = e.exp(e.fsub(sc[nt][i], mUse[i / 2]));
        // The row sum of the weights P V uses (rounded to bfloat16), so
        // that O's weights sum to one.
        lNew[i / 2] = e.fadd(lNew[i / 2], e.roundBf16(p[nt][i]));
      }
    // O = alpha O + P V: P's A fragments are S's accumulators, rounded.
    auto oAcc = takeTiles(state.drop_front(4), dvTiles);
    for (std::array<Value, 4> &tile : oAcc)
      for (int64_t i = 0; i < 4; ++i)
        tile[i] = e.fmul(tile[i], alpha[i / 2]);
    for (int64_t kk = 0; kk < keySteps; ++kk) {
      Value keyRows[4]; // in the block: 2t, 2t+1, 2t+8, 2t+9
      for (int64_t j = 0; j < 4; ++j)
        keyRows[j] = e.addi(t2, kk * 16 + (j & 1) + (j >= 2 ? 8 : 0));
      e.accumulateColumnsB(e.accToA(p, kk), vTile, bh, keyRows, g, oAcc);
    }
    SmallVector<Value> next = {mNew[0], mNew[1], lNew[0], lNew[1]};
    appendTiles(next, oAcc);
    scf::YieldOp::create(b, loc, next);
  }
  // O / l in bfloat16 and lse = m + log(l) per row.
  ValueRange out = loop.getResults();
  auto oTiles = takeTiles(out.drop_front(4), dvTiles);
  for (int64_t r = 0; r < 2; ++r) {
    Value l = e.quad(out[2 + r], /*isMax=*/false);
    Value positive = e.fcmp(arith::CmpFPredicate::OGT, l, e.f(0));
    Value inv = e.select(positive,
                         arith::DivFOp::create(b, loc, e.f(1), l), e.f(0));
    Value logL = math::LogOp::create(b, loc, l);
    Value lseRow = e.select(positive, e.fadd(out[r], logL), e.f(-inf));
    memref::StoreOp::create(b, loc, lseRow, lse, ValueRange{bh, w.rows[r]});
    for (std::array<Value, 4> &tile : oTiles)
      for (int64_t j = 0; j < 2; ++j)
        tile[2 * r + j] = e.fmul(tile[2 * r + j], inv);
  }
  e.storeTiles(oTiles, o, bh, w.rows, t2);
}

/// Backward kernel 1 (FlashAttention-2's Algorithm 2 split by output, as
/// the unfused backward of zb-decompose-attention computes it): per warp
/// 16 query rows; Di = rowsum(dO * O) (- lse_grad) written to `di`; per
/// key block P = exp(S - lse), dP = round_bf16(dO V^T),
/// dS = P (dP - Di), dQ += round_bf16(scale dS) K; dQ written in bfloat16.
void buildBackwardQueryBody(gpu::GPUFuncOp kernel, const AttentionShape &s,
                            bool hasLseGrad, llvm::MaybeAlign align) {
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  KernelBuilder e(b, kernel.getLoc(), align);
  Location loc = kernel.getLoc();
  unsigned base = hasLseGrad ? 7 : 6;
  Value q = kernel.getArgument(0), k = kernel.getArgument(1),
        v = kernel.getArgument(2), o = kernel.getArgument(3),
        lse = kernel.getArgument(4), dO = kernel.getArgument(5),
        dq = kernel.getArgument(base), di = kernel.getArgument(base + 3);
  const int64_t dSteps = s.d / 16, dvSteps = s.dv / 16, dTiles = s.d / 8;
  const int64_t keyTiles = kKeyBlock / 8, keySteps = kKeyBlock / 16;
  WarpRows w = warpRows(e, s.tq);
  Value bh = w.bh, g = w.g, t2 = w.t2;
  s.registerTokenMajor(e, kernel, bh, base);
  auto qa = e.loadA(q, bh, w.rows, t2, dSteps);
  auto doa = e.loadA(dO, bh, w.rows, t2, dvSteps);
  MaskReader mask = MaskReader::of(e, kernel, bh, s);
  Value kTile = addTile(kernel, s.d), vTile = addTile(kernel, s.dv);
  Value diRow[2], lseRow[2];
  for (int64_t r = 0; r < 2; ++r) {
    Value part = e.f(0);
    for (int64_t nt = 0; nt < s.dv / 8; ++nt)
      for (int64_t j = 0; j < 2; ++j) {
        Value col = e.addi(t2, nt * 8 + j);
        part = e.fadd(part, e.fmul(e.loadF32(dO, bh, w.rows[r], col),
                                   e.loadF32(o, bh, w.rows[r], col)));
      }
    diRow[r] = e.quad(part, /*isMax=*/false);
    if (hasLseGrad)
      diRow[r] = e.fsub(diRow[r],
                        memref::LoadOp::create(b, loc, kernel.getArgument(6),
                                               ValueRange{bh, w.rows[r]}));
    memref::StoreOp::create(b, loc, diRow[r], di, ValueRange{bh, w.rows[r]});
    lseRow[r] = e.safeLse(
        memref::LoadOp::create(b, loc, lse, ValueRange{bh, w.rows[r]}));
  }
  int64_t keyBlocks = (s.tk + kKeyBlock - 1) / kKeyBlock;
  Value end = e.idx(keyBlocks);
  if (s.causal)
    end = arith::MinUIOp::create(b, loc, end, e.addi(w.blockX, 1));
  SmallVector<Value> init(dTiles * 4, e.f(0));
  auto loop = scf::ForOp::create(b, loc, e.idx(0), end, e.idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kBase = e.mul(loop.getInductionVar(), e.idx(kKeyBlock));
    e.stageBlocks(w.tid, bh, kBase, s.tk, {{k, kTile}, {v, vTile}});
    Value scale = e.f(s.scale);
    SmallVector<std::array<Value, 4>> ds(keyTiles);
    for (int64_t nt = 0; nt < keyTiles; ++nt) {
      Value keyRow = e.addi(g, nt * 8); // in the block
      std::array<Value, 4> sAcc = e.tileRowsB(qa, kTile, bh, keyRow, t2);
      std::array<Value, 4> dpAcc = e.tileRowsB(doa, vTile, bh, keyRow, t2);
      for (int64_t i = 0; i < 4; ++i) {
        Value key = e.addi(e.add(kBase, t2), nt * 8 + (i & 1));
        Value hidden = e.icmp(arith::CmpIPredicate::uge, key, e.idx(s.tk));
        if (s.causal)
          hidden = arith::OrIOp::create(
              b, loc, hidden,
              e.icmp(arith::CmpIPredicate::ugt, key, w.rows[i / 2]));
        Value sc =
            mask.scores(e, sAcc[i], scale, hidden, w.rows[i / 2], key);
        Value p = e.exp(e.fsub(sc, lseRow[i / 2]));
        Value dp = e.roundBf16(dpAcc[i]);
        ds[nt][i] = e.fmul(e.fmul(p, e.fsub(dp, diRow[i / 2])), scale);
      }
    }
    auto acc = takeTiles(loop.getRegionIterArgs(), dTiles);
    for (int64_t kk = 0; kk < keySteps; ++kk) {
      Value kRows[4];
      for (int64_t j = 0; j < 4; ++j)
        kRows[j] = e.addi(t2, kk * 16 + (j & 1) + (j >= 2 ? 8 : 0));
      e.accumulateColumnsB(e.accToA(ds, kk), kTile, bh, kRows, g, acc);
    }
    SmallVector<Value> next;
    appendTiles(next, acc);
    scf::YieldOp::create(b, loc, next);
  }
  e.storeTiles(takeTiles(loop.getResults(), dTiles), dq, bh, w.rows, t2);
}

/// Backward kernel 2: per warp 16 key rows; per query block (from the
/// diagonal when causal) S^T = K Q^T, P^T = exp(S^T - lse),
/// dV += round_bf16(P^T) dO, dP^T = round_bf16(V dO^T),
/// dS^T = P^T (dP^T - Di), dK += round_bf16(scale dS^T) Q; dK and dV
/// written in bfloat16. Reads the Di of kernel 1.
void buildBackwardKeyBody(gpu::GPUFuncOp kernel, const AttentionShape &s,
                          bool hasLseGrad, llvm::MaybeAlign align) {
  OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
  KernelBuilder e(b, kernel.getLoc(), align);
  Location loc = kernel.getLoc();
  unsigned base = hasLseGrad ? 7 : 6;
  Value q = kernel.getArgument(0), k = kernel.getArgument(1),
        v = kernel.getArgument(2), lse = kernel.getArgument(4),
        dO = kernel.getArgument(5), dk = kernel.getArgument(base + 1),
        dv = kernel.getArgument(base + 2), di = kernel.getArgument(base + 3);
  const int64_t dSteps = s.d / 16, dvSteps = s.dv / 16;
  const int64_t dTiles = s.d / 8, dvTiles = s.dv / 8;
  const int64_t queryTiles = kKeyBlock / 8, querySteps = kKeyBlock / 16;
  WarpRows w = warpRows(e, s.tk);
  Value bh = w.bh, g = w.g, t2 = w.t2;
  s.registerTokenMajor(e, kernel, bh, base);
  auto ka = e.loadA(k, bh, w.rows, t2, dSteps);
  auto va = e.loadA(v, bh, w.rows, t2, dvSteps);
  MaskReader mask = MaskReader::of(e, kernel, bh, s);
  Value qTile = addTile(kernel, s.d), doTile = addTile(kernel, s.dv);
  int64_t queryBlocks = (s.tq + kKeyBlock - 1) / kKeyBlock;
  // Causal: query block i holds no query after a key of key block j < i.
  Value start = s.causal ? w.blockX : e.idx(0);
  SmallVector<Value> init((dTiles + dvTiles) * 4, e.f(0));
  auto loop = scf::ForOp::create(b, loc, start, e.idx(queryBlocks), e.idx(1),
                                 init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value qBase = e.mul(loop.getInductionVar(), e.idx(kKeyBlock));
    e.stageBlocks(w.tid, bh, qBase, s.tq, {{q, qTile}, {dO, doTile}});
    Value scale = e.f(s.scale);
    SmallVector<std::array<Value, 4>> pt(queryTiles), dst(queryTiles);
    for (int64_t nt = 0; nt < queryTiles; ++nt) {
      Value qRow = e.addi(g, nt * 8); // in the block
      std::array<Value, 4> sAcc = e.tileRowsB(ka, qTile, bh, qRow, t2);
      std::array<Value, 4> dpAcc = e.tileRowsB(va, doTile, bh, qRow, t2);
      Value lseCol[2], diCol[2], query[2];
      for (int64_t j = 0; j < 2; ++j) {
        query[j] = e.addi(e.add(qBase, t2), nt * 8 + j);
        Value qc = e.minIndex(query[j], s.tq - 1);
        lseCol[j] = e.safeLse(
            memref::LoadOp::create(b, loc, lse, ValueRange{bh, qc}));
        diCol[j] = memref::LoadOp::create(b, loc, di, ValueRange{bh, qc});
      }
      for (int64_t i = 0; i < 4; ++i) {
        Value hidden =
            e.icmp(arith::CmpIPredicate::uge, query[i & 1], e.idx(s.tq));
        if (s.causal)
          hidden = arith::OrIOp::create(
              b, loc, hidden,
              e.icmp(arith::CmpIPredicate::ugt, w.rows[i / 2], query[i & 1]));
        Value sc = mask.scores(e, sAcc[i], scale, hidden, query[i & 1],
                               w.rows[i / 2]);
        pt[nt][i] = e.exp(e.fsub(sc, lseCol[i & 1]));
        Value dp = e.roundBf16(dpAcc[i]);
        dst[nt][i] =
            e.fmul(e.fmul(pt[nt][i], e.fsub(dp, diCol[i & 1])), scale);
      }
    }
    ValueRange state = loop.getRegionIterArgs();
    auto dkAcc = takeTiles(state, dTiles);
    auto dvAcc = takeTiles(state.drop_front(dTiles * 4), dvTiles);
    for (int64_t kk = 0; kk < querySteps; ++kk) {
      Value qRows[4];
      for (int64_t j = 0; j < 4; ++j)
        qRows[j] = e.addi(t2, kk * 16 + (j & 1) + (j >= 2 ? 8 : 0));
      e.accumulateColumnsB(e.accToA(pt, kk), doTile, bh, qRows, g, dvAcc);
      e.accumulateColumnsB(e.accToA(dst, kk), qTile, bh, qRows, g, dkAcc);
    }
    SmallVector<Value> next;
    appendTiles(next, dkAcc);
    appendTiles(next, dvAcc);
    scf::YieldOp::create(b, loc, next);
  }
  ValueRange out = loop.getResults();
  e.storeTiles(takeTiles(out, dTiles), dk, bh, w.rows, t2);
  e.storeTiles(takeTiles(out.drop_front(dTiles * 4), dvTiles), dv, bh,
               w.rows, t2);
}

/// Causal pairs (key <= query) or all pairs of Tq queries and Tk keys.
double attentionPairs(const AttentionShape &s) {
  if (!s.causal)
    return 1.0 * s.tq * s.tk;
  return s.tq <= s.tk ? 0.5 * s.tq * (s.tq + 1.0)
                      : 0.5 * s.tk * (s.tk + 1.0) + 1.0 * (s.tq - s.tk) * s.tk;
}

struct ZBGpuAttentionKernelsPass
    : public zb::impl::ZBGpuAttentionKernelsBase<ZBGpuAttentionKernelsPass> {
  using Base::Base;
  ModuleOp module;

  llvm::MaybeAlign claimed() const {
    return alignment > 0 ? llvm::MaybeAlign(alignment) : llvm::MaybeAlign();
  }
  int64_t next = 0;

  /// A kernel of its own gpu.module named after `parent`, 128 threads, a
  /// grid of (blocks, bh), with its FLOPs (`zb.flops`) for the report.
  gpu::GPUFuncOp createAttentionKernel(SymbolTable &symbols,
                                       func::FuncOp parent, StringRef what,
                                       TypeRange types, int64_t blocks,
                                       int64_t bh, double flops,
                                       Location loc) {
    auto kernel = createKernel(module, symbols, next, parent, what, types,
                               blocks, bh, kWarps * 32, "attention", loc);
    kernel->setAttr("zb.flops", OpBuilder(kernel).getF64FloatAttr(flops));
    return kernel;
  }

  /// Ends `kernel`'s body and launches it before `call`.
  static void launch(func::CallOp call, gpu::GPUFuncOp kernel) {
    OpBuilder eb = OpBuilder::atBlockEnd(&kernel.getBody().front());
    gpu::ReturnOp::create(eb, call.getLoc());
    launchBefore(call, kernel);
  }

  /// Sets `s` from `zb.shape` [B, H, Tq, Tk, D, Dv] and `zb.layout` (one
  /// column per [B, H, T, D] tensor: AttentionShape::columns): true when
  /// the call's `operands` (without the mask) match them: a -1 tensor
  /// [B H, T, D], another [B T, W] with its heads at the column (16-byte
  /// aligned: W and the column multiples of 8), the lse, lse_grad and di
  /// [B H, Tq].
  static bool validLayout(func::CallOp call, bool backward, bool hasLseGrad,
                          unsigned operands, AttentionShape &s) {
    auto layout = call->getAttrOfType<DenseI64ArrayAttr>("zb.layout");
    auto shape = call->getAttrOfType<DenseI64ArrayAttr>("zb.shape");
    if (!layout || !shape || shape.size() != 6 ||
        layout.size() != (backward ? 8u : 4u) ||
        llvm::any_of(shape.asArrayRef(), [](int64_t n) { return n <= 0; }))
      return false;
    ArrayRef<int64_t> n = shape.asArrayRef();
    s = {n[0] * n[1], n[2], n[3], n[4], n[5],
         call->getAttrOfType<FloatAttr>("zb.scale").getValueAsDouble(),
         call->hasAttr("zb.causal"), {}};
    s.batch = n[0];
    s.heads = n[1];
    s.columns.assign(layout.asArrayRef().begin(), layout.asArrayRef().end());
    if (s.d % 16 || s.dv % 16 || s.d > 128 || s.dv > 128)
      return false;
    auto type = [&](unsigned i) {
      return cast<MemRefType>(call.getOperandTypes()[i]);
    };
    unsigned base = hasLseGrad ? 7 : 6;
    for (auto [i, column] : llvm::enumerate(s.columns)) {
      auto [arg, t, d] = s.roles(base)[i];
      MemRefType m = type(arg);
      if (column < 0) {
        if (m.getShape() != ArrayRef<int64_t>{s.bh, t, d})
          return false;
        continue;
      }
      if (m.getRank() != 2 || m.getDimSize(0) != s.batch * t ||
          m.getDimSize(1) % 8 || column % 8 ||
          column + s.heads * d > m.getDimSize(1))
        return false;
    }
    SmallVector<unsigned> rows = {4};
    if (hasLseGrad)
      rows.push_back(6);
    if (backward)
      rows.push_back(base + 3);
    for (unsigned i : rows)
      if (i >= operands ||
          type(i).getShape() != ArrayRef<int64_t>{s.bh, s.tq})
        return false;
    return true;
  }

  /// Sets s.batchDims from `zb.batch_dims`: true when their product is bh
  /// and `mask` [lead..., Tq or 1, Tk or 1] broadcasts to the scores.
  static bool validMask(func::CallOp call, MemRefType mask,
                        AttentionShape &s) {
    auto dims = call->getAttrOfType<DenseI64ArrayAttr>("zb.batch_dims");
    Type elem = mask.getElementType();
    if (!dims || dims.empty() ||
        mask.getRank() != static_cast<int64_t>(dims.size()) + 2 ||
        !(elem.isF32() || elem.isBF16() || elem.isF16()))
      return false;
    int64_t product = 1;
    for (auto [i, n] : llvm::enumerate(dims.asArrayRef())) {
      product *= n;
      if (mask.getDimSize(i) != n && mask.getDimSize(i) != 1)
        return false;
    }
    int64_t r = mask.getRank();
    auto fits = [](int64_t m, int64_t n) { return m == n || m == 1; };
    if (product != s.bh || !fits(mask.getDimSize(r - 2), s.tq) ||
        !fits(mask.getDimSize(r - 1), s.tk))
      return false;
    s.batchDims.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
    return true;
  }

  void runOnOperation() override {
    module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee().starts_with(kCalleePrefix) ||
          call.getCallee().starts_with(kBackwardPrefix))
        calls.push_back(call);
    });
    SymbolTable symbols(module);
    for (func::CallOp call : calls) {
      Location loc = call.getLoc();
      bool backward = call.getCallee().starts_with(kBackwardPrefix);
      bool hasLseGrad = call->hasAttr("zb.lse_grad");
      bool masked = call->hasAttr("zb.mask");
      unsigned arity = (backward ? (hasLseGrad ? 11 : 10) : 5) + masked;
      auto types = call.getOperandTypes();
      auto memref = [&](unsigned i) {
        return i < types.size() ? dyn_cast<MemRefType>(types[i]) : MemRefType();
      };
      auto scale = call->getAttrOfType<FloatAttr>("zb.scale");
      bool valid = call.getNumOperands() == arity && scale;
      for (unsigned i = 0; valid && i < arity; ++i)
        valid = memref(i) && memref(i).hasStaticShape();
      // lse, lse_grad and di [bh, Tq]; the others [bh, T, D] (zb.layout:
      // validLayout).
      for (unsigned i = 0; valid && !call->hasAttr("zb.layout") &&
                           !call->hasAttr("zb.shape") && i < arity - masked;
           ++i) {
        bool rows = i == 4 || (hasLseGrad && i == 6) ||
                    (backward && i == arity - masked - 1);
        valid = memref(i).getRank() == (rows ? 2 : 3);
      }
      AttentionShape s;
      if (valid && (call->hasAttr("zb.layout") || call->hasAttr("zb.shape"))) {
        valid = validLayout(call, backward, hasLseGrad, arity - masked, s);
      } else if (valid) {
        s = {memref(0).getDimSize(0), memref(0).getDimSize(1),
             memref(1).getDimSize(1), memref(0).getDimSize(2),
             memref(2).getDimSize(2), scale.getValueAsDouble(),
             call->hasAttr("zb.causal"), {}};
      }
      if (valid && masked)
        valid = validMask(call, memref(arity - 1), s);
      if (!valid) {
        call.emitError("zb-gpu-attention-kernels: expected a call of "
                       "zb-gpu-attention-calls (")
            << arity << " static memrefs, zb.scale"
            << (call->hasAttr("zb.layout") || call->hasAttr("zb.shape")
                    ? ", zb.layout and zb.shape matching them"
                    : "")
            << (masked ? ", zb.batch_dims matching the mask" : "") << ")";
        return signalPassFailure();
      }
      auto parent = call->getParentOfType<func::FuncOp>();
      int64_t rowsPerBlock = kRowsPerWarp * kWarps;
      int64_t qBlocks = (s.tq + rowsPerBlock - 1) / rowsPerBlock;
      int64_t kBlocks = (s.tk + rowsPerBlock - 1) / rowsPerBlock;
      double pairs = attentionPairs(s);
      if (!backward) {
        // Two GEMMs per (batch, head), 2 pairs (D + Dv) FLOPs.
        auto kernel = createAttentionKernel(symbols, parent, "attention", types,
                                   qBlocks, s.bh,
                                   2.0 * s.bh * pairs * (s.d + s.dv), loc);
        buildForwardBody(kernel, s, claimed());
        launch(call, kernel);
      } else {
        // dQ: S, dP and dQ; dK and dV: S^T, dV, dP^T and dK.
        auto dq = createAttentionKernel(symbols, parent, "attention_grad_query", types,
                               qBlocks, s.bh,
                               2.0 * s.bh * pairs * (2 * s.d + s.dv), loc);
        buildBackwardQueryBody(dq, s, hasLseGrad, claimed());
        launch(call, dq);
        auto dkv = createAttentionKernel(symbols, parent, "attention_grad_key", types,
                                kBlocks, s.bh,
                                2.0 * s.bh * pairs * (2 * s.d + 2 * s.dv),
                                loc);
        buildBackwardKeyBody(dkv, s, hasLseGrad, claimed());
        launch(call, dkv);
      }
      eraseCall(module, symbols, call);
    }
  }
};

} // namespace
