//===- FakeCuda.cpp - a host-memory stand-in for libcuda, cuBLAS, NCCL ----===//
//
// libzb_fake_cuda.so implements the subset of the CUDA driver API, cuBLAS
// and NCCL that zbrt's CUDA backend loads with dlopen, on host memory, so
// that `zb-run --backend cuda` runs on machines without a GPU
// (ZBRT_CUDA_DRIVER=, ZBRT_CUBLAS=, ZBRT_NCCL= point at this library). It is
// a test double, not an emulator of GPU timing:
//   - streams execute at once, except behind a receive: ncclRecv fills its
//     buffer with NaN (all bits set) and waits on its stream, with what is
//     enqueued after it, until the host or another stream waits for it
//     (cuStreamWaitEvent, cuStreamSynchronize, cuEventSynchronize; the
//     queries make progress when the message is there). A runtime that reads
//     a received buffer without waiting for its stream reads NaN, as a GPU
//     would read stale data (ZB_FAKE_CUDA_DROP_WAITS=1 ignores every
//     cuStreamWaitEvent, to show that tests notice). Compute work (GEMMs,
//     the host-emulated kernels) runs at once, so the host blocks where a
//     GPU stream would wait on the device;
//   - device memory (cuMemAlloc_v2) is a mapping the host cannot touch
//     outside this library's own copies, GEMMs, kernels and messages: a host
//     dereference dies with "fake CUDA: the host read or wrote device memory
//     at ..." (FakeDeviceMemory.cpp); managed memory is host memory; every
//     pointer handed to a copy, a GEMM or a message must lie inside a live
//     allocation of this library (host pointers given to the GPU are
//     reported, as a GPU would fault);
//   - cublasSgemm_v2 computes the column-major product of cuBLAS's
//     documentation naively in double (an independent check of the
//     runtime's row-major mapping), except with no-op kernels;
//     cublasGemmEx (bf16 operands, CUBLAS_COMPUTE_32F only) naively in
//     float32, rounding C to bf16 (FakeBlas.cpp);
//   - ncclSend/ncclRecv move bytes over MPI between the two ranks of a
//     communicator (the creator of the unique id is its rank 0);
//     ncclAllReduce (float32 sums, communicators of any size) sends its
//     contribution to every member over MPI when its stream reaches it and
//     waits on its stream like a receive (the buffer NaN until then), then
//     sums in communicator rank order (FakeNccl.cpp);
//     ncclCommInitRank refuses, as NCCL does, two ranks of a communicator on
//     one device of one host (ncclInvalidUsage, "Duplicate GPU detected" on
//     stderr): the members exchange their host and current device (the one
//     whose primary context cuCtxSetCurrent made current) over MPI, as
//     NCCL's bootstrap does;
//   - cuMemHostAlloc's pinned host memory is host memory the "GPU" may
//     also use (copies check it like device memory);
//   - kernels cannot be launched (CUDA_ERROR_NOT_SUPPORTED): use plans of
//     zb-compile --target cuda-emu, whose kernels run on the host (each
//     memref argument checked to be device memory through libzbrt,
//     FakeDeviceMemory.cpp; device memory stays closed to them), or set
//     ZB_FAKE_CUDA_NOOP_KERNELS=1: a --target cuda plan's fatbin loads and
//     each launch is a no-op after its pointer arguments are checked
//     (FakeKernels.cpp; the results are meaningless: GEMMs and the
//     optimizer kernels below are checked and skipped too); except
//     libzbrt's own optimizer kernels (cuda/OptimizerKernels.cu), which
//     run here on the host with the same per-element code (OptimizerMath.h)
//     after their arguments are unpacked as the driver would (a check of
//     the runtime's launch arguments, not of the device code).
// Faults for tests: ZB_FAKE_CUDA_FAIL_GEMM=N makes the N-th GEMM of a rank
// fail (CUBLAS_STATUS_EXECUTION_FAILED); ZB_FAKE_NCCL_ERROR_AFTER=N makes
// ncclCommGetAsyncError report ncclSystemError after N sends of a rank;
// ZB_FAKE_CUDA_FAIL_RANK=R limits both to world rank R. Timing for tests:
// ZB_FAKE_CUDA_LATE_EVENTS=N makes every N-th event record complete late
// for the host's queries (FakeLateEvents.h). ZB_FAKE_CUDA_DEVICES
// sets the device count (default 1, a workstation: the ranks share it).
// ZB_FAKE_CUDA_REPORT=PREFIX writes the calls this process made to
// PREFIX.rank<R> at exit.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"
#include "FakeGraph.h"
#include "FakeKernels.h"
#include "FakeLateEvents.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace zbfake {



