//===- StableHLOImporter.cpp - JAX StableHLO text -> zb dialect -----------===//
//
// See include/zb/Frontend/StableHLO/StableHLOImporter.h for the contract and
// StableHLOImporterImpl.h for how the importer is split. This file parses the
// text, builds @main's signature from the source's arguments and walks the
// blocks, inlining calls; each op is imported by StableHLODispatch.cpp.
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
// Float types zb does not train in
//===----------------------------------------------------------------------===//

/// "float64", "float16" for a float element type zb does not compute in
/// (zb trains in float32, or with --precision bf16 in bfloat16 and float32:
/// bfloat16 is imported, and zb-compile refuses it without --precision
/// bf16); nullopt otherwise.
std::optional<StringRef>
zb::frontend::stablehlo_import::unsupportedFloat(Type t) {
  auto r = dyn_cast<ShapedType>(t);
  Type e = r ? r.getElementType() : t;
  if (e.isF64())
    return StringRef("float64");
  if (e.isF16())
    return StringRef("float16");
  return std::nullopt;
}

/// The advice of every float-type error: float64 comes from
/// jax_enable_x64, float16/bfloat16 from half-precision parameters or casts.
std::string zb::frontend::stablehlo_import::float32Advice(StringRef type) {
  if (type == "float64")
    return ": zb trains in float32 only; export the model in float32 (with "
           "JAX: leave jax_enable_x64 off and keep parameters float32; with "
           "PyTorch: model.float())";
  return ": zb trains in float32 only; export with float32 parameters "
         "(params = jax.tree.map(lambda x: x.astype(jnp.float32), params)) "
         "and no casts to " +
         type.str() + " in the loss";
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

//===----------------------------------------------------------------------===//
// The walk over blocks and calls
//===----------------------------------------------------------------------===//

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