//===- CudaBackend.cpp - zb runtime: streams, cuBLAS and NCCL per rank -----===//
//
// The CUDA backend of zb-run (zbrt.h, "CUDA backend"). One device per rank
// (the local rank among the ranks of its node, modulo the visible devices),
// and on it:
//   - the compute stream: every kernel MLIR's host code launches (its
//     mgpuStreamCreate returns this stream) and every cuBLAS GEMM;
//   - a send stream and a receive stream per peer, each with its own
//     two-rank NCCL communicator per direction (rank a -> rank b), so a
//     communicator only ever carries one direction on one stream on each
//     side, in program order: sends never wait for the host, and the
//     schedule's message order (verified deadlock-free with buffered sends by
//     zb-schedule) cannot deadlock on NCCL's unbuffered ones;
//   - events between them: a send copies the buffer into a staging block on
//     the compute stream (the caller may reuse its buffer at once, as on the
//     CPU) and its stream waits for that copy; a receive's stream waits for
//     the compute stream (the buffer may still be read by an earlier kernel)
//     and the compute stream waits for the receive. The host never waits for
//     a message; it waits at the end of the step, or where MLIR's host code
//     synchronises the compute stream, under the communication watchdog
//     (zbrt_set_comm_timeout), which also polls NCCL's asynchronous errors
//     and aborts the communicators before ending the job.
// cuBLAS and NCCL are loaded with dlopen like the driver (ZBRT_CUBLAS,
// ZBRT_NCCL override the libraries; tests point all three at a host-memory
// stand-in). Without NCCL, or to a peer without a channel, messages go
// through MPI on the host after a synchronisation (memory is managed).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "Driver.h"

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../Internal.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace zbrt::cuda;
using zbrt::detail::fatalf;

