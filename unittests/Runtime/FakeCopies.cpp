//===- FakeCopies.cpp - the stand-in's host<->device copies and memsets ---===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp has the rest of the driver):
// cuMemcpyHtoDAsync_v2 (from pageable host memory, staged at the call, then
// ordered on its stream; refused during capture), cuMemcpyDtoH_v2 (a
// synchronous copy) between host memory (any) and device memory (a live
// allocation: checked), and cuMemsetD8Async, ordered on its stream like
// cuMemcpyAsync and captured into a graph like the other memsets. The device side is touched with the
// arena open (FakeDeviceMemory.cpp), as the copy engine would.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"
#include "FakeGraph.h"

#include <cstring>
#include <vector>

using namespace zbfake;

extern "C" {

CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src,
                              size_t bytes, void *stream) {
  // Pageable host memory cannot be a graph node.
  if (CUresult r = refuseWhileCapturing(stream, "cuMemcpyHtoDAsync"))
    return r;
  if (!isDevice(reinterpret_cast<void *>(dst), bytes, "cuMemcpyHtoDAsync dst"))
    return kInvalidValue;
  ++gStats.memcpys;
  noteWrite(stream, reinterpret_cast<void *>(dst));
  // The driver stages pageable memory before it returns: so does this.
  std::vector<char> staged(static_cast<const char *>(src),
                           static_cast<const char *>(src) + bytes);
  enqueueOrRun(stream, nullptr, [dst, staged = std::move(staged)] {
    DeviceAccess open;
    std::memcpy(reinterpret_cast<void *>(dst), staged.data(), staged.size());
  });
  return kOk;
}

CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes) {
  if (int sticky = stickyError())
    return sticky;
  if (!isDevice(reinterpret_cast<void *>(src), bytes, "cuMemcpyDtoH src"))
    return kInvalidValue;
  ++gStats.memcpys;
  DeviceAccess open;
  std::memcpy(dst, reinterpret_cast<void *>(src), bytes);
  return kOk;
}

CUresult cuMemsetD8Async(unsigned long long dst, unsigned char value,
                         size_t n, void *stream) {
  if (capturing(stream)) {
    captureNode(stream,
                [dst, value, n] { return cuMemsetD8Async(dst, value, n, nullptr); });
    return kOk;
  }
  if (!isDevice(reinterpret_cast<void *>(dst), n, "cuMemsetD8Async"))
    return kInvalidValue;
  noteWrite(stream, reinterpret_cast<void *>(dst));
  enqueueOrRun(stream, nullptr, [dst, value, n] {
    DeviceAccess open;
    std::memset(reinterpret_cast<void *>(dst), value, n);
  });
  return kOk;
}

} // extern "C"
