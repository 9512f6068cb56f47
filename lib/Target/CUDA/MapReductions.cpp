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
// memory. See Passes.td for the exact semantics.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUMAPREDUCTIONS
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// How one output of a reduction is combined: `op` computes
/// combine(x, acc) where acc (the output's block argument) is operand
/// `accOperand` and is used nowhere else.
struct Combiner {
  Operation *op = nullptr;
  unsigned accOperand = 0;
  gpu::AllReduceOperation kind = gpu::AllReduceOperation::ADD;
  TypedAttr identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp generic,
                                      unsigned output) {
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  BlockArgument acc =
      generic.getMatchingBlockArgument(generic.getDpsInitOperand(output));
  Operation *def = yield.getOperand(output).getDefiningOp();
  if (!def || def->getBlock() != body || !acc.hasOneUse() ||
      acc.getUses().begin()->getOwner() != def || def->getNumOperands() != 2 ||
      def->getNumResults() != 1 || def->getOperand(0) == def->getOperand(1))
    return std::nullopt;
  Combiner c;
  c.op = def;
  c.accOperand = def->getOperand(0) == acc ? 0 : 1;
  Type type = acc.getType();
  Builder b(generic.getContext());
  auto fp = [&](double v) -> TypedAttr {
    auto ft = cast<FloatType>(type);
    llvm::APFloat value(v);
    bool lost;
    value.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                  &lost);
    return b.getFloatAttr(ft, value);
  };
  auto in = [&](int64_t v) -> TypedAttr { return b.getIntegerAttr(type, v); };
  unsigned width = type.isIntOrFloat() ? type.getIntOrFloatBitWidth() : 0;
  using K = gpu::AllReduceOperation;
  bool ok =
      llvm::TypeSwitch<Operation *, bool>(def)
          .Case([&](arith::AddFOp) {
            // -0.0 is the identity of IEEE addition (x + -0.0 == x for
            // every x, -0.0 included).
            c.kind = K::ADD;
            c.identity = fp(-0.0);
            return true;
          })
          .Case([&](arith::MulFOp) {
            c.kind = K::MUL;
            c.identity = fp(1.0);
            return true;
          })
          .Case([&](arith::MaximumFOp) {
            c.kind = K::MAXIMUMF;
            c.identity = fp(-INFINITY);
            return true;
          })
          .Case([&](arith::MaxNumFOp) {
            c.kind = K::MAXNUMF;
            c.identity = fp(-INFINITY);
            return true;
          })
          .Case([&](arith::MinimumFOp) {
            c.kind = K::MINIMUMF;
            c.identity = fp(INFINITY);
            return true;
          })
          .Case([&](arith::MinNumFOp) {
            c.kind = K::MINNUMF;
            c.identity = fp(INFINITY);
            return true;
          })
          .Case([&](arith::AddIOp) {
            c.kind = K::ADD;
            c.identity = in(0);
            return true;
          })
          .Case([&](arith::MulIOp) {
            c.kind = K::MUL;
            c.identity = in(1);
            return true;
          })
          .Case([&](arith::MaxSIOp) {
            c.kind = K::MAXSI;
            c.identity = b.getIntegerAttr(
                type, llvm::APInt::getSignedMinValue(width));
            return true;
          })
          .Case([&](arith::MinSIOp) {
            c.kind = K::MINSI;
            c.identity = b.getIntegerAttr(
                type, llvm::APInt::getSignedMaxValue(width));
            return true;
          })
          .Default([](Operation *) { return false; });
  if (!ok || !type.isIntOrFloat() || (isa<IntegerType>(type) && width > 64))
    return std::nullopt;
  return c;
}

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

/// Why `generic` cannot become a reduction kernel at all; empty when it can
/// (a thread-per-output kernel always works then).
std::string unsupported(linalg::GenericOp generic) {
  if (!generic.hasPureBufferSemantics())
    return "not on buffers";
  auto iterators = generic.getIteratorTypesArray();
  if (!llvm::is_contained(iterators, utils::IteratorType::reduction))
    return "no reduction";
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return "dynamic shape";
  if (llvm::is_contained(ranges, 0))
    return "empty";
  for (OpOperand &init : generic.getDpsInitsMutable())
    for (AffineExpr e : generic.getMatchingIndexingMap(&init).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || iterators[dim.getPosition()] != utils::IteratorType::parallel)
        return "an output is indexed by a reduction loop";
    }
  if (llvm::any_of(generic.getBody()->getOperations(),
                   [](Operation &op) { return op.getNumRegions() > 0; }))
    return "regions in the body";
  return "";
}