namespace {

//===-- cuBLAS (cublas_v2.h names, no header) -----------------------------===//

using CublasHandle = void *;
struct Cublas {
  int (*create)(CublasHandle *);
  int (*destroy)(CublasHandle);
  int (*setStream)(CublasHandle, Handle);
  int (*setMathMode)(CublasHandle, int);
  int (*sgemm)(CublasHandle, int, int, int, int, int, const float *,
               const float *, int, const float *, int, const float *, float *,
               int);
  int (*sgemmStridedBatched)(CublasHandle, int, int, int, int, int,
                             const float *, const float *, int, long long,
                             const float *, int, long long, const float *,
                             float *, int, long long, int);
  const char *(*statusString)(int);
};
constexpr int kCublasOpN = 0, kCublasOpT = 1;
constexpr int kCublasDefaultMath = 0;
constexpr int kCublasPedanticMath = 2;
constexpr int kCublasTf32Math = 3;

//===-- NCCL (nccl.h names, no header) ------------------------------------===//

struct NcclUniqueId {
  char internal[128];
};
using NcclComm = void *;
struct Nccl {
  int (*getUniqueId)(NcclUniqueId *);
  int (*commInitRank)(NcclComm *, int, NcclUniqueId, int);
  int (*send)(const void *, size_t, int, int, NcclComm, Handle);
  int (*recv)(void *, size_t, int, int, NcclComm, Handle);
  int (*commGetAsyncError)(NcclComm, int *);
  int (*commAbort)(NcclComm);
  int (*commDestroy)(NcclComm);
  const char *(*errorString)(int);
};
constexpr int kNcclInt8 = 0;
constexpr int kNcclInProgress = 7;

template <typename Fn> bool lookup(void *lib, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr;
}

/// One direction between this rank and a peer: a two-rank communicator
/// (the sender is its rank 0) and the stream it runs on here.
struct Channel {
  NcclComm comm = nullptr;
  Handle stream = nullptr;
};

/// A staging block of a send, in flight until `done` has completed.
struct Staging {
  CUdeviceptr ptr = 0;
  size_t capacity = 0;
  Handle done = nullptr;
};

/// A posted receive (for the watchdog's message).
struct PendingRecv {
  int32_t peer, tag;
  Handle done;
};

/// A message as the schedule names it (zbrt_tag) and its size.
struct Message {
  int32_t tag;
  int64_t bytes;
  bool operator==(const Message &o) const {
    return tag == o.tag && bytes == o.bytes;
  }
  bool operator<(const Message &o) const {
    return tag != o.tag ? tag < o.tag : bytes < o.bytes;
  }
};

/// A message that arrived before this rank asked for it: it waits in a
/// staging block until its receive.
struct EarlyMessage {
  Message message;
  Staging staging;
  Handle arrived;
};

/// NCCL has no tags: a channel delivers in the sender's order, while a
/// rank program may receive in another order (MPI matches tags). The first
/// step runs over MPI on the host and records each channel's order on both
/// sides; the peers exchange them, and from the second step on a receive
/// whose message is not next on its channel first receives the ones before
/// it into staging blocks (the order is the same every step: checked).
enum class Phase { Recording, Replaying };

struct Backend {
  bool active = false;
  int32_t flags = 0;
  int localRank = 0;
  Handle compute = nullptr;
  Cublas cublas{};
  CublasHandle cublasHandle = nullptr;
  bool haveNccl = false;
  Nccl nccl{};
  std::map<int32_t, Channel> sendTo, recvFrom;
  std::vector<Staging> inFlight, freeStaging;
  std::vector<Handle> freeEvents;
  std::vector<PendingRecv> pendingRecvs;
  Phase phase = Phase::Recording;
  /// Per peer: the messages this rank sends it in a step, in order; the
  /// ones it receives from it (in this rank's order, step 1); the order the
  /// peer sends them (the channel's order, from the peer).
  std::map<int32_t, std::vector<Message>> sendOrder, recvOrder, channelOrder;
  std::map<int32_t, size_t> sendPosition, channelPosition;
  std::map<int32_t, std::vector<EarlyMessage>> early;
  MPI_Comm bootstrap = MPI_COMM_NULL;
  /// Device timeline: the step's origin and (trace index, end?, event).
  Handle traceOrigin = nullptr;
  struct Mark {
    unsigned long index;
    bool end;
    Handle event;
  };
  std::vector<Mark> marks;
  std::vector<Handle> freeTimingEvents;
  /// The optimizer kernels' module (loaded at the first use).
  Handle optimizerModule = nullptr;
  Handle sgdKernel = nullptr, adamwKernel = nullptr, sumSquaresKernel = nullptr;
  double *partialSums = nullptr; // managed, kMaxSumBlocks
  int *nonFiniteFlag = nullptr;  // managed
  ZbrtCudaStats stats{};
};

constexpr int kOptimizerThreads = 256;
constexpr int kMaxSumBlocks = 1024;

Backend &backend() {
  static Backend b;
  return b;
}

Handle takeEvent() {
  Backend &b = backend();
  if (!b.freeEvents.empty()) {
    Handle e = b.freeEvents.back();
    b.freeEvents.pop_back();
    return e;
  }
  Handle e = nullptr;
  check(driver().cuEventCreate(&e, kEventDisableTiming), "cuEventCreate");
  return e;
}

/// An event recorded on `stream` now.
Handle recordOn(Handle stream) {
  Handle e = takeEvent();
  check(driver().cuEventRecord(e, stream), "cuEventRecord");
  return e;
}

/// `waiter` waits (on the device) for the work enqueued on `stream` so far.
void streamWaits(Handle waiter, Handle stream) {
  Handle e = recordOn(stream);
  check(driver().cuStreamWaitEvent(waiter, e, 0), "cuStreamWaitEvent");
  // Reusable once recorded work is enqueued: a later record replaces it and
  // cuStreamWaitEvent has captured the current one.
  backend().freeEvents.push_back(e);
}

bool eventDone(Handle e) {
  CUresult r = driver().cuEventQuery(e);
  if (r == kNotReady)
    return false;
  check(r, "cuEventQuery");
  return true;
}

void checkNccl(int result, const char *call, int32_t peer) {
  if (result == 0 || result == kNcclInProgress)
    return;
  Backend &b = backend();
  char action[128];
  zbrt::detail::currentAction(action, sizeof action);
  fatalf("NCCL error in %s with rank %d (%s): %s", call, peer, action,
         b.nccl.errorString ? b.nccl.errorString(result) : "unknown");
}

void checkCublas(int status, const char *call) {
  if (status == 0)
    return;
  Backend &b = backend();
  char action[128];
  zbrt::detail::currentAction(action, sizeof action);
  fatalf("cuBLAS error in %s (%s): %s (status %d)", call, action,
         b.cublas.statusString ? b.cublas.statusString(status) : "unknown",
         status);
}

/// Releases staging blocks whose send has completed.
void reapStaging() {
  Backend &b = backend();
  size_t kept = 0;
  for (Staging &s : b.inFlight) {
    if (eventDone(s.done)) {
      b.freeEvents.push_back(s.done);
      s.done = nullptr;
      b.freeStaging.push_back(s);
      continue;
    }
    b.inFlight[kept++] = s;
  }
  b.inFlight.resize(kept);
}

Staging takeStaging(size_t bytes) {
  Backend &b = backend();
  reapStaging();
  size_t best = b.freeStaging.size();
  for (size_t i = 0; i < b.freeStaging.size(); ++i)
    if (b.freeStaging[i].capacity >= bytes &&
        (best == b.freeStaging.size() ||
         b.freeStaging[i].capacity < b.freeStaging[best].capacity))
      best = i;
  if (best != b.freeStaging.size()) {
    Staging s = b.freeStaging[best];
    b.freeStaging.erase(b.freeStaging.begin() + best);
    return s;
  }
  Staging s;
  s.capacity = bytes ? (bytes + 255) / 256 * 256 : 256;
  check(driver().cuMemAlloc(&s.ptr, s.capacity), "cuMemAlloc");
  ++b.stats.stagingAllocations;
  return s;
}

/// Aborts every communicator (NCCL's way to unblock its kernels) before the
/// job ends.
void abortCommunicators() {
  Backend &b = backend();
  if (!b.haveNccl)
    return;
  for (auto *channels : {&b.sendTo, &b.recvFrom})
    for (auto &[peer, c] : *channels)
      if (c.comm) {
        b.nccl.commAbort(c.comm);
        c.comm = nullptr;
      }
}

void loadCublas(Backend &b) {
  const char *path = std::getenv("ZBRT_CUBLAS");
  const char *name = path && *path ? path : "libcublas.so.13";
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    fatalf("the CUDA backend needs cuBLAS: cannot load %s (%s)", name,
           dlerror());
  if (!lookup(lib, "cublasCreate_v2", b.cublas.create) ||
      !lookup(lib, "cublasDestroy_v2", b.cublas.destroy) ||
      !lookup(lib, "cublasSetStream_v2", b.cublas.setStream) ||
      !lookup(lib, "cublasSetMathMode", b.cublas.setMathMode) ||
      !lookup(lib, "cublasSgemm_v2", b.cublas.sgemm) ||
      !lookup(lib, "cublasSgemmStridedBatched",
              b.cublas.sgemmStridedBatched))
    fatalf("%s lacks a cuBLAS entry point (cublasCreate_v2, "
           "cublasSetStream_v2, cublasSetMathMode, cublasSgemm_v2, "
           "cublasSgemmStridedBatched)",
           name);
  lookup(lib, "cublasGetStatusString", b.cublas.statusString);
  checkCublas(b.cublas.create(&b.cublasHandle), "cublasCreate");
  checkCublas(b.cublas.setStream(b.cublasHandle, b.compute),
              "cublasSetStream");
  // fp32 GEMMs in fp32 unless the plan allows TF32 (zb-compile
  // --allow-tf32); --deterministic pins the pedantic (reproducible) mode.
  int mode = (b.flags & ZBRT_CUDA_ALLOW_TF32) ? kCublasTf32Math
             : (b.flags & ZBRT_CUDA_DETERMINISTIC) ? kCublasPedanticMath
                                                   : kCublasDefaultMath;
  checkCublas(b.cublas.setMathMode(b.cublasHandle, mode), "cublasSetMathMode");
}

/// NCCL, or false (with the reason in `why`) when it cannot be loaded.
bool loadNccl(Backend &b, std::string &why) {
  const char *path = std::getenv("ZBRT_NCCL");
  if (path && std::string(path) == "none") {
    why = "ZBRT_NCCL=none";
    return false;
  }
  const char *name = path && *path ? path : "libnccl.so.2";
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    why = std::string("cannot load ") + name + " (" + (e ? e : "?") + ")";
    return false;
  }
  if (!lookup(lib, "ncclGetUniqueId", b.nccl.getUniqueId) ||
      !lookup(lib, "ncclCommInitRank", b.nccl.commInitRank) ||
      !lookup(lib, "ncclSend", b.nccl.send) ||
      !lookup(lib, "ncclRecv", b.nccl.recv) ||
      !lookup(lib, "ncclCommGetAsyncError", b.nccl.commGetAsyncError) ||
      !lookup(lib, "ncclCommAbort", b.nccl.commAbort) ||
      !lookup(lib, "ncclCommDestroy", b.nccl.commDestroy) ||
      !lookup(lib, "ncclGetErrorString", b.nccl.errorString)) {
    why = std::string(name) + " lacks an NCCL entry point";
    return false;
  }
  return true;
}

