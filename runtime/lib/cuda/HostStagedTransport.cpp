//===- HostStagedTransport.cpp - zb runtime: MPI via pinned staging -------===//
//
// A send: the buffer is copied into a device staging block on the compute
// stream (after the kernels that write it, before those that may reuse it:
// the caller may reuse its buffer at once), then the copy stream waits for
// the compute stream with an event and copies the staging block into a
// pinned host block, overlapping the kernels that follow, and records an
// event; the host posts MPI_Isend from the pinned block once that event has
// completed, at the next poll (a send or receive of this transport, the
// backend's waits), so the host never waits for the copies. The pinned
// block is free again when the MPI request completes.
//
// Sends are posted in the order of zbrt_send, never a later one before an
// earlier one: one stage boundary sends all its tensors with one tag
// (zbrt_tag(kind, stage, microbatch)), and the receiver tells them apart
// only by MPI's non-overtaking rule, which holds in posting order. The
// copies complete in order on the copy stream, but the host polls their
// events one after the other: an earlier copy that was not done when its
// event was queried may be done with a later one whose event is queried
// next (a GPU's copies end while the host polls), and posting that later
// one first delivers the tensors of a boundary swapped ("expected 32768
// bytes, the message has 98304 bytes", or worse, same-size tensors
// swapped silently).
//
// A receive: MPI_Irecv into a pinned block, waited for under the watchdog
// while this rank's own sends progress (the host enqueues the kernels that
// read the message right after zbrt_recv returns, so the message must be on
// the host first; a GPU could wait on the device instead with stream memory
// operations, cuStreamWaitValue32), then copied to the device on the
// compute stream, which orders it after the kernels that still read the
// buffer and before those that read the message. The block is free again
// when that copy's event has completed.
//
// Pinned blocks (cuMemHostAlloc) are pooled like the device staging blocks:
// a steady-state step allocates nothing.
//
//===----------------------------------------------------------------------===//

#include "HostStagedTransport.h"

#include "../Internal.h"

#include <mpi.h>

#include <algorithm>
#include <set>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

namespace {

/// A pinned host block.
struct Pinned {
  void *ptr = nullptr;
  size_t capacity = 0;
};

/// A send: its block, the event of the copy into it, then its MPI request.
struct PendingSend {
  Pinned block;
  Handle copied;
  MPI_Request request;
  bool posted;
  int64_t bytes;
  int32_t peer, tag;
};

/// A received block, busy until the copy to the device has completed.
struct PendingCopy {
  Pinned block;
  Handle copied;
};

class HostStagedTransport final : public Transport {
public:
  HostStagedTransport(Device &device, const std::vector<int32_t> &peers);

  void setChannelOrder(int32_t, int32_t,
                       const std::vector<ChannelMessage> &) override {}
  bool send(const void *buf, int64_t bytes, int32_t peer, int32_t tag) override;
  bool recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) override;
  void postSends() override;
  void pollErrors() override { progress(); }
  bool idle() override;
  std::string pendingReceive() override { return ""; }
  void receivesArrived() override { progress(); }
  void stepEnd() override;
  void abort() override;
  void finalize() override;

private:
  /// Posts the sends whose copies have completed; frees finished blocks.
  void progress();
  Pinned takeBlock(size_t bytes);
  void freeBlock(Pinned b) { freeBlocks.push_back(b); }

  Device &device;
  std::set<int32_t> peers;
  Handle copyStream = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<PendingSend> sends;
  std::vector<PendingCopy> copies;
  std::vector<Pinned> freeBlocks, allBlocks;
};

HostStagedTransport::HostStagedTransport(Device &device,
                                         const std::vector<int32_t> &peerList)
    : device(device), peers(peerList.begin(), peerList.end()) {
  // Every rank dups (collective); a communicator of its own keeps these
  // messages apart from the host's MPI messages with the same tags.
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (peers.empty())
    return;
  check(driver().cuStreamCreate(&copyStream, kStreamNonBlocking),
        "cuStreamCreate");
  for (int32_t p : peers)
    if (p < 64)
      device.stats.hostStagedPeers |= uint64_t(1) << p;
}

Pinned HostStagedTransport::takeBlock(size_t bytes) {
  progress();
  auto best = freeBlocks.end();
  for (auto it = freeBlocks.begin(); it != freeBlocks.end(); ++it)
    if (it->capacity >= bytes &&
        (best == freeBlocks.end() || it->capacity < best->capacity))
      best = it;
  if (best != freeBlocks.end()) {
    Pinned b = *best;
    freeBlocks.erase(best);
    return b;
  }
  Pinned b;
  b.capacity = bytes ? (bytes + 255) / 256 * 256 : 256;
  check(driver().cuMemHostAlloc(&b.ptr, b.capacity, kMemHostAllocPortable),
        "cuMemHostAlloc", b.capacity);
  allBlocks.push_back(b);
  ++device.stats.stagingAllocations;
  return b;
}

