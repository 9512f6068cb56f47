//===- MapReductions.cpp - zb-gpu-map-reductions --------------------------===//
//
// Block-parallel reductions for the CUDA target: a linalg.generic on buffers
// whose innermost loop is a reduction (row sums and maxima of softmax,
// layer_norm, rms_norm, cross-entropy and their gradients; full reductions
// such as a loss sum) becomes a gpu.launch with one block per output element
// and a power-of-two number of threads that stride over the reduction
// (coalesced: consecutive threads read consecutive elements of the innermost
// dimension), each keeping a partial result, combined across the block with
// one uniform gpu.all_reduce (warp shuffles and shared memory once
// convert-gpu-to-nvvm lowers it). A reduction whose innermost loop is
// parallel (column sums: bias gradients) becomes blocks of 32 consecutive
// columns x Y threads over the reduction, combined by a tree in workgroup
// memory; every other reduction one thread per output. See Passes.td for the
// exact semantics.
//
// This file builds the kernels: one rewrite pattern per kernel
// (BlockReduction, ColumnReduction, SerialReduction), applied once per op by
// walkAndApplyPatterns; ReductionAnalysis.cpp decides which kernel a
// reduction becomes and which linalg.fill is folded into it.
//
//===----------------------------------------------------------------------===//
#include "ReductionAnalysis.h"

#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUMAPREDUCTIONS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb::reductions;

namespace {

/// Index values of `sizes` (row-major, the last fastest) from a linear index.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> result(sizes.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    Value v = linear;
    if (stride != 1)
      v = arith::DivUIOp::create(
          b, loc, v, arith::ConstantIndexOp::create(b, loc, stride));
    if (i > 0)
      v = arith::RemUIOp::create(
          b, loc, v, arith::ConstantIndexOp::create(b, loc, sizes[i]));
    result[i] = v;
    stride *= sizes[i];
  }
  return result;
}

/// The operand indices an indexing map selects for the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    indices.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
  }
  return indices;
}

/// Loop indices in loop order from the parallel and reduction ones (a
/// missing group, e.g. no reduction indices outside the reduction loops,
/// leaves null values: the outputs' maps do not use them).
SmallVector<Value> loopIvs(linalg::GenericOp generic,
                           ArrayRef<Value> parallelIvs,
                           ArrayRef<Value> reductionIvs = {}) {
  SmallVector<Value> ivs;
  unsigned p = 0, r = 0;
  for (auto it : generic.getIteratorTypesArray())
    ivs.push_back(it == utils::IteratorType::parallel
                      ? parallelIvs[p++]
                      : (r < reductionIvs.size() ? reductionIvs[r++] : Value()));
  return ivs;
}

/// The body of `generic` at loop indices `ivs` with the outputs' block
/// arguments bound to `accs`: loads the inputs, clones the operations
/// (linalg.index becomes the loop index) and returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, Location loc,
                             linalg::GenericOp generic, ArrayRef<Value> ivs,
                             ValueRange accs) {
  IRMapping mapping;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    Value v = input->get();
    if (isa<MemRefType>(v.getType()))
      v = memref::LoadOp::create(
          b, loc, v,
          applyMap(b, loc, generic.getMatchingIndexingMap(input), ivs));
    mapping.map(generic.getMatchingBlockArgument(input), v);
  }
  for (auto [i, init] : llvm::enumerate(generic.getDpsInitsMutable()))
    mapping.map(generic.getMatchingBlockArgument(&init), accs[i]);
  Block *body = generic.getBody();
  for (Operation &op : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(op, mapping);
  }
  SmallVector<Value> yielded;
  for (Value v : body->getTerminator()->getOperands())
    yielded.push_back(mapping.lookupOrDefault(v));
  return yielded;
}

/// A one-dimensional gpu.launch of `blocks` x `threads` at the builder's
/// insertion point; leaves the builder at the start of its body.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, blocks), one, one,
      arith::ConstantIndexOp::create(b, loc, threads), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

/// What the patterns share: the pass's options and, decided before any
/// rewrite, the value of the linalg.fill folded into each output of each
/// reduction (null: none; see foldableFill).
struct ReductionOptions {
  ReductionOptions(int64_t maxThreads, int64_t blockSize)
      : maxThreads(maxThreads), blockSize(blockSize) {}