Stats gStats;

std::mutex gMutex;
std::map<uintptr_t, size_t> gAllocations; // base -> bytes

int gCachedRank = -1;

int worldRank() {
  if (gCachedRank >= 0)
    return gCachedRank;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &gCachedRank);
  return gCachedRank;
}

long envLong(const char *name, long dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atol(v) : dflt;
}

bool faultsHere() {
  long r = envLong("ZB_FAKE_CUDA_FAIL_RANK", -1);
  return r < 0 || r == worldRank();
}

} // namespace zbfake

bool zbfake::insideAllocation(const void *p) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = gAllocations.upper_bound(u);
  return it != gAllocations.begin() && u < std::prev(it)->first +
                                               std::max<size_t>(
                                                   std::prev(it)->second, 1);
}

namespace zbfake {
namespace {
uintptr_t allocationOf(const void *p) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = gAllocations.upper_bound(u);
  if (it == gAllocations.begin())
    return 0;
  --it;
  return u < it->first + std::max<size_t>(it->second, 1) ? it->first : 0;
}
} // namespace
} // namespace zbfake

namespace zbfake {

/// True when [p, p + bytes) lies inside a live allocation.
bool isDevice(const void *p, size_t bytes, const char *what) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = gAllocations.upper_bound(u);
  if (it != gAllocations.begin()) {
    --it;
    if (u >= it->first && u + bytes <= it->first + it->second)
      return true;
  }
  ++gStats.badPointers;
  std::fprintf(stderr,
               "fake-cuda: %s: %p (+%zu bytes) is not device memory of this "
               "process\n",
               what, p, bytes);
  return false;
}

void writeReport() {
  const char *prefix = std::getenv("ZB_FAKE_CUDA_REPORT");
  // Only processes that used a device (not zb-run's launcher, which only
  // probes the driver).
  if (!prefix || !*prefix || gStats.streams == 0)
    return;
  std::string path = std::string(prefix) + ".rank" + std::to_string(worldRank());
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f)
    return;
  std::fprintf(f,
               "device %d\ngemms %ld\nnccl_sends %ld\nnccl_recvs %ld\n"
               "send_bytes %ld\nrecv_bytes %ld\nallocations %ld\n"
               "managed_allocations %ld\nmemcpys %ld\ncommunicators %ld\n"
               "bad_pointers %ld\nstreams %ld\nevents %ld\n"
               "batched_gemms %ld\ndeferred_recvs %ld\nflushing_waits %ld\n"
               "dropped_ops %ld\nnccl_allreduces %ld\n"
               "allreduce_bytes %ld\nunordered_allreduces %ld\n",
               gStats.lastDevice, gStats.gemms, gStats.sends, gStats.recvs,
               gStats.sendBytes, gStats.recvBytes, gStats.allocations,
               gStats.managedAllocations, gStats.memcpys, gStats.comms,
               gStats.badPointers, gStats.streams, gStats.events,
               gStats.batchedGemms, gStats.deferredRecvs, gStats.flushingWaits,
               gStats.droppedOps, gStats.allReduces, gStats.allReduceBytes,
               gStats.unorderedAllReduces);
  for (const auto &[peer, n] : gStats.sendsTo)
    std::fprintf(f, "nccl_sends_to %d %ld\n", peer, n);
  zbfake::writeDigests(f);
  std::fclose(f);
}