/// The combiner of every output of `generic`, or std::nullopt when one is
/// not a recognised operation.
std::optional<SmallVector<Combiner>> allCombiners(linalg::GenericOp generic) {
  SmallVector<Combiner> combiners;
  for (unsigned i = 0, e = generic.getNumDpsInits(); i < e; ++i) {
    std::optional<Combiner> c = matchCombiner(generic, i);
    if (!c)
      return std::nullopt;
    combiners.push_back(*c);
  }
  return combiners;
}

/// The combiners of a reduction that can be a block reduction (innermost
/// loop a reduction, every output combined by a recognised operation);
/// std::nullopt otherwise. Assumes unsupported(generic) is empty.
std::optional<SmallVector<Combiner>>
blockReductionCombiners(linalg::GenericOp generic) {
  if (generic.getIteratorTypesArray().back() !=
      utils::IteratorType::reduction)
    return std::nullopt;
  return allCombiners(generic);
}

/// The combiners of a reduction whose innermost loop is parallel (a column
/// sum: bias gradients, layer_norm's gamma/beta gradients, a softmax over a
/// leading axis) when every output is combined by a recognised operation;
/// std::nullopt otherwise. Assumes unsupported(generic) is empty.
std::optional<SmallVector<Combiner>>
columnReductionCombiners(linalg::GenericOp generic) {
  if (generic.getIteratorTypesArray().back() != utils::IteratorType::parallel)
    return std::nullopt;
  return allCombiners(generic);
}

/// The sizes of the parallel and of the reduction loops, in loop order.
void splitLoopSizes(linalg::GenericOp generic,
                    SmallVectorImpl<int64_t> &parallelSizes,
                    SmallVectorImpl<int64_t> &reductionSizes) {
  for (auto [it, size] : llvm::zip(generic.getIteratorTypesArray(),
                                   generic.getStaticLoopRanges()))
    (it == utils::IteratorType::parallel ? parallelSizes : reductionSizes)
        .push_back(size);
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

/// The value a linalg.fill stores into output `init` of `generic` when the
/// fill can be folded into the reduction's kernel, or null: the output is a
/// memref.alloc of the same block whose only users before `generic` are one
/// linalg.fill (of the element type) and `generic` itself, as this output
/// alone (so no view or call sees the filled buffer before the reduction),
/// and the output's indexing map is a permutation of the parallel loops
/// (the reduction then stores every element once). `fill` is set to it.
Value foldableFill(linalg::GenericOp generic, OpOperand &init,
                   linalg::FillOp &fill) {
  fill = nullptr;
  Value buffer = init.get();
  auto alloc = buffer.getDefiningOp<memref::AllocOp>();
  Block *block = generic->getBlock();
  if (!alloc || alloc->getBlock() != block)
    return nullptr;
  AffineMap map = generic.getMatchingIndexingMap(&init);
  auto iterators = generic.getIteratorTypesArray();
  llvm::SmallBitVector seen(map.getNumDims());
  for (AffineExpr e : map.getResults()) {
    auto dim = cast<AffineDimExpr>(e); // unsupported() checked
    if (seen.test(dim.getPosition()))
      return nullptr;
    seen.set(dim.getPosition());
  }
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel && !seen.test(i))
      return nullptr;
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (user == generic.getOperation()) {
      if (&use != &init)
        return nullptr;
      continue;
    }
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor)
      return nullptr;
    if (generic->isBeforeInBlock(ancestor))
      continue;
    auto f = dyn_cast<linalg::FillOp>(user);
    if (!f || fill || f->getBlock() != block || !f.hasPureBufferSemantics() ||
        f.getDpsInits()[0] != buffer ||
        f.getInputs()[0].getType() != getElementTypeOrSelf(buffer.getType()))
      return nullptr;
    fill = f;
  }
  if (!fill)
    return nullptr;
  return fill.getInputs()[0];
}

