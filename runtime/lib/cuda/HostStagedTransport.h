//===- HostStagedTransport.h - zb runtime: same-device messages -*- C++ -*-===//
//
// Not installed. The CUDA backend's transport between ranks that share a
// device, where NCCL refuses to run ("Duplicate GPU detected": two ranks of
// one communicator on one device): MPI through pinned host staging blocks.
// A send copies the buffer into a device staging block on the compute stream
// and from there to a pinned block on a copy stream that waits for the
// compute stream, and the block goes out with MPI_Isend once the copy's
// event has completed (the host polls: send, receive, the backend's waits);
// a receive takes the message into a pinned block over MPI and copies it to
// the device on the compute stream. Messages match by tag (MPI), on a
// communicator of their own, so no channel order is needed; the messages
// of one tag (the tensors of one stage boundary) match in posting order,
// so sends are posted in the order of zbrt_send. CUDA IPC
// (cuIpcGetMemHandle/cuIpcOpenMemHandle) would save the host copies on a
// real GPU: future work.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_HOSTSTAGEDTRANSPORT_H
#define ZBRT_LIB_CUDA_HOSTSTAGEDTRANSPORT_H

#include "Device.h"
#include "Transport.h"

#include <memory>
#include <vector>

namespace zbrt {
namespace cuda {

/// The host-staged transport on `device` for the world ranks `peers` (the
/// ranks on this rank's device; collective over MPI_COMM_WORLD: every rank
/// creates it, with or without peers), or null on one rank.
std::unique_ptr<Transport>
createHostStagedTransport(Device &device, const std::vector<int32_t> &peers);

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_HOSTSTAGEDTRANSPORT_H