  int64_t maxThreads;
  int64_t blockSize;
  DenseMap<Operation *, SmallVector<Value>> filled;

  /// Output `i`'s value before the reduction, at `indices`: the value of
  /// its folded linalg.fill, or a load.
  Value initialValue(OpBuilder &b, Location loc, linalg::GenericOp generic,
                     unsigned i, ValueRange indices) const {
    auto it = filled.find(generic);
    if (it != filled.end() && it->second[i])
      return it->second[i];
    return memref::LoadOp::create(b, loc, generic.getDpsInits()[i], indices);
  }
};

/// Records in `options.filled` the fills foldable into each reduction the
/// patterns will rewrite; returns those fills (erased after the rewrites,
/// which no longer read them).
SmallVector<Operation *> planFills(Operation *root, ReductionOptions &options) {
  SmallVector<Operation *> folded;
  root->walk([&](linalg::GenericOp generic) {
    if (!planReduction(generic, options.maxThreads))
      return;
    SmallVector<Value> values;
    bool any = false;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      linalg::FillOp fill;
      values.push_back(foldableFill(generic, init, fill));
      if (fill) {
        folded.push_back(fill);
        any = true;
      }
    }
    if (any)
      options.filled[generic] = std::move(values);
  });
  return folded;
}

/// A reduction (linalg.generic) rewritten to the kernel `Kernel` when
/// planReduction chooses it for the op.
template <ReductionKernel Kernel>
struct ReductionPattern : public OpRewritePattern<linalg::GenericOp> {
  ReductionPattern(MLIRContext *ctx, const ReductionOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(linalg::GenericOp generic,
                                PatternRewriter &rewriter) const final {
    std::optional<ReductionPlan> plan =
        planReduction(generic, options.maxThreads);
    if (!plan || plan->kernel != Kernel)
      return rewriter.notifyMatchFailure(generic, "another kernel");
    rewriter.setInsertionPoint(generic);
    rewrite(generic, plan->combiners, rewriter);
    rewriter.eraseOp(generic);
    return success();
  }

  /// Builds the kernel before `generic` (the rewriter's insertion point).
  virtual void rewrite(linalg::GenericOp generic, ArrayRef<Combiner> combiners,
                       PatternRewriter &b) const = 0;

  const ReductionOptions &options;
};

/// One block per output element, a gpu.all_reduce over its threads.
struct BlockReduction : public ReductionPattern<ReductionKernel::Block> {
  using ReductionPattern::ReductionPattern;

  void rewrite(linalg::GenericOp generic, ArrayRef<Combiner> combiners,
               PatternRewriter &b) const override {
    Location loc = generic.getLoc();
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t rows = llvm::product_of(parallelSizes);
    int64_t reduced = llvm::product_of(reductionSizes);
    int64_t threads = std::clamp<int64_t>(
        static_cast<int64_t>(llvm::PowerOf2Ceil(reduced)), 32,
        options.maxThreads);
    gpu::LaunchOp launch = createLaunch(b, loc, rows, threads);
    Value row = launch.getBlockIds().x, tid = launch.getThreadIds().x;
    SmallVector<Value> parallelIvs = delinearize(b, loc, row, parallelSizes);

    // Per thread: partial = combine(f(inputs[r]), partial) for r = tid,
    // tid + threads, ... (the reduction loops flattened, innermost fastest).
    SmallVector<Value> identities;
    for (const Combiner &c : combiners)
      identities.push_back(arith::ConstantOp::create(b, loc, c.identity));
    auto loop = scf::ForOp::create(
        b, loc, tid, arith::ConstantIndexOp::create(b, loc, reduced),
        arith::ConstantIndexOp::create(b, loc, threads), identities);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> ivs = loopIvs(
          generic, parallelIvs,
          delinearize(b, loc, loop.getInductionVar(), reductionSizes));
      scf::YieldOp::create(
          b, loc, cloneBody(b, loc, generic, ivs, loop.getRegionIterArgs()));
    }

