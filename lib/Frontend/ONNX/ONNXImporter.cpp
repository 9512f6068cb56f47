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
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include "onnx/onnx_pb.h"

#include <climits>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>

using namespace mlir;

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

/// Inputs of an op that must be constants known at import time (they are
/// read, never turned into tensor operands).
bool isStaticInput(llvm::StringRef opType, int index) {
  if (index != 1)
    return false;
  return llvm::StringSwitch<bool>(opType)
      .Case("Pow", true)
      .Case("ReduceMean", true)
      .Case("ReduceSum", true)
      .Default(false);
}

std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "[]";
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "," : "") + std::to_string(d);
  return s + "]";
}

class ONNXImporter {
public:
  ONNXImporter(MLIRContext *ctx, llvm::StringRef fileName)
      : ctx(ctx), fileName(fileName.str()),
        fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)), builder(ctx),
        loc(fileLoc) {}

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
  FailureOr<SmallVector<ImportedValue, 1>> constant();

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

  // The node being imported.
  const onnx::NodeProto *node = nullptr;
  int nodeIndex = -1;
  std::string nodeName;
  Location loc;
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
    error() << "unsupported element type " << elementTypeName(tensor.data_type());
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
  unsigned width = elementType.isInteger(1)
                       ? 1
                       : elementType.getIntOrFloatBitWidth() / 8;

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
              << formatShape(shape) << " x " << elementTypeName(tensor.data_type())
              << " needs " << numElements * width;
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
  return DenseElementsAttr::get(
      type, ArrayRef<Attribute>{builder.getFloatAttr(type.getElementType(),
                                                     value)});
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

  if (graph.output_size() != 1) {
    fileError() << "the graph must have exactly one output, the loss (it has "
                << graph.output_size() << ")";
    return nullptr;
  }
  const onnx::ValueInfoProto &output = graph.output(0);

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(zb::frontend::kParamValuesAttr,
                     builder.getDictionaryAttr(paramValues));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc,
                                   zb::frontend::kMainFuncName,
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

  // The result: the loss.
  loc = NameLoc::get(builder.getStringAttr(output.name()), fileLoc);
  auto it = values.find(output.name());
  if (it == values.end()) {
    fileError() << "the graph output '" << output.name()
                << "' is not computed by any node";
    return nullptr;
  }
  Value loss = materialize(it->second);
  auto lossType = cast<RankedTensorType>(loss.getType());
  if (!isa<FloatType>(lossType.getElementType()) ||
      lossType.getNumElements() != 1) {
    fileError() << "the graph output '" << output.name()
                << "' must be a scalar loss, but it is " << lossType;
    return nullptr;
  }
  // A fully static declared type must be what the nodes compute.
  const onnx::TypeProto &declared = output.type();
  if (declared.has_tensor_type() && declared.tensor_type().has_shape()) {
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
  func.setFunctionType(builder.getFunctionType(argTypes, loss.getType()));
  return module;
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
    nodeError() << "cannot broadcast " << type << " to "
                << formatShape(shape);
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
  return Value(
      zb::BroadcastInDimOp::create(builder, loc, resultType, v, dims));
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
  FailureOr<int64_t> transA = intAttr("transA", 0), transB = intAttr("transB", 0);
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
    y = zb::MulOp::create(builder, loc, type, y,
                          splatConstant(type, *alpha));
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

FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::matmul() {
  FailureOr<Value> a = floatInput(0), b = failure();
  if (failed(a) || failed(b = floatInput(1)))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (aType.getRank() != 2 || bType.getRank() != 2) {
    nodeError() << "only 2-D x 2-D products are supported, got " << aType
                << " and " << bType;
    return failure();
  }
  if (aType.getDimSize(1) != bType.getDimSize(0) ||
      aType.getElementType() != bType.getElementType()) {
    nodeError() << "operands do not match: " << aType << " and " << bType;
    return failure();
  }
  auto type = RankedTensorType::get({aType.getDimSize(0), bType.getDimSize(1)},
                                    aType.getElementType());
  return SmallVector<ImportedValue, 1>{
      {zb::MatmulOp::create(builder, loc, type, *a, *b, false, false), {}}};
}

/// Pow with a constant exponent: x^2 -> x * x, x^1 -> x.
FailureOr<SmallVector<ImportedValue, 1>> ONNXImporter::pow() {
  FailureOr<Value> x = floatInput(0);
  if (failed(x))
    return failure();
  std::optional<double> exponent;
  if (FailureOr<ImportedValue> e = lookup(1); succeeded(e)) {
    DenseElementsAttr c = e->constant;
    if (!c)
      c = initializers.lookup(node->input(1));
    if (c && c.getNumElements() == 1) {
      if (isa<FloatType>(c.getElementType()))
        exponent = (*c.getValues<APFloat>().begin()).convertToDouble();
      else if (c.getElementType().isSignlessInteger())
        exponent = double((*c.getValues<APInt>().begin()).getSExtValue());
    }
  } else {
    return failure();
  }
  if (exponent && *exponent == 1.0)
    return SmallVector<ImportedValue, 1>{{*x, {}}};
  if (!exponent || *exponent != 2.0) {
    InFlightDiagnostic diag = emitError(loc);
    diag << "unsupported ONNX op 'Pow' with ";
    if (exponent)
      diag << "exponent " << llvm::formatv("{0}", llvm::format("%g", *exponent)).str();
    else
      diag << "a non-constant or non-scalar exponent";
    diag << " (node '" << nodeName << "', #" << nodeIndex
         << "): only a constant exponent 2 is supported";
    return failure();
  }
  return SmallVector<ImportedValue, 1>{
      {zb::MulOp::create(builder, loc, x->getType(), *x, *x), {}}};
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
    if (!c->getElementType().isSignlessInteger() || c->getType().getRank() > 1) {
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
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getF32Type()),
        ArrayRef<float>(a.f()));
  } else if (name == "value_floats" &&
             a.type() == onnx::AttributeProto::FLOATS) {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({int64_t(v.size())}, builder.getF32Type()),
        ArrayRef<float>(v));
  } else if (name == "value_int" && a.type() == onnx::AttributeProto::INT) {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getI64Type()),
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
      .Case("Constant", &ONNXImporter::constant)
      .Default(nullptr);
}

LogicalResult ONNXImporter::importNode() {
  bool defaultDomain = node->domain().empty() || node->domain() == "ai.onnx";
  Handler handler = defaultDomain ? findHandler(node->op_type()) : nullptr;
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
                                               MLIRContext *ctx) {
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
    ONNXImporter importer(ctx, fileName);
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

OwningOpRef<ModuleOp> zb::frontend::importONNXFile(llvm::StringRef path,
                                                   MLIRContext *ctx) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(ctx, path, 0, 0))
        << "cannot open ONNX model '" << path
        << "': " << buffer.getError().message();
    return nullptr;
  }
  return importONNX((*buffer)->getMemBufferRef(), ctx);
}

void zb::frontend::registerONNXImportTranslation() {
  static TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (forward + loss) into the zb dialect",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *ctx) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        OwningOpRef<ModuleOp> module =
            importONNX(buffer->getMemBufferRef(), ctx);
        if (!module)
          return nullptr;
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<func::FuncDialect, zb::ZBDialect>();
      });
}
