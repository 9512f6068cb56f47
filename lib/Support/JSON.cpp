//===- JSON.cpp - Checks every reader of outside JSON runs first ----------===//
#include "zb/Support/JSON.h"

#include "llvm/Support/FormatVariadic.h"

llvm::Error zb::support::checkJSONNesting(llvm::StringRef text,
                                       llvm::StringRef what,
                                       unsigned maxDepth) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return llvm::createStringError(
            llvm::formatv("{0}: JSON nests deeper than {1} levels (at byte "
                          "{2}); refusing to parse it",
                          what, maxDepth, i)
                .str());
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::Error::success();
}
