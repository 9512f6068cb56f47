//===- Watched.cpp - zb-run's MPI calls under the watchdog ----------------===//
//
// See zb/Runner/Watched.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Watched.h"

#include "zbrt/zbrt.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <string>
#include <thread>

using namespace zb::runner;

namespace {
/// Tests `request` until it completes; past zbrt_comm_timeout() seconds the
/// job ends with the runtime's watchdog message. Not zbrt_wait: that is the
/// backend's wait, which on the CUDA backend also ends a CUDA graph's
/// capture segment; these calls are the runner's, outside the programs.
void waitWatched(MPI_Request *request, const char *what) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    double waited = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    double limit = ::zbrt_comm_timeout();
    if (limit > 0 && waited > limit)
      zbrt_fatal(llvm::formatv("waited {0} s for {1}: the peer is stopped, "
                               "dead or deadlocked (zb-run --comm-timeout {2})",
                               llvm::format("%.0f", waited), what,
                               llvm::format("%g", limit))
                     .str()
                     .c_str());
    if (waited > 1e-3)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
} // namespace

void watched::send(const void *buf, int count, MPI_Datatype type, int dest,
                   int tag, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Isend(buf, count, type, dest, tag, comm, &request);
  waitWatched(&request, what);
}

void watched::recv(void *buf, int count, MPI_Datatype type, int source,
                   int tag, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Irecv(buf, count, type, source, tag, comm, &request);
  waitWatched(&request, what);
}

void watched::allreduce(const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        const char *what) {
  MPI_Request request;
  MPI_Iallreduce(in, out, count, type, op, comm, &request);
  waitWatched(&request, what);
}

void watched::reduce(const void *in, void *out, int count, MPI_Datatype type,
                     MPI_Op op, int root, MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Ireduce(in, out, count, type, op, root, comm, &request);
  waitWatched(&request, what);
}

void watched::gather(const void *in, int inCount, MPI_Datatype inType,
                     void *out, int outCount, MPI_Datatype outType, int root,
                     MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Igather(in, inCount, inType, out, outCount, outType, root, comm,
              &request);
  waitWatched(&request, what);
}

void watched::bcast(void *buf, int count, MPI_Datatype type, int root,
                    MPI_Comm comm, const char *what) {
  MPI_Request request;
  MPI_Ibcast(buf, count, type, root, comm, &request);
  waitWatched(&request, what);
}

void watched::waitAll(std::vector<MPI_Request> &requests, const char *what) {
  for (MPI_Request &request : requests)
    waitWatched(&request, what);
  requests.clear();
}
