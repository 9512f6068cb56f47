//===- ImportedModule.cpp - Registration of the importers -----------------===//
//
// See include/zb/Frontend/ImportedModule.h.
//
//===----------------------------------------------------------------------===//
#include "zb/Frontend/ImportedModule.h"

#include "zb/Dialect/ZB/IR/ZBDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

void zb::frontend::registerImportTranslation(llvm::StringRef name,
                                             llvm::StringRef description,
                                             ImportFn import) {
  TranslateToMLIRRegistration registration(
      name, description,
      [import](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
               MLIRContext *ctx) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        OwningOpRef<ModuleOp> module = import(buffer->getMemBufferRef(), ctx);
        if (!module)
          return nullptr;
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<func::FuncDialect, zb::ZBDialect>();
      });
}
