//===- StableHLODispatch.cpp - One StableHLO op -> a fold or zb ops -------===//
//
// The import of one op of the source: which ops are known, the dispatch of
// each to a fold (all operands constant, StableHLOFolding.cpp) or to the
// import of its family on data (StableHLO*Ops.cpp, StableHLOLoops.cpp),
// the source's values and types in the target context, and the reading of
// op attributes (i64 arrays, dimension lists, the text of opaque
// #stablehlo attributes). See StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace zb::frontend::stablehlo_import;
using zb::frontend::HostTensor;

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
// The dispatch of each op
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
