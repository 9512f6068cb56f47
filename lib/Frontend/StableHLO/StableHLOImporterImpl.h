//===- StableHLOImporterImpl.h - The StableHLO importer's state -*- C++ -*-===//
//
// Internal to lib/Frontend/StableHLO. The text is parsed in a private
// MLIRContext that allows unregistered dialects (stablehlo/chlo ops are then
// generic operations, `#stablehlo.*` attributes OpaqueAttr). The importer
// walks @main in order and maps every source value to either a compile-time
// constant (`HostTensor`, folded in double precision and rounded to the
// element type after every op, like JAX's own arithmetic) or a zb value in
// the target context. Private functions are imported at each call site with
// a fresh value map (inlining).
//
// The files:
//   StableHLOImporter.cpp  entry points, @main's signature, the walk over
//                          blocks and calls
//   StableHLODispatch.cpp  one op: dispatch to a fold or to its family on
//                          data; values and types; op attributes (the text
//                          of opaque attributes)
//   StableHLOElementwiseOps.cpp  ops on data: elementwise arithmetic,
//                          compare/select/convert, booleans, clamp
//   StableHLOShapeOps.cpp  broadcast_in_dim, the shape ops, gather
//   StableHLOMatMulOps.cpp dot_general
//   StableHLOReductionOps.cpp  reduce
//   StableHLOFolding.cpp   ops whose operands are all constants
//   StableHLOLoops.cpp     stablehlo.while unrolled at import (static trip
//                          count), dynamic_slice / dynamic_update_slice
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_FRONTEND_STABLEHLO_STABLEHLOIMPORTERIMPL_H
#define ZB_LIB_FRONTEND_STABLEHLO_STABLEHLOIMPORTERIMPL_H

#include "zb/Frontend/HostTensor.h"
#include "zb/Frontend/StableHLO/StableHLOImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace zb::frontend::stablehlo_import {

/// A constant tensor (zb/Frontend/HostTensor.h), shared so that its address
/// keys the cache of materialized zb.constant ops.
using ConstPtr = std::shared_ptr<HostTensor>;

/// A value of the source program during import.
struct Val {
  mlir::Value v; // the zb value (target context), or null for a constant
  ConstPtr c;    // the folded constant, when known
  mlir::RankedTensorType type; // the source type (target context)
  /// An integer computation on data that zb cannot express; an error when
  /// the value is used other than as recognised by a pattern.
  mlir::Operation *unsupported = nullptr;
  /// The index normalisation JAX emits for `x[i]` / `take_along_axis`,
  /// `select(i < 0, i + n, i)`, tracked through calls (`_where`): `negTestOf`
  /// is set on the boolean `i < 0`, `shiftedOf` on `i + n` (n a constant),
  /// both to `i`'s zb value.
  mlir::Value negTestOf, shiftedOf;
};

//===----------------------------------------------------------------------===//
// Opaque #stablehlo attribute text (StableHLODispatch.cpp)
//===----------------------------------------------------------------------===//

/// Parses `key = [1, 2]` (or `key = 3`) from `text`; an absent key is an
/// empty list. Returns failure on malformed text.
mlir::FailureOr<llvm::SmallVector<int64_t>> parseIntList(llvm::StringRef text,
                                                         llvm::StringRef key);
/// The text of an opaque dialect attribute (`#stablehlo.dot<...>` ->
/// "dot<...>", `#stablehlo<comparison_direction LT>` ->
/// "comparison_direction LT"), or of any other attribute as printed.
std::string attrText(mlir::Attribute a);
/// Checks that `text` has balanced <> and [] (a truncated attribute is
/// malformed).
bool balanced(llvm::StringRef text);
/// "params['blocks'][0]['w']" -> "params.blocks.0.w"; other text unchanged.
std::string pytreeName(llvm::StringRef info);
/// The comparison direction of a stablehlo.compare ("LT", ...), or "".
std::string compareDirection(mlir::Operation *op);

/// "float64", "float16" for a float element type (of `t`, or of the shaped
/// type `t`) zb does not compute in; nullopt otherwise (bfloat16 imports:
/// zb-compile --precision bf16 trains it) (StableHLOImporter.cpp).
std::optional<llvm::StringRef> unsupportedFloat(mlir::Type t);
/// The advice appended to every error about float type `type` (a name
/// unsupportedFloat returns): how to export in float32.
std::string float32Advice(llvm::StringRef type);

