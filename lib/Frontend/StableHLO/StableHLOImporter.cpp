//===- StableHLOImporter.cpp - JAX StableHLO text -> zb dialect -----------===//
//
// See include/zb/Frontend/StableHLO/StableHLOImporter.h for the contract and
// StableHLOImporterImpl.h for how the importer is split. This file parses the
// text, builds @main's signature from the source's arguments, walks the
// blocks (inlining calls) and dispatches each op to a fold or to the import
// of ops on data (StableHLOOps.cpp).
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Frontend/ImportedModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace zb::frontend::stablehlo_import;
using zb::frontend::HostTensor;
using zb::frontend::StableHLOImportOptions;

//===----------------------------------------------------------------------===//
// Opaque #stablehlo attribute text
//===----------------------------------------------------------------------===//

/// Parses `key = [1, 2]` (or `key = 3`) from `text`; an absent key is an
/// empty list. Returns failure on malformed text.
FailureOr<SmallVector<int64_t>>
zb::frontend::stablehlo_import::parseIntList(StringRef text, StringRef key) {
  SmallVector<int64_t> out;
  size_t pos = 0;
  while (true) {
    pos = text.find(key, pos);
    if (pos == StringRef::npos)
      return out;
    // Whole-word match: `lhs_batching_dimensions` must not match inside
    // `operand_batching_dims` etc.
    bool startOk =
        pos == 0 || !(isalnum(text[pos - 1]) || text[pos - 1] == '_');
    size_t end = pos + key.size();
    bool endOk =
        end >= text.size() || !(isalnum(text[end]) || text[end] == '_');
    if (startOk && endOk)
      break;
    pos = end;
  }
  StringRef rest = text.drop_front(pos + key.size()).ltrim();
  if (!rest.consume_front("="))
    return failure();
  rest = rest.ltrim();
  if (rest.consume_front("[")) {
    size_t close = rest.find(']');
    if (close == StringRef::npos)
      return failure();
    StringRef body = rest.take_front(close);
    SmallVector<StringRef> parts;
    body.split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef p : parts) {
      int64_t v;
      if (p.trim().getAsInteger(10, v))
        return failure();
      out.push_back(v);
    }
    return out;
  }
  size_t n = 0;
  while (n < rest.size() && (isdigit(rest[n]) || rest[n] == '-'))
    ++n;
  int64_t v;
  if (n == 0 || rest.take_front(n).getAsInteger(10, v))
    return failure();
  out.push_back(v);
  return out;
}

/// The text of an opaque dialect attribute (`#stablehlo.dot<...>` ->
/// "dot<...>", `#stablehlo<comparison_direction LT>` ->
/// "comparison_direction LT"), or of any other attribute as printed.
std::string zb::frontend::stablehlo_import::attrText(Attribute a) {
  if (auto o = dyn_cast<OpaqueAttr>(a))
    return o.getAttrData().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}

/// Checks that `text` has balanced <> and [] (a truncated attribute is
/// malformed).
bool zb::frontend::stablehlo_import::balanced(StringRef text) {
  int angle = 0, square = 0;
  for (char ch : text) {
    angle += ch == '<' ? 1 : ch == '>' ? -1 : 0;
    square += ch == '[' ? 1 : ch == ']' ? -1 : 0;
    if (angle < 0 || square < 0)
      return false;
  }
  return angle == 0 && square == 0;
}

/// "params['blocks'][0]['w']" -> "params.blocks.0.w"; other text unchanged.
std::string zb::frontend::stablehlo_import::pytreeName(StringRef info) {
  std::string out;
  StringRef s = info.trim();
  size_t head = s.find_first_of("[.");
  out = s.take_front(head).str();
  s = head == StringRef::npos ? StringRef() : s.drop_front(head);
  while (!s.empty()) {
    if (s.consume_front("['") || s.consume_front("[\"")) {
      size_t end = s.find_first_of("'\"");
      if (end == StringRef::npos || !s.drop_front(end + 1).starts_with("]"))
        return info.str();
      out += "." + s.take_front(end).str();
      s = s.drop_front(end + 2);
    } else if (s.consume_front("[")) {
      size_t end = s.find(']');
      if (end == StringRef::npos)
        return info.str();
      out += "." + s.take_front(end).str();
      s = s.drop_front(end + 1);
    } else if (s.consume_front(".")) {
      size_t end = s.find_first_of("[.");
      out += "." + s.take_front(end).str();
      s = end == StringRef::npos ? StringRef() : s.drop_front(end);
    } else {
      return info.str();
    }
  }
  return out;
}

