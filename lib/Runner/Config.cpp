//===- Config.cpp - zb-run: settings from a TOML or JSON file -------------===//
//
// See zb/Runner/Config.h. TOML through toml++ (header-only here, so zb-run
// loads no further shared library); JSON through llvm::json. Compiled with
// exceptions (toml++ reports parse errors as toml::parse_error).
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Config.h"

#include "zb/Support/JSON.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#define TOML_HEADER_ONLY 1
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <sstream>

using namespace llvm;
using namespace zb::runner;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Collects "--name=value" arguments, checking each name once.
class Arguments {
public:
  Arguments(StringRef path, function_ref<bool(StringRef)> isFlag)
      : path(path), isFlag(isFlag) {}

  /// `where`: "FILE:LINE" or "FILE" for messages.
  Error add(StringRef key, StringRef value, const std::string &where) {
    std::string name = key.str();
    std::replace(name.begin(), name.end(), '_', '-');
    if (name == "config")
      return makeError(where + ": '" + key +
                       "': a config file cannot name another");
    if (!isFlag(name))
      return makeError(where + ": unknown setting '" + key +
                       "' (zb-run has no --" + name + "; see zb-run --help)");
    auto [it, inserted] = seen.try_emplace(name, where);
    if (!inserted)
      return makeError(where + ": '" + key + "' is set twice (also at " +
                       it->second + ")");
    args.push_back("--" + name + "=" + value.str());
    return Error::success();
  }

  StringRef path;
  function_ref<bool(StringRef)> isFlag;
  /// `text`: the value's flag text, std::nullopt when the value is of a kind
  /// a flag cannot take.
  Error addSetting(StringRef key, const std::optional<std::string> &text,
                   const std::string &where) {
    if (!text)
      return makeError(where + ": '" + key +
                       "' must be a string, number, boolean or an array of "
                       "them");
    return add(key, *text, where);
  }

  StringMap<std::string> seen; ///< flag name -> where it was set
  std::vector<std::string> args;
};

std::string formatDouble(double d) {
  return formatv("{0}", format("%.17g", d)).str();
}

/// The flag text of an array: its scalars (`scalar` gives each one's text)
/// joined by commas; std::nullopt when an element is not a scalar.
template <typename Items, typename Scalar>
std::optional<std::string> joinScalars(const Items &items, Scalar scalar) {
  std::string text;
  for (const auto &item : items) {
    std::optional<std::string> s = scalar(item);
    if (!s)
      return std::nullopt;
    text += (text.empty() ? "" : ",") + *s;
  }
  return text;
}

/// A table (TOML) or object (JSON) inside another: not a setting.
Error nestedTooDeep(const std::string &where, StringRef kind, StringRef name) {
  return makeError(where + ": " + kind + " '" + name + "' inside " +
                   (kind == "object" ? "an " : "a ") + kind +
                   ": zb-run's settings are one level deep");
}

//===-- TOML --------------------------------------------------------------===//

/// A scalar TOML value as flag text; std::nullopt for a table or a date.
std::optional<std::string> tomlScalar(const toml::node &v) {
  if (auto s = v.as_string())
    return s->get();
  if (auto i = v.as_integer())
    return std::to_string(i->get());
  if (auto d = v.as_floating_point())
    return formatDouble(d->get());
  if (auto b = v.as_boolean())
    return std::string(b->get() ? "true" : "false");
  return std::nullopt;
}

Error addToml(Arguments &args, const toml::table &table, int depth) {
  for (auto &&[key, value] : table) {
    std::string where =
        formatv("{0}:{1}", args.path, key.source().begin.line).str();
    StringRef name(key.str().data(), key.str().size());
    if (const toml::table *sub = value.as_table()) {
      if (depth > 0)
        return nestedTooDeep(where, "table", name);
      if (Error e = addToml(args, *sub, depth + 1))
        return e;
      continue;
    }
    const toml::array *array = value.as_array();
    if (Error e = args.addSetting(
            name, array ? joinScalars(*array, tomlScalar) : tomlScalar(value),
            where))
      return e;
  }
  return Error::success();
}

Error parseToml(Arguments &args, StringRef text) {
  try {
    toml::table table =
        toml::parse(std::string_view(text.data(), text.size()),
                    std::string_view(args.path.data(), args.path.size()));
    return addToml(args, table, 0);
  } catch (const toml::parse_error &err) {
    return makeError(formatv("{0}:{1}:{2}: not TOML: {3}", args.path,
                             err.source().begin.line,
                             err.source().begin.column, err.description())
                         .str());
  }
}

//===-- JSON --------------------------------------------------------------===//

std::optional<std::string> jsonScalar(const json::Value &v) {
  if (auto s = v.getAsString())
    return s->str();
  if (auto i = v.getAsInteger())
    return std::to_string(*i);
  if (auto d = v.getAsNumber())
    return formatDouble(*d);
  if (auto b = v.getAsBoolean())
    return std::string(*b ? "true" : "false");
  return std::nullopt;
}

Error addJson(Arguments &args, const json::Object &object, int depth) {
  const std::string where = args.path.str();
  // llvm::json::Object is unordered: sort the keys for stable arguments.
  std::vector<StringRef> keys;
  for (const auto &kv : object)
    keys.push_back(kv.first);
  llvm::sort(keys);
  for (StringRef key : keys) {
    const json::Value &value = *object.get(key);
    if (const json::Object *sub = value.getAsObject()) {
      if (depth > 0)
        return nestedTooDeep(where, "object", key);
      if (Error e = addJson(args, *sub, depth + 1))
        return e;
      continue;
    }
    const json::Array *array = value.getAsArray();
    if (Error e = args.addSetting(
            key, array ? joinScalars(*array, jsonScalar) : jsonScalar(value),
            where))
      return e;
  }
  return Error::success();
}

Error parseJson(Arguments &args, StringRef text) {
  if (Error e = zb::support::checkJSONNesting(text, args.path.str()))
    return e;
  Expected<json::Value> doc = json::parse(text);
  if (!doc)
    return makeError(args.path + ": not JSON: " + toString(doc.takeError()));
  const json::Object *o = doc->getAsObject();
  if (!o)
    return makeError(args.path + ": must be a JSON object of settings");
  return addJson(args, *o, 0);
}

} // namespace

Expected<std::vector<std::string>>
zb::runner::parseConfig(StringRef text, StringRef path,
                        function_ref<bool(StringRef)> isFlag) {
  Arguments args(path, isFlag);
  Error e = sys::path::extension(path) == ".json" ? parseJson(args, text)
                                                   : parseToml(args, text);
  if (e)
    return std::move(e);
  return std::move(args.args);
}

Expected<std::vector<std::string>>
zb::runner::configArguments(StringRef path,
                            function_ref<bool(StringRef)> isFlag) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("--config " + path +
                     ": cannot read: " + buffer.getError().message());
  return parseConfig((*buffer)->getBuffer(), path, isFlag);
}
