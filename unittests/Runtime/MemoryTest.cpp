//===- MemoryTest.cpp - the runtime's memory pool -------------------------===//
//
// The allocation functions generated code calls (zbrt.h, "Memory pool"):
// alignment, size classes, reuse of freed blocks (no system allocation in a
// repeated pattern), the counters, and the errors on bad frees.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

ZbrtPoolStats stats() {
  ZbrtPoolStats s;
  zbrt_pool_stats(&s);
  return s;
}

TEST(MemoryPool, AlignmentAndSizeClasses) {
  ZbrtPoolStats before = stats();
  void *a = _mlir_memref_to_llvm_alloc(1);
  void *b = _mlir_memref_to_llvm_alloc(65);
  void *c = _mlir_memref_to_llvm_aligned_alloc(4096, 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 4096, 0u);
  // The whole size class is usable.
  std::memset(a, 1, 64);
  std::memset(b, 2, 128);
  std::memset(c, 3, 128);
  // Classes: 1 -> 64, 65 -> 128, 100 -> 128 bytes.
  EXPECT_EQ(stats().bytesInUse - before.bytesInUse, 64 + 128 + 128);
  _mlir_memref_to_llvm_free(a);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
  EXPECT_EQ(stats().bytesInUse, before.bytesInUse);
  _mlir_memref_to_llvm_free(nullptr); // like free(NULL)
}

TEST(MemoryPool, RepeatedStepReusesEveryBlock) {
  // A "step": allocate buffers of assorted sizes, keep some across others
  // (like stashes), free all. The second and later steps must be served
  // entirely from the cache, with the same peak.
  const uint64_t sizes[] = {4096, 32768, 100, 4096, 1 << 20, 32768, 7};
  auto step = [&] {
    std::vector<void *> live;
    for (uint64_t s : sizes) {
      live.push_back(_mlir_memref_to_llvm_alloc(s));
      std::memset(live.back(), 0xab, s);
      if (live.size() == 3) { // free one early
        _mlir_memref_to_llvm_free(live[1]);
        live[1] = nullptr;
      }
    }
    for (void *p : live)
      _mlir_memref_to_llvm_free(p);
  };
  zbrt_pool_trim();
  zbrt_pool_reset_counters();
  step();
  ZbrtPoolStats first = stats();
  EXPECT_EQ(first.allocations, 7);
  EXPECT_GT(first.systemAllocations, 0);
  EXPECT_EQ(first.bytesInUse, 0);
  for (int i = 0; i < 3; ++i) {
    zbrt_pool_reset_counters();
    step();
    ZbrtPoolStats s = stats();
    EXPECT_EQ(s.allocations, 7);
    EXPECT_EQ(s.systemAllocations, 0) << "step " << i + 2;
    EXPECT_EQ(s.peakBytesInUse, first.peakBytesInUse);
    EXPECT_EQ(s.bytesReserved, first.bytesReserved);
  }
  // Peak by hand: 4096 + 32768 + 128 live, then 32768 freed, then + 4096 +
  // 2^20 + 32768 + 64.
  EXPECT_EQ(first.peakBytesInUse, 4096 + 128 + 4096 + (1 << 20) + 32768 + 64);
  zbrt_pool_trim();
  EXPECT_EQ(stats().bytesReserved, 0);
}

TEST(MemoryPoolDeathTest, DoubleFreeAndForeignPointerAreFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        void *p = _mlir_memref_to_llvm_alloc(16);
        _mlir_memref_to_llvm_free(p);
        _mlir_memref_to_llvm_free(p);
      },
      "memory pool: free of .* not a live pool block");
  EXPECT_DEATH(_mlir_memref_to_llvm_aligned_alloc(48, 16),
               "alignment 48 is not a power of two");
}

} // namespace
