//===- FatalErrors.h - One line for LLVM's fatal errors ---------*- C++ -*-===//
//
// LLVM reports what it cannot recover from (a thread it cannot create, an
// allocation that fails inside LLVM or MLIR) with report_fatal_error or its
// bad-alloc handler: by default "LLVM ERROR: ...", a stack dump and SIGABRT,
// which reads like a crash of zb. The tools install these handlers instead:
// one line, "<tool>: error: <reason> (<what to change>)", and exit code 1.
// MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_FATALERRORS_H
#define ZB_SUPPORT_FATALERRORS_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace zb::support {

/// The line printed for a fatal error `reason` of `tool` (without the
/// newline): out-of-memory and thread-creation failures get the limits to
/// raise as advice.
std::string fatalErrorLine(llvm::StringRef tool, llvm::StringRef reason);

/// Installs LLVM's fatal-error and bad-alloc handlers for `tool` (a string
/// literal: it must outlive the process): each writes fatalErrorLine to
/// stderr and ends the process with exit code 1 (_exit: no destructors, no
/// stack dump). `cleanup`, when not null, runs first (e.g. removing a
/// compile's build directory).
void installFatalErrorHandlers(const char *tool, void (*cleanup)() = nullptr);

} // namespace zb::support

#endif // ZB_SUPPORT_FATALERRORS_H
