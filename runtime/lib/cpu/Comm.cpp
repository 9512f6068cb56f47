//===- Comm.cpp - zb runtime: MPI point-to-point, init, errors ------------===//
//
// zbrt_send copies the message into a runtime-owned buffer and posts an
// MPI_Isend; the buffer returns to a free list only after the request has
// completed (tested opportunistically on every send, waited for in
// zbrt_step_end). zbrt_recv probes first so that a size mismatch is reported
// with peer and tag instead of MPI_ERR_TRUNCATE.
//
// Errors are fatal: "zb-run: rank R: <message>" on stderr, then MPI_Abort so
// that the other ranks do not wait forever. MPI errors (for example a peer
// that died) go through an error handler that does the same.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "../cuda/CudaBackend.h"

#include <cblas.h>
#include <mpi.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <memory>
#include <vector>

using namespace zbrt;
using namespace zbrt::detail;

namespace {

int32_t gRank = -1;
int32_t gWorldSize = 0;
bool gWeInitializedMPI = false;
int gTagUpperBound = INT_MAX;
double gCommTimeoutSeconds = 300;

/// Polls `ready` until it returns true; past the watchdog's timeout ends
/// the job with `describe()`. Spins for the first millisecond (latency),
/// then sleeps 50 us between polls (the ranks share the cores).
template <typename Ready, typename Describe>
void waitWatched(Ready ready, Describe describe) {
  if (ready())
    return;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t polls = 0;; ++polls) {
    if (ready())
      return;
    const double waited = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
    if (gCommTimeoutSeconds > 0 && waited > gCommTimeoutSeconds) {
      std::string what = describe();
      zbrt::detail::fatalf("waited %.0f s for %s: the peer is stopped, dead or "
                           "deadlocked (zb-run --comm-timeout %g)",
                           waited, what.c_str(), gCommTimeoutSeconds);
    }
    if (waited > 1e-3)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

bool mpiIsUp() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

/// A runtime-owned send buffer; `request` is MPI_REQUEST_NULL when free.
struct SendBuffer {
  std::unique_ptr<char[]> data;
  int64_t capacity = 0;
};

struct PendingSends {
  std::vector<SendBuffer> inFlight;    // parallel to `requests`
  std::vector<MPI_Request> requests;   // one per in-flight buffer
  std::vector<SendBuffer> freeBuffers; // completed, ready for reuse

  /// Moves completed sends to the free list.
  void reap(bool wait) {
    if (requests.empty())
      return;
    if (!wait) {
      // Release what has completed so far (MPI_Testsome sets completed
      // requests to MPI_REQUEST_NULL).
      std::vector<int> indices(requests.size());
      int outCount = 0;
      MPI_Testsome((int)requests.size(), requests.data(), &outCount,
                   indices.data(), MPI_STATUSES_IGNORE);
      if (outCount == MPI_UNDEFINED || outCount == 0)
        return;
      size_t kept = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i] == MPI_REQUEST_NULL) {
          freeBuffers.push_back(std::move(inFlight[i]));
          continue;
        }
        requests[kept] = requests[i];
        inFlight[kept] = std::move(inFlight[i]);
        ++kept;
      }
      requests.resize(kept);
      inFlight.resize(kept);
      return;
    }
    MPI_Waitall((int)requests.size(), requests.data(), MPI_STATUSES_IGNORE);
    for (SendBuffer &b : inFlight)
      freeBuffers.push_back(std::move(b));
    inFlight.clear();
    requests.clear();
  }

  /// A free buffer of at least `bytes` bytes (the smallest that fits).
  SendBuffer take(int64_t bytes) {
    size_t best = freeBuffers.size();
    for (size_t i = 0; i < freeBuffers.size(); ++i)
      if (freeBuffers[i].capacity >= bytes &&
          (best == freeBuffers.size() ||
           freeBuffers[i].capacity < freeBuffers[best].capacity))
        best = i;
    if (best == freeBuffers.size()) {
      SendBuffer b;
      b.capacity = bytes > 0 ? bytes : 1;
      b.data.reset(new char[b.capacity]);
      return b;
    }
    SendBuffer b = std::move(freeBuffers[best]);
    freeBuffers.erase(freeBuffers.begin() + best);
    return b;
  }
};

PendingSends &pendingSends() {
  static PendingSends sends;
  return sends;
}

void checkPeerAndTag(const char *what, int32_t peer, int32_t tag) {
  if (gWorldSize <= 0)
    fatalf("%s: the runtime is not initialised (zbrt_init not called)", what);
  if (peer < 0 || peer >= gWorldSize)
    fatalf("%s: peer rank %d out of range (world size %d)", what, peer,
           gWorldSize);
  if (tag < 0 || tag > gTagUpperBound)
    fatalf("%s: tag %d out of range [0, %d] (peer %d)", what, tag,
           gTagUpperBound, peer);
}

void mpiErrorHandler(MPI_Comm *, int *code, ...) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(*code, text, &len);
  fatalf("MPI error: %s (a peer rank may have failed)", text);
}

} // namespace

double zbrt::detail::commTimeoutSeconds() { return gCommTimeoutSeconds; }

void zbrt::detail::describeTag(int32_t tag, char *out, size_t cap) {
  if (tag < 0) {
    std::snprintf(out, cap, "tag %d", tag);
    return;
  }
  int32_t kind = tag % 2, stage = (tag / 2) % 1024, mb = tag / 2048;
  std::snprintf(out, cap, "tag %d (%s from stage %d, microbatch %d)", tag,
                kind == 0 ? "activation" : "gradient", stage, mb);
}