void HostStagedTransport::progress() {
  size_t kept = 0;
  // Whether an earlier send's copy is still running: the later sends wait
  // for it (posting order is message order, the file comment).
  bool earlierUnposted = false;
  for (PendingSend &s : sends) {
    if (!s.posted && !earlierUnposted) {
      if (Device::eventDone(s.copied)) {
        device.release(s.copied);
        s.copied = nullptr;
        MPI_Isend(s.block.ptr, (int)s.bytes, MPI_BYTE, s.peer, s.tag, comm,
                  &s.request);
        s.posted = true;
      } else {
        earlierUnposted = true;
      }
    }
    int done = 0;
    if (s.posted)
      MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    if (done) {
      freeBlock(s.block);
      continue;
    }
    sends[kept++] = s;
  }
  sends.resize(kept);
  kept = 0;
  for (PendingCopy &c : copies) {
    if (Device::eventDone(c.copied)) {
      device.release(c.copied);
      freeBlock(c.block);
      continue;
    }
    copies[kept++] = c;
  }
  copies.resize(kept);
}

bool HostStagedTransport::send(const void *buf, int64_t bytes, int32_t peer,
                               int32_t tag) {
  if (!peers.count(peer))
    return false;
  Pinned block = takeBlock((size_t)bytes);
  Staging staged = device.takeStaging((size_t)bytes);
  if (bytes > 0)
    check(driver().cuMemcpyAsync(staged.ptr, reinterpret_cast<CUdeviceptr>(buf),
                                 (size_t)bytes, device.compute),
          "cuMemcpyAsync");
  device.streamWaits(copyStream, device.compute);
  if (bytes > 0)
    check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(block.ptr),
                                 staged.ptr, (size_t)bytes, copyStream),
          "cuMemcpyAsync");
  staged.done = device.recordOn(copyStream);
  device.inFlight(staged);
  sends.push_back({block, device.recordOn(copyStream), MPI_REQUEST_NULL, false,
                   bytes, peer, tag});
  ++device.stats.hostStagedSends;
  progress();
  return true;
}

bool HostStagedTransport::recv(void *buf, int64_t bytes, int32_t peer,
                               int32_t tag) {
  if (!peers.count(peer))
    return false;
  MPI_Status status;
  detail::waitWatched(
      [&] {
        progress(); // a peer may need our sends first
        int there = 0;
        MPI_Iprobe(peer, tag, comm, &there, &status);
        return there != 0;
      },
      [&] {
        char what[128];
        detail::describeTag(tag, what, sizeof what);
        return std::string("the host-staged message with ") + what +
               " from rank " + std::to_string(peer);
      });
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (count != bytes) {
    char what[128];
    detail::describeTag(tag, what, sizeof what);
    fatalf("zbrt_recv from rank %d %s: expected %lld bytes, the message has "
           "%d bytes",
           peer, what, (long long)bytes, count);
  }
  Pinned block = takeBlock((size_t)bytes);
  MPI_Recv(block.ptr, count, MPI_BYTE, peer, tag, comm, MPI_STATUS_IGNORE);
  if (bytes > 0)
    check(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(buf),
                                 reinterpret_cast<CUdeviceptr>(block.ptr),
                                 (size_t)bytes, device.compute),
          "cuMemcpyAsync");
  copies.push_back({block, device.recordOn(device.compute)});
  ++device.stats.hostStagedRecvs;
  return true;
}

void HostStagedTransport::postSends() {
  detail::waitWatched(
      [&] {
        progress();
        return std::all_of(sends.begin(), sends.end(),
                           [](const PendingSend &s) { return s.posted; });
      },
      [] { return std::string("the copies of the host-staged sends"); });
}

bool HostStagedTransport::idle() {
  progress();
  for (const PendingSend &s : sends)
    if (!s.posted)
      return false;
  if (!copyStream)
    return true;
  CUresult r = driver().cuStreamQuery(copyStream);
  if (r == kNotReady)
    return false;
  check(r, "cuStreamQuery");
  return true;
}

void HostStagedTransport::stepEnd() {
  // Every send of the step is posted (idle() before this); MPI completes
  // them in the background, blocks return to the pool as they do.
  progress();
}

void HostStagedTransport::abort() {
  for (PendingSend &s : sends)
    if (s.posted)
      MPI_Cancel(&s.request);
  sends.clear();
}

void HostStagedTransport::finalize() {
  detail::waitWatched(
      [&] {
        progress();
        return sends.empty() && copies.empty();
      },
      [] { return std::string("the host-staged sends of the last step"); });
  for (Pinned &b : allBlocks)
    check(driver().cuMemFreeHost(b.ptr), "cuMemFreeHost");
  allBlocks.clear();
  freeBlocks.clear();
  if (copyStream)
    check(driver().cuStreamDestroy(copyStream), "cuStreamDestroy");
  copyStream = nullptr;
  if (comm != MPI_COMM_NULL)
    MPI_Comm_free(&comm);
}

} // namespace

std::unique_ptr<Transport>
zbrt::cuda::createHostStagedTransport(Device &device,
                                      const std::vector<int32_t> &peers) {
  if (detail::worldSize() < 2)
    return nullptr;
  return std::make_unique<HostStagedTransport>(device, peers);
}