    // Across the block, then one thread combines with the output's value.
    SmallVector<Value> totals;
    for (auto [i, c] : llvm::enumerate(combiners))
      totals.push_back(gpu::AllReduceOp::create(
          b, loc, loop.getResult(i),
          gpu::AllReduceOperationAttr::get(b.getContext(), c.kind),
          /*uniform=*/true));
    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, tid,
        arith::ConstantIndexOp::create(b, loc, 0));
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      SmallVector<Value> ivs = loopIvs(generic, parallelIvs);
      for (auto [i, c] : llvm::enumerate(combiners)) {
        OpOperand &init = generic.getDpsInitsMutable()[i];
        SmallVector<Value> indices =
            applyMap(b, loc, generic.getMatchingIndexingMap(&init), ivs);
        Value old = options.initialValue(b, loc, generic, i, indices);
        IRMapping mapping;
        mapping.map(c.op->getOperand(c.accOperand), old);
        mapping.map(c.op->getOperand(1 - c.accOperand), totals[i]);
        Value combined = b.clone(*c.op, mapping)->getResult(0);
        memref::StoreOp::create(b, loc, combined, init.get(), indices);
      }
    }
    gpu::TerminatorOp::create(b, loc);
  }
};

/// A tile of `tileX` consecutive output elements per block (the parallel
/// loops flattened, row-major: with the innermost loop parallel,
/// consecutive threads read consecutive elements) times `tileY` threads
/// that stride over the flattened reduction indices; thread (x, y) keeps a
/// partial from the combiner's identity over r = y, y + tileY, ..., the
/// block combines the tileY partials of each column in workgroup memory by
/// a tree (rows y and y + s for s = tileY/2, ..., 1, a barrier after each
/// level), and thread (x, 0) combines the column's total with the output's
/// value (columnTile gives tileX and tileY).
struct ColumnReduction : public ReductionPattern<ReductionKernel::Columns> {
  using ReductionPattern::ReductionPattern;

