//===- DynamicLibrary.h - zb runtime: dlopen, symbol table ------*- C++ -*-===//
//
// Not installed. libzbrt never links CUDA: the driver (libcuda), cuBLAS and
// NCCL are opened with dlopen and their entry points resolved from a table
// of {name, slot} pairs with one loop, so a machine without them starts
// fine, and a library that lacks an entry point is named with the entry
// point in one message.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_DYNAMICLIBRARY_H
#define ZBRT_LIB_DYNAMICLIBRARY_H

#include <initializer_list>
#include <string>

namespace zbrt {

/// One entry point: its exported name and where its address goes.
struct Symbol {
  const char *name;
  void **slot;
  /// Optional entry points are left null when missing.
  bool optional = false;

  /// `slot` is a function pointer of any type.
  template <typename Fn>
  Symbol(const char *name, Fn *&slot, bool optional = false)
      : name(name), slot(reinterpret_cast<void **>(&slot)), optional(optional) {
  }
};

/// Opens `library` (RTLD_NOW | RTLD_LOCAL) and fills every slot of
/// `symbols`. Returns the handle; on failure returns null with the reason
/// in `error` ("cannot load <library> (<dlerror>)" or "<library> lacks
/// <name>"), the library closed again and the slots unspecified.
void *openLibrary(const char *library, std::initializer_list<Symbol> symbols,
                  std::string &error);

/// dlclose of a handle from openLibrary.
void dlcloseLibrary(void *handle);

/// `variable`'s value when set and not empty, else `fallback` (the library
/// overrides ZBRT_CUDA_DRIVER, ZBRT_CUBLAS and ZBRT_NCCL).
const char *libraryFromEnv(const char *variable, const char *fallback);

} // namespace zbrt

#endif // ZBRT_LIB_DYNAMICLIBRARY_H