/// The comparison direction of a stablehlo.compare ("LT", ...), or "".
std::string zb::frontend::stablehlo_import::compareDirection(Operation *op) {
  Attribute a = op->getAttr("comparison_direction");
  if (!a)
    return "";
  std::string text = attrText(a);
  StringRef t = StringRef(text).trim();
  t.consume_back(">");
  size_t sp = t.find_last_of(" <");
  return t.drop_front(sp == StringRef::npos ? 0 : sp + 1).trim().str();
}

//===----------------------------------------------------------------------===//
// Values and types
//===----------------------------------------------------------------------===//

Location Importer::convertLoc(Location l) {
  if (auto f = dyn_cast<FileLineColLoc>(l))
    return FileLineColLoc::get(ctx, f.getFilename().getValue(), f.getLine(),
                               f.getColumn());
  if (auto n = dyn_cast<NameLoc>(l))
    return convertLoc(n.getChildLoc());
  if (auto c = dyn_cast<CallSiteLoc>(l))
    return convertLoc(c.getCallee());
  if (auto f = dyn_cast<FusedLoc>(l))
    if (!f.getLocations().empty())
      return convertLoc(f.getLocations().front());
  return FileLineColLoc::get(ctx, fileName, 0, 0);
}

FailureOr<Type> Importer::convertElem(Type t) {
  if (t.isF32())
    return Type(Float32Type::get(ctx));
  if (t.isF64())
    return Type(Float64Type::get(ctx));
  if (t.isF16())
    return Type(Float16Type::get(ctx));
  if (t.isBF16())
    return Type(BFloat16Type::get(ctx));
  if (auto i = dyn_cast<IntegerType>(t))
    return Type(IntegerType::get(ctx, i.getWidth()));
  return failure();
}

/// "float64", "float16", "bfloat16" for a float element type zb does not
/// compute in (zb trains in float32: parameters, gradients, optimizer state
/// and the runtime's buffers); nullopt otherwise.
static std::optional<StringRef> unsupportedFloat(Type t) {
  auto r = dyn_cast<ShapedType>(t);
  Type e = r ? r.getElementType() : t;
  if (e.isF64())
    return StringRef("float64");
  if (e.isF16())
    return StringRef("float16");
  if (e.isBF16())
    return StringRef("bfloat16");
  return std::nullopt;
}

/// The advice of every float-type error: float64 comes from
/// jax_enable_x64, float16/bfloat16 from half-precision parameters or casts.
static std::string float32Advice(StringRef type) {
  if (type == "float64")
    return ": zb trains in float32 only; export the model in float32 (with "
           "JAX: leave jax_enable_x64 off and keep parameters float32; with "
           "PyTorch: model.float())";
  return ": zb trains in float32 only; export with float32 parameters "
         "(params = jax.tree.map(lambda x: x.astype(jnp.float32), params)) "
         "and no casts to " +
         type.str() + " in the loss";
}

FailureOr<RankedTensorType> Importer::convertType(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || !r.hasStaticShape())
    return failure();
  FailureOr<Type> e = convertElem(r.getElementType());
  if (failed(e))
    return failure();
  return RankedTensorType::get(r.getShape(), *e);
}

FailureOr<Val> Importer::get(Value v) {
  // Innermost scope first: a while's regions use values defined around it
  // (a callee's body cannot, so the outer scopes never hold its values).
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(v);
    if (it != scope.end())
      return it->second;
  }
  emitError(convertLoc(v.getLoc())) << "value used before definition";
  return failure();
}

