//===- FakeCudaInternal.h - the stand-in's shared state ---------*- C++ -*-===//
//
// Part of libzb_fake_cuda.so, not a header of the runtime: what the
// stand-in's driver (FakeCuda.cpp), cuBLAS (FakeBlas.cpp), NCCL
// (FakeNccl.cpp) and libzbrt's own kernels (FakeOptimizerKernels.cpp)
// share: the counters of the report, the pointer check, the streams with
// their deferred work, the process's rank and device.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKECUDAINTERNAL_H
#define ZB_UNITTESTS_RUNTIME_FAKECUDAINTERNAL_H

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace zbfake {

using CUresult = int;
constexpr CUresult kOk = 0, kInvalidValue = 1, kNotReady = 600,
                   kIllegalAddress = 700, kNotSupported = 801;

/// What ZB_FAKE_CUDA_REPORT writes at exit (FakeCuda.cpp).
struct Stats {
  long gemms = 0, sends = 0, recvs = 0, sendBytes = 0, recvBytes = 0;
  long allocations = 0, managedAllocations = 0, memcpys = 0, comms = 0;
  long hostAllocations = 0; // cuMemHostAlloc
  long badPointers = 0, streams = 0, events = 0, waits = 0, launches = 0;
  long batchedGemms = 0;
  /// Receives that ran later than their ncclRecv call; stream waits that
  /// made a stream's deferred work run; deferred work dropped (an abort).
  long deferredRecvs = 0, flushingWaits = 0, droppedOps = 0;
  /// ncclAllReduce calls, their bytes, and those completed.
  long allReduces = 0, allReduceBytes = 0, deferredAllReduces = 0;
  /// ncclAllReduce calls whose stream was not ordered after the last write
  /// of their input on another stream (their contribution NaN).
  long unorderedAllReduces = 0;
  /// world rank -> NCCL sends (never freed: the report is written at exit,
  /// after static destructors)
  std::map<int, long> &sendsTo = *new std::map<int, long>;
  int lastDevice = -1;
};
extern Stats gStats;

/// The world rank (cached while MPI runs; 0 before and after).
int worldRank();
/// An environment variable's integer value, or `dflt`.
long envLong(const char *name, long dflt);
/// Whether injected faults apply to this rank (ZB_FAKE_CUDA_FAIL_RANK).
bool faultsHere();
/// True when [p, p + bytes) lies inside a live allocation; else counts a
/// bad pointer and prints `what`.
bool isDevice(const void *p, size_t bytes, const char *what);
/// The device whose primary context is current (cuCtxSetCurrent), or -1.
extern int gCurrentDevice;

struct Comm; // FakeNccl.cpp

/// Work enqueued on a stream behind a receive. `run(block)` does it and
/// returns true, or (block false) returns false when it would have to wait.
struct DeferredOp {
  long ticket;
  Comm *comm; // the communicator a receive or send uses, else null
  std::function<bool(bool block)> run;
};

struct Stream {
  int id;
  std::deque<DeferredOp> pending;
  long tickets = 0;
  /// The writes this stream's next work is ordered after: per stream, the
  /// number of its last such write (its own, and those an event it waited
  /// for carried; see noteWrite).
  std::map<const Stream *, long> after;
  /// An ncclAllReduce was enqueued on it (ZB_FAKE_CUDA_DROP_WAITS=allreduce).
  bool carriesAllReduce = false;
};

//===-- Stream order of writes (FakeCuda.cpp) ----------------------------===//
//
// The stand-in runs compute work at once, so a missing event between the
// stream that wrote a buffer and an NCCL stream that reads it would go
// unseen in the values. It keeps the order instead: every write enqueued on
// a stream (a GEMM's C, a memset, an asynchronous copy's destination; in a
// replayed graph, the launch's stream) is numbered and remembered per
// allocation; an event record carries its stream's `after`, a stream that
// waits for it takes that over, and a host synchronisation of a stream
// orders everything enqueued later after it.

/// A write into the allocation holding `p`, enqueued on `stream` (null: the
/// stream of the graph being launched, if any; else host-synchronous, not
/// remembered).
void noteWrite(void *stream, const void *p);
/// Whether work enqueued on `stream` now is ordered after the last write
/// into the allocation holding `p`; else false and *writer is the id of the
/// stream that wrote it.
bool orderedAfterLastWrite(void *stream, const void *p, int *writer);
/// The stream whose graph cuGraphLaunch is running (FakeGraph.cpp), or null.
extern Stream *gLaunchingGraphOn;
/// Live streams (never freed: streams may be destroyed at exit).
extern std::set<Stream *> &gStreams;
/// Runs `s`'s deferred work in order up to `ticket`; false when (block
/// false) a receive's message has not arrived.
bool progress(Stream *s, long ticket, bool block);
/// Enqueues `run` behind `s`'s deferred work; returns its ticket.
long defer(Stream *s, Comm *comm, std::function<bool(bool block)> run);
/// Runs `work` now when `stream` has nothing deferred, else behind it.
void enqueueOrRun(void *stream, Comm *comm, std::function<void()> work);
/// The host's steady clock in milliseconds.
double nowMs();

//===-- libzbrt's optimizer kernels (FakeOptimizerKernels.cpp) -----------===//

/// Whether the fatbin `image` at `blob` is libzbrt's optimizer module; then
/// *module is set.
bool loadOptimizerModule(const std::string &image, const void *blob,
                         void **module);
/// cuModuleGetFunction in the optimizer module: false when `module` is
/// another one; else *result is the driver's result.
bool optimizerFunction(void *module, const char *name, void **function,
                       CUresult *result);
bool isOptimizerKernel(const void *function);
/// Runs an optimizer kernel on the host (its arguments checked), or
/// CUDA_ERROR_NOT_SUPPORTED for another function.
CUresult launchOptimizerKernel(const void *function, unsigned gridX,
                               unsigned blockX, void **params);

} // namespace zbfake

#endif // ZB_UNITTESTS_RUNTIME_FAKECUDAINTERNAL_H
