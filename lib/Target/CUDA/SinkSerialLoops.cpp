//===- SinkSerialLoops.cpp - zb-gpu-sink-serial-loops ---------------------===//
//
// A serial scf.for around one scf.parallel (the scatter-add of an embedding
// gradient: for every token n, row ids[n] of the gradient += row n of the
// update) would stay in host code: the host reads the token ids from
// device memory and launches one row kernel per token. When the parallel
// iterations are independent across the serial loop's iterations, the loops
// are interchanged: the parallel loop outside (one kernel), the serial loop
// inside every thread, in the same order, so each element receives the same
// additions in the same order (bit-identical to the CPU backend). See
// Passes.td for the legality conditions.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUSINKSERIALLOOPS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// The allocation (or function argument) a memref value views, through
/// subviews, reshapes and casts.
Value baseOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto sv = dyn_cast<memref::SubViewOp>(def))
      v = sv.getSource();
    else if (auto c = dyn_cast<memref::CollapseShapeOp>(def))
      v = c.getSrc();
    else if (auto e = dyn_cast<memref::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<memref::CastOp>(def))
      v = c.getSource();
    else
      break;
  }
  return v;
}

/// Whether `v` is defined outside `op` (not in one of its regions).
bool definedOutside(Value v, Operation *op) {
  Operation *owner = v.getParentRegion()->getParentOp();
  return owner != op && !op->isProperAncestor(owner);
}

/// Whether `loop` (a serial loop whose body is pure ops, reads and exactly
/// one scf.parallel) can be interchanged with that parallel loop.
scf::ParallelOp interchangeable(scf::ForOp loop) {
  if (loop.getNumResults() != 0)
    return nullptr;
  scf::ParallelOp inner;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto p = dyn_cast<scf::ParallelOp>(op)) {
      if (inner)
        return nullptr;
      inner = p;
      continue;
    }
    // Index arithmetic, views and reads only.
    if (isa<memref::LoadOp, memref::SubViewOp, memref::CollapseShapeOp,
            memref::ExpandShapeOp, memref::CastOp>(op) ||
        isPure(&op))
      continue;
    return nullptr;
  }
  if (!inner || inner.getNumResults() != 0 ||
      inner->getParentOfType<scf::ParallelOp>())
    return nullptr;
  for (Value v : llvm::concat<Value>(inner.getLowerBound(),
                                     inner.getUpperBound(), inner.getStep()))
    if (!definedOutside(v, loop))
      return nullptr;
  // The memrefs the parallel loop writes, and every access in it.
  llvm::SmallPtrSet<Value, 4> writtenBases;
  SmallVector<Operation *> accesses;
  bool ok = true;
  inner.walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      writtenBases.insert(baseOf(store.getMemRef()));
      accesses.push_back(op);
    } else if (isa<memref::LoadOp>(op)) {
      accesses.push_back(op);
    } else if (op != inner && !isPure(op) &&
               !isa<scf::ReduceOp, scf::YieldOp>(op)) {
      ok = false;
    }
  });
  // Written memrefs are allocations of this function: nothing else aliases
  // them except views of them (which baseOf sees through).
  if (!ok || writtenBases.empty() ||
      llvm::any_of(writtenBases, [](Value base) {
        return !base.getDefiningOp<memref::AllocOp>();
      }))
    return nullptr;
  // The serial loop's reads (token ids) must not be written inside.
  for (Operation &op : loop.getBody()->without_terminator())
    if (auto load = dyn_cast<memref::LoadOp>(op))
      if (writtenBases.contains(baseOf(load.getMemRef())))
        return nullptr;
  // Every access to a written allocation: its indices are the parallel
  // induction variables in order, through a view whose offsets are
  // invariant in the serial loop wherever the parallel loop has more than
  // one iteration. Then distinct parallel iterations touch distinct
  // elements in every serial iteration, and the interchange keeps each
  // element's order of updates.
  SmallVector<Value> ivs(inner.getBody()->getArguments());
  for (Operation *op : accesses) {
    Value memref = isa<memref::StoreOp>(op)
                       ? cast<memref::StoreOp>(op).getMemRef()
                       : cast<memref::LoadOp>(op).getMemRef();
    if (!writtenBases.contains(baseOf(memref)))
      continue;
    SmallVector<Value> indices(isa<memref::StoreOp>(op)
                                   ? cast<memref::StoreOp>(op).getIndices()
                                   : cast<memref::LoadOp>(op).getIndices());
    if (indices != ivs)
      return nullptr;
    auto view = memref.getDefiningOp<memref::SubViewOp>();
    if (!view || baseOf(view.getSource()) != view.getSource() ||
        !view.hasUnitStride())
      return nullptr;
    for (auto [d, offset] : llvm::enumerate(view.getMixedOffsets())) {
      auto value = dyn_cast<Value>(offset);
      if (!value || definedOutside(value, loop))
        continue;
      // A varying offset only where the parallel loop has one iteration.
      std::optional<int64_t> lb = getConstantIntValue(inner.getLowerBound()[d]);
      std::optional<int64_t> ub = getConstantIntValue(inner.getUpperBound()[d]);
      if (!lb || !ub || *ub - *lb > 1)
        return nullptr;
    }
  }
  return inner;
}

struct ZBGpuSinkSerialLoopsPass
    : public zb::impl::ZBGpuSinkSerialLoopsBase<ZBGpuSinkSerialLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<std::pair<scf::ForOp, scf::ParallelOp>> candidates;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>())
        return;
      if (scf::ParallelOp inner = interchangeable(loop))
        candidates.push_back({loop, inner});
    });
    IRRewriter rewriter(&getContext());
    for (auto [loop, inner] : candidates) {
      rewriter.setInsertionPoint(loop);
      auto outer = scf::ParallelOp::create(
          rewriter, inner.getLoc(), inner.getLowerBound(),
          inner.getUpperBound(), inner.getStep(),
          [](OpBuilder &, Location, ValueRange) {});
      rewriter.setInsertionPoint(outer.getBody()->getTerminator());
      auto serial = scf::ForOp::create(rewriter, loop.getLoc(),
                                       loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep());
      IRMapping map;
      map.map(loop.getInductionVar(), serial.getInductionVar());
      map.map(inner.getBody()->getArguments(), outer.getBody()->getArguments());
      rewriter.setInsertionPoint(serial.getBody()->getTerminator());
      for (Operation &op : loop.getBody()->without_terminator()) {
        if (&op != inner.getOperation()) {
          rewriter.clone(op, map);
          continue;
        }
        for (Operation &bodyOp : inner.getBody()->without_terminator())
          rewriter.clone(bodyOp, map);
      }
      rewriter.eraseOp(loop);
    }
  }
};

} // namespace
