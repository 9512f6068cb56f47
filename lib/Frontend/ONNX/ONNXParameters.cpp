//===- ONNXParameters.cpp - ONNX initializers -> parameters of @main ------===//
//
// Which initializers of the graph are trained parameters, which are buffers
// and which are constants folded at import: what torch.onnx.export records
// about them (metadata_props, ExportInfo), and the initializers its
// optimizer computed from a parameter (a transpose or reshape of it), turned
// back into that parameter. See ONNXImporterImpl.h.
//
// This file is compiled with exceptions (protobuf/onnx headers need them);
// nothing here lets one escape into MLIR code.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

#include "onnx/onnx_pb.h"

#include <algorithm>

using namespace mlir;
using namespace zb::frontend::onnx_import;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;
using zb::frontend::transposeHost;

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
      // resolved below; computed: other sources than the parameter
      params.push_back({fromParams.front(), {}, &t,
                        sources->second.size() > fromParams.size()});
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
    if (it == direct.end() && !linear && value.getType().getRank() >= 2) {
      // A lookup of rows of P folded into a constant (learned position
      // embeddings: wpe(arange(T)) -> [1, T, d], OPT's [B, T, d]): P is the
      // distinct rows, in order of first use, and the initializer a
      // zb.gather of them, so that a row read twice (every sequence of the
      // batch) gets one gradient, the sum, as in the module.
      HostTensor h = HostTensor::fromAttr(value);
      int64_t d = h.shape.back(), n = d ? h.numElements() / d : 0;
      std::map<std::vector<double>, int64_t> seen;
      HostTensor rows, table;
      rows.type = builder.getI64Type();
      rows.shape.assign(h.shape.begin(), h.shape.end() - 1);
      table.type = h.type;
      for (int64_t r = 0; r < n; ++r) {
        std::vector<double> row(h.data.begin() + r * d,
                                h.data.begin() + (r + 1) * d);
        auto [pos, fresh] = seen.try_emplace(row, int64_t(seen.size()));
        if (fresh)
          table.data.insert(table.data.end(), row.begin(), row.end());
        rows.data.push_back(double(pos->second));
      }
      table.shape = {int64_t(seen.size()), d};
      if (n > 0 && int64_t(seen.size()) < n) {
        emitWarning(where)
            << "initializer '" << name << "' " << formatShape(h.shape)
            << " holds rows of parameter '" << p.name
            << "' that the exporter's optimizer gathered (" << seen.size()
            << " distinct rows of size " << d
            << "): zb trains those rows as '" << p.name << "' "
            << formatShape(table.shape)
            << ", not the module's whole table (export with "
               "torch.onnx.export(..., optimize=False) to train and save it)";
        DenseElementsAttr paramValue = table.toAttr(value.getElementType());
        direct[p.name] = paramValue;
        kept.push_back({p.name, paramValue, p.tensor});
        FoldedInit f{name.str(), p.name, {}, std::move(rows)};
        foldedInits.push_back(std::move(f));
        continue;
      }
    }
    if (it == direct.end()) {
      // The first initializer folded from P: P itself.
      if (p.computed)
        emitWarning(where)
            << "initializer '" << name << "' " << formatShape(
                   value.getType().getShape())
            << " was computed by the exporter's optimizer from parameter '"
            << p.name
            << "' and constants: zb trains it as '" << p.name
            << "', but its values are not the module's (the weights zb "
               "saves do not load back into it; export with "
               "torch.onnx.export(..., optimize=False) to train and save '"
            << p.name << "' itself)";
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

