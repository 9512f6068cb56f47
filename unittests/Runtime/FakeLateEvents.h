//===- FakeLateEvents.h - the stand-in's late event completion --*- C++ -*-===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): ZB_FAKE_CUDA_LATE_EVENTS=N
// makes the host see some of the device's work complete later than this
// stand-in, which runs streams at once, does, in a fixed pattern (no clock,
// no randomness): every N-th event record of a process is late, and
// cuEventQuery reports CUDA_ERROR_NOT_READY to its first N queries, unless
// the host has seen a later record on the same stream complete (a query,
// cuStreamQuery, a synchronisation): then the GPU has finished both, in
// stream order, between two of the host's queries. A host that polls
// several events in a row thus sees a later one done before an earlier
// one, as it does on a GPU whose copies end while it polls (the
// host-staged transport's sends). Off (0) by default.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKELATEEVENTS_H
#define ZB_UNITTESTS_RUNTIME_FAKELATEEVENTS_H

namespace zbfake {

/// cuEventRecord of `event` on `stream` (null: the legacy stream, or a
/// graph's replay), outside a capture.
void lateRecorded(const void *event, const void *stream);
/// cuEventQuery of an event whose record has run: whether the host must
/// still see it as not ready (a late record's first queries).
bool lateNotReady(const void *event);
/// The host waited for `event` (cuEventSynchronize) or destroys it: done.
void lateEventDone(const void *event);
/// The host saw every record on `stream` complete (cuStreamQuery returned
/// CUDA_SUCCESS, cuStreamSynchronize).
void lateStreamDone(const void *stream);

} // namespace zbfake

#endif // ZB_UNITTESTS_RUNTIME_FAKELATEEVENTS_H
