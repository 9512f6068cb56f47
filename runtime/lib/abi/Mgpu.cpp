//===- Mgpu.cpp - zb runtime: the mgpu* functions of MLIR's host code ----===//
//
// MLIR's gpu-to-llvm lowering (MLIR 22) makes a rank program's host code call
// `mgpu*` functions to load its embedded fatbin, launch kernels, create
// streams and events and allocate memory. Debian ships no
// libmlir_cuda_runtime, and a rank program must not depend on MLIR at run
// time, so zbrt provides them here, over the CUDA driver API loaded with
// dlopen (never linked: a machine without a driver starts fine, see
// Driver.cpp). Semantics follow MLIR's CudaRuntimeWrappers:
//   - one primary context of the default device (mgpuSetDefaultDevice,
//     default 0), made current on every call's thread;
//   - modules are loaded lazily and once: the global constructor that MLIR
//     emits calls mgpuModuleLoad before main, which only records the blob
//     (one module per blob, however often it is registered); the driver
//     loads it at the first mgpuModuleGetFunction, and each kernel is
//     resolved once (MLIR's host code asks for it before every launch);
//   - nothing is created or destroyed per launch: streams and events that
//     the host code destroys go back to a pool and are handed out again;
//   - mgpuMemAlloc(bytes, stream, hostShared): device memory, or managed
//     (unified) memory when hostShared;
//   - under zb-run --backend cuda (zbrt_cuda_start) every stream the host
//     code creates is the rank's compute stream (Backend::computeStream),
//     and synchronising it waits under the communication watchdog
//     (Backend::synchronizeComputeStream); its kernels go to the backend,
//     which launches them or replays them with the step's CUDA graph
//     (Backend::launchKernel, cuda/StepGraph.h), and other work on it ends
//     the graph's segment first (Backend::uncapturedWork);
//   - every driver error ends the process through zbrt_fatal with the call,
//     the pass in progress, the error's name and text ("CUDA error in
//     cuLaunchKernel (in F of stage 0, microbatch 1):
//     CUDA_ERROR_INVALID_VALUE (invalid argument)").
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/zbrt.h"

#include "../FaultInjection.h"
#include "../cuda/Driver.h"
#include "BackendSelection.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using namespace zbrt::cuda;

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

LazyModule *registerModule(const void *data) {
  std::lock_guard<std::mutex> lock(gMutex);
  LazyModule *&m = gModules[data];
  if (!m)
    m = new LazyModule{data};
  ++m->registrations;
  return m;
}

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

/// Under zb-run --backend cuda every stream MLIR's host code creates is the
/// rank's compute stream (zbrt.h, "CUDA backend"): kernels, cuBLAS GEMMs and
/// the events that order communication share one order.
bool isComputeStream(void *stream) {
  return stream && stream == zbrt::backend().computeStream();
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return registerModule(data);
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return registerModule(data);
}

void mgpuModuleUnload(void *module) {
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

void *mgpuModuleGetFunction(void *module, const char *name) {
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

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  const Driver &d = driver();
  // The N-th launch of this rank gets an empty grid, which the driver
  // refuses (FaultInjection.h).
  static long launches = 0;
  if (zbrt::faults().launchError(++launches))
    gridX = 0;
  if (isComputeStream(stream)) {
    // The backend launches it, or replays it with the step's graph.
    const unsigned grid[3] = {(unsigned)gridX, (unsigned)gridY,
                              (unsigned)gridZ};
    const unsigned block[3] = {(unsigned)blockX, (unsigned)blockY,
                               (unsigned)blockZ};
    zbrt::backend().launchKernel(function, grid, block, (unsigned)smem,
                                 params);
    return;
  }
  check(d.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                         smem, stream, params, extra),
        "cuLaunchKernel");
}

void *mgpuStreamCreate() {
  if (void *compute = zbrt::backend().computeStream())
    return compute;
  if (Handle stream = takeFrom(gFreeStreams))
    return stream;
  const Driver &d = driver();
  Handle stream = nullptr;
  check(d.cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  // The stream's work goes on; work of its next user is ordered after it.
  if (stream && !isComputeStream(stream))
    giveBack(gFreeStreams, stream);
}

void mgpuStreamSynchronize(void *stream) {
  if (isComputeStream(stream)) {
    zbrt::backend().synchronizeComputeStream();
    return;
  }
  const Driver &d = driver();
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  check(d.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  if (Handle event = takeFrom(gFreeEvents))
    return event;
  const Driver &d = driver();
  Handle event = nullptr;
  check(d.cuEventCreate(&event, kEventDisableTiming), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  // A later cuEventRecord replaces what it captured, as for a new event.
  if (event)
    giveBack(gFreeEvents, event);
}

void mgpuEventSynchronize(void *event) {
  const Driver &d = driver();
  check(d.cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  check(d.cuEventRecord(event, stream), "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/, bool isHostShared) {
  zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  CUdeviceptr ptr = 0;
  if (sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    check(d.cuMemAllocManaged(&ptr, sizeBytes, kMemAttachGlobal),
          "cuMemAllocManaged");
  else
    check(d.cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void * /*stream*/) {
  if (!ptr)
    return;
  zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  countHostDeviceBytes(sizeBytes);
  check(d.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                        reinterpret_cast<CUdeviceptr>(src), sizeBytes, stream),
        "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  check(d.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
        "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  if (isComputeStream(stream))
    zbrt::backend().uncapturedWork();
  const Driver &d = driver();
  check(d.cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
        "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t device) { zbrt::cuda::setDevice(device); }

} // extern "C"
