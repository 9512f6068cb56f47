//===- ONNXImporter.cpp - ONNX model -> zb dialect: the driver ------------===//
//
// See include/zb/Frontend/ONNX/ONNXImporter.h for the contract and
// ONNXImporterImpl.h for how the importer is split. This file loads the
// model, builds the signature of @main from the graph inputs and the
// parameters (initializers), walks the nodes in order dispatching each to its
// handler (ONNXImporterImpl.h, OpHandlerTable) or to a constant fold, and
// returns the loss (or every output with ImportOptions::keepOutputs).
//
// This file is compiled with exceptions (protobuf/onnx headers need them);
// nothing here lets one escape into MLIR code.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Frontend/ImportedModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

#include <climits>
#include <cmath>
#include <exception>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::ImportOptions;
using zb::frontend::transposeHost;

//===----------------------------------------------------------------------===//
// The op handler table
//===----------------------------------------------------------------------===//

void OpHandlerTable::add(llvm::ArrayRef<OpHandlerEntry> entries) {
  for (const OpHandlerEntry &entry : entries) {
    auto &versions = ops[entry.opType];
    auto *pos = llvm::find_if(
        versions, [&](const auto &v) { return v.first > entry.sinceVersion; });
    versions.insert(pos, {entry.sinceVersion, entry.handler});
  }
}

OpHandler OpHandlerTable::lookup(llvm::StringRef opType, int64_t opset) const {
  auto it = ops.find(opType);
  if (it == ops.end())
    return nullptr;
  // An opset older than the oldest handler has other semantics (Softmax
  // before 13 flattens to 2-D): no handler, not the oldest one.
  OpHandler handler = nullptr;
  for (const auto &[since, h] : it->second)
    if (since <= opset)
      handler = h;
  return handler;
}

int64_t OpHandlerTable::firstOpset(llvm::StringRef opType) const {
  auto it = ops.find(opType);
  return it == ops.end() ? -1 : it->second.front().first;
}

/// The handlers of every op family, built once.
static const OpHandlerTable &defaultDomainHandlers() {
  static const OpHandlerTable table = [] {
    OpHandlerTable t;
    populateElementwiseHandlers(t);
    populateMatMulHandlers(t);
    populateReductionHandlers(t);
    populateShapeHandlers(t);
    populateConstantHandlers(t);
    return t;
  }();
  return table;
}

/// Inputs of an op that must be constants known at import time (they are
/// read, never turned into tensor operands).
static bool isStaticInput(llvm::StringRef opType, int index) {
  if (opType == "Slice" || opType == "Dropout")
    return index >= 1;
  if (opType == "ConstantOfShape" || opType == "Range")
    return true;
  if (index != 1)
    return false;
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Pow", "ReduceMean", "ReduceSum", "ReduceMax", "Reshape"}, true)
      .Cases({"Unsqueeze", "Squeeze", "Expand", "Split", "Trilu", "Tile"}, true)
      .Cases({"SplitToSequence", "SequenceAt"}, true)
      .Default(false);
}

bool zb::frontend::onnx_import::isCausalPattern(const HostTensor &t,
                                                double above, double below) {
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

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

ONNXImporter::ONNXImporter(MLIRContext *ctx, llvm::StringRef fileName,
                           const ImportOptions &options)
    : ctx(ctx), fileName(fileName.str()),
      fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)), builder(ctx),
      loc(fileLoc), options(options) {
  externalDataDir = options.externalDataDir;
  if (externalDataDir.empty())
    externalDataDir = llvm::sys::path::parent_path(fileName).str();
  if (externalDataDir.empty())
    externalDataDir = ".";
}

InFlightDiagnostic ONNXImporter::nodeError() {
  InFlightDiagnostic diag = emitError(loc);
  diag << node->op_type() << " node '" << nodeName << "' (#" << nodeIndex
       << "): ";
  return diag;
}

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

//===----------------------------------------------------------------------===//
// What the exporter records about initializers
//===----------------------------------------------------------------------===//

namespace {
/// Field numbers of `metadata_props` (ONNX 1.16, IR version 10).
enum MetadataField : int {
  kValueInfoMetadata = 4,
  kNodeMetadata = 9,
  kGraphMetadata = 16,
};
} // namespace

