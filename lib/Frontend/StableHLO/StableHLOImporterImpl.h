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
// Every op the importer knows is one row of the op table (OpDef below): its
// name, its import on data (an operand that is not a constant), its fold on
// constants (all operands constants). importOp looks the op up once by name;
// an op with no row is an unsupported op. Each op family adds its rows
// (populate*Ops) in the file of its import on data; the folds live in
// StableHLOFolding.cpp.
//
// The files:
//   StableHLOImporter.cpp  entry points, @main's signature, the walk over
//                          blocks and calls
//   StableHLODispatch.cpp  one op: the op table, the lookup and the choice
//                          between a fold and the import on data;
//                          stablehlo.constant and func.call; values and
//                          types; op attributes (the text of opaque
//                          attributes)
//   StableHLOElementwiseOps.cpp  ops on data: elementwise arithmetic,
//                          compare/select/convert, booleans, clamp (their
//                          rows carry the zb ops and the function of
//                          doubles of each)
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
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace zb {
class ZBBuilder;
} // namespace zb

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

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

class Importer;
struct OpDef;

/// Imports `op`, an operand of which is not a constant, into `out` (whose
/// source type is set); reports its own errors.
using ImportFn = mlir::LogicalResult (Importer::*)(const OpDef &def,
                                                   mlir::Operation *op,
                                                   llvm::ArrayRef<Val> in,
                                                   Val &out);
/// Folds `op`, all operands of which are constants, to a tensor of `type`'s
/// shape; reports its own errors.
using FoldFn = mlir::FailureOr<HostTensor> (Importer::*)(
    const OpDef &def, mlir::Operation *op, llvm::ArrayRef<Val> in,
    mlir::RankedTensorType type);
/// Imports an op that defines its results itself (a call, a loop), at call
/// depth `depth`, before the checks of a one-result op.
using ControlFn = mlir::LogicalResult (Importer::*)(mlir::Operation *op,
                                                    llvm::ArrayRef<Val> in,
                                                    int depth);
/// The zb ops of an elementwise op on float data (one value per operand).
using BuildFn = mlir::Value (*)(zb::ZBBuilder &zbb,
                                llvm::ArrayRef<mlir::Value> x);
/// An elementwise op on the doubles of its operands (one per operand).
using ScalarFn = double (*)(llvm::ArrayRef<double> a);

/// One row of the op table: an op the importer knows. Rows are written
/// positionally; the fields after `fold` are for the ops that need them.
struct OpDef {
  /// The generic op name ("stablehlo.add", "chlo.erf", "func.call").
  llvm::StringLiteral name;
  /// The import on data; null for an op folded only (its operands must be
  /// constants: "unsupported StableHLO op '...' on data").
  ImportFn onData;
  /// The fold on constants; null for an op imported on data even when its
  /// operands are constants (dot_general).
  FoldFn fold;
  /// Elementwise ops: the zb ops on floats (importArithmetic,
  /// importLogical) and the function of doubles (foldElementwise; null:
  /// "cannot fold").
  BuildFn build = nullptr;
  ScalarFn scalar = nullptr;
  /// func.call, stablehlo.while: the import of the whole op, before the
  /// one-result checks (onData and fold are then null).
  ControlFn control = nullptr;
  /// The error for the op with several results; "" for the generic one
  /// ("unsupported StableHLO op (expected one result)").
  llvm::StringLiteral severalResults = "";
};

/// The ops the importer knows, by name, built once from the families' rows.
class OpTable {
public:
  /// Adds rows that outlive the table (static arrays); each name once.
  void add(llvm::ArrayRef<OpDef> defs);
  /// The row of `name`, or null for an op the importer does not know.
  const OpDef *lookup(llvm::StringRef name) const;

private:
  llvm::StringMap<const OpDef *> ops;
};

