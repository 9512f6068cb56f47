//===- FakeNccl.cpp - the stand-in's NCCL ---------------------------------===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): ncclSend/ncclRecv move bytes
// over MPI between the two ranks of a communicator (the creator of the
// unique id is its rank 0); a receive fills its buffer with NaN and waits
// on its stream until the stream is waited for; ncclCommInitRank refuses,
// as NCCL does, two ranks of a communicator on one device of one host.
// ncclAllReduce (float32, sum; a communicator of any size) sends this
// rank's contribution to every other member over MPI when its stream
// reaches it, fills the receive buffer with NaN, and sums the contributions
// in communicator rank order (the same float additions on every member)
// once its stream is waited for, as a receive. Its stream must be ordered
// (by an event, or a host synchronisation) after the last write of its input
// on another stream (noteWrite, FakeCudaInternal.h): else, as a GPU could
// read the input before the kernels that write it ran, its contribution is
// NaN (counted, unordered_allreduces, and said once on stderr).
// ZB_FAKE_NCCL_ERROR_AFTER=N reports an asynchronous error after N sends.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"

#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
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
  int rank = 0;                  // in [0, members.size())
  int peerWorld = -1;            // two ranks: world rank of the other member
  std::vector<int> members;      // world rank of each communicator rank
  int tag = 0;                   // MPI tag of this communicator's bytes
  int allReduceTag = 0;          // MPI tag of its all-reduces' contributions
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

/// One ncclAllReduce: this rank's contribution (copied when its stream
/// reaches it, and sent to every other member), theirs, and the requests.
struct AllReduce {
  Comm *c;
  const float *send;
  float *recv;
  size_t count;
  bool started = false;
  bool unordered = false; // its input not ordered after its last write
  std::vector<float> mine;
  std::vector<std::vector<float>> theirs; // by communicator rank
  std::vector<MPI_Request> requests;
};

/// Its stream has reached it: the contribution leaves, theirs are awaited.
void startAllReduce(AllReduce &a) {
  a.started = true;
  {
    zbfake::DeviceAccess open; // the copy reads device memory
    a.mine.assign(a.send, a.send + a.count);
  }
  if (a.unordered)
    a.mine.assign(a.count, std::nanf(""));
  const std::vector<int> &members = a.c->members;
  a.theirs.resize(members.size());
  for (size_t r = 0; r < members.size(); ++r) {
    if ((int)r == a.c->rank)
      continue;
    a.theirs[r].resize(a.count);
    a.requests.emplace_back();
    MPI_Irecv(a.theirs[r].data(), (int)a.count, MPI_FLOAT, members[r],
              a.c->allReduceTag, MPI_COMM_WORLD, &a.requests.back());
    a.requests.emplace_back();
    MPI_Isend(a.mine.data(), (int)a.count, MPI_FLOAT, members[r],
              a.c->allReduceTag, MPI_COMM_WORLD, &a.requests.back());
  }
}

