//===- StableHLOFuzzer.cpp - libFuzzer target for the StableHLO importer --===//
//
// Arbitrary text to zb::frontend::importStableHLO (generic and custom op
// form). A crash, a sanitizer report or a module that fails the verifier is a
// bug: bad input must become a diagnostic. Seed corpus fuzz/corpus/stablehlo.
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/StableHLO/StableHLOImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::MemoryBufferRef buffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.mlir");
  mlir::OwningOpRef<mlir::ModuleOp> module =
      zb::frontend::importStableHLO(buffer, &ctx);
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort(); // the importer built invalid IR
  return 0;
}
