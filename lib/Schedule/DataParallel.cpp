//===- DataParallel.cpp - The gradient all-reduce of data parallelism -----===//
//
// See zb/Schedule/DataParallel.h (the model, the Zero Bubble paper's
// Appendix A).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/DataParallel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace zb::sched;

/// The largest time (ms) and byte count the model takes: sums over a rank's
/// stages stay finite.
static constexpr double kMaxValue = 1e15;

llvm::Error zb::sched::validateDataParallel(const DataParallelModel &model,
                                            const Problem &problem) {
  if (model.numReplicas < 1 || model.numReplicas > kMaxDataParallel)
    return llvm::createStringError(
        llvm::formatv("data-parallel must lie in [1, {0}] (pipelines whose "
                      "gradients are all-reduced), got {1}",
                      kMaxDataParallel, model.numReplicas)
            .str());
  if (!(model.bandwidthGBps > 0) || !std::isfinite(model.bandwidthGBps))
    return llvm::createStringError(
        llvm::formatv("dp-bandwidth must be a finite number > 0 (GB/s), got "
                      "{0}",
                      llvm::format("%g", model.bandwidthGBps))
            .str());
  if (!(model.latencyMs >= 0) || model.latencyMs > kMaxValue)
    return llvm::createStringError(
        llvm::formatv("dp-latency must be finite, >= 0 and at most 1e15 "
                      "(ms), got {0}",
                      llvm::format("%g", model.latencyMs))
            .str());
  size_t p = problem.numRanks, s = problem.numStages();
  const std::vector<double> &bytes = model.paramBytes;
  if (bytes.empty()) {
    if (model.numReplicas > 1)
      return llvm::createStringError(
          llvm::formatv("param-bytes is required with data-parallel {0} > 1 "
                        "(the parameter bytes: one value, p={1} values{2})",
                        model.numReplicas, p,
                        s != p ? llvm::formatv(" or p*V={0} values", s).str()
                               : "")
              .str());
    return llvm::Error::success();
  }
  if (bytes.size() != 1 && bytes.size() != p && bytes.size() != s)
    return llvm::createStringError(
        llvm::formatv("param-bytes has {0} values; expected 1, p={1}{2}",
                      bytes.size(), p,
                      s != p ? llvm::formatv(" or p*V={0}", s).str() : "")
            .str());
  for (double b : bytes)
    if (!(b >= 0) || b > kMaxValue)
      return llvm::createStringError(
          llvm::formatv("param-bytes must be finite, >= 0 and at most 1e15, "
                        "got {0}",
                        llvm::format("%g", b))
              .str());
  // Bandwidth and bytes each in range can still overflow the time.
  for (double b : bytes)
    if (!(allReduceTime(model, b) <= kMaxValue))
      return llvm::createStringError(
          llvm::formatv("dp-bandwidth {0} GB/s makes the all-reduce of {1} "
                        "bytes longer than 1e15 ms",
                        llvm::format("%g", model.bandwidthGBps),
                        llvm::format("%g", b))
              .str());
  return llvm::Error::success();
}

double zb::sched::allReduceTime(const DataParallelModel &model, double bytes) {
  if (model.numReplicas <= 1 || !(bytes > 0))
    return 0;
  double d = model.numReplicas;
  // bytes / (GB/s * 1e9 bytes/s) seconds = bytes / (GB/s * 1e6) ms.
  return model.latencyMs +
         2.0 * (d - 1) / d * bytes / (model.bandwidthGBps * 1e6);
}

std::vector<double>
zb::sched::resolveParamBytes(const DataParallelModel &model,
                             const Problem &problem,
                             llvm::ArrayRef<int> stageToRank,
                             int directions) {
  // Problem's convention: the per-rank vectors of resolveStageCosts.
  Problem bytes;
  bytes.numRanks = problem.numRanks;
  bytes.numChunks = problem.numChunks;
  bytes.memB = model.paramBytes;
  return resolveStageCosts(bytes, stageToRank, directions).memB;
}

