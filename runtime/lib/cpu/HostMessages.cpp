//===- HostMessages.cpp - zb runtime: messages over MPI on the host -------===//

#include "HostMessages.h"

#include "../Internal.h"

#include <mpi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace zbrt;
using namespace zbrt::cpu;
using detail::fatalf;

namespace {

/// A runtime-owned send buffer.
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

} // namespace

HostMessages &zbrt::cpu::hostMessages() {
  static HostMessages messages;
  return messages;
}

MessageWork HostMessages::send(const void *buf, int64_t bytes, int32_t peer,
                               int32_t tag) {
  // All of a send is this rank's work (a copy and MPI_Isend).
  MessageWork work = std::chrono::steady_clock::now();
  PendingSends &sends = pendingSends();
  sends.reap(/*wait=*/false);
  SendBuffer b = sends.take(bytes);
  if (bytes > 0)
    std::memcpy(b.data.get(), buf, bytes);
  MPI_Request request;
  MPI_Isend(b.data.get(), (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
            &request);
  sends.inFlight.push_back(std::move(b));
  sends.requests.push_back(request);
  return work;
}

MessageWork HostMessages::recv(void *buf, int64_t bytes, int32_t peer,
                               int32_t tag) {
  // Let our own sends progress while we wait (a peer may need them first).
  pendingSends().reap(/*wait=*/false);
  MPI_Status status;
  detail::waitWatched(
      [&] {
        int flag = 0;
        MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &status);
        return flag != 0;
      },
      [&] {
        char what[128];
        detail::describeTag(tag, what, sizeof(what));
        return std::string("the message with ") + what + " from rank " +
               std::to_string(peer);
      });
  // The message is there: from now on the receive is this rank's work.
  MessageWork work = std::chrono::steady_clock::now();
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (count != bytes) {
    char what[128];
    detail::describeTag(tag, what, sizeof(what));
    fatalf("zbrt_recv from rank %d %s: expected %lld bytes, the message has "
           "%d bytes",
           peer, what, (long long)bytes, count);
  }
  MPI_Recv(buf, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return work;
}

void HostMessages::wait(void *mpiRequest, const char *what) {
  auto *request = static_cast<MPI_Request *>(mpiRequest);
  detail::waitWatched(
      [&] {
        int flag = 0;
        // Our own sends progress meanwhile (a peer may need them first).
        pendingSends().reap(/*wait=*/false);
        MPI_Test(request, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      [&] { return std::string(what ? what : "an MPI request"); });
}

void HostMessages::completeSends() {
  if (detail::mpiIsUp())
    pendingSends().reap(/*wait=*/true);
}

void HostMessages::finalize() {
  if (!detail::mpiIsUp())
    return;
  pendingSends().reap(/*wait=*/true);
  pendingSends().freeBuffers.clear();
}
