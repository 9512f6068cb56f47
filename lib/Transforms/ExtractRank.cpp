//===- ExtractRank.cpp - zb-extract-rank: one rank's program --------------===//
//
// Keeps the step function of one rank (zb.rank = R) and what it calls, so
// that the module can be lowered to that rank's native program.
//
//===----------------------------------------------------------------------===//
#include "zb/Transforms/Passes.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"

namespace zb {
#define GEN_PASS_DEF_ZBEXTRACTRANK
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
/// The rank of a step function, or nullopt for any other function.
std::optional<int64_t> stepRank(func::FuncOp fn) {
  if (auto rank = fn->getAttrOfType<IntegerAttr>(zb::kStepRankAttr))
    return rank.getInt();
  return std::nullopt;
}

/// Removes the zb-dialect attributes (zb.role, zb.value, zb.index) of the
/// arguments and results of `fn`; other attributes stay.
void dropPortAttributes(func::FuncOp fn) {
  auto withoutZB = [](DictionaryAttr dict) {
    SmallVector<NamedAttribute> kept;
    if (dict)
      for (NamedAttribute a : dict)
        if (!a.getName().getValue().starts_with("zb."))
          kept.push_back(a);
    return kept;
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    fn.setArgAttrs(i, withoutZB(fn.getArgAttrDict(i)));
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    fn.setResultAttrs(i, withoutZB(fn.getResultAttrDict(i)));
}

struct ZBExtractRankPass
    : public zb::impl::ZBExtractRankBase<ZBExtractRankPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t rank = this->rank;
    SmallVector<int64_t> ranks;
    for (auto fn : module.getOps<func::FuncOp>())
      if (std::optional<int64_t> r = stepRank(fn))
        ranks.push_back(*r);
    if (!llvm::is_contained(ranks, rank)) {
      llvm::sort(ranks);
      InFlightDiagnostic diag = module.emitError()
                                << "zb-extract-rank: no step function for "
                                   "rank "
                                << static_cast<int64_t>(rank);
      if (ranks.empty())
        diag << " (the module has none: run zb-lower-pipeline first)";
      else
        diag << " (the module has ranks " << ranks << ")";
      return signalPassFailure();
    }
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      std::optional<int64_t> r = stepRank(fn);
      if (r && *r != rank) {
        fn.erase();
        continue;
      }
      if (!r && !fn.isExternal())
        fn.setPrivate();
      dropPortAttributes(fn);
    }
    // What the other ranks' step functions called is now unreachable.
    OpPassManager dce(ModuleOp::getOperationName());
    dce.addPass(createSymbolDCEPass());
    if (failed(runPipeline(dce, module)))
      signalPassFailure();
  }
};
} // namespace
