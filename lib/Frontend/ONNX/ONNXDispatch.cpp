//===- ONNXDispatch.cpp - ONNX node -> its handler, fold or function -----===//
//
// The import of one node: the op handler table (by op type and opset
// version, ONNXImporterImpl.h), the checks that the op exists at the
// model's opset, the choice between a constant fold and a handler, the
// definition of the node's outputs, and the inlining of calls of the
// model's local functions. See ONNXImporterImpl.h.
//
// This file is compiled with exceptions (protobuf/onnx headers need them);
// nothing here lets one escape into MLIR code.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "llvm/ADT/STLExtras.h"

#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"

#include <climits>
#include <string>

using namespace mlir;
using namespace zb::frontend::onnx_import;

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
    populateLogicHandlers(t);
    populateIndexHandlers(t);
    return t;
  }();
  return table;
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
