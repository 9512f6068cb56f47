//===- FakeDeviceMemory.h - the stand-in's device memory --------*- C++ -*-===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): device memory (cuMemAlloc) that
// the host cannot touch, as on a GPU (FakeDeviceMemory.cpp's file comment).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKEDEVICEMEMORY_H
#define ZB_UNITTESTS_RUNTIME_FAKEDEVICEMEMORY_H

#include <cstddef>

namespace zbfake {

/// `bytes` of zeroed device memory, 256-byte aligned, in the arena; null
/// when the arena is full. Installs the fault handler (again, if something
/// replaced it since).
void *deviceAllocate(size_t bytes);
/// The arena's free and total bytes (cuMemGetInfo); false if it cannot be
/// reserved.
bool deviceMemoryInfo(size_t *free, size_t *total);
/// Frees a block of deviceAllocate; false when `p` is not one.
bool deviceFree(void *p);
/// Whether `p` lies in the arena (live, freed or never allocated).
bool inDeviceArena(const void *p);

/// While one exists (on any thread), the arena is readable and writable:
/// the stand-in's own copies, GEMMs, kernels and messages hold one. Nests.
class DeviceAccess {
public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess &) = delete;
  DeviceAccess &operator=(const DeviceAccess &) = delete;
};

} // namespace zbfake

#endif // ZB_UNITTESTS_RUNTIME_FAKEDEVICEMEMORY_H