/// One two-rank communicator per direction between ring neighbours (r and
/// r+1 mod p: every pipeline, interleaved and V-shape schedule talks only to
/// those), created in one global order so no rank waits on a cycle; the
/// sender makes the unique id and gives it to the receiver over MPI.
void createChannels(Backend &b) {
  int rank = zbrt_rank(), size = zbrt_world_size();
  if (size < 2)
    return;
  std::set<std::pair<int, int>> directed;
  for (int r = 0; r < size; ++r) {
    int next = (r + 1) % size;
    directed.insert({r, next});
    directed.insert({next, r});
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &b.bootstrap);
  MPI_Comm bootstrap = b.bootstrap;
  for (auto [from, to] : directed) {
    if (rank != from && rank != to)
      continue;
    NcclUniqueId id;
    if (rank == from) {
      checkNccl(b.nccl.getUniqueId(&id), "ncclGetUniqueId", to);
      MPI_Send(&id, sizeof id, MPI_BYTE, to, 0, bootstrap);
    } else {
      MPI_Recv(&id, sizeof id, MPI_BYTE, from, 0, bootstrap,
               MPI_STATUS_IGNORE);
    }
    Channel c;
    int peer = rank == from ? to : from;
    checkNccl(b.nccl.commInitRank(&c.comm, 2, id, rank == from ? 0 : 1),
              "ncclCommInitRank", peer);
    check(driver().cuStreamCreate(&c.stream, kStreamNonBlocking),
          "cuStreamCreate");
    (rank == from ? b.sendTo : b.recvFrom)[peer] = c;
    ++b.stats.ncclCommunicators;
  }
}

