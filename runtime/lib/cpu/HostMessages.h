//===- HostMessages.h - zb runtime: MPI messages on the host ----*- C++ -*-===//
//
// Not installed. Point-to-point messages between ranks through MPI, from
// host memory: the CPU backend's transport, and the CUDA backend's for
// peers without a device channel (after a synchronisation; its memory is
// managed). A send copies the message into a runtime-owned buffer and
// posts an MPI_Isend; the buffer returns to a free list only after the
// request has completed (tested opportunistically on every send, waited for
// at the end of the step). A receive probes first, under the watchdog, so
// that a size mismatch is reported with peer and tag instead of
// MPI_ERR_TRUNCATE.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CPU_HOSTMESSAGES_H
#define ZBRT_LIB_CPU_HOSTMESSAGES_H

#include "../Backend.h"

#include <cstdint>

namespace zbrt {
namespace cpu {

/// This process's MPI messages (one per process).
class HostMessages {
public:
  /// Both return when this rank's work on the message began (Backend.h:
  /// the whole send; a receive once the message was there).
  MessageWork send(const void *buf, int64_t bytes, int32_t peer, int32_t tag);
  MessageWork recv(void *buf, int64_t bytes, int32_t peer, int32_t tag);
  /// Waits for `mpiRequest` (an MPI_Request *) under the watchdog while
  /// the pending sends progress (a peer may need them first).
  void wait(void *mpiRequest, const char *what);
  /// Completes every pending send (the end of a step).
  void completeSends();
  /// Completes every pending send and frees the buffers.
  void finalize();
};

HostMessages &hostMessages();

} // namespace cpu
} // namespace zbrt

#endif // ZBRT_LIB_CPU_HOSTMESSAGES_H
