//===- Trace.h - zb runtime: per-step action trace --------------*- C++ -*-===//
//
// Every F/B/W action (zbrt_action_begin/end) and every send/recv of the
// runtime is timestamped into an in-memory trace of the current step. zb-run
// starts a step with traceBeginStep(), and afterwards computes the realized
// bubble rate per rank and writes a Chrome / Perfetto trace (JSON, "X"
// complete events, one track per rank).
//
// Times are microseconds since the origin set by the last traceBeginStep()
// (std::chrono::steady_clock). zb-run calls MPI_Barrier right before
// traceBeginStep() so that the origins of all ranks agree up to the barrier's
// exit skew.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_TRACE_H
#define ZBRT_TRACE_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace zbrt {

/// What a trace event records. F/B/W are the scheduled compute actions (the
/// numbering matches the `kind` argument of zbrt_action_begin).
enum class EventKind : int32_t {
  Forward = 0,        ///< F
  BackwardInput = 1,  ///< B (gradient w.r.t. the activation)
  BackwardWeight = 2, ///< W (gradient w.r.t. the parameters)
  Send = 3,           ///< zbrt_send (copy + MPI_Isend)
  Recv = 4,           ///< zbrt_recv (probe + receive; includes waiting)
  /// The all-reduce of a bucket of gradients across the data-parallel
  /// pipelines (zb-run), from its start (zbrt_gradients_ready, or the
  /// step's end) until the runner saw it complete; `tag` and `peer` hold
  /// the plan.json indices of the bucket's first and last parameter (the
  /// rank's gradients between them, in order), `bytes` its size, `stage`
  /// -1. Off the rank's compute timeline: not in the bubble.
  AllReduce = 5,
};

/// Short name: "F", "B", "W", "send", "recv", "all-reduce".
const char *eventKindName(EventKind kind);

/// One timestamped interval. POD: gathered across ranks as raw bytes.
struct TraceEvent {
  EventKind kind;
  int32_t rank;       ///< rank that recorded the event
  int32_t stage;      ///< global (virtual) stage; -1 for send/recv
  int32_t microbatch; ///< microbatch; -1 for send/recv
  int32_t peer;       ///< send/recv peer rank; -1 for F/B/W
  int32_t tag;        ///< send/recv message tag; -1 for F/B/W
  int64_t bytes;      ///< send/recv message size in bytes; 0 for F/B/W
  double beginUs;     ///< microseconds since the step's origin
  double endUs;       ///< microseconds since the step's origin; < 0 if open
  /// Send/recv: from this time to endUs the rank worked on the message
  /// itself (the CPU backend's copy and MPI_Isend, or its receive once the
  /// message was there; before it a receive waited for the peer). < 0: the
  /// backend does not say, or moves messages off the rank's compute timeline
  /// (CUDA streams); then the whole event is idle time.
  double workFromUs = -1.0;
};

/// Clears the current trace and sets the time origin to now.
void traceBeginStep();
/// Microseconds since the origin of the current step.
double traceNowUs();
/// Events recorded since the last traceBeginStep(), in begin order.
const std::vector<TraceEvent> &traceEvents();
/// Appends an event (used by the runtime itself, and by tests).
void traceRecord(const TraceEvent &event);

/// Realized bubble of one rank: idle fraction of the interval between its
/// first action's begin and its last action's end. Busy: the F/B/W actions
/// and the rank's own work on messages (a send, a receive from the moment
/// its message was there: TraceEvent::workFromUs), the union of their
/// intervals within that span; waiting for a peer is idle. A profiled pass
/// cost includes the same message work (zb::runner::StageProfile), so this is
/// the per-rank form of the bubble rate of Qi et al. 2024 (Section 3) at the
/// costs the plan was scheduled with, measured instead of simulated.
struct BubbleStats {
  int32_t rank = 0;
  int32_t numActions = 0; ///< F/B/W events of this rank
  double firstBeginUs = 0;
  double lastEndUs = 0;
  double busyUs = 0;     ///< union of the busy intervals (above)
  double bubbleRate = 0; ///< 1 - busy / span; 0 without actions
};

/// Bubble of `rank` over the events of that rank in `events` (events of
/// other ranks are ignored; open events are ignored).
BubbleStats computeBubble(const std::vector<TraceEvent> &events, int32_t rank);
/// computeBubble for ranks 0 .. numRanks-1.
std::vector<BubbleStats>
computeBubblePerRank(const std::vector<TraceEvent> &events, int32_t numRanks);

/// Collective over MPI_COMM_WORLD: returns on `root` the events of all
/// ranks (concatenated in rank order), an empty vector on other ranks.
std::vector<TraceEvent> gatherTrace(const std::vector<TraceEvent> &local,
                                    int32_t root);

/// Writes a Chrome trace (JSON object format, loadable by ui.perfetto.dev and
/// chrome://tracing): one process "zb step <step>", one thread (track) per
/// rank named "rank R", one complete ("X") event per trace event, named e.g.
/// "F s1 mb3" or "send ->2", with category F/B/W/send/recv and args.
void writeChromeTrace(std::ostream &os, const std::vector<TraceEvent> &events,
                      int32_t numRanks, int64_t step);

} // namespace zbrt

#endif // ZBRT_TRACE_H