/// Zeroed memory: device memory (the arena of FakeDeviceMemory.cpp) or
/// host memory (managed, pinned).
void *allocate(size_t bytes, bool device = false) {
  size_t rounded = (bytes + 255) / 256 * 256;
  void *p = device ? zbfake::deviceAllocate(bytes)
                   : std::aligned_alloc(256, rounded ? rounded : 256);
  if (p) {
    if (!device)
      std::memset(p, 0, rounded ? rounded : 256);
    std::lock_guard<std::mutex> lock(gMutex);
    gAllocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  }
  return p;
}

struct Event {
  int id;
  double recordedMs = -1; // host time of the last cuEventRecord
  /// While its record waits on a stream: the stream and the record's ticket.
  Stream *stream = nullptr;
  long ticket = 0;
  long generation = 0; // records so far (a pending old record is void)
  /// What its last record's stream was ordered after (noteWrite).
  std::map<const Stream *, long> after;
};

/// Live streams (never freed: streams may be destroyed at exit).
std::set<Stream *> &gStreams = *new std::set<Stream *>;

Stream *gLaunchingGraphOn = nullptr;

namespace {
/// Writes so far; per allocation base, the stream and number of its last
/// remembered write; what the host has synchronised with.
long gWrites = 0;
std::map<uintptr_t, std::pair<const Stream *, long>> &gLastWrite =
    *new std::map<uintptr_t, std::pair<const Stream *, long>>;
std::map<const Stream *, long> &gHostAfter =
    *new std::map<const Stream *, long>;

void mergeAfter(std::map<const Stream *, long> &into,
                const std::map<const Stream *, long> &from) {
  for (const auto &[stream, n] : from)
    into[stream] = std::max(into[stream], n);
}

/// The base of the live allocation holding `p`, or 0.
uintptr_t allocationOf(const void *p);
} // namespace

void noteWrite(void *stream, const void *p) {
  auto *s = stream ? static_cast<Stream *>(stream) : gLaunchingGraphOn;
  uintptr_t base = allocationOf(p);
  if (!s || !base)
    return;
  s->after[s] = ++gWrites;
  gLastWrite[base] = {s, gWrites};
}

bool orderedAfterLastWrite(void *stream, const void *p, int *writer) {
  auto *s = static_cast<Stream *>(stream);
  auto it = gLastWrite.find(allocationOf(p));
  if (!s || it == gLastWrite.end() || it->second.first == s)
    return true;
  const auto &[by, n] = it->second;
  auto waited = s->after.find(by), synced = gHostAfter.find(by);
  if ((waited != s->after.end() && waited->second >= n) ||
      (synced != gHostAfter.end() && synced->second >= n))
    return true;
  *writer = gStreams.count(const_cast<Stream *>(by)) ? by->id : -1;
  return false;
}

/// Runs `s`'s deferred work in order up to `ticket`; false when (block
/// false) a receive's message has not arrived.
bool progress(Stream *s, long ticket, bool block) {
  while (!s->pending.empty() && s->pending.front().ticket <= ticket) {
    // Popped before it runs: an op may progress other streams.
    DeferredOp op = s->pending.front();
    if (!op.run(block))
      return false;
    s->pending.pop_front();
  }
  return true;
}

/// Enqueues `run` behind `s`'s deferred work; returns its ticket.
long defer(Stream *s, Comm *comm, std::function<bool(bool block)> run) {
  s->pending.push_back({++s->tickets, comm, std::move(run)});
  return s->tickets;
}

/// Runs `work` now when `stream` has nothing deferred, else behind it.
void enqueueOrRun(void *stream, Comm *comm, std::function<void()> work) {
  auto *s = static_cast<Stream *>(stream);
  if (!s || s->pending.empty()) {
    work();
    return;
  }
  defer(s, comm, [work](bool) {
    work();
    return true;
  });
}

} // namespace zbfake

