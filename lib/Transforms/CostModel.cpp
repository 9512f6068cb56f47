//===- CostModel.cpp - roofline cost model --------------------------------===//
//
// Per-op roofline: time = max(FLOPs / peak, bytes / bandwidth), with the
// matmul peak for zb.matmul / zb.batch_matmul and the vector peak for every
// other op. Bytes model kernel fusion: chains of elementwise ops (and views:
// broadcast, transpose, reshape, causal mask) of one phase (F, B or W) form
// one kernel that reads each external input once and writes only the values
// that leave the kernel (used by a non-fusible op, by another phase, or
// returned). See docs/cost-model.md for the targets and the calibration.
//
//===----------------------------------------------------------------------===//
#include "zb/Transforms/CostModel.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Formats/GpuPeaks.h"

#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <optional>

using namespace mlir;

namespace zb {

CostTarget lookupCostTarget(Target target) {
  Target model = costModelTarget(target);
  // cpu: this machine, one core (zb-run runs one rank per core): OpenBLAS
  // sgemm (69 GFLOP/s) and a STREAM-style add (13 GB/s) measured by
  // benchmarks/Compiler/cpu_roofline.sh (docs/cost-model.md); the vector
  // rate (8 GFLOP/s) and the shared-memory MPI link are estimates.
  if (model == Target::Cpu)
    return CostTarget{targetName(model).str(), 69e9, 8e9, 13e9, 4e9, 5e-6, 0};
  // h100: H100 SXM, bf16 dense tensor cores, non-tensor fp32, HBM3, NVLink
  // 4 (GpuPeaks.h). For --target h100 (CPU code costed as the paper's GPU
  // runs) tensors are counted as bf16 (2 bytes per float element; mixed
  // precision); for the GPU targets (cuda, cuda-emu) at their IR sizes, the
  // bytes the GPU's buffers really have (a float32 plan keeps 4 bytes per
  // float; --precision bf16 states each tensor's type itself).
  const GpuPeaks &h100 = kH100Sxm;
  return CostTarget{targetName(model).str(),
                    h100.bf16FlopsPerSecond,
                    h100.fp32FlopsPerSecond,
                    h100.memBytesPerSecond,
                    h100.linkBytesPerSecond,
                    h100.linkLatencySeconds,
                    hasGpuKernels(target) ? 0 : 2};
}

int64_t tensorBytes(Type type) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  int64_t bits = t.getElementType().isIntOrFloat()
                     ? t.getElementType().getIntOrFloatBitWidth()
                     : 32;
  return t.getNumElements() * std::max<int64_t>(1, bits / 8);
}

static int64_t numElements(Type type) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  return t && t.hasStaticShape() ? t.getNumElements() : 0;
}

double targetBytes(Type type, const CostTarget *target) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  if (target && target->floatBytes > 0 &&
      llvm::isa<FloatType>(t.getElementType()))
    return static_cast<double>(t.getNumElements() * target->floatBytes);
  return static_cast<double>(tensorBytes(type));
}

/// The shape numbers of a zb.attention / zb.attention_grad: the score
/// elements (batch x Tq x Tk) and the head sizes D and Dv.
struct AttentionShape {
  double scores = 0, d = 0, dv = 0;
};
static std::optional<AttentionShape> attentionShape(Operation *op) {
  if (!llvm::isa<AttentionOp, AttentionGradOp>(op))
    return std::nullopt;
  auto q = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
  auto k = llvm::cast<RankedTensorType>(op->getOperand(1).getType());
  auto v = llvm::cast<RankedTensorType>(op->getOperand(2).getType());
  int64_t r = q.getRank();
  AttentionShape s;
  s.scores = static_cast<double>(numElements(q) / q.getDimSize(r - 1)) *
             static_cast<double>(k.getDimSize(r - 2));
  s.d = static_cast<double>(q.getDimSize(r - 1));
  s.dv = static_cast<double>(v.getDimSize(r - 1));
  return s;
}

/// The FLOPs of an attention's products: F q k^T and P v; B (the gradient)
/// q k^T again, dO V^T, P^T dO, dS K and dS^T Q.
static double attentionMatmulFlops(Operation *op, const AttentionShape &s) {
  double perScore = llvm::isa<AttentionOp>(op) ? s.d + s.dv
                                               : 3 * s.d + 2 * s.dv;
  return 2.0 * s.scores * perScore;
}

/// Its elementwise and reduction work per score: the scale, mask, max,
/// exp, sum and division (F); the exp, the difference and the product with
/// P (B).
static double attentionVectorFlops(Operation *op, const AttentionShape &s) {
  return (llvm::isa<AttentionOp>(op) ? 6.0 : 5.0) * s.scores;
}