  /// The kernel being built: the reduction, its sizes and tile, and the
  /// launch's values.
  struct Kernel {
    PatternRewriter &b;
    Location loc;
    linalg::GenericOp generic;
    ArrayRef<Combiner> combiners;
    int64_t tileX, tileY;
    SmallVector<int64_t> parallelSizes, reductionSizes;
    int64_t outputs, reduced;
    /// Blocks over the reduction (columnSplits): each reduces `chunk`
    /// consecutive reduction indices into `partials` (one memref<splits x
    /// outputs> per output), combined by a second kernel; 1: one kernel.
    int64_t splits = 1, chunk = 0;
    SmallVector<Value> partials;
    ArrayRef<BlockArgument> shared;
    Value tx, ty, column, split;

    Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
    /// column < outputs.
    Value inRange() {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                                   idx(outputs));
    }
    /// Row 0 of the tile and column < outputs: the thread that writes the
    /// column's total.
    Value writesTotal() {
      Value in = inRange();
      Value rowZero =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty, idx(0));
      return arith::AndIOp::create(b, loc, rowZero, in);
    }
    /// combine(acc, other) with the combiner `c` (cloned).
    Value combine(const Combiner &c, Value acc, Value other) {
      IRMapping mapping;
      mapping.map(c.op->getOperand(c.accOperand), acc);
      mapping.map(c.op->getOperand(1 - c.accOperand), other);
      return b.clone(*c.op, mapping)->getResult(0);
    }
  };

  void rewrite(linalg::GenericOp generic, ArrayRef<Combiner> combiners,
               PatternRewriter &b) const override {
    auto [tileX, tileY] = columnTile(generic, options.maxThreads);
    Kernel k{b, generic.getLoc(), generic, combiners, tileX, tileY};
    splitLoopSizes(generic, k.parallelSizes, k.reductionSizes);
    k.outputs = llvm::product_of(k.parallelSizes);
    k.reduced = llvm::product_of(k.reductionSizes);
    k.splits = columnSplits(k.outputs, k.reduced, tileX, tileY);
    k.chunk = (k.reduced + k.splits - 1) / k.splits;
    if (k.splits > 1)
      for (const Combiner &c : combiners)
        k.partials.push_back(memref::AllocOp::create(
            b, k.loc,
            MemRefType::get({k.splits, k.outputs}, c.identity.getType())));
    createColumnLaunch(k);
    storePartials(k);
    combineRows(k);
    if (k.splits > 1)
      storeSplitPartials(k);
    else
      storeTotals(k);
    gpu::TerminatorOp::create(b, k.loc);
    if (k.splits == 1)
      return;
    b.setInsertionPointAfter(k.shared.front().getOwner()->getParentOp());
    combineSplits(k);
    for (Value partial : k.partials)
      memref::DeallocOp::create(b, k.loc, partial);
  }

  /// The gpu.launch of ceil(outputs / tileX) blocks of tileX x tileY
  /// threads with a memref<tileY x tileX> in workgroup memory per output;
  /// leaves the builder at the start of its body (the launch's values in
  /// `k`).
  static void createColumnLaunch(Kernel &k) {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    int64_t tileX = k.tileX, tileY = k.tileY, outputs = k.outputs;
    auto idx = [&](int64_t v) -> Value { return k.idx(v); };
    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    SmallVector<Type> sharedTypes;
    for (const Combiner &c : k.combiners)
      sharedTypes.push_back(MemRefType::get({tileY, tileX},
                                            c.identity.getType(),
                                            MemRefLayoutAttrInterface(),
                                            workgroup));
    Value one = idx(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, idx((outputs + tileX - 1) / tileX),
        k.splits > 1 ? idx(k.splits) : one, one,
        idx(tileX), idx(tileY), one, /*dynamicSharedMemorySize=*/nullptr,
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{}, sharedTypes);
    b.setInsertionPointToStart(&launch.getBody().front());
    k.shared = launch.getWorkgroupAttributions();
    k.tx = launch.getThreadIds().x;
    k.ty = launch.getThreadIds().y;
    k.split = launch.getBlockIds().y;
    k.column = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                      idx(tileX)),
        k.tx);
  }

  /// Phase 1: this thread's partial of its column (the identity outside
  /// the output) into shared[y][x], then a barrier.
  static void storePartials(Kernel &k) {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    linalg::GenericOp generic = k.generic;
    Value tx = k.tx, ty = k.ty;
    auto idx = [&](int64_t v) -> Value { return k.idx(v); };
    SmallVector<Type> types;
    SmallVector<Value> identities;
    for (const Combiner &c : k.combiners) {
      types.push_back(c.identity.getType());
      identities.push_back(arith::ConstantOp::create(b, loc, c.identity));
    }
    auto ifIn = scf::IfOp::create(b, loc, types, k.inRange(),
                                  /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifIn.getThenRegion().front());
      SmallVector<Value> parallelIvs =
          delinearize(b, loc, k.column, k.parallelSizes);
      // Reduction indices [split * chunk, min(split * chunk + chunk,
      // reduced)), this thread's from its row on, every tileY-th.
      Value lower = ty, upper = idx(k.reduced);
      if (k.splits > 1) {
        Value first = arith::MulIOp::create(b, loc, k.split, idx(k.chunk));
        lower = arith::AddIOp::create(b, loc, first, ty);
        upper = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, first, idx(k.chunk)),
            upper);
      }
      auto loop =
          scf::ForOp::create(b, loc, lower, upper, idx(k.tileY), identities);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(loop.getBody());
        SmallVector<Value> ivs = loopIvs(
            generic, parallelIvs,
            delinearize(b, loc, loop.getInductionVar(), k.reductionSizes));
        scf::YieldOp::create(
            b, loc,
            cloneBody(b, loc, generic, ivs, loop.getRegionIterArgs()));
      }
      scf::YieldOp::create(b, loc, loop.getResults());
      b.setInsertionPointToStart(&ifIn.getElseRegion().front());
      scf::YieldOp::create(b, loc, identities);
    }
    for (auto [i, buffer] : llvm::enumerate(k.shared))
      memref::StoreOp::create(b, loc, ifIn.getResult(i), buffer,
                              ValueRange{ty, tx});
    gpu::BarrierOp::create(b, loc);
  }

  /// The tree over the tileY rows of each column: row y combines row y + s
  /// into itself for s = tileY/2, ..., 1, a barrier after each level.
  static void combineRows(Kernel &k) {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    Value tx = k.tx, ty = k.ty;
    auto idx = [&](int64_t v) -> Value { return k.idx(v); };
    for (int64_t s = k.tileY / 2; s >= 1; s /= 2) {
      Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          ty, idx(s));
      auto ifLower = scf::IfOp::create(b, loc, lower, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifLower.getThenRegion().front());
        Value partner = arith::AddIOp::create(b, loc, ty, idx(s));
        for (auto [i, c] : llvm::enumerate(k.combiners)) {
          Value mine = memref::LoadOp::create(b, loc, k.shared[i],
                                              ValueRange{ty, tx});
          Value theirs = memref::LoadOp::create(b, loc, k.shared[i],
                                                ValueRange{partner, tx});
          memref::StoreOp::create(b, loc, k.combine(c, mine, theirs),
                                  k.shared[i], ValueRange{ty, tx});
        }
      }
      gpu::BarrierOp::create(b, loc);
    }
  }

  /// With splits: row 0 of the tile stores each column's total of this
  /// block's chunk into partials[split][column].
  static void storeSplitPartials(Kernel &k) {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    auto ifFirst = scf::IfOp::create(b, loc, k.writesTotal(),
                                     /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    for (auto [i, partial] : llvm::enumerate(k.partials)) {
      Value total = memref::LoadOp::create(b, loc, k.shared[i],
                                           ValueRange{k.idx(0), k.tx});
      memref::StoreOp::create(b, loc, total, partial,
                              ValueRange{k.split, k.column});
    }
  }

  /// With splits, the second kernel: one thread per output element (blocks
  /// of the pass's block-size) combines its column's partials in split
  /// order, then the total with the output's value. Leaves the builder
  /// after the launch.
  void combineSplits(Kernel &k) const {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    linalg::GenericOp generic = k.generic;
    auto idx = [&](int64_t v) -> Value { return k.idx(v); };
    int64_t threads = options.blockSize;
    gpu::LaunchOp launch = createLaunch(
        b, loc, (k.outputs + threads - 1) / threads, threads);
    Value column = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x, idx(threads)),
        launch.getThreadIds().x);
    auto ifIn = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                              idx(k.outputs)),
        /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifIn.getThenRegion().front());
      SmallVector<Value> ivs =
          loopIvs(generic, delinearize(b, loc, column, k.parallelSizes));
      for (auto [i, c] : llvm::enumerate(k.combiners)) {
        Value first = memref::LoadOp::create(b, loc, k.partials[i],
                                             ValueRange{idx(0), column});
        auto loop = scf::ForOp::create(b, loc, idx(1), idx(k.splits), idx(1),
                                       ValueRange{first});
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(loop.getBody());
          Value next = memref::LoadOp::create(
              b, loc, k.partials[i],
              ValueRange{loop.getInductionVar(), column});
          scf::YieldOp::create(
              b, loc, k.combine(c, loop.getRegionIterArgs()[0], next));
        }
        Value total = loop.getResult(0);
        OpOperand &init = generic.getDpsInitsMutable()[i];
        SmallVector<Value> indices =
            applyMap(b, loc, generic.getMatchingIndexingMap(&init), ivs);
        Value old = options.initialValue(b, loc, generic, i, indices);
        memref::StoreOp::create(b, loc, k.combine(c, old, total), init.get(),
                                indices);
      }
    }
    gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointAfter(launch);
  }

  /// Row 0 of the tile combines each column's total with the output.
  void storeTotals(Kernel &k) const {
    PatternRewriter &b = k.b;
    Location loc = k.loc;
    linalg::GenericOp generic = k.generic;
    Value tx = k.tx;
    auto idx = [&](int64_t v) -> Value { return k.idx(v); };
    auto ifFirst = scf::IfOp::create(b, loc, k.writesTotal(),
                                     /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    SmallVector<Value> ivs =
        loopIvs(generic, delinearize(b, loc, k.column, k.parallelSizes));
    for (auto [i, c] : llvm::enumerate(k.combiners)) {
      OpOperand &init = generic.getDpsInitsMutable()[i];
      SmallVector<Value> indices =
          applyMap(b, loc, generic.getMatchingIndexingMap(&init), ivs);
      Value old = options.initialValue(b, loc, generic, i, indices);
      Value total = memref::LoadOp::create(b, loc, k.shared[i],
                                           ValueRange{idx(0), tx});
      memref::StoreOp::create(b, loc, k.combine(c, old, total), init.get(),
                              indices);
    }
  }
};

