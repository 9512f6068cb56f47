//===- StableHLOLoops.cpp - while loops and dynamic slices ----------------===//
//
// jax.lax.scan and fori_loop lower to stablehlo.while with an iteration
// counter compared against a constant. zb has no loops: the while is
// unrolled at import, the condition folded with the carried values of each
// iteration (the counter is a constant, so it folds), the body imported once
// per iteration. Inside the body the counter indexes the stacked layer
// weights (dynamic_slice) and the stacked outputs (dynamic_update_slice):
// after unrolling their start indices are constants and they become
// zb.slice / zb.concat / zb.pad + zb.select. A condition that depends on
// data cannot be unrolled and is an error naming the while. See
// StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

/// The most iterations a while is unrolled to (the ops of the body are
/// copied once per iteration).
static constexpr int64_t kMaxUnrolledIterations = 4096;

LogicalResult Importer::importWhile(Operation *op, ArrayRef<Val> in,
                                    int depth) {
  if (op->getNumRegions() != 2 || op->getRegion(0).empty() ||
      op->getRegion(1).empty())
    return error(op) << "malformed while (expected a cond and a body region)";
  Block &cond = op->getRegion(0).front();
  Block &body = op->getRegion(1).front();
  if (cond.getNumArguments() != in.size() ||
      body.getNumArguments() != in.size() || op->getNumResults() != in.size())
    return error(op) << "malformed while (operands, region arguments and "
                        "results differ in number)";
  Location whileLoc = convertLoc(op->getLoc());
  SmallVector<Val> carried(in);
  for (int64_t iter = 0;; ++iter) {
    SmallVector<Val> test;
    if (failed(importBlock(cond, carried, test, depth + 1)))
      return failure();
    if (test.size() != 1)
      return emitError(whileLoc) << "'" << op->getName().getStringRef()
                                 << "': the condition must return one value";
    if (!test[0].c || test[0].unsupported || test[0].c->numElements() != 1)
      return emitError(whileLoc)
             << "'" << op->getName().getStringRef()
             << "': the trip count depends on data (the loop condition is "
                "not a compile-time constant at iteration "
             << iter
             << "); zb unrolls loops whose trip count is known at import "
                "(jax.lax.scan, jax.lax.fori_loop with constant bounds)";
    if (test[0].c->data[0] == 0.0)
      break;
    if (iter >= kMaxUnrolledIterations)
      return emitError(whileLoc)
             << "'" << op->getName().getStringRef() << "': more than "
             << kMaxUnrolledIterations
             << " iterations; zb unrolls loops at import and stops there";
    SmallVector<Val> next;
    if (failed(importBlock(body, carried, next, depth + 1)))
      return failure();
    if (next.size() != carried.size())
      return emitError(whileLoc) << "'" << op->getName().getStringRef()
                                 << "': the body returns " << next.size()
                                 << " values for " << carried.size()
                                 << " carried ones";
    // The region's types are the source's; keep the carried type (a value
    // that stays constant keeps its HostTensor).
    for (auto [c, nv] : llvm::zip_equal(carried, next)) {
      RankedTensorType t = c.type;
      c = nv;
      c.type = t;
    }
  }
  for (auto [r, v] : llvm::zip_equal(op->getResults(), carried))
    scopes.back()[r] = v;
  return success();
}

FailureOr<SmallVector<int64_t>>
Importer::staticStarts(Operation *op, ArrayRef<Val> in, unsigned first,
                       ArrayRef<int64_t> dims, ArrayRef<int64_t> sizes) {
  if (in.size() != first + dims.size() || sizes.size() != dims.size()) {
    error(op) << "expected one start index per operand dimension";
    return failure();
  }
  SmallVector<int64_t> starts;
  for (size_t d = 0; d < dims.size(); ++d) {
    const Val &s = in[first + d];
    if (!s.c || s.unsupported || s.c->numElements() != 1) {
      error(op) << "start index #" << d
                << " depends on data; zb supports dynamic slices whose start "
                   "indices are known at import (such as the loop index of "
                   "an unrolled jax.lax.scan)";
      return failure();
    }
    if (sizes[d] < 0 || sizes[d] > dims[d]) {
      error(op) << "slice size " << sizes[d] << " does not fit dimension " << d
                << " of size " << dims[d];
      return failure();
    }
    // StableHLO clamps the start so that the slice stays in bounds.
    starts.push_back(std::clamp<int64_t>(
        zb::frontend::toInt64Saturated(s.c->data[0]), 0, dims[d] - sizes[d]));
  }
  return starts;
}

