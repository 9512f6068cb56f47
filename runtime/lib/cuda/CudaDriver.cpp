//===- CudaDriver.cpp - zb runtime: CUDA driver probe (dlopen) ------------===//
//
// The CUDA driver is loaded with dlopen("libcuda.so.1") instead of being
// linked (-lcuda), so that a machine without a driver starts fine and gets a
// clear message only when the CUDA backend is asked for (TOOLCHAIN.md).
// ZBRT_CUDA_DRIVER=<path> overrides the library (tests use the toolkit's
// stub library to exercise the cuInit path).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "zbrt/zbrt.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace {

using CuInitFn = int (*)(unsigned);
using CuDeviceGetCountFn = int (*)(int *);

// CUresult values from cuda.h (not included: no build dependency on CUDA).
constexpr int kCudaErrorNoDevice = 100;
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorStubLibrary = 34;

int32_t report(char *msg, int64_t cap, int32_t code, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

int32_t report(char *msg, int64_t cap, int32_t code, const char *format, ...) {
  if (msg && cap > 0) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(msg, (size_t)cap, format, args);
    va_end(args);
  }
  return code;
}

} // namespace

extern "C" int32_t zbrt_cuda_available(char *msg, int64_t cap) {
  int32_t devices = 0;
  return zbrt::cuda::probe(msg, cap, &devices);
}

int32_t zbrt::cuda::probe(char *msg, int64_t cap, int32_t *devices) {
  const char *library = std::getenv("ZBRT_CUDA_DRIVER");
  if (!library || !*library)
    library = "libcuda.so.1";
  // Keep the handle for the process lifetime once the driver is usable.
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return report(msg, cap, 1, "no CUDA driver (cannot load %s: %s)", library,
                  why ? why : "unknown error");
  }
  auto cuInit = reinterpret_cast<CuInitFn>(dlsym(handle, "cuInit"));
  auto cuDeviceGetCount =
      reinterpret_cast<CuDeviceGetCountFn>(dlsym(handle, "cuDeviceGetCount"));
  if (!cuInit || !cuDeviceGetCount) {
    dlclose(handle);
    return report(msg, cap, 2,
                  "no CUDA driver (%s lacks cuInit/cuDeviceGetCount)", library);
  }
  int err = cuInit(0);
  if (err == kCudaErrorNoDevice) {
    dlclose(handle);
    return report(msg, cap, 3, "no CUDA device (cuInit: no device)");
  }
  if (err == kCudaErrorStubLibrary) {
    dlclose(handle);
    return report(msg, cap, 4,
                  "no CUDA driver (%s is the toolkit's stub library)", library);
  }
  if (err == kCudaErrorInsufficientDriver) {
    dlclose(handle);
    return report(msg, cap, 5,
                  "no usable CUDA driver (cuInit: driver too old, error %d)",
                  err);
  }
  if (err != 0) {
    dlclose(handle);
    return report(msg, cap, 6, "no usable CUDA driver (cuInit error %d)", err);
  }
  int count = 0;
  err = cuDeviceGetCount(&count);
  if (err != 0 || count <= 0) {
    dlclose(handle);
    return report(msg, cap, 3,
                  "no CUDA device (cuDeviceGetCount: %d device%s"
                  ", error %d)",
                  count, count == 1 ? "" : "s", err);
  }
  *devices = count;
  return report(msg, cap, 0, "%d CUDA device%s", count, count == 1 ? "" : "s");
}
