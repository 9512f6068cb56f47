//===- ONNXImporter.cpp - ONNX model -> zb dialect ------------------------===//
//
// See include/zb/Frontend/ONNX/ONNXImporter.h for the contract. The importer
// walks the ONNX graph once, in its (topological) node order, keeping for every
// ONNX value name either an SSA value or a constant known at import time.
// Constants are materialized as zb.constant only where a tensor operand needs
// them, so static operands (Pow exponents, reduction axes, later the
// Shape/Gather/Concat plumbing of exporters) never reach the IR.
//
// This file is compiled with exceptions (protobuf/onnx headers need them);
// nothing here lets one escape into MLIR code.
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/ONNX/ONNXImporter.h"

#include "zb/Frontend/HostTensor.h"

#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

using namespace mlir;
using zb::frontend::broadcastHost;
using zb::frontend::broadcastShapes;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::toInts;

namespace {

/// What an ONNX value name stands for during import: an SSA value, a constant
/// known at import time (materialized lazily), or both once materialized.
struct ImportedValue {
  Value value;
  DenseElementsAttr constant;
};

/// Upper bound on the number of elements of one tensor (guards against
/// corrupt dims before anything is allocated).
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Upper bound on the number of elements of a tensor folded at import.
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;

/// Inputs of an op that must be constants known at import time (they are
/// read, never turned into tensor operands).
bool isStaticInput(llvm::StringRef opType, int index) {
  if (opType == "Slice" || opType == "Dropout")
    return index >= 1;
  if (opType == "ConstantOfShape" || opType == "Range")
    return true;
  if (index != 1)
    return false;
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Pow", "ReduceMean", "ReduceSum", "ReduceMax", "Reshape"}, true)
      .Cases({"Unsqueeze", "Squeeze", "Expand", "Split", "Trilu"}, true)
      .Default(false);
}

//===----------------------------------------------------------------------===//
// Constant folding at import (the exporters' shape plumbing)
//===----------------------------------------------------------------------===//

/// True if `t` (rank >= 2) is, in each of its [Tq, Tk] matrices, `above` at
/// every key after the query (k > q) and `below` elsewhere: a causal mask.
bool isCausalPattern(const HostTensor &t, double above, double below) {
  if (t.shape.size() < 2)
    return false;
  int64_t tq = t.shape[t.shape.size() - 2], tk = t.shape.back();
  for (int64_t i = 0, n = t.numElements(); i < n; ++i) {
    int64_t k = i % tk, q = (i / tk) % tq;
    double want = k > q ? above : below;
    if (!(t.data[i] == want || (std::isnan(want) && std::isnan(t.data[i]))))
      return false;
  }
  return true;
}

class ONNXImporter {
public:
  ONNXImporter(MLIRContext *ctx, llvm::StringRef fileName,
               const zb::frontend::ImportOptions &options)
      : ctx(ctx), fileName(fileName.str()),
        fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)), builder(ctx),
        loc(fileLoc), options(options) {}

  OwningOpRef<ModuleOp> importModel(const onnx::ModelProto &model);

private:
  using Handler = FailureOr<SmallVector<ImportedValue, 1>> (ONNXImporter::*)();

  //===--- Diagnostics ----------------------------------------------------===//
  InFlightDiagnostic fileError() { return emitError(fileLoc); }
  /// An error about the current node: "<OpType> node '<name>' (#i): ...".
  InFlightDiagnostic nodeError() {
    InFlightDiagnostic diag = emitError(loc);
    diag << node->op_type() << " node '" << nodeName << "' (#" << nodeIndex
         << "): ";
    return diag;
  }

  //===--- Types and constants --------------------------------------------===//
  Type convertElementType(int32_t onnxType);
  FailureOr<RankedTensorType> convertValueInfo(const onnx::ValueInfoProto &vi,
                                               llvm::StringRef what);
  FailureOr<DenseElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                             Location where,
                                             llvm::StringRef what);
  DenseElementsAttr splat(RankedTensorType type, double value);

  //===--- Graph traversal ------------------------------------------------===//
  LogicalResult collectParameters(const onnx::GraphProto &graph);
  void eraseDeadOps(Block *block);
  FailureOr<Value> appendLoss(Value logits, func::FuncOp func,
                              unsigned numGraphInputs);
  LogicalResult importNode();
  LogicalResult define(llvm::StringRef name, ImportedValue v, Location where);

  //===--- Operands of the current node -----------------------------------===//
  bool hasInput(int i) const {
    return i < node->input_size() && !node->input(i).empty();
  }
  FailureOr<ImportedValue> lookup(int i);
  /// Input `i` as a tensor SSA value (materializes constants).
  FailureOr<Value> tensorInput(int i);
  /// Input `i` as a floating-point tensor SSA value.
  FailureOr<Value> floatInput(int i);
  /// Input `i` as a constant known at import time.
  FailureOr<DenseElementsAttr> constantInput(int i);
  Value materialize(ImportedValue &v);

  //===--- Attributes of the current node ---------------------------------===//
  const onnx::AttributeProto *findAttr(llvm::StringRef name);
  FailureOr<int64_t> intAttr(llvm::StringRef name, int64_t dflt);
  FailureOr<float> floatAttr(llvm::StringRef name, float dflt);
  FailureOr<std::optional<SmallVector<int64_t>>> intsAttr(llvm::StringRef name);

  //===--- Building blocks ------------------------------------------------===//
  /// Broadcasts `v` to `shape` (numpy rules: trailing alignment, size-1 dims).
  FailureOr<Value> broadcastTo(Value v, ArrayRef<int64_t> shape);
  /// Input `i` (already looked up) broadcast to `shape`.
  FailureOr<Value> broadcastInput(int i, ArrayRef<int64_t> shape);
  RankedTensorType typeOf(const ImportedValue &v);
  Value splatConstant(RankedTensorType type, double value);

  //===--- Op handlers ----------------------------------------------------===//
  template <typename OpTy> FailureOr<SmallVector<ImportedValue, 1>> binary();
  template <typename OpTy> FailureOr<SmallVector<ImportedValue, 1>> unary();
  template <typename OpTy> FailureOr<SmallVector<ImportedValue, 1>> reduce();
  FailureOr<SmallVector<ImportedValue, 1>> gemm();
  FailureOr<SmallVector<ImportedValue, 1>> matmul();
  FailureOr<SmallVector<ImportedValue, 1>> pow();
  FailureOr<SmallVector<ImportedValue, 1>> identity();
  FailureOr<SmallVector<ImportedValue, 1>> dropout();
  FailureOr<SmallVector<ImportedValue, 1>> constant();
  FailureOr<SmallVector<ImportedValue, 1>> shape();
  FailureOr<SmallVector<ImportedValue, 1>> reshape();
  FailureOr<SmallVector<ImportedValue, 1>> transpose();
  FailureOr<SmallVector<ImportedValue, 1>> expand();
  FailureOr<SmallVector<ImportedValue, 1>> concat();
  FailureOr<SmallVector<ImportedValue, 1>> slice();
  FailureOr<SmallVector<ImportedValue, 1>> split();
  FailureOr<SmallVector<ImportedValue, 1>> castNode();
  FailureOr<SmallVector<ImportedValue, 1>> gather();
  FailureOr<SmallVector<ImportedValue, 1>> where();
  FailureOr<SmallVector<ImportedValue, 1>> reciprocal();
  FailureOr<SmallVector<ImportedValue, 1>> softmax();
  FailureOr<SmallVector<ImportedValue, 1>> layerNorm();
  FailureOr<SmallVector<ImportedValue, 1>> softmaxCrossEntropy();

  //===--- Folding (constants known at import) ----------------------------===//
  struct SliceSpec {
    SmallVector<int64_t> start, step, shape;
  };
  bool allInputsConstant();
  FailureOr<SmallVector<ImportedValue, 1>> fold();
  FailureOr<HostTensor> hostInput(int i);
  /// Input `i` as a 1-D (or scalar) integer constant.
  FailureOr<SmallVector<int64_t>> intsInput(int i);
  FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                   llvm::StringRef what);
  FailureOr<std::optional<SmallVector<int64_t>>> axesOperand();
  /// Result shape of the current Reshape/Unsqueeze/Squeeze/Flatten node.
  FailureOr<SmallVector<int64_t>> reshapeTarget(ArrayRef<int64_t> in);
  FailureOr<SliceSpec> sliceSpec(ArrayRef<int64_t> in);
  FailureOr<SmallVector<int64_t>> permutation(int64_t rank);

  Handler findHandler(llvm::StringRef opType);

  MLIRContext *ctx;
  std::string fileName;
  Location fileLoc;
  OpBuilder builder;

  llvm::StringMap<ImportedValue> values;
  /// Initializer values by name (parameters and constants alike).
  llvm::StringMap<DenseElementsAttr> initializers;
  /// Float initializers used as tensor operands: the parameters, in order.
  SmallVector<const onnx::TensorProto *> params;

  /// Version of the default ONNX domain the model imports.
  int64_t opsetVersion = 17;

  // The node being imported.
  const onnx::NodeProto *node = nullptr;
  int nodeIndex = -1;
  std::string nodeName;
  Location loc;
  zb::frontend::ImportOptions options;
};

} // namespace

//===----------------------------------------------------------------------===//
// Types and constants
//===----------------------------------------------------------------------===//

Type ONNXImporter::convertElementType(int32_t onnxType) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT:
    return builder.getF32Type();
  case TP::DOUBLE:
    return builder.getF64Type();
  case TP::FLOAT16:
    return builder.getF16Type();
  case TP::BFLOAT16:
    return builder.getBF16Type();
  case TP::INT8:
  case TP::UINT8:
    return builder.getIntegerType(8);
  case TP::INT16:
  case TP::UINT16:
    return builder.getIntegerType(16);
  case TP::INT32:
  case TP::UINT32:
    return builder.getIntegerType(32);
  case TP::INT64:
  case TP::UINT64:
    return builder.getIntegerType(64);
  case TP::BOOL:
    return builder.getI1Type();
  default:
    return nullptr;
  }
}

static llvm::StringRef elementTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnxType));
  return "<invalid>";
}

FailureOr<RankedTensorType>
ONNXImporter::convertValueInfo(const onnx::ValueInfoProto &vi,
                               llvm::StringRef what) {
  if (!vi.has_type() || !vi.type().has_tensor_type()) {
    fileError() << what << " '" << vi.name() << "' is not a tensor";
    return failure();
  }
  const onnx::TypeProto::Tensor &tt = vi.type().tensor_type();
  Type elementType = convertElementType(tt.elem_type());
  if (!elementType) {
    fileError() << what << " '" << vi.name()
                << "' has unsupported element type "
                << elementTypeName(tt.elem_type());
    return failure();
  }
  if (!tt.has_shape()) {
    fileError() << what << " '" << vi.name()
                << "' has no shape; export the model with static shapes";
    return failure();
  }
  SmallVector<int64_t> shape;
  for (const onnx::TensorShapeProto::Dimension &d : tt.shape().dim()) {
    if (!d.has_dim_value()) {
      fileError() << what << " '" << vi.name() << "' has dynamic dimension #"
                  << shape.size()
                  << (d.has_dim_param() ? " '" + d.dim_param() + "'" : "")
                  << "; export the model with static shapes";
      return failure();
    }
    if (d.dim_value() <= 0 || d.dim_value() > kMaxElements) {
      fileError() << what << " '" << vi.name() << "' has invalid dimension "
                  << d.dim_value();
      return failure();
    }
    shape.push_back(d.dim_value());
  }
  return RankedTensorType::get(shape, elementType);
}

