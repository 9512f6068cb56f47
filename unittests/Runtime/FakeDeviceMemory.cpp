//===- FakeDeviceMemory.cpp - device memory the host cannot touch ---------===//
//
// The stand-in's device memory (cuMemAlloc_v2) lives in one arena: a
// mapping reserved at the first allocation (64 GiB of address space,
// ZB_FAKE_CUDA_ARENA_GB to change it), PROT_NONE except while a
// DeviceAccess exists, i.e. while the stand-in itself copies, sets, runs a
// GEMM, a kernel or a message on it. So the host code that dereferences a
// device pointer faults as on a GPU (managed memory, cuMemAllocManaged, and
// pinned host memory, cuMemHostAlloc, stay ordinary host memory). The
// fault handler (SIGSEGV, installed at each allocation if something
// replaced it) reports
//   fake CUDA: the host read or wrote device memory at 0x... (allocation of
//   N bytes at 0x...): a GPU would fault
// and ends the process with _exit(1); a fault elsewhere goes to the handler
// that was installed before (zb-run's, MPI's) or the default action.
//
// Inside the arena: first fit over the free blocks (coalesced), else the
// blocks grow the used extent; blocks are 256-byte aligned and zeroed when
// handed out. Only the used extent is opened and closed (mprotect).
//
// The emulated kernels of a --target cuda-emu plan are host code (they run on
// the host on a GPU machine too), so the arena stays closed around them: they
// may read managed memory only. Before each launch the plan hands every
// memref argument to libzbrt (zbrt_cuda_emulated_kernel_argument), which asks
// zb_fake_cuda_check_kernel_argument below whether it lies inside a live
// allocation, as the no-op kernels of a --target cuda plan are checked
// (FakeKernels.cpp).
//
// Limits: the arena is open for every thread while any DeviceAccess exists:
// a host access on another thread at that moment goes unnoticed.
//
//===----------------------------------------------------------------------===//

#include "FakeDeviceMemory.h"
#include "FakeKernels.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace {

constexpr size_t kAlign = 256;

std::mutex gMutex;
uintptr_t gBase = 0;    // the arena (0 until the first allocation)
size_t gCapacity = 0;   // its reserved bytes
size_t gUsed = 0;       // its used extent [gBase, gBase + gUsed)
size_t gOpenedUsed = 0; // the extent made accessible while open
int gDepth = 0;         // DeviceAccess objects alive
// Never freed (read by the fault handler until the end).
std::map<uintptr_t, size_t> &gLive = *new std::map<uintptr_t, size_t>;
std::map<uintptr_t, size_t> &gFree = *new std::map<uintptr_t, size_t>;
std::map<uintptr_t, size_t> &gCapacities = *new std::map<uintptr_t, size_t>;

struct sigaction gPrevious; // the SIGSEGV action before ours

size_t roundUp(size_t bytes) {
  return bytes ? (bytes + kAlign - 1) / kAlign * kAlign : kAlign;
}

bool reserve() {
  if (gBase)
    return true;
  // ZB_FAKE_CUDA_ARENA_GB: the device's memory in GiB (may be a fraction).
  const char *gb = std::getenv("ZB_FAKE_CUDA_ARENA_GB");
  double g = gb && *gb ? std::atof(gb) : 64;
  size_t bytes = roundUp((size_t)((g > 0 ? g : 64) * (double)(1ull << 30)));
  void *p = mmap(nullptr, bytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  gBase = reinterpret_cast<uintptr_t>(p);
  gCapacity = bytes;
  return true;
}

/// Writes `text` to stderr (async-signal-safe).
void say(const char *text) { (void)!write(2, text, std::strlen(text)); }

void sayHex(uintptr_t v) {
  char buf[2 + 16 + 1];
  int n = 0;
  char digits[16];
  do {
    digits[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < n; ++i)
    buf[2 + i] = digits[n - 1 - i];
  buf[2 + n] = 0;
  say(buf);
}

void sayDecimal(size_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  char buf[24];
  for (int i = 0; i < n; ++i)
    buf[i] = digits[n - 1 - i];
  buf[n] = 0;
  say(buf);
}

void onFault(int sig, siginfo_t *info, void *context) {
  auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0 && gBase && at >= gBase && at < gBase + gCapacity) {
    // No lock: the faulting thread may hold it; the maps change only
    // inside the stand-in's allocation calls.
    say("fake CUDA: the host read or wrote device memory at ");
    sayHex(at);
    auto it = gLive.upper_bound(at);
    if (it != gLive.begin() &&
        at < std::prev(it)->first + roundUp(std::prev(it)->second)) {
      --it;
      say(" (allocation of ");
      sayDecimal(it->second);
      say(" bytes at ");
      sayHex(it->first);
      say(")");
    } else {
      say(" (in no live allocation: freed or never allocated)");
    }
    say(": a GPU would fault\n");
    _exit(1);
  }
  // Not device memory: the handler before ours, or the default action.
  if ((gPrevious.sa_flags & SA_SIGINFO) && gPrevious.sa_sigaction) {
    gPrevious.sa_sigaction(sig, info, context);
    return;
  }
  if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN) {
    gPrevious.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  if (info->si_code <= 0) // sent, not a fault: it does not come back
    raise(sig);
  // A fault: the instruction runs again and the default action ends us.
}

void installHandler() {
  struct sigaction current;
  if (sigaction(SIGSEGV, nullptr, &current) != 0)
    return;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == onFault)
    return;
  struct sigaction ours;
  std::memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = onFault;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  gPrevious = current;
  sigaction(SIGSEGV, &ours, nullptr);
}

