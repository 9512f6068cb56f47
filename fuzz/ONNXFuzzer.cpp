//===- ONNXFuzzer.cpp - libFuzzer target for the ONNX importer ------------===//
//
// Feeds arbitrary bytes to zb::frontend::importONNX and verifies whatever
// module comes out. Any crash, sanitizer report, or a module that fails the
// verifier is a bug: the importer must turn bad input into a diagnostic.
//
// zb-fuzz-onnx (scripts/fuzz.sh); seed corpus fuzz/corpus/onnx, replayed by
// the ctest ZBFuzzCorpus.onnx.
//
//===----------------------------------------------------------------------===//

#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Frontend/ONNX/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: attributes of earlier inputs do not pile up.
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::func::FuncDialect, zb::ZBDialect>();
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::MemoryBufferRef buffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx");
  // External data locations resolve in a directory that does not exist:
  // the reader's checks run, and no input reads files of the machine.
  zb::frontend::ImportOptions options;
  options.externalDataDir = "/nonexistent/zb-fuzz";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      zb::frontend::importONNX(buffer, &ctx, options);
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort(); // the importer built invalid IR
  return 0;
}
