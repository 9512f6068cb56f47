//===- StableHLOImporter.cpp - JAX StableHLO text -> zb dialect -----------===//
//
// See include/zb/Frontend/StableHLO/StableHLOImporter.h for the contract.
//
// The text is parsed in a private MLIRContext that allows unregistered
// dialects (stablehlo/chlo ops are then generic operations, `#stablehlo.*`
// attributes OpaqueAttr). The importer walks @main in order and maps every
// source value to either a compile-time constant (`HostTensor`, folded in
// double precision and rounded to the element type after every op, like JAX's
// own arithmetic) or a zb value in the target context. Private functions are
// imported at each call site with a fresh value map (inlining).
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/StableHLO/StableHLOImporter.h"

#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Frontend/HostTensor.h"
#include "zb/Frontend/ImportedModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using llvm::SmallVector;
using llvm::StringRef;
using zb::frontend::formatShape;
using zb::frontend::HostTensor;

namespace {

//===----------------------------------------------------------------------===//
// Compile-time constants
//===----------------------------------------------------------------------===//

/// A constant tensor (zb/Frontend/HostTensor.h), shared so that its address
/// keys the cache of materialized zb.constant ops.
using ConstPtr = std::shared_ptr<HostTensor>;

/// A value of the source program during import.
struct Val {
  Value v;    // the zb value (target context), or null for a constant
  ConstPtr c; // the folded constant, when known
  RankedTensorType type; // the source type (target context)
  /// An integer computation on data that zb cannot express; an error when
  /// the value is used other than as recognised by a pattern.
  Operation *unsupported = nullptr;
};

//===----------------------------------------------------------------------===//
// Opaque #stablehlo attribute text
//===----------------------------------------------------------------------===//

/// Parses `key = [1, 2]` (or `key = 3`) from `text`; an absent key is an
/// empty list. Returns failure on malformed text.
FailureOr<SmallVector<int64_t>> parseIntList(StringRef text, StringRef key) {
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
std::string attrText(Attribute a) {
  if (auto o = dyn_cast<OpaqueAttr>(a))
    return o.getAttrData().str();
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}

/// Checks that `text` has balanced <> and [] (a truncated attribute is
/// malformed).
bool balanced(StringRef text) {
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
std::string pytreeName(StringRef info) {
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

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

class Importer {
public:
  Importer(MLIRContext *ctx, ModuleOp source, StringRef fileName,
           const zb::frontend::StableHLOImportOptions &options)
      : ctx(ctx), source(source), fileName(fileName), options(options), b(ctx) {
  }

  OwningOpRef<ModuleOp> run();

private:
  MLIRContext *ctx;
  ModuleOp source;
  StringRef fileName;
  const zb::frontend::StableHLOImportOptions &options;
  OpBuilder b;
  /// One value map per function being imported (call stack).
  SmallVector<llvm::DenseMap<Value, Val>> scopes;
  llvm::DenseMap<HostTensor *, Value> materialized;
  SmallVector<ConstPtr> keepAlive;
  Location loc = UnknownLoc::get(ctx);
  Operation *current = nullptr;

  Location convertLoc(Location l);
  InFlightDiagnostic error(Operation *op) {
    return emitError(convertLoc(op->getLoc()))
           << "'" << op->getName().getStringRef() << "': ";
  }
  FailureOr<Type> convertElem(Type t);
  FailureOr<RankedTensorType> convertType(Type t);

  FailureOr<Val> get(Value v);
  FailureOr<Value> materialize(const Val &v);
  FailureOr<Value> asFloat(const Val &v);
  FailureOr<Value> asIndex(const Val &v);

  LogicalResult importBlock(Block &block, ArrayRef<Val> args,
                            SmallVectorImpl<Val> &results, int depth);
  LogicalResult importOp(Operation *op, int depth);
  LogicalResult fold(Operation *op, ArrayRef<Val> in, Val &out);
  LogicalResult importElementwise(Operation *op, ArrayRef<Val> in, Val &out);
  LogicalResult importDotGeneral(Operation *op, ArrayRef<Val> in, Val &out);
  LogicalResult importReduce(Operation *op, ArrayRef<Val> in, Val &out);
  LogicalResult importGather(Operation *op, ArrayRef<Val> in, Val &out);
  FailureOr<SmallVector<int64_t>> i64Array(Operation *op, StringRef name);
};

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
  auto &scope = scopes.back();
  auto it = scope.find(v);
  if (it == scope.end()) {
    emitError(convertLoc(v.getLoc())) << "value used before definition";
    return failure();
  }
  return it->second;
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

//===----------------------------------------------------------------------===//
// Folding
//===----------------------------------------------------------------------===//

/// Elementwise function of doubles for the ops that fold.
static std::optional<std::function<double(ArrayRef<double>)>>
elementwiseFn(StringRef name, bool isInt, StringRef direction) {
  using F = std::function<double(ArrayRef<double>)>;
  auto u = [](double (*f)(double)) -> F {
    return [f](ArrayRef<double> a) { return f(a[0]); };
  };
  if (name == "stablehlo.add")
    return F([](ArrayRef<double> a) { return a[0] + a[1]; });
  if (name == "stablehlo.subtract")
    return F([](ArrayRef<double> a) { return a[0] - a[1]; });
  if (name == "stablehlo.multiply")
    return F([](ArrayRef<double> a) { return a[0] * a[1]; });
  if (name == "stablehlo.divide") {
    if (isInt)
      return F([](ArrayRef<double> a) {
        return a[1] == 0 ? -1.0 : std::trunc(a[0] / a[1]);
      });
    return F([](ArrayRef<double> a) { return a[0] / a[1]; });
  }
  if (name == "stablehlo.remainder")
    return F([](ArrayRef<double> a) { return std::fmod(a[0], a[1]); });
  if (name == "stablehlo.maximum")
    return F([](ArrayRef<double> a) { return std::max(a[0], a[1]); });
  if (name == "stablehlo.minimum")
    return F([](ArrayRef<double> a) { return std::min(a[0], a[1]); });
  if (name == "stablehlo.power")
    return F([](ArrayRef<double> a) { return std::pow(a[0], a[1]); });
  if (name == "stablehlo.and")
    return F([](ArrayRef<double> a) {
      return (double)((int64_t)a[0] & (int64_t)a[1]);
    });
  if (name == "stablehlo.or")
    return F([](ArrayRef<double> a) {
      return (double)((int64_t)a[0] | (int64_t)a[1]);
    });
  if (name == "stablehlo.not")
    return F([](ArrayRef<double> a) { return a[0] == 0 ? 1.0 : 0.0; });
  if (name == "stablehlo.negate")
    return F([](ArrayRef<double> a) { return -a[0]; });
  if (name == "stablehlo.exponential")
    return u(std::exp);
  if (name == "stablehlo.log")
    return u(std::log);
  if (name == "stablehlo.tanh")
    return u(std::tanh);
  if (name == "stablehlo.sqrt")
    return u(std::sqrt);
  if (name == "stablehlo.cosine")
    return u(std::cos);
  if (name == "stablehlo.sine")
    return u(std::sin);
  if (name == "stablehlo.abs")
    return u(std::fabs);
  if (name == "stablehlo.floor")
    return u(std::floor);
  if (name == "stablehlo.ceil")
    return u(std::ceil);
  if (name == "chlo.erf")
    return u(std::erf);
  if (name == "stablehlo.exponential_minus_one")
    return u(std::expm1);
  if (name == "stablehlo.log_plus_one")
    return u(std::log1p);
  if (name == "stablehlo.rsqrt")
    return F([](ArrayRef<double> a) { return 1.0 / std::sqrt(a[0]); });
  if (name == "stablehlo.logistic")
    return F([](ArrayRef<double> a) { return 1.0 / (1.0 + std::exp(-a[0])); });
  if (name == "chlo.square")
    return F([](ArrayRef<double> a) { return a[0] * a[0]; });
  if (name == "stablehlo.convert")
    return F([](ArrayRef<double> a) { return a[0]; });
  if (name == "stablehlo.select")
    return F([](ArrayRef<double> a) { return a[0] != 0 ? a[1] : a[2]; });
  if (name == "stablehlo.compare") {
    auto cmp = llvm::StringSwitch<int>(direction)
                   .Case("EQ", 0)
                   .Case("NE", 1)
                   .Case("LT", 2)
                   .Case("LE", 3)
                   .Case("GT", 4)
                   .Case("GE", 5)
                   .Default(-1);
    if (cmp < 0)
      return std::nullopt;
    return F([cmp](ArrayRef<double> a) {
      bool r[] = {a[0] == a[1], a[0] != a[1],
                  a[0]<a[1], a[0] <= a[1], a[0]> a[1], a[0] >= a[1]};
      return r[cmp] ? 1.0 : 0.0;
    });
  }
  return std::nullopt;
}

/// The comparison direction of a stablehlo.compare ("LT", ...), or "".
static std::string compareDirection(Operation *op) {
  Attribute a = op->getAttr("comparison_direction");
  if (!a)
    return "";
  std::string text = attrText(a);
  StringRef t = StringRef(text).trim();
  t.consume_back(">");
  size_t sp = t.find_last_of(" <");
  return t.drop_front(sp == StringRef::npos ? 0 : sp + 1).trim().str();
}

LogicalResult Importer::fold(Operation *op, ArrayRef<Val> in, Val &out) {
  StringRef name = op->getName().getStringRef();
  ArrayRef<int64_t> shape = out.type.getShape();
  Type elem = out.type.getElementType();
  auto err = [&] { return error(op); };
  // Sets the folded result, which must have the declared result shape.
  auto setResult = [&](FailureOr<HostTensor> r) -> LogicalResult {
    if (failed(r))
      return failure();
    if (r->shape != shape)
      return error(op) << "folds to shape " << formatShape(r->shape)
                       << " but the result type is " << out.type;
    r->type = elem;
    out.c = std::make_shared<HostTensor>(std::move(*r));
    return success();
  };

  if (name == "stablehlo.iota") {
    FailureOr<SmallVector<int64_t>> dim = i64Array(op, "iota_dimension");
    if (failed(dim))
      return failure();
    if (dim->size() != 1 || (*dim)[0] < 0 || (*dim)[0] >= (int64_t)shape.size())
      return error(op) << "bad iota_dimension";
    return setResult(zb::frontend::iotaHost(shape, (*dim)[0], elem));
  }
  if (name == "stablehlo.broadcast_in_dim") {
    FailureOr<SmallVector<int64_t>> dims = i64Array(op, "broadcast_dimensions");
    if (failed(dims))
      return failure();
    return setResult(
        zb::frontend::broadcastInDimHost(*in[0].c, shape, *dims, err));
  }
  if (name == "stablehlo.reshape")
    return setResult(zb::frontend::reshapeHost(*in[0].c, shape, err));
  if (name == "stablehlo.transpose") {
    FailureOr<SmallVector<int64_t>> perm = i64Array(op, "permutation");
    if (failed(perm))
      return failure();
    return setResult(zb::frontend::transposeHost(*in[0].c, *perm, err));
  }
  if (name == "stablehlo.slice") {
    FailureOr<SmallVector<int64_t>> start = i64Array(op, "start_indices");
    FailureOr<SmallVector<int64_t>> step = i64Array(op, "strides");
    if (failed(start) || failed(step))
      return failure();
    return setResult(
        zb::frontend::sliceHost(*in[0].c, *start, *step, shape, err));
  }
  if (name == "stablehlo.reverse") {
    FailureOr<SmallVector<int64_t>> dims = i64Array(op, "dimensions");
    if (failed(dims))
      return failure();
    return setResult(zb::frontend::reverseHost(*in[0].c, *dims, err));
  }
  if (name == "stablehlo.concatenate") {
    FailureOr<SmallVector<int64_t>> dim = i64Array(op, "dimension");
    if (failed(dim))
      return failure();
    if (dim->size() != 1)
      return error(op) << "bad dimension";
    SmallVector<HostTensor> inputs;
    for (const Val &v : in)
      inputs.push_back(*v.c);
    return setResult(zb::frontend::concatHost(inputs, (*dim)[0], err));
  }

  bool isInt = isa<IntegerType>(in.empty() ? elem : in[0].c->type);
  auto fn = elementwiseFn(name, isInt, compareDirection(op));
  if (!fn) {
    if (name == "stablehlo.compare")
      return error(op) << "cannot parse comparison_direction '"
                       << (op->getAttr("comparison_direction")
                               ? attrText(op->getAttr("comparison_direction"))
                               : std::string("<missing>"))
                       << "'";
    return error(op) << "cannot fold";
  }
  // Operands of the result's size read element i, one-element operands
  // (scalars) element 0.
  int64_t n = zb::frontend::numElements(shape);
  SmallVector<HostTensor> operands;
  SmallVector<const HostTensor *> ptrs;
  for (const Val &v : in) {
    int64_t size = v.c->numElements();
    if (n == 0) {
      operands.push_back(HostTensor{{}, v.c->type, {}});
      operands.back().shape.assign(shape.begin(), shape.end());
      continue;
    }
    if (size != n && size != 1)
      return error(op) << "operand shapes differ";
    operands.push_back(*v.c);
    if (size == n)
      operands.back().shape.assign(shape.begin(), shape.end());
    else
      operands.back().shape.clear();
  }
  for (const HostTensor &t : operands)
    ptrs.push_back(&t);
  return setResult(zb::frontend::elementwiseHost(ptrs, shape, elem, *fn, err));
}

//===----------------------------------------------------------------------===//
// Ops on data
//===----------------------------------------------------------------------===//

LogicalResult Importer::importElementwise(Operation *op, ArrayRef<Val> in,
                                          Val &out) {
  StringRef name = op->getName().getStringRef();
  zb::ZBBuilder zbb(b, loc);
  Type resultElem = out.type.getElementType();

  if (name == "stablehlo.compare") {
    std::string dir = compareDirection(op);
    StringRef pred = llvm::StringSwitch<StringRef>(dir)
                         .Case("EQ", "eq")
                         .Case("NE", "ne")
                         .Case("LT", "lt")
                         .Case("LE", "le")
                         .Case("GT", "gt")
                         .Case("GE", "ge")
                         .Default("");
    if (pred.empty())
      return error(op) << "cannot parse comparison_direction '"
                       << (op->getAttr("comparison_direction")
                               ? attrText(op->getAttr("comparison_direction"))
                               : std::string("<missing>"))
                       << "'";
    FailureOr<Value> l = asFloat(in[0]), r = asFloat(in[1]);
    if (failed(l) || failed(r))
      return failure();
    if (l->getType() != r->getType())
      r = zbb.cast(*r, cast<RankedTensorType>(l->getType()).getElementType());
    out.v = zbb.compare(pred, *l, *r);
    return success();
  }

  if (name == "stablehlo.select") {
    if (!isa<FloatType>(resultElem)) {
      // select(x < 0, x + n, x): the index normalisation of table[x]; the
      // indices are in range, so this is x.
      Operation *cmp = op->getOperand(0).getDefiningOp();
      Value x = op->getOperand(2);
      if (cmp && cmp->getName().getStringRef() == "stablehlo.compare" &&
          cmp->getOperand(0) == x && compareDirection(cmp) == "LT") {
        FailureOr<Val> zero = get(cmp->getOperand(1));
        if (succeeded(zero) && zero->c &&
            llvm::all_of(zero->c->data, [](double d) { return d == 0.0; })) {
          out = in[2];
          return success();
        }
      }
      return error(op) << "select of integer data is not supported (only "
                          "the index normalisation select(x < 0, x + n, x))";
    }
    FailureOr<Value> c = materialize(in[0]);
    if (failed(c))
      return failure();
    FailureOr<Value> t = asFloat(in[1]), f = asFloat(in[2]);
    if (failed(t) || failed(f))
      return failure();
    out.v = zbb.select(*c, *t, *f);
    return success();
  }

  if (name == "stablehlo.convert") {
    Type src = in[0].type.getElementType();
    if (isa<FloatType>(resultElem)) {
      FailureOr<Value> x =
          isa<FloatType>(src) ? materialize(in[0]) : asFloat(in[0]);
      if (failed(x))
        return failure();
      out.v = zbb.cast(*x, resultElem);
      return success();
    }
    if (isa<IntegerType>(src) && !src.isInteger(1) &&
        !resultElem.isInteger(1)) {
      // Integer width changes keep the data's own type (zb index ops take
      // i32 and i64).
      out.v = in[0].v;
      out.unsupported = in[0].unsupported;
      return success();
    }
    return error(op) << "conversion of data from " << src << " to "
                     << resultElem << " is not supported";
  }

  if (!isa<FloatType>(resultElem)) {
    // Integer arithmetic on data: only allowed where a pattern removes it.
    out.unsupported = op;
    return success();
  }

  SmallVector<Value, 2> x;
  for (const Val &v : in) {
    FailureOr<Value> m = materialize(v);
    if (failed(m))
      return failure();
    x.push_back(*m);
  }
  Value r =
      llvm::StringSwitch<std::function<Value()>>(name)
          .Case("stablehlo.add", [&] { return zbb.add(x[0], x[1]); })
          .Case("stablehlo.subtract", [&] { return zbb.sub(x[0], x[1]); })
          .Case("stablehlo.multiply", [&] { return zbb.mul(x[0], x[1]); })
          .Case("stablehlo.divide", [&] { return zbb.div(x[0], x[1]); })
          .Case("stablehlo.maximum", [&] { return zbb.max(x[0], x[1]); })
          .Case("stablehlo.minimum",
                [&] { return zbb.neg(zbb.max(zbb.neg(x[0]), zbb.neg(x[1]))); })
          .Case("stablehlo.power", [&] { return zbb.pow(x[0], x[1]); })
          .Case("stablehlo.negate", [&] { return zbb.neg(x[0]); })
          .Case("stablehlo.exponential", [&] { return zbb.exp(x[0]); })
          .Case("stablehlo.exponential_minus_one",
                [&] { return zbb.sub(zbb.exp(x[0]), zbb.splat(x[0], 1.0)); })
          .Case("stablehlo.log", [&] { return zbb.log(x[0]); })
          .Case("stablehlo.log_plus_one",
                [&] { return zbb.log(zbb.add(x[0], zbb.splat(x[0], 1.0))); })
          .Case("stablehlo.tanh", [&] { return zbb.tanh(x[0]); })
          .Case("stablehlo.sqrt", [&] { return zbb.sqrt(x[0]); })
          .Case("stablehlo.rsqrt", [&] { return zbb.rsqrt(x[0]); })
          .Case("stablehlo.logistic", [&] { return zbb.sigmoid(x[0]); })
          .Case("chlo.erf", [&] { return zbb.erf(x[0]); })
          .Case("chlo.square", [&] { return zbb.mul(x[0], x[0]); })
          .Default([] { return Value(); })();
  if (!r)
    return error(op) << "unsupported on data (operands that are not "
                        "compile-time constants)";
  out.v = r;
  return success();
}

LogicalResult Importer::importDotGeneral(Operation *op, ArrayRef<Val> in,
                                         Val &out) {
  Attribute a = op->getAttr("dot_dimension_numbers");
  std::string text = a ? attrText(a) : "";
  auto lb = parseIntList(text, "lhs_batching_dimensions");
  auto rb = parseIntList(text, "rhs_batching_dimensions");
  auto lc = parseIntList(text, "lhs_contracting_dimensions");
  auto rc = parseIntList(text, "rhs_contracting_dimensions");
  if (!a || !balanced(text) || failed(lb) || failed(rb) || failed(lc) ||
      failed(rc) || lb->size() != rb->size() || lc->size() != rc->size())
    return error(op) << "cannot parse dot_dimension_numbers '" << text << "'";
  FailureOr<Value> l = materialize(in[0]), r = materialize(in[1]);
  if (failed(l) || failed(r))
    return failure();
  auto lt = cast<RankedTensorType>(l->getType());
  auto rt = cast<RankedTensorType>(r->getType());
  if (!isa<FloatType>(lt.getElementType()) ||
      lt.getElementType() != rt.getElementType())
    return error(op) << "dot_general needs float operands of one type";
  auto inRange = [](ArrayRef<int64_t> dims, int64_t rank) {
    SmallVector<bool> seen(rank, false);
    for (int64_t d : dims) {
      if (d < 0 || d >= rank || seen[d])
        return false;
      seen[d] = true;
    }
    return true;
  };
  SmallVector<int64_t> lAll(*lb), rAll(*rb);
  lAll.append(*lc);
  rAll.append(*rc);
  if (!inRange(lAll, lt.getRank()) || !inRange(rAll, rt.getRank()))
    return error(op) << "dot_dimension_numbers out of range: '" << text << "'";
  for (size_t i = 0; i < lb->size(); ++i)
    if (lt.getDimSize((*lb)[i]) != rt.getDimSize((*rb)[i]))
      return error(op) << "batch dimension sizes differ";
  for (size_t i = 0; i < lc->size(); ++i)
    if (lt.getDimSize((*lc)[i]) != rt.getDimSize((*rc)[i]))
      return error(op) << "contracting dimension sizes differ";

  auto freeDims = [](ArrayRef<int64_t> used, int64_t rank) {
    SmallVector<int64_t> out;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(used, d))
        out.push_back(d);
    return out;
  };
  SmallVector<int64_t> lf = freeDims(lAll, lt.getRank());
  SmallVector<int64_t> rf = freeDims(rAll, rt.getRank());
  auto product = [](RankedTensorType t, ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= t.getDimSize(d);
    return p;
  };
  int64_t batch = product(lt, *lb), m = product(lt, lf), k = product(lt, *lc),
          nn = product(rt, rf);
  bool batched = !lb->empty();
  zb::ZBBuilder zbb(b, loc);
  auto concat = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b2,
                   ArrayRef<int64_t> c) {
    SmallVector<int64_t> p(a);
    p.append(b2.begin(), b2.end());
    p.append(c.begin(), c.end());
    return p;
  };
  auto isIdentity = [](ArrayRef<int64_t> p) {
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] != (int64_t)i)
        return false;
    return true;
  };
  // Brings an operand to [batch, rows, cols] (or [rows, cols]) where
  // (rows, cols) = (first, second) group, using the transpose flag when the
  // operand is already in (second, first) order.
  auto prepare = [&](Value v, RankedTensorType t, ArrayRef<int64_t> bd,
                     ArrayRef<int64_t> first, ArrayRef<int64_t> second,
                     int64_t rows, int64_t cols, bool &transposed) {
    SmallVector<int64_t> shape;
    if (batched)
      shape.push_back(batch);
    SmallVector<int64_t> natural = concat(bd, first, second);
    SmallVector<int64_t> swapped = concat(bd, second, first);
    transposed = false;
    if (!isIdentity(natural) && isIdentity(swapped)) {
      transposed = true;
      shape.append({cols, rows});
      return zbb.reshape(v, shape);
    }
    shape.append({rows, cols});
    if (!isIdentity(natural))
      v = zbb.transpose(v, natural);
    return zbb.reshape(v, shape);
  };
  bool tl, tr;
  Value lhs = prepare(*l, lt, *lb, lf, *lc, m, k, tl);
  Value rhs = prepare(*r, rt, *rb, *rc, rf, k, nn, tr);
  Value prod = batched ? zbb.batchMatmul(lhs, rhs, tl, tr)
                       : zbb.matmul(lhs, rhs, tl, tr);
  if (prod.getType() != out.type.clone(lt.getElementType()))
    prod = zbb.reshape(prod, out.type.getShape());
  out.v = prod;
  return success();
}

