//===- Memory.cpp - zb runtime: caching memory pool -----------------------===//
//
// The allocation functions that generated code calls instead of
// malloc/free (see zbrt.h, "Memory pool"). The pool keeps a record of every
// block on the host (the system block it lives in, its size class and
// alignment), never in the block itself, which may be device memory. Freed
// blocks are cached per (size class, alignment) and reused; nothing is
// returned to the system before zbrt_pool_trim() or process exit.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "../cuda/Driver.h"
#include "../cuda/Mgpu.h"
#include "BackendSelection.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <vector>

namespace {

/// Whether the pool and the runner's buffers are CUDA memory (the placement
/// is BackendSelection's choice).
bool cudaMemory() {
  return zbrt::memoryPlacement() != zbrt::MemoryPlacement::Host;
}

/// A block of the pool: malloc, CUDA managed memory, or device memory.
void *systemAlloc(uint64_t bytes) {
  switch (zbrt::memoryPlacement()) {
  case zbrt::MemoryPlacement::Host:
    return std::malloc(bytes);
  case zbrt::MemoryPlacement::CudaManaged:
    return zbrt::cuda::mgpu::allocate(bytes, /*hostShared=*/true,
                                      /*nullIfOutOfMemory=*/true);
  case zbrt::MemoryPlacement::CudaPoolOnDevice:
    return zbrt::cuda::mgpu::allocate(bytes, /*hostShared=*/false,
                                      /*nullIfOutOfMemory=*/true);
  }
  return nullptr;
}

void systemFree(void *p) {
  if (cudaMemory())
    mgpuMemFree(p, nullptr);
  else
    std::free(p);
}

constexpr uint64_t kGranule = 64;   // size classes are multiples of this
constexpr uint64_t kMinAlign = 64;  // every block is at least this aligned

/// What the pool knows of a block. Kept on the host, beside the block and
/// not in it: a block may be device memory, which the host cannot touch,
/// and a host write into managed memory would move the page to the host
/// (the GPU then faults it back at its next access).
struct Block {
  void *base;          // what the system allocator returned
  uint64_t sizeClass;  // usable bytes (multiple of kGranule)
  uint64_t alignment;  // alignment of the user pointer
  bool live;           // handed out (false: in the cache)
};

struct Pool {
  std::unordered_map<uint64_t, std::vector<void *>> cache; // key -> blocks
  std::unordered_map<void *, Block> blocks; // every block, by user pointer
  ZbrtPoolStats stats{};

  static uint64_t key(uint64_t sizeClass, uint64_t alignment) {
    // sizeClass is a multiple of 64 and alignment a power of two <= 2^32.
    return sizeClass | static_cast<uint64_t>(__builtin_ctzll(alignment));
  }

  /// The pool could not get `bytes` more from the system: the job ends with
  /// one line naming the memory, what the pool holds, and the limit.
  [[noreturn]] void outOfMemory(uint64_t bytes) const {
    using zbrt::detail::formatBytes;
    std::string holds = "this rank's pool holds " +
                        formatBytes((uint64_t)stats.bytesReserved) + ", " +
                        formatBytes((uint64_t)stats.bytesInUse) + " of it in use";
    zbrt::detail::MemoryKind kind = zbrt::detail::MemoryKind::Host;
    switch (zbrt::memoryPlacement()) {
    case zbrt::MemoryPlacement::Host:
      break;
    case zbrt::MemoryPlacement::CudaManaged:
      kind = zbrt::detail::MemoryKind::Managed;
      holds += "; " + zbrt::cuda::describeDeviceMemory();
      break;
    case zbrt::MemoryPlacement::CudaPoolOnDevice:
      kind = zbrt::detail::MemoryKind::Device;
      holds += "; " + zbrt::cuda::describeDeviceMemory();
      break;
    }
    zbrt::detail::fatalOutOfMemory(kind, "the memory pool", bytes,
                                   holds.c_str());
  }

