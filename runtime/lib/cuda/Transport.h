//===- Transport.h - zb runtime: device-to-device messages ------*- C++ -*-===//
//
// Not installed. How the CUDA backend moves a message between the devices
// of two ranks without the host. A transport orders every message against
// the compute stream with events: a send may read its buffer only after the
// work enqueued before it (the caller may reuse the buffer at once: the
// transport copies it first), and the compute stream waits for a receive
// before the work enqueued after it. The host never waits for a message:
// the backend waits for the streams at the end of a step and where MLIR's
// host code synchronises, polling the transport's errors under the
// watchdog.
//
// Implementations: NCCL between ranks on different devices
// (NcclTransport.h), MPI through pinned host staging between the ranks of
// one device (HostStagedTransport.h). A peer without a channel makes
// send/recv return false: the backend then sends over MPI on the host.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_TRANSPORT_H
#define ZBRT_LIB_CUDA_TRANSPORT_H

#include "../Backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zbrt {
namespace cuda {

class Transport {
public:
  virtual ~Transport();
  /// The messages the channel from rank `from` to rank `to` carries in
  /// every step, in order (Backend::setChannelOrder).
  virtual void setChannelOrder(int32_t from, int32_t to,
                               const std::vector<ChannelMessage> &order) = 0;
  /// zbrt_send / zbrt_recv on the device; false when this transport does
  /// not carry messages to or from `peer`.
  virtual bool send(const void *buf, int64_t bytes, int32_t peer,
                    int32_t tag) = 0;
  virtual bool recv(void *buf, int64_t bytes, int32_t peer, int32_t tag) = 0;
  /// Hands every send over to the network (waiting, under the watchdog,
  /// for what the host must do first) before the host blocks outside the
  /// backend (zbrt_wait), where a transport cannot progress.
  virtual void postSends() {}
  /// Polled while the host waits: an asynchronous error (a peer's
  /// communicator aborted, a network failure) ends the job after abort().
  virtual void pollErrors() = 0;
  /// Whether the transport's own streams have finished their work.
  virtual bool idle() = 0;
  /// For the watchdog's message: the oldest receive that has not arrived
  /// ("the NCCL receive of the message with tag 5 (...) from rank 1"), or
  /// empty.
  virtual std::string pendingReceive() = 0;
  /// The host has waited for the compute stream, which waits for every
  /// receive posted so far: they have arrived.
  virtual void receivesArrived() = 0;
  /// The end of a step, after the host waited for every stream.
  virtual void stepEnd() = 0;
  /// Unblocks every operation in flight before the job ends on an error.
  virtual void abort() = 0;
  /// Releases the transport's resources (every stream is idle).
  virtual void finalize() = 0;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_TRANSPORT_H
