//===- StableHLODispatch.cpp - One StableHLO op -> a fold or zb ops -------===//
//
// The import of one op of the source: the op table (every op the importer
// knows, one row each: StableHLOImporterImpl.h), the lookup of the op in it
// and the choice between its fold (all operands constant,
// StableHLOFolding.cpp) and its import on data (StableHLO*Ops.cpp,
// StableHLOLoops.cpp); stablehlo.constant; the source's values and types in
// the target context, and the reading of op attributes (i64 arrays,
// dimension lists, the text of opaque #stablehlo attributes). See
// StableHLOImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "StableHLOImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "llvm/ADT/STLExtras.h"

#include <cassert>

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

LogicalResult Importer::badComparison(Operation *op) {
  return error(op) << "cannot parse comparison_direction '"
                   << (op->getAttr("comparison_direction")
                           ? attrText(op->getAttr("comparison_direction"))
                           : std::string("<missing>"))
                   << "'";
}

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

void OpTable::add(ArrayRef<OpDef> defs) {
  for (const OpDef &def : defs) {
    [[maybe_unused]] bool inserted = ops.try_emplace(def.name, &def).second;
    assert(inserted && "an op has two rows in the op table");
  }
}

const OpDef *OpTable::lookup(StringRef name) const {
  auto it = ops.find(name);
  return it == ops.end() ? nullptr : it->second;
}

const OpTable &zb::frontend::stablehlo_import::opTable() {
  static const OpTable table = [] {
    using I = Importer;
    // The ops of the walk itself.
    static const OpDef walkOps[] = {
        {"stablehlo.constant", &I::importConstantWithOperands,
         &I::importConstant},
        {"func.call", nullptr, nullptr, nullptr, nullptr, &I::importCall},
    };
    OpTable t;
    t.add(walkOps);
    populateElementwiseOps(t);
    populateShapeOps(t);
    populateMatMulOps(t);
    populateReductionOps(t);
    populateLoopOps(t);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// The dispatch of each op
//===----------------------------------------------------------------------===//

/// stablehlo.constant: a HostTensor of the result's type (no operands, so
/// it is imported as a fold).
FailureOr<HostTensor> Importer::importConstant(const OpDef &, Operation *op,
                                               ArrayRef<Val>,
                                               RankedTensorType type) {
  auto value = dyn_cast_or_null<DenseElementsAttr>(op->getAttr("value"));
  if (!value)
    return error(op) << "missing or non-dense 'value'";
  if (!isa<FloatType, IntegerType>(value.getElementType()))
    return error(op) << "unsupported constant element type";
  HostTensor c = HostTensor::fromAttr(value);
  // The values of the source context, shape and element type of the target.
  c.shape.assign(type.getShape().begin(), type.getShape().end());
  c.type = type.getElementType();
  if ((int64_t)c.data.size() != c.numElements())
    return error(op) << "constant size does not match its type";
  return c;
}

/// A stablehlo.constant given operands (malformed generic text): they are
/// ignored, as by importConstant.
LogicalResult Importer::importConstantWithOperands(const OpDef &def,
                                                   Operation *op,
                                                   ArrayRef<Val> in, Val &out) {
  FailureOr<HostTensor> c = importConstant(def, op, in, out.type);
  if (failed(c))
    return failure();
  out.c = std::make_shared<HostTensor>(std::move(*c));
  return success();
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
  const OpDef *def = opTable().lookup(name);
  if (def && def->control)
    return (this->*def->control)(op, in, depth);

  if (op->getNumResults() != 1) {
    if (def && !def->severalResults.empty())
      return error(op) << def->severalResults;
    return error(op) << "unsupported StableHLO op (expected one result)";
  }
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
  if (!def)
    return emitError(loc) << "unsupported StableHLO op '" << name << "'";

  Val out;
  out.type = *type;
  bool allConst =
      llvm::all_of(in, [](const Val &v) { return v.c && !v.unsupported; });
  if (allConst && def->fold) {
    // fold() reports its errors.
    if (failed(fold(*def, op, in, out)))
      return failure();
    scopes.back()[op->getResult(0)] = out;
    return success();
  }
  if (!def->onData)
    return emitError(loc) << "unsupported StableHLO op '" << name
                          << "' on data (only constant operands are folded)";
  if (failed((this->*def->onData)(*def, op, in, out)))
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
