//===- TraceLog.h - zb runtime: the current step's trace --------*- C++ -*-===//
//
// Not installed. The in-memory trace of the current step (Trace.cpp), as
// the ABI (abi/Trace.cpp, abi/Comm.cpp) fills it. The trace calls no
// backend: a backend that measures actions on a device returns their times
// from Backend::stepEnd, and the ABI stores them here.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_TRACELOG_H
#define ZBRT_LIB_TRACELOG_H

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
/// A backend that moves a message on the rank's own timeline (the CPU
/// backend) notes when its work on the message being sent or received began
/// (a receive: when the message was there); the next send/recv event traced
/// takes it as TraceEvent::workFromUs.
void traceMessageWorkFrom(double us);

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_TRACELOG_H
