//===- ImportedModule.h - What every zb importer builds ---------*- C++ -*-===//
//
// The names both importers (ONNX, StableHLO) give the module they build, and
// the registration of an importer as a zb-translate translation:
//
//   module attributes {zb.param_values = {"<name>" = dense<...>, ...}} {
//     func.func @main(%x: tensor<...> {zb.name = "<name>"}, ...,
//                     %w: tensor<...> {zb.name = "<name>", zb.param}, ...)
//         -> tensor<f32>
//   }
//
// (`zb.param` is zb::kParamAttr of the dialect, ZBOps.h.)
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FRONTEND_IMPORTEDMODULE_H
#define ZB_FRONTEND_IMPORTEDMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <functional>

namespace zb {
namespace frontend {

/// Argument attribute: the source name of a data input or parameter (string;
/// the ONNX value name, or the JAX pytree path such as "params.blocks.0.w").
inline constexpr llvm::StringLiteral kNameAttr = "zb.name";
/// Module attribute: DictionaryAttr, parameter name -> initial value
/// (DenseElementsAttr with the parameter's tensor type).
inline constexpr llvm::StringLiteral kParamValuesAttr = "zb.param_values";
/// Module attribute (ONNX): ArrayAttr of the names of the model's float
/// buffers (torch `register_buffer`: rotary tables, masks) that the exporter
/// marked as such and the import made constants (not trained).
inline constexpr llvm::StringLiteral kBuffersAttr = "zb.buffers";
/// Name of the imported function.
inline constexpr llvm::StringLiteral kMainFuncName = "main";

/// Imports a whole source file held in `buffer` into `ctx`; returns null after
/// emitting an error diagnostic.
using ImportFn = std::function<mlir::OwningOpRef<mlir::ModuleOp>(
    llvm::MemoryBufferRef buffer, mlir::MLIRContext *ctx)>;

/// Registers the translation `--<name>` (for mlirTranslateMain) that runs
/// `import` on the main input file; its dialect registry holds func and zb.
/// Call once per name (the registration is a static object of the caller's
/// registerXImportTranslation).
void registerImportTranslation(llvm::StringRef name,
                               llvm::StringRef description, ImportFn import);

} // namespace frontend
} // namespace zb

#endif // ZB_FRONTEND_IMPORTEDMODULE_H
