//===- Mgpu.cpp - zb runtime: the driver work of the mgpu* functions ------===//
//
// See Mgpu.h and abi/Mgpu.cpp. Modules are loaded lazily and once;
// nothing is created or destroyed per launch: streams and events go back to
// a pool and are handed out again.
//
//===----------------------------------------------------------------------===//

#include "Mgpu.h"

#include "Driver.h"

#include "../Internal.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

using namespace zbrt;
using namespace zbrt::cuda;

namespace {

/// A module as MLIR's global constructor registers it: the blob, loaded by
/// the driver at the first use, and its kernels, resolved at their first
/// use (by name pointer: the host code's names are constants; the text is
/// compared too).
struct LazyModule {
  const void *blob;
  int registrations = 0;
  Handle module = nullptr;
  std::once_flag loaded;
  std::unordered_map<const char *, std::pair<std::string, Handle>> functions;
};

std::mutex gMutex;
/// blob -> its module (never freed: unloaded by global destructors).
std::unordered_map<const void *, LazyModule *> &gModules =
    *new std::unordered_map<const void *, LazyModule *>;
/// Streams and events the host code destroyed, handed out again.
std::vector<Handle> &gFreeStreams = *new std::vector<Handle>;
std::vector<Handle> &gFreeEvents = *new std::vector<Handle>;

Handle takeFrom(std::vector<Handle> &pool) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (pool.empty())
    return nullptr;
  Handle h = pool.back();
  pool.pop_back();
  return h;
}

void giveBack(std::vector<Handle> &pool, Handle h) {
  std::lock_guard<std::mutex> lock(gMutex);
  pool.push_back(h);
}

} // namespace

void *mgpu::registerModule(const void *blob) {
  std::lock_guard<std::mutex> lock(gMutex);
  LazyModule *&m = gModules[blob];
  if (!m)
    m = new LazyModule{blob};
  ++m->registrations;
  return m;
}

void mgpu::unregisterModule(void *module) {
  auto *m = static_cast<LazyModule *>(module);
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (--m->registrations > 0)
      return;
    gModules.erase(m->blob);
  }
  // Called from global destructors: only unload what was loaded.
  if (m->module)
    driver().cuModuleUnload(m->module);
  delete m;
}

void *mgpu::moduleFunction(void *module, const char *name) {
  auto *m = static_cast<LazyModule *>(module);
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = m->functions.find(name);
    if (it != m->functions.end() && it->second.first == name)
      return it->second.second;
  }
  const Driver &d = driver();
  std::call_once(m->loaded, [&] {
    check(d.cuModuleLoadData(&m->module, m->blob), "cuModuleLoadData");
  });
  Handle function = nullptr;
  check(d.cuModuleGetFunction(&function, m->module, name),
        "cuModuleGetFunction");
  std::lock_guard<std::mutex> lock(gMutex);
  m->functions[name] = {name, function};
  return function;
}

void mgpu::launchKernel(void *function, const unsigned grid[3],
                        const unsigned block[3], unsigned smem, void *stream,
                        void **params, void **extra) {
  check(driver().cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0],
                                block[1], block[2], smem, stream, params,
                                extra),
        "cuLaunchKernel");
}

void *mgpu::createStream() {
  if (Handle stream = takeFrom(gFreeStreams))
    return stream;
  Handle stream = nullptr;
  check(driver().cuStreamCreate(&stream, kStreamNonBlocking),
        "cuStreamCreate");
  return stream;
}

void mgpu::destroyStream(void *stream) {
  // The stream's work goes on; work of its next user is ordered after it.
  giveBack(gFreeStreams, stream);
}

void mgpu::synchronizeStream(void *stream) {
  check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void mgpu::streamWaitEvent(void *stream, void *event) {
  check(driver().cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

void *mgpu::createEvent() {
  if (Handle event = takeFrom(gFreeEvents))
    return event;
  Handle event = nullptr;
  check(driver().cuEventCreate(&event, kEventDisableTiming), "cuEventCreate");
  return event;
}

void mgpu::destroyEvent(void *event) {
  // A later cuEventRecord replaces what it captured, as for a new event.
  giveBack(gFreeEvents, event);
}

void mgpu::synchronizeEvent(void *event) {
  check(driver().cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpu::recordEvent(void *event, void *stream) {
  check(driver().cuEventRecord(event, stream), "cuEventRecord");
}

void *mgpu::allocate(uint64_t bytes, bool hostShared,
                     bool nullIfOutOfMemory) {
  const Driver &d = driver();
  CUdeviceptr ptr = 0;
  if (bytes == 0)
    return nullptr;
  const char *call = hostShared ? "cuMemAllocManaged" : "cuMemAlloc";
  CUresult result = hostShared
                        ? d.cuMemAllocManaged(&ptr, bytes, kMemAttachGlobal)
                        : d.cuMemAlloc(&ptr, bytes);
  if (result == kErrorOutOfMemory && nullIfOutOfMemory)
    return nullptr;
  check(result, call, bytes);
  return reinterpret_cast<void *>(ptr);
}

void mgpu::release(void *pointer) {
  check(driver().cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)),
        "cuMemFree");
}

void mgpu::copy(void *dst, const void *src, size_t bytes, void *stream) {
  countHostDeviceBytes(bytes);
  check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                               reinterpret_cast<CUdeviceptr>(src), bytes,
                               stream),
        "cuMemcpyAsync");
}

void mgpu::fill32(void *dst, unsigned value, size_t count, void *stream) {
  check(driver().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                  count, stream),
        "cuMemsetD32Async");
}

void mgpu::fill16(void *dst, unsigned short value, size_t count,
                  void *stream) {
  check(driver().cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                  count, stream),
        "cuMemsetD16Async");
}