/// The op families: each adds its rows to the table (in the file of its
/// import on data).
void populateElementwiseOps(OpTable &table);
void populateShapeOps(OpTable &table);
void populateMatMulOps(OpTable &table);
void populateReductionOps(OpTable &table);
void populateLoopOps(OpTable &table);
/// Every op's row (the families' and the walk's own: stablehlo.constant,
/// func.call), built once (StableHLODispatch.cpp).
const OpTable &opTable();

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

  //===--- The dispatch of one op (StableHLODispatch.cpp) -----------------===//
  mlir::LogicalResult importOp(mlir::Operation *op, int depth);
  /// The fold of `op` by `def` into `out.c`, checked against `out.type`.
  mlir::LogicalResult fold(const OpDef &def, mlir::Operation *op,
                           llvm::ArrayRef<Val> in, Val &out);

  //===--- Helpers of the ops on data (StableHLOElementwiseOps.cpp) -------===//
  /// Integer arithmetic on data: recorded in `out` as unsupported, an error
  /// only where it is used (a pattern such as the index normalisation
  /// removes it).
  mlir::LogicalResult unsupportedInteger(mlir::Operation *op, Val &out);
  /// `build` on the operands (materialized); a null `build` is the error
  /// "unsupported on data".
  mlir::LogicalResult buildOnData(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                  Val &out, BuildFn build);
  /// The operands of a boolean op as 0/1 floats; failure (reported) unless
  /// they are booleans.
  mlir::FailureOr<llvm::SmallVector<mlir::Value, 2>>
  booleansAsFloats(mlir::Operation *op, llvm::ArrayRef<Val> in);
  /// and, or, xor, not on non-boolean values: integer data unsupported,
  /// floats through buildOnData without a scalar function (its error).
  mlir::LogicalResult importBitwise(mlir::Operation *op,
                                    llvm::ArrayRef<Val> in, Val &out);
  /// jax.nn.one_hot's compare of broadcast indices with an iota as
  /// zb.one_hot (operand `side` is the broadcast); nullopt otherwise.
  std::optional<mlir::Value> oneHotCompare(mlir::Operation *op, int side,
                                           llvm::ArrayRef<Val> in,
                                           mlir::RankedTensorType type);

  //===--- Helpers of gather (StableHLOShapeOps.cpp) ----------------------===//
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

  //===--- Helpers of loops and reductions --------------------------------===//
  /// The start indices of a dynamic_slice / dynamic_update_slice (operands
  /// from `first` on), which must be constants, clamped as in StableHLO to
  /// [0, dim - size] (StableHLOLoops.cpp).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  staticStarts(mlir::Operation *op, llvm::ArrayRef<Val> in, unsigned first,
               llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> sizes);
  /// The combiner of a reduce body with one binary op on its two arguments
  /// ("stablehlo.add", ...), or "" (error reported) when the body has
  /// another form (StableHLOReductionOps.cpp).
  std::string reduceKind(mlir::Operation *op);
  /// The elementwise fold of `op` with `fn` (StableHLOFolding.cpp).
  mlir::FailureOr<HostTensor>
  foldElementwiseWith(mlir::Operation *op, llvm::ArrayRef<Val> in,
                      mlir::RankedTensorType type,
                      llvm::function_ref<double(llvm::ArrayRef<double>)> fn);

