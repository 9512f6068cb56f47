//===- Watched.cpp - zb-run's MPI calls under the watchdog ----------------===//
//
// See zb/Runner/Watched.h. The waits are zbrt_wait_mpi's (the runtime's
// watchdog), not zbrt_wait's, which on the CUDA backend also ends a CUDA
// graph's capture segment.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Watched.h"

#include "zbrt/zbrt.h"

using namespace zb::runner;

void watched::send(const void *buf, int count, MPI_Datatype type, int dest,
                   int tag, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Isend(buf, count, type, dest, tag, comm, &request);
  zbrt_wait_mpi(&request, what);
}

void watched::recv(void *buf, int count, MPI_Datatype type, int source,
                   int tag, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Irecv(buf, count, type, source, tag, comm, &request);
  zbrt_wait_mpi(&request, what);
}

void watched::allreduce(const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        const char *what) {
  MPI_Request request;
  MPI_Iallreduce(in, out, count, type, op, comm, &request);
  zbrt_wait_mpi(&request, what);
}

void watched::reduce(const void *in, void *out, int count, MPI_Datatype type,
                     MPI_Op op, int root, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Ireduce(in, out, count, type, op, root, comm, &request);
  zbrt_wait_mpi(&request, what);
}

void watched::gather(const void *in, int inCount, MPI_Datatype inType,
                     void *out, int outCount, MPI_Datatype outType, int root,
                     MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Igather(in, inCount, inType, out, outCount, outType, root, comm,
              &request);
  zbrt_wait_mpi(&request, what);
}

void watched::bcast(void *buf, int count, MPI_Datatype type, int root,
                    MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Ibcast(buf, count, type, root, comm, &request);
  zbrt_wait_mpi(&request, what);
}

void watched::waitAll(std::vector<MPI_Request> &requests, const char *what) {
  for (MPI_Request &request : requests)
    zbrt_wait_mpi(&request, what);
  requests.clear();
}
