//===- FlattenParallelLoops.cpp - zb-gpu-flatten-parallel-loops -----------===//
//
// Every outermost scf.parallel with several dimensions becomes a
// one-dimensional loop over the row-major linear index (the last dimension
// fastest), so that tiling it by the block size and mapping the tiles to
// blocks and the tile's iterations to threads gives consecutive threads
// consecutive elements of the innermost dimension (coalesced), and a block
// never exceeds the tile size whatever the rank of the loop. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUFLATTENPARALLELLOOPS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
struct ZBGpuFlattenParallelLoopsPass
    : public zb::impl::ZBGpuFlattenParallelLoopsBase<
          ZBGpuFlattenParallelLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          loop.getNumLoops() > 1)
        loops.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : loops) {
      std::vector<unsigned> all(loop.getNumLoops());
      for (unsigned i = 0; i < all.size(); ++i)
        all[i] = i;
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
  }
};
} // namespace