/// One thread per output element (the parallel loops flattened,
/// row-major: consecutive threads, consecutive innermost elements), which
/// runs the reduction loops in the linalg op's order from the output's
/// value: exactly the CPU backend's arithmetic.
struct SerialReduction : public ReductionPattern<ReductionKernel::Serial> {
  using ReductionPattern::ReductionPattern;

  void rewrite(linalg::GenericOp generic, ArrayRef<Combiner>,
               PatternRewriter &b) const override {
    Location loc = generic.getLoc();
    auto iterators = generic.getIteratorTypesArray();
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t outputs = llvm::product_of(parallelSizes);
    int64_t threads = std::min<int64_t>(options.blockSize, outputs);
    threads = std::max<int64_t>(32, (threads + 31) / 32 * 32);
    gpu::LaunchOp launch =
        createLaunch(b, loc, (outputs + threads - 1) / threads, threads);
    Block &kernel = launch.getBody().front();
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              arith::ConstantIndexOp::create(b, loc, threads)),
        launch.getThreadIds().x);
    Value inRange = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, linear,
        arith::ConstantIndexOp::create(b, loc, outputs));
    auto ifIn = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(&ifIn.getThenRegion().front());
    SmallVector<Value> ivs =
        loopIvs(generic, delinearize(b, loc, linear, parallelSizes));
    auto outputIndices = [&](OpOperand &init) {
      return applyMap(b, loc, generic.getMatchingIndexingMap(&init), ivs);
    };
    SmallVector<Value> accs;
    for (auto [i, init] : llvm::enumerate(generic.getDpsInitsMutable()))
      accs.push_back(
          options.initialValue(b, loc, generic, i, outputIndices(init)));
    // The reduction loops, outermost first, around the body.
    SmallVector<scf::ForOp> loops;
    OpBuilder::InsertionGuard guard(b);
    for (auto [i, it] : llvm::enumerate(iterators)) {
      if (it != utils::IteratorType::reduction)
        continue;
      auto loop = scf::ForOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, 0),
          arith::ConstantIndexOp::create(b, loc, ranges[i]),
          arith::ConstantIndexOp::create(b, loc, 1),
          loops.empty() ? ValueRange(accs)
                        : ValueRange(loops.back().getRegionIterArgs()));
      if (!loops.empty()) {
        b.setInsertionPointToEnd(loops.back().getBody());
        scf::YieldOp::create(b, loc, loop.getResults());
      }
      loops.push_back(loop);
      ivs[i] = loop.getInductionVar();
      b.setInsertionPointToStart(loop.getBody());
    }
    scf::YieldOp::create(b, loc,
                         cloneBody(b, loc, generic, ivs,
                                   loops.back().getRegionIterArgs()));
    b.setInsertionPointAfter(loops.front());
    for (auto [i, init] : llvm::enumerate(generic.getDpsInitsMutable()))
      memref::StoreOp::create(b, loc, loops.front().getResult(i), init.get(),
                              outputIndices(init));
    b.setInsertionPointToEnd(&kernel);
    gpu::TerminatorOp::create(b, loc);
  }
};

