//===- ONNXReader.cpp - ONNX protobuf -> MLIR types and values ------------===//
//
// The importer's reading of the protobuf: element types, value infos,
// TensorProto data (initializers, Constant nodes), and the inputs and
// attributes of the node being imported, with the building blocks the op
// handlers share (numpy broadcasting, axes). See ONNXImporterImpl.h.
//
// This file is compiled with exceptions (protobuf/onnx headers need them);
// nothing here lets one escape into MLIR code.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include <cstring>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::toInts;

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

llvm::StringRef ONNXImporter::elementTypeName(int32_t onnxType) {
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

/// The little-endian bytes of `numElements` elements of `width` bytes from
/// the typed fields of `tensor` (float_data, int64_data, ...; int32_data holds
/// INT32 and the narrower types in its low bits).
static std::string typedFieldBytes(const onnx::TensorProto &tensor,
                                   int64_t numElements, unsigned width) {
  using TP = onnx::TensorProto;
  std::string bytes;
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
  return bytes;
}

/// The little-endian bytes of every element of `tensor` (booleans: one
/// byte), from raw_data or the typed fields; an error if their count does not
/// match `shape`.
static FailureOr<std::string>
tensorBytes(const onnx::TensorProto &tensor, std::optional<StringRef> external,
            ArrayRef<int64_t> shape, int64_t numElements, unsigned width,
            llvm::function_ref<InFlightDiagnostic()> error) {
  using TP = onnx::TensorProto;
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
  if (external || tensor.has_raw_data()) {
    StringRef raw = external ? *external : StringRef(tensor.raw_data());
    if (int64_t(raw.size()) != numElements * width) {
      error() << "has " << raw.size() << " bytes of data"
              << (external ? " in its external data" : "") << ", "
              << formatShape(shape) << " x "
              << ONNXImporter::elementTypeName(tensor.data_type()) << " needs "
              << numElements * width;
      return failure();
    }
    return raw.str();
  }
  if (typedCount() != numElements) {
    error() << "has " << typedCount() << " values, its shape "
            << formatShape(shape) << " needs " << numElements;
    return failure();
  }
  return typedFieldBytes(tensor, numElements, width);
}

//===----------------------------------------------------------------------===//
// External data
//===----------------------------------------------------------------------===//

/// True if `location` (an external_data location) names a file inside the
/// model's directory: relative, and no `..` component (either separator).
static bool staysInDirectory(llvm::StringRef location) {
  if (location.starts_with("/") || location.starts_with("\\") ||
      (location.size() >= 2 && location[1] == ':'))
    return false;
  SmallVector<llvm::StringRef> parts;
  location.split(parts, '/');
  for (llvm::StringRef part : parts) {
    SmallVector<llvm::StringRef> pieces;
    part.split(pieces, '\\');
    if (llvm::is_contained(pieces, ".."))
      return false;
  }
  return true;
}

FailureOr<llvm::StringRef>
ONNXImporter::externalData(const onnx::TensorProto &tensor,
                           llvm::function_ref<InFlightDiagnostic()> error) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &e : tensor.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset" || e.key() == "length") {
      uint64_t v;
      if (llvm::StringRef(e.value()).getAsInteger(10, v)) {
        error() << "external data " << e.key() << " '" << e.value()
                << "' is not a non-negative integer";
        return failure();
      }
      if (e.key() == "offset")
        offset = v;
      else
        length = v;
    } // "checksum" and unknown keys are ignored
  }
  if (location.empty()) {
    error() << "external data without a location";
    return failure();
  }
  if (!staysInDirectory(location)) {
    error() << "external data location '" << location
            << "' must be a relative path inside the model's directory";
    return failure();
  }
  SmallString<256> path(externalDataDir);
  llvm::sys::path::append(path, location);
  auto it = externalFiles.find(path);
  if (it == externalFiles.end()) {
    // A symbolic link may still lead outside the directory.
    SmallString<256> realDir, realFile;
    if (!llvm::sys::fs::real_path(externalDataDir, realDir) &&
        !llvm::sys::fs::real_path(path, realFile) &&
        !llvm::StringRef(realFile).starts_with(realDir.str().str() + "/")) {
      error() << "external data file '" << path
              << "' resolves outside the model's directory";
      return failure();
    }
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!file) {
      error() << "cannot read external data file '" << path
              << "': " << file.getError().message();
      return failure();
    }
    it = externalFiles.try_emplace(path, std::move(*file)).first;
  }
  llvm::StringRef data = it->second->getBuffer();
  uint64_t size = data.size();
  if (offset > size || (length && *length > size - offset)) {
    error() << "external data file '" << path << "' has " << size
            << " bytes, the tensor's data is at offset " << offset
            << (length ? " length " + std::to_string(*length) : "")
            << " (truncated file?)";
    return failure();
  }
  return data.substr(offset, length ? *length : size - offset);
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
  std::optional<StringRef> external;
  if (tensor.data_location() == TP::EXTERNAL) {
    FailureOr<StringRef> data = externalData(tensor, error);
    if (failed(data))
      return failure();
    external = *data;
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

  FailureOr<std::string> bytes =
      tensorBytes(tensor, external, shape, numElements, width, error);
  if (failed(bytes))
    return failure();
  if (elementType.isInteger(1)) {
    SmallVector<bool> bits(numElements);
    for (int64_t i = 0; i < numElements; ++i)
      bits[i] = (*bytes)[i] != 0;
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  if (numElements == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>());
  // A buffer of one element is a splat, and getFromRawBuffer expects that.
  bool isSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, {bytes->data(), bytes->size()},
                                           isSplat)) {
    error() << "invalid data";
    return failure();
  }
  return DenseElementsAttr::getFromRawBuffer(type,
                                             {bytes->data(), bytes->size()});
}

