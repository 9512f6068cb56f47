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
//   - ncclSend/ncclRecv move bytes over MPI between the two ranks of a
//     communicator (the creator of the unique id is its rank 0);
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
// ZB_FAKE_CUDA_FAIL_RANK=R limits both to world rank R. ZB_FAKE_CUDA_DEVICES
// sets the device count (default 1, a workstation: the ranks share it).
// ZB_FAKE_CUDA_REPORT=PREFIX writes the calls this process made to
// PREFIX.rank<R> at exit.
//
//===----------------------------------------------------------------------===//

#include "FakeDeviceMemory.h"
#include "FakeGraph.h"
#include "FakeKernels.h"

#include "../../runtime/lib/OptimizerMath.h"

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

namespace {

using CUresult = int;
constexpr CUresult kOk = 0, kInvalidValue = 1, kNotSupported = 801;

struct Stats {
  long gemms = 0, sends = 0, recvs = 0, sendBytes = 0, recvBytes = 0;
  long allocations = 0, managedAllocations = 0, memcpys = 0, comms = 0;
  long hostAllocations = 0; // cuMemHostAlloc
  long badPointers = 0, streams = 0, events = 0, waits = 0, launches = 0;
  long batchedGemms = 0;
  /// Receives that ran later than their ncclRecv call; stream waits that
  /// made a stream's deferred work run; deferred work dropped (an abort).
  long deferredRecvs = 0, flushingWaits = 0, droppedOps = 0;
  /// world rank -> NCCL sends (never freed: the report is written at exit,
  /// after static destructors)
  std::map<int, long> &sendsTo = *new std::map<int, long>;
  int lastDevice = -1;
};
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

} // namespace

bool zbfake::insideAllocation(const void *p) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto u = reinterpret_cast<uintptr_t>(p);
  auto it = gAllocations.upper_bound(u);
  return it != gAllocations.begin() && u < std::prev(it)->first +
                                               std::max<size_t>(
                                                   std::prev(it)->second, 1);
}

namespace {

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
               "dropped_ops %ld\n",
               gStats.lastDevice, gStats.gemms, gStats.sends, gStats.recvs,
               gStats.sendBytes, gStats.recvBytes, gStats.allocations,
               gStats.managedAllocations, gStats.memcpys, gStats.comms,
               gStats.badPointers, gStats.streams, gStats.events,
               gStats.batchedGemms, gStats.deferredRecvs,
               gStats.flushingWaits, gStats.droppedOps);
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

struct Comm;

/// Work enqueued on a stream behind a receive. `run(block)` does it and
/// returns true, or (block false) returns false when it would have to wait.
struct DeferredOp {
  long ticket;
  Comm *comm; // the communicator a receive or send uses, else null
  std::function<bool(bool block)> run;
};

struct Stream {
  int id;
  std::deque<DeferredOp> pending;
  long tickets = 0;
};
struct Event {
  int id;
  double recordedMs = -1; // host time of the last cuEventRecord
  /// While its record waits on a stream: the stream and the record's ticket.
  Stream *stream = nullptr;
  long ticket = 0;
  long generation = 0; // records so far (a pending old record is void)
};

/// Live streams (never freed: streams may be destroyed at exit).
std::set<Stream *> &gStreams = *new std::set<Stream *>;

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

} // namespace

void zbfake::runOnStream(void *stream, std::function<void()> work) {
  enqueueOrRun(stream, nullptr, std::move(work));
}

