//===- JSON.h - Checks every reader of outside JSON runs first --*- C++ -*-===//
//
// MLIR-free (ZBSupport, namespace zb::support). Used by the readers of schedule JSON
// (lib/Schedule), plan.json, profile.json and checkpoint.json (lib/Formats).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_JSON_H
#define ZB_SUPPORT_JSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace zb::support {

/// Every reader of JSON zb gets from outside (schedule JSON, plan.json,
/// profile.json, checkpoint.json) calls this before llvm::json::parse, whose
/// recursion a deeply nested document ("[[[[...") would overflow: an error
/// "<what>: JSON nests deeper than <maxDepth> levels (at byte <i>); refusing
/// to parse it" when arrays/objects nest deeper than `maxDepth`. Strings
/// (with escapes) are skipped.
llvm::Error checkJSONNesting(llvm::StringRef text, llvm::StringRef what,
                             unsigned maxDepth = 64);

} // namespace zb::support

#endif // ZB_SUPPORT_JSON_H