DenseElementsAttr ONNXImporter::splat(RankedTensorType type, double value) {
  return DenseElementsAttr::get(type, ArrayRef<Attribute>{builder.getFloatAttr(
                                          type.getElementType(), value)});
}

Value ONNXImporter::splatConstant(RankedTensorType type, double value) {
  return zb::ConstantOp::create(builder, loc, splat(type, value));
}

//===----------------------------------------------------------------------===//
// The current node: inputs and outputs
//===----------------------------------------------------------------------===//

llvm::StringRef ONNXImporter::opType() const { return node->op_type(); }
int ONNXImporter::numInputs() const { return node->input_size(); }
int ONNXImporter::numOutputs() const { return node->output_size(); }

bool ONNXImporter::hasOutput(int i) const {
  return i < node->output_size() && !node->output(i).empty();
}

bool ONNXImporter::hasInput(int i) const {
  return i < node->input_size() && !node->input(i).empty();
}

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
  if (it->second.isSequence) {
    nodeError() << "input #" << i << " ('" << node->input(i)
                << "') is a sequence; only SequenceAt reads sequences";
    return failure();
  }
  return it->second;
}

FailureOr<ImportedValue> ONNXImporter::sequenceInput(int i) {
  auto it = hasInput(i) ? values.find(node->input(i)) : values.end();
  if (it == values.end() || !it->second.isSequence) {
    nodeError() << "input #" << i << " must be a sequence (from "
                << "SplitToSequence)";
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

//===----------------------------------------------------------------------===//
// Attributes of the current node
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *ONNXImporter::findAttr(llvm::StringRef name) {
  for (const onnx::AttributeProto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

LogicalResult ONNXImporter::checkAttrType(const onnx::AttributeProto *a,
                                          int type, llvm::StringRef name,
                                          llvm::StringRef what) {
  if (a && a->type() != type) {
    nodeError() << "attribute '" << name << "' must be " << what;
    return failure();
  }
  return success();
}

FailureOr<int64_t> ONNXImporter::intAttr(llvm::StringRef name, int64_t dflt) {
  const onnx::AttributeProto *a = findAttr(name);
  if (failed(checkAttrType(a, onnx::AttributeProto::INT, name, "an integer")))
    return failure();
  return a ? a->i() : dflt;
}

FailureOr<float> ONNXImporter::floatAttr(llvm::StringRef name, float dflt) {
  const onnx::AttributeProto *a = findAttr(name);
  if (failed(checkAttrType(a, onnx::AttributeProto::FLOAT, name, "a float")))
    return failure();
  return a ? a->f() : dflt;
}

FailureOr<std::optional<SmallVector<int64_t>>>
ONNXImporter::intsAttr(llvm::StringRef name) {
  const onnx::AttributeProto *a = findAttr(name);
  if (failed(checkAttrType(a, onnx::AttributeProto::INTS, name,
                           "a list of integers")))
    return failure();
  if (!a)
    return std::optional<SmallVector<int64_t>>();
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(a->ints().begin(), a->ints().end()));
}

bool ONNXImporter::hasAttr(llvm::StringRef name) {
  return findAttr(name) != nullptr;
}

std::optional<std::string> ONNXImporter::stringAttr(llvm::StringRef name) {
  if (const onnx::AttributeProto *a = findAttr(name))
    return a->s();
  return std::nullopt;
}

std::optional<int64_t> ONNXImporter::uncheckedIntAttr(llvm::StringRef name) {
  if (const onnx::AttributeProto *a = findAttr(name))
    return a->i();
  return std::nullopt;
}

FailureOr<std::optional<DenseElementsAttr>>
ONNXImporter::tensorAttr(llvm::StringRef name) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return std::optional<DenseElementsAttr>();
  FailureOr<DenseElementsAttr> value = convertTensor(a->t(), loc, name);
  if (failed(value))
    return failure();
  return std::optional<DenseElementsAttr>(*value);
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

Value ONNXImporter::toFloat(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (isa<FloatType>(type.getElementType()))
    return v;
  return zb::CastOp::create(builder, loc, type.clone(builder.getF32Type()), v);
}

Value ONNXImporter::fromFloat(Value f, Type target) {
  auto type = cast<RankedTensorType>(f.getType());
  if (type.getElementType() == target)
    return f;
  if (target.isInteger(1))
    return zb::CompareOp::create(builder, loc, type.clone(target),
                                 builder.getStringAttr("ne"), f,
                                 splatConstant(type, 0.0));
  return zb::CastOp::create(builder, loc, type.clone(target), f);
}

FailureOr<Value> ONNXImporter::broadcastTo(Value v, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  if (!isa<FloatType>(type.getElementType())) {
    // Integer and boolean data (masks, ids) through float32: exact for
    // |values| < 2^24.
    FailureOr<Value> wide = broadcastTo(toFloat(v), shape);
    if (failed(wide))
      return failure();
    return fromFloat(*wide, type.getElementType());
  }
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

FailureOr<int64_t> ONNXImporter::axisOf(FailureOr<Value> x,
                                        int64_t defaultAxis) {
  FailureOr<int64_t> axisAttr = intAttr("axis", defaultAxis);
  if (failed(x) || failed(axisAttr))
    return failure();
  return normalizeAxis(*axisAttr,
                       cast<RankedTensorType>(x->getType()).getRank(), "axis");
}

FailureOr<int64_t> ONNXImporter::normalizeAxis(int64_t axis, int64_t rank,
                                               llvm::StringRef what) {
  if (axis < -rank || axis >= rank) {
    nodeError() << what << " " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// Constant nodes
//===----------------------------------------------------------------------===//

/// Constant: the value of its one attribute (value, value_float(s),
/// value_int(s)), a constant known at import.
FailureOr<NodeResults> ONNXImporter::constant() {
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
  return NodeResults{{Value(), value}};
}

void zb::frontend::onnx_import::populateConstantHandlers(
    OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Constant", 1, &I::constant},
  };
  table.add(entries);
}