/// The metadata_props (repeated StringStringEntryProto, field `field`) of
/// `message`. ONNX 1.16 added them to ValueInfoProto, NodeProto and
/// GraphProto; Debian's libonnx 1.12 predates them and protobuf keeps them as
/// unknown fields, so they are read from whichever holds them.
static SmallVector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::Message &message, int field) {
  SmallVector<std::pair<std::string, std::string>> props;
  const google::protobuf::Reflection *reflection = message.GetReflection();
  onnx::StringStringEntryProto entry;
  if (const google::protobuf::FieldDescriptor *fd =
          message.GetDescriptor()->FindFieldByNumber(field)) {
    if (!fd->is_repeated() ||
        fd->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE)
      return props;
    for (int i = 0, e = reflection->FieldSize(message, fd); i < e; ++i)
      if (entry.ParseFromString(
              reflection->GetRepeatedMessage(message, fd, i)
                  .SerializeAsString()))
        props.emplace_back(entry.key(), entry.value());
    return props;
  }
  const google::protobuf::UnknownFieldSet &unknown =
      reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() == field &&
        f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        entry.ParseFromString(f.length_delimited()))
      props.emplace_back(entry.key(), entry.value());
  }
  return props;
}

/// The names in a Python list literal such as "['a', 'b.c']".
static SmallVector<std::string> parseNameList(llvm::StringRef text) {
  SmallVector<std::string> names;
  SmallVector<llvm::StringRef> items;
  text.trim().trim("[]").split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    llvm::StringRef name = item.trim().trim("'\"");
    if (!name.empty())
      names.push_back(name.str());
  }
  return names;
}

namespace {
/// What torch.onnx.export (PyTorch 2.x, the dynamo exporter) writes about
/// the model's values, all of it optional metadata_props:
/// - the graph's `pkg.torch.export.ExportedProgram.graph_signature`, one line
///   per graph input of torch.export: "p_fc_weight: PARAMETER
///   target='fc.weight'", "b_rope_cos: BUFFER target='rope_cos'
///   persistent=True", "x: USER_INPUT";
/// - on each initializer's value_info,
///   `pkg.torch.export.graph_signature.InputSpec.kind` (PARAMETER, BUFFER,
///   CONSTANT_TENSOR, ...);
/// - on each initializer that onnxscript's optimizer computed (optimize=True
///   folds e.g. the transpose of an nn.Linear weight into a new initializer
///   `val_12`), `pkg.onnxscript.optimizer.folded_from`: the values it was
///   computed from, as a Python list ("['h.0.fc.weight']");
/// - on each node, `pkg.torch.onnx.fx_node`: the torch.export node it comes
///   from ("... target=torch.ops.aten.linear.default ...").
struct ExportInfo {
  /// Kind by state_dict name (graph signature, then value_info).
  llvm::StringMap<std::string> kind;
  /// Position of each name in the graph signature (the module's order).
  llvm::StringMap<unsigned> order;
  /// Sources of the initializers folded by the optimizer.
  llvm::StringMap<SmallVector<std::string>> foldedFrom;
  /// Initializers used as the weight (input #1) of a MatMul from
  /// torch.ops.aten.linear: a folded one is the weight transposed.
  llvm::StringSet<> linearWeights;

  bool isParameter(llvm::StringRef name) const {
    auto it = kind.find(name);
    return it != kind.end() && it->second == "PARAMETER";
  }
};
} // namespace

