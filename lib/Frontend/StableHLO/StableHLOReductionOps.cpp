//===- StableHLOReductionOps.cpp - reduce on data -------------------------===//
//
// reduce of floats (add, maximum, minimum) and of booleans (and, or: jnp.all
// and jnp.any), and the combiner of a reduce body (reduceKind, which the
// fold of reduce uses too). See StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;
using namespace zb::frontend::stablehlo_import;

std::string Importer::reduceKind(Operation *op) {
  static constexpr const char *kForms =
      "only reductions with a single add, maximum, minimum, and or or in the "
      "body are supported";
  if (op->getNumOperands() != 2 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1) {
    error(op) << "only single-operand reductions are supported";
    return "";
  }
  Region &body = op->getRegion(0);
  if (!body.hasOneBlock() || body.front().getNumArguments() != 2) {
    error(op) << "malformed reduction body";
    return "";
  }
  Block &blk = body.front();
  if (blk.getOperations().size() != 2) {
    error(op) << kForms;
    return "";
  }
  Operation &combiner = blk.front();
  Operation &ret = blk.back();
  std::string kind = combiner.getName().getStringRef().str();
  bool argsOk = combiner.getNumOperands() == 2 &&
                ((combiner.getOperand(0) == blk.getArgument(0) &&
                  combiner.getOperand(1) == blk.getArgument(1)) ||
                 (combiner.getOperand(0) == blk.getArgument(1) &&
                  combiner.getOperand(1) == blk.getArgument(0)));
  if (!argsOk || ret.getNumOperands() != 1 ||
      ret.getOperand(0) != combiner.getResult(0) ||
      !llvm::is_contained(
          {StringRef("stablehlo.add"), StringRef("stablehlo.maximum"),
           StringRef("stablehlo.minimum"), StringRef("stablehlo.and"),
           StringRef("stablehlo.or"), StringRef("stablehlo.multiply")},
          StringRef(kind))) {
    error(op) << kForms << " (found '" << kind << "')";
    return "";
  }
  return kind;
}

/// reduce of floats (add -> zb.reduce_sum, maximum -> zb.reduce_max,
/// minimum -> -reduce_max(-x)) and of booleans (jnp.all / jnp.any, the
/// bounds masks of JAX's gathers: and -> min, or -> max over 0/1 floats).
LogicalResult Importer::importReduce(const OpDef &, Operation *op,
                                     ArrayRef<Val> in, Val &out) {
  std::string kind = reduceKind(op);
  if (kind.empty())
    return failure();
  FailureOr<SmallVector<int64_t>> dims =
      dimensionsAttr(op, "dimensions", in[0].type.getRank());
  if (failed(dims))
    return failure();
  if (!in[1].c || in[1].c->numElements() != 1)
    return error(op) << "the initial value must be a scalar constant";
  double init = in[1].c->data[0];
  zb::ZBBuilder zbb(b, loc);
  Type elem = out.type.getElementType();
  bool logical = kind == "stablehlo.and" || kind == "stablehlo.or";
  if (elem.isInteger(1) && logical) {
    FailureOr<Value> x = asFloat(in[0]);
    if (failed(x))
      return failure();
    Value r = kind == "stablehlo.or"
                  ? zbb.reduceMax(*x, *dims)
                  : zbb.neg(zbb.reduceMax(zbb.neg(*x), *dims));
    // A non-neutral initial value (false for and, true for or) decides.
    bool neutral = (init != 0.0) == (kind == "stablehlo.and");
    if (!neutral)
      r = zbb.splat(r, init != 0.0 ? 1.0 : 0.0);
    if (cast<RankedTensorType>(r.getType()).getShape() != out.type.getShape())
      r = zbb.reshape(r, out.type.getShape());
    out.v = zbb.compare("ne", r, zbb.splat(r, 0.0));
    return success();
  }
  if (!isa<FloatType>(elem))
    return error(op) << "reductions of integer data are not supported";
  if (kind != "stablehlo.add" && kind != "stablehlo.maximum" &&
      kind != "stablehlo.minimum")
    return error(op) << "a '" << kind
                     << "' reduction of data is not supported (add, maximum "
                        "and minimum are; and / or of booleans; any body on "
                        "constants)";
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  Value r;
  if (kind == "stablehlo.add") {
    r = zbb.reduceSum(*x, *dims);
    if (init != 0.0)
      r = zbb.add(r, zbb.splat(r, init));
  } else if (kind == "stablehlo.maximum") {
    r = zbb.reduceMax(*x, *dims);
    if (init != -std::numeric_limits<double>::infinity())
      r = zbb.max(r, zbb.splat(r, init));
  } else {
    r = zbb.neg(zbb.reduceMax(zbb.neg(*x), *dims));
    if (init != std::numeric_limits<double>::infinity())
      r = zbb.neg(zbb.max(zbb.neg(r), zbb.splat(r, -init)));
  }
  if (r.getType() != out.type)
    r = zbb.reshape(r, out.type.getShape());
  out.v = r;
  return success();
}

void zb::frontend::stablehlo_import::populateReductionOps(OpTable &table) {
  using I = Importer;
  static const OpDef defs[] = {
      {"stablehlo.reduce", &I::importReduce, &I::foldReduce, nullptr, nullptr,
       nullptr,
       "reductions of several operands together (such as jnp.argmax / "
       "argmin) are not supported"},
  };
  table.add(defs);
}