public:
  //===--- The op table's entries -----------------------------------------===//
  // Public so that the families' rows (populate*Ops) can name them; see
  // ImportFn, FoldFn and ControlFn for their contracts.

  /// func.call of a private function: its body imported in place
  /// (StableHLOImporter.cpp).
  mlir::LogicalResult importCall(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                 int depth);
  /// stablehlo.while: the body imported once per iteration while the
  /// condition folds to true; a condition on data is an error
  /// (StableHLOLoops.cpp).
  mlir::LogicalResult importWhile(mlir::Operation *op, llvm::ArrayRef<Val> in,
                                  int depth);
  /// stablehlo.constant: its `value` as a HostTensor of the result's type
  /// (StableHLODispatch.cpp).
  mlir::FailureOr<HostTensor> importConstant(const OpDef &def,
                                             mlir::Operation *op,
                                             llvm::ArrayRef<Val> in,
                                             mlir::RankedTensorType type);
  /// importConstant of a stablehlo.constant given operands (malformed text:
  /// they are ignored).
  mlir::LogicalResult importConstantWithOperands(const OpDef &def,
                                                 mlir::Operation *op,
                                                 llvm::ArrayRef<Val> in,
                                                 Val &out);

  // Elementwise ops on data (StableHLOElementwiseOps.cpp).
  /// Float arithmetic by `def.build`; integer data unsupported.
  mlir::LogicalResult importArithmetic(const OpDef &def, mlir::Operation *op,
                                       llvm::ArrayRef<Val> in, Val &out);
  /// importArithmetic, and on integer data `i + n` (n a constant) recorded
  /// as the shift of the index normalisation.
  mlir::LogicalResult importAdd(const OpDef &def, mlir::Operation *op,
                                llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importSign(const OpDef &def, mlir::Operation *op,
                                 llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importIsFinite(const OpDef &def, mlir::Operation *op,
                                     llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importCompare(const OpDef &def, mlir::Operation *op,
                                    llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importSelect(const OpDef &def, mlir::Operation *op,
                                   llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importConvert(const OpDef &def, mlir::Operation *op,
                                    llvm::ArrayRef<Val> in, Val &out);
  /// and / or / xor of booleans by `def.build` (through floats).
  mlir::LogicalResult importLogical(const OpDef &def, mlir::Operation *op,
                                    llvm::ArrayRef<Val> in, Val &out);
  /// not of booleans (through floats).
  mlir::LogicalResult importNot(const OpDef &def, mlir::Operation *op,
                                llvm::ArrayRef<Val> in, Val &out);
  /// clamp(min, x, max) of floats (min and max may be scalars).
  mlir::LogicalResult importClamp(const OpDef &def, mlir::Operation *op,
                                  llvm::ArrayRef<Val> in, Val &out);

  // Shape ops and gather on data (StableHLOShapeOps.cpp).
  mlir::LogicalResult importBroadcastInDim(const OpDef &def,
                                           mlir::Operation *op,
                                           llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importReshape(const OpDef &def, mlir::Operation *op,
                                    llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importTranspose(const OpDef &def, mlir::Operation *op,
                                      llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importSlice(const OpDef &def, mlir::Operation *op,
                                  llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importConcatenate(const OpDef &def, mlir::Operation *op,
                                        llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importGather(const OpDef &def, mlir::Operation *op,
                                   llvm::ArrayRef<Val> in, Val &out);

  // dot_general, reduce, dynamic slices (StableHLOMatMulOps.cpp,
  // StableHLOReductionOps.cpp, StableHLOLoops.cpp).
  mlir::LogicalResult importDotGeneral(const OpDef &def, mlir::Operation *op,
                                       llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importReduce(const OpDef &def, mlir::Operation *op,
                                   llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importDynamicSlice(const OpDef &def, mlir::Operation *op,
                                         llvm::ArrayRef<Val> in, Val &out);
  mlir::LogicalResult importDynamicUpdateSlice(const OpDef &def,
                                               mlir::Operation *op,
                                               llvm::ArrayRef<Val> in,
                                               Val &out);

  // Folds on constants (StableHLOFolding.cpp).
  /// Elementwise by `def.scalar`; a null one is "cannot fold".
  mlir::FailureOr<HostTensor> foldElementwise(const OpDef &def,
                                              mlir::Operation *op,
                                              llvm::ArrayRef<Val> in,
                                              mlir::RankedTensorType type);
  /// divide: truncating on integers (x / 0 = -1), else `def.scalar`.
  mlir::FailureOr<HostTensor> foldDivide(const OpDef &def, mlir::Operation *op,
                                         llvm::ArrayRef<Val> in,
                                         mlir::RankedTensorType type);
  /// not: logical on booleans, bitwise on integers.
  mlir::FailureOr<HostTensor> foldNot(const OpDef &def, mlir::Operation *op,
                                      llvm::ArrayRef<Val> in,
                                      mlir::RankedTensorType type);
  /// compare by its comparison_direction (1.0 true, 0.0 false).
  mlir::FailureOr<HostTensor> foldCompare(const OpDef &def, mlir::Operation *op,
                                          llvm::ArrayRef<Val> in,
                                          mlir::RankedTensorType type);
  // The ops that move or combine elements.
  mlir::FailureOr<HostTensor> foldIota(const OpDef &def, mlir::Operation *op,
                                       llvm::ArrayRef<Val> in,
                                       mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldBroadcastInDim(const OpDef &def,
                                                 mlir::Operation *op,
                                                 llvm::ArrayRef<Val> in,
                                                 mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldReshape(const OpDef &def, mlir::Operation *op,
                                          llvm::ArrayRef<Val> in,
                                          mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldTranspose(const OpDef &def,
                                            mlir::Operation *op,
                                            llvm::ArrayRef<Val> in,
                                            mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldSlice(const OpDef &def, mlir::Operation *op,
                                        llvm::ArrayRef<Val> in,
                                        mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldReverse(const OpDef &def, mlir::Operation *op,
                                          llvm::ArrayRef<Val> in,
                                          mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldDynamicSlice(const OpDef &def,
                                               mlir::Operation *op,
                                               llvm::ArrayRef<Val> in,
                                               mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor>
  foldDynamicUpdateSlice(const OpDef &def, mlir::Operation *op,
                         llvm::ArrayRef<Val> in, mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldConcatenate(const OpDef &def,
                                              mlir::Operation *op,
                                              llvm::ArrayRef<Val> in,
                                              mlir::RankedTensorType type);
  /// gather (any dimension numbers) and reduce (add, maximum, minimum,
  /// multiply, and, or bodies) of constants.
  mlir::FailureOr<HostTensor> foldGather(const OpDef &def, mlir::Operation *op,
                                         llvm::ArrayRef<Val> in,
                                         mlir::RankedTensorType type);
  mlir::FailureOr<HostTensor> foldReduce(const OpDef &def, mlir::Operation *op,
                                         llvm::ArrayRef<Val> in,
                                         mlir::RankedTensorType type);
};

} // namespace zb::frontend::stablehlo_import

#endif // ZB_LIB_FRONTEND_STABLEHLO_STABLEHLOIMPORTERIMPL_H
