//===- Trace.cpp - zb runtime: action trace, bubble, Chrome trace ---------===//
//
// The trace of the current step (TraceLog.h) and what zb-run computes from
// it (zbrt/Trace.h). Calls no backend: zbrt::traceBeginStep, which also
// starts a backend's device timeline, is in abi/Trace.cpp.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Trace.h"

#include "Internal.h"
#include "TraceLog.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <cstdlib>

using namespace zbrt;
using namespace zbrt::detail;

namespace {

/// Bound on the events of one step, so that a program that never calls
/// traceBeginStep() (generated code driven by something else than zb-run)
/// cannot grow the trace without limit.
constexpr size_t kMaxEventsPerStep = size_t(1) << 22;

struct TraceState {
  std::chrono::steady_clock::time_point origin =
      std::chrono::steady_clock::now();
  std::vector<TraceEvent> events;
  /// Indices into `events` of actions begun and not yet ended.
  std::vector<size_t> open;
};

TraceState &state() {
  static TraceState s;
  return s;
}

const char *actionName(int32_t kind) {
  switch (kind) {
  case 0:
    return "F";
  case 1:
    return "B";
  case 2:
    return "W";
  default:
    return "?";
  }
}

} // namespace

const char *zbrt::eventKindName(EventKind kind) {
  switch (kind) {
  case EventKind::Forward:
    return "F";
  case EventKind::BackwardInput:
    return "B";
  case EventKind::BackwardWeight:
    return "W";
  case EventKind::Send:
    return "send";
  case EventKind::Recv:
    return "recv";
  case EventKind::AllReduce:
    return "all-reduce";
  }
  return "?";
}

void zbrt::detail::traceReset() {
  TraceState &s = state();
  s.events.clear();
  s.open.clear();
  s.origin = std::chrono::steady_clock::now();
}

void zbrt::detail::traceSetDeviceTimes(size_t index, double beginUs,
                                       double endUs) {
  TraceState &s = state();
  if (index < s.events.size()) {
    s.events[index].beginUs = beginUs;
    s.events[index].endUs = endUs;
  }
}

double zbrt::traceNowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - state().origin)
      .count();
}

const std::vector<TraceEvent> &zbrt::traceEvents() { return state().events; }

double zbrt::detail::traceUsAt(std::chrono::steady_clock::time_point time) {
  return std::chrono::duration<double, std::micro>(time - state().origin)
      .count();
}

void zbrt::detail::traceRecordMessage(
    const TraceEvent &event, std::chrono::steady_clock::time_point work) {
  TraceEvent e = event;
  if (work != std::chrono::steady_clock::time_point{}) {
    double workFromUs = traceUsAt(work);
    if (workFromUs >= e.beginUs && (e.endUs < 0 || workFromUs <= e.endUs))
      e.workFromUs = workFromUs;
  }
  traceRecord(e);
}

void zbrt::traceRecord(const TraceEvent &event) {
  TraceState &s = state();
  TraceEvent e = event;
  if (s.events.size() < kMaxEventsPerStep)
    s.events.push_back(e);
}

void zbrt::detail::currentAction(char *out, unsigned long cap) {
  TraceState &s = state();
  if (s.open.empty()) {
    std::snprintf(out, cap, "outside a pass");
    return;
  }
  const TraceEvent &e = s.events[s.open.back()];
  static const char *kNames[] = {"F", "B", "W"};
  std::snprintf(out, cap, "in %s of stage %d, microbatch %d",
                kNames[(int)e.kind], e.stage, e.microbatch);
}

size_t zbrt::detail::traceActionBegin(int32_t kind, int32_t stage,
                                     int32_t microbatch) {
  TraceState &s = state();
  if (s.events.size() >= kMaxEventsPerStep)
    return kNoTraceEvent;
  size_t index = s.events.size();
  s.open.push_back(index);
  s.events.push_back(TraceEvent{static_cast<EventKind>(kind), pipelineRank(),
                                stage, microbatch, -1, -1, 0, traceNowUs(),
                                -1.0});
  return index;
}

