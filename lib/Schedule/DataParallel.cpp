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
  if (model.bucketsPerStage < 1 || model.bucketsPerStage > kMaxBucketsPerStage)
    return llvm::createStringError(
        llvm::formatv("dp-buckets must lie in [1, {0}] (all-reduce buckets "
                      "per stage), got {1}",
                      kMaxBucketsPerStage, model.bucketsPerStage)
            .str());
  size_t p = problem.numRanks, s = problem.numStages();
  const std::vector<std::vector<double>> &buckets = model.bucketBytes;
  if (!buckets.empty()) {
    if (buckets.size() != s)
      return llvm::createStringError(
          llvm::formatv("bucket bytes has {0} stages; expected one list per "
                        "global stage, p*V={1}",
                        buckets.size(), s)
              .str());
    for (size_t st = 0; st < s; ++st)
      for (size_t j = 0; j < buckets[st].size(); ++j) {
        double b = buckets[st][j];
        if (!(b >= 0) || b > kMaxValue)
          return llvm::createStringError(
              llvm::formatv("bucket bytes of stage {0}, bucket {1} must be "
                            "finite, >= 0 and at most 1e15, got {2}",
                            st, j, llvm::format("%g", b))
                  .str());
        if (!(allReduceTime(model, b) <= kMaxValue))
          return llvm::createStringError(
              llvm::formatv("dp-bandwidth {0} GB/s makes the all-reduce of "
                            "bucket {1} of stage {2} ({3} bytes) longer than "
                            "1e15 ms",
                            llvm::format("%g", model.bandwidthGBps), j, st,
                            llvm::format("%g", b))
                  .str());
      }
  }
  const std::vector<double> &bytes = model.paramBytes;
  if (bytes.empty()) {
    if (model.numReplicas > 1 && buckets.empty())
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

std::vector<std::vector<double>>
zb::sched::resolveBucketBytes(const DataParallelModel &model,
                              const Problem &problem,
                              llvm::ArrayRef<int> stageToRank, int directions) {
  if (!model.bucketBytes.empty())
    return model.bucketBytes;
  std::vector<double> stage =
      resolveParamBytes(model, problem, stageToRank, directions);
  std::vector<std::vector<double>> buckets(stage.size());
  int k = std::max(1, model.bucketsPerStage);
  for (size_t s = 0; s < stage.size(); ++s)
    buckets[s].assign(k, k == 1 ? stage[s] : stage[s] / k);
  return buckets;
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
  std::vector<std::vector<double>> buckets = resolveBucketBytes(
      model, problem, schedule.stageToRank, schedule.directions);
  if (static_cast<int>(buckets.size()) != numStages)
    return llvm::createStringError(
        llvm::formatv("bucket bytes has {0} stages; '{1}' has {2}",
                      buckets.size(), schedule.name, numStages)
            .str());

  // Each stage's last W (the B/W pass ending last: W follows its B on the
  // same rank; ties, e.g. a W of no time, the one starting last), ms.
  std::vector<double> lastBegin(numStages, -1), lastEnd(numStages, -1);
  for (const std::vector<TimedAction> &line : sim.timeline)
    for (const TimedAction &t : line) {
      int s = t.action.stage;
      if (t.action.kind == ActionKind::F || s < 0 || s >= numStages)
        continue;
      if (t.end > lastEnd[s] ||
          (t.end == lastEnd[s] && t.start > lastBegin[s])) {
        lastEnd[s] = t.end;
        lastBegin[s] = t.start;
      }
    }

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
      if (lastEnd[s] < 0)
        return llvm::createStringError(
            llvm::formatv("data-parallel: the simulation of '{0}' is "
                          "incomplete (stage {1} has no backward pass)",
                          schedule.name, s)
                .str());
      double total = 0;
      for (double b : buckets[s])
        total += b;
      if (!(total > 0)) {
        // Nothing to reduce: one entry of no time at the W's end.
        StageAllReduce a;
        a.stage = s;
        a.ready = lastEnd[s];
        order.push_back(a);
        continue;
      }
      // Bucket j is ready once the W has produced b_0 + ... + b_j of the
      // stage's B bytes (W's time proportional to its gradient bytes); the
      // last (c == B) exactly at the W's end.
      double span = lastEnd[s] - lastBegin[s], done = 0;
      for (size_t j = 0; j < buckets[s].size(); ++j) {
        done += buckets[s][j];
        StageAllReduce a;
        a.stage = s;
        a.bucket = static_cast<int>(j);
        a.bytes = buckets[s][j];
        a.duration = allReduceTime(model, a.bytes);
        a.ready =
            done >= total ? lastEnd[s] : lastBegin[s] + span * (done / total);
        order.push_back(a);
      }
    }
    // Stages and buckets were added in order: ties stay lower stage, then
    // lower bucket first.
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
