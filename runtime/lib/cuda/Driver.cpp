//===- Driver.cpp - zb runtime: the CUDA driver, probed and loaded --------===//
//
// The CUDA driver is opened with dlopen("libcuda.so.1") instead of being
// linked (-lcuda), so that a machine without a driver starts fine and gets a
// clear message only when the CUDA backend is asked for (docs/toolchain.md).
// ZBRT_CUDA_DRIVER=<path> overrides the library (tests use the toolkit's
// stub library to exercise the cuInit path, and the host-memory stand-in).
// zbrt_cuda_available's probe and the loading for use open it the same way
// (one symbol table); the probe is repeated on every call until a load has
// succeeded (the environment may name another library meanwhile).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "../DynamicLibrary.h"
#include "../Internal.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

namespace {

// CUresult values from cuda.h (not included: no build dependency on CUDA).
constexpr int kCudaErrorNoDevice = 100;
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorStubLibrary = 34;

int gDevice = 0;
std::atomic<int64_t> gHostDeviceBytes{0};
bool gLoaded = false;
/// The driver being loaded, so that check() names its errors.
const Driver *gLoading = nullptr;

/// Opens `library` and fills `d`'s entry points (null and `error` set when
/// it cannot).
void *openDriver(const char *library, Driver &d, std::string &error) {
#define ZBRT_CUDA_DRIVER_ROW(field, symbol, params) {symbol, d.field},
#define ZBRT_CUDA_DRIVER_OPTIONAL_ROW(field, symbol, params)                    \
  {symbol, d.field, /*optional=*/true},
  return openLibrary(
      library,
      {ZBRT_CUDA_DRIVER_FUNCTIONS(ZBRT_CUDA_DRIVER_ROW)
           ZBRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(ZBRT_CUDA_DRIVER_OPTIONAL_ROW)},
      error);
#undef ZBRT_CUDA_DRIVER_ROW
#undef ZBRT_CUDA_DRIVER_OPTIONAL_ROW
}

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

/// Opens the driver into `d`, initialises it and counts the devices: 0, or
/// nonzero with zbrt_cuda_available's reason in `msg`. The library stays
/// open when usable.
int32_t probeInto(Driver &d, char *msg, int64_t cap, int32_t *devices) {
  const char *library = libraryFromEnv("ZBRT_CUDA_DRIVER", "libcuda.so.1");
  std::string error;
  void *handle = openDriver(library, d, error);
  if (!handle)
    return report(msg, cap, error.rfind("cannot load", 0) == 0 ? 1 : 2,
                  "no CUDA driver (%s)", error.c_str());
  int err = d.cuInit(0);
  int count = 0;
  int32_t code = 0;
  if (err == kCudaErrorNoDevice)
    code = report(msg, cap, 3, "no CUDA device (cuInit: no device)");
  else if (err == kCudaErrorStubLibrary)
    code = report(msg, cap, 4,
                  "no CUDA driver (%s is the toolkit's stub library)", library);
  else if (err == kCudaErrorInsufficientDriver)
    code =
        report(msg, cap, 5,
               "no usable CUDA driver (cuInit: driver too old, error %d)", err);
  else if (err != 0)
    code = report(msg, cap, 6, "no usable CUDA driver (cuInit error %d)", err);
  else if ((err = d.cuDeviceGetCount(&count)) != 0 || count <= 0)
    code = report(msg, cap, 3,
                  "no CUDA device (cuDeviceGetCount: %d device%s, error %d)",
                  count, count == 1 ? "" : "s", err);
  if (code != 0) {
    dlcloseLibrary(handle);
    return code;
  }
  *devices = count;
  return report(msg, cap, 0, "%d CUDA device%s", count, count == 1 ? "" : "s");
}

Driver loadDriver() {
  Driver d{};
  char why[256];
  int32_t devices = 0;
  if (probeInto(d, why, sizeof why, &devices) != 0)
    fatalf("the CUDA backend cannot start: %s", why);
  // check() can name errors from here on.
  gLoading = &d;
  if (gDevice < 0 || gDevice >= devices)
    fatalf("CUDA device %d does not exist (%d device%s)", gDevice, devices,
           devices == 1 ? "" : "s");
  CUdevice device = 0;
  check(d.cuDeviceGet(&device, gDevice), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&d.context, device),
        "cuDevicePrimaryCtxRetain");
  d.device = gDevice;
  gLoading = nullptr;
  return d;
}

} // namespace

int32_t zbrt::cuda::probe(char *msg, int64_t cap, int32_t *devices) {
  Driver d{};
  return probeInto(d, msg, cap, devices);
}

void zbrt::cuda::setDevice(int device) {
  if (gLoaded)
    fatalf("the CUDA device is chosen before the first CUDA call (asked for "
           "device %d after loading)",
           device);
  gDevice = device;
}

void zbrt::cuda::countHostDeviceBytes(uint64_t bytes) {
  gHostDeviceBytes.fetch_add((int64_t)bytes, std::memory_order_relaxed);
}

int64_t zbrt::cuda::hostDeviceBytes() { return gHostDeviceBytes.load(); }

std::string zbrt::cuda::describeDeviceMemory() {
  const Driver &d = driver();
  size_t free = 0, total = 0;
  if (d.cuMemGetInfo(&free, &total) != kSuccess)
    return "device " + std::to_string(d.device) +
           " did not say how much memory it has free (cuMemGetInfo failed)";
  return "device " + std::to_string(d.device) + " has " +
         detail::formatBytes(free) + " free of " + detail::formatBytes(total);
}

void zbrt::cuda::check(CUresult result, const char *call, uint64_t bytes) {
  if (result == kSuccess)
    return;
  if (result == kErrorOutOfMemory && gLoaded) {
    const bool managed = std::strncmp(call, "cuMemAllocManaged", 17) == 0;
    const bool pinned = std::strncmp(call, "cuMemHostAlloc", 14) == 0;
    std::string where = describeDeviceMemory();
    detail::fatalOutOfMemory(pinned    ? detail::MemoryKind::Host
                             : managed ? detail::MemoryKind::Managed
                                       : detail::MemoryKind::Device,
                             call, bytes, where.c_str());
  }
  const char *name = "unknown", *text = "unknown";
  const Driver *d = gLoaded ? &driver() : gLoading;
  if (d && d->cuGetErrorName)
    d->cuGetErrorName(result, &name);
  if (d && d->cuGetErrorString)
    d->cuGetErrorString(result, &text);
  char action[128];
  detail::currentAction(action, sizeof action);
  fatalf("CUDA error in %s (%s): %s (%s)", call, action, name, text);
}

const Driver &zbrt::cuda::driver() {
  static Driver d = [] {
    Driver loaded = loadDriver();
    gLoaded = true;
    return loaded;
  }();
  thread_local bool current = false;
  if (!current) {
    current = true;
    check(d.cuCtxSetCurrent(d.context), "cuCtxSetCurrent");
  }
  return d;
}
