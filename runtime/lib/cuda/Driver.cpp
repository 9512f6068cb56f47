//===- Driver.cpp - zb runtime: loading the CUDA driver (dlopen) ----------===//

#include "Driver.h"

#include "zbrt/zbrt.h"

#include "../Internal.h"

#include <dlfcn.h>

#include <cstdlib>

using namespace zbrt::cuda;

namespace {

int gDevice = 0;
bool gLoaded = false;

template <typename Fn>
void resolve(void *library, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    zbrt::detail::fatalf("CUDA driver lacks %s", name);
}

const Driver *gDriver = nullptr;

Driver loadDriver() {
  char why[256];
  if (zbrt_cuda_available(why, sizeof why) != 0)
    zbrt::detail::fatalf("the CUDA backend cannot start: %s", why);
  const char *path = std::getenv("ZBRT_CUDA_DRIVER");
  void *lib = dlopen(path && *path ? path : "libcuda.so.1",
                     RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    zbrt::detail::fatalf("cannot load the CUDA driver: %s", dlerror());
  Driver d{};
  resolve(lib, "cuGetErrorName", d.cuGetErrorName);
  resolve(lib, "cuGetErrorString", d.cuGetErrorString);
  // check() can name errors from here on.
  gDriver = &d;
  resolve(lib, "cuInit", d.cuInit);
  resolve(lib, "cuDeviceGet", d.cuDeviceGet);
  resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount);
  resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent);
  resolve(lib, "cuModuleLoadData", d.cuModuleLoadData);
  resolve(lib, "cuModuleUnload", d.cuModuleUnload);
  resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction);
  resolve(lib, "cuLaunchKernel", d.cuLaunchKernel);
  resolve(lib, "cuStreamCreate", d.cuStreamCreate);
  resolve(lib, "cuStreamDestroy_v2", d.cuStreamDestroy);
  resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize);
  resolve(lib, "cuStreamQuery", d.cuStreamQuery);
  resolve(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent);
  resolve(lib, "cuEventCreate", d.cuEventCreate);
  resolve(lib, "cuEventDestroy_v2", d.cuEventDestroy);
  resolve(lib, "cuEventSynchronize", d.cuEventSynchronize);
  resolve(lib, "cuEventQuery", d.cuEventQuery);
  resolve(lib, "cuEventRecord", d.cuEventRecord);
  resolve(lib, "cuEventElapsedTime", d.cuEventElapsedTime);
  resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc);
  resolve(lib, "cuMemAllocManaged", d.cuMemAllocManaged);
  resolve(lib, "cuMemFree_v2", d.cuMemFree);
  resolve(lib, "cuMemcpyAsync", d.cuMemcpyAsync);
  resolve(lib, "cuMemsetD32Async", d.cuMemsetD32Async);
  resolve(lib, "cuMemsetD16Async", d.cuMemsetD16Async);
  check(d.cuInit(0), "cuInit");
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (gDevice < 0 || gDevice >= count)
    zbrt::detail::fatalf("CUDA device %d does not exist (%d device%s)",
                         gDevice, count, count == 1 ? "" : "s");
  CUdevice device = 0;
  check(d.cuDeviceGet(&device, gDevice), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&d.context, device),
        "cuDevicePrimaryCtxRetain");
  d.device = gDevice;
  gDriver = nullptr;
  return d;
}

} // namespace

void zbrt::cuda::setDevice(int device) {
  if (gLoaded)
    zbrt::detail::fatalf("the CUDA device is chosen before the first CUDA "
                         "call (asked for device %d after loading)",
                         device);
  gDevice = device;
}

void zbrt::cuda::check(CUresult result, const char *call) {
  if (result == kSuccess)
    return;
  const char *name = "unknown", *text = "unknown";
  const Driver *d = gLoaded ? &driver() : gDriver;
  if (d && d->cuGetErrorName)
    d->cuGetErrorName(result, &name);
  if (d && d->cuGetErrorString)
    d->cuGetErrorString(result, &text);
  char action[128];
  zbrt::detail::currentAction(action, sizeof action);
  zbrt::detail::fatalf("CUDA error in %s (%s): %s (%s)", call, action, name,
                       text);
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