std::string describe(const Message &m) {
  char tag[128];
  zbrt::detail::describeTag(m.tag, tag, sizeof tag);
  return std::string("message with ") + tag + " of " +
         std::to_string(m.bytes) + " bytes";
}

/// After the recording step: every channel's sender tells its receiver
/// the order it sends in; the receiver checks it is the set of messages it
/// receives.
void exchangeOrders(Backend &b) {
  std::vector<MPI_Request> requests;
  std::map<int32_t, std::vector<Message>> outgoing;
  for (auto &[peer, c] : b.sendTo) {
    outgoing[peer] = b.sendOrder[peer];
    requests.emplace_back();
    MPI_Isend(outgoing[peer].data(),
              (int)(outgoing[peer].size() * sizeof(Message)), MPI_BYTE, peer,
              1, b.bootstrap, &requests.back());
  }
  for (auto &[peer, c] : b.recvFrom) {
    MPI_Status status;
    MPI_Probe(peer, 1, b.bootstrap, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<Message> order(bytes / sizeof(Message));
    MPI_Recv(order.data(), bytes, MPI_BYTE, peer, 1, b.bootstrap,
             MPI_STATUS_IGNORE);
    std::vector<Message> sent = order, received = b.recvOrder[peer];
    std::sort(sent.begin(), sent.end());
    std::sort(received.begin(), received.end());
    if (sent != received)
      fatalf("rank %d sends %zu messages per step to this rank, which "
             "receives %zu others from it: the rank programs do not belong "
             "together",
             peer, sent.size(), received.size());
    b.channelOrder[peer] = std::move(order);
  }
  if (!requests.empty())
    MPI_Waitall((int)requests.size(), requests.data(), MPI_STATUSES_IGNORE);
  b.phase = Phase::Replaying;
}

/// The local rank: this rank's index among the ranks of its node.
int localRank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

/// The oldest receive that has not arrived, for the watchdog's message.
std::string describeWait(const char *what) {
  Backend &b = backend();
  for (const PendingRecv &r : b.pendingRecvs)
    if (!eventDone(r.done)) {
      char tag[128];
      zbrt::detail::describeTag(r.tag, tag, sizeof tag);
      return std::string(what) + ": the NCCL receive of the message with " +
             tag + " from rank " + std::to_string(r.peer);
    }
  return std::string(what) + ": the GPU's work";
}

/// NCCL's asynchronous errors (a peer's communicator aborted, a network
/// failure) end the job.
void pollNcclErrors() {
  Backend &b = backend();
  if (!b.haveNccl)
    return;
  for (auto *channels : {&b.sendTo, &b.recvFrom})
    for (auto &[peer, c] : *channels) {
      int state = 0;
      if (!c.comm)
        continue;
      int r = b.nccl.commGetAsyncError(c.comm, &state);
      if (r == 0 && (state == 0 || state == kNcclInProgress))
        continue;
      int err = r != 0 ? r : state;
      std::string text = b.nccl.errorString(err);
      char action[128];
      zbrt::detail::currentAction(action, sizeof action);
      abortCommunicators();
      fatalf("NCCL error in the communication with rank %d (noticed %s): %s",
             peer, action, text.c_str());
    }
}

/// The compute stream (and, unless computeOnly, every communication
/// stream) has finished its work.
bool idle(bool computeOnly) {
  Backend &b = backend();
  auto done = [](Handle stream) {
    CUresult r = driver().cuStreamQuery(stream);
    if (r == kNotReady)
      return false;
    check(r, "cuStreamQuery");
    return true;
  };
  if (!done(b.compute))
    return false;
  if (computeOnly)
    return true;
  for (auto *channels : {&b.sendTo, &b.recvFrom})
    for (auto &[peer, c] : *channels)
      if (!done(c.stream))
        return false;
  return true;
}

} // namespace