FailureOr<Value> Importer::materialize(const Val &v) {
  if (v.unsupported) {
    error(v.unsupported) << "integer arithmetic on data (batch inputs) is "
                            "not supported by zb";
    return failure();
  }
  if (v.v)
    return v.v;
  auto it = materialized.find(v.c.get());
  if (it != materialized.end())
    return it->second;
  DenseElementsAttr attr = v.c->toAttr();
  Value c = zb::ConstantOp::create(b, loc, attr.getType(), attr);
  materialized[v.c.get()] = c;
  keepAlive.push_back(v.c); // the key must not be reused by a new constant
  return c;
}

/// The value as a floating-point tensor (integers converted with zb.cast;
/// a constant is materialised with the float element type directly).
FailureOr<Value> Importer::asFloat(const Val &v) {
  Type f32 = Float32Type::get(ctx);
  if (!v.v && v.c && !v.unsupported) {
    if (v.c->isFloat())
      return materialize(v);
    DenseElementsAttr attr = v.c->toAttr(f32);
    return Value(zb::ConstantOp::create(b, loc, attr.getType(), attr));
  }
  FailureOr<Value> x = materialize(v);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (isa<FloatType>(t.getElementType()))
    return *x;
  return zb::ZBBuilder(b, loc).cast(*x, f32);
}

/// The value as an integer index tensor (i32 or i64).
FailureOr<Value> Importer::asIndex(const Val &v) {
  FailureOr<Value> x = materialize(v);
  if (failed(x))
    return failure();
  auto et = cast<RankedTensorType>(x->getType()).getElementType();
  if (!et.isInteger(32) && !et.isInteger(64)) {
    error(current) << "indices must be i32 or i64 data, not " << x->getType();
    return failure();
  }
  return *x;
}

FailureOr<SmallVector<int64_t>> Importer::i64Array(Operation *op,
                                                   StringRef name) {
  Attribute a = op->getAttr(name);
  if (auto d = dyn_cast_or_null<DenseI64ArrayAttr>(a))
    return SmallVector<int64_t>(d.asArrayRef());
  if (auto d = dyn_cast_or_null<DenseIntElementsAttr>(a)) {
    SmallVector<int64_t> out;
    for (const APInt &v : d.getValues<APInt>())
      out.push_back(v.getSExtValue());
    return out;
  }
  if (auto i = dyn_cast_or_null<IntegerAttr>(a))
    return SmallVector<int64_t>{i.getInt()};
  error(op) << "missing or malformed attribute '" << name << "'";
  return failure();
}

FailureOr<SmallVector<int64_t>>
Importer::dimensionsAttr(Operation *op, StringRef name, int64_t rank,
                         bool permutation) {
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, name);
  if (failed(dims))
    return failure();
  if (permutation && (int64_t)dims->size() != rank)
    return error(op) << name << " does not match the operand rank";
  SmallVector<bool> seen(rank, false);
  for (int64_t d : *dims) {
    if (d >= 0 && d < rank && !seen[d]) {
      seen[d] = true;
      continue;
    }
    if (permutation) {
      InFlightDiagnostic diag = error(op) << name << " [";
      llvm::interleaveComma(*dims, diag);
      return diag << "] is not a permutation of 0.." << rank - 1;
    }
    return error(op) << name << ": " << d
                     << (d < 0 || d >= rank ? " is out of range for rank "
                                            : " repeats, rank ")
                     << rank;
  }
  return dims;
}

//===----------------------------------------------------------------------===//
// The walk over blocks and calls, and the dispatch of each op
//===----------------------------------------------------------------------===//

LogicalResult Importer::badComparison(Operation *op) {
  return error(op) << "cannot parse comparison_direction '"
                   << (op->getAttr("comparison_direction")
                           ? attrText(op->getAttr("comparison_direction"))
                           : std::string("<missing>"))
                   << "'";
}

