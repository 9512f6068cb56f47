//===- ONNXImporterImpl.h - The ONNX importer's context ---------*- C++ -*-===//
//
// Internal to lib/Frontend/ONNX. The importer walks the ONNX graph once, in
// its (topological) node order, keeping for every ONNX value name either an
// SSA value or a constant known at import time (ImportedValue). For each node
// it looks up a handler in a table (op type -> handler, by opset version) and
// records the handler's results under the node's output names.
//
// The files:
//   ONNXImporter.cpp     the driver: entry points, @main's signature, the
//                        graph walk, value map, the loss
//   ONNXParameters.cpp   which initializers are parameters, buffers or
//                        constants (the exporter's metadata), initializers
//                        folded by the exporter turned back into parameters
//   ONNXDispatch.cpp     one node: the handler table, opset checks, fold or
//                        handler, local functions inlined
//   ONNXReader.cpp       protobuf -> MLIR: element types, value infos,
//                        TensorProto data (external data files too), node
//                        operands and attributes, Constant nodes
//   ElementwiseOps.cpp   Add/Sub/Mul/Div, unary math and activations, Pow,
//                        Reciprocal, Where, Cast/CastLike, Identity, Dropout
//   MatMulOps.cpp        Gemm, MatMul
//   ReductionOps.cpp     ReduceMean/ReduceSum, Softmax, LayerNormalization,
//                        SoftmaxCrossEntropyLoss
//   ShapeOps.cpp         Shape, Reshape/Unsqueeze/Squeeze/Flatten, Transpose,
//                        Expand, Tile, Concat, Slice, Split,
//                        SplitToSequence/SequenceAt, Gather
//   ConstantFolding.cpp  folds of nodes whose inputs are all constants
//                        (HostTensor), the fold table
//
// Only the driver's files (ONNXImporter.cpp, ONNXParameters.cpp,
// ONNXDispatch.cpp) and ONNXReader.cpp see the protobuf classes (and need
// exceptions); the op handlers use the accessors below.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_FRONTEND_ONNX_ONNXIMPORTERIMPL_H
#define ZB_LIB_FRONTEND_ONNX_ONNXIMPORTERIMPL_H

#include "zb/Frontend/HostTensor.h"
#include "zb/Frontend/ONNX/ONNXImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <vector>
#include <string>