FailureOr<DenseElementsAttr>
ONNXImporter::convertTensor(const onnx::TensorProto &tensor, Location where,
                            llvm::StringRef what) {
  using TP = onnx::TensorProto;
  auto error = [&]() -> InFlightDiagnostic {
    InFlightDiagnostic diag = emitError(where);
    diag << what << " '" << tensor.name() << "': ";
    return diag;
  };
  if (tensor.data_location() == TP::EXTERNAL) {
    error() << "external tensor data is not supported";
    return failure();
  }
  if (tensor.has_segment()) {
    error() << "segmented tensors are not supported";
    return failure();
  }
  Type elementType = convertElementType(tensor.data_type());
  if (!elementType) {
    error() << "unsupported element type "
            << elementTypeName(tensor.data_type());
    return failure();
  }
  SmallVector<int64_t> shape;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || d > kMaxElements ||
        (d != 0 && numElements > kMaxElements / d)) {
      error() << "invalid dimensions";
      return failure();
    }
    numElements *= d;
    shape.push_back(d);
  }
  auto type = RankedTensorType::get(shape, elementType);
  unsigned width =
      elementType.isInteger(1) ? 1 : elementType.getIntOrFloatBitWidth() / 8;

  // Gather the little-endian bytes of every element (booleans: one byte).
  std::string bytes;
  auto typedCount = [&]() -> int64_t {
    switch (tensor.data_type()) {
    case TP::FLOAT:
      return tensor.float_data_size();
    case TP::DOUBLE:
      return tensor.double_data_size();
    case TP::INT64:
      return tensor.int64_data_size();
    case TP::UINT32:
    case TP::UINT64:
      return tensor.uint64_data_size();
    default:
      return tensor.int32_data_size();
    }
  };
  if (tensor.has_raw_data()) {
    if (int64_t(tensor.raw_data().size()) != numElements * width) {
      error() << "has " << tensor.raw_data().size() << " bytes of data, "
              << formatShape(shape) << " x "
              << elementTypeName(tensor.data_type()) << " needs "
              << numElements * width;
      return failure();
    }
    bytes = tensor.raw_data();
  } else {
    if (typedCount() != numElements) {
      error() << "has " << typedCount() << " values, its shape "
              << formatShape(shape) << " needs " << numElements;
      return failure();
    }
    bytes.resize(numElements * width);
    for (int64_t i = 0; i < numElements; ++i) {
      char *dst = bytes.data() + i * width;
      switch (tensor.data_type()) {
      case TP::FLOAT: {
        float v = tensor.float_data(i);
        std::memcpy(dst, &v, 4);
        break;
      }
      case TP::DOUBLE: {
        double v = tensor.double_data(i);
        std::memcpy(dst, &v, 8);
        break;
      }
      case TP::INT64: {
        int64_t v = tensor.int64_data(i);
        std::memcpy(dst, &v, 8);
        break;
      }
      case TP::UINT32:
      case TP::UINT64: {
        uint64_t v = tensor.uint64_data(i);
        std::memcpy(dst, &v, width);
        break;
      }
      default: { // int32_data holds INT32 and the narrower types (low bits)
        int32_t v = tensor.int32_data(i);
        std::memcpy(dst, &v, width);
        break;
      }
      }
    }
  }
  if (elementType.isInteger(1)) {
    SmallVector<bool> bits(numElements);
    for (int64_t i = 0; i < numElements; ++i)
      bits[i] = bytes[i] != 0;
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  if (numElements == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>());
  // A buffer of one element is a splat, and getFromRawBuffer expects that.
  bool isSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, {bytes.data(), bytes.size()},
                                           isSplat)) {
    error() << "invalid data";
    return failure();
  }
  return DenseElementsAttr::getFromRawBuffer(type,
                                             {bytes.data(), bytes.size()});
}

DenseElementsAttr ONNXImporter::splat(RankedTensorType type, double value) {
  return DenseElementsAttr::get(type, ArrayRef<Attribute>{builder.getFloatAttr(
                                          type.getElementType(), value)});
}

Value ONNXImporter::splatConstant(RankedTensorType type, double value) {
  return zb::ConstantOp::create(builder, loc, splat(type, value));
}

//===----------------------------------------------------------------------===//
// Graph traversal
//===----------------------------------------------------------------------===//

LogicalResult ONNXImporter::define(llvm::StringRef name, ImportedValue v,
                                   Location where) {
  if (name.empty())
    return success(); // an optional output nobody reads
  if (!values.try_emplace(name, v).second) {
    emitError(where) << "ONNX value '" << name << "' is defined twice";
    return failure();
  }
  return success();
}

LogicalResult ONNXImporter::collectParameters(const onnx::GraphProto &graph) {
  // An initializer is a parameter if it is a floating-point tensor used as a
  // tensor operand (or is itself a graph output); any other initializer is a
  // constant folded at import.
  llvm::StringSet<> usedAsTensor;
  for (const onnx::NodeProto &n : graph.node())
    for (int i = 0; i < n.input_size(); ++i)
      if (!isStaticInput(n.op_type(), i))
        usedAsTensor.insert(n.input(i));
  for (const onnx::ValueInfoProto &out : graph.output())
    usedAsTensor.insert(out.name());

  for (const onnx::TensorProto &t : graph.initializer()) {
    if (t.name().empty()) {
      fileError() << "an initializer has no name";
      return failure();
    }
    if (initializers.count(t.name())) {
      fileError() << "initializer '" << t.name() << "' is defined twice";
      return failure();
    }
    FailureOr<DenseElementsAttr> value =
        convertTensor(t, NameLoc::get(builder.getStringAttr(t.name()), fileLoc),
                      "initializer");
    if (failed(value))
      return failure();
    initializers[t.name()] = *value;
    if (usedAsTensor.contains(t.name()) &&
        isa<FloatType>(value->getElementType()))
      params.push_back(&t);
  }
  return success();
}

OwningOpRef<ModuleOp> ONNXImporter::importModel(const onnx::ModelProto &model) {
  if (!model.has_graph() || model.ir_version() <= 0) {
    fileError() << "failed to parse ONNX model '" << fileName
                << "': not an ONNX model (no "
                << (model.has_graph() ? "IR version" : "graph") << ")";
    return nullptr;
  }
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::OperatorSetIdProto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      opsetVersion = o.version();
  if (graph.sparse_initializer_size() > 0) {
    fileError() << "sparse initializers are not supported";
    return nullptr;
  }
  if (failed(collectParameters(graph)))
    return nullptr;

  // Signature: graph inputs that are not initializers, then the parameters.
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  SmallVector<std::string> argNames;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue; // an initializer listed as input (keep_initializers_as_inputs)
    FailureOr<RankedTensorType> type = convertValueInfo(in, "graph input");
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        zb::frontend::kNameAttr, builder.getStringAttr(in.name()))));
    argNames.push_back(in.name());
  }
  SmallVector<NamedAttribute> paramValues;
  for (const onnx::TensorProto *p : params) {
    DenseElementsAttr value = initializers[p->name()];
    argTypes.push_back(value.getType());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(zb::frontend::kNameAttr,
                              builder.getStringAttr(p->name())),
         builder.getNamedAttr(zb::kParamAttr, builder.getUnitAttr())}));
    argNames.push_back(p->name());
    paramValues.push_back(builder.getNamedAttr(p->name(), value));
  }

  if (graph.output_size() != 1 && !options.keepOutputs) {
    fileError() << "the graph must have exactly one output, the loss (it has "
                << graph.output_size() << ")";
    return nullptr;
  }
  const onnx::ValueInfoProto &output = graph.output(0);

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(zb::frontend::kParamValuesAttr,
                     builder.getDictionaryAttr(paramValues));
  builder.setInsertionPointToEnd(module->getBody());
  auto func =
      func::FuncOp::create(builder, fileLoc, zb::frontend::kMainFuncName,
                           builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  for (auto [name, arg] : llvm::zip_equal(argNames, entry->getArguments())) {
    Location argLoc = NameLoc::get(builder.getStringAttr(name), fileLoc);
    arg.setLoc(argLoc);
    if (failed(define(name, ImportedValue{arg, {}}, argLoc)))
      return nullptr;
  }
  for (auto &[name, value] : initializers)
    if (!values.count(name))
      values[name] = ImportedValue{{}, value};
  builder.setInsertionPointToEnd(entry);

  for (int i = 0; i < graph.node_size(); ++i) {
    node = &graph.node(i);
    nodeIndex = i;
    nodeName = node->name().empty() ? node->op_type() + "_" + std::to_string(i)
                                    : node->name();
    loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);
    if (failed(importNode()))
      return nullptr;
  }
  node = nullptr;

  if (options.keepOutputs) {
    // Forward model checks: every graph output is a result, as computed.
    SmallVector<Value> results;
    for (const onnx::ValueInfoProto &out : graph.output()) {
      auto found = values.find(out.name());
      if (found == values.end()) {
        fileError() << "the graph output '" << out.name()
                    << "' is not computed by any node";
        return nullptr;
      }
      loc = NameLoc::get(builder.getStringAttr(out.name()), fileLoc);
      results.push_back(materialize(found->second));
    }
    func::ReturnOp::create(builder, fileLoc, results);
    func.setFunctionType(builder.getFunctionType(
        entry->getArgumentTypes(), ValueRange(results).getTypes()));
    return module;
  }

  // The result: the loss.
  loc = NameLoc::get(builder.getStringAttr(output.name()), fileLoc);
  auto it = values.find(output.name());
  if (it == values.end()) {
    fileError() << "the graph output '" << output.name()
                << "' is not computed by any node";
    return nullptr;
  }
  Value loss = materialize(it->second);
  if (!options.loss.empty()) {
    FailureOr<Value> appended =
        appendLoss(loss, func, argNames.size() - params.size());
    if (failed(appended))
      return nullptr;
    loss = *appended;
  }
  auto lossType = cast<RankedTensorType>(loss.getType());
  if (!isa<FloatType>(lossType.getElementType()) ||
      lossType.getNumElements() != 1) {
    fileError() << "the graph output '" << output.name()
                << "' must be a scalar loss, but it is " << lossType
                << (options.loss.empty()
                        ? " (for a model ending in logits, use --loss "
                          "cross-entropy --targets NAME)"
                        : "");
    return nullptr;
  }
  // A fully static declared type must be what the nodes compute.
  const onnx::TypeProto &declared = output.type();
  if (options.loss.empty() && declared.has_tensor_type() &&
      declared.tensor_type().has_shape()) {
    SmallVector<int64_t> shape;
    for (const auto &d : declared.tensor_type().shape().dim())
      shape.push_back(d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic);
    Type elementType = convertElementType(declared.tensor_type().elem_type());
    if (!llvm::is_contained(shape, ShapedType::kDynamic) && elementType &&
        RankedTensorType::get(shape, elementType) != lossType) {
      fileError() << "the graph output '" << output.name()
                  << "' is declared as "
                  << RankedTensorType::get(shape, elementType)
                  << " but the graph computes " << lossType;
      return nullptr;
    }
  }
  if (lossType.getRank() != 0)
    loss = zb::ReshapeOp::create(
        builder, loc, RankedTensorType::get({}, lossType.getElementType()),
        loss);
  func::ReturnOp::create(builder, fileLoc, loss);
  func.setFunctionType(
      builder.getFunctionType(entry->getArgumentTypes(), loss.getType()));
  eraseDeadOps(entry);
  return module;
}

