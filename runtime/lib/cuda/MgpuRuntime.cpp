//===- MgpuRuntime.cpp - zb runtime: the mgpu* functions of MLIR's host code ===//
//
// MLIR's gpu-to-llvm lowering (MLIR 22) makes a rank program's host code call
// `mgpu*` functions to load its embedded fatbin, launch kernels, create
// streams and events and allocate memory. Debian ships no
// libmlir_cuda_runtime, and a rank program must not depend on MLIR at run
// time, so zbrt provides them here, over the CUDA driver API loaded with
// dlopen (never linked: a machine without a driver starts fine, see
// CudaDriver.cpp). Semantics follow MLIR's CudaRuntimeWrappers:
//   - one primary context of the default device (mgpuSetDefaultDevice,
//     default 0), made current on every call's thread;
//   - modules are loaded lazily: the global constructor that MLIR emits
//     calls mgpuModuleLoad before main, which only records the blob; the
//     driver loads it at the first mgpuModuleGetFunction;
//   - mgpuMemAlloc(bytes, stream, hostShared): device memory, or managed
//     (unified) memory when hostShared;
//   - every driver error ends the process through zbrt_fatal with the call,
//     the error's name and text ("CUDA error in cuLaunchKernel:
//     CUDA_ERROR_INVALID_VALUE (invalid argument)").
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/zbrt.h"

#include "../Internal.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace {

// Driver API types (cuda.h is not included: no build dependency on CUDA).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;

/// The driver functions zbrt uses, resolved once from libcuda.so.1 (or
/// ZBRT_CUDA_DRIVER).
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle *, CUdevice);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuModuleLoadData)(Handle *, const void *);
  CUresult (*cuModuleUnload)(Handle);
  CUresult (*cuModuleGetFunction)(Handle *, Handle, const char *);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, Handle, void **,
                             void **);
  CUresult (*cuStreamCreate)(Handle *, unsigned);
  CUresult (*cuStreamDestroy)(Handle);
  CUresult (*cuStreamSynchronize)(Handle);
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned);
  CUresult (*cuEventCreate)(Handle *, unsigned);
  CUresult (*cuEventDestroy)(Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, Handle);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, Handle);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, Handle);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  Handle context = nullptr;
};

constexpr unsigned kStreamNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDisableTiming = 0x2; // CU_EVENT_DISABLE_TIMING
constexpr unsigned kMemAttachGlobal = 0x1;    // CU_MEM_ATTACH_GLOBAL

int gDefaultDevice = 0;

template <typename Fn>
void resolve(void *library, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    zbrt::detail::fatalf("CUDA driver lacks %s", name);
}

void check(const Driver &d, CUresult result, const char *call) {
  if (result == 0)
    return;
  const char *name = "unknown", *text = "unknown";
  if (d.cuGetErrorName)
    d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(result, &text);
  zbrt::detail::fatalf("CUDA error in %s: %s (%s)", call, name, text);
}

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
  resolve(lib, "cuInit", d.cuInit);
  resolve(lib, "cuDeviceGet", d.cuDeviceGet);
  resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent);
  resolve(lib, "cuModuleLoadData", d.cuModuleLoadData);
  resolve(lib, "cuModuleUnload", d.cuModuleUnload);
  resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction);
  resolve(lib, "cuLaunchKernel", d.cuLaunchKernel);
  resolve(lib, "cuStreamCreate", d.cuStreamCreate);
  resolve(lib, "cuStreamDestroy_v2", d.cuStreamDestroy);
  resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize);
  resolve(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent);
  resolve(lib, "cuEventCreate", d.cuEventCreate);
  resolve(lib, "cuEventDestroy_v2", d.cuEventDestroy);
  resolve(lib, "cuEventSynchronize", d.cuEventSynchronize);
  resolve(lib, "cuEventRecord", d.cuEventRecord);
  resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc);
  resolve(lib, "cuMemAllocManaged", d.cuMemAllocManaged);
  resolve(lib, "cuMemFree_v2", d.cuMemFree);
  resolve(lib, "cuMemcpyAsync", d.cuMemcpyAsync);
  resolve(lib, "cuMemsetD32Async", d.cuMemsetD32Async);
  resolve(lib, "cuMemsetD16Async", d.cuMemsetD16Async);
  check(d, d.cuInit(0), "cuInit");
  CUdevice device = 0;
  check(d, d.cuDeviceGet(&device, gDefaultDevice), "cuDeviceGet");
  check(d, d.cuDevicePrimaryCtxRetain(&d.context, device),
        "cuDevicePrimaryCtxRetain");
  return d;
}

/// The driver with the primary context current on this thread.
const Driver &driver() {
  static Driver d = loadDriver();
  thread_local bool current = false;
  if (!current) {
    check(d, d.cuCtxSetCurrent(d.context), "cuCtxSetCurrent");
    current = true;
  }
  return d;
}

/// A module as MLIR's global constructor registers it: the blob, loaded by
/// the driver at the first use.
struct LazyModule {
  const void *blob;
  Handle module = nullptr;
  std::once_flag loaded;
};

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return new LazyModule{data};
}

void *mgpuModuleLoadJIT(void *data, int /*optLevel*/) {
  return new LazyModule{data};
}

void mgpuModuleUnload(void *module) {
  auto *m = static_cast<LazyModule *>(module);
  // Called from global destructors: only unload what was loaded.
  if (m->module)
    driver().cuModuleUnload(m->module);
  delete m;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  const Driver &d = driver();
  auto *m = static_cast<LazyModule *>(module);
  std::call_once(m->loaded, [&] {
    check(d, d.cuModuleLoadData(&m->module, m->blob), "cuModuleLoadData");
  });
  Handle function = nullptr;
  check(d, d.cuModuleGetFunction(&function, m->module, name),
        "cuModuleGetFunction");
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  const Driver &d = driver();
  check(d,
        d.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                         blockZ, smem, stream, params, extra),
        "cuLaunchKernel");
}

void *mgpuStreamCreate() {
  const Driver &d = driver();
  Handle stream = nullptr;
  check(d, d.cuStreamCreate(&stream, kStreamNonBlocking), "cuStreamCreate");
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  const Driver &d = driver();
  check(d, d.cuStreamDestroy(stream), "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  const Driver &d = driver();
  check(d, d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  const Driver &d = driver();
  check(d, d.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  const Driver &d = driver();
  Handle event = nullptr;
  check(d, d.cuEventCreate(&event, kEventDisableTiming), "cuEventCreate");
  return event;
}

void mgpuEventDestroy(void *event) {
  const Driver &d = driver();
  check(d, d.cuEventDestroy(event), "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  const Driver &d = driver();
  check(d, d.cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  const Driver &d = driver();
  check(d, d.cuEventRecord(event, stream), "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/, bool isHostShared) {
  const Driver &d = driver();
  CUdeviceptr ptr = 0;
  if (sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    check(d, d.cuMemAllocManaged(&ptr, sizeBytes, kMemAttachGlobal),
          "cuMemAllocManaged");
  else
    check(d, d.cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void * /*stream*/) {
  if (!ptr)
    return;
  const Driver &d = driver();
  check(d, d.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  const Driver &d = driver();
  check(d,
        d.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                        reinterpret_cast<CUdeviceptr>(src), sizeBytes, stream),
        "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  const Driver &d = driver();
  check(d,
        d.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
        "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream) {
  const Driver &d = driver();
  check(d,
        d.cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                           stream),
        "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t device) { gDefaultDevice = device; }

} // extern "C"
