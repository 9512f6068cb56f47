//===- StableHLOImporter.h - JAX StableHLO text -> zb dialect ---*- C++ -*-===//
//
// Step 1 of the compilation flow for JAX models (see docs/frontends.md,
// "StableHLO"): reads the module that
//
//   jax.jit(loss_fn).lower(params, batch).compiler_ir("stablehlo")
//       .operation.get_asm(print_generic_op_form=True)
//
// prints (python/export/export_jax_gpt.py), a scalar loss of a pytree of
// parameters and a batch, and builds the same function as the ONNX importer:
//
//   module attributes {zb.param_values = {"params.wte" = dense<...>, ...}} {
//     func.func @main(%tokens: tensor<4x16xi32> {zb.name = "batch.tokens"},
//                     ...,
//                     %wte: tensor<64x32xf32> {zb.name = "params.wte",
//                                              zb.param}, ...)
//         -> tensor<f32>
//   }
//
// There is no StableHLO library on Debian: the text is parsed with
// unregistered dialects allowed (in a private MLIRContext), `#stablehlo.*`
// attributes arrive as OpaqueAttr and their text is parsed here.
//
// Arguments of the public function `main`:
// - name: `jax.arg_info` (e.g. "params['blocks'][0]['w']" -> the pytree path
//   name "params.blocks.0.w": keys and indices joined with '.'), else a
//   `zb.name` argument attribute, else "arg<i>";
// - data (batch inputs) are the integer-typed arguments and the arguments
//   named in `dataArgs` (an exact name, or a prefix ending in '.', e.g.
//   "batch."); every other (floating-point) argument is a parameter
//   (`zb.param`). Data arguments come first in the imported function, then
//   the parameters, each group in the original argument order;
// - initial values: the module attribute `zb.param_values` (a dictionary from
//   the names above to dense values, added by the export script) is kept,
//   restricted to the parameters; without it there are no initial values
//   (zb-compile then initialises the parameters itself).
//
// The function must return one scalar floating-point value (the loss).
//
// Supported ops (stablehlo unless noted; one row each in the importer's op
// table, lib/Frontend/StableHLO/StableHLOImporterImpl.h; docs/frontends.md
// has the table):
// constant, iota (folded), add subtract multiply divide maximum minimum power
// negate exponential log tanh sqrt rsqrt logistic exponential_minus_one
// log_plus_one clamp abs sign is_finite, chlo.square chlo.erf chlo.erfc,
// compare/select (with constant or data operands), and/or/xor/not of
// booleans, convert, broadcast_in_dim, reshape, transpose, slice,
// concatenate, dot_general (any batch/contracting dimensions -> zb.matmul /
// zb.batch_matmul with transposes and reshapes), reduce with a single add,
// maximum or minimum body (zb.reduce_sum / reduce_max) or and/or of
// booleans, gather in the embedding-lookup form (table[indices] on any one
// axis -> zb.gather) and the take_along_axis form (operand_batching_dims ->
// zb.one_hot * operand, summed), while with a condition that folds at import
// (unrolled: jax.lax.scan, fori_loop), dynamic_slice / dynamic_update_slice
// with constant start indices, func.call of private functions (inlined);
// cosine sine floor ceil remainder reverse, and gather / reduce of any body
// on constants only. Everything computable from constants alone (masks,
// iota arithmetic, cosine/sine tables) is folded at import in double
// precision. Integer arithmetic on data is limited to the index
// normalisation JAX emits for `table[idx]` (select(idx < 0, idx + n, idx) ->
// idx, valid for in-range indices, also through calls such as `_where`) and
// to comparisons (the integers are compared as floats, exact below 2^24).
//
// Binary inputs (a serialized jax.export artifact, MLIR bytecode) and the
// custom op form are errors that name `python3 -m zb.export to-generic`.
//
// Errors never crash: they are MLIR diagnostics on `ctx` at the op's
// file:line:column, and the null module is returned, e.g.
//   gpt.mlir:12:10: error: unsupported StableHLO op 'stablehlo.sort'
//   gpt.mlir:7:5: error: 'stablehlo.dot_general': cannot parse
//       dot_dimension_numbers 'dot<lhs_contracting = [2>'
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FRONTEND_STABLEHLO_STABLEHLOIMPORTER_H
#define ZB_FRONTEND_STABLEHLO_STABLEHLOIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <optional>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace zb {
namespace frontend {

struct StableHLOImportOptions {
  /// Names (or prefixes ending in '.') of floating-point arguments that are
  /// batch inputs, not parameters. Integer arguments are always data.
  llvm::SmallVector<std::string> dataArgs;
};

/// Imports the StableHLO module (generic or custom op form text) in `buffer`;
/// the buffer identifier is the file name in locations and messages. Loads
/// the func and zb dialects into `ctx`. Returns null after emitting an error.
mlir::OwningOpRef<mlir::ModuleOp>
importStableHLO(llvm::MemoryBufferRef buffer, mlir::MLIRContext *ctx,
                const StableHLOImportOptions &options = {});

/// Same, from the file at `path`.
mlir::OwningOpRef<mlir::ModuleOp>
importStableHLOFile(llvm::StringRef path, mlir::MLIRContext *ctx,
                    const StableHLOImportOptions &options = {});

/// True when `text` looks like a StableHLO module (mentions "stablehlo."
/// ops) or a binary JAX export (serializedKind); used by zb-compile to pick
/// the importer for a file that is not .onnx.
bool looksLikeStableHLO(llvm::StringRef text);

/// What a binary StableHLO input is, for the error that says how to convert
/// it: "jax.export" for `jax.export.export(...).serialize()` bytes (a
/// flatbuffer whose payload is a StableHLO portable artifact), "bytecode"
/// for MLIR bytecode (a portable artifact on its own, magic "ML\xEFR" at
/// offset 0); nullopt for text.
std::optional<llvm::StringRef> serializedKind(llvm::StringRef bytes);

/// The 1-based line of the first op in the custom (pretty) StableHLO form
/// (`%0 = stablehlo.add %a, %b : ...`), which zb does not parse; nullopt
/// for the generic form.
std::optional<unsigned> customFormLine(llvm::StringRef text);

/// Registers the `--import-stablehlo` translation (for mlirTranslateMain)
/// and its option `--data-args=NAME,...`.
void registerStableHLOImportTranslation();

} // namespace frontend
} // namespace zb

#endif // ZB_FRONTEND_STABLEHLO_STABLEHLOIMPORTER_H