bool zbrt::cuda::active() { return backend().active; }

bool zbrt::cuda::hostWaitsForComputeStream() {
  return !(backend().flags & ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY);
}

void *zbrt::cuda::computeStream() {
  return backend().active ? backend().compute : nullptr;
}

void zbrt::cuda::synchronize(const char *what, bool computeOnly) {
  Backend &b = backend();
  ++b.stats.hostSynchronizations;
  const double timeout = zbrt::detail::commTimeoutSeconds();
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    pollNcclErrors();
    if (idle(computeOnly))
      break;
    double waited = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (timeout > 0 && waited > timeout) {
      std::string message = describeWait(what);
      abortCommunicators();
      fatalf("waited %.0f s for %s: the peer is stopped, dead or deadlocked "
             "(zb-run --comm-timeout %g)",
             waited, message.c_str(), timeout);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(
        waited < 1e-3 ? 1 : 50));
  }
  // Receives the compute stream waited for have arrived.
  for (const PendingRecv &r : b.pendingRecvs)
    b.freeEvents.push_back(r.done);
  b.pendingRecvs.clear();
}

void zbrt::cuda::sgemm(const float *a, const float *bm, float *c, int64_t M,
                       int64_t N, int64_t K, bool transA, bool transB,
                       float alpha, float beta, int64_t lda, int64_t ldb,
                       int64_t ldc) {
  Backend &b = backend();
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // row-major storage of a matrix is the column-major storage of its
  // transpose, so the operands swap and keep their transpose flags.
  ++b.stats.gemms;
  checkCublas(b.cublas.sgemm(b.cublasHandle, transB ? kCublasOpT : kCublasOpN,
                             transA ? kCublasOpT : kCublasOpN, (int)N, (int)M,
                             (int)K, &alpha, bm, (int)ldb, a, (int)lda, &beta,
                             c, (int)ldc),
              "cublasSgemm");
  // Kernels emulated on the host (a cuda-emu plan) read C on the host next.
  if (b.flags & ZBRT_CUDA_HOST_KERNELS)
    synchronize("a GEMM", /*computeOnly=*/true);
}

void zbrt::cuda::sgemmStridedBatched(const float *a, const float *bm,
                                     float *c, int64_t M, int64_t N, int64_t K,
                                     bool transA, bool transB, int64_t lda,
                                     int64_t ldb, int64_t ldc, int64_t strideA,
                                     int64_t strideB, int64_t strideC,
                                     int64_t batch) {
  Backend &b = backend();
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX || batch > INT_MAX)
    fatalf("cublasSgemmStridedBatched: size or stride exceeds cuBLAS's int "
           "range");
  const float alpha = 1.0f, beta = 0.0f;
  ++b.stats.gemms;
  // As in sgemm: the column-major product of the transposes.
  checkCublas(b.cublas.sgemmStridedBatched(
                  b.cublasHandle, transB ? kCublasOpT : kCublasOpN,
                  transA ? kCublasOpT : kCublasOpN, (int)N, (int)M, (int)K,
                  &alpha, bm, (int)ldb, strideB, a, (int)lda, strideA, &beta,
                  c, (int)ldc, strideC, (int)batch),
              "cublasSgemmStridedBatched");
  if (b.flags & ZBRT_CUDA_HOST_KERNELS)
    synchronize("a GEMM", /*computeOnly=*/true);
}

