//===- Watched.h - zb-run's MPI calls under the watchdog --------*- C++ -*-===//
//
// The runner's own MPI calls between and around steps (gathers of step
// times and traces, the gradient norm's all-reduce, saving parameters) as
// the non-blocking calls of MPI-3 followed by zbrt_wait_mpi, so that the
// communication watchdog (zb-run --comm-timeout) covers them as it covers
// the rank programs' messages: a peer that stopped or died ends the job
// after the timeout, naming what was waited for, instead of hanging it in a
// blocking collective (issue 40). Each function is the MPI call of its name
// with `what`, the thing waited for in the watchdog's message
// ("waited 30 s for <what>: the peer is stopped, dead or deadlocked").
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_WATCHED_H
#define ZB_RUNNER_WATCHED_H

#include <mpi.h>

#include <vector>

namespace zb {
namespace runner {
namespace watched {

void send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
          MPI_Comm comm, const char *what);
void recv(void *buf, int count, MPI_Datatype type, int source, int tag,
          MPI_Comm comm, const char *what);
void allreduce(const void *in, void *out, int count, MPI_Datatype type,
               MPI_Op op, MPI_Comm comm, const char *what);
void reduce(const void *in, void *out, int count, MPI_Datatype type,
            MPI_Op op, int root, MPI_Comm comm, const char *what);
void gather(const void *in, int inCount, MPI_Datatype inType, void *out,
            int outCount, MPI_Datatype outType, int root, MPI_Comm comm,
            const char *what);
void bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
           const char *what);
/// Every request of `requests` (then cleared).
void waitAll(std::vector<MPI_Request> &requests, const char *what);

} // namespace watched
} // namespace runner
} // namespace zb

#endif // ZB_RUNNER_WATCHED_H