namespace {

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

// NCCL side.
struct FakeId {
  char magic[8];
  int32_t creatorWorldRank;
  int32_t sequence;
  char pad[128 - 16];
};
static_assert(sizeof(FakeId) == 128, "ncclUniqueId is 128 bytes");

struct Comm {
  int rank = 0;                  // 0 or 1
  int peerWorld = -1;            // world rank of the other member
  int tag = 0;                   // MPI tag of this communicator's bytes
  int asyncError = 0;            // a deferred receive's failure
  std::vector<MPI_Request> sends;
  std::vector<std::vector<char>> buffers;
};

constexpr int kTagBase = 1 << 29;
int gIdSequence = 0;

void completeSends(Comm *c) {
  if (!c->sends.empty())
    MPI_Waitall((int)c->sends.size(), c->sends.data(), MPI_STATUSES_IGNORE);
  c->sends.clear();
  c->buffers.clear();
}

/// MPI_Isend of a copy of `buf` (NCCL's send, eager in this stand-in).
void isend(Comm *c, const void *buf, size_t count) {
  // Forget completed sends (their buffers go with them).
  size_t kept = 0;
  for (size_t i = 0; i < c->sends.size(); ++i) {
    int done = 0;
    MPI_Test(&c->sends[i], &done, MPI_STATUS_IGNORE);
    if (done)
      continue;
    if (kept != i) { // (a self-move would empty the buffer MPI reads)
      c->sends[kept] = c->sends[i];
      c->buffers[kept] = std::move(c->buffers[i]);
    }
    ++kept;
  }
  c->sends.resize(kept);
  c->buffers.resize(kept);
  zbfake::DeviceAccess open; // the copy reads device memory
  c->buffers.emplace_back(static_cast<const char *>(buf),
                          static_cast<const char *>(buf) + count);
  c->sends.emplace_back();
  MPI_Isend(c->buffers.back().data(), (int)count, MPI_BYTE, c->peerWorld,
            c->tag, MPI_COMM_WORLD, &c->sends.back());
}

} // namespace

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
static int gCurrentDevice = -1;
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
// libzbrt's optimizer module: recognised by its kernel names in the blob.
static int gOptimizerModule;
static const void *gOptimizerBlob;
// libzbrt's trace module (TraceKernels.cu): its timestamp kernel.
static int gTraceModule, gTimestampKernel;
static constexpr const char *kTimestampKernel = "zbrt_timestamp_kernel";
// sgd, adamw, sum of squares, then their multi-tensor forms.
constexpr int kOptimizerKernels = 6, kFirstManyKernel = 3;
static int gKernels[kOptimizerKernels];
static const char *kKernelNames[kOptimizerKernels] = {
    "zbrt_sgd_kernel",      "zbrt_adamw_kernel",
    "zbrt_sum_squares_kernel", "zbrt_sgd_many_kernel",
    "zbrt_adamw_many_kernel",  "zbrt_sum_squares_many_kernel"};
/// The index of an optimizer kernel in gKernels, or -1.
static int optimizerKernel(const void *function) {
  for (int k = 0; k < kOptimizerKernels; ++k)
    if (function == &gKernels[k])
      return k;
  return -1;
}
CUresult cuModuleLoadData(void **module, const void *blob) {
  // A fatbin: 16-byte header whose second 8 bytes are the payload size.
  const auto *bytes = static_cast<const unsigned char *>(blob);
  uint64_t size = 0;
  std::memcpy(&size, bytes + 8, 8);
  std::string image(reinterpret_cast<const char *>(bytes), 16 + size);
  if (image.find(kKernelNames[1]) != std::string::npos) {
    *module = &gOptimizerModule;
    gOptimizerBlob = blob;
    return kOk;
  }
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
  if (module != &gOptimizerModule && zbfake::isNoopModule(module)) {
    *function = zbfake::noopFunction(module, name);
    return kOk;
  }
  if (module != &gOptimizerModule)
    return kNotSupported;
  for (int k = 0; k < kOptimizerKernels; ++k)
    if (std::strcmp(name, kKernelNames[k]) == 0) {
      *function = &gKernels[k];
      zbfake::registerRuntimeKernel(&gKernels[k], gOptimizerBlob,
                                    kKernelNames[k]);
      return kOk;
    }
  return 500; // CUDA_ERROR_NOT_FOUND
}
/// The table of a multi-tensor kernel (OptimizerKernels.cu; params[0] and
/// the entries' count params[1]): device memory whose entries cover the
/// grid's blocks in order, each with 1 to ceil(n / blockX) blocks and the
/// pointers its kernel reads (grad; param for SGD; param, m, v for AdamW)
/// in device memory. Null with a message when not.
static const zbrt::math::TensorSlice *manyTable(void **params, int kernel,
                                                unsigned gridX,
                                                unsigned blockX, int &count) {
  const auto *t = *static_cast<zbrt::math::TensorSlice **>(params[0]);
  count = *static_cast<int *>(params[1]);
  if (count <= 0 || !isDevice(t, sizeof(*t) * count, "optimizer table"))
    return nullptr;
  const bool update = kernel != kFirstManyKernel + 2;
  const bool adamw = kernel == kFirstManyKernel + 1;
  long long next = 0;
  for (int k = 0; k < count; ++k) {
    const zbrt::math::TensorSlice &e = t[k];
    size_t bytes = (size_t)e.n * 4;
    bool ok = e.firstBlock == next && e.n >= 1 && e.blocks >= 1 &&
              (e.blocks - 1) * (long long)blockX < e.n &&
              isDevice(e.grad, bytes, "optimizer table grad") &&
              (!update || isDevice(e.param, bytes, "optimizer table param")) &&
              (!adamw || (isDevice(e.m, bytes, "optimizer table m") &&
                          isDevice(e.v, bytes, "optimizer table v")));
    if (!ok) {
      std::fprintf(stderr, "fake-cuda: %s: table entry %d of %d is wrong\n",
                   kKernelNames[kernel], k, count);
      return nullptr;
    }
    next += e.blocks;
  }
  if (next == gridX)
    return t;
  std::fprintf(stderr, "fake-cuda: %s: the table has %lld blocks, the grid %u\n",
               kKernelNames[kernel], next, gridX);
  return nullptr;
}