/// The ops the importer knows: on data or on constants.
static bool isSupported(StringRef name) {
  static const char *const kSupported[] = {
      "stablehlo.iota", "stablehlo.add", "stablehlo.subtract",
      "stablehlo.multiply", "stablehlo.divide", "stablehlo.maximum",
      "stablehlo.minimum", "stablehlo.power", "stablehlo.negate",
      "stablehlo.exponential", "stablehlo.exponential_minus_one",
      "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.tanh",
      "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.logistic", "chlo.erf",
      "chlo.erfc", "chlo.square", "stablehlo.abs", "stablehlo.is_finite",
      "stablehlo.sign",
      "stablehlo.compare", "stablehlo.select",
      "stablehlo.convert", "stablehlo.broadcast_in_dim", "stablehlo.reshape",
      "stablehlo.transpose", "stablehlo.slice", "stablehlo.concatenate",
      "stablehlo.dot_general", "stablehlo.reduce", "stablehlo.gather",
      "stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not",
      "stablehlo.clamp", "stablehlo.dynamic_slice",
      "stablehlo.dynamic_update_slice",
      // Constant operands only:
      "stablehlo.cosine", "stablehlo.sine", "stablehlo.floor",
      "stablehlo.ceil", "stablehlo.remainder", "stablehlo.reverse"};
  return llvm::is_contained(kSupported, name);
}

/// The ops folded only (their operands must be constants).
static bool isFoldOnly(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"stablehlo.iota", "stablehlo.cosine", "stablehlo.sine",
              "stablehlo.floor", "stablehlo.ceil"},
             true)
      .Cases({"stablehlo.remainder", "stablehlo.reverse"}, true)
      .Default(false);
}

/// func.call of a private function: its body imported here (inlined).
LogicalResult Importer::importCall(Operation *op, ArrayRef<Val> in, int depth) {
  auto callee = op->getAttrOfType<FlatSymbolRefAttr>("callee");
  auto fn = callee ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                         op, callee.getAttr())
                   : func::FuncOp();
  if (!fn || fn.isExternal())
    return error(op) << "unknown or external callee";
  if (fn.getNumArguments() != in.size())
    return error(op) << "wrong number of call operands";
  SmallVector<Val> results;
  if (failed(importBlock(fn.getBody().front(), in, results, depth + 1)))
    return failure();
  if (results.size() != op->getNumResults())
    return error(op) << "wrong number of call results";
  for (auto [r, v] : llvm::zip_equal(op->getResults(), results))
    scopes.back()[r] = v;
  return success();
}

/// stablehlo.constant: a HostTensor of the result's type.
LogicalResult Importer::importConstant(Operation *op, RankedTensorType type) {
  auto value = dyn_cast_or_null<DenseElementsAttr>(op->getAttr("value"));
  if (!value)
    return error(op) << "missing or non-dense 'value'";
  if (!isa<FloatType, IntegerType>(value.getElementType()))
    return error(op) << "unsupported constant element type";
  auto c = std::make_shared<HostTensor>(HostTensor::fromAttr(value));
  // The values of the source context, shape and element type of the target.
  c->shape.assign(type.getShape().begin(), type.getShape().end());
  c->type = type.getElementType();
  if ((int64_t)c->data.size() != c->numElements())
    return error(op) << "constant size does not match its type";
  Val out;
  out.type = type;
  out.c = c;
  scopes.back()[op->getResult(0)] = out;
  return success();
}

/// An op with an operand that is not a constant: the zb ops computing it.
LogicalResult Importer::importOnData(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  StringRef name = op->getName().getStringRef();
  if (name == "stablehlo.dot_general")
    return importDotGeneral(op, in, out);
  if (name == "stablehlo.reduce")
    return importReduce(op, in, out);
  if (name == "stablehlo.gather")
    return importGather(op, in, out);
  if (name == "stablehlo.dynamic_slice")
    return importDynamicSlice(op, in, out);
  if (name == "stablehlo.dynamic_update_slice")
    return importDynamicUpdateSlice(op, in, out);
  if (name == "stablehlo.broadcast_in_dim")
    return importBroadcastInDim(op, in, out);
  if (llvm::StringSwitch<bool>(name)
          .Cases({"stablehlo.reshape", "stablehlo.transpose", "stablehlo.slice",
                  "stablehlo.concatenate"},
                 true)
          .Default(false))
    return importShapeOp(op, in, out);
  if (isFoldOnly(name))
    return emitError(loc) << "unsupported StableHLO op '" << name
                          << "' on data (only constant operands are folded)";
  return importElementwise(op, in, out);
}

