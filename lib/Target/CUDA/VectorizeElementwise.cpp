//===- VectorizeElementwise.cpp - zb-gpu-vectorize-elementwise ------------===//
//
// Four consecutive elements per iteration of an elementwise parallel loop
// whose innermost dimension is a multiple of 4 (eight when every access it
// vectorises is 16-bit, bf16 under --precision bf16): the loads and stores
// indexed by the innermost induction variable in their last dimension become
// one vector<4> (vector<8>) access each (16 bytes: ld/st.global.v4 on the
// GPU, float4), the rest of the body is repeated per lane. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>

namespace zb {
#define GEN_PASS_DEF_ZBGPUVECTORIZEELEMENTWISE
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// The bit width of `type`'s elements that this pass vectorises (32, or 16:
/// bf16 storage), else 0.
unsigned vectorWidth(MemRefType type) {
  if (type.getRank() == 0 || !type.getElementType().isIntOrFloat())
    return 0;
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return bits == 32 || bits == 16 ? bits : 0;
}

/// Whether `memref[..., lanes*k]` is aligned to `lanes` elements for every
/// k and every value of the other indices when the buffer is: 32- or 16-bit
/// elements, a static offset and leading strides that are multiples of
/// `lanes`, a unit last stride.
bool alignedRows(MemRefType type, int64_t lanes) {
  if (!vectorWidth(type))
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || offset % lanes != 0 ||
      strides.back() != 1)
    return false;
  for (int64_t s : ArrayRef<int64_t>(strides).drop_back())
    if (ShapedType::isDynamic(s) || s % lanes != 0)
      return false;
  return true;
}

/// Whether `op` accesses `memref[..., iv]` with iv only in the last place
/// and the other indices the same for the lanes (defined outside the
/// loop's body, or its other induction variables), in rows aligned to
/// `lanes` elements.
template <typename Access>
bool lastIndexIs(Access op, Value iv, int64_t lanes) {
  ValueRange indices = op.getIndices();
  if (indices.empty() || indices.back() != iv)
    return false;
  Block *body = cast<BlockArgument>(iv).getOwner();
  for (Value index : indices.drop_back())
    if (index == iv ||
        (!isa<BlockArgument>(index) && index.getParentBlock() == body))
      return false;
  return alignedRows(op.getMemRefType(), lanes);
}

/// Whether `op` accesses `memref[..., iv]` as lastIndexIs says, ignoring the
/// alignment (the accesses that decide the lane count).
template <typename Access> bool indexedByLast(Access op, Value iv) {
  return lastIndexIs(op, iv, /*lanes=*/1);
}

/// Lanes of `loop`: 8 when every access indexed by the innermost induction
/// variable has 16-bit elements (8 x 2 bytes: one 16-byte access), else 4.
int64_t lanesOf(scf::ParallelOp loop) {
  Value iv = loop.getInductionVars().back();
  bool any = false, all16 = true;
  for (Operation &op : loop.getBody()->without_terminator()) {
    MemRefType type;
    if (auto load = dyn_cast<memref::LoadOp>(op); load && indexedByLast(load, iv))
      type = load.getMemRefType();
    else if (auto store = dyn_cast<memref::StoreOp>(op);
             store && indexedByLast(store, iv))
      type = store.getMemRefType();
    else
      continue;
    any = true;
    all16 &= vectorWidth(type) == 16;
  }
  return any && all16 ? 8 : 4;
}

/// The loops this pass handles: no results, zero lower bounds, unit steps,
/// constant upper bounds with the innermost a multiple of 4, a body of
/// region-free loads, stores and pure ops with every load before every
/// store, and at least one access to vectorise.
bool vectorizable(scf::ParallelOp loop, int64_t lanes) {
  if (loop.getNumResults() != 0)
    return false;
  for (auto [lb, step] : llvm::zip(loop.getLowerBound(), loop.getStep()))
    if (getConstantIntValue(lb) != 0 || getConstantIntValue(step) != 1)
      return false;
  std::optional<int64_t> inner =
      getConstantIntValue(loop.getUpperBound().back());
  if (!inner || *inner % lanes != 0 || *inner == 0)
    return false;
  Value iv = loop.getInductionVars().back();
  bool stored = false, vector = false;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (stored)
        return false;
      vector |= lastIndexIs(load, iv, lanes);
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      stored = true;
      vector |= lastIndexIs(store, iv, lanes);
    } else if (!isPure(&op)) {
      return false;
    }
  }
  return vector;
}