/// The dimension numbers of a stablehlo.gather
/// (https://openxla.org/stablehlo/spec#gather).
struct GatherDims {
  llvm::SmallVector<int64_t> offsetDims, collapsedSliceDims, startIndexMap,
      operandBatchingDims, startIndicesBatchingDims, sliceSizes;
  int64_t indexVectorDim = 0;
};
/// Parses a gather's `dimension_numbers` and `slice_sizes` and checks them
/// against the operand and indices shapes (ranks, ranges, sizes); failure
/// (nothing reported) on malformed or inconsistent numbers.
mlir::FailureOr<GatherDims> parseGatherDims(mlir::Operation *op,
                                            llvm::ArrayRef<int64_t> operand,
                                            llvm::ArrayRef<int64_t> indices,
                                            llvm::ArrayRef<int64_t> result);

/// The importer of one module.
class Importer {
public:
  Importer(mlir::MLIRContext *ctx, mlir::ModuleOp source,
           llvm::StringRef fileName, const StableHLOImportOptions &options)
      : ctx(ctx), source(source), fileName(fileName), options(options), b(ctx) {
  }

  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  /// An argument of @main: its name (StableHLOImporter.h), type and role.
  struct Arg {
    std::string name;
    mlir::RankedTensorType type;
    bool param;
  };

  mlir::MLIRContext *ctx;
  mlir::ModuleOp source;
  llvm::StringRef fileName;
  const StableHLOImportOptions &options;
  mlir::OpBuilder b;
  /// One value map per function being imported (call stack).
  llvm::SmallVector<llvm::DenseMap<mlir::Value, Val>> scopes;
  llvm::DenseMap<HostTensor *, mlir::Value> materialized;
  llvm::SmallVector<ConstPtr> keepAlive;
  mlir::Location loc = mlir::UnknownLoc::get(ctx);
  mlir::Operation *current = nullptr;

  //===--- Values and types (StableHLODispatch.cpp) -----------------------===//
  mlir::Location convertLoc(mlir::Location l);
  mlir::InFlightDiagnostic error(mlir::Operation *op) {
    return mlir::emitError(convertLoc(op->getLoc()))
           << "'" << op->getName().getStringRef() << "': ";
  }
  /// The error for a stablehlo.compare whose direction cannot be parsed.
  mlir::LogicalResult badComparison(mlir::Operation *op);
  mlir::FailureOr<mlir::Type> convertElem(mlir::Type t);
  mlir::FailureOr<mlir::RankedTensorType> convertType(mlir::Type t);