/// libzbrt's multi-tensor kernels (OptimizerKernels.cu) on the host: the
/// single-tensor kernels' per-element code over every table entry as if it
/// were launched alone with the entry's blocks.
static CUresult launchManyKernel(int kernel, unsigned gridX, unsigned blockX,
                                 void **params) {
  zbfake::DeviceAccess open; // the table may be device memory
  int count = 0;
  const zbrt::math::TensorSlice *table =
      manyTable(params, kernel, gridX, blockX, count);
  if (!table)
    return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  if (kernel == kFirstManyKernel + 2) {
    double *partial = *static_cast<double **>(params[2]);
    int *nonFinite = *static_cast<int **>(params[3]);
    if (!isDevice(partial, gridX * 8, "sums of squares partials") ||
        !isDevice(nonFinite, gridX * 4, "sums of squares flags"))
      return 700;
    if (zbfake::noopKernels())
      return kOk; // the partial sums stay as they are
    for (const auto *e = table; e < table + count; ++e) {
      // Element i belongs to block (i mod (blocks * blockX)) / blockX.
      long long threads = e->blocks * blockX;
      double *part = partial + e->firstBlock;
      int *bad = nonFinite + e->firstBlock;
      std::fill(part, part + e->blocks, 0.0);
      std::fill(bad, bad + e->blocks, 0);
      for (long long i = 0; i < e->n; ++i) {
        long long b = (i % threads) / blockX;
        if (!std::isfinite(e->grad[i]))
          bad[b] = 1;
        part[b] += (double)e->grad[i] * (double)e->grad[i];
      }
    }
    return kOk;
  }
  if (zbfake::noopKernels())
    return kOk;
  const int rollback = *static_cast<int *>(params[3]);
  for (const auto *e = table; e < table + count; ++e) {
    float *p = e->param, *m = e->m, *v = e->v;
    const float *g = e->grad;
    if (kernel == kFirstManyKernel + 1) {
      auto s = *static_cast<zbrt::math::AdamWScalars *>(params[2]);
      for (long long i = 0; i < e->n; ++i)
        rollback ? zbrt::math::adamwRollback(p[i], g[i], m[i], v[i], s)
                 : zbrt::math::adamwStep(p[i], g[i], m[i], v[i], s);
      continue;
    }
    float scale = *static_cast<float *>(params[2]);
    for (long long i = 0; i < e->n; ++i)
      rollback ? zbrt::math::sgdRollback(p[i], g[i], scale)
               : zbrt::math::sgdStep(p[i], g[i], scale);
  }
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
  if (function == &gTimestampKernel)
    return gridX == 1 && blockX == 1 ? launchTimestamp(stream, params)
                                     : kInvalidValue;
  int kernel = optimizerKernel(function);
  bool optimizer = kernel >= 0;
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
  auto arg = [&](int i) { return params[i]; };
  ++gStats.launches;
  if (kernel >= kFirstManyKernel)
    return launchManyKernel(kernel, gridX, blockX, params);
  if (function == &gKernels[0]) {
    float *p = *static_cast<float **>(arg(0));
    const float *g = *static_cast<const float **>(arg(1));
    long long n = *static_cast<long long *>(arg(2));
    float scale = *static_cast<float *>(arg(3));
    int rollback = *static_cast<int *>(arg(4));
    if (!isDevice(p, n * 4, "SGD param") || !isDevice(g, n * 4, "SGD grad"))
      return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
    if (zbfake::noopKernels())
      return kOk;
    zbfake::DeviceAccess open;
    for (long long i = 0; i < n; ++i)
      rollback ? zbrt::math::sgdRollback(p[i], g[i], scale)
               : zbrt::math::sgdStep(p[i], g[i], scale);
    return kOk;
  }
  if (function == &gKernels[1]) {
    float *p = *static_cast<float **>(arg(0));
    const float *g = *static_cast<const float **>(arg(1));
    float *m = *static_cast<float **>(arg(2));
    float *v = *static_cast<float **>(arg(3));
    long long n = *static_cast<long long *>(arg(4));
    zbrt::math::AdamWScalars s =
        *static_cast<zbrt::math::AdamWScalars *>(arg(5));
    int rollback = *static_cast<int *>(arg(6));
    if (!isDevice(p, n * 4, "AdamW param") ||
        !isDevice(g, n * 4, "AdamW grad") || !isDevice(m, n * 4, "AdamW m") ||
        !isDevice(v, n * 4, "AdamW v"))
      return 700;
    if (zbfake::noopKernels())
      return kOk;
    zbfake::DeviceAccess open;
    for (long long i = 0; i < n; ++i)
      rollback ? zbrt::math::adamwRollback(p[i], g[i], m[i], v[i], s)
               : zbrt::math::adamwStep(p[i], g[i], m[i], v[i], s);
    return kOk;
  }
  if (function == &gKernels[2]) {
    const float *x = *static_cast<const float **>(arg(0));
    long long n = *static_cast<long long *>(arg(1));
    double *partial = *static_cast<double **>(arg(2));
    int *nonFinite = *static_cast<int **>(arg(3));
    if (!isDevice(x, n * 4, "sum of squares x") ||
        !isDevice(partial, gridX * 8, "sum of squares partials") ||
        !isDevice(nonFinite, 4, "sum of squares flag"))
      return 700;
    if (zbfake::noopKernels())
      return kOk; // the partial sums stay as they are
    zbfake::DeviceAccess open;
    // Element i belongs to block (i mod (grid * block)) / block.
    long long threads = (long long)gridX * blockX;
    for (unsigned b = 0; b < gridX; ++b)
      partial[b] = 0;
    for (long long i = 0; i < n; ++i) {
      if (!std::isfinite(x[i]))
        *nonFinite = 1;
      partial[(i % threads) / blockX] += (double)x[i] * (double)x[i];
    }
    return kOk;
  }
  return kNotSupported;
}
constexpr CUresult kNotReady = 600;
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
  if (stream)
    progress(static_cast<Stream *>(stream), LONG_MAX, /*block=*/true);
  return kOk;
}
CUresult cuStreamQuery(void *stream) {
  if (int r = zbfake::refuseWhileCapturing(stream, "cuStreamQuery"))
    return r;
  return !stream || progress(static_cast<Stream *>(stream), LONG_MAX,
                             /*block=*/false)
             ? kOk
             : kNotReady;
}
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned) {
  ++gStats.waits;
  if (!event)
    return kInvalidValue;
  // Joining a capture across streams is not emulated: refused.
  if (int r = zbfake::refuseWhileCapturing(stream, "cuStreamWaitEvent"))
    return r;
  static const bool dropWaits = envLong("ZB_FAKE_CUDA_DROP_WAITS", 0) != 0;
  auto *e = static_cast<Event *>(event);
  if (dropWaits || !e->stream)
    return kOk;
  auto *waiter = static_cast<Stream *>(stream);
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
  delete e;
  return kOk;
}
CUresult cuEventSynchronize(void *event) {
  if (event)
    eventReady(static_cast<Event *>(event), /*block=*/true);
  return kOk;
}
CUresult cuEventQuery(void *event) {
  return !event || eventReady(static_cast<Event *>(event), /*block=*/false)
             ? kOk
             : kNotReady;
}
CUresult cuEventRecord(void *event, void *stream) {
  if (!event)
    return kInvalidValue;
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream, [event] { cuEventRecord(event, nullptr); });
    return kOk;
  }
  auto *e = static_cast<Event *>(event);
  auto *s = static_cast<Stream *>(stream);
  long generation = ++e->generation;
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
  if (!zbfake::deviceFree(reinterpret_cast<void *>(ptr)))
    std::free(reinterpret_cast<void *>(ptr));
  return kOk;
}
CUresult cuMemcpyAsync(unsigned long long dst, unsigned long long src,
                       size_t bytes, void *stream) {
  if (zbfake::capturing(stream)) {
    zbfake::captureNode(stream, [dst, src, bytes] {
      cuMemcpyAsync(dst, src, bytes, nullptr);
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
      cuMemsetD32Async(dst, value, n, nullptr);
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
      cuMemsetD16Async(dst, value, n, nullptr);
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
                               : "CUDA_ERROR_UNKNOWN";
  return kOk;
}
CUresult cuGetErrorString(CUresult e, const char **text) {
  *text = e == kNotSupported
              ? "operation not supported (fake CUDA driver: no kernels)"
          : e == kInvalidValue ? "invalid argument"
          : e == 700           ? "an illegal memory access was encountered"
                               : "fake CUDA driver error";
  return kOk;
}

//===-- cuBLAS ----------------------------------------------------------------===//

int cublasCreate_v2(void **handle) {
  static int h;
  *handle = &h;
  return 0;
}
int cublasDestroy_v2(void *) { return 0; }
// The handle's stream: GEMMs on it while it is captured are recorded.
static void *gBlasStream;
int cublasSetStream_v2(void *, void *stream) {
  gBlasStream = stream;
  return stream ? 0 : 7;
}
/// A workspace must be device memory (cuBLAS's advice for graphs).
int cublasSetWorkspace_v2(void *, void *workspace, size_t bytes) {
  return bytes == 0 || isDevice(workspace, bytes, "cublasSetWorkspace") ? 0
                                                                         : 7;
}
int cublasSetMathMode(void *, int mode) {
  return mode == 0 || mode == 2 || mode == 3 ? 0 : 7;
}
const char *cublasGetStatusString(int status) {
  return status == 13  ? "CUBLAS_STATUS_EXECUTION_FAILED"
         : status == 7 ? "CUBLAS_STATUS_INVALID_VALUE"
                       : "CUBLAS_STATUS_UNKNOWN";
}
/// Column-major C[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta C, as
/// cuBLAS documents cublasSgemm (beta == 0: C is not read).
int cublasSgemm_v2(void *handle, int transa, int transb, int m, int n, int k,
                   const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c,
                   int ldc) {
  if (zbfake::capturing(gBlasStream)) {
    // The scalars are host memory, read when the call is captured.
    float scalars[2] = {*alpha, *beta};
    zbfake::captureNode(gBlasStream, [=] {
      cublasSgemm_v2(handle, transa, transb, m, n, k, &scalars[0], a, lda, b,
                     ldb, &scalars[1], c, ldc);
    });
    return 0;
  }
  {
    const long long values[] = {transa, transb, m, n, k, lda, ldb, ldc};
    zbfake::digest(values, sizeof values);
    for (const void *p : {(const void *)a, (const void *)b, (const void *)c})
      zbfake::digestPointer(p);
    zbfake::digest(alpha, sizeof *alpha);
    zbfake::digest(beta, sizeof *beta);
  }
  ++gStats.gemms;
  long failAt = envLong("ZB_FAKE_CUDA_FAIL_GEMM", 0);
  if (failAt > 0 && gStats.gemms == failAt && faultsHere())
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) ||
      lda < ((transa ? k : m) > 1 ? (transa ? k : m) : 1) ||
      ldb < ((transb ? n : k) > 1 ? (transb ? n : k) : 1))
    return 7;
  if (m == 0 || n == 0)
    return 0;
  // The extent of each operand in elements (last column's end).
  auto extent = [](int rows, int cols, int ld) {
    return (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
  };
  if ((k > 0 &&
       (!isDevice(a, 4 * extent(transa ? k : m, transa ? m : k, lda),
                  "cublasSgemm A") ||
        !isDevice(b, 4 * extent(transb ? n : k, transb ? k : n, ldb),
                  "cublasSgemm B"))) ||
      !isDevice(c, 4 * extent(m, n, ldc), "cublasSgemm C"))
    return 7;
  // No-op kernels (FakeKernels.cpp): GEMMs are checked, not computed.
  if (zbfake::noopKernels())
    return 0;
  zbfake::DeviceAccess open;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        double av = transa ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
        double bv = transb ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];
        sum += av * bv;
      }
      float &out = c[i + (size_t)j * ldc];
      out = (float)(*alpha * sum + (*beta == 0.0f ? 0.0 : *beta * (double)out));
    }
  return 0;
}

