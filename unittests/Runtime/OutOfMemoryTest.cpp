//===- OutOfMemoryTest.cpp - allocations that fail end in one line --------===//
//
// Issue 40: every way a rank runs out of memory ends the job with one line
// naming the memory, the request, the limit and what to change, never a
// spin, an abort with a stack dump, or a crash. Each case runs in a child
// process (a death test) under an address-space limit (RLIMIT_AS, what
// `ulimit -v` sets) just above what the child has mapped:
//   - the memory pool's system allocation (generated code's memrefs);
//   - OpenBLAS's GEMM buffer, taken at start-up (OpenBLAS itself would
//     retry its failed malloc forever);
//   - C++'s operator new (the runtime's std::new_handler);
//   - a thread that cannot be started (std::system_error reaching the
//     runtime's std::terminate handler).
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "../../runtime/lib/Internal.h"
#include "../../runtime/lib/cpu/CpuBackend.h"
#include "OneRankJob.h"

#include "gtest/gtest.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <thread>

namespace {

/// Limits this (child) process's address space to what it has mapped plus
/// `headroom` bytes. (Not under AddressSanitizer, whose allocator ends the
/// process itself when a limit stops it: those tests are skipped there.)
void limitAddressSpace(uint64_t headroom) {
  struct rlimit limit;
  uint64_t mapped = zbrt::detail::mappedBytes();
  if (!mapped)
    std::abort();
  limit.rlim_cur = limit.rlim_max = mapped + headroom;
  if (setrlimit(RLIMIT_AS, &limit) != 0)
    std::abort();
}

/// A size the optimizer cannot see through.
size_t opaque(size_t bytes) {
  const char *env = std::getenv("ZB_OOM_TEST_NEVER_SET");
  return env ? std::strtoull(env, nullptr, 10) : bytes;
}

#if defined(__SANITIZE_ADDRESS__)
#define ZB_SKIP_UNDER_ASAN() GTEST_SKIP() << "address-space limits under ASan"
#else
#define ZB_SKIP_UNDER_ASAN() (void)0
#endif

void initOneRank() { zbtest::initOneRankJob("zbrt-out-of-memory"); }

TEST(OutOfMemoryDeathTest, MemoryPoolNamesTheRequestAndTheLimit) {
  ZB_SKIP_UNDER_ASAN();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        void *small = _mlir_memref_to_llvm_alloc(1 << 20);
        (void)small;
        limitAddressSpace(64ull << 20);
        _mlir_memref_to_llvm_alloc(opaque(1ull << 30));
      },
      testing::ExitedWithCode(1),
      "^zb-run: out of host memory: the memory pool asked for 1\\.0 GiB "
      "\\(1073741888 bytes\\); this rank's pool holds 1\\.0 MiB, 1\\.0 MiB of "
      "it in use; the address-space limit \\(ulimit -v\\) is [0-9.]+ MiB, "
      "[0-9.]+ MiB of it mapped: raise the limit, or use less memory per "
      "rank \\(a smaller microbatch, more stages, or zb-compile "
      "--memory-limit so that the schedule keeps fewer microbatches in "
      "flight\\)\n$");
}

TEST(OutOfMemoryDeathTest, OpenBlasBufferIsRefusedNotRetriedForever) {
  ZB_SKIP_UNDER_ASAN();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        limitAddressSpace(64ull << 20);
        zbrt::cpu::configureBlasThreads();
      },
      testing::ExitedWithCode(1),
      "^zb-run: out of host memory: OpenBLAS's GEMM work buffer asked for "
      "128\\.0 MiB \\(134221824 bytes\\); it is taken once per process, "
      "before the model's own memory; the address-space limit \\(ulimit "
      "-v\\) is [0-9.]+ MiB");
  // With room for it, the buffer is taken and a GEMM runs.
  EXPECT_EXIT(
      {
        limitAddressSpace(256ull << 20);
        zbrt::cpu::configureBlasThreads();
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
}

TEST(OutOfMemoryDeathTest, OperatorNewEndsTheJobWithOneLine) {
  ZB_SKIP_UNDER_ASAN();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        initOneRank();
        limitAddressSpace(64ull << 20);
        volatile char *p = new char[opaque(1ull << 30)];
        p[0] = 1;
      },
      testing::ExitedWithCode(1),
      "^zb-run: rank 0: out of host memory: a C\\+\\+ allocation of the "
      "runner failed; the address-space limit \\(ulimit -v\\) is");
}

TEST(OutOfMemoryDeathTest, ThreadThatCannotStartIsNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        initOneRank();
        // What std::thread throws when pthread_create fails with EAGAIN,
        // uncaught (here it escapes a thread's function).
        std::thread thread([] {
          throw std::system_error(
              std::make_error_code(std::errc::resource_unavailable_try_again),
              "std::thread");
        });
        thread.join();
      },
      testing::ExitedWithCode(1),
      "^zb-run: rank 0: could not start a thread \\(std::thread: Resource "
      "temporarily unavailable\\): the limit on processes and threads "
      "\\(ulimit -u\\) or on memory \\(ulimit -v\\) is reached\n$");
}

TEST(OutOfMemory, FormatBytes) {
  EXPECT_EQ(zbrt::detail::formatBytes(0), "0 B");
  EXPECT_EQ(zbrt::detail::formatBytes(1023), "1023 B");
  EXPECT_EQ(zbrt::detail::formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(zbrt::detail::formatBytes(134221824), "128.0 MiB");
  EXPECT_EQ(zbrt::detail::formatBytes(3ull << 40), "3.0 TiB");
}

} // namespace
