//===- Device.cpp - zb runtime: the rank's device, events, staging --------===//

#include "Device.h"

#include "../DynamicLibrary.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

using namespace zbrt::cuda;

Handle Device::takeEvent() {
  if (!freeEvents.empty()) {
    Handle e = freeEvents.back();
    freeEvents.pop_back();
    return e;
  }
  Handle e = nullptr;
  check(driver().cuEventCreate(&e, kEventDisableTiming), "cuEventCreate");
  return e;
}

Handle Device::recordOn(Handle stream) {
  Handle e = takeEvent();
  check(driver().cuEventRecord(e, stream), "cuEventRecord");
  return e;
}

void Device::streamWaits(Handle waiter, Handle stream) {
  Handle e = recordOn(stream);
  check(driver().cuStreamWaitEvent(waiter, e, 0), "cuStreamWaitEvent");
  // Reusable once recorded work is enqueued: a later record replaces it and
  // cuStreamWaitEvent has captured the current one.
  release(e);
}

bool Device::eventDone(Handle e) {
  CUresult r = driver().cuEventQuery(e);
  if (r == kNotReady)
    return false;
  check(r, "cuEventQuery");
  return true;
}

void Device::reapStaging() {
  size_t kept = 0;
  for (Staging &s : busyStaging) {
    if (eventDone(s.done)) {
      release(s.done);
      s.done = nullptr;
      freeStaging.push_back(s);
      continue;
    }
    busyStaging[kept++] = s;
  }
  busyStaging.resize(kept);
}

Staging Device::takeStaging(size_t bytes) {
  reapStaging();
  size_t best = freeStaging.size();
  for (size_t i = 0; i < freeStaging.size(); ++i)
    if (freeStaging[i].capacity >= bytes &&
        (best == freeStaging.size() ||
         freeStaging[i].capacity < freeStaging[best].capacity))
      best = i;
  if (best != freeStaging.size()) {
    Staging s = freeStaging[best];
    freeStaging.erase(freeStaging.begin() + best);
    return s;
  }
  Staging s;
  s.capacity = bytes ? (bytes + 255) / 256 * 256 : 256;
  check(driver().cuMemAlloc(&s.ptr, s.capacity),
        "cuMemAlloc (a message's staging buffer)", s.capacity);
  ++stats.stagingAllocations;
  return s;
}

void zbrt::cuda::addCallCounts(ZbrtCudaStats &out) {
  size_t listed = 0;
  for (const auto &[name, calls] : callCounts()) {
    out.driverCalls += calls;
    if (!std::strcmp(name, "cuLaunchKernel"))
      out.kernelLaunches += calls;
    else if (!std::strcmp(name, "cuGraphLaunch"))
      out.graphLaunches += calls;
    else if (!std::strcmp(name, "cuStreamSynchronize") ||
             !std::strcmp(name, "cuEventSynchronize") ||
             !std::strcmp(name, "cuCtxSynchronize"))
      out.hostSynchronizations += calls;
    if (calls == 0 || listed == ZBRT_CUDA_CALL_NAMES)
      continue;
    ZbrtCallCount &c = out.driverCallsByName[listed++];
    std::snprintf(c.name, sizeof c.name, "%s", name);
    c.calls = calls;
  }
  out.hostDeviceBytes += hostDeviceBytes();
}

void zbrt::cuda::checkEmulatedKernelArgument(const char *kernel,
                                              int64_t argument,
                                              const void *pointer) {
  using Check = CUresult (*)(const char *, int64_t, const void *);
  static const Check checkArgument = []() -> Check {
    void *lib = dlopen(zbrt::libraryFromEnv("ZBRT_CUDA_DRIVER", "libcuda.so.1"),
                       RTLD_NOW | RTLD_NOLOAD);
    return lib ? reinterpret_cast<Check>(
                     dlsym(lib, "zb_fake_cuda_check_kernel_argument"))
               : nullptr;
  }();
  if (checkArgument)
    check(checkArgument(kernel, argument, pointer),
          "an emulated kernel launch");
}
