//===- NcclTransport.h - zb runtime: messages through NCCL ------*- C++ -*-===//
//
// Not installed. The CUDA backend's transport between ranks: per ring
// neighbour (ranks r +- 1 mod p) a two-rank NCCL communicator and stream
// per direction, so a communicator only ever carries one direction on one
// stream on each side, in program order: sends never wait for the host,
// and the schedule's message order (verified deadlock-free with buffered
// sends by zb-schedule) cannot deadlock on NCCL's unbuffered ones. NCCL is
// loaded with dlopen (libnccl.so.2, or ZBRT_NCCL; ZBRT_NCCL=none turns it
// off). See NcclTransport.cpp for the channel protocol.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_NCCLTRANSPORT_H
#define ZBRT_LIB_CUDA_NCCLTRANSPORT_H

#include "Device.h"
#include "Transport.h"

#include <memory>
#include <string>
#include <vector>

namespace zbrt {
namespace cuda {

/// The NCCL transport on `device` with its communicators (collective over
/// MPI_COMM_WORLD), or null with the reason in `why` when NCCL cannot be
/// loaded. No communicator with the world ranks in `excluded` (the peers on
/// this rank's device, which NCCL refuses: "Duplicate GPU detected").
std::unique_ptr<Transport>
createNcclTransport(Device &device, const std::vector<int32_t> &excluded,
                    std::string &why);

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_NCCLTRANSPORT_H