/// cuBLAS's strided batched form: `batch` column-major products at constant
/// element strides between the matrices.
int cublasSgemmStridedBatched(void *handle, int transa, int transb, int m,
                              int n, int k, const float *alpha, const float *a,
                              int lda, long long strideA, const float *b,
                              int ldb, long long strideB, const float *beta,
                              float *c, int ldc, long long strideC,
                              int batch) {
  if (zbfake::capturing(gBlasStream)) {
    float scalars[2] = {*alpha, *beta};
    zbfake::captureNode(gBlasStream, [=] {
      cublasSgemmStridedBatched(handle, transa, transb, m, n, k, &scalars[0],
                                a, lda, strideA, b, ldb, strideB, &scalars[1],
                                c, ldc, strideC, batch);
    });
    return 0;
  }
  if (batch < 0)
    return 7;
  ++gStats.batchedGemms;
  for (int i = 0; i < batch; ++i) {
    int status = cublasSgemm_v2(handle, transa, transb, m, n, k, alpha,
                                a + i * strideA, lda, b + i * strideB, ldb,
                                beta, c + i * strideC, ldc);
    if (status != 0)
      return status;
  }
  return 0;
}

//===-- NCCL ------------------------------------------------------------------===//

int ncclGetUniqueId(void *id) {
  FakeId f{};
  std::memcpy(f.magic, "zbfake01", 8);
  f.creatorWorldRank = worldRank();
  f.sequence = ++gIdSequence;
  std::memcpy(id, &f, sizeof f);
  return 0;
}