size_t zbrt::detail::traceActionEnd(int32_t kind, int32_t stage,
                                   int32_t microbatch) {
  double now = traceNowUs();
  TraceState &s = state();
  // Normally the innermost open action; search outwards to tolerate
  // interleaved begin/end pairs.
  for (size_t i = s.open.size(); i-- > 0;) {
    TraceEvent &e = s.events[s.open[i]];
    if ((int32_t)e.kind == kind && e.stage == stage &&
        e.microbatch == microbatch) {
      e.endUs = now;
      size_t index = s.open[i];
      s.open.erase(s.open.begin() + i);
      return index;
    }
  }
  if (s.events.size() >= kMaxEventsPerStep)
    return kNoTraceEvent; // its begin was dropped
  fatalf("zbrt_action_end: %s of stage %d microbatch %d was not begun",
         actionName(kind), stage, microbatch);
}

BubbleStats zbrt::computeBubble(const std::vector<TraceEvent> &events,
                                int32_t rank) {
  BubbleStats stats;
  stats.rank = rank;
  std::vector<std::pair<double, double>> intervals;
  for (const TraceEvent &e : events) {
    if (e.rank != rank || e.endUs < 0)
      continue;
    if (e.kind != EventKind::Forward && e.kind != EventKind::BackwardInput &&
        e.kind != EventKind::BackwardWeight)
      continue;
    intervals.emplace_back(e.beginUs, std::max(e.beginUs, e.endUs));
  }
  stats.numActions = (int32_t)intervals.size();
  if (intervals.empty())
    return stats;
  stats.firstBeginUs = intervals.front().first;
  stats.lastEndUs = intervals.front().second;
  for (const auto &iv : intervals) {
    stats.firstBeginUs = std::min(stats.firstBeginUs, iv.first);
    stats.lastEndUs = std::max(stats.lastEndUs, iv.second);
  }
  // The rank's own work on messages within the span (a message before the
  // first action or after the last one is not part of the pipeline's span).
  for (const TraceEvent &e : events) {
    if (e.rank != rank || e.endUs < 0 || e.workFromUs < 0 ||
        (e.kind != EventKind::Send && e.kind != EventKind::Recv))
      continue;
    double begin = std::max(e.workFromUs, stats.firstBeginUs);
    double end = std::min(e.endUs, stats.lastEndUs);
    if (end > begin)
      intervals.emplace_back(begin, end);
  }
  std::sort(intervals.begin(), intervals.end());
  double curBegin = intervals.front().first, curEnd = intervals.front().second;
  double busy = 0;
  for (size_t i = 1; i < intervals.size(); ++i) {
    const auto &iv = intervals[i];
    if (iv.first > curEnd) {
      busy += curEnd - curBegin;
      curBegin = iv.first;
      curEnd = iv.second;
    } else {
      curEnd = std::max(curEnd, iv.second);
    }
  }
  busy += curEnd - curBegin;
  stats.busyUs = busy;
  double span = stats.lastEndUs - stats.firstBeginUs;
  stats.bubbleRate = span > 0 ? std::max(0.0, 1.0 - busy / span) : 0.0;
  return stats;
}

std::vector<BubbleStats>
zbrt::computeBubblePerRank(const std::vector<TraceEvent> &events,
                           int32_t numRanks) {
  std::vector<BubbleStats> result;
  for (int32_t r = 0; r < numRanks; ++r)
    result.push_back(computeBubble(events, r));
  return result;
}

