//===- ReductionAnalysis.h - The kernel of a reduction ----------*- C++ -*-===//
//
// Internal to lib/Target/CUDA (the zb-gpu-map-reductions pass,
// MapReductions.cpp). Which kernel a linalg.generic reduction on buffers
// becomes (a block reduction, a column reduction or thread-per-output), how
// each of its outputs is combined, the tile of a column reduction, and
// which linalg.fill is folded into it. See the pass in Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_TARGET_CUDA_REDUCTIONANALYSIS_H
#define ZB_LIB_TARGET_CUDA_REDUCTIONANALYSIS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <utility>

namespace zb::reductions {

/// How one output of a reduction is combined: `op` computes
/// combine(x, acc) where acc (the output's block argument) is operand
/// `accOperand` and is used nowhere else.
struct Combiner {
  mlir::Operation *op = nullptr;
  unsigned accOperand = 0;
  mlir::gpu::AllReduceOperation kind = mlir::gpu::AllReduceOperation::ADD;
  mlir::TypedAttr identity;
};

/// The kernel a reduction becomes.
enum class ReductionKernel { Block, Columns, Serial };

/// The kernel of a reduction and the combiners of its outputs (empty for a
/// thread-per-output kernel).
struct ReductionPlan {
  ReductionKernel kernel;
  llvm::SmallVector<Combiner> combiners;
};

/// The plan of `generic`; std::nullopt for a generic the pass leaves alone
/// (inside a gpu.launch; not on buffers, no reduction loop, a dynamic or
/// empty loop range, an output indexed by a reduction loop, regions in the
/// body). Block reductions need `maxThreads` > 0 and the innermost loop a
/// reduction; column reductions `maxThreads` > 0, the innermost loop
/// parallel and a columnTile height above 1; both need every output
/// combined by a recognised operation (Passes.td lists them). Every other
/// reduction is thread-per-output.
std::optional<ReductionPlan> planReduction(mlir::linalg::GenericOp generic,
                                           int64_t maxThreads);

/// The sizes of the parallel and of the reduction loops, in loop order.
void splitLoopSizes(mlir::linalg::GenericOp generic,
                    llvm::SmallVectorImpl<int64_t> &parallelSizes,
                    llvm::SmallVectorImpl<int64_t> &reductionSizes);

/// The block of a column reduction, (tileX, tileY) threads: tileX = the
/// output count's next power of two up to a warp (32), tileY = the reduced
/// count's next power of two up to `maxThreads` / tileX (1: no parallelism
/// over the reduction, the thread-per-output kernel is used).
std::pair<int64_t, int64_t> columnTile(mlir::linalg::GenericOp generic,
                                       int64_t maxThreads);

/// The blocks over the reduction of a column reduction of `outputs`
/// columns and `reduced` reduction indices with a (tileX, tileY) tile: 1
/// (one kernel) when its ceil(outputs / tileX) blocks fill kFillBlocks
/// already or a block's threads would get fewer than 4 indices each; else
/// the power of two that brings the blocks to kFillBlocks at least, while
/// each thread keeps 4 indices at least. The partials of the splits meet in
/// a second kernel. (H200, 2026-11-27: a 512-wide bias gradient over 1024
/// rows as 16 blocks of 32 x 8 threads made W 2.8x its roofline.)
int64_t columnSplits(int64_t outputs, int64_t reduced, int64_t tileX,
                     int64_t tileY);
/// Two blocks per SM of an H100/H200 (132 SMs).
constexpr int64_t kFillBlocks = 264;

/// The value a linalg.fill stores into output `init` of `generic` when the
/// fill can be folded into the reduction's kernel, or null: the output is a
/// memref.alloc of the same block whose only users before `generic` are one
/// linalg.fill (of the element type) and `generic` itself, as this output
/// alone (so no view or call sees the filled buffer before the reduction),
/// and the output's indexing map is a permutation of the parallel loops
/// (the reduction then stores every element once). `fill` is set to it.
/// Assumes planReduction(generic) is not std::nullopt.
mlir::Value foldableFill(mlir::linalg::GenericOp generic,
                         mlir::OpOperand &init, mlir::linalg::FillOp &fill);

} // namespace zb::reductions

#endif // ZB_LIB_TARGET_CUDA_REDUCTIONANALYSIS_H
