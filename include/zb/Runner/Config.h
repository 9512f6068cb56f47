//===- Config.h - zb-run: settings from a TOML or JSON file -----*- C++ -*-===//
//
// zb-run --config FILE: the flags of a run kept in one file, torchtitan
// style, e.g.
//
//   # train.toml
//   steps = 5000
//   data = "data/train.bin"
//   val-data = "data/val.bin"
//   eval-every = 250
//   [optimizer]          # tables only group keys: the section name is free
//   lr = 6e-4
//   lr-schedule = "cosine"
//   warmup-steps = 100
//   betas = [0.9, 0.95]
//   weight-decay = 0.1
//
// Every key is a zb-run flag name (underscores may stand for dashes); a
// value is a string, number, boolean or array (written comma-separated, as
// --betas takes it). The file's settings come first and the command line's
// flags after them, so a flag given on the command line wins. A file whose
// name ends in .json is JSON (an object of the same keys, nested objects as
// tables); any other is TOML (toml++, TOML 1.0).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_CONFIG_H
#define ZB_RUNNER_CONFIG_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace zb::runner {

/// The command-line arguments of the settings in `path`, "--name=value"
/// each, in the order of the keys (sorted within a table, as toml++ and
/// llvm::json keep them: each flag may be set once, so the order does not
/// matter). `isFlag(name)` says whether zb-run has the
/// flag --name. Errors name the file, the line (TOML) and the key: a file
/// that cannot be read or parsed, an unknown flag, a value that is not a
/// string, number, boolean or array of them, tables nested more than one
/// deep, the key "config".
llvm::Expected<std::vector<std::string>>
configArguments(llvm::StringRef path,
                llvm::function_ref<bool(llvm::StringRef)> isFlag);

/// The same from the file's text (`path` names it and chooses the syntax).
llvm::Expected<std::vector<std::string>>
parseConfig(llvm::StringRef text, llvm::StringRef path,
            llvm::function_ref<bool(llvm::StringRef)> isFlag);

} // namespace zb::runner

#endif // ZB_RUNNER_CONFIG_H