void protect(size_t from, size_t to, int prot) {
  if (to > from)
    mprotect(reinterpret_cast<void *>(gBase + from), to - from, prot);
}

/// A block of `capacity` bytes (a multiple of kAlign) under gMutex.
uintptr_t takeBlock(size_t capacity) {
  for (auto it = gFree.begin(); it != gFree.end(); ++it) {
    if (it->second < capacity)
      continue;
    uintptr_t p = it->first;
    size_t left = it->second - capacity;
    gFree.erase(it);
    if (left)
      gFree[p + capacity] = left;
    return p;
  }
  if (gUsed + capacity > gCapacity)
    return 0;
  uintptr_t p = gBase + gUsed;
  gUsed += capacity;
  if (gDepth > 0) { // open now: the new extent too
    protect(gOpenedUsed, gUsed, PROT_READ | PROT_WRITE);
    gOpenedUsed = gUsed;
  }
  return p;
}

} // namespace

void *zbfake::deviceAllocate(size_t bytes) {
  size_t capacity = roundUp(bytes);
  uintptr_t p;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    installHandler();
    if (!reserve() || capacity > gCapacity)
      return nullptr;
    p = takeBlock(capacity);
    if (!p)
      return nullptr;
    gLive[p] = bytes;
    gCapacities[p] = capacity;
  }
  DeviceAccess open;
  std::memset(reinterpret_cast<void *>(p), 0, capacity);
  return reinterpret_cast<void *>(p);
}

bool zbfake::deviceMemoryInfo(size_t *free, size_t *total) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!reserve())
    return false;
  size_t live = 0;
  for (const auto &block : gCapacities)
    live += block.second;
  *total = gCapacity;
  *free = gCapacity - live;
  return true;
}

bool zbfake::deviceFree(void *ptr) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(gMutex);
  auto live = gCapacities.find(p);
  if (live == gCapacities.end())
    return false;
  size_t capacity = live->second;
  gCapacities.erase(live);
  gLive.erase(p);
  // Coalesce with the free neighbours.
  auto next = gFree.find(p + capacity);
  if (next != gFree.end()) {
    capacity += next->second;
    gFree.erase(next);
  }
  auto after = gFree.lower_bound(p);
  if (after != gFree.begin()) {
    auto before = std::prev(after);
    if (before->first + before->second == p) {
      before->second += capacity;
      return true;
    }
  }
  gFree[p] = capacity;
  return true;
}

bool zbfake::inDeviceArena(const void *ptr) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(gMutex);
  return gBase && p >= gBase && p < gBase + gCapacity;
}

zbfake::DeviceAccess::DeviceAccess() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gDepth++ == 0) {
    protect(0, gUsed, PROT_READ | PROT_WRITE);
    gOpenedUsed = gUsed;
  }
}

zbfake::DeviceAccess::~DeviceAccess() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (--gDepth == 0) {
    protect(0, gOpenedUsed, PROT_NONE);
    gOpenedUsed = 0;
  }
}

/// Argument `argument` of the emulated kernel `kernel` points at `p` (file
/// comment): 0 when that is inside a live allocation, else 700
/// (CUDA_ERROR_ILLEGAL_ADDRESS) with the no-op kernels' message.
extern "C" int zb_fake_cuda_check_kernel_argument(const char *kernel,
                                                  int64_t argument,
                                                  const void *p) {
  if (zbfake::insideAllocation(p))
    return 0;
  std::fprintf(stderr,
               "stand-in: kernel %s argument #%lld (%p) is not device "
               "memory\n",
               kernel, (long long)argument, p);
  return 700;
}
