//===- CostModel.h - FLOP/byte cost model for pipeline stages ---*- C++ -*-===//
//
// Estimates the time of zb ops on a named target from FLOPs and bytes moved,
// the inputs T_F, T_B, T_W, T_comm of the scheduler (Zero Bubble paper,
// Section 3 and Table 1). Times in milliseconds, sizes in bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TRANSFORMS_COSTMODEL_H
#define ZB_TRANSFORMS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace zb {

/// A compute target: peak rates used to turn FLOPs and bytes into time.
struct CostTarget {
  std::string name;
  double matmulFlopsPerSec; // dense GEMM throughput (FLOP/s)
  double memBytesPerSec;    // memory bandwidth for elementwise work (B/s)
  double linkBytesPerSec;   // point-to-point bandwidth between ranks (B/s)
  double linkLatencySec;    // point-to-point latency (s)
};

/// Returns the target called `name` ("cpu": one core of this machine with
/// OpenBLAS and MPI over shared memory; "h100": an H100 SXM with NVLink), or
/// std::nullopt for an unknown name.
std::optional<CostTarget> lookupCostTarget(llvm::StringRef name);

/// FLOPs of one op (2*M*N*K for a matmul, one per output element for
/// elementwise ops, one per input element for reductions; 0 for constants).
double opFlops(mlir::Operation *op);
/// Bytes an op reads and writes (operands + results).
double opBytes(mlir::Operation *op);
/// Estimated time of one op on `target`, in milliseconds.
double opTimeMs(mlir::Operation *op, const CostTarget &target);
/// Size in bytes of a statically shaped tensor type (0 otherwise).
int64_t tensorBytes(mlir::Type type);
/// Time to send `bytes` between two ranks on `target`, in milliseconds.
double commTimeMs(double bytes, const CostTarget &target);

} // namespace zb

#endif // ZB_TRANSFORMS_COSTMODEL_H