struct ZBGpuMapReductionsPass
    : public zb::impl::ZBGpuMapReductionsBase<ZBGpuMapReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxThreads != 0 &&
        (maxThreads < 32 || maxThreads > 1024 ||
         !llvm::isPowerOf2_64(static_cast<uint64_t>(maxThreads)))) {
      getOperation()->emitError("zb-gpu-map-reductions: max-threads must be "
                                "0 or a power of two in 32 .. 1024, got ")
          << static_cast<int64_t>(maxThreads);
      return signalPassFailure();
    }
    if (blockSize < 32 || blockSize > 1024) {
      getOperation()->emitError("zb-gpu-map-reductions: block-size must be "
                                "in 32 .. 1024, got ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    ReductionOptions options(maxThreads, blockSize);
    // A reduction into a freshly filled buffer starts from the fill's
    // value in its kernel: no fill kernel (one launch fewer), the same
    // arithmetic.
    SmallVector<Operation *> folded = planFills(getOperation(), options);
    RewritePatternSet patterns(&getContext());
    patterns.add<BlockReduction, ColumnReduction, SerialReduction>(
        &getContext(), options);
    // One visit per op, no folding and no dead-code elimination: the IR
    // around the reductions stays as it is.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    for (Operation *fill : folded)
      fill->erase();
  }
};

} // namespace
