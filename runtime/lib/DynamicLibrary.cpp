//===- DynamicLibrary.cpp - zb runtime: dlopen with a symbol table --------===//

#include "DynamicLibrary.h"

#include <dlfcn.h>

#include <cstdlib>

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