bool zbrt::cuda::send(const void *buf, int64_t bytes, int32_t peer,
                      int32_t tag) {
  Backend &b = backend();
  auto it = b.sendTo.find(peer);
  if (it == b.sendTo.end() || !it->second.comm)
    return false;
  Message m{tag, bytes};
  if (b.phase == Phase::Recording) {
    b.sendOrder[peer].push_back(m);
    return false;
  }
  const std::vector<Message> &order = b.sendOrder[peer];
  size_t &position = b.sendPosition[peer];
  if (position >= order.size() || !(order[position] == m))
    fatalf("the messages to rank %d changed since the first step: the "
           "%s is not message %zu of the step",
           peer, describe(m).c_str(), position + 1);
  ++position;
  Staging s = takeStaging((size_t)bytes);
  if (bytes > 0)
    check(driver().cuMemcpyAsync(s.ptr, reinterpret_cast<CUdeviceptr>(buf),
                                 (size_t)bytes, b.compute),
          "cuMemcpyAsync");
  streamWaits(it->second.stream, b.compute);
  checkNccl(b.nccl.send(reinterpret_cast<const void *>(s.ptr), (size_t)bytes,
                        kNcclInt8, /*peer=*/1, it->second.comm,
                        it->second.stream),
            "ncclSend", peer);
  s.done = recordOn(it->second.stream);
  b.inFlight.push_back(s);
  ++b.stats.ncclSends;
  return true;
}

bool zbrt::cuda::recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) {
  Backend &b = backend();
  auto it = b.recvFrom.find(peer);
  if (it == b.recvFrom.end() || !it->second.comm)
    return false;
  Message m{tag, bytes};
  if (b.phase == Phase::Recording) {
    b.recvOrder[peer].push_back(m);
    return false;
  }
  // Arrived earlier, into a staging block: copy it over.
  std::vector<EarlyMessage> &early = b.early[peer];
  for (size_t i = 0; i < early.size(); ++i) {
    if (!(early[i].message == m))
      continue;
    EarlyMessage e = early[i];
    early.erase(early.begin() + i);
    check(driver().cuStreamWaitEvent(b.compute, e.arrived, 0),
          "cuStreamWaitEvent");
    if (bytes > 0)
      check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(buf),
                                   e.staging.ptr, (size_t)bytes, b.compute),
            "cuMemcpyAsync");
    b.pendingRecvs.push_back({peer, tag, e.arrived});
    e.staging.done = recordOn(b.compute);
    b.inFlight.push_back(e.staging);
    ++b.stats.earlyMessages;
    if (b.flags & ZBRT_CUDA_HOST_KERNELS)
      synchronize("a receive", /*computeOnly=*/true);
    return true;
  }
  // Messages the peer sends before this one go to staging blocks first.
  const std::vector<Message> &order = b.channelOrder[peer];
  size_t &position = b.channelPosition[peer];
  while (position < order.size() && !(order[position] == m)) {
    if (order[position].tag == tag)
      fatalf("the %s from rank %d does not have the %lld bytes this rank "
             "expects",
             describe(order[position]).c_str(), peer, (long long)bytes);
    EarlyMessage e{order[position], takeStaging((size_t)order[position].bytes),
                   nullptr};
    checkNccl(b.nccl.recv(reinterpret_cast<void *>(e.staging.ptr),
                          (size_t)e.message.bytes, kNcclInt8, /*peer=*/0,
                          it->second.comm, it->second.stream),
              "ncclRecv", peer);
    e.arrived = recordOn(it->second.stream);
    early.push_back(e);
    ++position;
    ++b.stats.ncclRecvs;
  }
  if (position >= order.size())
    fatalf("rank %d sends no %s in a step (or sent it already): the "
           "messages changed since the first step",
           peer, describe(m).c_str());
  ++position;
  streamWaits(it->second.stream, b.compute);
  checkNccl(b.nccl.recv(buf, (size_t)bytes, kNcclInt8, /*peer=*/0,
                        it->second.comm, it->second.stream),
            "ncclRecv", peer);
  Handle arrived = recordOn(it->second.stream);
  check(driver().cuStreamWaitEvent(b.compute, arrived, 0),
        "cuStreamWaitEvent");
  b.pendingRecvs.push_back({peer, tag, arrived});
  ++b.stats.ncclRecvs;
  if (b.flags & ZBRT_CUDA_HOST_KERNELS)
    synchronize("a receive", /*computeOnly=*/true);
  return true;
}

