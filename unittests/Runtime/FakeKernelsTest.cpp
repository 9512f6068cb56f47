//===- FakeKernelsTest.cpp - the stand-in's checked no-op kernels ---------===//
//
// libzb_fake_cuda.so with ZB_FAKE_CUDA_NOOP_KERNELS=1 (FakeKernels.cpp): a
// fatbin loads, any kernel resolves, and a launch whose pointer argument is
// not device memory fails with CUDA_ERROR_ILLEGAL_ADDRESS naming the kernel
// and the argument, as compute-sanitizer would (the mutation check of issue
// 29's stand-in: a kernel handed a host pointer). The fatbin is made here: a
// fatbin header and an ELF image whose .nv.info.<kernel> section lists the
// parameters (EIATTR_KPARAM_INFO), as ptxas writes them.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using CUresult = int;

template <typename T>
void put(std::vector<unsigned char> &out, size_t at, T v) {
  if (out.size() < at + sizeof v)
    out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

/// A fatbin with one ELF image declaring `kernel` with `params` 8-byte
/// parameters.
std::vector<unsigned char> makeFatbin(const std::string &kernel, int params) {
  std::string names = std::string("\0.shstrtab\0.nv.info.", 20) + kernel;
  names.push_back('\0');
  std::vector<unsigned char> info;
  for (int i = 0; i < params; ++i) {
    size_t at = info.size();
    put<uint8_t>(info, at, 0x04);     // EIFMT_SVAL
    put<uint8_t>(info, at + 1, 0x17); // EIATTR_KPARAM_INFO
    put<uint16_t>(info, at + 2, 12);
    put<uint32_t>(info, at + 4, 0);                      // index
    put<uint16_t>(info, at + 8, (uint16_t)i);            // ordinal
    put<uint16_t>(info, at + 10, (uint16_t)(8 * i));     // offset
    put<uint32_t>(info, at + 12, (8u << 18) | 0x1f000u); // size 8
  }
  std::vector<unsigned char> elf(64, 0);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF",
              4);
  elf[4] = 2; // ELFCLASS64
  elf[5] = 1; // little-endian
  uint64_t namesAt = elf.size();
  elf.insert(elf.end(), names.begin(), names.end());
  uint64_t infoAt = elf.size();
  elf.insert(elf.end(), info.begin(), info.end());
  uint64_t sectionsAt = (elf.size() + 7) / 8 * 8;
  elf.resize(sectionsAt + 3 * 64, 0);
  put<uint64_t>(elf, 0x28, sectionsAt);
  put<uint16_t>(elf, 0x3a, 64);
  put<uint16_t>(elf, 0x3c, 3);
  put<uint16_t>(elf, 0x3e, 1);
  auto section = [&](int i, uint32_t name, uint64_t at, uint64_t size) {
    put<uint32_t>(elf, sectionsAt + 64 * i, name);
    put<uint64_t>(elf, sectionsAt + 64 * i + 0x18, at);
    put<uint64_t>(elf, sectionsAt + 64 * i + 0x20, size);
  };
  section(1, 1, namesAt, names.size());
  section(2, 11, infoAt, info.size());
  std::vector<unsigned char> fatbin(16, 0);
  put<uint32_t>(fatbin, 0, 0xBA55ED50u);
  put<uint16_t>(fatbin, 4, 1);
  put<uint16_t>(fatbin, 6, 16);
  put<uint64_t>(fatbin, 8, elf.size());
  fatbin.insert(fatbin.end(), elf.begin(), elf.end());
  return fatbin;
}

struct StandIn {
  void *lib = nullptr;
  CUresult (*memAlloc)(unsigned long long *, size_t);
  CUresult (*load)(void **, const void *);
  CUresult (*function)(void **, void *, const char *);
  CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, unsigned, void *, void **, void **);

  StandIn() {
    setenv("ZB_FAKE_CUDA_NOOP_KERNELS", "1", 1);
    lib = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return;
    memAlloc =
        reinterpret_cast<decltype(memAlloc)>(dlsym(lib, "cuMemAlloc_v2"));
    load = reinterpret_cast<decltype(load)>(dlsym(lib, "cuModuleLoadData"));
    function =
        reinterpret_cast<decltype(function)>(dlsym(lib, "cuModuleGetFunction"));
    launch = reinterpret_cast<decltype(launch)>(dlsym(lib, "cuLaunchKernel"));
  }
  CUresult run(void *f, std::vector<uint64_t> args) {
    std::vector<void *> params;
    for (uint64_t &a : args)
      params.push_back(&a);
    return launch(f, 2, 1, 1, 128, 1, 1, 0, nullptr, params.data(), nullptr);
  }
};

TEST(FakeKernels, LaunchChecksEveryPointerArgument) {
  StandIn s;
  ASSERT_NE(s.lib, nullptr) << dlerror();
  std::vector<unsigned char> fatbin = makeFatbin("zb_rank0_kernel", 4);
  void *module = nullptr, *kernel = nullptr;
  ASSERT_EQ(s.load(&module, fatbin.data()), 0);
  ASSERT_EQ(s.function(&kernel, module, "zb_rank0_kernel"), 0);
  unsigned long long device = 0;
  ASSERT_EQ(s.memAlloc(&device, 1024), 0);

  // A memref descriptor (allocated, aligned, offset) and a size; MLIR's
  // 0xdeadbeef (a global's allocated pointer) and pointers into the loaded
  // image (the module's globals) are fine.
  EXPECT_EQ(s.run(kernel, {device, device + 512, 3, 128}), 0);
  EXPECT_EQ(s.run(kernel, {0xdeadbeef, device, 0, 1}), 0);
  auto image = reinterpret_cast<uintptr_t>(fatbin.data());
  EXPECT_EQ(s.run(kernel, {image + 20, image + 20, 0, 1}), 0);

  // A host pointer (the stack) as the aligned pointer: the launch fails.
  float onTheStack[4] = {};
  auto host = reinterpret_cast<uint64_t>(onTheStack);
  testing::internal::CaptureStderr();
  EXPECT_EQ(s.run(kernel, {device, host, 0, 4}), 700);
  std::string err = testing::internal::GetCapturedStderr();
  char expected[128];
  std::snprintf(expected, sizeof expected,
                "stand-in: kernel zb_rank0_kernel argument #1 (%p) is not "
                "device memory",
                reinterpret_cast<void *>(host));
  EXPECT_NE(err.find(expected), std::string::npos) << err;

  // A host heap block is not device memory either.
  std::vector<float> heap(64);
  EXPECT_EQ(
      s.run(kernel, {reinterpret_cast<uint64_t>(heap.data()), device, 0, 1}),
      700);
}

} // namespace