void vectorize(scf::ParallelOp loop, int64_t alignment, int64_t numLanes) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> ubs(loop.getUpperBound());
  int64_t inner = *getConstantIntValue(ubs.back());
  ubs.back() = arith::ConstantIndexOp::create(b, loc, inner / numLanes);
  auto wide = scf::ParallelOp::create(b, loc, loop.getLowerBound(), ubs,
                                      loop.getStep());
  b.setInsertionPointToStart(wide.getBody());
  Value iv = loop.getInductionVars().back();
  Value base =
      arith::MulIOp::create(b, loc, wide.getInductionVars().back(),
                            arith::ConstantIndexOp::create(b, loc, numLanes));
  IRMapping outer;
  for (auto [from, to] :
       llvm::zip(loop.getInductionVars(), wide.getInductionVars()))
    outer.map(from, to);
  // The claimed alignment, at most the vector's bytes (4 x bf16: 8).
  auto alignOf = [&](Type elem) {
    int64_t bytes = numLanes * elem.getIntOrFloatBitWidth() / 8;
    return alignment > 0 ? llvm::MaybeAlign(std::min(alignment, bytes))
                         : llvm::MaybeAlign();
  };
  // One vector load per vectorised load, before the lanes.
  DenseMap<Operation *, Value> vectors;
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || !lastIndexIs(load, iv, numLanes))
      continue;
    SmallVector<Value> indices;
    for (Value index : load.getIndices().drop_back())
      indices.push_back(outer.lookupOrDefault(index));
    indices.push_back(base);
    auto type = VectorType::get({numLanes}, load.getType());
    vectors[load] = vector::LoadOp::create(b, loc, type, load.getMemRef(),
                                           indices, false,
                                           alignOf(load.getType()));
  }
  // The body per lane; the vectorised stores collect their lanes.
  DenseMap<Operation *, SmallVector<Value>> lanes;
  for (int64_t j = 0; j < numLanes; ++j) {
    IRMapping map = outer;
    map.map(iv, arith::AddIOp::create(
                    b, loc, base, arith::ConstantIndexOp::create(b, loc, j)));
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto it = vectors.find(&op); it != vectors.end()) {
        map.map(op.getResult(0),
                vector::ExtractOp::create(b, loc, it->second, j));
        continue;
      }
      auto store = dyn_cast<memref::StoreOp>(op);
      if (store && lastIndexIs(store, iv, numLanes)) {
        lanes[store].push_back(map.lookupOrDefault(store.getValue()));
        continue;
      }
      b.clone(op, map);
    }
  }
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto it = lanes.find(&op);
    if (it == lanes.end())
      continue;
    auto store = cast<memref::StoreOp>(op);
    SmallVector<Value> indices;
    for (Value index : store.getIndices().drop_back())
      indices.push_back(outer.lookupOrDefault(index));
    indices.push_back(base);
    auto type = VectorType::get({numLanes}, store.getValue().getType());
    Value value = vector::FromElementsOp::create(b, loc, type, it->second);
    vector::StoreOp::create(b, loc, value, store.getMemRef(), indices, false,
                            alignOf(store.getValue().getType()));
  }
  loop.erase();
}

struct ZBGpuVectorizeElementwisePass
    : public zb::impl::ZBGpuVectorizeElementwiseBase<
          ZBGpuVectorizeElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<std::pair<scf::ParallelOp, int64_t>> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<scf::ParallelOp>() ||
          loop->getParentOfType<gpu::LaunchOp>())
        return;
      int64_t lanes = lanesOf(loop);
      if (vectorizable(loop, lanes))
        loops.push_back({loop, lanes});
    });
    for (auto [loop, lanes] : loops)
      vectorize(loop, alignment, lanes);
  }
};

} // namespace
