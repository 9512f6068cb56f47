//===- Freeze.cpp - zb-compile --trainable / --frozen ---------------------===//
//
// Which parameters train (issue 19): exporters turn every float tensor of a
// model into an initializer, buffers included (RoPE tables, causal masks);
// training those is wrong. See CompileOptions::trainable / frozen.
//
//===----------------------------------------------------------------------===//
#include "Phases.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Frontend/ImportedModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"

using namespace mlir;

namespace zb::driver {

namespace {
struct Patterns {
  std::string flag;
  std::vector<std::string> text;
  std::vector<llvm::GlobPattern> globs;
  std::vector<bool> used;
  bool matches(llvm::StringRef name) {
    bool any = false;
    for (size_t i = 0; i < globs.size(); ++i)
      if (globs[i].match(name)) {
        used[i] = true;
        any = true;
      }
    return any;
  }
};

llvm::Expected<Patterns> compile(llvm::StringRef flag,
                                 const std::vector<std::string> &text) {
  Patterns p;
  p.flag = flag.str();
  p.text = text;
  for (const std::string &t : text) {
    auto glob = llvm::GlobPattern::create(t);
    if (!glob)
      return llvm::createStringError(
          llvm::formatv("--{0} '{1}': {2}", flag, t,
                        llvm::toString(glob.takeError()))
              .str());
    p.globs.push_back(std::move(*glob));
  }
  p.used.assign(text.size(), false);
  return p;
}
} // namespace

llvm::Expected<std::vector<std::string>>
freezeParameters(ModuleOp module, const CompileOptions &options) {
  std::vector<std::string> frozenNames;
  if (options.trainable.empty() && options.frozen.empty())
    return frozenNames;
  auto trainable = compile("trainable", options.trainable);
  if (!trainable)
    return trainable.takeError();
  auto frozen = compile("frozen", options.frozen);
  if (!frozen)
    return frozen.takeError();
  auto main = module.lookupSymbol<func::FuncOp>(frontend::kMainFuncName);
  if (!main)
    return llvm::createStringError("--trainable/--frozen: the model has no "
                                   "@main function");
  auto values =
      module->getAttrOfType<DictionaryAttr>(frontend::kParamValuesAttr);
  std::vector<std::string> all;
  llvm::BitVector erase(main.getNumArguments());
  OpBuilder b(main.getBody());
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    if (!main.getArgAttr(i, kParamAttr))
      continue;
    auto nameAttr = main.getArgAttrOfType<StringAttr>(i, frontend::kNameAttr);
    std::string name = nameAttr ? nameAttr.str() : llvm::formatv("arg{0}", i);
    all.push_back(name);
    bool trains = (options.trainable.empty() || trainable->matches(name));
    trains = !frozen->matches(name) && trains;
    if (trains)
      continue;
    auto value = values ? dyn_cast_or_null<DenseElementsAttr>(
                              values.get(name))
                        : DenseElementsAttr();
    if (!value)
      return llvm::createStringError(
          llvm::formatv("cannot freeze parameter '{0}': the model file holds "
                        "no value for it (StableHLO text carries no weights; "
                        "pass it as data with --data-args instead)",
                        name)
              .str());
    BlockArgument arg = main.getArgument(i);
    auto constant = ConstantOp::create(b, arg.getLoc(), value);
    arg.replaceAllUsesWith(constant.getResult());
    erase.set(i);
    frozenNames.push_back(name);
  }
  // Buffers that the ONNX importer already made constants (zb.buffers): a
  // --frozen pattern naming them asks for what is done; a --trainable one
  // cannot be honoured.
  if (auto buffers = module->getAttrOfType<ArrayAttr>(frontend::kBuffersAttr))
    for (auto buffer : buffers.getAsRange<StringAttr>()) {
      frozen->matches(buffer.getValue());
      for (size_t i = 0; i < trainable->text.size(); ++i)
        if (!trainable->used[i] && trainable->globs[i].match(buffer.getValue()))
          return llvm::createStringError(
              llvm::formatv("--trainable '{0}': '{1}' is a buffer of the "
                            "model (the exporter marks it so; imported as a "
                            "constant), not a parameter",
                            trainable->text[i], buffer.getValue())
                  .str());
    }
  for (Patterns *p : {&*trainable, &*frozen})
    for (size_t i = 0; i < p->text.size(); ++i)
      if (!p->used[i])
        return llvm::createStringError(
            llvm::formatv("--{0} '{1}' matches no parameter; the parameters "
                          "are: {2}",
                          p->flag, p->text[i], llvm::join(all, ", "))
                .str());
  if (failed(main.eraseArguments(erase)))
    return llvm::createStringError("--trainable/--frozen: cannot remove the "
                                   "frozen parameters' arguments");
  if (values) {
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute a : values)
      if (!llvm::is_contained(frozenNames, a.getName().str()))
        kept.push_back(a);
    module->setAttr(frontend::kParamValuesAttr,
                    DictionaryAttr::get(module.getContext(), kept));
  }
  return frozenNames;
}

} // namespace zb::driver