static ExportInfo readExportInfo(const onnx::GraphProto &graph) {
  ExportInfo info;
  for (const auto &[key, value] : metadataProps(graph, kGraphMetadata)) {
    if (key != "pkg.torch.export.ExportedProgram.graph_signature")
      continue;
    SmallVector<llvm::StringRef> lines;
    llvm::StringRef(value).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      auto [placeholder, rest] = line.trim().split(": ");
      llvm::StringRef kind = rest.split(' ').first;
      size_t target = rest.find("target='");
      if (placeholder.empty() || kind.empty() ||
          target == llvm::StringRef::npos)
        continue;
      llvm::StringRef name = rest.drop_front(target + 8).split('\'').first;
      info.kind[name] = kind.str();
      info.order.try_emplace(name, info.order.size());
    }
  }
  for (const onnx::ValueInfoProto &vi : graph.value_info())
    for (const auto &[key, value] : metadataProps(vi, kValueInfoMetadata)) {
      if (key == "pkg.torch.export.graph_signature.InputSpec.kind")
        info.kind[vi.name()] = value;
      else if (key == "pkg.onnxscript.optimizer.folded_from")
        info.foldedFrom[vi.name()] = parseNameList(value);
    }
  for (const onnx::NodeProto &n : graph.node()) {
    if (n.op_type() != "MatMul" || n.input_size() < 2)
      continue;
    for (const auto &[key, value] : metadataProps(n, kNodeMetadata))
      if (key == "pkg.torch.onnx.fx_node" &&
          llvm::StringRef(value).contains("torch.ops.aten.linear."))
        info.linearWeights.insert(n.input(1));
  }
  return info;
}