double opFlops(Operation *op) {
  if (std::optional<AttentionShape> s = attentionShape(op))
    return attentionMatmulFlops(op, *s) + attentionVectorFlops(op, *s);
  if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
    auto a = llvm::cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = mm.getTransposeLhs() ? a.getDimSize(0) : a.getDimSize(1);
    return 2.0 * static_cast<double>(numElements(mm.getType())) *
           static_cast<double>(k);
  }
  if (auto bmm = llvm::dyn_cast<BatchMatmulOp>(op)) {
    auto a = llvm::cast<RankedTensorType>(bmm.getLhs().getType());
    int64_t r = a.getRank();
    int64_t k =
        bmm.getTransposeLhs() ? a.getDimSize(r - 2) : a.getDimSize(r - 1);
    return 2.0 * static_cast<double>(numElements(bmm.getType())) *
           static_cast<double>(k);
  }
  if (llvm::isa<ConstantOp, ReshapeOp>(op))
    return 0;
  if (llvm::isa<ReduceSumOp, ReduceMeanOp>(op))
    return static_cast<double>(numElements(op->getOperand(0).getType()));
  double n = 0;
  for (Type t : op->getResultTypes())
    n += static_cast<double>(numElements(t));
  return n;
}

bool isFusible(Operation *op) {
  return llvm::isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, NegOp, ReluOp,
                   ExpOp, LogOp, TanhOp, SqrtOp, RsqrtOp, ErfOp, SigmoidOp,
                   SiluOp, GeluOp, CompareOp, SelectOp, CastOp,
                   BroadcastInDimOp, TransposeOp, ReshapeOp, ConstantOp,
                   CausalMaskOp>(op);
}

/// F for forward ops, the zb.phase of backward ops ("BW" before
/// zb-split-backward).
static StringRef phaseOf(Operation *op) {
  if (auto p = op->getAttrOfType<PhaseAttr>(kPhaseAttr))
    return stringifyPhase(p.getValue());
  return op->hasAttr(kOriginAttr) ? "BW" : "F";
}

/// The op producing `v`, looking through reshapes (views).
static Operation *producerOf(Value v) {
  Operation *def = v.getDefiningOp();
  while (def && llvm::isa<ReshapeOp>(def))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

/// True when some user of `v` (through reshapes) is outside the fused kernel
/// of `producer`: a non-fusible op, another phase, or a terminator.
static bool leavesKernel(Value v, StringRef phase) {
  for (Operation *user : v.getUsers()) {
    if (llvm::isa<ReshapeOp>(user)) {
      if (leavesKernel(user->getResult(0), phase))
        return true;
      continue;
    }
    if (user->hasTrait<OpTrait::IsTerminator>() || !isFusible(user) ||
        phaseOf(user) != phase)
      return true;
  }
  return v.use_empty();
}

/// True when `op` is the first fusible user of `v` (through reshapes) in
/// `phase`, in block order.
static bool isFirstFusedReader(Value v, Operation *op, StringRef phase) {
  Operation *first = nullptr;
  std::function<void(Value)> visit = [&](Value x) {
    for (Operation *user : x.getUsers()) {
      if (llvm::isa<ReshapeOp>(user) && user != op) {
        visit(user->getResult(0));
        continue;
      }
      if (!isFusible(user) || phaseOf(user) != phase)
        continue;
      if (!first || (user->getBlock() == first->getBlock() &&
                     user->isBeforeInBlock(first)))
        first = user;
    }
  };
  visit(v);
  return first == op || !first;
}

double opBytes(Operation *op, const CostTarget *target) {
  if (llvm::isa<ConstantOp, ReshapeOp>(op))
    return 0;
  if (std::optional<AttentionShape> s = attentionShape(op)) {
    // Operands and results, and the scores as zb-decompose-attention
    // lowers the op (not a fused kernel): S and P written and read a few
    // times, about 4 score tensors in F and 6 in B.
    double b = 0;
    for (Value v : op->getOperands())
      b += targetBytes(v.getType(), target);
    for (Value r : op->getResults())
      b += targetBytes(r.getType(), target);
    double scoreBytes = target && target->floatBytes > 0 ? target->floatBytes
                                                         : 4;
    return b + (llvm::isa<AttentionOp>(op) ? 4 : 6) * s->scores * scoreBytes;
  }
  bool fused = isFusible(op);
  StringRef phase = phaseOf(op);
  double b = 0;
  for (Value v : op->getOperands()) {
    if (fused) {
      Operation *def = producerOf(v);
      if (def && isFusible(def) && phaseOf(def) == phase)
        continue; // in registers: produced by the same kernel
      if (!isFirstFusedReader(v, op, phase))
        continue; // the kernel reads it once
    }
    b += targetBytes(v.getType(), target);
  }
  for (Value r : op->getResults())
    if (!fused || leavesKernel(r, phase))
      b += targetBytes(r.getType(), target);
  return b;
}

double opTimeMs(Operation *op, const CostTarget &target) {
  if (std::optional<AttentionShape> s = attentionShape(op))
    return 1e3 * std::max(attentionMatmulFlops(op, *s) /
                                  target.matmulFlopsPerSec +
                              attentionVectorFlops(op, *s) /
                                  target.vectorFlopsPerSec,
                          opBytes(op, &target) / target.memBytesPerSec);
  double peak = llvm::isa<MatmulOp, BatchMatmulOp>(op)
                    ? target.matmulFlopsPerSec
                    : target.vectorFlopsPerSec;
  return 1e3 * std::max(opFlops(op) / peak,
                        opBytes(op, &target) / target.memBytesPerSec);
}

double commTimeMs(double bytes, const CostTarget &target) {
  return 1e3 * (target.linkLatencySec + bytes / target.linkBytesPerSec);
}

} // namespace zb
