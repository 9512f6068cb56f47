//===- ConfigFuzzer.cpp - libFuzzer target for zb-run --config ------------===//
//
// Arbitrary bytes as a zb-run config file, TOML and JSON
// (zb::runner::parseConfig), with every lowercase-and-dash name a flag. An
// accepted file gives "--name=value" arguments, each name once. Seed corpus
// fuzz/corpus/config.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Config.h"

#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <cstdlib>

using namespace zb::runner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto isFlag = [](llvm::StringRef name) {
    return !name.empty() && name.find_first_not_of(
                                "abcdefghijklmnopqrstuvwxyz-") ==
                                llvm::StringRef::npos;
  };
  for (const char *path : {"fuzz.toml", "fuzz.json"}) {
    auto args = parseConfig(text, path, isFlag);
    if (!args) {
      llvm::consumeError(args.takeError());
      continue;
    }
    llvm::StringSet<> names;
    for (const std::string &a : *args) {
      llvm::StringRef arg(a);
      if (!arg.consume_front("--"))
        std::abort();
      auto [name, value] = arg.split('=');
      if (!isFlag(name) || !names.insert(name).second)
        std::abort();
    }
  }
  return 0;
}