std::vector<TraceEvent> zbrt::gatherTrace(const std::vector<TraceEvent> &local,
                                          int32_t root) {
  // A data-parallel job: the pipeline's ranks (their events name pipeline
  // ranks).
  MPI_Comm comm = *static_cast<MPI_Comm *>(detail::pipelineCommunicator());
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int eventBytes = (int)sizeof(TraceEvent);
  int myBytes = (int)local.size() * eventBytes;
  std::vector<int> counts(rank == root ? size : 0);
  MPI_Gather(&myBytes, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm);
  std::vector<int> displs;
  std::vector<TraceEvent> all;
  if (rank == root) {
    displs.resize(size);
    int total = 0;
    for (int r = 0; r < size; ++r) {
      displs[r] = total;
      total += counts[r];
    }
    all.resize(total / eventBytes);
  }
  MPI_Gatherv(local.data(), myBytes, MPI_BYTE, all.data(), counts.data(),
              displs.data(), MPI_BYTE, root, comm);
  return all;
}

void zbrt::writeChromeTrace(std::ostream &os,
                            const std::vector<TraceEvent> &events,
                            int32_t numRanks, int64_t step) {
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  os << "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, "
        "\"args\": {\"name\": \"zb step "
     << step << "\"}}";
  for (int32_t r = 0; r < numRanks; ++r) {
    os << ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
          "\"tid\": "
       << r << ", \"args\": {\"name\": \"rank " << r << "\"}}";
    os << ",\n  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, "
          "\"tid\": "
       << r << ", \"args\": {\"sort_index\": " << r << "}}";
  }
  // The data-parallel all-reduces of rank r on a track of their own
  // (numRanks + r), below the ranks.
  std::vector<bool> allReduceTrack(numRanks, false);
  for (const TraceEvent &e : events)
    if (e.kind == EventKind::AllReduce && e.rank >= 0 && e.rank < numRanks &&
        !allReduceTrack[e.rank]) {
      allReduceTrack[e.rank] = true;
      os << ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
            "\"tid\": "
         << numRanks + e.rank << ", \"args\": {\"name\": \"rank " << e.rank
         << " all-reduce\"}}";
      os << ",\n  {\"name\": \"thread_sort_index\", \"ph\": \"M\", "
            "\"pid\": 0, \"tid\": "
         << numRanks + e.rank
         << ", \"args\": {\"sort_index\": " << numRanks + e.rank << "}}";
    }
  os << std::fixed << std::setprecision(3);
  for (const TraceEvent &e : events) {
    if (e.endUs < 0)
      continue;
    const char *cat = eventKindName(e.kind);
    os << ",\n  {\"name\": \"";
    bool isAction = e.kind == EventKind::Forward ||
                    e.kind == EventKind::BackwardInput ||
                    e.kind == EventKind::BackwardWeight;
    const bool allReduce = e.kind == EventKind::AllReduce;
    if (isAction)
      os << cat << " s" << e.stage << " mb" << e.microbatch;
    else if (allReduce && e.peer > e.tag)
      os << "all-reduce p" << e.tag << "-p" << e.peer;
    else if (allReduce)
      os << "all-reduce p" << e.tag;
    else if (e.kind == EventKind::Send)
      os << "send ->" << e.peer;
    else
      os << "recv <-" << e.peer;
    os << "\", \"cat\": \"" << cat << "\", \"ph\": \"X\", \"pid\": 0, "
       << "\"tid\": " << (allReduce ? numRanks + e.rank : e.rank)
       << ", \"ts\": " << e.beginUs << ", \"dur\": " << (e.endUs - e.beginUs)
       << ", \"args\": {";
    if (isAction)
      os << "\"stage\": " << e.stage << ", \"microbatch\": " << e.microbatch;
    else if (allReduce)
      os << "\"first_param\": " << e.tag << ", \"last_param\": "
         << std::max(e.tag, e.peer) << ", \"bytes\": " << e.bytes;
    else
      os << "\"peer\": " << e.peer << ", \"tag\": " << e.tag
         << ", \"bytes\": " << e.bytes;
    if (!isAction && e.workFromUs >= 0)
      os << ", \"work_us\": " << (e.endUs - e.workFromUs);
    os << "}}";
  }
  os << "\n]}\n";
}
