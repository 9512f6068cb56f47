//===- Internal.h - zb runtime: errors, process state, watchdog -*- C++ -*-===//
//
// Not installed. The bottom layer of libzbrt, used by the ABI (abi/), the
// trace and every backend (cpu/, cuda/); it calls none of them. Process.cpp
// holds the process state (MPI, rank, world size, the communication
// watchdog's limit) and the fatal-error path; Trace.cpp holds
// currentAction.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_INTERNAL_H
#define ZBRT_LIB_INTERNAL_H

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace zbrt {
namespace detail {

/// Prints "zb-run: rank R: <message>" (or "zb-run: <message>" before
/// zbrt_init), then aborts the job (MPI_Abort when MPI is up with several
/// ranks, exit(1) otherwise). What zbrt_fatal does.
[[noreturn]] void fatal(const char *message);
/// What fatal() runs once before it ends the process (zbrt_set_fatal_cleanup).
void setFatalCleanup(void (*cleanup)(void));
/// printf-style fatal.
[[noreturn]] void fatalf(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// Which memory an allocation that failed was for (fatalOutOfMemory).
enum class MemoryKind { Host, Device, Managed };

/// Ends the job on an allocation that failed, with one line naming the
/// memory, the request (`bytes`, 0 when unknown), `context` (what this rank
/// holds, the device's free memory; may be null) and, for host memory, the
/// address-space limit (`ulimit -v`) and how much of it is mapped, then what
/// to change. For example: "out of host memory: the memory pool asked for
/// 1.0 GiB (1073741888 bytes); the pool holds 12.0 MiB; the address-space
/// limit (ulimit -v) is 300.0 MiB, 256.4 MiB of it mapped: raise the limit,
/// or ...". Issue 40: every way of running out of memory ends this way.
[[noreturn]] void fatalOutOfMemory(MemoryKind kind, const char *what,
                                   uint64_t bytes, const char *context);
/// Bytes of address space this process has mapped (/proc/self/statm's
/// first field, in pages): what RLIMIT_AS counts; 0 when unknown.
uint64_t mappedBytes();
/// "1.5 GiB": `bytes` in B/KiB/MiB/GiB/TiB with one decimal.
std::string formatBytes(uint64_t bytes);
/// Makes the process's own failed allocations fatal errors of the job
/// (fatalOutOfMemory) rather than aborts: C++'s operator new (a
/// std::new_handler) and an uncaught exception such as a thread that could
/// not be started (a std::terminate handler that names it). initProcess
/// calls it.
void installOutOfMemoryHandlers();

/// MPI_Init unless MPI is up already; records rank, world size and the tag
/// bound and installs the fatal MPI error handler. Returns the rank.
int32_t initProcess(int *argc, char ***argv, int32_t *worldSize);
/// MPI_Finalize when initProcess initialised MPI.
void finalizeProcess();
/// MPI is initialised and not finalised.
bool mpiIsUp();
/// This process's rank and the number of ranks; -1 / 0 before initProcess.
int32_t rank();
int32_t worldSize();
/// The pipeline of this rank in a data-parallel job (zbrt_set_pipeline):
/// world ranks [pipelineBase(), pipelineBase() + pipelineSize()), in which
/// this rank is number pipelineRank(). Before zbrt_set_pipeline (and in a
/// job of one pipeline) the whole world: base 0, size worldSize(). A rank
/// program's peers are pipeline ranks; toWorldRank() maps one to the world.
int32_t pipelineBase();
int32_t pipelineSize();
int32_t pipelineRank();
inline int32_t toWorldRank(int32_t pipelinePeer) {
  return pipelineBase() + pipelinePeer;
}
/// Splits the world into pipelines of `size` consecutive ranks (collective;
/// fatal when size does not divide the world size). Returns pipelineRank().
int32_t setPipeline(int32_t size);
/// The pipeline's communicator as an MPI_Comm (MPI_COMM_WORLD before
/// setPipeline), for the trace's gather.
void *pipelineCommunicator();
/// The largest message tag MPI accepts (MPI_TAG_UB).
int32_t tagUpperBound();
/// This rank's index among the ranks of its node (0 without MPI).
int localRank();

/// Describes a message tag built by zbrt_tag(): "tag 5 (gradient from
/// stage 2, microbatch 0)".
void describeTag(int32_t tag, char *out, unsigned long cap);
/// The communication watchdog's limit in seconds (0: wait forever).
double commTimeoutSeconds();
void setCommTimeoutSeconds(double seconds);

/// Names the innermost scheduled action in progress on this rank ("in F of
/// stage 2, microbatch 3") or "outside a pass", for error messages
/// (Trace.cpp).
void currentAction(char *out, unsigned long cap);

/// Polls `ready` until it returns true; past the watchdog's limit ends the
/// job with `describe()`. Spins for the first millisecond (latency), then
/// sleeps 50 us between polls (the ranks share the cores).
template <typename Ready, typename Describe>
void waitWatched(Ready ready, Describe describe) {
  if (ready())
    return;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    if (ready())
      return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const double limit = commTimeoutSeconds();
    if (limit > 0 && waited > limit) {
      std::string what = describe();
      fatalf("waited %.0f s for %s: the peer is stopped, dead or "
             "deadlocked (zb-run --comm-timeout %g)",
             waited, what.c_str(), limit);
    }
    if (waited > 1e-3)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_INTERNAL_H