/// The permutation `perm` such that transpose(from, perm) reshaped to the
/// shape of `to` equals `to` value for value (the identity first: a
/// reshape), preferring `preferred` when several fit (e.g. an all-zero
/// matrix); nullopt if none does. `ambiguous` is set when several fit.
static std::optional<SmallVector<int64_t>>
findRearrangement(DenseElementsAttr from, DenseElementsAttr to,
                  ArrayRef<int64_t> preferred, bool &ambiguous) {
  ambiguous = false;
  HostTensor src = HostTensor::fromAttr(from), dst = HostTensor::fromAttr(to);
  int64_t rank = int64_t(src.shape.size());
  if (src.numElements() != dst.numElements() || rank > 6)
    return std::nullopt;
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  SmallVector<SmallVector<int64_t>> fits;
  auto quiet = [&]() -> InFlightDiagnostic {
    llvm_unreachable("a permutation of the dimensions always transposes");
  };
  do {
    FailureOr<HostTensor> t = transposeHost(src, perm, quiet);
    if (succeeded(t) && t->data == dst.data)
      fits.push_back(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
  if (fits.empty())
    return std::nullopt;
  ambiguous = fits.size() > 1;
  for (const SmallVector<int64_t> &p : fits)
    if (ArrayRef<int64_t>(p) == preferred)
      return p;
  return fits.front();
}

LogicalResult ONNXImporter::collectParameters(const onnx::GraphProto &graph) {
  // An initializer is a parameter if it is a floating-point tensor used as a
  // tensor operand (or is itself a graph output) and the exporter does not
  // mark it as a buffer; any other initializer is a constant folded at
  // import. One that the exporter's optimizer computed from a parameter
  // stands for that parameter (see ExportInfo).
  llvm::StringSet<> usedAsTensor;
  for (const onnx::NodeProto &n : graph.node())
    for (int i = 0; i < n.input_size(); ++i)
      if (!isStaticInput(n.op_type(), i))
        usedAsTensor.insert(n.input(i));
  for (const onnx::ValueInfoProto &out : graph.output())
    usedAsTensor.insert(out.name());
  ExportInfo info = readExportInfo(graph);

  for (const onnx::TensorProto &t : graph.initializer()) {
    if (t.name().empty()) {
      fileError() << "an initializer has no name";
      return failure();
    }
    if (initializers.count(t.name())) {
      fileError() << "initializer '" << t.name() << "' is defined twice";
      return failure();
    }
    Location where = NameLoc::get(builder.getStringAttr(t.name()), fileLoc);
    FailureOr<DenseElementsAttr> value =
        convertTensor(t, where, "initializer");
    if (failed(value))
      return failure();
    initializers[t.name()] = *value;
    if (!usedAsTensor.contains(t.name()) ||
        !isa<FloatType>(value->getElementType()))
      continue;
    auto kind = info.kind.find(t.name());
    if (kind != info.kind.end() && kind->second != "PARAMETER") {
      buffers.push_back(t.name()); // BUFFER, CONSTANT_TENSOR: a constant
      continue;
    }
    auto sources = info.foldedFrom.find(t.name());
    if (kind == info.kind.end() && !info.kind.empty() &&
        sources == info.foldedFrom.end())
      continue; // a constant of the exporter's (a scale, an epsilon)
    if (kind == info.kind.end() && sources != info.foldedFrom.end()) {
      SmallVector<std::string> fromParams;
      for (const std::string &s : sources->second)
        if (info.isParameter(s))
          fromParams.push_back(s);
      if (fromParams.empty())
        continue; // folded from buffers and constants: a constant
      if (fromParams.size() > 1) {
        emitError(where) << "initializer '" << t.name()
                         << "' was computed by the exporter's optimizer from "
                            "the parameters "
                         << llvm::join(fromParams, ", ")
                         << "; zb cannot train them through it (export with "
                            "torch.onnx.export(..., optimize=False))";
        return failure();
      }
      params.push_back({fromParams.front(), {}, &t}); // resolved below
      continue;
    }
    params.push_back({t.name(), *value, &t});
  }
  if (failed(resolveFolded(info.linearWeights)))
    return failure();
  // The module's parameter order (named_parameters) where it is known.
  llvm::stable_sort(params, [&](const Param &a, const Param &b) {
    auto ia = info.order.find(a.name), ib = info.order.find(b.name);
    return ia != info.order.end() && ib != info.order.end() &&
           ia->second < ib->second;
  });
  return success();
}

/// Each initializer folded from a parameter P (a placeholder {P, null value,
/// the initializer} in `params`) becomes a rearrangement (zb.transpose /
/// zb.reshape) of P: of P's initializer when the model still has it (a tied
/// weight: the rearrangement is found by value), else P is created from the
/// first such initializer: transposed back to nn.Linear's [out, in] layout
/// when it is the weight of an aten.linear MatMul, as it is otherwise.
LogicalResult
ONNXImporter::resolveFolded(const llvm::StringSet<> &linearWeights) {
  llvm::StringMap<DenseElementsAttr> direct;
  for (const Param &p : params)
    if (p.value)
      direct[p.name] = p.value;
  SmallVector<Param> kept;
  for (Param &p : params) {
    if (p.value) {
      kept.push_back(p);
      continue;
    }
    llvm::StringRef name = p.tensor->name();
    DenseElementsAttr value = initializers[name];
    Location where = NameLoc::get(builder.getStringAttr(name), fileLoc);
    bool linear =
        linearWeights.contains(name) && value.getType().getRank() == 2;
    SmallVector<int64_t> identity = llvm::to_vector(
        llvm::seq<int64_t>(0, value.getType().getRank()));
    SmallVector<int64_t> preferred =
        linear ? SmallVector<int64_t>{1, 0} : identity;
    auto it = direct.find(p.name);
    if (it == direct.end()) {
      // The first initializer folded from P: P itself.
      SmallVector<int64_t> perm = preferred;
      DenseElementsAttr paramValue = value;
      if (linear) {
        auto quiet = [&]() -> InFlightDiagnostic {
          llvm_unreachable("[1, 0] transposes a matrix");
        };
        paramValue = transposeHost(HostTensor::fromAttr(value), perm, quiet)
                         ->toAttr(value.getElementType());
      }
      direct[p.name] = paramValue;
      kept.push_back({p.name, paramValue, p.tensor});
      foldedInits.push_back({name.str(), p.name, perm});
      continue;
    }
    bool ambiguous = false;
    std::optional<SmallVector<int64_t>> perm =
        findRearrangement(it->second, value, preferred, ambiguous);
    if (!perm) {
      emitError(where) << "initializer '" << name
                       << "' was computed by the exporter's optimizer from "
                          "parameter '"
                       << p.name
                       << "', but is no transpose or reshape of it; zb cannot "
                          "train it (export with torch.onnx.export(..., "
                          "optimize=False))";
      return failure();
    }
    if (ambiguous)
      emitWarning(where) << "initializer '" << name
                         << "' (folded from parameter '" << p.name
                         << "') matches several rearrangements of it by value; "
                            "using permutation "
                         << formatShape(*perm);
    foldedInits.push_back({name.str(), p.name, *perm});
  }
  params = std::move(kept);
  return success();
}

/// The arguments of @main: the graph inputs that are not initializers, then
/// the parameters; and the parameters' initial values.
struct ONNXImporter::Signature {
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  SmallVector<std::string> argNames;
  SmallVector<NamedAttribute> paramValues;
};

FailureOr<ONNXImporter::Signature>
ONNXImporter::buildSignature(const onnx::GraphProto &graph) {
  Signature sig;
  for (const onnx::ValueInfoProto &in : graph.input()) {
    if (initializers.count(in.name()))
      continue; // an initializer listed as input (keep_initializers_as_inputs)
    FailureOr<RankedTensorType> type = convertValueInfo(in, "graph input");
    if (failed(type))
      return failure();
    sig.argTypes.push_back(*type);
    sig.argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        zb::frontend::kNameAttr, builder.getStringAttr(in.name()))));
    sig.argNames.push_back(in.name());
  }
  for (const Param &p : params) {
    sig.argTypes.push_back(p.value.getType());
    sig.argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(zb::frontend::kNameAttr,
                              builder.getStringAttr(p.name)),
         builder.getNamedAttr(zb::kParamAttr, builder.getUnitAttr())}));
    sig.argNames.push_back(p.name);
    sig.paramValues.push_back(builder.getNamedAttr(p.name, p.value));
  }
  return sig;
}

