//===- MemRefCopyToLinalg.cpp - zb-memref-copy-to-linalg ------------------===//
//
// memref.copy -> linalg.copy, so that copies lower to loops in the rank
// program instead of calls of MLIR's `memrefCopy` (libmlir_c_runner_utils):
// rank programs then depend on libzbrt alone (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace zb {
#define GEN_PASS_DEF_ZBMEMREFCOPYTOLINALG
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
struct ZBMemRefCopyToLinalgPass
    : public zb::impl::ZBMemRefCopyToLinalgBase<ZBMemRefCopyToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp op : copies) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                  op.getTarget());
    }
  }
};
} // namespace
