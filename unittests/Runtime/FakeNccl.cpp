//===- FakeNccl.cpp - the stand-in's NCCL ---------------------------------===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): ncclSend/ncclRecv move bytes
// over MPI between the two ranks of a communicator (the creator of the
// unique id is its rank 0); a receive fills its buffer with NaN and waits
// on its stream until the stream is waited for; ncclCommInitRank refuses,
// as NCCL does, two ranks of a communicator on one device of one host.
// ZB_FAKE_NCCL_ERROR_AFTER=N reports an asynchronous error after N sends.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"

#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace zbfake;

namespace zbfake {
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

/// A host wait of this stand-in (a receive that its stream needs now, the
/// sends still in flight) under zb-run's communication watchdog, as the
/// runtime's own waits are: polls `ready` and, past zbrt_comm_timeout()
/// seconds, ends the job through zbrt_fatal naming `what`. A real GPU never
/// blocks the host here (the runtime polls its events and its watchdog
/// fires); the stand-in must, where a kernel that runs on the host needs
/// the bytes, so it keeps the watchdog itself. Without libzbrt in the
/// process (found with dlsym) it waits forever, as MPI would.
template <typename Ready> void waitWatched(Ready ready, const char *what) {
  using TimeoutFn = double (*)(void);
  using FatalFn = void (*)(const char *);
  static TimeoutFn timeout =
      reinterpret_cast<TimeoutFn>(dlsym(RTLD_DEFAULT, "zbrt_comm_timeout"));
  static FatalFn fatal =
      reinterpret_cast<FatalFn>(dlsym(RTLD_DEFAULT, "zbrt_fatal"));
  const auto start = std::chrono::steady_clock::now();
  while (!ready()) {
    double waited = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    double limit = timeout ? timeout() : 0;
    if (fatal && limit > 0 && waited > limit) {
      char message[512];
      std::snprintf(message, sizeof message,
                    "waited %.0f s for %s: the peer is stopped, dead or "
                    "deadlocked (zb-run --comm-timeout %g)",
                    waited, what, limit);
      fatal(message);
    }
    if (waited > 1e-3)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void completeSends(Comm *c) {
  if (!c->sends.empty()) {
    char what[160];
    std::snprintf(what, sizeof what,
                  "%zu NCCL send(s) to rank %d to complete (fake-cuda)",
                  c->sends.size(), c->peerWorld);
    waitWatched(
        [c] {
          int done = 0;
          MPI_Testall((int)c->sends.size(), c->sends.data(), &done,
                      MPI_STATUSES_IGNORE);
          return done != 0;
        },
        what);
  }
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

} // namespace zbfake

namespace {
} // namespace

extern "C" {

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
      char what[160];
      std::snprintf(what, sizeof what,
                    "an NCCL receive of %zu bytes from rank %d (fake-cuda: "
                    "a host wait on its stream)",
                    count, c->peerWorld);
      waitWatched(
          [&] {
            int there = 0;
            MPI_Iprobe(c->peerWorld, c->tag, MPI_COMM_WORLD, &there, &status);
            return there != 0;
          },
          what);
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