/// Creates @main (no results yet) in `module` with the arguments of `sig`,
/// each defined in the value map, and the initializers as constants; the
/// builder is left at the end of the entry block.
func::FuncOp ONNXImporter::createMain(ModuleOp module, const Signature &sig) {
  module->setAttr(zb::frontend::kParamValuesAttr,
                  builder.getDictionaryAttr(sig.paramValues));
  builder.setInsertionPointToEnd(module.getBody());
  auto func =
      func::FuncOp::create(builder, fileLoc, zb::frontend::kMainFuncName,
                           builder.getFunctionType(sig.argTypes, {}));
  func.setAllArgAttrs(sig.argAttrs);
  Block *entry = func.addEntryBlock();
  for (auto [name, arg] :
       llvm::zip_equal(sig.argNames, entry->getArguments())) {
    Location argLoc = NameLoc::get(builder.getStringAttr(name), fileLoc);
    arg.setLoc(argLoc);
    if (failed(define(name, ImportedValue{arg, {}}, argLoc)))
      return nullptr;
  }
  builder.setInsertionPointToEnd(entry);
  // Initializers folded from a parameter: that parameter, rearranged.
  for (const FoldedInit &f : foldedInits) {
    DenseElementsAttr init = initializers[f.name];
    loc = NameLoc::get(builder.getStringAttr(f.name), fileLoc);
    Value v = values[f.param].value;
    auto type = cast<RankedTensorType>(v.getType());
    if (!llvm::equal(f.perm, llvm::seq<int64_t>(0, type.getRank()))) {
      SmallVector<int64_t> shape;
      for (int64_t d : f.perm)
        shape.push_back(type.getDimSize(d));
      v = zb::TransposeOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()), v,
          f.perm);
    }
    if (v.getType() != init.getType())
      v = zb::ReshapeOp::create(builder, loc, init.getType(), v);
    values[f.name] = ImportedValue{v, {}};
  }
  loc = fileLoc;
  for (auto &[name, value] : initializers)
    if (!values.count(name))
      values[name] = ImportedValue{{}, value};
  if (!buffers.empty()) {
    SmallVector<Attribute> names;
    for (const std::string &b : buffers)
      names.push_back(builder.getStringAttr(b));
    module->setAttr(zb::frontend::kBuffersAttr, builder.getArrayAttr(names));
  }
  return func;
}