  void *allocate(uint64_t bytes, uint64_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
        alignment > (1ull << 32))
      zbrt::detail::fatalf("memory pool: alignment %llu is not a power of two "
                           "<= 2^32",
                           (unsigned long long)alignment);
    if (alignment < kMinAlign)
      alignment = kMinAlign;
    if (bytes > (1ull << 46))
      zbrt::detail::fatalf("memory pool: request of %llu bytes is too large",
                           (unsigned long long)bytes);
    uint64_t sizeClass =
        std::max<uint64_t>(kGranule, (bytes + kGranule - 1) / kGranule *
                                         kGranule);
    ++stats.allocations;
    void *user = nullptr;
    auto it = cache.find(key(sizeClass, alignment));
    if (it != cache.end() && !it->second.empty()) {
      user = it->second.back();
      it->second.pop_back();
    } else {
      // Room for an `alignment`-aligned user pointer.
      uint64_t total = sizeClass + alignment;
      void *base = systemAlloc(total);
      if (!base)
        outOfMemory(total);
      uintptr_t first = reinterpret_cast<uintptr_t>(base);
      uintptr_t aligned = (first + alignment - 1) & ~(uintptr_t)(alignment - 1);
      user = reinterpret_cast<void *>(aligned);
      blocks[user] = Block{base, sizeClass, alignment, false};
      stats.bytesReserved += static_cast<int64_t>(sizeClass);
      ++stats.systemAllocations;
    }
    Block &b = blocks.at(user);
    b.live = true;
    stats.bytesInUse += static_cast<int64_t>(sizeClass);
    stats.peakBytesInUse = std::max(stats.peakBytesInUse, stats.bytesInUse);
    return user;
  }

  void release(void *user) {
    if (!user)
      return;
    auto it = blocks.find(user);
    if (it == blocks.end() || !it->second.live)
      zbrt::detail::fatalf("memory pool: free of %p, which is not a live pool "
                           "block (double free or foreign pointer)",
                           user);
    Block &b = it->second;
    b.live = false;
    stats.bytesInUse -= static_cast<int64_t>(b.sizeClass);
    cache[key(b.sizeClass, b.alignment)].push_back(user);
  }

  void trim() {
    for (auto &entry : cache)
      for (void *user : entry.second) {
        auto it = blocks.find(user);
        stats.bytesReserved -= static_cast<int64_t>(it->second.sizeClass);
        systemFree(it->second.base);
        blocks.erase(it);
      }
    cache.clear();
  }
};

Pool &pool() {
  // Leaked on purpose: blocks may still be freed by static destructors.
  static Pool *p = new Pool;
  return *p;
}

} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(uint64_t bytes) {
  return pool().allocate(bytes, kMinAlign);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                    uint64_t bytes) {
  return pool().allocate(bytes, alignment);
}

extern "C" void _mlir_memref_to_llvm_free(void *ptr) { pool().release(ptr); }

extern "C" void zbrt_pool_stats(ZbrtPoolStats *out) {
  if (out)
    *out = pool().stats;
}

extern "C" void zbrt_pool_reset_counters(void) {
  // Each free list in address order: a step that makes the same requests
  // as the previous one gets the same blocks (LIFO reuse alone would swap
  // them every other step), so a CUDA graph captured in one step holds in
  // the next (cuda/StepGraph.h).
  for (auto &entry : pool().cache)
    std::sort(entry.second.begin(), entry.second.end(),
              std::greater<void *>());
  ZbrtPoolStats &s = pool().stats;
  s.peakBytesInUse = s.bytesInUse;
  s.allocations = 0;
  s.systemAllocations = 0;
}

extern "C" void zbrt_pool_trim(void) { pool().trim(); }

extern "C" void zbrt_use_cuda_memory(void) {
  char why[256];
  if (zbrt_cuda_available(why, sizeof why) != 0)
    zbrt::detail::fatalf("the CUDA backend cannot start: %s", why);
  zbrt::useCudaMemory(/*poolOnDevice=*/false);
}

extern "C" int32_t zbrt_cuda_memory_enabled(void) { return cudaMemory(); }

extern "C" void *zbrt_host_buffer_alloc(uint64_t bytes) {
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
  void *p = cudaMemory() ? mgpuMemAlloc(rounded, nullptr, true)
                        : std::aligned_alloc(64, rounded);
  if (!p)
    zbrt::detail::fatalOutOfMemory(zbrt::detail::MemoryKind::Host,
                                   "a buffer of the runner", rounded,
                                   nullptr);
  std::memset(p, 0, rounded);
  return p;
}

extern "C" void zbrt_buffer_zero(void *buf, uint64_t bytes) {
  zbrt::backend().zeroBuffer(buf, (size_t)bytes);
}

extern "C" void zbrt_buffer_upload(void *dst, const void *src,
                                   uint64_t bytes) {
  zbrt::backend().upload(dst, src, (size_t)bytes);
}

extern "C" void zbrt_buffer_download(void *dst, const void *src,
                                     uint64_t bytes) {
  zbrt::backend().download(dst, src, (size_t)bytes);
}

extern "C" void zbrt_host_buffer_free(void *ptr) {
  if (ptr)
    systemFree(ptr);
}