LogicalResult Importer::importReduce(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  if (op->getNumOperands() != 2 || op->getNumResults() != 1 ||
      op->getNumRegions() != 1)
    return error(op) << "only single-operand reductions are supported";
  Region &body = op->getRegion(0);
  if (!body.hasOneBlock() || body.front().getNumArguments() != 2)
    return error(op) << "malformed reduction body";
  Block &blk = body.front();
  auto it = blk.begin();
  if (blk.getOperations().size() != 2)
    return error(op) << "only reductions with a single add, maximum or "
                        "minimum in the body are supported";
  Operation &combiner = *it;
  Operation &ret = *std::next(it);
  StringRef kind = combiner.getName().getStringRef();
  bool argsOk = combiner.getNumOperands() == 2 &&
                ((combiner.getOperand(0) == blk.getArgument(0) &&
                  combiner.getOperand(1) == blk.getArgument(1)) ||
                 (combiner.getOperand(0) == blk.getArgument(1) &&
                  combiner.getOperand(1) == blk.getArgument(0)));
  if (!argsOk || ret.getNumOperands() != 1 ||
      ret.getOperand(0) != combiner.getResult(0) ||
      (kind != "stablehlo.add" && kind != "stablehlo.maximum" &&
       kind != "stablehlo.minimum"))
    return error(op) << "only reductions with a single add, maximum or "
                        "minimum in the body are supported (found '"
                     << kind << "')";
  FailureOr<SmallVector<int64_t>> dims = i64Array(op, "dimensions");
  if (failed(dims))
    return failure();
  if (!in[1].c || in[1].c->numElements() != 1)
    return error(op) << "the initial value must be a scalar constant";
  double init = in[1].c->data[0];
  if (!isa<FloatType>(out.type.getElementType()))
    return error(op) << "reductions of integer data are not supported";
  FailureOr<Value> x = materialize(in[0]);
  if (failed(x))
    return failure();
  zb::ZBBuilder zbb(b, loc);
  Value r;
  if (kind == "stablehlo.add") {
    r = zbb.reduceSum(*x, *dims);
    if (init != 0.0)
      r = zbb.add(r, zbb.splat(r, init));
  } else if (kind == "stablehlo.maximum") {
    r = zbb.reduceMax(*x, *dims);
    if (init != -std::numeric_limits<double>::infinity())
      r = zbb.max(r, zbb.splat(r, init));
  } else {
    r = zbb.neg(zbb.reduceMax(zbb.neg(*x), *dims));
    if (init != std::numeric_limits<double>::infinity())
      r = zbb.neg(zbb.max(zbb.neg(r), zbb.splat(r, -init)));
  }
  if (r.getType() != out.type)
    r = zbb.reshape(r, out.type.getShape());
  out.v = r;
  return success();
}

