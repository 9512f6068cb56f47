//===- IO/Trace.cpp - Chrome / Perfetto trace events ----------------------===//
//
// writeTrace: one thread per rank, times in us (zb/Schedule/IO.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"

#include "llvm/Support/FormatVariadic.h"

using namespace zb::sched;
namespace json = llvm::json;

/// The optimizer sync's events: the step on each rank, the state messages
/// as flows, the validation as an instant event (times in us).
static void addSyncTraceEvents(json::Array &events,
                               const OptimizerSyncTiming &sync) {
  int p = sync.ranks.size();
  int64_t flow = 0;
  auto message = [&](llvm::StringRef name, int from, double sent, int to,
                     double arrives) {
    ++flow;
    events.push_back(json::Object{{"name", name}, {"cat", "optimizer_sync"},
                                  {"ph", "s"}, {"id", flow}, {"pid", 0},
                                  {"tid", from}, {"ts", sent * 1000.0}});
    events.push_back(json::Object{{"name", name}, {"cat", "optimizer_sync"},
                                  {"ph", "f"}, {"bp", "e"}, {"id", flow},
                                  {"pid", 0}, {"tid", to},
                                  {"ts", arrives * 1000.0}});
  };
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    events.push_back(json::Object{
        {"name", sync.mode == OptimizerSync::PostValidation ? "optimizer step (eager)"
                                                            : "optimizer step"},
        {"cat", "optimizer_sync"}, {"ph", "X"}, {"pid", 0}, {"tid", r},
        {"ts", s.stepStart * 1000.0},
        {"dur", (s.stepEnd - s.stepStart) * 1000.0}});
    if (sync.mode == OptimizerSync::PostValidation) {
      if (r + 1 < p)
        message("partial state", r, s.stateOut, r + 1,
                sync.ranks[r + 1].stateIn);
      if (r + 1 < p)
        message("full state", p - 1, sync.ranks[p - 1].stepStart, r,
                s.fullArrives);
      double at = validationTime(sync, r);
      events.push_back(json::Object{
          {"name", "validate"}, {"cat", "optimizer_sync"}, {"ph", "i"},
          {"s", "t"}, {"pid", 0}, {"tid", r}, {"ts", at * 1000.0},
          {"args", json::Object{{"before_action",
                                 static_cast<int64_t>(s.validateBefore)},
                                {"forwards_redone_on_rollback",
                                 s.forwardsBeforeValidation}}}});
    } else if (sync.mode == OptimizerSync::AllReduce && s.stateIn >= 0) {
      events.push_back(json::Object{
          {"name", "all-reduce"}, {"cat", "optimizer_sync"}, {"ph", "X"},
          {"pid", 0}, {"tid", r}, {"ts", s.passesEnd * 1000.0},
          {"dur", (s.stateIn - s.passesEnd) * 1000.0}});
    }
  }
}

/// The overlapped all-reduces, one bar per bucket: thread p + r under rank
/// r (times in us).
static void addDataParallelTraceEvents(json::Array &events,
                                       const DataParallelTiming &dp) {
  int64_t p = dp.overlapped.ranks.size();
  // With buckets (Appendix A) one bar per bucket, named by it.
  bool bucketed = dp.model.bucketed();
  for (int64_t r = 0; r < p; ++r) {
    int64_t tid = p + r;
    events.push_back(json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", tid},
        {"args",
         json::Object{
             {"name", llvm::formatv("rank {0} all-reduce", r).str()}}}});
    events.push_back(
        json::Object{{"name", "thread_sort_index"},
                     {"ph", "M"},
                     {"pid", 0},
                     {"tid", tid},
                     {"args", json::Object{{"sort_index", 2 * r + 1}}}});
    for (const StageAllReduce &a : dp.overlapped.ranks[r].allReduces) {
      if (a.duration <= 0)
        continue;
      json::Object args{
          {"stage", a.stage}, {"bytes", a.bytes}, {"ready_ms", a.ready}};
      std::string name = llvm::formatv("all-reduce stage {0}", a.stage).str();
      if (bucketed) {
        args["bucket"] = a.bucket;
        name += llvm::formatv(" bucket {0}", a.bucket).str();
      }
      events.push_back(json::Object{{"name", std::move(name)},
                                    {"cat", "data_parallel"},
                                    {"ph", "X"},
                                    {"pid", 0},
                                    {"tid", tid},
                                    {"ts", a.start * 1000.0},
                                    {"dur", a.duration * 1000.0},
                                    {"args", std::move(args)}});
    }
  }
}

void zb::sched::writeTrace(llvm::raw_ostream &os, const Schedule &schedule,
                           const SimResult &sim,
                           const OptimizerSyncTiming *sync,
                           const DataParallelTiming *dp) {
  json::Array events;
  auto addPasses = [&](const SimResult &iteration, int number) {
    for (size_t r = 0; r < iteration.timeline.size(); ++r)
      for (const TimedAction &t : iteration.timeline[r]) {
        const Action &a = t.action;
        json::Object args{{"stage", a.stage}, {"microbatch", a.microbatch}};
        if (sync)
          args["iteration"] = number;
        events.push_back(json::Object{
            {"name", (kindName(a.kind) + llvm::Twine(a.microbatch)).str()},
            {"cat", kindName(a.kind)},
            {"ph", "X"},
            {"pid", 0},
            {"tid", static_cast<int64_t>(r)},
            {"ts", t.start * 1000.0},
            {"dur", (t.end - t.start) * 1000.0},
            {"args", std::move(args)}});
      }
  };
  for (size_t r = 0; r < sim.timeline.size(); ++r) {
    events.push_back(json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", static_cast<int64_t>(r)},
        {"args", json::Object{{"name", llvm::formatv("rank {0}", r).str()}}}});
    // Each rank's all-reduce lane sorts right under it.
    if (dp)
      events.push_back(json::Object{
          {"name", "thread_sort_index"},
          {"ph", "M"},
          {"pid", 0},
          {"tid", static_cast<int64_t>(r)},
          {"args", json::Object{{"sort_index", static_cast<int64_t>(2 * r)}}}});
  }
  json::Object other{{"schedule", schedule.name},
                     {"bubble_rate", sim.bubbleRate},
                     {"cost_ms", sim.cost}};
  if (sync) {
    addPasses(sync->first, 1);
    addPasses(sync->second, 2);
    addSyncTraceEvents(events, *sync);
    other["optimizer_sync"] = optimizerSyncName(sync->mode);
    other["steady_state_period_ms"] = sync->period;
    other["steady_state_bubble_rate"] = sync->bubbleRate;
  } else {
    addPasses(sim, 1);
  }
  if (dp) {
    addDataParallelTraceEvents(events, *dp);
    other["data_parallel"] = dp->model.numReplicas;
    other["data_parallel_step_ms"] = dp->overlapped.stepTime;
    other["data_parallel_bubble_rate"] = dp->overlapped.bubbleRate;
  }
  json::Object root{{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ms"},
                    {"otherData", std::move(other)}};
  os << llvm::formatv("{0}", json::Value(std::move(root))) << "\n";
}