namespace onnx {
class AttributeProto;
class FunctionProto;
class GraphProto;
class ModelProto;
class NodeProto;
class TensorProto;
class ValueInfoProto;
} // namespace onnx

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace zb::frontend::onnx_import {

/// What an ONNX value name stands for during import: an SSA value, a constant
/// known at import time (materialized lazily), or both once materialized.
struct ImportedValue {
  mlir::Value value;
  mlir::DenseElementsAttr constant;
  /// An ONNX sequence (SplitToSequence): its tensors, read by SequenceAt.
  bool isSequence = false;
  std::vector<ImportedValue> sequence;
};

/// The values a handler defines, one per node output (in order).
using NodeResults = llvm::SmallVector<ImportedValue, 1>;

/// Upper bound on the number of elements of one tensor (guards against
/// corrupt dims before anything is allocated).
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Upper bound on the number of elements of a tensor folded at import.
inline constexpr int64_t kMaxFoldElements = int64_t(1) << 26;

/// True if `t` (rank >= 2) is, in each of its [Tq, Tk] matrices, `above` at
/// every key after the query (k > q) and `below` elsewhere: a causal mask.
bool isCausalPattern(const HostTensor &t, double above, double below);

class ONNXImporter;
/// Imports the current node of the importer; reports its own errors.
using OpHandler = mlir::FailureOr<NodeResults> (ONNXImporter::*)();

/// The op handlers of the default ONNX domain by op type, each valid from an
/// opset version on (ONNX's "since version"): the handler of a model is the
/// one with the highest version <= the model's opset, or the oldest one for a
/// model that declares an older opset than every handler.
/// One row of the handler table: `handler` imports `opType` from opset
/// version `sinceVersion` on.
struct OpHandlerEntry {
  llvm::StringLiteral opType;
  int64_t sinceVersion;
  OpHandler handler;
};

class OpHandlerTable {
public:
  void add(llvm::ArrayRef<OpHandlerEntry> entries);
  /// The handler for `opType` at `opset`: the one of the newest since
  /// version <= opset; null if the op has none (or only newer ones).
  OpHandler lookup(llvm::StringRef opType, int64_t opset) const;
  /// The oldest opset `opType` has a handler for; -1 if none.
  int64_t firstOpset(llvm::StringRef opType) const;

private:
  /// Per op type, (since version, handler) in increasing version order.
  llvm::StringMap<llvm::SmallVector<std::pair<int64_t, OpHandler>, 1>> ops;
};

/// The op families: each adds its handlers to the table.
void populateElementwiseHandlers(OpHandlerTable &table);
void populateMatMulHandlers(OpHandlerTable &table);
void populateReductionHandlers(OpHandlerTable &table);
void populateShapeHandlers(OpHandlerTable &table);
void populateConstantHandlers(OpHandlerTable &table);
void populateLogicHandlers(OpHandlerTable &table);
void populateIndexHandlers(OpHandlerTable &table);

/// A fold of a node whose inputs are all constants: `in` holds one tensor per
/// input (a null-typed one for an absent optional input).
using FoldFn = mlir::FailureOr<HostTensor> (ONNXImporter::*)(
    llvm::ArrayRef<HostTensor> in);

/// An op the importer folds when all its inputs are constants.
struct FoldRule {
  llvm::StringLiteral opType;
  /// Inputs the fold needs (present, constant).
  size_t minInputs;
  /// True for ops that exist only folded (Cos, Range, ...): an input that is
  /// not a constant is an error.
  bool foldOnly;
  FoldFn fold;
};

/// The fold rule of `opType` (default domain), or null.
const FoldRule *findFoldRule(llvm::StringRef opType);

/// The importer's state, and the operations the op handlers use on the node
/// being imported.
class ONNXImporter {
public:
  ONNXImporter(mlir::MLIRContext *ctx, llvm::StringRef fileName,
               const ImportOptions &options);

  mlir::OwningOpRef<mlir::ModuleOp> importModel(const onnx::ModelProto &model);

  //===--- Diagnostics ----------------------------------------------------===//
  mlir::InFlightDiagnostic fileError() { return mlir::emitError(fileLoc); }
  /// An error about the current node: "<OpType> node '<name>' (#i): ".
  mlir::InFlightDiagnostic nodeError();

  //===--- Types and constants (ONNXReader.cpp) ---------------------------===//
  /// The MLIR element type of an ONNX TensorProto::DataType, or null.
  mlir::Type convertElementType(int32_t onnxType);
  /// The name of an ONNX data type ("FLOAT", ...; "<invalid>").
  static llvm::StringRef elementTypeName(int32_t onnxType);
  mlir::FailureOr<mlir::RankedTensorType>
  convertValueInfo(const onnx::ValueInfoProto &vi, llvm::StringRef what);
  mlir::FailureOr<mlir::DenseElementsAttr>
  convertTensor(const onnx::TensorProto &tensor, mlir::Location where,
                llvm::StringRef what);
  /// The bytes of a tensor stored outside the model (data_location EXTERNAL):
  /// external_data `location` (a relative path inside externalDataDir, no
  /// `..`), `offset` and `length` (bytes; default: to the end of the file).
  /// Errors (through `error`, which names the tensor): no or an escaping
  /// location, a file that cannot be read, a range past its end.
  mlir::FailureOr<llvm::StringRef>
  externalData(const onnx::TensorProto &tensor,
               llvm::function_ref<mlir::InFlightDiagnostic()> error);
  mlir::DenseElementsAttr splat(mlir::RankedTensorType type, double value);
  mlir::Value splatConstant(mlir::RankedTensorType type, double value);

  //===--- The current node (ONNXReader.cpp) ------------------------------===//
  llvm::StringRef opType() const;
  int numInputs() const;
  int numOutputs() const;
  /// True if output `i` exists and has a name (is read by someone).
  bool hasOutput(int i) const;
  bool hasInput(int i) const;
  /// Input `i` (not a sequence).
  mlir::FailureOr<ImportedValue> lookup(int i);
  /// Input `i`, which must be a sequence.
  mlir::FailureOr<ImportedValue> sequenceInput(int i);
  /// Input `i` as a tensor SSA value (materializes constants).
  mlir::FailureOr<mlir::Value> tensorInput(int i);
  /// Input `i` as a floating-point tensor SSA value.
  mlir::FailureOr<mlir::Value> floatInput(int i);
  /// Input `i` as a constant known at import time.
  mlir::FailureOr<mlir::DenseElementsAttr> constantInput(int i);
  mlir::FailureOr<HostTensor> hostInput(int i);
  /// Input `i` as a 1-D (or scalar) integer constant.
  mlir::FailureOr<llvm::SmallVector<int64_t>> intsInput(int i);
  /// True if every present input is a constant known at import.
  bool allInputsConstant();
  mlir::Value materialize(ImportedValue &v);

  //===--- Attributes of the current node (ONNXReader.cpp) ----------------===//
  bool hasAttr(llvm::StringRef name);
  mlir::FailureOr<int64_t> intAttr(llvm::StringRef name, int64_t dflt);
  mlir::FailureOr<float> floatAttr(llvm::StringRef name, float dflt);
  /// The string field of an attribute, or nullopt when absent (not checked
  /// to be of type STRING: an attribute of another type reads as "").
  std::optional<std::string> stringAttr(llvm::StringRef name);
  /// The integer field of an attribute, or nullopt when absent (not checked
  /// to be of type INT: an attribute of another type reads as 0).
  std::optional<int64_t> uncheckedIntAttr(llvm::StringRef name);
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  intsAttr(llvm::StringRef name);
  /// A tensor attribute as a constant, or nullopt when absent.
  mlir::FailureOr<std::optional<mlir::DenseElementsAttr>>
  tensorAttr(llvm::StringRef name);

  //===--- Building blocks (ONNXReader.cpp) -------------------------------===//
  /// Integer and boolean data computed in float32 (ONNX ops on masks, ids
  /// and labels that zb's float ops implement: comparisons, logic, Where,
  /// CumSum, GatherND, broadcasts): `v` as f32 (a float stays as it is), and
  /// back to `target` (i1: != 0; integers: truncated). Exact for integer
  /// magnitudes below 2^24 (token ids, positions, masks).
  mlir::Value toFloat(mlir::Value v);
  mlir::Value fromFloat(mlir::Value f, mlir::Type target);
  /// Broadcasts `v` to `shape` (numpy rules: trailing alignment, size-1 dims;
  /// integer and boolean tensors through float32).
  mlir::FailureOr<mlir::Value> broadcastTo(mlir::Value v,
                                           llvm::ArrayRef<int64_t> shape);
  /// Input `i` (already looked up) broadcast to `shape`.
  mlir::FailureOr<mlir::Value> broadcastInput(int i,
                                              llvm::ArrayRef<int64_t> shape);
  mlir::RankedTensorType typeOf(const ImportedValue &v);
  /// The `axis` attribute (default `defaultAxis`) of the current node,
  /// normalized to the rank of `x` (an input read just before, so that its
  /// error and the attribute's are both reported); failure if either failed.
  mlir::FailureOr<int64_t> axisOf(mlir::FailureOr<mlir::Value> x,
                                  int64_t defaultAxis);
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what);
  /// One result: the SSA value `v`.
  static NodeResults result(mlir::Value v) { return NodeResults{{v, {}}}; }

  //===--- Shape computations (ShapeOps.cpp) ------------------------------===//
  struct SliceSpec {
    llvm::SmallVector<int64_t> start, step, shape;
    /// Axes of negative steps: the slice with steps > 0 takes the same
    /// elements, which are then reversed along these axes.
    llvm::SmallVector<int64_t> reversed;
  };
  /// Axes of Unsqueeze/Squeeze: the `axes` input #1 (newer opsets) or
  /// attribute; nullopt when neither is given.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>> axesOperand();
  /// Result shape of the current Reshape/Unsqueeze/Squeeze/Flatten node.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  reshapeTarget(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  unsqueezeShape(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  squeezeShape(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  flattenShape(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  reshapeShape(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<SliceSpec> sliceSpec(llvm::ArrayRef<int64_t> in);
  mlir::FailureOr<llvm::SmallVector<int64_t>> permutation(int64_t rank);

  //===--- Op handlers (one file per family) ------------------------------===//
  template <typename OpTy> mlir::FailureOr<NodeResults> binary();
  template <typename OpTy> mlir::FailureOr<NodeResults> unary();
  template <typename OpTy> mlir::FailureOr<NodeResults> reduce();
  mlir::FailureOr<NodeResults> gemm();
  mlir::FailureOr<NodeResults> matmul();
  mlir::FailureOr<NodeResults> pow();
  mlir::FailureOr<NodeResults> identity();
  mlir::FailureOr<NodeResults> dropout();
  mlir::FailureOr<NodeResults> constant();
  mlir::FailureOr<NodeResults> shape();
  mlir::FailureOr<NodeResults> reshape();
  mlir::FailureOr<NodeResults> transpose();
  mlir::FailureOr<NodeResults> expand();
  mlir::FailureOr<NodeResults> tile();
  mlir::LogicalResult tileShapes(llvm::ArrayRef<int64_t> in,
                                 llvm::ArrayRef<int64_t> repeats,
                                 llvm::SmallVector<int64_t> &wide,
                                 llvm::SmallVector<int64_t> &dims,
                                 llvm::SmallVector<int64_t> &shape);
  mlir::FailureOr<NodeResults> concat();
  mlir::FailureOr<NodeResults> slice();
  mlir::FailureOr<NodeResults> split();
  /// zb.split of `x` along `axis` into parts of `sizes` (checked: positive,
  /// summing to the dimension).
  mlir::FailureOr<NodeResults> splitInto(mlir::Value x, int64_t axis,
                                         llvm::ArrayRef<int64_t> sizes);
  mlir::FailureOr<NodeResults> splitToSequence();
  mlir::FailureOr<NodeResults> sequenceAt();
  mlir::FailureOr<NodeResults> castNode();
  mlir::FailureOr<NodeResults> castLike();
  /// `x` converted to element type `target` (nothing if it has it; only to
  /// floating point).
  mlir::FailureOr<NodeResults> castTo(mlir::Value x, mlir::Type target);
  mlir::FailureOr<NodeResults> gather();
  /// Gather of float `data` (input #0 converted) by input #1.
  mlir::FailureOr<NodeResults> gatherOf(mlir::Value data);
  mlir::FailureOr<NodeResults> where();
  mlir::FailureOr<NodeResults> reciprocal();
  mlir::FailureOr<NodeResults> gelu();
  // LogicOps.cpp: comparisons, logic and float classes on data.
  mlir::FailureOr<NodeResults> compareNode();
  mlir::FailureOr<NodeResults> logicNode();
  mlir::FailureOr<NodeResults> notNode();
  mlir::FailureOr<NodeResults> isNaN();
  mlir::FailureOr<NodeResults> isInf();
  /// The shape both inputs #0 and #1 broadcast to, and each broadcast to it
  /// as float (toFloat).
  mlir::FailureOr<std::pair<mlir::Value, mlir::Value>> floatOperands();
  // IndexOps.cpp: Pad, GatherElements, GatherND, CumSum.
  mlir::FailureOr<NodeResults> pad();
  mlir::FailureOr<NodeResults> gatherElements();
  mlir::FailureOr<NodeResults> gatherND();
  mlir::FailureOr<NodeResults> cumSum();
  /// Rows `rows` (constant linear indices into `data` flattened to
  /// [numElements / inner, inner]) gathered into `shape` (any element type).
  mlir::FailureOr<NodeResults> gatherRows(mlir::Value data, int64_t inner,
                                          const HostTensor &rows,
                                          llvm::ArrayRef<int64_t> shape);
  /// The pads of the current Pad node for a tensor of rank `rank`
  /// (`pads` input #1 or attribute, `axes` input #3): low then high per dim.
  mlir::FailureOr<llvm::SmallVector<int64_t>> padAmounts(int64_t rank);
  /// The flat element indices GatherElements / GatherND read, for a data
  /// tensor of shape `data` (GatherND: of its leading dims), with the
  /// indices `idx`; errors name the node.
  mlir::FailureOr<HostTensor>
  gatherElementsIndices(llvm::ArrayRef<int64_t> data, const HostTensor &idx,
                        int64_t axis);
  mlir::FailureOr<HostTensor> gatherNDIndices(llvm::ArrayRef<int64_t> data,
                                              const HostTensor &idx,
                                              int64_t batchDims,
                                              int64_t &inner);
  /// Softmax before opset 13 (default axis 1, flattening semantics: only the
  /// last axis is supported) and since (default axis -1).
  mlir::FailureOr<NodeResults> softmaxBefore13();
  mlir::FailureOr<NodeResults> softmax();
  mlir::FailureOr<NodeResults> softmaxOnAxis(int64_t defaultAxis,
                                             bool lastAxisOnly);
  mlir::FailureOr<NodeResults> layerNorm();
  mlir::FailureOr<NodeResults> softmaxCrossEntropy();

  //===--- Folds (ConstantFolding.cpp) ------------------------------------===//
  /// Folds the current node with `rule`, all of whose inputs are constants.
  mlir::FailureOr<NodeResults> fold(const FoldRule &rule);
  mlir::FailureOr<HostTensor> foldUnary(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldBinary(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldWhere(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldCast(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldCastLike(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldGather(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldReshape(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldConcat(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldRange(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldExpand(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldTile(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor>
  foldConstantOfShape(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldSlice(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldTrilu(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldTranspose(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldClass(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldPad(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor>
  foldGatherElements(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldGatherND(llvm::ArrayRef<HostTensor> in);
  mlir::FailureOr<HostTensor> foldCumSum(llvm::ArrayRef<HostTensor> in);

  mlir::MLIRContext *ctx;
  std::string fileName;
  mlir::Location fileLoc;
  mlir::OpBuilder builder;
  /// Location of the current node (NameLoc of its name in the file).
  mlir::Location loc;
  /// Version of the default ONNX domain the model imports.
  int64_t opsetVersion = 17;
  /// The directory external data locations are relative to (the model's).
  std::string externalDataDir;

private:
  //===--- Parameters (ONNXParameters.cpp) --------------------------------===//
  mlir::LogicalResult collectParameters(const onnx::GraphProto &graph);
  mlir::LogicalResult resolveFolded(const llvm::StringSet<> &linearWeights);

  //===--- The driver (ONNXImporter.cpp) ----------------------------------===//
  struct Signature;
  mlir::FailureOr<Signature> buildSignature(const onnx::GraphProto &graph);
  mlir::func::FuncOp createMain(mlir::ModuleOp module, const Signature &sig);
  mlir::LogicalResult importNodes(const onnx::GraphProto &graph);
  mlir::LogicalResult returnOutputs(const onnx::GraphProto &graph,
                                    mlir::func::FuncOp func);
  mlir::LogicalResult returnLoss(const onnx::ValueInfoProto &output,
                                 mlir::func::FuncOp func,
                                 unsigned numGraphInputs);
  mlir::LogicalResult checkDeclaredLossType(const onnx::ValueInfoProto &output,
                                            mlir::RankedTensorType lossType);
  void eraseDeadOps(mlir::Block *block);
  mlir::FailureOr<mlir::Value> appendLoss(mlir::Value logits,
                                          mlir::func::FuncOp func,
                                          unsigned numGraphInputs);
  mlir::LogicalResult define(llvm::StringRef name, ImportedValue v,
                             mlir::Location where);

  //===--- One node (ONNXDispatch.cpp) ------------------------------------===//
  mlir::LogicalResult importNode();
  mlir::LogicalResult inlineFunction(const onnx::FunctionProto &f);
  mlir::LogicalResult checkFoldOnlyInputs();

  //===--- Attributes (ONNXReader.cpp) ------------------------------------===//
  const onnx::AttributeProto *findAttr(llvm::StringRef name);
  /// Checks that attribute `a` (null: absent, accepted) has ONNX attribute
  /// type `type`; else reports that `name` must be `what`.
  mlir::LogicalResult checkAttrType(const onnx::AttributeProto *a, int type,
                                    llvm::StringRef name, llvm::StringRef what);

  llvm::StringMap<ImportedValue> values;
  /// External data files read so far, by path.
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
  /// Initializer values by name (parameters and constants alike).
  llvm::StringMap<mlir::DenseElementsAttr> initializers;
  /// A parameter: a float initializer used as a tensor operand, or the
  /// parameter an initializer folded by the exporter was computed from.
  struct Param {
    std::string name;
    /// The initial value (null while an initializer folded from it is not
    /// resolved yet).
    mlir::DenseElementsAttr value;
    const onnx::TensorProto *tensor;
    /// The exporter computed the initializer from the parameter and other
    /// values (constants, iotas): not a rearrangement of the parameter.
    bool computed = false;
  };
  /// The parameters, in initializer order.
  llvm::SmallVector<Param> params;
  /// An initializer folded by the exporter from parameter `param`: the
  /// parameter transposed by `perm`, then reshaped to the initializer's shape.
  struct FoldedInit {
    std::string name, param;
    llvm::SmallVector<int64_t> perm;
    /// Non-empty: the initializer is rows of the parameter gathered by these
    /// indices (its shape without the last dimension), not a rearrangement.
    HostTensor rows;
  };
  llvm::SmallVector<FoldedInit> foldedInits;
  /// Float initializers the exporter marks as buffers (imported as
  /// constants), in initializer order.
  llvm::SmallVector<std::string> buffers;

  /// The model's local functions by "<domain>:<name>".
  llvm::StringMap<const onnx::FunctionProto *> functions;
  /// Calls inlined so far (names their values apart) and the nesting now.
  int inlinedCalls = 0, inlineDepth = 0;
  static constexpr int kMaxInlineDepth = 32;

  // The node being imported.
  const onnx::NodeProto *node = nullptr;
  int nodeIndex = -1;
  std::string nodeName;
  ImportOptions options;
};

} // namespace zb::frontend::onnx_import

#endif // ZB_LIB_FRONTEND_ONNX_ONNXIMPORTERIMPL_H