namespace {
Handle timingEvent() {
  Backend &b = backend();
  if (!b.freeTimingEvents.empty()) {
    Handle e = b.freeTimingEvents.back();
    b.freeTimingEvents.pop_back();
    return e;
  }
  Handle e = nullptr;
  check(driver().cuEventCreate(&e, 0), "cuEventCreate");
  return e;
}

/// After the step's synchronisation: device times into the trace.
void resolveTrace(Backend &b) {
  if (!b.traceOrigin)
    return;
  std::map<unsigned long, std::pair<double, double>> times;
  for (const Backend::Mark &m : b.marks) {
    float ms = 0;
    check(driver().cuEventElapsedTime(&ms, b.traceOrigin, m.event),
          "cuEventElapsedTime");
    auto &t = times.try_emplace(m.index, -1.0, -1.0).first->second;
    (m.end ? t.second : t.first) = ms * 1e3;
    b.freeTimingEvents.push_back(m.event);
  }
  for (auto &[index, t] : times)
    if (t.first >= 0 && t.second >= 0)
      zbrt::detail::traceSetDeviceTimes(index, t.first, t.second);
  b.marks.clear();
  b.freeTimingEvents.push_back(b.traceOrigin);
  b.traceOrigin = nullptr;
}
} // namespace

void zbrt::cuda::traceBeginStep() {
  Backend &b = backend();
  for (const Backend::Mark &m : b.marks)
    b.freeTimingEvents.push_back(m.event);
  b.marks.clear();
  if (!b.traceOrigin)
    b.traceOrigin = timingEvent();
  check(driver().cuEventRecord(b.traceOrigin, b.compute), "cuEventRecord");
}

void zbrt::cuda::traceMark(unsigned long index, bool end) {
  Backend &b = backend();
  if (!b.traceOrigin)
    return;
  Handle e = timingEvent();
  check(driver().cuEventRecord(e, b.compute), "cuEventRecord");
  b.marks.push_back({index, end, e});
}

void zbrt::cuda::stepEnd() {
  Backend &b = backend();
  synchronize("the end of the step");
  reapStaging();
  resolveTrace(b);
  if (b.phase == Phase::Recording) {
    if (b.haveNccl && !b.sendTo.empty())
      exchangeOrders(b);
    else
      b.phase = Phase::Replaying;
    return;
  }
  for (auto &[peer, order] : b.sendOrder)
    if (b.sendPosition[peer] != order.size())
      fatalf("this rank sent %zu of its %zu messages to rank %d in this "
             "step: the messages changed since the first step",
             b.sendPosition[peer], order.size(), peer);
  for (auto &[peer, order] : b.channelOrder)
    if (b.channelPosition[peer] != order.size() || !b.early[peer].empty())
      fatalf("this rank received %zu of the %zu messages rank %d sent in "
             "this step: the messages changed since the first step",
             b.channelPosition[peer] - b.early[peer].size(), order.size(),
             peer);
  b.sendPosition.clear();
  b.channelPosition.clear();
}

void zbrt::cuda::finalize() {
  Backend &b = backend();
  if (!b.active)
    return;
  synchronize("the end of the job");
  reapStaging();
  if (b.haveNccl)
    for (auto *channels : {&b.sendTo, &b.recvFrom})
      for (auto &[peer, c] : *channels)
        if (c.comm)
          b.nccl.commDestroy(c.comm);
  b.sendTo.clear();
  b.recvFrom.clear();
  if (b.bootstrap != MPI_COMM_NULL)
    MPI_Comm_free(&b.bootstrap);
  if (b.cublasHandle)
    b.cublas.destroy(b.cublasHandle);
  b.cublasHandle = nullptr;
  b.active = false;
}

extern "C" const unsigned char zbrt_optimizer_fatbin[];
extern "C" const size_t zbrt_optimizer_fatbin_size;

namespace {

void loadOptimizer(Backend &b) {
  if (b.optimizerModule)
    return;
  if (zbrt_optimizer_fatbin_size == 0)
    fatalf("libzbrt was built without the CUDA toolkit (nvcc): it has no "
           "optimizer kernels for the GPU; rebuild zb with the toolkit");
  const Driver &d = driver();
  check(d.cuModuleLoadData(&b.optimizerModule, zbrt_optimizer_fatbin),
        "cuModuleLoadData (optimizer kernels)");
  check(d.cuModuleGetFunction(&b.sgdKernel, b.optimizerModule,
                              "zbrt_sgd_kernel"),
        "cuModuleGetFunction");
  check(d.cuModuleGetFunction(&b.adamwKernel, b.optimizerModule,
                              "zbrt_adamw_kernel"),
        "cuModuleGetFunction");
  check(d.cuModuleGetFunction(&b.sumSquaresKernel, b.optimizerModule,
                              "zbrt_sum_squares_kernel"),
        "cuModuleGetFunction");
  CUdeviceptr p = 0;
  check(d.cuMemAllocManaged(&p, kMaxSumBlocks * sizeof(double) + 64,
                            kMemAttachGlobal),
        "cuMemAllocManaged");
  b.partialSums = reinterpret_cast<double *>(p);
  b.nonFiniteFlag = reinterpret_cast<int *>(b.partialSums + kMaxSumBlocks);
}

/// Blocks for n elements with grid-stride loops.
unsigned blocksFor(int64_t n, unsigned most) {
  int64_t blocks = (n + kOptimizerThreads - 1) / kOptimizerThreads;
  return (unsigned)std::max<int64_t>(1, std::min<int64_t>(blocks, most));
}

void launch(Handle kernel, unsigned blocks, void **params, const char *what) {
  Backend &b = backend();
  check(driver().cuLaunchKernel(kernel, blocks, 1, 1, kOptimizerThreads, 1, 1,
                                0, b.compute, params, nullptr),
        what);
}

} // namespace

