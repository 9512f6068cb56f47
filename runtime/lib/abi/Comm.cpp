//===- Comm.cpp - zb runtime: the ABI of messages, steps and the job ------===//
//
// zbrt_init / zbrt_finalize, the step's end, the watchdog, errors, and
// zbrt_send / zbrt_recv: arguments checked here, the message traced here,
// the work done by the active backend (Backend.h).
//
//===----------------------------------------------------------------------===//

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../FaultInjection.h"
#include "../Internal.h"
#include "../TraceLog.h"
#include "../cpu/HostMessages.h"
#include "BackendSelection.h"

#include <climits>

using namespace zbrt;
using detail::fatalf;

namespace {

void checkMessage(const char *what, const char *direction, int32_t peer,
                  int32_t tag, int64_t bytes) {
  if (detail::worldSize() <= 0)
    fatalf("%s: the runtime is not initialised (zbrt_init not called)", what);
  const int32_t size = detail::pipelineSize();
  if (peer < 0 || peer >= size)
    fatalf("%s: peer rank %d out of range (%s %d)", what, peer,
           size == detail::worldSize() ? "world size" : "pipeline of", size);
  if (tag < 0 || tag > detail::tagUpperBound())
    fatalf("%s: tag %d out of range [0, %d] (peer %d)", what, tag,
           detail::tagUpperBound(), peer);
  if (bytes < 0 || bytes > INT_MAX)
    fatalf("%s %s rank %d tag %d: unsupported size %lld bytes", what, direction,
           peer, tag, (long long)bytes);
}

/// Ends `event` now and records it with the backend's work on the message
/// (Backend::send/recv).
void recordMessage(TraceEvent &event, MessageWork work) {
  event.endUs = traceNowUs();
  detail::traceRecordMessage(event, work);
}

} // namespace

extern "C" void zbrt_fatal(const char *message) { detail::fatal(message); }

extern "C" int32_t zbrt_rank(void) { return detail::rank(); }
extern "C" int32_t zbrt_world_size(void) { return detail::worldSize(); }
extern "C" int32_t zbrt_set_pipeline(int32_t ranksPerPipeline) {
  return detail::setPipeline(ranksPerPipeline);
}


extern "C" int32_t zbrt_init(int *argc, char ***argv, int32_t *worldSize) {
  int32_t rank = detail::initProcess(argc, argv, worldSize);
  faults().limitAddressSpace(rank);
  initBackends();
  return rank;
}

extern "C" void zbrt_step_end(void) {
  for (const DeviceTime &t : backend().stepEnd())
    detail::traceSetDeviceTimes(t.index, t.beginUs, t.endUs);
}

extern "C" void zbrt_set_comm_timeout(double seconds) {
  detail::setCommTimeoutSeconds(seconds);
}

extern "C" void zbrt_wait_mpi(void *mpiRequest, const char *what) {
  cpu::hostMessages().wait(mpiRequest, what);
}

extern "C" double zbrt_comm_timeout(void) {
  return detail::commTimeoutSeconds();
}

extern "C" void zbrt_set_fatal_cleanup(void (*cleanup)(void)) {
  detail::setFatalCleanup(cleanup);
}

extern "C" void zbrt_wait(void *mpiRequest, const char *what) {
  backend().waitRequest(mpiRequest, what);
}

extern "C" void zbrt_finalize(void) {
  finalizeBackends();
  detail::finalizeProcess();
}

extern "C" void zbrt_send(int64_t buf, int64_t bytes, int32_t peer,
                          int32_t tag) {
  checkMessage("zbrt_send", "to", peer, tag, bytes);
  TraceEvent event{EventKind::Send, detail::pipelineRank(), -1, -1, peer, tag,
                   bytes, traceNowUs(), -1.0};
  MessageWork work = backend().send(reinterpret_cast<const void *>(buf), bytes,
                                    detail::toWorldRank(peer), tag);
  recordMessage(event, work);
}

extern "C" void zbrt_recv(int64_t buf, int64_t bytes, int32_t peer,
                          int32_t tag) {
  checkMessage("zbrt_recv", "from", peer, tag, bytes);
  TraceEvent event{EventKind::Recv, detail::pipelineRank(), -1, -1, peer, tag,
                   bytes, traceNowUs(), -1.0};
  MessageWork work = backend().recv(reinterpret_cast<void *>(buf), bytes,
                                    detail::toWorldRank(peer), tag);
  recordMessage(event, work);
}