struct ZBGpuMapReductionsPass
    : public zb::impl::ZBGpuMapReductionsBase<ZBGpuMapReductionsPass> {
  using Base::Base;

  /// Per reduction, the folded fill value of each output (null: none).
  DenseMap<Operation *, SmallVector<Value>> filled;

  /// Output `i`'s value before the reduction, at `indices`: the value of
  /// its folded linalg.fill, or a load.
  Value initialValue(OpBuilder &b, Location loc, linalg::GenericOp generic,
                     unsigned i, ValueRange indices) {
    auto it = filled.find(generic);
    if (it != filled.end() && it->second[i])
      return it->second[i];
    return memref::LoadOp::create(b, loc, generic.getDpsInits()[i], indices);
  }

  /// One block per output element, a gpu.all_reduce over its threads.
  void rewriteBlock(linalg::GenericOp generic, ArrayRef<Combiner> combiners) {
    Location loc = generic.getLoc();
    OpBuilder b(generic);
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t rows = llvm::product_of(parallelSizes);
    int64_t reduced = llvm::product_of(reductionSizes);
    int64_t threads = std::clamp<int64_t>(
        static_cast<int64_t>(llvm::PowerOf2Ceil(reduced)), 32, maxThreads);
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
        Value old = initialValue(b, loc, generic, i, indices);
        IRMapping mapping;
        mapping.map(c.op->getOperand(c.accOperand), old);
        mapping.map(c.op->getOperand(1 - c.accOperand), totals[i]);
        Value combined = b.clone(*c.op, mapping)->getResult(0);
        memref::StoreOp::create(b, loc, combined, init.get(), indices);
      }
    }
    gpu::TerminatorOp::create(b, loc);
    generic.erase();
  }

  /// A tile of `tileX` consecutive output elements per block (the parallel
  /// loops flattened, row-major: with the innermost loop parallel,
  /// consecutive threads read consecutive elements) times `tileY` threads
  /// that stride over the flattened reduction indices; thread (x, y) keeps a
  /// partial from the combiner's identity over r = y, y + tileY, ..., the
  /// block combines the tileY partials of each column in workgroup memory
  /// by a tree (rows y and y + s for s = tileY/2, ..., 1, a barrier after
  /// each level), and thread (x, 0) combines the column's total with the
  /// output's value.
  void rewriteColumns(linalg::GenericOp generic, ArrayRef<Combiner> combiners,
                      int64_t tileX, int64_t tileY) {
    Location loc = generic.getLoc();
    OpBuilder b(generic);
    MLIRContext *ctx = b.getContext();
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t outputs = llvm::product_of(parallelSizes);
    int64_t reduced = llvm::product_of(reductionSizes);
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto workgroup = gpu::AddressSpaceAttr::get(
        ctx, gpu::GPUDialect::getWorkgroupAddressSpace());
    SmallVector<Type> sharedTypes;
    for (const Combiner &c : combiners)
      sharedTypes.push_back(MemRefType::get({tileY, tileX},
                                            c.identity.getType(),
                                            MemRefLayoutAttrInterface(),
                                            workgroup));
    Value one = idx(1);
    auto launch = gpu::LaunchOp::create(
        b, loc, idx((outputs + tileX - 1) / tileX), one, one, idx(tileX),
        idx(tileY), one, /*dynamicSharedMemorySize=*/nullptr,
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{}, sharedTypes);
    b.setInsertionPointToStart(&launch.getBody().front());
    ArrayRef<BlockArgument> shared = launch.getWorkgroupAttributions();
    Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
    Value column = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                      idx(tileX)),
        tx);
    auto inRange = [&]() -> Value {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                                   idx(outputs));
    };
    SmallVector<Type> types;
    SmallVector<Value> identities;
    for (const Combiner &c : combiners) {
      types.push_back(c.identity.getType());
      identities.push_back(arith::ConstantOp::create(b, loc, c.identity));
    }

    // Phase 1: this thread's partial of its column (the identity outside
    // the output) into shared[y][x].
    auto ifIn = scf::IfOp::create(b, loc, types, inRange(), /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifIn.getThenRegion().front());
      SmallVector<Value> parallelIvs =
          delinearize(b, loc, column, parallelSizes);
      auto loop = scf::ForOp::create(b, loc, ty, idx(reduced), idx(tileY),
                                     identities);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(loop.getBody());
        SmallVector<Value> ivs = loopIvs(
            generic, parallelIvs,
            delinearize(b, loc, loop.getInductionVar(), reductionSizes));
        scf::YieldOp::create(
            b, loc,
            cloneBody(b, loc, generic, ivs, loop.getRegionIterArgs()));
      }
      scf::YieldOp::create(b, loc, loop.getResults());
      b.setInsertionPointToStart(&ifIn.getElseRegion().front());
      scf::YieldOp::create(b, loc, identities);
    }
    for (auto [i, buffer] : llvm::enumerate(shared))
      memref::StoreOp::create(b, loc, ifIn.getResult(i), buffer,
                              ValueRange{ty, tx});
    gpu::BarrierOp::create(b, loc);

    // The tree over the tileY rows of each column.
    auto combine = [&](const Combiner &c, Value acc, Value other) {
      IRMapping mapping;
      mapping.map(c.op->getOperand(c.accOperand), acc);
      mapping.map(c.op->getOperand(1 - c.accOperand), other);
      return b.clone(*c.op, mapping)->getResult(0);
    };
    for (int64_t s = tileY / 2; s >= 1; s /= 2) {
      Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          ty, idx(s));
      auto ifLower = scf::IfOp::create(b, loc, lower, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifLower.getThenRegion().front());
        Value partner = arith::AddIOp::create(b, loc, ty, idx(s));
        for (auto [i, c] : llvm::enumerate(combiners)) {
          Value mine = memref::LoadOp::create(b, loc, shared[i],
                                              ValueRange{ty, tx});
          Value theirs = memref::LoadOp::create(b, loc, shared[i],
                                                ValueRange{partner, tx});
          memref::StoreOp::create(b, loc, combine(c, mine, theirs), shared[i],
                                  ValueRange{ty, tx});
        }
      }
      gpu::BarrierOp::create(b, loc);
    }

    // Row 0 of the tile combines each column's total with the output.
    Value first = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty, idx(0)),
        inRange());
    auto ifFirst = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
      SmallVector<Value> ivs =
          loopIvs(generic, delinearize(b, loc, column, parallelSizes));
      for (auto [i, c] : llvm::enumerate(combiners)) {
        OpOperand &init = generic.getDpsInitsMutable()[i];
        SmallVector<Value> indices =
            applyMap(b, loc, generic.getMatchingIndexingMap(&init), ivs);
        Value old = initialValue(b, loc, generic, i, indices);
        Value total = memref::LoadOp::create(b, loc, shared[i],
                                             ValueRange{idx(0), tx});
        memref::StoreOp::create(b, loc, combine(c, old, total), init.get(),
                                indices);
      }
    }
    gpu::TerminatorOp::create(b, loc);
    generic.erase();
  }

  /// One thread per output element (the parallel loops flattened,
  /// row-major: consecutive threads, consecutive innermost elements), which
  /// runs the reduction loops in the linalg op's order from the output's
  /// value: exactly the CPU backend's arithmetic.
  void rewriteSerial(linalg::GenericOp generic) {
    Location loc = generic.getLoc();
    OpBuilder b(generic);
    auto iterators = generic.getIteratorTypesArray();
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t outputs = llvm::product_of(parallelSizes);
    int64_t threads = std::min<int64_t>(blockSize, outputs);
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
      accs.push_back(initialValue(b, loc, generic, i, outputIndices(init)));
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
    generic.erase();
  }

  /// The block of a column reduction: tileX = the output count's next
  /// power of two up to a warp (32), tileY = the reduced count's next power
  /// of two up to max-threads / tileX (1: no parallelism over the
  /// reduction, the thread-per-output kernel is used).
  std::pair<int64_t, int64_t> columnTile(linalg::GenericOp generic) const {
    SmallVector<int64_t> parallelSizes, reductionSizes;
    splitLoopSizes(generic, parallelSizes, reductionSizes);
    int64_t outputs = llvm::product_of(parallelSizes);
    int64_t reduced = llvm::product_of(reductionSizes);
    int64_t tileX = std::min<int64_t>(
        static_cast<int64_t>(llvm::PowerOf2Ceil(outputs)), 32);
    int64_t tileY = std::min<int64_t>(
        static_cast<int64_t>(llvm::PowerOf2Ceil(reduced)), maxThreads / tileX);
    return {tileX, std::max<int64_t>(tileY, 1)};
  }

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
    SmallVector<std::pair<linalg::GenericOp, SmallVector<Combiner>>> blocks,
        columns;
    SmallVector<linalg::GenericOp> serial;
    getOperation()->walk([&](linalg::GenericOp generic) {
      if (generic->getParentOfType<gpu::LaunchOp>() ||
          !unsupported(generic).empty())
        return;
      std::optional<SmallVector<Combiner>> combiners;
      if (maxThreads > 0)
        combiners = blockReductionCombiners(generic);
      if (combiners) {
        blocks.emplace_back(generic, std::move(*combiners));
        return;
      }
      if (maxThreads > 0 && columnTile(generic).second > 1)
        combiners = columnReductionCombiners(generic);
      if (combiners)
        columns.emplace_back(generic, std::move(*combiners));
      else
        serial.push_back(generic);
    });
    // A reduction into a freshly filled buffer starts from the fill's
    // value in its kernel: no fill kernel (one launch fewer), the same
    // arithmetic.
    SmallVector<Operation *> folded;
    auto foldFills = [&](linalg::GenericOp generic) {
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
        filled[generic] = std::move(values);
    };
    for (auto &entry : blocks)
      foldFills(entry.first);
    for (auto &entry : columns)
      foldFills(entry.first);
    for (linalg::GenericOp generic : serial)
      foldFills(generic);
    for (auto &[generic, combiners] : blocks)
      rewriteBlock(generic, combiners);
    for (auto &[generic, combiners] : columns) {
      auto [tileX, tileY] = columnTile(generic);
      rewriteColumns(generic, combiners, tileX, tileY);
    }
    for (linalg::GenericOp generic : serial)
      rewriteSerial(generic);
    for (Operation *fill : folded)
      fill->erase();
    filled.clear();
  }
};

} // namespace
