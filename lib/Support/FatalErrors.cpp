//===- FatalErrors.cpp - One line for LLVM's fatal errors -----------------===//
//
// See zb/Support/FatalErrors.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/FatalErrors.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <unistd.h>

using namespace llvm;

namespace {

const char *toolName = "zb";
void (*cleanupHook)() = nullptr;

[[noreturn]] void report(StringRef reason) {
  if (void (*c)() = cleanupHook) {
    cleanupHook = nullptr; // once, even if the cleanup fails fatally
    c();
  }
  std::string line = zb::support::fatalErrorLine(toolName, reason) + "\n";
  (void)!::write(2, line.data(), line.size());
  ::_exit(1);
}

void onFatalError(void *, const char *reason, bool) { report(reason); }

void onBadAlloc(void *, const char *reason, bool) {
  report(std::string("out of memory: ") + (reason ? reason : "allocation failed"));
}

} // namespace

std::string zb::support::fatalErrorLine(StringRef tool, StringRef reason) {
  std::string line = (Twine(tool) + ": error: " + reason.trim()).str();
  const bool memory = reason.contains_insensitive("out of memory") ||
                      reason.contains("Cannot allocate memory") ||
                      reason.contains("bad_alloc");
  const bool threads = reason.contains("pthread_create") ||
                       reason.contains("Resource temporarily unavailable");
  if (memory || threads)
    line += " (the process hit a memory or thread limit: raise `ulimit -v` "
            "or `ulimit -u`)";
  return line;
}

void zb::support::installFatalErrorHandlers(const char *tool,
                                            void (*cleanup)()) {
  toolName = tool;
  cleanupHook = cleanup;
  install_fatal_error_handler(onFatalError, nullptr);
  install_bad_alloc_error_handler(onBadAlloc, nullptr);
}