LogicalResult ONNXImporter::importNodes(const onnx::GraphProto &graph) {
  for (int i = 0; i < graph.node_size(); ++i) {
    node = &graph.node(i);
    nodeIndex = i;
    nodeName = node->name().empty() ? node->op_type() + "_" + std::to_string(i)
                                    : node->name();
    loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);
    if (failed(importNode()))
      return failure();
  }
  node = nullptr;
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
  // Handlers are registered by the opset an op's semantics start at; an
  // opset newer than the newest zb knows may have changed any of them.
  // (torch.onnx.export writes 17 by default before PyTorch 2.5 and 18 to 20
  // with the dynamo exporter; 21 changed only the types of the ops zb reads.)
  // (Opsets before 7 broadcast with a `broadcast` attribute instead of
  // NumPy's rules: importNode refuses it.)
  constexpr int64_t kMinOpset = 1, kMaxOpset = 21;
  if (opsetVersion > kMaxOpset || opsetVersion < kMinOpset) {
    InFlightDiagnostic diag = fileError();
    diag << "ONNX opset " << opsetVersion
         << (opsetVersion > kMaxOpset ? " is newer than" : " is outside what")
         << " zb supports (default-domain opsets " << kMinOpset << " to "
         << kMaxOpset << ")";
    if (opsetVersion > kMaxOpset)
      diag << ": export with opset_version=" << kMaxOpset << " or lower";
    return nullptr;
  }
  for (const onnx::FunctionProto &f : model.functions())
    functions[f.domain() + ":" + f.name()] = &f;
  if (graph.sparse_initializer_size() > 0) {
    fileError() << "sparse initializers are not supported";
    return nullptr;
  }
  if (failed(collectParameters(graph)))
    return nullptr;
  FailureOr<Signature> sig = buildSignature(graph);
  if (failed(sig))
    return nullptr;
  if (graph.output_size() != 1 && !options.keepOutputs) {
    fileError() << "the graph must have exactly one output, the loss (it has "
                << graph.output_size() << ")";
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  func::FuncOp func = createMain(*module, *sig);
  if (!func || failed(importNodes(graph)))
    return nullptr;
  if (options.keepOutputs) {
    if (failed(returnOutputs(graph, func)))
      return nullptr;
    return module;
  }
  if (failed(returnLoss(graph.output(0), func,
                        sig->argNames.size() - params.size())))
    return nullptr;
  eraseDeadOps(&func.getBody().front());
  return module;
}

/// Forward model checks: every graph output is a result, as computed.
LogicalResult ONNXImporter::returnOutputs(const onnx::GraphProto &graph,
                                          func::FuncOp func) {
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    auto found = values.find(out.name());
    if (found == values.end()) {
      fileError() << "the graph output '" << out.name()
                  << "' is not computed by any node";
      return failure();
    }
    loc = NameLoc::get(builder.getStringAttr(out.name()), fileLoc);
    if (found->second.isSequence) {
      fileError() << "the graph output '" << out.name()
                  << "' is a sequence; only tensors are supported";
      return failure();
    }
    results.push_back(materialize(found->second));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(),
                                               ValueRange(results).getTypes()));
  return success();
}

/// Returns the loss, `output` (with --loss: the loss of the logits `output`),
/// as a rank-0 tensor.
LogicalResult ONNXImporter::returnLoss(const onnx::ValueInfoProto &output,
                                       func::FuncOp func,
                                       unsigned numGraphInputs) {
  loc = NameLoc::get(builder.getStringAttr(output.name()), fileLoc);
  auto it = values.find(output.name());
  if (it == values.end()) {
    fileError() << "the graph output '" << output.name()
                << "' is not computed by any node";
    return failure();
  }
  if (it->second.isSequence) {
    fileError() << "the graph output '" << output.name()
                << "' is a sequence, not a loss";
    return failure();
  }
  Value loss = materialize(it->second);
  if (!options.loss.empty()) {
    FailureOr<Value> appended = appendLoss(loss, func, numGraphInputs);
    if (failed(appended))
      return failure();
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
    return failure();
  }
  if (options.loss.empty() && failed(checkDeclaredLossType(output, lossType)))
    return failure();
  if (lossType.getRank() != 0)
    loss = zb::ReshapeOp::create(
        builder, loc, RankedTensorType::get({}, lossType.getElementType()),
        loss);
  func::ReturnOp::create(builder, fileLoc, loss);
  func.setFunctionType(
      builder.getFunctionType(func.getArgumentTypes(), loss.getType()));
  return success();
}