  mlir::FailureOr<Val> get(mlir::Value v);
  mlir::FailureOr<mlir::Value> materialize(const Val &v);
  mlir::FailureOr<mlir::Value> asFloat(const Val &v);
  mlir::FailureOr<mlir::Value> asIndex(const Val &v);
  mlir::FailureOr<llvm::SmallVector<int64_t>> i64Array(mlir::Operation *op,
                                                       llvm::StringRef name);
  /// i64Array of dimension numbers of a rank-`rank` operand: each in
  /// [0, rank) and at most once; with `permutation`, each exactly once.
  /// Errors name the attribute and the offending entry.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  dimensionsAttr(mlir::Operation *op, llvm::StringRef name, int64_t rank,
                 bool permutation = false);

  //===--- @main and the walk (StableHLOImporter.cpp) ---------------------===//
  mlir::FailureOr<mlir::RankedTensorType> mainLossType(mlir::func::FuncOp main);
  mlir::FailureOr<llvm::SmallVector<Arg>>
  mainArguments(mlir::func::FuncOp main);
  mlir::LogicalResult addParamValues(mlir::ModuleOp module,
                                     llvm::ArrayRef<Arg> args,
                                     llvm::ArrayRef<unsigned> order);
  mlir::LogicalResult importBlock(mlir::Block &block, llvm::ArrayRef<Val> args,
                                  llvm::SmallVectorImpl<Val> &results,
                                  int depth);
  mlir::LogicalResult importCall(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                 int depth);

  //===--- The dispatch of one op (StableHLODispatch.cpp) -----------------===//
  mlir::LogicalResult importOp(mlir::Operation *op, int depth);
  mlir::LogicalResult importConstant(mlir::Operation *op,
                                     mlir::RankedTensorType type);
  mlir::LogicalResult importOnData(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                   Val &out);

  //===--- Ops on data (StableHLO{Elementwise,Shape,MatMul,Reduction}Ops) -===//
  mlir::LogicalResult importElementwise(mlir::Operation *op,
                                        llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importCompare(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                    Val &out);
  mlir::LogicalResult importSelect(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                   Val &out);
  mlir::LogicalResult importConvert(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                    Val &out);
  mlir::LogicalResult importArithmetic(mlir::Operation *op,
                                       llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importBroadcastInDim(mlir::Operation *op,
                                           llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importShapeOp(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                    Val &out);
  mlir::LogicalResult importDotGeneral(mlir::Operation *op,
                                       llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importReduce(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                   Val &out);
  mlir::LogicalResult importGather(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                   Val &out);
  /// The checks of importGather: the dimension numbers of `op` (into `g`)
  /// and its index operand (into `indices`) in a supported form; returns the
  /// operand axis indexed, or failure (reported).
  mlir::FailureOr<int64_t> checkGatherForm(mlir::Operation *op,
                                           llvm::ArrayRef<Val> in,
                                           mlir::RankedTensorType resultT,
                                           GatherDims &g, Val &indices);
  /// Rewrites a gather with iota index components (x[jnp.arange(n), t]) to
  /// one with batching dims and the data component as `indices`.
  mlir::LogicalResult iotaComponentsAsBatching(mlir::Operation *op,
                                               GatherDims &g,
                                               mlir::RankedTensorType idxT,
                                               Val &indices);
  /// jax.nn.one_hot's compare of broadcast indices with an iota as
  /// zb.one_hot (operand `side` is the broadcast); nullopt otherwise.
  std::optional<mlir::Value> oneHotCompare(mlir::Operation *op, int side,
                                           llvm::ArrayRef<Val> in,
                                           mlir::RankedTensorType type);
  /// and / or / xor / not of booleans (through floats).
  mlir::LogicalResult importLogical(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                    Val &out);
  /// clamp(min, x, max) of floats (min and max may be scalars).
  mlir::LogicalResult importClamp(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                  Val &out);

  //===--- Loops and dynamic slices (StableHLOLoops.cpp) ------------------===//
  /// stablehlo.while: the body imported once per iteration while the
  /// condition folds to true; a condition on data is an error.
  mlir::LogicalResult importWhile(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                  int depth);
  /// The start indices of a dynamic_slice / dynamic_update_slice (operands
  /// from `first` on), which must be constants, clamped as in StableHLO to
  /// [0, dim - size].
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  staticStarts(mlir::Operation *op, llvm::ArrayRef<Val> in, unsigned first,
               llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> sizes);
  mlir::LogicalResult importDynamicSlice(mlir::Operation *op,
                                         llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importDynamicUpdateSlice(mlir::Operation *op,
                                               llvm::ArrayRef<Val> in,
                                               Val &out);

  //===--- Folds (StableHLOFolding.cpp) -----------------------------------===//
  mlir::LogicalResult fold(mlir::Operation *op, llvm::ArrayRef<Val> in,
                           Val &out);
  /// Folds the ops that move or combine elements (iota, broadcast_in_dim,
  /// reshape, transpose, slice, reverse, concatenate); nullopt for other ops.
  std::optional<mlir::FailureOr<HostTensor>>
  foldStructural(mlir::Operation *op, llvm::ArrayRef<Val> in,
                 mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldElementwise(mlir::Operation *op,
                                              llvm::ArrayRef<Val> in,
                                              mlir::RankedTensorType type);
  /// gather (any dimension numbers) and reduce (add, maximum, minimum,
  /// multiply, and, or bodies) of constants.
  mlir::FailureOr<HostTensor> foldGather(mlir::Operation *op,
                                         llvm::ArrayRef<Val> in,
                                         mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldReduce(mlir::Operation *op,
                                         llvm::ArrayRef<Val> in,
                                         mlir::RankedTensorType type);
  /// The combiner of a reduce body with one binary op on its two arguments
  /// ("stablehlo.add", ...), or "" (error reported) when the body has
  /// another form.
  std::string reduceKind(mlir::Operation *op);
};

} // namespace zb::frontend::stablehlo_import

#endif // ZB_LIB_FRONTEND_STABLEHLO_STABLEHLOIMPORTERIMPL_H