/// Removes ops whose results nobody uses (e.g. a weight transpose folded into
/// zb.matmul {transpose_rhs}); every zb op is side-effect free.
void ONNXImporter::eraseDeadOps(Block *block) {
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(block->getOperations())))
    if (isa<zb::ZBDialect>(op.getDialect()) && op.use_empty())
      op.erase();
}

/// --loss cross-entropy --targets NAME: the mean cross-entropy of the logits
/// [N..., C] with the integer targets [N...] (graph input NAME, or a new i64
/// argument NAME inserted after the graph inputs).
FailureOr<Value> ONNXImporter::appendLoss(Value logits, func::FuncOp func,
                                          unsigned numGraphInputs) {
  if (options.loss != "cross-entropy") {
    fileError() << "unknown loss '" << options.loss
                << "' (supported: cross-entropy)";
    return failure();
  }
  if (options.targets.empty()) {
    fileError() << "--loss cross-entropy needs --targets NAME (the graph "
                   "input, or a new input, holding the class indices)";
    return failure();
  }
  auto type = cast<RankedTensorType>(logits.getType());
  if (!isa<FloatType>(type.getElementType()) || type.getRank() < 1) {
    fileError() << "--loss cross-entropy: the graph output must be logits "
                   "[N..., C], but it is "
                << type;
    return failure();
  }
  auto targetsType =
      RankedTensorType::get(type.getShape().drop_back(), builder.getI64Type());
  Value targets;
  auto it = values.find(options.targets);
  if (it != values.end()) {
    targets = materialize(it->second);
    auto t = cast<RankedTensorType>(targets.getType());
    if (!isa<IntegerType>(t.getElementType()) ||
        t.getShape() != targetsType.getShape()) {
      fileError() << "--targets '" << options.targets << "' is " << t
                  << ", but logits " << type
                  << " need integer targets of shape "
                  << formatShape(targetsType.getShape());
      return failure();
    }
  } else {
    Location argLoc =
        NameLoc::get(builder.getStringAttr(options.targets), fileLoc);
    if (failed(
            func.insertArgument(numGraphInputs, targetsType,
                                builder.getDictionaryAttr(builder.getNamedAttr(
                                    zb::frontend::kNameAttr,
                                    builder.getStringAttr(options.targets))),
                                argLoc)))
      return failure();
    targets = func.getArgument(numGraphInputs);
  }
  return Value(zb::CrossEntropyOp::create(
      builder, loc, RankedTensorType::get({}, type.getElementType()), logits,
      targets));
}

//===----------------------------------------------------------------------===//
// Operands and attributes of the current node
//===----------------------------------------------------------------------===//

FailureOr<ImportedValue> ONNXImporter::lookup(int i) {
  if (!hasInput(i)) {
    nodeError() << "missing input #" << i;
    return failure();
  }
  auto it = values.find(node->input(i));
  if (it == values.end()) {
    nodeError() << "uses undefined value '" << node->input(i) << "'";
    return failure();
  }
  return it->second;
}

Value ONNXImporter::materialize(ImportedValue &v) {
  if (!v.value) {
    // Constants are materialized where first used; later uses reuse them
    // (every use is later in the same block).
    v.value = zb::ConstantOp::create(builder, loc, v.constant);
  }
  return v.value;
}

FailureOr<Value> ONNXImporter::tensorInput(int i) {
  if (failed(lookup(i)))
    return failure();
  return materialize(values.find(node->input(i))->second);
}

FailureOr<Value> ONNXImporter::floatInput(int i) {
  FailureOr<Value> v = tensorInput(i);
  if (failed(v))
    return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (!isa<FloatType>(type.getElementType())) {
    nodeError() << "input #" << i << " has element type "
                << type.getElementType()
                << "; only floating-point tensors are supported";
    return failure();
  }
  return v;
}

FailureOr<DenseElementsAttr> ONNXImporter::constantInput(int i) {
  FailureOr<ImportedValue> v = lookup(i);
  if (failed(v))
    return failure();
  if (v->constant)
    return v->constant;
  auto it = initializers.find(node->input(i));
  if (it != initializers.end())
    return it->second;
  nodeError() << "input #" << i << " ('" << node->input(i)
              << "') must be a constant";
  return failure();
}

const onnx::AttributeProto *ONNXImporter::findAttr(llvm::StringRef name) {
  for (const onnx::AttributeProto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

FailureOr<int64_t> ONNXImporter::intAttr(llvm::StringRef name, int64_t dflt) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::INT) {
    nodeError() << "attribute '" << name << "' must be an integer";
    return failure();
  }
  return a->i();
}

FailureOr<float> ONNXImporter::floatAttr(llvm::StringRef name, float dflt) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return dflt;
  if (a->type() != onnx::AttributeProto::FLOAT) {
    nodeError() << "attribute '" << name << "' must be a float";
    return failure();
  }
  return a->f();
}

FailureOr<std::optional<SmallVector<int64_t>>>
ONNXImporter::intsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  if (a->type() != onnx::AttributeProto::INTS) {
    nodeError() << "attribute '" << name << "' must be a list of integers";
    return failure();
  }
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

FailureOr<Value> ONNXImporter::broadcastTo(Value v, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  int64_t offset = int64_t(shape.size()) - type.getRank();
  if (offset < 0) {
    nodeError() << "cannot broadcast " << type << " to " << formatShape(shape);
    return failure();
  }
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t d = type.getDimSize(i);
    if (d != 1 && d != shape[offset + i]) {
      nodeError() << "cannot broadcast " << type << " to "
                  << formatShape(shape);
      return failure();
    }
    dims.push_back(offset + i);
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return Value(zb::BroadcastInDimOp::create(builder, loc, resultType, v, dims));
}

FailureOr<Value> ONNXImporter::broadcastInput(int i, ArrayRef<int64_t> shape) {
  ImportedValue &v = values.find(node->input(i))->second;
  // A splat constant not materialized yet is built at the target shape.
  if (!v.value && v.constant.isSplat() &&
      v.constant.getType().getShape() != shape) {
    auto type = RankedTensorType::get(shape, v.constant.getElementType());
    return Value(
        zb::ConstantOp::create(builder, loc, v.constant.resizeSplat(type)));
  }
  return broadcastTo(materialize(v), shape);
}

RankedTensorType ONNXImporter::typeOf(const ImportedValue &v) {
  return cast<RankedTensorType>(v.value ? v.value.getType()
                                        : Type(v.constant.getType()));
}

//===----------------------------------------------------------------------===//
// Op handlers
//===----------------------------------------------------------------------===//

/// Add / Sub / Mul / Div with numpy (multidirectional) broadcasting.
template <typename OpTy>
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::binary() {
  FailureOr<ImportedValue> lhs = lookup(0), rhs = failure();
  if (failed(lhs) || failed(rhs = lookup(1)))
    return failure();
  RankedTensorType lhsType = typeOf(*lhs), rhsType = typeOf(*rhs);
  RankedTensorType types[] = {lhsType, rhsType};
  for (auto [i, type] : llvm::enumerate(types)) {
    if (!isa<FloatType>(type.getElementType())) {
      nodeError() << "input #" << i << " has element type "
                  << type.getElementType()
                  << "; only floating-point tensors are supported";
      return failure();
    }
  }
  // x + mask with a constant additive causal mask (0 where k <= q, -inf
  // where k > q, e.g. full(-inf).triu(1)) is zb.causal_mask.
  if constexpr (std::is_same_v<OpTy, zb::AddOp>) {
    for (int side = 0; side < 2; ++side) {
      ImportedValue &mask = side ? *rhs : *lhs, &other = side ? *lhs : *rhs;
      RankedTensorType otherType = side ? lhsType : rhsType;
      if (!mask.constant || other.constant || mask.constant.isSplat() ||
          otherType.getRank() < 2 || typeOf(mask).getRank() < 2 ||
          typeOf(mask).getShape().take_back(2) !=
              otherType.getShape().take_back(2) ||
          !broadcastShapes(otherType.getShape(), typeOf(mask).getShape()) ||
          *broadcastShapes(otherType.getShape(), typeOf(mask).getShape()) !=
              otherType.getShape() ||
          !isCausalPattern(HostTensor::fromAttr(mask.constant),
                           -std::numeric_limits<double>::infinity(), 0.0))
        continue;
      return SmallVector<ImportedValue, 1>{
          {zb::CausalMaskOp::create(builder, loc, otherType, other.value,
                                    FloatAttr()),
           {}}};
    }
  }
  if (lhsType.getElementType() != rhsType.getElementType()) {
    nodeError() << "operand element types differ: " << lhsType << " and "
                << rhsType;
    return failure();
  }
  int64_t rank = std::max(lhsType.getRank(), rhsType.getRank());
  SmallVector<int64_t> shape(rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhsType.getRank()
                    ? 1
                    : lhsType.getDimSize(i - (rank - lhsType.getRank()));
    int64_t r = i < rank - rhsType.getRank()
                    ? 1
                    : rhsType.getDimSize(i - (rank - rhsType.getRank()));
    if (l != r && l != 1 && r != 1) {
      nodeError() << "operand shapes are not broadcastable: " << lhsType
                  << " and " << rhsType;
      return failure();
    }
    shape[i] = l == 1 ? r : l;
  }
  FailureOr<Value> l = broadcastInput(0, shape), r = failure();
  if (failed(l) || failed(r = broadcastInput(1, shape)))
    return failure();
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  return SmallVector<ImportedValue, 1>{
      {OpTy::create(builder, loc, type, *l, *r), {}}};
}

template <typename OpTy>
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::unary() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  return SmallVector<ImportedValue, 1>{
      {OpTy::create(builder, loc, x->getType(), *x), {}}};
}