LogicalResult Importer::importOp(Operation *op, int depth) {
  StringRef name = op->getName().getStringRef();
  current = op;
  loc = convertLoc(op->getLoc());
  SmallVector<Val> in;
  for (Value v : op->getOperands()) {
    FailureOr<Val> x = get(v);
    if (failed(x))
      return failure();
    in.push_back(*x);
  }
  if (name == "func.call")
    return importCall(op, in, depth);
  if (name == "stablehlo.while")
    return importWhile(op, in, depth);

  if (name == "stablehlo.reduce" && op->getNumResults() != 1)
    return error(op) << "reductions of several operands together (such as "
                        "jnp.argmax / argmin) are not supported";
  if (op->getNumResults() != 1)
    return error(op) << "unsupported StableHLO op (expected one result)";
  if (std::optional<StringRef> f =
          unsupportedFloat(op->getResult(0).getType()))
    return emitError(loc) << "'" << name << "' computes in " << *f << " ("
                          << op->getResult(0).getType() << ")"
                          << float32Advice(*f);
  FailureOr<RankedTensorType> type = convertType(op->getResult(0).getType());
  if (failed(type))
    return emitError(loc) << "unsupported StableHLO op '" << name
                          << "' (result type " << op->getResult(0).getType()
                          << " is not a static tensor)";
  if (name == "stablehlo.constant")
    return importConstant(op, *type);
  if (!isSupported(name))
    return emitError(loc) << "unsupported StableHLO op '" << name << "'";

  Val out;
  out.type = *type;
  bool allConst =
      llvm::all_of(in, [](const Val &v) { return v.c && !v.unsupported; });
  if (allConst && name != "stablehlo.dot_general") {
    // fold() reports its errors.
    if (failed(fold(op, in, out)))
      return failure();
    scopes.back()[op->getResult(0)] = out;
    return success();
  }
  if (failed(importOnData(op, in, out)))
    return failure();
  if (out.v && !out.unsupported) {
    // zb ops infer their result types; check against the source.
    auto got = cast<RankedTensorType>(out.v.getType());
    if (got.getShape() != out.type.getShape())
      return error(op) << "internal error: imported shape " << got
                       << " differs from " << out.type;
  }
  scopes.back()[op->getResult(0)] = out;
  return success();
}

//===----------------------------------------------------------------------===//
// @main
//===----------------------------------------------------------------------===//

/// The type of the loss @main returns: one scalar float.
FailureOr<RankedTensorType> Importer::mainLossType(func::FuncOp main) {
  FunctionType ft = main.getFunctionType();
  if (ft.getNumResults() != 1) {
    emitError(convertLoc(main.getLoc()))
        << "@main must return one value, the loss (it returns "
        << ft.getNumResults() << ")";
    return failure();
  }
  if (std::optional<StringRef> f = unsupportedFloat(ft.getResult(0))) {
    emitError(convertLoc(main.getLoc()))
        << "@main returns a " << *f << " loss (" << ft.getResult(0) << ")"
        << float32Advice(*f);
    return failure();
  }
  FailureOr<RankedTensorType> lossType = convertType(ft.getResult(0));
  if (failed(lossType) || lossType->getNumElements() != 1 ||
      !isa<FloatType>(lossType->getElementType())) {
    emitError(convertLoc(main.getLoc()))
        << "@main must return a scalar floating-point loss, not "
        << ft.getResult(0);
    return failure();
  }
  return lossType;
}