bool zbrt::cuda::deviceOptimizer() {
  Backend &b = backend();
  return b.active && !(b.flags & ZBRT_CUDA_HOST_KERNELS);
}

void zbrt::cuda::sgd(float *param, const float *grad, int64_t n, float scale,
                     bool rollback) {
  Backend &b = backend();
  loadOptimizer(b);
  long long count = n;
  int back = rollback;
  void *params[] = {&param, &grad, &count, &scale, &back};
  launch(b.sgdKernel, blocksFor(n, 65535), params, "cuLaunchKernel (SGD)");
}

void zbrt::cuda::adamw(float *param, const float *grad, float *m, float *v,
                       int64_t n, const math::AdamWScalars &scalars,
                       bool rollback) {
  Backend &b = backend();
  loadOptimizer(b);
  long long count = n;
  int back = rollback;
  math::AdamWScalars s = scalars;
  void *params[] = {&param, &grad, &m, &v, &count, &s, &back};
  launch(b.adamwKernel, blocksFor(n, 65535), params, "cuLaunchKernel (AdamW)");
}

double zbrt::cuda::sumSquares(const float *x, int64_t n, int32_t *nonFinite) {
  Backend &b = backend();
  loadOptimizer(b);
  unsigned blocks = blocksFor(n, kMaxSumBlocks);
  // The previous use of the buffers has finished (it was waited for).
  *b.nonFiniteFlag = 0;
  long long count = n;
  void *params[] = {&x, &count, &b.partialSums, &b.nonFiniteFlag};
  launch(b.sumSquaresKernel, blocks, params, "cuLaunchKernel (sum of squares)");
  synchronize("a gradient norm", /*computeOnly=*/true);
  double sum = 0;
  for (unsigned i = 0; i < blocks; ++i)
    sum += b.partialSums[i];
  if (nonFinite)
    *nonFinite = *b.nonFiniteFlag != 0;
  return sum;
}

extern "C" void zbrt_cuda_synchronize(void) {
  if (zbrt::cuda::active())
    zbrt::cuda::synchronize("the optimizer", /*computeOnly=*/true);
}

extern "C" void zbrt_cuda_start(int32_t flags) {
  Backend &b = backend();
  if (b.active)
    fatalf("zbrt_cuda_start: the CUDA backend is already running");
  char why[256];
  int32_t devices = 0;
  if (zbrt::cuda::probe(why, sizeof why, &devices) != 0)
    fatalf("the CUDA backend cannot start: %s", why);
  b.flags = flags;
  b.localRank = localRank();
  setDevice(b.localRank % devices);
  const Driver &d = driver();
  b.stats.device = d.device;
  b.stats.localRank = b.localRank;
  check(d.cuStreamCreate(&b.compute, kStreamNonBlocking), "cuStreamCreate");
  loadCublas(b);
  std::string ncclWhy;
  b.haveNccl = loadNccl(b, ncclWhy);
  if (b.haveNccl)
    createChannels(b);
  else if (zbrt_world_size() > 1)
    std::fprintf(stderr,
                 "zb-run: rank %d: no NCCL (%s): messages go through MPI on "
                 "the host\n",
                 zbrt_rank(), ncclWhy.c_str());
  zbrt::detail::useCudaMemory(); // the driver is loaded: no second probe
  b.active = true;
}

extern "C" int32_t zbrt_cuda_started(void) { return backend().active; }

extern "C" void zbrt_cuda_stats(ZbrtCudaStats *out) {
  if (out)
    *out = backend().stats;
}