/// Gemm: Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N].
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::gemm() {
  FailureOr<int64_t> transA = intAttr("transA", 0),
                     transB = intAttr("transB", 0);
  FailureOr<float> alpha = floatAttr("alpha", 1.0f),
                   beta = floatAttr("beta", 1.0f);
  if (failed(transA) || failed(transB) || failed(alpha) || failed(beta))
    return failure();
  FailureOr<Value> a = floatInput(0), b = failure();
  if (failed(a) || failed(b = floatInput(1)))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (aType.getRank() != 2 || bType.getRank() != 2 ||
      aType.getElementType() != bType.getElementType()) {
    nodeError() << "A and B must be matrices of the same element type, got "
                << aType << " and " << bType;
    return failure();
  }
  int64_t m = aType.getDimSize(*transA ? 1 : 0);
  int64_t k = aType.getDimSize(*transA ? 0 : 1);
  int64_t kb = bType.getDimSize(*transB ? 1 : 0);
  int64_t n = bType.getDimSize(*transB ? 0 : 1);
  if (k != kb) {
    nodeError() << "inner dimensions differ: op(A) is " << m << "x" << k
                << ", op(B) is " << kb << "x" << n;
    return failure();
  }
  auto type = RankedTensorType::get({m, n}, aType.getElementType());
  Value y = zb::MatmulOp::create(builder, loc, type, *a, *b, *transA != 0,
                                 *transB != 0);
  if (*alpha != 1.0f)
    y = zb::MulOp::create(builder, loc, type, y, splatConstant(type, *alpha));
  if (hasInput(2) && *beta != 0.0f) {
    FailureOr<Value> c = floatInput(2);
    if (failed(c))
      return failure();
    if (cast<RankedTensorType>(c->getType()).getElementType() !=
        type.getElementType()) {
      nodeError() << "C has element type " << c->getType()
                  << ", expected that of A and B";
      return failure();
    }
    if (*beta != 1.0f)
      c = Value(zb::MulOp::create(
          builder, loc, c->getType(), *c,
          splatConstant(cast<RankedTensorType>(c->getType()), *beta)));
    c = broadcastTo(*c, type.getShape());
    if (failed(c))
      return failure();
    y = zb::AddOp::create(builder, loc, type, y, *c);
  }
  return SmallVector<ImportedValue, 1>{{y, {}}};
}

/// MatMul with numpy semantics for rank >= 2: 2-D x 2-D -> zb.matmul;
/// [..., M, K] x [K, N] -> rows flattened into one zb.matmul; batched
/// operands (batch dimensions broadcast) -> zb.batch_matmul.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::matmul() {
  FailureOr<Value> a = floatInput(0), b = failure();
  if (failed(a) || failed(b = floatInput(1)))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (aType.getRank() < 2 || bType.getRank() < 2) {
    nodeError() << "1-D operands are not supported, got " << aType << " and "
                << bType;
    return failure();
  }
  int64_t m = aType.getDimSize(aType.getRank() - 2),
          k = aType.getShape().back(),
          kb = bType.getDimSize(bType.getRank() - 2),
          n = bType.getShape().back();
  if (k != kb || aType.getElementType() != bType.getElementType()) {
    nodeError() << "operands do not match: " << aType << " and " << bType;
    return failure();
  }
  Type elt = aType.getElementType();
  if (bType.getRank() == 2) {
    ArrayRef<int64_t> lead = aType.getShape().drop_back(2);
    int64_t rows = m;
    for (int64_t d : lead)
      rows *= d;
    Value lhs = *a;
    if (aType.getRank() > 2)
      lhs = zb::ReshapeOp::create(builder, loc,
                                  RankedTensorType::get({rows, k}, elt), lhs);
    // x @ W^T with W^T a zb.transpose (nn.Linear exported without constant
    // folding): use W with transpose_rhs (the dead transpose is removed at
    // the end of the import).
    Value rhs = *b;
    bool transposeRhs = false;
    if (auto t = rhs.getDefiningOp<zb::TransposeOp>()) {
      rhs = t.getOperand();
      transposeRhs = true;
    }
    Value y = zb::MatmulOp::create(builder, loc,
                                   RankedTensorType::get({rows, n}, elt), lhs,
                                   rhs, false, transposeRhs);
    if (aType.getRank() > 2) {
      SmallVector<int64_t> shape(lead);
      shape.append({m, n});
      y = zb::ReshapeOp::create(builder, loc, RankedTensorType::get(shape, elt),
                                y);
    }
    return SmallVector<ImportedValue, 1>{{y, {}}};
  }
  std::optional<SmallVector<int64_t>> batch = broadcastShapes(
      aType.getShape().drop_back(2), bType.getShape().drop_back(2));
  if (!batch) {
    nodeError() << "batch dimensions are not broadcastable: " << aType
                << " and " << bType;
    return failure();
  }
  SmallVector<int64_t> aShape(*batch), bShape(*batch), shape(*batch);
  aShape.append({m, k});
  bShape.append({k, n});
  shape.append({m, n});
  FailureOr<Value> lhs = broadcastTo(*a, aShape), rhs = failure();
  if (failed(lhs) || failed(rhs = broadcastTo(*b, bShape)))
    return failure();
  return SmallVector<ImportedValue, 1>{
      {zb::BatchMatmulOp::create(builder, loc,
                                 RankedTensorType::get(shape, elt), *lhs, *rhs,
                                 false, false),
       {}}};
}

/// Pow with a constant scalar exponent: x^1 -> x, x^2 -> x * x, x^0.5 ->
/// sqrt, x^-0.5 -> rsqrt, else zb.pow with the exponent as a splat.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::pow() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<ImportedValue> e = lookup(1);
  if (failed(x) || failed(e))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::optional<double> exponent;
  if (e->constant && e->constant.getNumElements() == 1)
    exponent = HostTensor::fromAttr(e->constant).data[0];
  if (!exponent) {
    FailureOr<Value> ev = floatInput(1);
    if (failed(ev))
      return failure();
    auto eType = cast<RankedTensorType>(ev->getType());
    std::optional<SmallVector<int64_t>> shape =
        broadcastShapes(type.getShape(), eType.getShape());
    if (eType.getElementType() != type.getElementType() || !shape) {
      nodeError() << "a computed exponent must have the element type of the "
                     "base and broadcast with it: base "
                  << type << ", exponent " << eType;
      return failure();
    }
    FailureOr<Value> base = broadcastTo(*x, *shape), exp = failure();
    if (failed(base) || failed(exp = broadcastTo(*ev, *shape)))
      return failure();
    return SmallVector<ImportedValue, 1>{
        {zb::PowOp::create(builder, loc, base->getType(), *base, *exp), {}}};
  }
  Value y;
  if (*exponent == 1.0)
    y = *x;
  else if (*exponent == 2.0)
    y = zb::MulOp::create(builder, loc, type, *x, *x);
  else if (*exponent == 0.5)
    y = zb::SqrtOp::create(builder, loc, type, *x);
  else if (*exponent == -0.5)
    y = zb::RsqrtOp::create(builder, loc, type, *x);
  else
    y = zb::PowOp::create(builder, loc, type, *x,
                          splatConstant(type, *exponent));
  return SmallVector<ImportedValue, 1>{{y, {}}};
}

/// ReduceMean / ReduceSum. Axes come from the `axes` attribute (ReduceMean
/// before opset 18, ReduceSum before 13) or the constant second input.
template <typename OpTy>
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::reduce() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<int64_t> keepDims = intAttr("keepdims", 1);
  FailureOr<int64_t> noopWithEmptyAxes = intAttr("noop_with_empty_axes", 0);
  if (failed(x) || failed(keepDims) || failed(noopWithEmptyAxes))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();

  SmallVector<int64_t> axes;
  if (hasInput(1)) {
    FailureOr<DenseElementsAttr> c = constantInput(1);
    if (failed(c))
      return failure();
    if (!c->getElementType().isSignlessInteger() ||
        c->getType().getRank() > 1) {
      nodeError() << "axes must be a 1-D integer tensor";
      return failure();
    }
    for (const APInt &v : c->getValues<APInt>())
      axes.push_back(v.getSExtValue());
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> attr = intsAttr("axes");
    if (failed(attr))
      return failure();
    if (*attr)
      axes = **attr;
  }
  if (axes.empty()) {
    if (*noopWithEmptyAxes)
      return SmallVector<ImportedValue, 1>{{*x, {}}};
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      nodeError() << "axis " << a << " is out of range for " << type;
      return failure();
    }
    reduced[a < 0 ? a + rank : a] = true;
  }
  SmallVector<int64_t> sortedAxes, resultShape, keepShape;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      sortedAxes.push_back(i);
      keepShape.push_back(1);
    } else {
      resultShape.push_back(type.getDimSize(i));
      keepShape.push_back(type.getDimSize(i));
    }
  }
  if (sortedAxes.empty()) // reducing a rank-0 tensor
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());
  Value y = OpTy::create(builder, loc, resultType, *x, sortedAxes);
  if (*keepDims)
    y = zb::ReshapeOp::create(
        builder, loc, RankedTensorType::get(keepShape, type.getElementType()),
        y);
  return SmallVector<ImportedValue, 1>{{y, {}}};
}

/// Dropout in inference mode (no training_mode input, or a constant false)
/// is the identity; the mask output is not supported.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::dropout() {
  if (hasInput(2)) {
    FailureOr<DenseElementsAttr> mode = constantInput(2);
    if (failed(mode))
      return failure();
    if (mode->getNumElements() != 1 ||
        HostTensor::fromAttr(*mode).data[0] != 0.0) {
      nodeError() << "training mode is not supported (export the model in "
                     "eval mode)";
      return failure();
    }
  }
  if (node->output_size() > 1 && !node->output(1).empty()) {
    nodeError() << "output mask is not supported";
    return failure();
  }
  return identity();
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::identity() {
  FailureOr<ImportedValue> v = lookup(0);
  if (failed(v))
    return failure();
  return SmallVector<ImportedValue, 1>{*v};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::constant() {
  if (node->attribute_size() != 1) {
    nodeError() << "expected exactly one attribute";
    return failure();
  }
  const onnx::AttributeProto &a = node->attribute(0);
  DenseElementsAttr value;
  llvm::StringRef name = a.name();
  if (name == "value" && a.type() == onnx::AttributeProto::TENSOR) {
    FailureOr<DenseElementsAttr> t = convertTensor(a.t(), loc, "Constant");
    if (failed(t))
      return failure();
    value = *t;
  } else if (name == "value_float" && a.type() == onnx::AttributeProto::FLOAT) {
    value =
        DenseElementsAttr::get(RankedTensorType::get({}, builder.getF32Type()),
                               ArrayRef<float>(a.f()));
  } else if (name == "value_floats" &&
             a.type() == onnx::AttributeProto::FLOATS) {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, builder.getF32Type()),
        ArrayRef<float>(v));
  } else if (name == "value_int" && a.type() == onnx::AttributeProto::INT) {
    value =
        DenseElementsAttr::get(RankedTensorType::get({}, builder.getI64Type()),
                               ArrayRef<int64_t>(a.i()));
  } else if (name == "value_ints" && a.type() == onnx::AttributeProto::INTS) {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, builder.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    nodeError() << "attribute '" << name << "' is not supported";
    return failure();
  }
  return SmallVector<ImportedValue, 1>{{Value(), value}};
}

//===----------------------------------------------------------------------===//
// Op handlers of the transformer ops (tensor operands)
//===----------------------------------------------------------------------===//