void zbfake::runOnStream(void *stream, std::function<void()> work) {
  enqueueOrRun(stream, nullptr, std::move(work));
}

namespace zbfake {

/// The event's record has run (progressing its stream as far as needed).
bool eventReady(Event *e, bool block) {
  // A record that ran with an old generation leaves the newer one pending
  // (possibly on another stream): loop.
  while (e->stream)
    if (!progress(e->stream, e->ticket, block))
      return false;
  return true;
}

/// Every stream's deferred work, e.g. before memory is freed.
void progressAll() {
  for (Stream *s : gStreams)
    progress(s, LONG_MAX, /*block=*/true);
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int gCurrentDevice = -1;

} // namespace zbfake

using namespace zbfake;

extern "C" {

__attribute__((destructor)) static void fakeCudaAtExit() { writeReport(); }

//===-- Driver --------------------------------------------------------------===//

CUresult cuInit(unsigned) { return kOk; }
CUresult cuDeviceGetCount(int *count) {
  *count = (int)envLong("ZB_FAKE_CUDA_DEVICES", 1);
  return kOk;
}
CUresult cuDeviceGet(int *device, int ordinal) {
  int count = 0;
  cuDeviceGetCount(&count);
  if (ordinal < 0 || ordinal >= count)
    return 101; // CUDA_ERROR_INVALID_DEVICE
  *device = ordinal;
  gStats.lastDevice = ordinal;
  return kOk;
}
// One primary context per device; the current one is this process's
// device (what ncclCommInitRank compares).
static int gContexts[64];
CUresult cuDevicePrimaryCtxRetain(void **ctx, int device) {
  *ctx = &gContexts[device & 63];
  return kOk;
}
CUresult cuCtxSetCurrent(void *ctx) {
  auto *c = static_cast<int *>(ctx);
  if (c && (c < gContexts || c >= gContexts + 64))
    return 201; // CUDA_ERROR_INVALID_CONTEXT
  gCurrentDevice = c ? (int)(c - gContexts) : -1;
  return kOk;
}
// libzbrt's trace module (TraceKernels.cu): its timestamp kernel.
static int gTraceModule, gTimestampKernel;
static constexpr const char *kTimestampKernel = "zbrt_timestamp_kernel";
CUresult cuModuleLoadData(void **module, const void *blob) {
  // A fatbin: 16-byte header whose second 8 bytes are the payload size.
  const auto *bytes = static_cast<const unsigned char *>(blob);
  uint64_t size = 0;
  std::memcpy(&size, bytes + 8, 8);
  std::string image(reinterpret_cast<const char *>(bytes), 16 + size);
  if (loadOptimizerModule(image, blob, module))
    return kOk;
  if (image.find(kTimestampKernel) != std::string::npos) {
    *module = &gTraceModule;
    zbfake::registerRuntimeKernel(&gTimestampKernel, blob, kTimestampKernel);
    return kOk;
  }
  if (!zbfake::noopKernels())
    return kNotSupported;
  *module = zbfake::loadNoopModule(blob);
  return kOk;
}
CUresult cuModuleUnload(void *) { return kOk; }
CUresult cuModuleGetFunction(void **function, void *module,
                             const char *name) {
  if (module == &gTraceModule) {
    if (std::strcmp(name, kTimestampKernel) != 0)
      return 500; // CUDA_ERROR_NOT_FOUND
    *function = &gTimestampKernel;
    return kOk;
  }
  CUresult result = kOk;
  if (optimizerFunction(module, name, function, &result))
    return result;
  if (!zbfake::isNoopModule(module))
    return kNotSupported;
  *function = zbfake::noopFunction(module, name);
  return kOk;
}
/// The trace's timestamp kernel (TraceKernels.cu): slots[slot] = the
/// host's steady clock in nanoseconds, behind the stream's deferred work.
static CUresult launchTimestamp(void *stream, void **params) {
  auto *slots = *static_cast<unsigned long long **>(params[0]);
  int slot = *static_cast<int *>(params[1]);
  if (slot < 0 || !isDevice(slots + slot, 8, "timestamp slot"))
    return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  if (slot == 0)
    zbfake::digestStepBegins();
  zbfake::digest(&slot, sizeof slot);
  enqueueOrRun(stream, nullptr, [slots, slot] {
    slots[slot] = (unsigned long long)std::chrono::duration_cast<
                      std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
  });
  return kOk;
}

CUresult cuLaunchKernel(void *function, unsigned gridX, unsigned gridY,
                        unsigned gridZ, unsigned blockX, unsigned blockY,
                        unsigned blockZ, unsigned sharedBytes, void *stream,
                        void **params, void **extra) {
  if (zbfake::capturing(stream))
    return zbfake::captureLaunch(
        stream, function, params, [=](void **copy) {
          return cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                                blockZ, sharedBytes, stream, copy, extra);
        });
  if (int sticky = zbfake::stickyError())
    return sticky;
  if (function == &gTimestampKernel)
    return gridX == 1 && blockX == 1 ? launchTimestamp(stream, params)
                                     : kInvalidValue;
  bool optimizer = isOptimizerKernel(function);
  if (!optimizer && zbfake::noopKernels() && function) {
    // A kernel of a loaded fatbin (FakeKernels.cpp): checked, not run.
    if (gridX == 0 || gridY == 0 || gridZ == 0 || blockX == 0 ||
        blockY == 0 || blockZ == 0 || (long)blockX * blockY * blockZ > 1024)
      return kInvalidValue;
    ++gStats.launches;
    const unsigned dims[6] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
    zbfake::digestKernel(function, dims, params);
    return zbfake::launchNoop(function, params);
  }
  if (gridX == 0 || gridY != 1 || gridZ != 1 || blockX == 0 || blockY != 1 ||
      blockZ != 1 || blockX > 1024)
    return kInvalidValue;
  ++gStats.launches;
  return launchOptimizerKernel(function, gridX, blockX, params);
}
CUresult cuStreamCreate(void **stream, unsigned) {
  worldRank(); // cached while MPI runs: the report at exit names the rank
  auto *s = new Stream{(int)++gStats.streams, {}, 0};
  gStreams.insert(s);
  *stream = s;
  return kOk;
}
CUresult cuStreamDestroy_v2(void *stream) {
  auto *s = static_cast<Stream *>(stream);
  progress(s, LONG_MAX, /*block=*/true); // as the driver finishes its work
  gStreams.erase(s);
  delete s;
  return kOk;
}
CUresult cuStreamSynchronize(void *stream) {
  if (int r = zbfake::refuseWhileCapturing(stream, "cuStreamSynchronize"))
    return r;
  if (stream) {
    progress(static_cast<Stream *>(stream), LONG_MAX, /*block=*/true);
    mergeAfter(gHostAfter, static_cast<Stream *>(stream)->after);
  }
  lateStreamDone(stream);
  return zbfake::stickyError();
}
CUresult cuStreamQuery(void *stream) {
  if (int r = zbfake::refuseWhileCapturing(stream, "cuStreamQuery"))
    return r;
  if (stream &&
      !progress(static_cast<Stream *>(stream), LONG_MAX, /*block=*/false))
    return kNotReady;
  if (stream)
    mergeAfter(gHostAfter, static_cast<Stream *>(stream)->after);
  lateStreamDone(stream);
  return zbfake::stickyError();
}
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned) {
  ++gStats.waits;
  if (!event)
    return kInvalidValue;
  // Joining a capture across streams is not emulated: refused.
  if (int r = zbfake::refuseWhileCapturing(stream, "cuStreamWaitEvent"))
    return r;
  // ZB_FAKE_CUDA_DROP_WAITS=1 ignores every wait, =allreduce those of a
  // stream that carries ncclAllReduce (its input order).
  static const char *dropWhich = std::getenv("ZB_FAKE_CUDA_DROP_WAITS");
  static const bool dropWaits = dropWhich && std::atol(dropWhich) != 0;
  static const bool dropAllReduceWaits =
      dropWhich && std::strcmp(dropWhich, "allreduce") == 0;
  auto *e = static_cast<Event *>(event);
  auto *waiter = static_cast<Stream *>(stream);
  if (dropWaits || (dropAllReduceWaits && waiter && waiter->carriesAllReduce))
    return kOk;
  if (waiter)
    mergeAfter(waiter->after, e->after);
  if (!e->stream)
    return kOk;
  if (waiter && !waiter->pending.empty() && waiter != e->stream) {
    // The waiter's later work waits behind its own deferred work too.
    long generation = e->generation;
    defer(waiter, nullptr, [e, generation](bool block) {
      return e->generation != generation || eventReady(e, block);
    });
    return kOk;
  }
  // Work enqueued on the waiter from now on runs at once in this stand-in:
  // what it waits for runs now.
  ++gStats.flushingWaits;
  eventReady(e, /*block=*/true);
  return kOk;
}
CUresult cuEventCreate(void **event, unsigned) {
  *event = new Event{(int)++gStats.events};
  return kOk;
}
CUresult cuEventDestroy_v2(void *event) {
  auto *e = static_cast<Event *>(event);
  eventReady(e, /*block=*/true); // its record op refers to it
  lateEventDone(e);
  delete e;
  return kOk;
}
CUresult cuEventSynchronize(void *event) {
  if (event)
    eventReady(static_cast<Event *>(event), /*block=*/true);
  lateEventDone(event);
  return zbfake::stickyError();
}
CUresult cuEventQuery(void *event) {
  if (int sticky = zbfake::stickyError())
    return sticky;
  return !event || (eventReady(static_cast<Event *>(event), /*block=*/false) &&
                    !lateNotReady(event))
             ? kOk
             : kNotReady;
}
CUresult cuEventRecord(void *event, void *stream) {
  if (!event)
    return kInvalidValue;
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream,
                        [event] { return cuEventRecord(event, nullptr); });
    return kOk;
  }
  auto *e = static_cast<Event *>(event);
  auto *s = static_cast<Stream *>(stream);
  long generation = ++e->generation;
  lateRecorded(event, stream);
  // A waiter is ordered after what this stream is ordered after.
  e->after = s ? s->after : gHostAfter;
  if (!s || s->pending.empty()) {
    // Nothing deferred: the event completes when it is recorded.
    e->stream = nullptr;
    e->recordedMs = nowMs();
    return kOk;
  }
  e->stream = s;
  e->recordedMs = -1;
  e->ticket = defer(s, nullptr, [e, generation](bool) {
    if (e->generation == generation) {
      e->stream = nullptr;
      e->recordedMs = nowMs();
    }
    return true;
  });
  return kOk;
}
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  auto *a = static_cast<Event *>(start), *b = static_cast<Event *>(end);
  if (!a || !b || a->stream || b->stream || a->recordedMs < 0 ||
      b->recordedMs < 0)
    return kNotReady; // as for an unrecorded or unfinished event
  *ms = (float)(b->recordedMs - a->recordedMs);
  return kOk;
}
CUresult cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
  void *p = allocate(bytes, /*device=*/true);
  if (!p)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  ++gStats.allocations;
  *ptr = reinterpret_cast<uintptr_t>(p);
  return kOk;
}
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  if (!free || !total)
    return kInvalidValue;
  return zbfake::deviceMemoryInfo(free, total) ? kOk : 2;
}
CUresult cuMemAllocManaged(unsigned long long *ptr, size_t bytes, unsigned) {
  ++gStats.managedAllocations;
  void *p = allocate(bytes);
  if (!p)
    return 2;
  *ptr = reinterpret_cast<uintptr_t>(p);
  return kOk;
}
CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned) {
  void *p = allocate(bytes);
  if (!p)
    return 2;
  ++gStats.hostAllocations;
  *ptr = p;
  return kOk;
}
CUresult cuMemFreeHost(void *p) {
  progressAll();
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (!gAllocations.erase(reinterpret_cast<uintptr_t>(p)))
      return kInvalidValue;
  }
  gLastWrite.erase(reinterpret_cast<uintptr_t>(p));
  if (!zbfake::deviceFree(p))
    std::free(p);
  return kOk;
}
CUresult cuMemFree_v2(unsigned long long ptr) {
  progressAll(); // no deferred receive may write into freed memory
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (!gAllocations.erase(ptr))
      return kInvalidValue;
  }
  gLastWrite.erase(ptr);
  if (!zbfake::deviceFree(reinterpret_cast<void *>(ptr)))
    std::free(reinterpret_cast<void *>(ptr));
  return kOk;
}
CUresult cuMemcpyAsync(unsigned long long dst, unsigned long long src,
                       size_t bytes, void *stream) {
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream, [dst, src, bytes] {
      return cuMemcpyAsync(dst, src, bytes, nullptr);
    });
    return kOk;
  }
  if (!isDevice(reinterpret_cast<void *>(dst), bytes, "cuMemcpyAsync dst") ||
      !isDevice(reinterpret_cast<void *>(src), bytes, "cuMemcpyAsync src"))
    return kInvalidValue;
  ++gStats.memcpys;
  enqueueOrRun(stream, nullptr, [dst, src, bytes] {
    zbfake::DeviceAccess open;
    std::memmove(reinterpret_cast<void *>(dst),
                 reinterpret_cast<void *>(src), bytes);
  });
  return kOk;
}
CUresult cuMemsetD32Async(unsigned long long dst, unsigned value, size_t n,
                          void *stream) {
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream, [dst, value, n] {
      return cuMemsetD32Async(dst, value, n, nullptr);
    });
    return kOk;
  }
  if (!isDevice(reinterpret_cast<void *>(dst), n * 4, "cuMemsetD32Async"))
    return kInvalidValue;
  zbfake::DeviceAccess open;
  auto *p = reinterpret_cast<unsigned *>(dst);
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return kOk;
}
CUresult cuMemsetD16Async(unsigned long long dst, unsigned short value,
                          size_t n, void *stream) {
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream, [dst, value, n] {
      return cuMemsetD16Async(dst, value, n, nullptr);
    });
    return kOk;
  }
  if (!isDevice(reinterpret_cast<void *>(dst), n * 2, "cuMemsetD16Async"))
    return kInvalidValue;
  zbfake::DeviceAccess open;
  auto *p = reinterpret_cast<unsigned short *>(dst);
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return kOk;
}
CUresult cuGetErrorName(CUresult e, const char **name) {
  *name = e == kNotSupported  ? "CUDA_ERROR_NOT_SUPPORTED"
          : e == kInvalidValue ? "CUDA_ERROR_INVALID_VALUE"
          : e == 2             ? "CUDA_ERROR_OUT_OF_MEMORY"
          : e == 101           ? "CUDA_ERROR_INVALID_DEVICE"
          : e == 700           ? "CUDA_ERROR_ILLEGAL_ADDRESS"
          : e == 719           ? "CUDA_ERROR_LAUNCH_FAILED"
                               : "CUDA_ERROR_UNKNOWN";
  return kOk;
}
CUresult cuGetErrorString(CUresult e, const char **text) {
  *text = e == kNotSupported
              ? "operation not supported (fake CUDA driver: no kernels)"
          : e == kInvalidValue ? "invalid argument"
          : e == 700           ? "an illegal memory access was encountered"
          : e == 719           ? "unspecified launch failure"
                               : "fake CUDA driver error";
  return kOk;
}

} // extern "C"

/// For tests in the same process (dlopen RTLD_NOLOAD + dlsym).
extern "C" long zb_fake_cuda_bad_pointers() { return gStats.badPointers; }
extern "C" long zb_fake_cuda_gemm_calls() { return gStats.gemms; }
extern "C" long zb_fake_cuda_kernel_launches() { return gStats.launches; }