[[noreturn]] void zbrt::detail::fatalf(const char *format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  zbrt_fatal(message);
}

extern "C" void zbrt_fatal(const char *message) {
  if (gRank >= 0)
    std::fprintf(stderr, "zb-run: rank %d: %s\n", gRank, message);
  else
    std::fprintf(stderr, "zb-run: %s\n", message);
  std::fflush(stderr);
  std::fflush(stdout);
  if (mpiIsUp() && gWorldSize > 1)
    MPI_Abort(MPI_COMM_WORLD, 1);
  // Alone (or without MPI) there is nobody to wake up: exit quietly.
  std::_Exit(1);
}

extern "C" int32_t zbrt_rank(void) { return gRank; }
extern "C" int32_t zbrt_world_size(void) { return gWorldSize; }

extern "C" int32_t zbrt_init(int *argc, char ***argv, int32_t *worldSize) {
  if (!mpiIsUp()) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      zbrt_fatal("zbrt_init: MPI was already finalised");
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
      zbrt_fatal("zbrt_init: MPI_Init failed");
    gWeInitializedMPI = true;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gRank = rank;
  gWorldSize = size;

  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(mpiErrorHandler, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
  MPI_Errhandler_free(&handler);

  void *ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub)
    gTagUpperBound = *static_cast<int *>(ub);

  // One BLAS thread per rank: ranks already share the cores.
  openblas_set_num_threads(1);
  if (worldSize)
    *worldSize = size;
  return rank;
}

extern "C" void zbrt_step_end(void) {
  if (cuda::active())
    cuda::stepEnd();
  if (mpiIsUp())
    pendingSends().reap(/*wait=*/true);
}

extern "C" void zbrt_set_comm_timeout(double seconds) {
  gCommTimeoutSeconds = seconds > 0 ? seconds : 0;
}

extern "C" void zbrt_wait(void *mpiRequest, const char *what) {
  auto *request = static_cast<MPI_Request *>(mpiRequest);
  waitWatched(
      [&] {
        int flag = 0;
        // Our own sends progress meanwhile (a peer may need them first).
        pendingSends().reap(/*wait=*/false);
        MPI_Test(request, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      [&] { return std::string(what ? what : "an MPI request"); });
}

extern "C" void zbrt_finalize(void) {
  cuda::finalize();
  if (!mpiIsUp())
    return;
  pendingSends().reap(/*wait=*/true);
  pendingSends().freeBuffers.clear();
  if (gWeInitializedMPI)
    MPI_Finalize();
}

extern "C" void zbrt_send(int64_t buf, int64_t bytes, int32_t peer,
                          int32_t tag) {
  checkPeerAndTag("zbrt_send", peer, tag);
  if (bytes < 0 || bytes > INT_MAX)
    fatalf("zbrt_send to rank %d tag %d: unsupported size %lld bytes", peer,
           tag, (long long)bytes);
  TraceEvent event{EventKind::Send, gRank,        -1,  -1, peer, tag,
                   bytes,           traceNowUs(), -1.0};
  if (cuda::active()) {
    if (cuda::send(reinterpret_cast<const void *>(buf), bytes, peer, tag)) {
      event.endUs = traceNowUs();
      traceRecord(event);
      return;
    }
    // No NCCL channel: the host copies the (managed) buffer below.
    cuda::synchronize("a send over MPI", /*computeOnly=*/true);
  }
  PendingSends &sends = pendingSends();
  sends.reap(/*wait=*/false);
  SendBuffer b = sends.take(bytes);
  if (bytes > 0)
    std::memcpy(b.data.get(), reinterpret_cast<const void *>(buf), bytes);
  MPI_Request request;
  MPI_Isend(b.data.get(), (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
            &request);
  sends.inFlight.push_back(std::move(b));
  sends.requests.push_back(request);
  event.endUs = traceNowUs();
  traceRecord(event);
}

extern "C" void zbrt_recv(int64_t buf, int64_t bytes, int32_t peer,
                          int32_t tag) {
  checkPeerAndTag("zbrt_recv", peer, tag);
  if (bytes < 0 || bytes > INT_MAX)
    fatalf("zbrt_recv from rank %d tag %d: unsupported size %lld bytes", peer,
           tag, (long long)bytes);
  TraceEvent event{EventKind::Recv, gRank,        -1,  -1, peer, tag,
                   bytes,           traceNowUs(), -1.0};
  if (cuda::active()) {
    if (cuda::recv(reinterpret_cast<void *>(buf), bytes, peer, tag)) {
      event.endUs = traceNowUs();
      traceRecord(event);
      return;
    }
    // No NCCL channel: earlier kernels may still read the buffer.
    cuda::synchronize("a receive over MPI", /*computeOnly=*/true);
  }
  // Let our own sends progress while we wait (a peer may need them first).
  pendingSends().reap(/*wait=*/false);
  MPI_Status status;
  waitWatched(
      [&] {
        int flag = 0;
        MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &status);
        return flag != 0;
      },
      [&] {
        char what[128];
        describeTag(tag, what, sizeof(what));
        return std::string("the message with ") + what + " from rank " +
               std::to_string(peer);
      });
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (count != bytes) {
    char what[128];
    describeTag(tag, what, sizeof(what));
    fatalf("zbrt_recv from rank %d %s: expected %lld bytes, the message has "
           "%d bytes",
           peer, what, (long long)bytes, count);
  }
  MPI_Recv(reinterpret_cast<void *>(buf), count, MPI_BYTE, peer, tag,
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  event.endUs = traceNowUs();
  traceRecord(event);
}