/// Shape: always a constant (static shapes), with opset-15 start/end.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::shape() {
  FailureOr<ImportedValue> x = lookup(0);
  FailureOr<int64_t> start = intAttr("start", 0);
  if (failed(x) || failed(start))
    return failure();
  ArrayRef<int64_t> s = typeOf(*x).getShape();
  int64_t rank = s.size();
  FailureOr<int64_t> end = intAttr("end", rank);
  if (failed(end))
    return failure();
  auto clampIndex = [&](int64_t v) {
    return std::min(std::max(v < 0 ? v + rank : v, int64_t(0)), rank);
  };
  int64_t b = clampIndex(*start), e = clampIndex(*end);
  SmallVector<int64_t> dims;
  for (int64_t i = b; i < e; ++i)
    dims.push_back(s[i]);
  return SmallVector<ImportedValue, 1>{
      {Value(),
       DenseElementsAttr::get(
           RankedTensorType::get({int64_t(dims.size())}, builder.getI64Type()),
           ArrayRef<int64_t>(dims))}};
}

/// Reshape / Unsqueeze / Squeeze / Flatten of a tensor: zb.reshape.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::reshape() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SmallVector<int64_t>> shape = reshapeTarget(type.getShape());
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) == type.getShape())
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  return SmallVector<ImportedValue, 1>{
      {zb::ReshapeOp::create(
           builder, loc, RankedTensorType::get(*shape, type.getElementType()),
           *x),
       {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::transpose() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SmallVector<int64_t>> perm = permutation(type.getRank());
  if (failed(perm))
    return failure();
  if (llvm::equal(*perm, llvm::seq<int64_t>(0, type.getRank())))
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  SmallVector<int64_t> shape;
  for (int64_t p : *perm)
    shape.push_back(type.getDimSize(p));
  return SmallVector<ImportedValue, 1>{
      {zb::TransposeOp::create(
           builder, loc, RankedTensorType::get(shape, type.getElementType()),
           *x, *perm),
       {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::expand() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<SmallVector<int64_t>> target = failure();
  if (failed(x) || failed(target = intsInput(1)))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(type.getShape(), *target);
  if (!shape) {
    nodeError() << "cannot expand " << type << " to " << formatShape(*target);
    return failure();
  }
  FailureOr<Value> y = broadcastTo(*x, *shape);
  if (failed(y))
    return failure();
  return SmallVector<ImportedValue, 1>{{*y, {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::concat() {
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(axisAttr))
    return failure();
  SmallVector<Value> inputs;
  for (int i = 0; i < node->input_size(); ++i) {
    FailureOr<Value> v = tensorInput(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  if (inputs.empty()) {
    nodeError() << "expected at least one input";
    return failure();
  }
  auto first = cast<RankedTensorType>(inputs[0].getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, first.getRank(), "axis");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType()) {
      nodeError() << "inputs differ in rank or element type: " << first
                  << " and " << t;
      return failure();
    }
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != *axis && t.getDimSize(d) != first.getDimSize(d)) {
        nodeError() << "inputs differ in dimension " << d << ": " << first
                    << " and " << t;
        return failure();
      }
    shape[*axis] += t.getDimSize(*axis);
  }
  if (inputs.size() == 1)
    return SmallVector<ImportedValue, 1>{{inputs[0], {}}};
  return SmallVector<ImportedValue, 1>{
      {zb::ConcatOp::create(
           builder, loc, RankedTensorType::get(shape, first.getElementType()),
           inputs, uint64_t(*axis)),
       {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::slice() {
  FailureOr<Value> x = tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<SliceSpec> spec = sliceSpec(type.getShape());
  if (failed(spec))
    return failure();
  if (ArrayRef<int64_t>(spec->shape) == type.getShape())
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  SmallVector<int64_t> limit;
  for (int64_t d = 0; d < type.getRank(); ++d)
    limit.push_back(spec->shape[d] == 0
                        ? spec->start[d]
                        : spec->start[d] +
                              (spec->shape[d] - 1) * spec->step[d] + 1);
  return SmallVector<ImportedValue, 1>{
      {zb::SliceOp::create(
           builder, loc,
           RankedTensorType::get(spec->shape, type.getElementType()), *x,
           spec->start, limit, spec->step),
       {}}};
}

/// Split: sizes from input #1 (opset 13+), the `split` attribute, or equal
/// parts (one per output; opset 18 `num_outputs`).
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::split() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (hasInput(1)) {
    FailureOr<SmallVector<int64_t>> s = intsInput(1);
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    FailureOr<std::optional<SmallVector<int64_t>>> s = intsAttr("split");
    if (failed(s))
      return failure();
    if (*s) {
      sizes = **s;
    } else {
      int64_t n = node->output_size();
      if (n == 0) {
        nodeError() << "has no outputs";
        return failure();
      }
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back((dim + n - 1) / n);
      sizes.back() = dim - (n - 1) * ((dim + n - 1) / n);
    }
  }
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (int64_t(sizes.size()) != node->output_size() || total != dim ||
      llvm::any_of(sizes, [](int64_t s) { return s <= 0; })) {
    nodeError() << "split sizes " << formatShape(sizes) << " do not split "
                << dim << " into " << node->output_size() << " parts";
    return failure();
  }
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = s;
    types.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  auto op = zb::SplitOp::create(builder, loc, types, *x, uint64_t(*axis));
  SmallVector<ImportedValue, 1> results;
  for (Value r : op.getResults())
    results.push_back({r, {}});
  return results;
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::castNode() {
  FailureOr<Value> x = tensorInput(0);
  FailureOr<int64_t> to = intAttr("to", 0);
  if (failed(x) || failed(to))
    return failure();
  Type target = convertElementType(int32_t(*to));
  auto type = cast<RankedTensorType>(x->getType());
  if (!target) {
    nodeError() << "unsupported target type " << elementTypeName(int32_t(*to));
    return failure();
  }
  if (target == type.getElementType())
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  if (!isa<FloatType>(target)) {
    nodeError() << "a cast of a computed " << type << " to "
                << elementTypeName(int32_t(*to))
                << " is not supported (only to floating point)";
    return failure();
  }
  return SmallVector<ImportedValue, 1>{
      {zb::CastOp::create(builder, loc,
                          RankedTensorType::get(type.getShape(), target), *x),
       {}}};
}

/// Gather of a tensor: rows of a table (axis 0) -> zb.gather; one constant
/// index along another axis -> zb.slice + zb.reshape.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::gather() {
  FailureOr<Value> data = floatInput(0);
  FailureOr<ImportedValue> idx = lookup(1);
  FailureOr<int64_t> axisAttr = intAttr("axis", 0);
  if (failed(data) || failed(idx) || failed(axisAttr))
    return failure();
  auto type = cast<RankedTensorType>(data->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  RankedTensorType idxType = typeOf(*idx);
  if (!idxType.getElementType().isInteger(64) &&
      !idxType.getElementType().isInteger(32)) {
    nodeError() << "indices must be i32 or i64, got " << idxType;
    return failure();
  }
  int64_t dim = type.getDimSize(*axis);
  if (idx->constant) {
    HostTensor h = HostTensor::fromAttr(idx->constant);
    for (double &v : h.data) {
      if (v < -dim || v >= dim) {
        nodeError() << "index " << int64_t(v) << " is out of range [" << -dim
                    << ", " << dim << ")";
        return failure();
      }
      if (v < 0)
        v += dim;
    }
    if (h.shape.empty()) {
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
          strides(type.getRank(), 1), shape(type.getShape()), outShape;
      start[*axis] = int64_t(h.data[0]);
      limit[*axis] = start[*axis] + 1;
      shape[*axis] = 1;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (d != *axis)
          outShape.push_back(type.getDimSize(d));
      Value s = zb::SliceOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()),
          *data, start, limit, strides);
      return SmallVector<ImportedValue, 1>{
          {zb::ReshapeOp::create(
               builder, loc,
               RankedTensorType::get(outShape, type.getElementType()), s),
           {}}};
    }
    if (*axis == 0) {
      Value indices = zb::ConstantOp::create(builder, loc, h.toAttr());
      SmallVector<int64_t> shape(h.shape);
      shape.append(type.getShape().begin() + 1, type.getShape().end());
      return SmallVector<ImportedValue, 1>{
          {zb::GatherOp::create(
               builder, loc,
               RankedTensorType::get(shape, type.getElementType()), *data,
               indices),
           {}}};
    }
  }
  if (*axis != 0) {
    nodeError() << "only axis 0, or one constant index, is supported (axis "
                << *axis << ")";
    return failure();
  }
  FailureOr<Value> indices = tensorInput(1);
  if (failed(indices))
    return failure();
  SmallVector<int64_t> shape(idxType.getShape());
  shape.append(type.getShape().begin() + 1, type.getShape().end());
  return SmallVector<ImportedValue, 1>{
      {zb::GatherOp::create(builder, loc,
                            RankedTensorType::get(shape, type.getElementType()),
                            *data, *indices),
       {}}};
}

/// Where(cond, x, y). A constant causal condition with a constant fill
/// becomes zb.causal_mask, anything else zb.select.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::where() {
  FailureOr<ImportedValue> cond = lookup(0), x = failure(), y = failure();
  if (failed(cond) || failed(x = lookup(1)) || failed(y = lookup(2)))
    return failure();
  RankedTensorType ct = typeOf(*cond), xt = typeOf(*x), yt = typeOf(*y);
  if (!ct.getElementType().isInteger(1) ||
      xt.getElementType() != yt.getElementType() ||
      !isa<FloatType>(xt.getElementType())) {
    nodeError() << "expected a boolean condition and two floating-point "
                   "tensors of one element type, got "
                << ct << ", " << xt << ", " << yt;
    return failure();
  }
  std::optional<SmallVector<int64_t>> shape =
      broadcastShapes(ct.getShape(), xt.getShape());
  if (shape)
    shape = broadcastShapes(*shape, yt.getShape());
  if (!shape) {
    nodeError() << "operand shapes are not broadcastable: " << ct << ", " << xt
                << ", " << yt;
    return failure();
  }
  auto type = RankedTensorType::get(*shape, xt.getElementType());
  if (cond->constant && shape->size() >= 2) {
    HostTensor c = HostTensor::fromAttr(cond->constant);
    // where(k > q, fill, y) or where(k <= q, y, fill)
    for (int fillSide = 1; fillSide <= 2; ++fillSide) {
      ImportedValue &fill = fillSide == 1 ? *x : *y;
      ImportedValue &other = fillSide == 1 ? *y : *x;
      if (!fill.constant || !fill.constant.isSplat() || other.constant ||
          typeOf(other).getShape() != ArrayRef<int64_t>(*shape))
        continue;
      bool causal = fillSide == 1 ? isCausalPattern(c, 1.0, 0.0)
                                  : isCausalPattern(c, 0.0, 1.0);
      if (!causal)
        continue;
      if (fill.constant.getNumElements() == 0)
        continue;
      double f = HostTensor::fromAttr(fill.constant).data[0];
      FloatAttr fillAttr;
      if (!(std::isinf(f) && f < 0))
        fillAttr = builder.getF64FloatAttr(f);
      return SmallVector<ImportedValue, 1>{
          {zb::CausalMaskOp::create(builder, loc, type, other.value, fillAttr),
           {}}};
    }
  }
  Value c;
  if (cond->constant) {
    FailureOr<HostTensor> cb =
        broadcastHost(HostTensor::fromAttr(cond->constant), *shape,
                      [&] { return nodeError(); });
    if (failed(cb))
      return failure();
    c = zb::ConstantOp::create(builder, loc, cb->toAttr());
  } else if (ct.getShape() != ArrayRef<int64_t>(*shape)) {
    nodeError() << "a computed condition must have the result shape "
                << formatShape(*shape);
    return failure();
  } else {
    c = cond->value;
  }
  FailureOr<Value> a = broadcastInput(1, *shape), b = failure();
  if (failed(a) || failed(b = broadcastInput(2, *shape)))
    return failure();
  return SmallVector<ImportedValue, 1>{
      {zb::SelectOp::create(builder, loc, type, c, *a, *b), {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::reciprocal() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  return SmallVector<ImportedValue, 1>{
      {zb::DivOp::create(builder, loc, type, splatConstant(type, 1.0), *x),
       {}}};
}

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::softmax() {
  FailureOr<Value> x = floatInput(0);
  FailureOr<int64_t> axisAttr = intAttr("axis", opsetVersion >= 13 ? -1 : 1);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  if (*axis != type.getRank() - 1 && opsetVersion < 13) {
    nodeError() << "Softmax before opset 13 (flattening semantics) is only "
                   "supported on the last axis";
    return failure();
  }
  return SmallVector<ImportedValue, 1>{
      {zb::SoftmaxOp::create(builder, loc, type, *x, uint64_t(*axis)), {}}};
}

/// LayerNormalization (opset 17) over the last axis -> zb.layer_norm.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::layerNorm() {
  FailureOr<Value> x = floatInput(0), w = failure();
  FailureOr<int64_t> axisAttr = intAttr("axis", -1);
  FailureOr<float> eps = floatAttr("epsilon", 1e-5f);
  if (failed(x) || failed(w = floatInput(1)) || failed(axisAttr) || failed(eps))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  FailureOr<int64_t> axis = normalizeAxis(*axisAttr, type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t d = type.getShape().back();
  auto vecType = RankedTensorType::get({d}, type.getElementType());
  if (*axis != type.getRank() - 1 || w->getType() != vecType) {
    nodeError() << "only normalization over the last axis with a 1-D scale "
                   "is supported, got "
                << type << " and scale " << w->getType();
    return failure();
  }
  Value b;
  if (hasInput(2)) {
    FailureOr<Value> bias = floatInput(2);
    if (failed(bias))
      return failure();
    if (bias->getType() != vecType) {
      nodeError() << "bias must be " << vecType << ", got " << bias->getType();
      return failure();
    }
    b = *bias;
  } else {
    b = splatConstant(vecType, 0.0);
  }
  for (int i = 1; i < node->output_size(); ++i)
    if (!node->output(i).empty()) {
      nodeError() << "outputs Mean and InvStdDev are not supported";
      return failure();
    }
  return SmallVector<ImportedValue, 1>{
      {zb::LayerNormOp::create(builder, loc, type, *x, *w, b,
                               builder.getF64FloatAttr(double(*eps))),
       {}}};
}

/// SoftmaxCrossEntropyLoss (mean reduction, no weights) -> zb.cross_entropy.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::softmaxCrossEntropy() {
  FailureOr<Value> scores = floatInput(0), labels = failure();
  if (failed(scores) || failed(labels = tensorInput(1)))
    return failure();
  const onnx::AttributeProto *reduction = findAttr("reduction");
  if (reduction && reduction->s() != "mean") {
    nodeError() << "reduction '" << reduction->s()
                << "' is not supported (only 'mean')";
    return failure();
  }
  if (hasInput(2)) {
    nodeError() << "class weights are not supported";
    return failure();
  }
  if (node->output_size() > 1 && !node->output(1).empty()) {
    nodeError() << "output log_prob is not supported";
    return failure();
  }
  auto st = cast<RankedTensorType>(scores->getType());
  auto lt = cast<RankedTensorType>(labels->getType());
  // zb.cross_entropy has no ignored class: accept only an ignore_index that
  // no valid label can equal (torch exports -100).
  if (const onnx::AttributeProto *ii = findAttr("ignore_index");
      ii && st.getRank() >= 2 && ii->i() >= 0 && ii->i() < st.getDimSize(1)) {
    nodeError() << "ignore_index " << ii->i()
                << " is a valid class; ignored labels are not supported";
    return failure();
  }
  if (st.getRank() < 2 || lt.getRank() != st.getRank() - 1 ||
      !isa<IntegerType>(lt.getElementType()) ||
      lt.getDimSize(0) != st.getDimSize(0) ||
      !llvm::equal(lt.getShape().drop_front(), st.getShape().drop_front(2))) {
    nodeError() << "scores [N, C, d...] and integer labels [N, d...] expected, "
                   "got "
                << st << " and " << lt;
    return failure();
  }
  Value logits = *scores;
  if (st.getRank() > 2) { // move the class dimension last
    SmallVector<int64_t> perm = {0}, shape = {st.getDimSize(0)};
    for (int64_t d = 2; d < st.getRank(); ++d) {
      perm.push_back(d);
      shape.push_back(st.getDimSize(d));
    }
    perm.push_back(1);
    shape.push_back(st.getDimSize(1));
    logits = zb::TransposeOp::create(
        builder, loc, RankedTensorType::get(shape, st.getElementType()), logits,
        perm);
  }
  return SmallVector<ImportedValue, 1>{
      {zb::CrossEntropyOp::create(
           builder, loc, RankedTensorType::get({}, st.getElementType()), logits,
           *labels),
       {}}};
}

//===----------------------------------------------------------------------===//
// Folding and shape computations
//===----------------------------------------------------------------------===//

/// Ops folded when all their inputs are constants known at import.
static bool isFoldable(llvm::StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Add", "Sub", "Mul", "Div", "Pow", "Neg", "Sqrt", "Reciprocal"},
             true)
      .Cases({"Cos", "Sin", "Exp", "Log", "Tanh", "Erf", "Sigmoid", "Relu"},
             true)
      .Cases({"Not", "Equal", "Less", "Greater", "And", "Or", "Where", "Cast"},
             true)
      .Cases({"Gather", "Unsqueeze", "Squeeze", "Concat", "Range", "Expand"},
             true)
      .Cases({"ConstantOfShape", "Slice", "Reshape", "Trilu", "Transpose",
              "Identity", "Max", "Min", "Flatten"},
             true)
      .Default(false);
}

/// Ops that only exist folded (their inputs must be constants).
static bool isFoldOnly(llvm::StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Cos", "Sin", "Not", "Equal", "Less", "Greater", "And", "Or"},
             true)
      .Cases({"Range", "ConstantOfShape", "Trilu", "Max", "Min"}, true)
      .Default(false);
}

bool ONNXImporter::allInputsConstant() {
  for (int i = 0; i < node->input_size(); ++i) {
    if (node->input(i).empty())
      continue;
    auto it = values.find(node->input(i));
    if (it == values.end() || !it->second.constant)
      return false;
  }
  return true;
}

FailureOr<HostTensor> ONNXImporter::hostInput(int i) {
  FailureOr<DenseElementsAttr> c = constantInput(i);
  if (failed(c))
    return failure();
  return HostTensor::fromAttr(*c);
}

FailureOr<SmallVector<int64_t>> ONNXImporter::intsInput(int i) {
  FailureOr<HostTensor> t = hostInput(i);
  if (failed(t))
    return failure();
  if (t->isFloat() || t->shape.size() > 1) {
    nodeError() << "input #" << i << " must be a 1-D integer tensor";
    return failure();
  }
  return toInts(*t);
}

FailureOr<int64_t> ONNXImporter::normalizeAxis(int64_t axis, int64_t rank,
                                               llvm::StringRef what) {
  if (axis < -rank || axis >= rank) {
    nodeError() << what << " " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// Axes of Unsqueeze/Squeeze/Reduce*: the `axes` input #1 (newer opsets) or
/// attribute; nullopt when neither is given.
FailureOr<std::optional<SmallVector<int64_t>>> ONNXImporter::axesOperand() {
  if (hasInput(1)) {
    FailureOr<SmallVector<int64_t>> v = intsInput(1);
    if (failed(v))
      return failure();
    return std::optional<SmallVector<int64_t>>(*v);
  }
  return intsAttr("axes");
}

FailureOr<SmallVector<int64_t>>
ONNXImporter::reshapeTarget(ArrayRef<int64_t> in) {
  llvm::StringRef op = node->op_type();
  int64_t inElements = 1;
  for (int64_t d : in)
    inElements *= d;
  if (op == "Unsqueeze") {
    FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand();
    if (failed(axes))
      return failure();
    if (!*axes) {
      nodeError() << "axes are missing";
      return failure();
    }
    int64_t rank = int64_t(in.size() + (*axes)->size());
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : **axes) {
      FailureOr<int64_t> n = normalizeAxis(a, rank, "axis");
      if (failed(n))
        return failure();
      if (inserted[*n]) {
        nodeError() << "axis " << a << " is repeated";
        return failure();
      }
      inserted[*n] = true;
    }
    SmallVector<int64_t> shape;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i)
      shape.push_back(inserted[i] ? 1 : in[next++]);
    return shape;
  }
  if (op == "Squeeze") {
    FailureOr<std::optional<SmallVector<int64_t>>> axes = axesOperand();
    if (failed(axes))
      return failure();
    int64_t rank = in.size();
    SmallVector<bool> removed(rank, false);
    if (*axes) {
      for (int64_t a : **axes) {
        FailureOr<int64_t> n = normalizeAxis(a, rank, "axis");
        if (failed(n))
          return failure();
        if (in[*n] != 1) {
          nodeError() << "cannot squeeze dimension " << a << " of size "
                      << in[*n];
          return failure();
        }
        removed[*n] = true;
      }
    } else {
      for (int64_t i = 0; i < rank; ++i)
        removed[i] = in[i] == 1;
    }
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i)
      if (!removed[i])
        shape.push_back(in[i]);
    return shape;
  }
  if (op == "Flatten") {
    FailureOr<int64_t> axis = intAttr("axis", 1);
    if (failed(axis))
      return failure();
    int64_t rank = in.size();
    int64_t a = *axis < 0 ? *axis + rank : *axis;
    if (a < 0 || a > rank) {
      nodeError() << "axis " << *axis << " is out of range for rank " << rank;
      return failure();
    }
    int64_t outer = 1;
    for (int64_t i = 0; i < a; ++i)
      outer *= in[i];
    return SmallVector<int64_t>{outer,
                                inElements / std::max<int64_t>(outer, 1)};
  }
  // Reshape: 0 copies the input dimension (unless allowzero), -1 is inferred.
  FailureOr<SmallVector<int64_t>> target = intsInput(1);
  FailureOr<int64_t> allowZero = intAttr("allowzero", 0);
  if (failed(target) || failed(allowZero))
    return failure();
  SmallVector<int64_t> shape;
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !*allowZero) {
      if (i >= in.size()) {
        nodeError() << "shape entry #" << i << " is 0 but the input has rank "
                    << in.size();
        return failure();
      }
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0) {
        nodeError() << "more than one -1 in the shape";
        return failure();
      }
      inferred = i;
      shape.push_back(1);
      continue;
    }
    if (d < 0 || d > kMaxElements) {
      nodeError() << "invalid shape entry " << d;
      return failure();
    }
    known *= std::max<int64_t>(d, 1);
    shape.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || inElements % known != 0) {
      nodeError() << "cannot infer -1: " << inElements
                  << " elements do not divide into " << formatShape(shape);
      return failure();
    }
    shape[inferred] = inElements / known;
  }
  int64_t outElements = 1;
  for (int64_t d : shape)
    outElements *= d;
  if (outElements != inElements) {
    nodeError() << "cannot reshape " << formatShape(in) << " to "
                << formatShape(shape);
    return failure();
  }
  return shape;
}

FailureOr<ONNXImporter::SliceSpec>
ONNXImporter::sliceSpec(ArrayRef<int64_t> in) {
  int64_t rank = in.size();
  FailureOr<SmallVector<int64_t>> starts = intsInput(1), ends = failure();
  if (failed(starts) || failed(ends = intsInput(2)))
    return failure();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (hasInput(3)) {
    FailureOr<SmallVector<int64_t>> a = intsInput(3);
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  }
  if (hasInput(4)) {
    FailureOr<SmallVector<int64_t>> s = intsInput(4);
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size()) {
    nodeError() << "starts, ends, axes and steps differ in length";
    return failure();
  }
  SliceSpec spec;
  spec.start.assign(rank, 0);
  spec.step.assign(rank, 1);
  spec.shape.assign(in.begin(), in.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> axis = normalizeAxis(axes[i], rank, "axis");
    if (failed(axis))
      return failure();
    int64_t dim = in[*axis], step = steps[i];
    if (step <= 0) {
      nodeError() << "step " << step << " is not supported (only steps >= 1)";
      return failure();
    }
    auto clampIndex = [&](int64_t v) {
      if (v < 0)
        v = v < -dim ? 0 : v + dim;
      return std::min(v, dim);
    };
    int64_t s = clampIndex((*starts)[i]), e = clampIndex((*ends)[i]);
    spec.start[*axis] = s;
    spec.step[*axis] = step;
    spec.shape[*axis] = e > s ? (e - s + step - 1) / step : 0;
  }
  return spec;
}

/// Folds the current node, all of whose inputs are constants.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::fold() {
  llvm::StringRef op = node->op_type();
  SmallVector<HostTensor> in;
  for (int i = 0; i < node->input_size(); ++i) {
    if (node->input(i).empty()) {
      in.push_back({});
      continue;
    }
    FailureOr<HostTensor> t = hostInput(i);
    if (failed(t))
      return failure();
    in.push_back(std::move(*t));
  }
  auto result = [&](const HostTensor &t) {
    return SmallVector<ImportedValue, 1>{{Value(), t.toAttr()}};
  };
  auto err = [&] { return nodeError(); };
  auto need = [&](size_t n) -> LogicalResult {
    if (in.size() < n || llvm::any_of(llvm::seq<size_t>(0, n),
                                      [&](size_t i) { return !in[i].type; })) {
      nodeError() << "expected " << n << " inputs";
      return failure();
    }
    return success();
  };
  if (failed(need(op == "Range" || op == "Where" ? 3
                  : op == "Constant" || op == "Identity" || op == "Neg" ||
                          op == "Sqrt" || op == "Reciprocal" || op == "Cos" ||
                          op == "Sin" || op == "Exp" || op == "Log" ||
                          op == "Tanh" || op == "Erf" || op == "Sigmoid" ||
                          op == "Relu" || op == "Not" || op == "Cast" ||
                          op == "ConstantOfShape" || op == "Unsqueeze" ||
                          op == "Squeeze" || op == "Concat" || op == "Trilu" ||
                          op == "Transpose" || op == "Flatten" || op == "Max" ||
                          op == "Min"
                      ? 1
                  : op == "Slice" ? 3
                                  : 2)))
    return failure();

  // Elementwise unary.
  std::function<double(double)> unaryFn =
      llvm::StringSwitch<std::function<double(double)>>(op)
          .Case("Identity", [](double x) { return x; })
          .Case("Neg", [](double x) { return -x; })
          .Case("Sqrt", [](double x) { return std::sqrt(x); })
          .Case("Reciprocal", [](double x) { return 1.0 / x; })
          .Case("Cos", [](double x) { return std::cos(x); })
          .Case("Sin", [](double x) { return std::sin(x); })
          .Case("Exp", [](double x) { return std::exp(x); })
          .Case("Log", [](double x) { return std::log(x); })
          .Case("Tanh", [](double x) { return std::tanh(x); })
          .Case("Erf", [](double x) { return std::erf(x); })
          .Case("Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); })
          .Case("Relu", [](double x) { return std::max(x, 0.0); })
          .Case("Not", [](double x) { return x != 0.0 ? 0.0 : 1.0; })
          .Default(nullptr);
  if (unaryFn) {
    HostTensor r = in[0];
    for (double &v : r.data)
      v = r.round(unaryFn(v));
    return result(r);
  }

  // Elementwise binary / n-ary with numpy broadcasting.
  std::function<double(double, double)> binaryFn =
      llvm::StringSwitch<std::function<double(double, double)>>(op)
          .Case("Add", [](double a, double b) { return a + b; })
          .Case("Sub", [](double a, double b) { return a - b; })
          .Case("Mul", [](double a, double b) { return a * b; })
          .Case("Div", [](double a, double b) { return a / b; })
          .Case("Pow", [](double a, double b) { return std::pow(a, b); })
          .Case("Max", [](double a, double b) { return std::max(a, b); })
          .Case("Min", [](double a, double b) { return std::min(a, b); })
          .Case("Equal", [](double a, double b) { return double(a == b); })
          .Case("Less", [](double a, double b) { return double(a < b); })
          .Case("Greater", [](double a, double b) { return double(a > b); })
          .Case("And", [](double a, double b) { return double(a && b); })
          .Case("Or", [](double a, double b) { return double(a || b); })
          .Default(nullptr);
  if (binaryFn) {
    HostTensor acc = in[0];
    for (size_t k = 1; k < in.size(); ++k) {
      const HostTensor &b = in[k];
      std::optional<SmallVector<int64_t>> shape =
          broadcastShapes(acc.shape, b.shape);
      if (!shape) {
        nodeError() << "operand shapes are not broadcastable: "
                    << formatShape(acc.shape) << " and "
                    << formatShape(b.shape);
        return failure();
      }
      bool compare = op == "Equal" || op == "Less" || op == "Greater" ||
                     op == "And" || op == "Or";
      if (!compare && acc.type != b.type && op != "Pow") {
        nodeError() << "operand element types differ";
        return failure();
      }
      FailureOr<HostTensor> r = zb::frontend::elementwiseHost(
          {&acc, &b}, *shape, compare ? builder.getI1Type() : acc.type,
          [&](ArrayRef<double> x) { return binaryFn(x[0], x[1]); }, err);
      if (failed(r))
        return failure();
      acc = std::move(*r);
    }
    return result(acc);
  }

  if (op == "Where") {
    std::optional<SmallVector<int64_t>> shape =
        broadcastShapes(in[0].shape, in[1].shape);
    if (shape)
      shape = broadcastShapes(*shape, in[2].shape);
    if (!shape || in[1].type != in[2].type) {
      nodeError() << "operands do not broadcast or differ in element type";
      return failure();
    }
    FailureOr<HostTensor> r = zb::frontend::elementwiseHost(
        {&in[0], &in[1], &in[2]}, *shape, in[1].type,
        [](ArrayRef<double> x) { return x[0] != 0.0 ? x[1] : x[2]; }, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "Cast") {
    FailureOr<int64_t> to = intAttr("to", 0);
    if (failed(to))
      return failure();
    Type t = convertElementType(int32_t(*to));
    if (!t) {
      nodeError() << "unsupported target type "
                  << elementTypeName(int32_t(*to));
      return failure();
    }
    HostTensor r = in[0];
    r.type = t;
    for (double &v : r.data)
      v = r.round(v);
    return result(r);
  }
  if (op == "Gather") {
    FailureOr<int64_t> axisAttr = intAttr("axis", 0);
    if (failed(axisAttr))
      return failure();
    const HostTensor &data = in[0], &idx = in[1];
    int64_t rank = data.shape.size();
    FailureOr<int64_t> axis = normalizeAxis(*axisAttr, rank, "axis");
    if (failed(axis) || idx.isFloat()) {
      if (succeeded(axis))
        nodeError() << "indices must be integers";
      return failure();
    }
    FailureOr<HostTensor> r = zb::frontend::gatherHost(data, idx, *axis, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" ||
      op == "Flatten") {
    FailureOr<SmallVector<int64_t>> shape = reshapeTarget(in[0].shape);
    if (failed(shape))
      return failure();
    FailureOr<HostTensor> r = zb::frontend::reshapeHost(in[0], *shape, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "Concat") {
    FailureOr<int64_t> axisAttr = intAttr("axis", 0);
    if (failed(axisAttr))
      return failure();
    int64_t rank = in[0].shape.size();
    FailureOr<int64_t> axis = normalizeAxis(*axisAttr, rank, "axis");
    if (failed(axis))
      return failure();
    FailureOr<HostTensor> r = zb::frontend::concatHost(in, *axis, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "Range") {
    if (in[0].data.size() != 1 || in[1].data.size() != 1 ||
        in[2].data.size() != 1) {
      nodeError() << "start, limit and delta must be scalars";
      return failure();
    }
    double start = in[0].data[0], limit = in[1].data[0], delta = in[2].data[0];
    double count = std::ceil((limit - start) / delta);
    if (delta == 0.0 || !std::isfinite(count) ||
        count > double(kMaxFoldElements)) {
      nodeError() << "invalid or too long range (" << start << ", " << limit
                  << ", " << delta << ")";
      return failure();
    }
    int64_t n =
        std::max<int64_t>(int64_t(std::ceil((limit - start) / delta)), 0);
    if (n > kMaxFoldElements) {
      nodeError() << "too many elements";
      return failure();
    }
    HostTensor r;
    r.type = in[0].type;
    r.shape = {n};
    for (int64_t i = 0; i < n; ++i)
      r.data.push_back(r.round(start + double(i) * delta));
    return result(r);
  }
  if (op == "Expand") {
    SmallVector<int64_t> target = toInts(in[1]);
    std::optional<SmallVector<int64_t>> shape =
        broadcastShapes(in[0].shape, target);
    if (!shape) {
      nodeError() << "cannot expand " << formatShape(in[0].shape) << " to "
                  << formatShape(target);
      return failure();
    }
    int64_t n = 1;
    for (int64_t d : *shape) {
      if (d < 0 || (d && n > kMaxFoldElements / d)) {
        nodeError() << "the folded result " << formatShape(*shape)
                    << " is too large";
        return failure();
      }
      n *= d;
    }
    FailureOr<HostTensor> r = broadcastHost(in[0], *shape, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "ConstantOfShape") {
    HostTensor r;
    r.shape = toInts(in[0]);
    r.type = builder.getF32Type();
    double value = 0.0;
    if (const onnx::AttributeProto *a = findAttr("value")) {
      FailureOr<DenseElementsAttr> v = convertTensor(a->t(), loc, "value");
      if (failed(v))
        return failure();
      HostTensor h = HostTensor::fromAttr(*v);
      if (h.data.size() != 1) {
        nodeError() << "value must have one element";
        return failure();
      }
      r.type = h.type;
      value = h.data[0];
    }
    int64_t n = 1;
    for (int64_t d : r.shape) {
      if (d < 0 || d > kMaxFoldElements || (d && n > kMaxFoldElements / d)) {
        nodeError() << "invalid or too large shape " << formatShape(r.shape);
        return failure();
      }
      n *= d;
    }
    r.data.assign(n, value);
    return result(r);
  }
  if (op == "Slice") {
    FailureOr<SliceSpec> spec = sliceSpec(in[0].shape);
    if (failed(spec))
      return failure();
    FailureOr<HostTensor> r = zb::frontend::sliceHost(
        in[0], spec->start, spec->step, spec->shape, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  if (op == "Trilu") {
    FailureOr<int64_t> upper = intAttr("upper", 1);
    if (failed(upper))
      return failure();
    int64_t k = 0;
    if (in.size() > 1 && in[1].type)
      k = toInts(in[1]).front();
    HostTensor r = in[0];
    if (r.shape.size() < 2) {
      nodeError() << "input must have rank >= 2";
      return failure();
    }
    int64_t rows = r.shape[r.shape.size() - 2], cols = r.shape.back();
    for (int64_t i = 0, n = r.numElements(); i < n; ++i) {
      int64_t c = i % cols, row = (i / cols) % rows;
      bool keep = *upper ? c - row >= k : c - row <= k;
      if (!keep)
        r.data[i] = 0.0;
    }
    return result(r);
  }
  if (op == "Transpose") {
    FailureOr<SmallVector<int64_t>> perm = permutation(in[0].shape.size());
    if (failed(perm))
      return failure();
    FailureOr<HostTensor> r = zb::frontend::transposeHost(in[0], *perm, err);
    if (failed(r))
      return failure();
    return result(*r);
  }
  nodeError() << "cannot be folded";
  return failure();
}

FailureOr<SmallVector<int64_t>> ONNXImporter::permutation(int64_t rank) {
  FailureOr<std::optional<SmallVector<int64_t>>> perm = intsAttr("perm");
  if (failed(perm))
    return failure();
  SmallVector<int64_t> p;
  if (*perm)
    p = **perm;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      p.push_back(i);
  SmallVector<bool> seen(rank, false);
  if (int64_t(p.size()) != rank) {
    nodeError() << "perm has " << p.size() << " entries for rank " << rank;
    return failure();
  }
  for (int64_t v : p) {
    if (v < 0 || v >= rank || seen[v]) {
      nodeError() << "perm is not a permutation of 0.." << rank - 1;
      return failure();
    }
    seen[v] = true;
  }
  return p;
}

ONNXImporter::Handler ONNXImporter::findHandler(llvm::StringRef opType) {
  return llvm::StringSwitch<Handler>(opType)
      .Case("Add", &ONNXImporter::binary<zb::AddOp>)
      .Case("Sub", &ONNXImporter::binary<zb::SubOp>)
      .Case("Mul", &ONNXImporter::binary<zb::MulOp>)
      .Case("Div", &ONNXImporter::binary<zb::DivOp>)
      .Case("Relu", &ONNXImporter::unary<zb::ReluOp>)
      .Case("Tanh", &ONNXImporter::unary<zb::TanhOp>)
      .Case("Exp", &ONNXImporter::unary<zb::ExpOp>)
      .Case("Log", &ONNXImporter::unary<zb::LogOp>)
      .Case("Neg", &ONNXImporter::unary<zb::NegOp>)
      .Case("Gemm", &ONNXImporter::gemm)
      .Case("MatMul", &ONNXImporter::matmul)
      .Case("Pow", &ONNXImporter::pow)
      .Case("ReduceMean", &ONNXImporter::reduce<zb::ReduceMeanOp>)
      .Case("ReduceSum", &ONNXImporter::reduce<zb::ReduceSumOp>)
      .Case("Identity", &ONNXImporter::identity)
      .Case("Dropout", &ONNXImporter::dropout)
      .Case("Constant", &ONNXImporter::constant)
      .Case("Erf", &ONNXImporter::unary<zb::ErfOp>)
      .Case("Sqrt", &ONNXImporter::unary<zb::SqrtOp>)
      .Case("Sigmoid", &ONNXImporter::unary<zb::SigmoidOp>)
      .Case("Reciprocal", &ONNXImporter::reciprocal)
      .Case("Shape", &ONNXImporter::shape)
      .Cases({"Reshape", "Unsqueeze", "Squeeze", "Flatten"},
             &ONNXImporter::reshape)
      .Case("Transpose", &ONNXImporter::transpose)
      .Case("Expand", &ONNXImporter::expand)
      .Case("Concat", &ONNXImporter::concat)
      .Case("Slice", &ONNXImporter::slice)
      .Case("Split", &ONNXImporter::split)
      .Case("Cast", &ONNXImporter::castNode)
      .Case("Gather", &ONNXImporter::gather)
      .Case("Where", &ONNXImporter::where)
      .Case("Softmax", &ONNXImporter::softmax)
      .Case("LayerNormalization", &ONNXImporter::layerNorm)
      .Case("SoftmaxCrossEntropyLoss", &ONNXImporter::softmaxCrossEntropy)
      .Default(nullptr);
}

LogicalResult ONNXImporter::importNode() {
  bool defaultDomain = node->domain().empty() || node->domain() == "ai.onnx";
  Handler handler = defaultDomain ? findHandler(node->op_type()) : nullptr;
  bool foldable = defaultDomain && isFoldable(node->op_type());
  if (foldable && allInputsConstant())
    handler = &ONNXImporter::fold;
  else if (foldable && isFoldOnly(node->op_type())) {
    for (int i = 0; i < node->input_size(); ++i) {
      auto it = hasInput(i) ? values.find(node->input(i)) : values.end();
      if (it != values.end() && !it->second.constant) {
        emitError(loc) << "unsupported ONNX op '" << node->op_type()
                       << "' on computed tensors (node '" << nodeName << "', #"
                       << nodeIndex << "): input #" << i << " ('"
                       << node->input(i)
                       << "') is not a constant known at import";
        return failure();
      }
    }
  }
  if (!handler) {
    emitError(loc) << "unsupported ONNX op '"
                   << (defaultDomain ? "" : node->domain() + ".")
                   << node->op_type() << "' (node '" << nodeName << "', #"
                   << nodeIndex << ")";
    return failure();
  }
  FailureOr<SmallVector<ImportedValue, 1>> results = (this->*handler)();
  if (failed(results))
    return failure();
  for (int i = 0; i < node->output_size(); ++i) {
    if (node->output(i).empty())
      continue;
    if (i >= int(results->size())) {
      nodeError() << "output #" << i << " is not supported";
      return failure();
    }
    if (failed(define(node->output(i), (*results)[i], loc)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> zb::frontend::importONNX(llvm::MemoryBufferRef buffer,
                                               MLIRContext *ctx,
                                               const ImportOptions &options) {
  ctx->loadDialect<func::FuncDialect, zb::ZBDialect>();
  llvm::StringRef fileName = buffer.getBufferIdentifier();
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  try {
    onnx::ModelProto model;
    if (buffer.getBufferSize() > size_t(INT_MAX)) {
      emitError(fileLoc) << "failed to parse ONNX model '" << fileName
                         << "': files over 2 GiB are not supported";
      return nullptr;
    }
    if (buffer.getBufferSize() == 0) {
      emitError(fileLoc) << "failed to parse ONNX model '" << fileName
                         << "': the file is empty";
      return nullptr;
    }
    if (!model.ParseFromArray(buffer.getBufferStart(),
                              int(buffer.getBufferSize()))) {
      emitError(fileLoc) << "failed to parse ONNX model '" << fileName
                         << "': invalid or truncated protobuf data";
      return nullptr;
    }
    ONNXImporter importer(ctx, fileName, options);
    return importer.importModel(model);
  } catch (const std::exception &e) {
    emitError(fileLoc) << "failed to import ONNX model '" << fileName
                       << "': " << e.what();
  } catch (...) {
    emitError(fileLoc) << "failed to import ONNX model '" << fileName
                       << "': unknown exception";
  }
  return nullptr;
}

OwningOpRef<ModuleOp>
zb::frontend::importONNXFile(llvm::StringRef path, MLIRContext *ctx,
                             const ImportOptions &options) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(ctx, path, 0, 0))
        << "cannot open ONNX model '" << path
        << "': " << buffer.getError().message();
    return nullptr;
  }
  return importONNX((*buffer)->getMemBufferRef(), ctx, options);
}

void zb::frontend::registerONNXImportTranslation() {
  // The options of --import-onnx (registered with the translation, before the
  // command line is parsed).
  static llvm::cl::opt<std::string> lossOption(
      "loss",
      llvm::cl::desc("--import-onnx: loss appended to a model whose output is "
                     "logits [N..., C] (cross-entropy)"),
      llvm::cl::value_desc("cross-entropy"), llvm::cl::init(""));
  static llvm::cl::opt<std::string> targetsOption(
      "targets",
      llvm::cl::desc("--import-onnx --loss: the integer class targets [N...]: "
                     "a graph input, or a new i64 input of that name"),
      llvm::cl::value_desc("NAME"), llvm::cl::init(""));
  static llvm::cl::opt<bool> keepOutputsOption(
      "onnx-keep-outputs",
      llvm::cl::desc("--import-onnx: return every graph output as computed "
                     "(forward checks of single-op models; not trainable)"),
      llvm::cl::init(false));
  auto getOptions = []() {
    ImportOptions options;
    options.keepOutputs = keepOutputsOption;
    options.loss = lossOption;
    options.targets = targetsOption;
    return options;
  };
  static TranslateToMLIRRegistration registration(
      "import-onnx",
      "import an ONNX model (forward + loss) into the zb dialect",
      [getOptions](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
                   MLIRContext *ctx) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        OwningOpRef<ModuleOp> module =
            importONNX(buffer->getMemBufferRef(), ctx, getOptions());
        if (!module)
          return nullptr;
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<func::FuncDialect, zb::ZBDialect>();
      });
}