int ncclCommInitRank(void **comm, int nranks, FakeId id, int rank) {
  if (nranks != 2 || (rank != 0 && rank != 1) ||
      std::memcmp(id.magic, "zbfake01", 8) != 0)
    return 4; // ncclInvalidArgument
  auto *c = new Comm;
  c->rank = rank;
  int handshake = kTagBase + (id.sequence % 4096) * 4096 +
                  (id.creatorWorldRank % 4096);
  c->tag = handshake + (1 << 28) / 2;
  // The members meet: rank 1 tells rank 0 its world rank, host and device;
  // rank 0 answers with its own host and device.
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  struct Member {
    int worldRank, device;
    char host[64];
  } me{worldRank(), gCurrentDevice, {}}, other{};
  std::memcpy(me.host, host, sizeof host);
  if (rank == 1) {
    c->peerWorld = id.creatorWorldRank;
    MPI_Send(&me, sizeof me, MPI_BYTE, c->peerWorld, handshake,
             MPI_COMM_WORLD);
    MPI_Recv(&other, sizeof other, MPI_BYTE, c->peerWorld, handshake,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&other, sizeof other, MPI_BYTE, MPI_ANY_SOURCE, handshake,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    c->peerWorld = other.worldRank;
    MPI_Send(&me, sizeof me, MPI_BYTE, c->peerWorld, handshake,
             MPI_COMM_WORLD);
  }
  if (me.device == other.device &&
      std::strncmp(me.host, other.host, sizeof me.host) == 0) {
    std::fprintf(stderr,
                 "fake-nccl: %s: NCCL WARN Duplicate GPU detected : rank 1 "
                 "and rank 0 both on CUDA device %d\n",
                 host, me.device);
    delete c;
    return 5; // ncclInvalidUsage
  }
  ++gStats.comms;
  *comm = c;
  return 0;
}

int ncclSend(const void *buf, size_t count, int type, int peer, void *comm,
             void *stream) {
  auto *c = static_cast<Comm *>(comm);
  if (type != 0 || !c || !stream || peer == c->rank || peer < 0 || peer > 1)
    return 4;
  if (count && !isDevice(buf, count, "ncclSend"))
    return 4;
  ++gStats.sends;
  ++gStats.sendsTo[c->peerWorld];
  gStats.sendBytes += (long)count;
  enqueueOrRun(stream, c, [c, buf, count] { isend(c, buf, count); });
  return 0;
}

int ncclRecv(void *buf, size_t count, int type, int peer, void *comm,
             void *stream) {
  auto *c = static_cast<Comm *>(comm);
  if (type != 0 || !c || !stream || peer == c->rank || peer < 0 || peer > 1)
    return 4;
  if (count && !isDevice(buf, count, "ncclRecv"))
    return 4;
  ++gStats.recvs;
  gStats.recvBytes += (long)count;
  // Stale until the stream has run the receive: NaN in every float.
  {
    zbfake::DeviceAccess open;
    std::memset(buf, 0xFF, count);
  }
  defer(static_cast<Stream *>(stream), c, [c, buf, count](bool block) {
    MPI_Status status;
    if (!block) {
      int there = 0;
      MPI_Iprobe(c->peerWorld, c->tag, MPI_COMM_WORLD, &there, &status);
      if (!there)
        return false;
    } else {
      MPI_Probe(c->peerWorld, c->tag, MPI_COMM_WORLD, &status);
    }
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    // A message of another size is consumed and reported, not written.
    std::vector<char> discarded;
    void *into = buf;
    if ((size_t)got != count) {
      c->asyncError = 5; // ncclInvalidUsage
      discarded.resize((size_t)got);
      into = discarded.data();
    }
    zbfake::DeviceAccess open; // MPI writes the device buffer
    MPI_Recv(into, got, MPI_BYTE, c->peerWorld, c->tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    ++gStats.deferredRecvs;
    return true;
  });
  return 0;
}

int ncclCommGetAsyncError(void *comm, int *state) {
  if (!comm)
    return 4;
  long after = envLong("ZB_FAKE_NCCL_ERROR_AFTER", 0);
  *state = after > 0 && gStats.sends >= after && faultsHere() ? 2 : 0;
  if (int e = static_cast<Comm *>(comm)->asyncError)
    *state = e;
  return 0;
}
/// Drops the deferred work that uses `c` (an aborted communicator's
/// operations never complete).
static void dropDeferred(Comm *c) {
  for (Stream *s : gStreams)
    for (auto it = s->pending.begin(); it != s->pending.end();)
      if (it->comm == c) {
        it = s->pending.erase(it);
        ++gStats.droppedOps;
      } else {
        ++it;
      }
}
int ncclCommAbort(void *comm) {
  dropDeferred(static_cast<Comm *>(comm));
  delete static_cast<Comm *>(comm);
  return 0;
}
int ncclCommDestroy(void *comm) {
  auto *c = static_cast<Comm *>(comm);
  dropDeferred(c);
  completeSends(c);
  delete c;
  return 0;
}
const char *ncclGetErrorString(int result) {
  switch (result) {
  case 2:
    return "unhandled system error (fake NCCL: injected)";
  case 4:
    return "invalid argument";
  case 5:
    return "invalid usage";
  default:
    return "fake NCCL error";
  }
}

} // extern "C"

/// For tests in the same process (dlopen RTLD_NOLOAD + dlsym).
extern "C" long zb_fake_cuda_bad_pointers() { return gStats.badPointers; }
extern "C" long zb_fake_cuda_gemm_calls() { return gStats.gemms; }
extern "C" long zb_fake_cuda_kernel_launches() { return gStats.launches; }
