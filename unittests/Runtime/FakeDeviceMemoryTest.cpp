//===- FakeDeviceMemoryTest.cpp - the stand-in's device memory faults -----===//
//
// libzb_fake_cuda.so's device memory (FakeDeviceMemory.cpp) behaves like a
// GPU's: the host dereferencing a cuMemAlloc pointer dies naming the
// address and the allocation, while the stand-in's own copies reach it;
// managed and pinned host memory stay readable by the host; a fault
// elsewhere still reaches the handler installed before the stand-in's.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using CUresult = int;
using Ptr = unsigned long long;

struct Driver {
  void *lib = nullptr;
  CUresult (*memAlloc)(Ptr *, size_t) = nullptr;
  CUresult (*memAllocManaged)(Ptr *, size_t, unsigned) = nullptr;
  CUresult (*memHostAlloc)(void **, size_t, unsigned) = nullptr;
  CUresult (*memFree)(Ptr) = nullptr;
  CUresult (*memcpyAsync)(Ptr, Ptr, size_t, void *) = nullptr;
  CUresult (*memsetD32)(Ptr, unsigned, size_t, void *) = nullptr;

  Driver() {
    lib = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return;
    get(memAlloc, "cuMemAlloc_v2");
    get(memAllocManaged, "cuMemAllocManaged");
    get(memHostAlloc, "cuMemHostAlloc");
    get(memFree, "cuMemFree_v2");
    get(memcpyAsync, "cuMemcpyAsync");
    get(memsetD32, "cuMemsetD32Async");
  }
  template <typename F> void get(F &f, const char *name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
  }
  Ptr device(size_t bytes) {
    Ptr p = 0;
    EXPECT_EQ(memAlloc(&p, bytes), 0);
    return p;
  }
};

float readHost(Ptr p, size_t i) {
  return reinterpret_cast<volatile float *>(p)[i];
}

TEST(FakeDeviceMemory, HostReadOfDeviceMemoryDiesNamingTheAllocation) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  Ptr p = d.device(64); // in this process: the fork of the death test has it
  char expected[200];
  std::snprintf(expected, sizeof expected,
                "fake CUDA: the host read or wrote device memory at %#llx "
                "\\(allocation of 64 bytes at %#llx\\): a GPU would fault",
                p + 12, p);
  EXPECT_EXIT((void)readHost(p, 3), testing::ExitedWithCode(1), expected);
}

TEST(FakeDeviceMemory, HostWriteOfDeviceMemoryDies) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  EXPECT_EXIT(
      {
        Ptr p = d.device(1000);
        reinterpret_cast<volatile float *>(p)[100] = 1.0f;
      },
      testing::ExitedWithCode(1),
      "host read or wrote device memory at 0x[0-9a-f]+ \\(allocation of "
      "1000 bytes");
}

TEST(FakeDeviceMemory, HostReadOfFreedDeviceMemoryDies) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  EXPECT_EXIT(
      {
        Ptr p = d.device(64);
        d.memFree(p);
        (void)readHost(p, 0);
      },
      testing::ExitedWithCode(1),
      "device memory at 0x[0-9a-f]+ \\(in no live allocation");
}

TEST(FakeDeviceMemory, CopiesAndSetsReachDeviceMemory) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  constexpr size_t n = 300;
  void *pinned = nullptr;
  ASSERT_EQ(d.memHostAlloc(&pinned, n * 4, 0), 0);
  auto *in = static_cast<float *>(pinned);
  for (size_t i = 0; i < n; ++i)
    in[i] = 0.5f * (float)i - 7.0f;
  Ptr a = d.device(n * 4), b = d.device(n * 4), managed = 0;
  ASSERT_EQ(d.memAllocManaged(&managed, n * 4, 1), 0);
  auto pinnedPtr = reinterpret_cast<Ptr>(pinned);
  // Host -> device -> device -> managed, all through the stand-in.
  ASSERT_EQ(d.memcpyAsync(a, pinnedPtr, n * 4, nullptr), 0);
  ASSERT_EQ(d.memcpyAsync(b, a, n * 4, nullptr), 0);
  ASSERT_EQ(d.memcpyAsync(managed, b, n * 4, nullptr), 0);
  auto *out = reinterpret_cast<float *>(managed);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 0.5f * (float)i - 7.0f) << i;
  // A memset on the device, copied back to pinned memory.
  ASSERT_EQ(d.memsetD32(b, 0x3f800000u, n, nullptr), 0);
  ASSERT_EQ(d.memcpyAsync(pinnedPtr, b, n * 4, nullptr), 0);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(in[i], 1.0f) << i;
  // Freed and allocated again: zeroed, as the stand-in hands memory out.
  ASSERT_EQ(d.memFree(b), 0);
  Ptr c = d.device(n * 4);
  ASSERT_EQ(d.memcpyAsync(managed, c, n * 4, nullptr), 0);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 0.0f) << i;
}

TEST(FakeDeviceMemory, ManagedAndPinnedMemoryStayHostMemory) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  (void)d.device(16); // the arena and its fault handler exist
  Ptr managed = 0;
  void *pinned = nullptr;
  ASSERT_EQ(d.memAllocManaged(&managed, 64, 1), 0);
  ASSERT_EQ(d.memHostAlloc(&pinned, 64, 0), 0);
  reinterpret_cast<float *>(managed)[5] = 2.5f;
  static_cast<float *>(pinned)[7] = -1.5f;
  EXPECT_EQ(readHost(managed, 5), 2.5f);
  EXPECT_EQ(readHost(reinterpret_cast<Ptr>(pinned), 7), -1.5f);
  EXPECT_EQ(readHost(managed, 0), 0.0f); // zeroed
}

void exitWith42(int) { _exit(42); }
/// A fault outside the stand-in's arena: a load from an inaccessible page
/// (not a null pointer, whose load UBSan reports instead of letting fault).
void faultOutsideTheArena() {
  void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  (void)*static_cast<volatile int *>(page);
}

TEST(FakeDeviceMemory, OtherFaultsReachThePreviousHandler) {
  Driver d;
  ASSERT_NE(d.lib, nullptr) << dlerror();
  EXPECT_EXIT(
      {
        signal(SIGSEGV, exitWith42); // as zb-run installs its own
        (void)d.device(16);
        faultOutsideTheArena();
      },
      testing::ExitedWithCode(42), "");
  EXPECT_EXIT(
      {
        signal(SIGSEGV, SIG_DFL);
        (void)d.device(16);
        faultOutsideTheArena();
      },
      testing::KilledBySignal(SIGSEGV), "");
}

} // namespace
