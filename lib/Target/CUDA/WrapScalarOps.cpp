//===- WrapScalarOps.cpp - zb-gpu-wrap-scalar-ops -------------------------===//
//
// A linalg op on buffers without loops (every operand rank 0: the loss
// summed over microbatches, its mean, a fill of a scalar) lowers to plain
// loads and stores, which would stay in host code and read device memory
// there. Each such op is put inside a one-iteration scf.parallel, so the
// rest of the GPU pipeline makes it a one-thread kernel like any other
// loop. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUWRAPSCALAROPS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
struct ZBGpuWrapScalarOpsPass
    : public zb::impl::ZBGpuWrapScalarOpsBase<ZBGpuWrapScalarOpsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> scalarOps;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.getNumLoops() == 0 && op.hasPureBufferSemantics() &&
          !op->getParentOfType<scf::ParallelOp>())
        scalarOps.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : scalarOps) {
      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto loop = scf::ParallelOp::create(
          rewriter, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one},
          [](OpBuilder &, Location, ValueRange) {});
      rewriter.moveOpBefore(op, loop.getBody()->getTerminator());
    }
  }
};
} // namespace