/// The arguments of @main: names, types, and roles (StableHLOImporter.h).
FailureOr<SmallVector<Importer::Arg>>
Importer::mainArguments(func::FuncOp main) {
  FunctionType ft = main.getFunctionType();
  SmallVector<Arg> args;
  llvm::StringSet<> seen;
  for (unsigned i = 0; i < ft.getNumInputs(); ++i) {
    FailureOr<RankedTensorType> t = convertType(ft.getInput(i));
    if (failed(t)) {
      emitError(convertLoc(main.getLoc()))
          << "argument #" << i << " has unsupported type " << ft.getInput(i);
      return failure();
    }
    std::string name = "arg" + std::to_string(i);
    if (auto info = main.getArgAttrOfType<StringAttr>(i, "jax.arg_info"))
      name = pytreeName(info.getValue());
    else if (auto zn =
                 main.getArgAttrOfType<StringAttr>(i, zb::frontend::kNameAttr))
      name = zn.getValue().str();
    if (std::optional<StringRef> f = unsupportedFloat(*t)) {
      emitError(convertLoc(main.getLoc()))
          << "argument '" << name << "' is " << *f << " (" << ft.getInput(i)
          << ")" << float32Advice(*f);
      return failure();
    }
    if (!seen.insert(name).second) {
      emitError(convertLoc(main.getLoc()))
          << "two arguments are named '" << name << "'";
      return failure();
    }
    bool data = !isa<FloatType>(t->getElementType());
    for (const std::string &d : options.dataArgs)
      data |= name == d ||
              (StringRef(d).ends_with(".") && StringRef(name).starts_with(d));
    args.push_back({name, *t, !data});
  }
  // A --data-args name that matches no argument is a typo, not a no-op.
  for (const std::string &d : options.dataArgs) {
    bool matched = llvm::any_of(args, [&](const Arg &a) {
      return a.name == d ||
             (StringRef(d).ends_with(".") && StringRef(a.name).starts_with(d));
    });
    if (!matched) {
      std::string names;
      for (const Arg &a : args)
        names += (names.empty() ? "" : ", ") + a.name;
      emitError(convertLoc(main.getLoc()))
          << "--data-args '" << d << "' names no argument of @main (its "
          << "arguments: " << names << ")";
      return failure();
    }
  }
  return args;
}