/// A fully static declared type of the output must be what the nodes compute.
LogicalResult
ONNXImporter::checkDeclaredLossType(const onnx::ValueInfoProto &output,
                                    RankedTensorType lossType) {
  const onnx::TypeProto &declared = output.type();
  if (!declared.has_tensor_type() || !declared.tensor_type().has_shape())
    return success();
  SmallVector<int64_t> shape;
  for (const auto &d : declared.tensor_type().shape().dim())
    shape.push_back(d.has_dim_value() ? d.dim_value() : ShapedType::kDynamic);
  Type elementType = convertElementType(declared.tensor_type().elem_type());
  if (!llvm::is_contained(shape, ShapedType::kDynamic) && elementType &&
      RankedTensorType::get(shape, elementType) != lossType) {
    fileError() << "the graph output '" << output.name() << "' is declared as "
                << RankedTensorType::get(shape, elementType)
                << " but the graph computes " << lossType;
    return failure();
  }
  return success();
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
// Dispatch of a node
//===----------------------------------------------------------------------===//

/// A fold-only op (Cos, Range, ...) on a computed input is an error.
LogicalResult ONNXImporter::checkFoldOnlyInputs() {
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
  return success();
}

/// A call of a model-local function (ModelProto.functions, e.g. a module
/// exported as a function): its body is imported in place of the node, each
/// body node a copy with the formal inputs and outputs renamed to the call's
/// actual ones, its other values to "<call node>/<n>/<name>" (fresh per
/// call), and attribute references (ref_attr_name) replaced by the call's
/// attributes (absent ones dropped: the op's default applies).
LogicalResult ONNXImporter::inlineFunction(const onnx::FunctionProto &f) {
  if (inlineDepth >= kMaxInlineDepth) {
    nodeError() << "local functions nest deeper than " << kMaxInlineDepth
                << " calls (recursive function '" << f.name() << "'?)";
    return failure();
  }
  if (node->input_size() > f.input_size() ||
      node->output_size() > f.output_size()) {
    nodeError() << "calls local function '" << f.name() << "' with "
                << node->input_size() << " inputs and " << node->output_size()
                << " outputs; it has " << f.input_size() << " and "
                << f.output_size();
    return failure();
  }
  std::string prefix =
      nodeName + "/" + std::to_string(inlinedCalls++) + "/";
  llvm::StringMap<std::string> rename;
  for (int i = 0; i < f.input_size(); ++i)
    rename[f.input(i)] = i < node->input_size() ? node->input(i) : "";
  for (int i = 0; i < f.output_size(); ++i)
    rename[f.output(i)] = i < node->output_size() && !node->output(i).empty()
                              ? node->output(i)
                              : prefix + f.output(i);
  auto renamed = [&](const std::string &name) -> std::string {
    if (name.empty())
      return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + name;
  };
  const onnx::NodeProto *call = node;
  std::string callName = nodeName;
  Location callLoc = loc;
  ++inlineDepth;
  LogicalResult result = success();
  for (int n = 0; n < f.node_size() && succeeded(result); ++n) {
    onnx::NodeProto body = f.node(n);
    for (std::string &in : *body.mutable_input())
      in = renamed(in);
    for (std::string &out : *body.mutable_output())
      out = renamed(out);
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
    for (const onnx::AttributeProto &a : body.attribute()) {
      if (a.ref_attr_name().empty()) {
        *attrs.Add() = a;
        continue;
      }
      for (const onnx::AttributeProto &given : call->attribute())
        if (given.name() == a.ref_attr_name()) {
          onnx::AttributeProto *copy = attrs.Add();
          *copy = given;
          copy->set_name(a.name());
        }
    }
    body.mutable_attribute()->Swap(&attrs);
    node = &body;
    nodeName = prefix + (body.name().empty()
                             ? body.op_type() + "_" + std::to_string(n)
                             : body.name());
    loc = NameLoc::get(builder.getStringAttr(nodeName), fileLoc);
    result = importNode();
  }
  --inlineDepth;
  node = call;
  nodeName = callName;
  loc = callLoc;
  return result;
}

LogicalResult ONNXImporter::importNode() {
  auto function = functions.find(node->domain() + ":" + node->op_type());
  if (function != functions.end())
    return inlineFunction(*function->second);
  bool defaultDomain = node->domain().empty() || node->domain() == "ai.onnx";
  OpHandler handler =
      defaultDomain
          ? defaultDomainHandlers().lookup(node->op_type(), opsetVersion)
          : nullptr;
  const FoldRule *foldRule =
      defaultDomain ? findFoldRule(node->op_type()) : nullptr;
  if (defaultDomain) {
    // The op must exist at the model's opset (ONNX's own operator schemas):
    // a graph declaring opset 11 cannot use LayerNormalization (opset 17).
    const std::string &op = node->op_type();
    if (!onnx::OpSchemaRegistry::Schema(op, (int)opsetVersion, "") &&
        onnx::OpSchemaRegistry::Schema(op, INT_MAX, "")) {
      int first = 1;
      while (!onnx::OpSchemaRegistry::Schema(op, first, ""))
        ++first;
      emitError(loc) << "ONNX op '" << op << "' (node '" << nodeName << "', #"
                     << nodeIndex << ") does not exist in opset "
                     << opsetVersion << " (the model's default-domain opset); "
                     << "it was added in opset " << first;
      return failure();
    }
    // Before opset 7, Add, Mul, Gemm, ... broadcast only with
    // `broadcast=1` (and `axis`), not by NumPy's rules, which zb implements.
    if (opsetVersion < 7)
      for (const onnx::AttributeProto &a : node->attribute())
        if (a.name() == "broadcast" && a.i() != 0) {
          emitError(loc) << "ONNX op '" << op << "' (node '" << nodeName
                         << "', #" << nodeIndex
                         << ") broadcasts with the 'broadcast' attribute of "
                            "opsets before 7; zb implements NumPy "
                            "broadcasting (opset 7 and later): export with "
                            "opset_version >= 7";
          return failure();
        }
    int64_t since = defaultDomainHandlers().firstOpset(op);
    if (!handler && since > opsetVersion) {
      emitError(loc) << "ONNX op '" << op << "' (node '" << nodeName << "', #"
                     << nodeIndex << ") at opset " << opsetVersion
                     << ": zb supports it from opset " << since
                     << "; export with "
                        "opset_version >= "
                     << since;
      return failure();
    }
  }
  bool folds = foldRule && allInputsConstant();
  if (foldRule && !folds && foldRule->foldOnly && failed(checkFoldOnlyInputs()))
    return failure();
  if (!folds && !handler) {
    emitError(loc) << "unsupported ONNX op '"
                   << (defaultDomain ? "" : node->domain() + ".")
                   << node->op_type() << "' (node '" << nodeName << "', #"
                   << nodeIndex << ")";
    return failure();
  }
  FailureOr<NodeResults> results = folds ? fold(*foldRule) : (this->*handler)();
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

/// Parses the ModelProto in `buffer`; emits an error and returns false on
/// malformed input.
static bool parseModel(llvm::MemoryBufferRef buffer, Location fileLoc,
                       onnx::ModelProto &model) {
  llvm::StringRef fileName = buffer.getBufferIdentifier();
  auto error = [&]() -> InFlightDiagnostic {
    InFlightDiagnostic diag = emitError(fileLoc);
    diag << "failed to parse ONNX model '" << fileName << "': ";
    return diag;
  };
  if (buffer.getBufferSize() > size_t(INT_MAX)) {
    error() << "files over 2 GiB are not supported";
    return false;
  }
  if (buffer.getBufferSize() == 0) {
    error() << "the file is empty";
    return false;
  }
  if (!model.ParseFromArray(buffer.getBufferStart(),
                            int(buffer.getBufferSize()))) {
    error() << "invalid or truncated protobuf data";
    return false;
  }
  return true;
}

OwningOpRef<ModuleOp> zb::frontend::importONNX(llvm::MemoryBufferRef buffer,
                                               MLIRContext *ctx,
                                               const ImportOptions &options) {
  ctx->loadDialect<func::FuncDialect, zb::ZBDialect>();
  llvm::StringRef fileName = buffer.getBufferIdentifier();
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  try {
    onnx::ModelProto model;
    if (!parseModel(buffer, fileLoc, model))
      return nullptr;
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
  static bool registered = [] {
    registerImportTranslation(
        "import-onnx",
        "import an ONNX model (forward + loss) into the zb dialect",
        [](llvm::MemoryBufferRef buffer, MLIRContext *ctx) {
          ImportOptions options;
          options.keepOutputs = keepOutputsOption;
          options.loss = lossOption;
          options.targets = targetsOption;
          return importONNX(buffer, ctx, options);
        });
    return true;
  }();
  (void)registered;
}