LogicalResult Importer::importGather(Operation *op, ArrayRef<Val> in,
                                     Val &out) {
  Attribute a = op->getAttr("dimension_numbers");
  std::string text = a ? attrText(a) : "";
  auto offset = parseIntList(text, "offset_dims");
  auto collapsed = parseIntList(text, "collapsed_slice_dims");
  auto startMap = parseIntList(text, "start_index_map");
  auto ivd = parseIntList(text, "index_vector_dim");
  auto obd = parseIntList(text, "operand_batching_dims");
  FailureOr<SmallVector<int64_t>> sizes = i64Array(op, "slice_sizes");
  if (!a || !balanced(text) || failed(offset) || failed(collapsed) ||
      failed(startMap) || failed(ivd) || ivd->size() != 1 || failed(obd) ||
      failed(sizes))
    return error(op) << "cannot parse gather dimension_numbers '" << text
                     << "'";
  RankedTensorType tableT = in[0].type, idxT = in[1].type;
  int64_t ri = idxT.getRank(), ro = tableT.getRank();
  int64_t vecDim = (*ivd)[0];
  bool trailing = vecDim == ri - 1 && ri > 0 && idxT.getDimSize(ri - 1) == 1;
  int64_t batchRank = trailing ? ri - 1 : ri;
  bool ok = (trailing || vecDim == ri) && obd->empty() &&
            *collapsed == SmallVector<int64_t>{0} &&
            *startMap == SmallVector<int64_t>{0} &&
            (int64_t)offset->size() == ro - 1 && (int64_t)sizes->size() == ro &&
            (*sizes)[0] == 1;
  for (int64_t i = 0; ok && i < ro - 1; ++i)
    ok = (*offset)[i] == batchRank + i &&
         (*sizes)[i + 1] == tableT.getDimSize(i + 1);
  if (!ok)
    return error(op) << "only the embedding-lookup form of gather "
                        "(table[indices]) is supported, not '"
                     << text << "'";
  FailureOr<Value> table = materialize(in[0]);
  FailureOr<Value> idx = asIndex(in[1]);
  if (failed(table) || failed(idx))
    return failure();
  zb::ZBBuilder zbb(b, loc);
  Value indices = *idx;
  if (trailing)
    indices = zbb.reshape(indices, idxT.getShape().drop_back());
  out.v = zbb.gather(*table, indices);
  return success();
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

  if (name == "func.call") {
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

  if (op->getNumResults() != 1)
    return error(op) << "unsupported StableHLO op (expected one result)";
  FailureOr<RankedTensorType> type = convertType(op->getResult(0).getType());
  if (failed(type))
    return emitError(loc) << "unsupported StableHLO op '" << name
                          << "' (result type " << op->getResult(0).getType()
                          << " is not a static tensor)";
  Val out;
  out.type = *type;

  if (name == "stablehlo.constant") {
    auto value = dyn_cast_or_null<DenseElementsAttr>(op->getAttr("value"));
    if (!value)
      return error(op) << "missing or non-dense 'value'";
    if (!isa<FloatType, IntegerType>(value.getElementType()))
      return error(op) << "unsupported constant element type";
    auto c = std::make_shared<HostTensor>(HostTensor::fromAttr(value));
    // The values of the source context, shape and element type of the target.
    c->shape.assign(type->getShape().begin(), type->getShape().end());
    c->type = type->getElementType();
    if ((int64_t)c->data.size() != c->numElements())
      return error(op) << "constant size does not match its type";
    out.c = c;
    scopes.back()[op->getResult(0)] = out;
    return success();
  }

  static const char *const kSupported[] = {
      "stablehlo.iota", "stablehlo.add", "stablehlo.subtract",
      "stablehlo.multiply", "stablehlo.divide", "stablehlo.maximum",
      "stablehlo.minimum", "stablehlo.power", "stablehlo.negate",
      "stablehlo.exponential", "stablehlo.exponential_minus_one",
      "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.tanh",
      "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.logistic", "chlo.erf",
      "chlo.square", "stablehlo.compare", "stablehlo.select",
      "stablehlo.convert", "stablehlo.broadcast_in_dim", "stablehlo.reshape",
      "stablehlo.transpose", "stablehlo.slice", "stablehlo.concatenate",
      "stablehlo.dot_general", "stablehlo.reduce", "stablehlo.gather",
      // Constant operands only:
      "stablehlo.cosine", "stablehlo.sine", "stablehlo.abs", "stablehlo.floor",
      "stablehlo.ceil", "stablehlo.and", "stablehlo.or", "stablehlo.not",
      "stablehlo.remainder", "stablehlo.reverse"};
  if (!llvm::is_contained(kSupported, name))
    return emitError(loc) << "unsupported StableHLO op '" << name << "'";

  bool allConst =
      llvm::all_of(in, [](const Val &v) { return v.c && !v.unsupported; });
  if (allConst && name != "stablehlo.dot_general" &&
      name != "stablehlo.reduce" && name != "stablehlo.gather") {
    // fold() reports its errors.
    if (failed(fold(op, in, out)))
      return failure();
    scopes.back()[op->getResult(0)] = out;
    return success();
  }

  LogicalResult result = success();
  zb::ZBBuilder zbb(b, loc);
  if (name == "stablehlo.dot_general") {
    result = importDotGeneral(op, in, out);
  } else if (name == "stablehlo.reduce") {
    result = importReduce(op, in, out);
  } else if (name == "stablehlo.gather") {
    result = importGather(op, in, out);
  } else if (name == "stablehlo.broadcast_in_dim") {
    FailureOr<SmallVector<int64_t>> dims = i64Array(op, "broadcast_dimensions");
    if (failed(dims))
      return failure();
    RankedTensorType st = in[0].type;
    bool increasing = true;
    for (size_t i = 0; i < dims->size(); ++i)
      increasing &= ((*dims)[i] >= 0 && (*dims)[i] < out.type.getRank()) &&
                    (i == 0 || (*dims)[i] > (*dims)[i - 1]);
    if (!increasing || (int64_t)dims->size() != st.getRank())
      return error(op) << "broadcast_dimensions must be increasing and "
                          "one per operand dimension";
    if (isa<FloatType>(st.getElementType())) {
      FailureOr<Value> x = materialize(in[0]);
      if (failed(x))
        return failure();
      out.v = zbb.broadcast(*x, out.type, *dims);
    } else if (st.getNumElements() == out.type.getNumElements()) {
      // Only inserts size-1 dimensions: a reshape keeps integer data.
      FailureOr<Value> x = materialize(in[0]);
      if (failed(x))
        return failure();
      out.v = zbb.reshape(*x, out.type.getShape());
    } else {
      // Integer or boolean data broadcast: through floats.
      FailureOr<Value> x = asFloat(in[0]);
      if (failed(x))
        return failure();
      Type fe = cast<RankedTensorType>(x->getType()).getElementType();
      Value bx = zbb.broadcast(*x, out.type.clone(fe), *dims);
      if (st.getElementType().isInteger(1))
        bx = zbb.compare("ne", bx,
                         zbb.splat(cast<RankedTensorType>(bx.getType()), 0.0));
      out.v = bx;
    }
  } else if (name == "stablehlo.reshape") {
    FailureOr<Value> x = materialize(in[0]);
    if (failed(x))
      return failure();
    out.v = zbb.reshape(*x, out.type.getShape());
  } else if (name == "stablehlo.transpose") {
    auto perm = i64Array(op, "permutation");
    FailureOr<Value> x = materialize(in[0]);
    if (failed(perm) || failed(x))
      return failure();
    if ((int64_t)perm->size() != in[0].type.getRank())
      return error(op) << "permutation does not match the operand rank";
    out.v = zbb.transpose(*x, *perm);
  } else if (name == "stablehlo.slice") {
    auto s = i64Array(op, "start_indices");
    auto l = i64Array(op, "limit_indices");
    auto st = i64Array(op, "strides");
    FailureOr<Value> x = materialize(in[0]);
    if (failed(s) || failed(l) || failed(st) || failed(x))
      return failure();
    out.v = zbb.slice(*x, *s, *l, *st);
  } else if (name == "stablehlo.concatenate") {
    auto dim = i64Array(op, "dimension");
    if (failed(dim) || dim->size() != 1)
      return error(op) << "missing 'dimension'";
    SmallVector<Value> xs;
    for (const Val &v : in) {
      FailureOr<Value> x = isa<FloatType>(out.type.getElementType())
                               ? asFloat(v)
                               : materialize(v);
      if (failed(x))
        return failure();
      xs.push_back(*x);
    }
    out.v = zbb.concat(xs, (*dim)[0]);
  } else if (name == "stablehlo.iota" || name == "stablehlo.cosine" ||
             name == "stablehlo.sine" || name == "stablehlo.abs" ||
             name == "stablehlo.floor" || name == "stablehlo.ceil" ||
             name == "stablehlo.and" || name == "stablehlo.or" ||
             name == "stablehlo.not" || name == "stablehlo.remainder" ||
             name == "stablehlo.reverse") {
    return emitError(loc) << "unsupported StableHLO op '" << name
                          << "' on data (only constant operands are folded)";
  } else {
    result = importElementwise(op, in, out);
  }
  if (failed(result))
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

OwningOpRef<ModuleOp> Importer::run() {
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  auto main = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      source, StringAttr::get(source.getContext(), "main"));
  if (!main || main.isExternal()) {
    emitError(fileLoc) << "no function @main in the StableHLO module";
    return nullptr;
  }
  FunctionType ft = main.getFunctionType();
  if (ft.getNumResults() != 1) {
    emitError(convertLoc(main.getLoc()))
        << "@main must return one value, the loss (it returns "
        << ft.getNumResults() << ")";
    return nullptr;
  }
  FailureOr<RankedTensorType> lossType = convertType(ft.getResult(0));
  if (failed(lossType) || lossType->getNumElements() != 1 ||
      !isa<FloatType>(lossType->getElementType())) {
    emitError(convertLoc(main.getLoc()))
        << "@main must return a scalar floating-point loss, not "
        << ft.getResult(0);
    return nullptr;
  }

  // Arguments: names, roles, types.
  struct Arg {
    std::string name;
    RankedTensorType type;
    bool param;
  };
  SmallVector<Arg> args;
  llvm::StringSet<> seen;
  for (unsigned i = 0; i < ft.getNumInputs(); ++i) {
    FailureOr<RankedTensorType> t = convertType(ft.getInput(i));
    if (failed(t)) {
      emitError(convertLoc(main.getLoc()))
          << "argument #" << i << " has unsupported type " << ft.getInput(i);
      return nullptr;
    }
    std::string name = "arg" + std::to_string(i);
    if (auto info = main.getArgAttrOfType<StringAttr>(i, "jax.arg_info"))
      name = pytreeName(info.getValue());
    else if (auto zn =
                 main.getArgAttrOfType<StringAttr>(i, zb::frontend::kNameAttr))
      name = zn.getValue().str();
    if (!seen.insert(name).second) {
      emitError(convertLoc(main.getLoc()))
          << "two arguments are named '" << name << "'";
      return nullptr;
    }
    bool data = !isa<FloatType>(t->getElementType());
    for (const std::string &d : options.dataArgs)
      data |= name == d ||
              (StringRef(d).ends_with(".") && StringRef(name).starts_with(d));
    args.push_back({name, *t, !data});
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < args.size(); ++i)
    if (!args[i].param)
      order.push_back(i);
  for (unsigned i = 0; i < args.size(); ++i)
    if (args[i].param)
      order.push_back(i);
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  for (unsigned i : order) {
    argTypes.push_back(args[i].type);
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr(zb::frontend::kNameAttr, b.getStringAttr(args[i].name))};
    if (args[i].param)
      attrs.push_back(b.getNamedAttr(zb::kParamAttr, b.getUnitAttr()));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
  }
  auto func = func::FuncOp::create(
      b, fileLoc, zb::frontend::kMainFuncName,
      b.getFunctionType(
          argTypes, {RankedTensorType::get({}, lossType->getElementType())}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  SmallVector<Val> argVals(args.size());
  for (auto [pos, i] : llvm::enumerate(order)) {
    BlockArgument a = entry->getArgument(pos);
    a.setLoc(NameLoc::get(b.getStringAttr(args[i].name), fileLoc));
    argVals[i].v = a;
    argVals[i].type = args[i].type;
  }

  // Initial values of the parameters (zb.param_values of the source).
  if (auto values = source->getAttrOfType<DictionaryAttr>(
          zb::frontend::kParamValuesAttr)) {
    SmallVector<NamedAttribute> kept;
    for (unsigned i : order) {
      if (!args[i].param)
        continue;
      auto v = dyn_cast_or_null<DenseElementsAttr>(values.get(args[i].name));
      if (!v) {
        emitError(fileLoc) << "zb.param_values has no dense value for "
                              "parameter '"
                           << args[i].name << "'";
        return nullptr;
      }
      if (v.getType().getShape() != args[i].type.getShape() ||
          !v.getElementType().isF32() ||
          !args[i].type.getElementType().isF32()) {
        emitError(fileLoc) << "zb.param_values['" << args[i].name
                           << "'] has type " << v.getType() << ", the argument "
                           << args[i].type;
        return nullptr;
      }
      auto attr =
          DenseElementsAttr::getFromRawBuffer(args[i].type, v.getRawData());
      kept.push_back(b.getNamedAttr(args[i].name, attr));
    }
    (*module)->setAttr(zb::frontend::kParamValuesAttr,
                       b.getDictionaryAttr(kept));
  }

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

} // namespace

OwningOpRef<ModuleOp>
zb::frontend::importStableHLO(llvm::MemoryBufferRef buffer, MLIRContext *ctx,
                              const StableHLOImportOptions &options) {
  ctx->loadDialect<func::FuncDialect, zb::ZBDialect>();
  StringRef fileName = buffer.getBufferIdentifier();

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
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBuffer(
                                   buffer, /*RequiresNullTerminator=*/false),
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

bool zb::frontend::looksLikeStableHLO(StringRef text) {
  return text.contains("\"stablehlo.") || text.contains(" stablehlo.");
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