/// dynamic_slice of data with constant start indices: zb.slice.
LogicalResult Importer::importDynamicSlice(const OpDef &, Operation *op,
                                           ArrayRef<Val> in, Val &out) {
  FailureOr<SmallVector<int64_t>> sizes = i64Array(op, "slice_sizes");
  if (failed(sizes))
    return failure();
  FailureOr<SmallVector<int64_t>> start =
      staticStarts(op, in, 1, in[0].type.getShape(), *sizes);
  if (failed(start))
    return failure();
  if (ArrayRef<int64_t>(*sizes) != out.type.getShape())
    return error(op) << "slice_sizes do not match the result type "
                     << out.type;
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  SmallVector<int64_t> limit, step(start->size(), 1);
  for (auto [s, n] : llvm::zip_equal(*start, *sizes))
    limit.push_back(s + n);
  out.v = zb::ZBBuilder(b, loc).slice(*x, *start, limit, step);
  return success();
}

/// dynamic_update_slice of data with constant start indices: the update
/// concatenated between the operand's slices before and after it when they
/// differ in one dimension (a scan's stacked outputs), else zb.pad of the
/// update selected into the operand with a constant mask.
LogicalResult Importer::importDynamicUpdateSlice(const OpDef &, Operation *op,
                                                 ArrayRef<Val> in, Val &out) {
  RankedTensorType bt = in[0].type, ut = in[1].type;
  if (bt.getRank() != ut.getRank())
    return error(op) << "update rank differs from the operand's";
  FailureOr<SmallVector<int64_t>> start =
      staticStarts(op, in, 2, bt.getShape(), ut.getShape());
  if (failed(start))
    return failure();
  bool isFloat = isa<FloatType>(bt.getElementType());
  FailureOr<Value> base = isFloat ? asFloat(in[0]) : materialize(in[0]);
  FailureOr<Value> upd = isFloat ? asFloat(in[1]) : materialize(in[1]);
  if (failed(base) || failed(upd))
    return failure();
  if (cast<RankedTensorType>(base->getType()).getElementType() !=
      cast<RankedTensorType>(upd->getType()).getElementType())
    return error(op) << "update and operand element types differ";
  zb::ZBBuilder zbb(b, loc);
  int64_t rank = bt.getRank();
  SmallVector<int64_t> differing;
  for (int64_t d = 0; d < rank; ++d)
    if (ut.getDimSize(d) != bt.getDimSize(d))
      differing.push_back(d);
  if (differing.empty()) {
    out.v = *upd;
    return success();
  }
  if (differing.size() == 1) {
    int64_t d = differing[0];
    int64_t s = (*start)[d], e = s + ut.getDimSize(d);
    SmallVector<Value> pieces;
    auto piece = [&](int64_t from, int64_t to) {
      SmallVector<int64_t> lo(rank, 0), hi(bt.getShape()), step(rank, 1);
      lo[d] = from;
      hi[d] = to;
      pieces.push_back(zbb.slice(*base, lo, hi, step));
    };
    if (s > 0)
      piece(0, s);
    pieces.push_back(*upd);
    if (e < bt.getDimSize(d))
      piece(e, bt.getDimSize(d));
    out.v = pieces.size() == 1 ? pieces[0] : zbb.concat(pieces, d);
    return success();
  }
  if (!isFloat)
    return error(op) << "updates of integer data in more than one dimension "
                        "are not supported";
  SmallVector<int64_t> low(*start), high;
  for (int64_t d = 0; d < rank; ++d)
    high.push_back(bt.getDimSize(d) - (*start)[d] - ut.getDimSize(d));
  Value padded = zbb.pad(*upd, low, high, SmallVector<int64_t>(rank, 0));
  // The mask: true inside the update's box.
  auto maskT = RankedTensorType::get(bt.getShape(), b.getI1Type());
  SmallVector<bool> mask(bt.getNumElements());
  for (int64_t i = 0; i < (int64_t)mask.size(); ++i) {
    SmallVector<int64_t> idx = zb::frontend::delinearize(i, bt.getShape());
    bool inside = true;
    for (int64_t d = 0; d < rank; ++d)
      inside &= idx[d] >= (*start)[d] &&
                idx[d] < (*start)[d] + ut.getDimSize(d);
    mask[i] = inside;
  }
  Value m = zb::ConstantOp::create(b, loc, maskT,
                                   DenseElementsAttr::get(maskT, mask));
  out.v = zbb.select(m, padded, *base);
  return success();
}

//===----------------------------------------------------------------------===//
// The rows of the loop ops
//===----------------------------------------------------------------------===//

void zb::frontend::stablehlo_import::populateLoopOps(OpTable &table) {
  using I = Importer;
  static const OpDef defs[] = {
      {"stablehlo.while", nullptr, nullptr, nullptr, nullptr, &I::importWhile},
      {"stablehlo.dynamic_slice", &I::importDynamicSlice, &I::foldDynamicSlice},
      {"stablehlo.dynamic_update_slice", &I::importDynamicUpdateSlice,
       &I::foldDynamicUpdateSlice},
  };
  table.add(defs);
}