/// Runs the all-reduces of one rank in the order of \p order on one stream,
/// none before \p notBefore (the rank's last action for the baseline).
static RankAllReduces runStream(std::vector<StageAllReduce> order,
                                double computeStart, double computeEnd,
                                double notBefore) {
  RankAllReduces rank;
  rank.computeStart = computeStart;
  rank.computeEnd = computeEnd;
  double free = notBefore;
  for (StageAllReduce &a : order) {
    a.start = std::max(a.ready, free);
    a.end = a.start + a.duration;
    free = a.end;
  }
  rank.allReduces = std::move(order);
  rank.end = std::max(computeEnd, free);
  rank.exposed = rank.end - computeEnd;
  return rank;
}

static void summarize(AllReduceTimeline &t, CostConvention convention,
                      double idealTime) {
  for (const RankAllReduces &r : t.ranks) {
    t.makespan = std::max(t.makespan, r.end);
    t.stageSpan = std::max(t.stageSpan, r.end - r.computeStart);
    t.exposed = std::max(t.exposed, r.exposed);
  }
  t.stepTime =
      convention == CostConvention::Makespan ? t.makespan : t.stageSpan;
  // As simulate(): below 0 is rounding of summed pass times.
  t.bubbleRate = t.stepTime > 0
                     ? std::max(0.0, (t.stepTime - idealTime) / t.stepTime)
                     : 0.0;
}

llvm::Expected<DataParallelTiming>
zb::sched::simulateDataParallel(const Problem &problem,
                                const Schedule &schedule, const SimResult &sim,
                                const DataParallelModel &model) {
  if (llvm::Error e = validateDataParallel(model, problem))
    return std::move(e);
  int p = schedule.perRank.size();
  int numStages = schedule.stageToRank.size();
  if (!sim.complete || static_cast<int>(sim.timeline.size()) != p)
    return llvm::createStringError(
        llvm::formatv("data-parallel: the simulation of '{0}' is incomplete",
                      schedule.name)
            .str());
  std::vector<double> bytes =
      resolveParamBytes(model, problem, schedule.stageToRank,
                        schedule.directions);

  // When each stage's gradients are complete: its last B or W (W follows
  // its B on the same rank, so this is the last W).
  std::vector<double> ready(numStages, -1);
  for (const std::vector<TimedAction> &line : sim.timeline)
    for (const TimedAction &t : line)
      if (t.action.kind != ActionKind::F && t.action.stage >= 0 &&
          t.action.stage < numStages)
        ready[t.action.stage] = std::max(ready[t.action.stage], t.end);

  DataParallelTiming timing;
  timing.model = model;
  timing.pipelineCost = sim.cost;
  timing.idealTime = sim.idealTime;
  for (int r = 0; r < p; ++r) {
    const std::vector<TimedAction> &line = sim.timeline[r];
    double computeStart = line.empty() ? 0 : line.front().start;
    double computeEnd = 0;
    for (const TimedAction &t : line)
      computeEnd = std::max(computeEnd, t.end);
    std::vector<StageAllReduce> order;
    for (int s = 0; s < numStages; ++s) {
      if (schedule.stageToRank[s] != r)
        continue;
      if (ready[s] < 0)
        return llvm::createStringError(
            llvm::formatv("data-parallel: the simulation of '{0}' is "
                          "incomplete (stage {1} has no backward pass)",
                          schedule.name, s)
                .str());
      StageAllReduce a;
      a.stage = s;
      a.bytes = bytes[s];
      a.duration = allReduceTime(model, bytes[s]);
      a.ready = ready[s];
      order.push_back(a);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const StageAllReduce &a, const StageAllReduce &b) {
                       return a.ready < b.ready;
                     });
    timing.overlapped.ranks.push_back(
        runStream(order, computeStart, computeEnd, /*notBefore=*/0));
    timing.afterBackward.ranks.push_back(
        runStream(order, computeStart, computeEnd, computeEnd));
  }
  summarize(timing.overlapped, schedule.costConvention, sim.idealTime);
  summarize(timing.afterBackward, schedule.costConvention, sim.idealTime);
  return timing;
}
