//===- DynamicLibrary.h - zb runtime: dlopen, symbol table ------*- C++ -*-===//
//
// Not installed. libzbrt never links CUDA: the driver (libcuda), cuBLAS and
// NCCL are opened with dlopen and their entry points resolved from a table
// of {name, slot} pairs with one loop, so a machine without them starts
// fine, and a library that lacks an entry point is named with the entry
// point in one message.
//
// Every entry point is counted: the slot receives a counting thunk (one per
// entry point name, a template instance per signature) that adds one to the
// name's counter and calls the library's function, so every call zbrt makes
// to the driver, cuBLAS or NCCL is counted here and nowhere else
// (callCounts(); zb-run's report, "driver_calls_by_name"). A thunk costs an
// indirect call and a relaxed atomic add.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_DYNAMICLIBRARY_H
#define ZBRT_LIB_DYNAMICLIBRARY_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace zbrt {

/// The calls made through the slots filled by openLibrary, per entry point
/// name (process-wide).
struct CallCounter {
  const char *name = nullptr;
  std::atomic<int64_t> calls{0};
};
/// The counter of `name` (created at the first request; never freed). Ends
/// the process when more than a few hundred names are counted.
CallCounter &callCounter(const char *name);
/// Every counted name with its calls so far, in the order first opened.
std::vector<std::pair<const char *, int64_t>> callCounts();

namespace detail {

/// Counting thunks for entry points of signature R(A...): slot I calls
/// targets[I] after counting on counters[I]. A name keeps its slot when its
/// library is opened again (the driver is probed more than once).
template <typename R, typename... A> struct CountingThunks {
  static constexpr size_t kSlots = 32;
  using Fn = R (*)(A...);
  static inline Fn targets[kSlots] = {};
  static inline CallCounter *counters[kSlots] = {};
  static inline size_t used = 0;

  template <size_t I> static R call(A... args) {
    counters[I]->calls.fetch_add(1, std::memory_order_relaxed);
    return targets[I](args...);
  }
  template <size_t... I> static Fn thunk(size_t i, std::index_sequence<I...>) {
    static constexpr Fn table[] = {&call<I>...};
    return table[i];
  }
  /// Replaces `*slot` (the library's function) by the counting thunk of
  /// `name`; leaves it uncounted when every slot of this signature is used.
  static void wrap(void **slot, const char *name) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    size_t i = 0;
    while (i < used && std::strcmp(counters[i]->name, name) != 0)
      ++i;
    if (i == kSlots)
      return;
    if (i == used) {
      counters[i] = &callCounter(name);
      ++used;
    }
    targets[i] = reinterpret_cast<Fn>(*slot);
    *slot =
        reinterpret_cast<void *>(thunk(i, std::make_index_sequence<kSlots>()));
  }
};

} // namespace detail

/// One entry point: its exported name and where its address goes.
struct Symbol {
  const char *name;
  void **slot;
  /// Optional entry points are left null when missing.
  bool optional = false;
  /// Installs the counting thunk into a filled slot.
  void (*count)(void **slot, const char *name) = nullptr;

  /// `slot` is a function pointer of any (non-variadic) type.
  template <typename R, typename... A>
  Symbol(const char *name, R (*&slot)(A...), bool optional = false)
      : name(name), slot(reinterpret_cast<void **>(&slot)), optional(optional),
        count(&detail::CountingThunks<R, A...>::wrap) {}
};

/// Opens `library` (RTLD_NOW | RTLD_LOCAL) and fills every slot of
/// `symbols` with a counting thunk of its entry point (see the file
/// comment). Returns the handle; on failure returns null with the reason
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
