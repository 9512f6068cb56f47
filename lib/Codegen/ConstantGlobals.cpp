//===- ConstantGlobals.cpp - zb-constant-globals --------------------------===//
//
// The memref.global of every tensor constant, made in program order before
// one-shot-bufferize (which then reuses them), so that a compile is
// reproducible: one-shot-bufferize alone makes them in an order that
// depends on pointer values. See Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Codegen/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/BufferUtils.h"

namespace zb {
#define GEN_PASS_DEF_ZBCONSTANTGLOBALS
#include "zb/Codegen/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {
/// One-shot-bufferize's alignment of constant globals
/// (OneShotBufferizationOptions::bufferAlignment's default).
constexpr uint64_t kConstantAlignment = 64;

struct ZBConstantGlobalsPass
    : public zb::impl::ZBConstantGlobalsBase<ZBConstantGlobalsPass> {
  using Base::Base;
  void runOnOperation() override {
    SymbolTableCollection symbols;
    WalkResult walk = getOperation().walk([&](arith::ConstantOp constant) {
      if (!isa<RankedTensorType>(constant.getType()))
        return WalkResult::advance();
      if (failed(bufferization::getGlobalFor(constant, symbols,
                                             kConstantAlignment))) {
        constant.emitError("zb-constant-globals: cannot make a global for "
                           "this constant");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