/// Keeps the source's zb.param_values for the parameters (in `order`), each
/// checked against its argument.
LogicalResult Importer::addParamValues(ModuleOp module, ArrayRef<Arg> args,
                                       ArrayRef<unsigned> order) {
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  auto values =
      source->getAttrOfType<DictionaryAttr>(zb::frontend::kParamValuesAttr);
  if (!values)
    return success();
  SmallVector<NamedAttribute> kept;
  for (unsigned i : order) {
    if (!args[i].param)
      continue;
    auto v = dyn_cast_or_null<DenseElementsAttr>(values.get(args[i].name));
    if (!v) {
      emitError(fileLoc) << "zb.param_values has no dense value for "
                            "parameter '"
                         << args[i].name << "'";
      return failure();
    }
    if (v.getType().getShape() != args[i].type.getShape() ||
        !v.getElementType().isF32() || !args[i].type.getElementType().isF32()) {
      emitError(fileLoc) << "zb.param_values['" << args[i].name
                         << "'] has type " << v.getType() << ", the argument "
                         << args[i].type;
      return failure();
    }
    auto attr =
        DenseElementsAttr::getFromRawBuffer(args[i].type, v.getRawData());
    kept.push_back(b.getNamedAttr(args[i].name, attr));
  }
  module->setAttr(zb::frontend::kParamValuesAttr, b.getDictionaryAttr(kept));
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  auto main = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      source, StringAttr::get(source.getContext(), "main"));
  if (!main || main.isExternal()) {
    emitError(fileLoc) << "no function @main in the StableHLO module";
    return nullptr;
  }
  FailureOr<RankedTensorType> lossType = mainLossType(main);
  if (failed(lossType))
    return nullptr;
  FailureOr<SmallVector<Arg>> args = mainArguments(main);
  if (failed(args))
    return nullptr;

  // The data arguments first, then the parameters.
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < args->size(); ++i)
    if (!(*args)[i].param)
      order.push_back(i);
  for (unsigned i = 0; i < args->size(); ++i)
    if ((*args)[i].param)
      order.push_back(i);
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  for (unsigned i : order) {
    argTypes.push_back((*args)[i].type);
    SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
        zb::frontend::kNameAttr, b.getStringAttr((*args)[i].name))};
    if ((*args)[i].param)
      attrs.push_back(b.getNamedAttr(zb::kParamAttr, b.getUnitAttr()));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
  }
  auto func = func::FuncOp::create(
      b, fileLoc, zb::frontend::kMainFuncName,
      b.getFunctionType(
          argTypes, {RankedTensorType::get({}, lossType->getElementType())}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  SmallVector<Val> argVals(args->size());
  for (auto [pos, i] : llvm::enumerate(order)) {
    BlockArgument a = entry->getArgument(pos);
    a.setLoc(NameLoc::get(b.getStringAttr((*args)[i].name), fileLoc));
    argVals[i].v = a;
    argVals[i].type = (*args)[i].type;
  }
  if (failed(addParamValues(*module, *args, order)))
    return nullptr;

  b.setInsertionPointToEnd(entry);
  SmallVector<Val> results;
  if (failed(importBlock(main.getBody().front(), argVals, results, 0)))
    return nullptr;
  if (results.size() != 1) {
    emitError(fileLoc) << "@main must return the loss";
    return nullptr;
  }
  loc = fileLoc;
  FailureOr<Value> loss = materialize(results[0]);
  if (failed(loss))
    return nullptr;
  zb::ZBBuilder zbb(b, loc);
  Value l = zbb.reshape(*loss, {});
  func::ReturnOp::create(b, loc, l);
  // Inconsistent source types (the unregistered ops are not verified by the
  // parser) surface here as zb verifier errors at the op's location.
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

LogicalResult Importer::importBlock(Block &block, ArrayRef<Val> args,
                                    SmallVectorImpl<Val> &results, int depth) {
  if (depth > 64)
    return emitError(convertLoc(block.getParentOp()->getLoc()))
           << "calls nested deeper than 64 (recursion?)";
  scopes.emplace_back();
  for (auto [arg, v] : llvm::zip_equal(block.getArguments(), args))
    scopes.back()[arg] = v;
  for (Operation &op : block) {
    StringRef name = op.getName().getStringRef();
    if (name == "func.return" || name == "stablehlo.return") {
      for (Value v : op.getOperands()) {
        FailureOr<Val> r = get(v);
        if (failed(r))
          return failure();
        results.push_back(*r);
      }
      scopes.pop_back();
      return success();
    }
    if (failed(importOp(&op, depth)))
      return failure();
  }
  return emitError(convertLoc(block.getParentOp()->getLoc()))
         << "function body without return";
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
zb::frontend::importStableHLO(llvm::MemoryBufferRef buffer, MLIRContext *ctx,
                              const StableHLOImportOptions &options) {
  ctx->loadDialect<func::FuncDialect, zb::ZBDialect>();
  StringRef fileName = buffer.getBufferIdentifier();

  // A binary export: say what it is and how to get text.
  if (std::optional<StringRef> kind = serializedKind(buffer.getBuffer())) {
    emitError(FileLineColLoc::get(ctx, fileName, 0, 0))
        << (*kind == "jax.export"
                ? "a serialized jax.export artifact (the flatbuffer of "
                  "Exported.serialize()), not StableHLO text"
                : "MLIR bytecode (a StableHLO portable artifact), not "
                  "StableHLO text")
        << "; zb reads the generic text form: convert it with `python3 -m "
           "zb.export to-generic "
        << fileName << " OUT.mlir` (uses your jaxlib)";
    return nullptr;
  }

  // The custom (pretty) op form that jax's as_text() prints needs the
  // StableHLO dialect's own parser, which zb does not link: say how to
  // convert it instead of failing on the first op.
  if (std::optional<unsigned> line = customFormLine(buffer.getBuffer())) {
    emitError(FileLineColLoc::get(ctx, fileName, *line, 0))
        << "StableHLO in the custom op form (jax's lower(...).as_text()); "
           "zb reads the generic form: convert it with `python3 -m "
           "zb.export to-generic "
        << fileName
        << " OUT.mlir` (uses your jaxlib) or export with "
           "zb.export.jax_to_stablehlo";
    return nullptr;
  }

  MLIRContext parseCtx(MLIRContext::Threading::DISABLED);
  parseCtx.allowUnregisteredDialects();
  parseCtx.loadDialect<func::FuncDialect>();
  // Forward the parser's diagnostics to the caller's context.
  auto forwardLoc = [&](Location l) -> Location {
    if (auto f = dyn_cast<FileLineColLoc>(l))
      return FileLineColLoc::get(ctx, f.getFilename().getValue(), f.getLine(),
                                 f.getColumn());
    return FileLineColLoc::get(ctx, fileName, 0, 0);
  };
  ScopedDiagnosticHandler handler(&parseCtx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      emitError(forwardLoc(d.getLocation())) << d.str();
    return success();
  });

  llvm::SourceMgr sourceMgr;
  // A null-terminated copy: MLIR's lexer reads up to the terminator, and a
  // caller's buffer (a slice of a larger one, fuzzer input) may have none.
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(buffer.getBuffer(),
                                           buffer.getBufferIdentifier()),
      llvm::SMLoc());
  ParserConfig config(&parseCtx);
  OwningOpRef<ModuleOp> source = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!source) {
    emitError(FileLineColLoc::get(ctx, fileName, 0, 0))
        << "failed to parse StableHLO module '" << fileName << "'";
    return nullptr;
  }
  Importer importer(ctx, *source, fileName, options);
  return importer.run();
}

