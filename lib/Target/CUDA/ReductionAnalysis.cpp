//===- ReductionAnalysis.cpp - The kernel of a reduction ------------------===//
//
// The analysis half of zb-gpu-map-reductions (ReductionAnalysis.h): the
// combiner of each output of a reduction (the operation, its reduction kind
// and identity), whether a reduction is supported and which kernel it
// becomes, the tile of a column reduction, and the linalg.fill folded into
// it. MapReductions.cpp builds the kernels.
//
//===----------------------------------------------------------------------===//
#include "ReductionAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace zb::reductions;

namespace {

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

} // namespace

void zb::reductions::splitLoopSizes(linalg::GenericOp generic,
                                    SmallVectorImpl<int64_t> &parallelSizes,
                                    SmallVectorImpl<int64_t> &reductionSizes) {
  for (auto [it, size] : llvm::zip(generic.getIteratorTypesArray(),
                                   generic.getStaticLoopRanges()))
    (it == utils::IteratorType::parallel ? parallelSizes : reductionSizes)
        .push_back(size);
}

std::pair<int64_t, int64_t>
zb::reductions::columnTile(linalg::GenericOp generic, int64_t maxThreads) {
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

int64_t zb::reductions::columnSplits(int64_t outputs, int64_t reduced,
                                     int64_t tileX, int64_t tileY) {
  int64_t blocks = (outputs + tileX - 1) / tileX;
  int64_t splits = 1;
  while (blocks * splits < kFillBlocks && reduced / (2 * splits * tileY) >= 4)
    splits *= 2;
  return splits;
}

std::optional<ReductionPlan>
zb::reductions::planReduction(linalg::GenericOp generic, int64_t maxThreads) {
  if (generic->getParentOfType<gpu::LaunchOp>() ||
      !unsupported(generic).empty())
    return std::nullopt;
  std::optional<SmallVector<Combiner>> combiners;
  if (maxThreads > 0)
    combiners = blockReductionCombiners(generic);
  if (combiners)
    return ReductionPlan{ReductionKernel::Block, std::move(*combiners)};
  if (maxThreads > 0 && columnTile(generic, maxThreads).second > 1)
    combiners = columnReductionCombiners(generic);
  if (combiners)
    return ReductionPlan{ReductionKernel::Columns, std::move(*combiners)};
  return ReductionPlan{ReductionKernel::Serial, {}};
}

Value zb::reductions::foldableFill(linalg::GenericOp generic, OpOperand &init,
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
