//===- CostModel.cpp - FLOP/byte cost model -------------------------------===//
#include "zb/Transforms/CostModel.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace zb {

std::optional<CostTarget> lookupCostTarget(llvm::StringRef name) {
  if (name == "cpu") // one core: OpenBLAS sgemm ~50 GFLOP/s on small GEMMs
    return CostTarget{"cpu", 50e9, 8e9, 4e9, 5e-6};
  if (name == "h100") // bf16 dense ~600 TFLOP/s achievable, HBM3, NVLink 4
    return CostTarget{"h100", 600e12, 2.5e12, 200e9, 10e-6};
  return std::nullopt;
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

double opFlops(Operation *op) {
  if (auto mm = llvm::dyn_cast<MatmulOp>(op)) {
    auto a = llvm::cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = mm.getTransposeLhs() ? a.getDimSize(0) : a.getDimSize(1);
    return 2.0 * static_cast<double>(numElements(mm.getType())) *
           static_cast<double>(k);
  }
  if (auto bmm = llvm::dyn_cast<BatchMatmulOp>(op)) {
    auto a = llvm::cast<RankedTensorType>(bmm.getLhs().getType());
    int64_t r = a.getRank();
    int64_t k = bmm.getTransposeLhs() ? a.getDimSize(r - 2)
                                      : a.getDimSize(r - 1);
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

double opBytes(Operation *op) {
  if (llvm::isa<ConstantOp, ReshapeOp>(op))
    return 0;
  double b = 0;
  for (Type t : op->getOperandTypes())
    b += static_cast<double>(tensorBytes(t));
  for (Type t : op->getResultTypes())
    b += static_cast<double>(tensorBytes(t));
  return b;
}

double opTimeMs(Operation *op, const CostTarget &target) {
  if (llvm::isa<MatmulOp, BatchMatmulOp>(op))
    return 1e3 * std::max(opFlops(op) / target.matmulFlopsPerSec,
                          opBytes(op) / target.memBytesPerSec);
  return 1e3 * opBytes(op) / target.memBytesPerSec;
}

double commTimeMs(double bytes, const CostTarget &target) {
  return 1e3 * (target.linkLatencySec + bytes / target.linkBytesPerSec);
}

} // namespace zb