OwningOpRef<ModuleOp>
zb::frontend::importStableHLOFile(StringRef path, MLIRContext *ctx,
                                  const StableHLOImportOptions &options) {
  auto file = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!file) {
    ctx->loadDialect<func::FuncDialect, zb::ZBDialect>();
    emitError(FileLineColLoc::get(ctx, path, 0, 0))
        << "cannot read '" << path << "': " << file.getError().message();
    return nullptr;
  }
  return importStableHLO((*file)->getMemBufferRef(), ctx, options);
}

std::optional<unsigned> zb::frontend::customFormLine(StringRef text) {
  unsigned line = 1;
  for (StringRef rest = text; !rest.empty();) {
    auto [l, tail] = rest.split('\n');
    // `%0 = stablehlo.add %a, %b` (custom) vs `"stablehlo.add"(...)`.
    size_t eq = l.find("= stablehlo.");
    if (eq != StringRef::npos && l.find('"') == StringRef::npos)
      return line;
    rest = tail;
    ++line;
  }
  return std::nullopt;
}

bool zb::frontend::looksLikeStableHLO(StringRef text) {
  return serializedKind(text) || text.contains("\"stablehlo.") ||
         text.contains(" stablehlo.");
}

std::optional<StringRef> zb::frontend::serializedKind(StringRef bytes) {
  static constexpr StringLiteral kBytecodeMagic("ML\xEFR");
  if (bytes.starts_with(kBytecodeMagic))
    return StringRef("bytecode");
  // A flatbuffer starts with the 4-byte offset of its root table: binary
  // (NUL bytes) from the first bytes on, which MLIR text never is. The
  // Exported table holds the module as a portable artifact (bytecode).
  if (bytes.size() >= 8 && bytes.take_front(64).contains('\0') &&
      bytes.contains(kBytecodeMagic))
    return StringRef("jax.export");
  return std::nullopt;
}

void zb::frontend::registerStableHLOImportTranslation() {
  static llvm::cl::list<std::string> dataArgs(
      "data-args",
      llvm::cl::desc("--import-stablehlo: floating-point arguments that are "
                     "batch inputs, not parameters (names, or prefixes "
                     "ending in '.'; integer arguments always are)"),
      llvm::cl::CommaSeparated);
  static bool registered = [] {
    registerImportTranslation(
        "import-stablehlo",
        "import a JAX StableHLO loss (generic op form text) into the zb "
        "dialect",
        [](llvm::MemoryBufferRef buffer, MLIRContext *ctx) {
          StableHLOImportOptions options;
          options.dataArgs.assign(dataArgs.begin(), dataArgs.end());
          return importStableHLO(buffer, ctx, options);
        });
    return true;
  }();
  (void)registered;
}
