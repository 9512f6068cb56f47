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

/// The NCCL functions the transport calls, one row each: X(field of the
/// transport's Nccl table, exported symbol, result type, parameters), all
/// required. The table's fields and the rows createNcclTransport resolves
/// are both generated from this list (as the CUDA driver's, Driver.h), so
/// a function is named once; the rows keep this order (the order of
/// zb-run's driver_calls_by_name). nccl.h's types, without the header:
/// `NcclUniqueId` (128 opaque bytes, passed by value), `NcclComm` (a
/// communicator) and `Handle` (a CUDA stream); send and recv take (buffer,
/// count, ncclDataType_t, peer, communicator, stream); allReduce takes
/// (send buffer, receive buffer, count, ncclDataType_t, ncclRedOp_t,
/// communicator, stream) (the data-parallel group's, NcclAllReduce.h).
#define ZBRT_NCCL_FUNCTIONS(X)                                                 \
  X(getUniqueId, "ncclGetUniqueId", int, (NcclUniqueId *))                     \
  X(commInitRank, "ncclCommInitRank", int,                                     \
    (NcclComm *, int, NcclUniqueId, int))                                      \
  X(send, "ncclSend", int, (const void *, size_t, int, int, NcclComm, Handle)) \
  X(recv, "ncclRecv", int, (void *, size_t, int, int, NcclComm, Handle))       \
  X(commGetAsyncError, "ncclCommGetAsyncError", int, (NcclComm, int *))        \
  X(commAbort, "ncclCommAbort", int, (NcclComm))                               \
  X(commDestroy, "ncclCommDestroy", int, (NcclComm))                           \
  X(errorString, "ncclGetErrorString", const char *, (int))                    \
  X(allReduce, "ncclAllReduce", int,                                           \
    (const void *, void *, size_t, int, int, NcclComm, Handle))

//===-- NCCL (nccl.h names, no header) ------------------------------------===//

struct NcclUniqueId {
  char internal[128];
};
using NcclComm = void *;
/// The NCCL entry points (ZBRT_NCCL_FUNCTIONS).
struct Nccl {
#define ZBRT_NCCL_FIELD(field, symbol, result, params) result(*field) params;
  ZBRT_NCCL_FUNCTIONS(ZBRT_NCCL_FIELD)
#undef ZBRT_NCCL_FIELD
};
/// nccl.h's ncclInt8, ncclFloat32, ncclSum; ncclInProgress (a
/// non-blocking communicator's call still running: not an error).
constexpr int kNcclInt8 = 0, kNcclFloat32 = 7, kNcclSum = 0;
constexpr int kNcclInProgress = 7;

/// The NCCL library (libnccl.so.2, or ZBRT_NCCL), opened once per process:
/// its table, or null with the reason in `why` (ZBRT_NCCL=none, not found,
/// an entry point missing).
const Nccl *loadNccl(std::string &why);

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
