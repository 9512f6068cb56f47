//===- CostModel.h - FLOP/byte cost model for pipeline stages ---*- C++ -*-===//
//
// Estimates the time of zb ops on a named target from FLOPs and bytes moved,
// the inputs T_F, T_B, T_W, T_comm of the scheduler (Zero Bubble paper,
// Section 3 and Table 1). Times in milliseconds, sizes in bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TRANSFORMS_COSTMODEL_H
#define ZB_TRANSFORMS_COSTMODEL_H

#include "zb/Formats/Options.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace zb {

/// A compute target: peak rates used to turn FLOPs and bytes into time
/// (roofline per op). Sources of the numbers: docs/cost-model.md.
struct CostTarget {
  std::string name;
  double matmulFlopsPerSec; // dense GEMM throughput (FLOP/s)
  double vectorFlopsPerSec; // non-GEMM arithmetic throughput (FLOP/s)
  double memBytesPerSec;    // memory bandwidth (B/s)
  double linkBytesPerSec;   // point-to-point bandwidth between ranks (B/s)
  double linkLatencySec;    // point-to-point latency (s)
  int64_t floatBytes;       // bytes per float element (0 = the IR type's)
};

/// The cost model of `target` (zb/Formats/Options.h): cpu, one core of
/// this machine with OpenBLAS and MPI over shared memory; h100, an H100
/// SXM with NVLink and every float counted as bf16 (zb/Formats/GpuPeaks.h,
/// kH100Sxm); cuda and cuda-emu, the same peaks (costModelTarget) with the
/// tensors at their IR sizes (floatBytes 0).
CostTarget lookupCostTarget(Target target);

/// FLOPs of one op (2*M*N*K for a matmul, one per output element for
/// elementwise ops, one per input element for reductions; 0 for constants).
double opFlops(mlir::Operation *op);
/// True for ops a compiler fuses into one kernel with their elementwise
/// neighbours: elementwise arithmetic, compare/select/cast, broadcast,
/// transpose, reshape, constant, causal mask.
bool isFusible(mlir::Operation *op);
/// Bytes an op moves to and from memory on `target` (null: the IR types'
/// sizes). A fusible op reads an operand only if it is produced outside its
/// kernel (non-fusible producer, other phase, argument) and only once per
/// kernel (its first fusible reader), and writes a result only if it leaves
/// the kernel; other ops read all operands and write all results.
double opBytes(mlir::Operation *op, const CostTarget *target = nullptr);
/// Roofline time of one op on `target` in milliseconds:
/// max(FLOPs / peak, bytes / bandwidth), peak = matmul peak for
/// zb.matmul / zb.batch_matmul, the vector peak otherwise.
double opTimeMs(mlir::Operation *op, const CostTarget &target);
/// Size in bytes of a statically shaped tensor type (0 otherwise).
int64_t tensorBytes(mlir::Type type);
/// Size in bytes of a tensor on `target`: float elements at the target's
/// floatBytes (2 for h100: bf16 activations), others at their IR size.
double targetBytes(mlir::Type type, const CostTarget *target);
/// Time to send `bytes` between two ranks on `target`, in milliseconds.
double commTimeMs(double bytes, const CostTarget &target);

} // namespace zb

#endif // ZB_TRANSFORMS_COSTMODEL_H
