//===- ONNXImporter.cpp - ONNX model -> zb dialect: the driver ------------===//
//
// See include/zb/Frontend/ONNX/ONNXImporter.h for the contract and
// ONNXImporterImpl.h for how the importer is split. This file loads the
// model, builds the signature of @main from the graph inputs and the
// parameters (ONNXParameters.cpp), walks the nodes in order (each imported
// by ONNXDispatch.cpp), and returns the loss (or every output with
// ImportOptions::keepOutputs).
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
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"

#include <climits>
#include <cmath>
#include <exception>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::ImportOptions;

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
    if (f.rows.type) {
      Value indices = zb::ConstantOp::create(builder, loc, f.rows.toAttr());
      values[f.name] = ImportedValue{
          zb::GatherOp::create(builder, loc, init.getType(), v, indices), {}};
      continue;
    }
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
  return zb::CrossEntropyOp::create(
             builder, loc, RankedTensorType::get({}, type.getElementType()),
             logits, targets)
      .getResult();
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
