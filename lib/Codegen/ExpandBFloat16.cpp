//===- ExpandBFloat16.cpp - zb-expand-bf16 --------------------------------===//
//
// arith.extf / arith.truncf between bf16 and f32 as integer operations
// (upstream's populateExpandBFloat16Patterns: a shift for extf, round to
// nearest even with NaN kept for truncf), so that no target needs a
// bfloat16 conversion routine: x86 without AVX512-BF16 lowers fptrunc to
// bfloat as a call of __truncsfbf2, which this machine's libgcc lacks.
// Only bf16 conversions are rewritten (upstream's arith-expand would also
// expand other ops of a float32 program).
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace zb {
#define GEN_PASS_DEF_ZBEXPANDBFLOAT16
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
struct ZBExpandBFloat16Pass
    : public zb::impl::ZBExpandBFloat16Base<ZBExpandBFloat16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
