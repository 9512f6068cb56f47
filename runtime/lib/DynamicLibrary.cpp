//===- DynamicLibrary.cpp - zb runtime: dlopen with a symbol table --------===//

#include "DynamicLibrary.h"

#include "Internal.h"

#include <dlfcn.h>

#include <cstdlib>

namespace {
constexpr size_t kMaxNames = 256;
zbrt::CallCounter gCounters[kMaxNames];
std::atomic<size_t> gNames{0};
std::mutex gNamesMutex;
} // namespace

zbrt::CallCounter &zbrt::callCounter(const char *name) {
  std::lock_guard<std::mutex> lock(gNamesMutex);
  size_t n = gNames.load();
  for (size_t i = 0; i < n; ++i)
    if (std::strcmp(gCounters[i].name, name) == 0)
      return gCounters[i];
  if (n == kMaxNames)
    detail::fatalf("zbrt counts at most %zu library entry points (%s)",
                   kMaxNames, name);
  gCounters[n].name = name;
  gNames.store(n + 1);
  return gCounters[n];
}

std::vector<std::pair<const char *, int64_t>> zbrt::callCounts() {
  std::vector<std::pair<const char *, int64_t>> counts;
  size_t n = gNames.load();
  for (size_t i = 0; i < n; ++i)
    counts.emplace_back(gCounters[i].name, gCounters[i].calls.load());
  return counts;
}

void *zbrt::openLibrary(const char *library,
                        std::initializer_list<Symbol> symbols,
                        std::string &error) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = std::string("cannot load ") + library + " (" +
            (why ? why : "unknown error") + ")";
    return nullptr;
  }
  for (const Symbol &s : symbols) {
    *s.slot = dlsym(handle, s.name);
    if (!*s.slot && !s.optional) {
      error = std::string(library) + " lacks " + s.name;
      dlclose(handle);
      return nullptr;
    }
  }
  for (const Symbol &s : symbols)
    if (*s.slot)
      s.count(s.slot, s.name);
  return handle;
}

const char *zbrt::libraryFromEnv(const char *variable, const char *fallback) {
  const char *path = std::getenv(variable);
  return path && *path ? path : fallback;
}

void zbrt::dlcloseLibrary(void *handle) {
  if (handle)
    dlclose(handle);
}
