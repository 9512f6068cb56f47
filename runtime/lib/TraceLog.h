//===- TraceLog.h - zb runtime: the current step's trace --------*- C++ -*-===//
//
// Not installed. The in-memory trace of the current step (Trace.cpp), as
// the ABI (abi/Trace.cpp, abi/Comm.cpp) fills it. The trace calls no
// backend, and no backend calls it: a backend that measures actions on a
// device returns their times from Backend::stepEnd, and one that moves a
// message returns when its work on it began (Backend::send/recv); the ABI
// stores them here.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_TRACELOG_H
#define ZBRT_LIB_TRACELOG_H

#include "zbrt/Trace.h"

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace zbrt {
namespace detail {

/// The index of an action that the trace did not record (the step's bound
/// on events was reached).
constexpr size_t kNoTraceEvent = ~size_t(0);

/// Clears the trace and sets its time origin to now.
void traceReset();
/// Opens an F/B/W action (kind 0-2, checked by the caller) and returns the
/// index of its event, or kNoTraceEvent.
size_t traceActionBegin(int32_t kind, int32_t stage, int32_t microbatch);
/// Closes the innermost open action of that kind, stage and microbatch and
/// returns its index; kNoTraceEvent when its begin was dropped; ends the job
/// when it was not begun.
size_t traceActionEnd(int32_t kind, int32_t stage, int32_t microbatch);
/// Replaces the host times of event `index` (microseconds since the step's
/// origin; from a backend's device timeline).
void traceSetDeviceTimes(size_t index, double beginUs, double endUs);
/// `time` on the trace's clock (microseconds since the step's origin): for
/// a message's TraceEvent::workFromUs, when the backend's own work on it
/// began (Backend::send/recv's MessageWork; abi/Comm.cpp).
double traceUsAt(std::chrono::steady_clock::time_point time);
/// Records a send/recv event with the backend's `work` on it (none: the
/// default time point) as its workFromUs when it lies within the event.
void traceRecordMessage(const TraceEvent &event,
                        std::chrono::steady_clock::time_point work);

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_TRACELOG_H