/// Every contribution has arrived (waiting when `block`): their sum, in
/// communicator rank order, into the receive buffer.
bool completeAllReduce(AllReduce &a, bool block) {
  if (!a.started)
    startAllReduce(a);
  auto arrived = [&a] {
    if (a.requests.empty()) // one rank: no MPI
      return true;
    int done = 0;
    MPI_Testall((int)a.requests.size(), a.requests.data(), &done,
                MPI_STATUSES_IGNORE);
    return done != 0;
  };
  if (!block) {
    if (!arrived())
      return false;
  } else {
    char what[160];
    std::snprintf(what, sizeof what,
                  "an NCCL all-reduce of %zu floats over %zu ranks (fake-cuda: "
                  "a host wait on its stream)",
                  a.count, a.c->members.size());
    waitWatched(arrived, what);
  }
  auto contribution = [&a](size_t r) -> const std::vector<float> & {
    return (int)r == a.c->rank ? a.mine : a.theirs[r];
  };
  zbfake::DeviceAccess open; // the sums go into device memory
  for (size_t i = 0; i < a.count; ++i) {
    float sum = contribution(0)[i];
    for (size_t r = 1; r < a.c->members.size(); ++r)
      sum += contribution(r)[i];
    a.recv[i] = sum;
  }
  ++gStats.deferredAllReduces;
  return true;
}

} // namespace zbfake

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
  if (nranks < 1 || nranks > 4096 || rank < 0 || rank >= nranks ||
      std::memcmp(id.magic, "zbfake01", 8) != 0)
    return 4; // ncclInvalidArgument
  if (rank == 0 && id.creatorWorldRank != worldRank())
    return 4; // this stand-in: the id's creator is rank 0
  auto *c = new Comm;
  c->rank = rank;
  int handshake = kTagBase + (id.sequence % 4096) * 4096 +
                  (id.creatorWorldRank % 4096);
  c->tag = handshake + (1 << 28) / 2;
  c->allReduceTag = handshake + (1 << 28) / 2 + (1 << 28) / 4;
  // The members meet, as NCCL's bootstrap: every other rank tells rank 0
  // its communicator rank, world rank, host and device; rank 0 answers each
  // with the table of all of them.
  struct Member {
    int rank, worldRank, device;
    char host[64];
  };
  Member me{rank, worldRank(), gCurrentDevice, {}};
  gethostname(me.host, sizeof me.host - 1);
  std::vector<Member> all((size_t)nranks);
  const int bytes = (int)(sizeof(Member) * all.size());
  if (rank != 0) {
    MPI_Send(&me, sizeof me, MPI_BYTE, id.creatorWorldRank, handshake,
             MPI_COMM_WORLD);
    MPI_Recv(all.data(), bytes, MPI_BYTE, id.creatorWorldRank, handshake,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    all[0] = me;
    for (int i = 1; i < nranks; ++i) {
      Member m{};
      MPI_Recv(&m, sizeof m, MPI_BYTE, MPI_ANY_SOURCE, handshake,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (m.rank > 0 && m.rank < nranks)
        all[(size_t)m.rank] = m;
    }
    for (int i = 1; i < nranks; ++i)
      MPI_Send(all.data(), bytes, MPI_BYTE, all[(size_t)i].worldRank, handshake,
               MPI_COMM_WORLD);
  }
  for (const Member &m : all)
    c->members.push_back(m.worldRank);
  if (nranks == 2)
    c->peerWorld = c->members[(size_t)(1 - rank)];
  // Every member sees the same table, so all of them refuse alike.
  for (int a = 0; a < nranks; ++a)
    for (int b = a + 1; b < nranks; ++b)
      if (all[(size_t)a].device == all[(size_t)b].device &&
          std::strncmp(all[(size_t)a].host, all[(size_t)b].host,
                       sizeof me.host) == 0) {
        std::fprintf(stderr,
                     "fake-nccl: %s: NCCL WARN Duplicate GPU detected : rank "
                     "%d and rank %d both on CUDA device %d\n",
                     me.host, b, a, all[(size_t)a].device);
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
  // (This stand-in's point-to-point messages: two-rank communicators only.)
  if (type != 0 || !c || !stream || c->members.size() != 2 || peer == c->rank ||
      peer < 0 || peer > 1)
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
  // (This stand-in's point-to-point messages: two-rank communicators only.)
  if (type != 0 || !c || !stream || c->members.size() != 2 || peer == c->rank ||
      peer < 0 || peer > 1)
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

int ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, int type,
                  int op, void *comm, void *stream) {
  auto *c = static_cast<Comm *>(comm);
  // float32 sums only (ncclFloat32, ncclSum), at most INT_MAX (MPI counts).
  if (type != 7 || op != 0 || !c || !stream || count > 0x7fffffffu)
    return 4;
  const size_t bytes = count * sizeof(float);
  if (count && (!isDevice(sendbuff, bytes, "ncclAllReduce sendbuff") ||
                !isDevice(recvbuff, bytes, "ncclAllReduce recvbuff")))
    return 4;
  ++gStats.allReduces;
  gStats.allReduceBytes += (long)bytes;
  auto a = std::make_shared<AllReduce>();
  a->c = c;
  a->send = static_cast<const float *>(sendbuff);
  a->recv = static_cast<float *>(recvbuff);
  a->count = count;
  auto *s = static_cast<Stream *>(stream);
  s->carriesAllReduce = true;
  int writer = -1;
  if (count && !orderedAfterLastWrite(s, sendbuff, &writer)) {
    a->unordered = true;
    if (gStats.unorderedAllReduces++ == 0)
      std::fprintf(stderr,
                   "fake-cuda: ncclAllReduce of %zu floats on stream %d reads "
                   "memory written on stream %d without an event between "
                   "them: its contribution is NaN\n",
                   count, s->id, writer);
  }
  if (s->pending.empty()) {
    // The stream is here: the contribution leaves now; the result is stale
    // (NaN in every float) until the stream is waited for.
    startAllReduce(*a);
    zbfake::DeviceAccess open;
    std::memset(recvbuff, 0xFF, bytes);
  }
  defer(s, c, [a](bool block) { return completeAllReduce(*a, block); });
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
