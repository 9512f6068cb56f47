//===- DataParallel.h - The data-parallel gradient all-reduce ---*- C++ -*-===//
//
// Data parallelism around a pipeline: D copies of a P-rank pipeline, each
// parameter's gradient all-reduced across the D copies before the optimizer
// step. This header predicts when those all-reduces run and what they add to
// a step, from the simulated timeline of one pipeline (simulate()).
//
// The model (units: bytes, ms, GB/s = 1e9 bytes/s):
//
//  - Global stage s holds paramBytes(s) bytes of parameters (or the sum of
//    its bucketBytes); its gradients are as many bytes (float32).
//  - One all-reduce of B bytes across D pipelines takes
//        latencyMs + 2 (D - 1) / D * B / (bandwidthGBps * 1e9) * 1e3  ms,
//    the ring all-reduce's bus-bandwidth model (the "busbw" NCCL's tests
//    report). D = 1 and B = 0 cost nothing (no all-reduce is launched).
//  - Buckets (Appendix A): the paper reorders the computations of a stage's
//    last W pass by parameter, so that the gradients of one parameter (a
//    "bucket") are complete as soon as its part of the W is done, and
//    starts that bucket's all-reduce then, during the W. Stage s's
//    gradients are a list of buckets b_0, ..., b_{n-1} bytes in the order
//    its last W computes them (bucketBytes, or paramBytes(s) split into
//    bucketsPerStage equal ones), B = b_0 + ... + b_{n-1}. The W pass's
//    time is taken as proportional to the gradient bytes it produces:
//    bucket j is ready at
//        lastW.begin + (lastW.end - lastW.begin) * (b_0 + ... + b_j) / B,
//    lastW being the rank's last W of stage s in the step (for a
//    fused-backward schedule, where W directly follows its B, its last B/W
//    of the stage). Each bucket is one all-reduce (its own latency). One
//    bucket per stage (the default) is the stage as the unit: the
//    all-reduce is ready when the last W ends. A stage with B = 0 launches
//    nothing (one entry of 0 bytes and 0 ms, ready at its last W's end).
//  - Overlapped (the Zero Bubble paper, Appendix A, Figure 8): each rank
//    has one communication stream: its all-reduces run one at a time, in
//    the order they become ready (ties: the lower stage, then the lower
//    bucket first), and overlap with the rank's later compute: the rest of
//    the last W itself, and e.g. the W passes of its other stage in a V
//    schedule.
//  - After backward (the baseline without overlap, what a trainer that
//    all-reduces after its backward pass does): all of a rank's all-reduces
//    start after the rank's last action, in the same order.
//  - The optimizer step on a rank (and so the end of the step) waits for
//    the rank's last all-reduce. The exposed all-reduce time of a rank is
//    the end of its last all-reduce minus the end of its last action
//    (>= 0). The step time is the schedule's cost (CostConvention) with
//    each rank's end moved to max(end of its last action, end of its last
//    all-reduce): the largest such end from t = 0 (Makespan), or the
//    largest span from the rank's first action to it (StageSpan); the
//    bubble rate is (step time - ideal time) / step time, the exposed
//    all-reduce counted as bubble.
//
// Tied parameters (e.g. an embedding shared by the first and the last stage)
// are out of scope: their exchange between the pipeline's ranks is assumed
// to happen in the pipeline first; their all-reduce is counted on the stage
// whose paramBytes hold them. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_DATAPARALLEL_H
#define ZB_SCHEDULE_DATAPARALLEL_H

#include "zb/Schedule/Schedule.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace zb::sched {

/// The largest data-parallel degree D (zb/Support/Limits.h).
constexpr int kMaxDataParallel = (int)limits::kMaxDataParallel;
/// The most buckets per stage (DataParallelModel::bucketsPerStage).
constexpr int kMaxBucketsPerStage = 4096;

/// The data parallelism around one pipeline and the cost of its gradient
/// all-reduce.
struct DataParallelModel {
  /// D: copies of the pipeline (data-parallel degree), 1..kMaxDataParallel;
  /// 1 = no all-reduce.
  int numReplicas = 1;
  /// The all-reduce's bus bandwidth, GB/s (1e9 bytes/s), > 0.
  double bandwidthGBps = 100;
  /// The fixed cost of one all-reduce, ms, >= 0.
  double latencyMs = 0.02;
  /// Parameter bytes (= gradient bytes) with Problem's convention: one value
  /// (every rank), p values (one per rank; with V chunks per rank each chunk
  /// holds 1/V of it) or p*V values (one per global stage). Empty = 0 bytes;
  /// required when numReplicas > 1 unless bucketBytes is given.
  std::vector<double> paramBytes;
  /// Appendix A's buckets: one list per global stage (p*V lists, stage 0
  /// first), each the gradient bytes of the stage's buckets in the order its
  /// last W computes them; an empty list = a stage without parameters.
  /// Given (non-empty), it replaces paramBytes and bucketsPerStage. Empty =
  /// paramBytes split by bucketsPerStage.
  std::vector<std::vector<double>> bucketBytes;
  /// With bucketBytes empty: each stage's paramBytes split into this many
  /// equal buckets, 1..kMaxBucketsPerStage. 1 = the stage as the unit (its
  /// all-reduce ready when its last W ends).
  int bucketsPerStage = 1;

  /// True when a stage may have more than one bucket (bucketBytes given or
  /// bucketsPerStage > 1): the reports then name each all-reduce's bucket.
  bool bucketed() const { return !bucketBytes.empty() || bucketsPerStage != 1; }
};

/// Checks \p model against \p problem: 1 <= D <= kMaxDataParallel,
/// bandwidth finite and > 0, latency finite, >= 0 and at most 1e15 ms,
/// paramBytes of 1, p or p*V values, each finite, >= 0 and at most 1e15, and
/// present when D > 1 without bucketBytes; 1 <= bucketsPerStage <=
/// kMaxBucketsPerStage; bucketBytes empty or p*V lists, each value finite,
/// >= 0 and at most 1e15. The error names the field as zb-sched's flag
/// ("data-parallel", "dp-bandwidth", "dp-latency", "param-bytes",
/// "dp-buckets"), bucketBytes as "bucket bytes" with the stage and bucket.
llvm::Error validateDataParallel(const DataParallelModel &model,
                                 const Problem &problem);

/// The time of one all-reduce of \p bytes across model.numReplicas
/// pipelines, ms: 0 for D = 1 or no bytes, else latencyMs + 2 (D - 1) / D *
/// bytes / bandwidth.
double allReduceTime(const DataParallelModel &model, double bytes);

/// paramBytes resolved to one value per global stage (size of
/// \p stageToRank), as resolveStageCosts resolves the costs.
std::vector<double> resolveParamBytes(const DataParallelModel &model,
                                      const Problem &problem,
                                      llvm::ArrayRef<int> stageToRank,
                                      int directions = 1);

/// The buckets of each global stage (size of \p stageToRank), bytes in the
/// order the stage's last W computes them: model.bucketBytes as given, else
/// resolveParamBytes split into model.bucketsPerStage equal buckets.
std::vector<std::vector<double>>
resolveBucketBytes(const DataParallelModel &model, const Problem &problem,
                   llvm::ArrayRef<int> stageToRank, int directions = 1);

/// One bucket's gradient all-reduce on its rank's communication stream (with
/// one bucket per stage: the stage's).
struct StageAllReduce {
  /// Global stage.
  int stage = 0;
  /// The bucket's index within the stage (the order its last W computes
  /// the buckets), 0 with one bucket per stage.
  int bucket = 0;
  /// Gradient bytes of the bucket.
  double bytes = 0;
  /// allReduceTime of those bytes, ms.
  double duration = 0;
  /// When the bucket's gradients are complete, ms: the end of the rank's
  /// last W of the stage scaled back by the bytes of the later buckets
  /// (the header's model); the W's end for the last bucket.
  double ready = 0;
  /// When it runs, ms.
  double start = 0, end = 0;
};

/// One rank's all-reduces.
struct RankAllReduces {
  /// Start of the rank's first action and end of its last one, ms (0 for a
  /// rank without actions).
  double computeStart = 0, computeEnd = 0;
  /// The all-reduces of the rank's stages, one per bucket, in the order its
  /// communication stream runs them (ready time, then stage, then bucket).
  std::vector<StageAllReduce> allReduces;
  /// max(computeEnd, end of the last all-reduce), ms: when the rank's
  /// optimizer step can start.
  double end = 0;
  /// end - computeEnd, ms (>= 0): the all-reduce time not hidden behind the
  /// rank's compute.
  double exposed = 0;
};

/// The all-reduces of every rank under one placement, and the step they give.
struct AllReduceTimeline {
  /// Per rank.
  std::vector<RankAllReduces> ranks;
  /// max over ranks of RankAllReduces::end, ms from t = 0.
  double makespan = 0;
  /// max over ranks of (end - computeStart), ms.
  double stageSpan = 0;
  /// The step time in the schedule's cost convention (makespan or
  /// stageSpan), ms.
  double stepTime = 0;
  /// (stepTime - ideal time) / stepTime: the bubble rate with the exposed
  /// all-reduce counted as bubble.
  double bubbleRate = 0;
  /// max over ranks of RankAllReduces::exposed, ms.
  double exposed = 0;
};

/// The data-parallel all-reduces of one step of a schedule.
struct DataParallelTiming {
  DataParallelModel model;
  /// Appendix A: each bucket's all-reduce as soon as its part of the
  /// stage's last W is done.
  AllReduceTimeline overlapped;
  /// The baseline: every all-reduce after the rank's last action.
  AllReduceTimeline afterBackward;
  /// The pipeline alone (SimResult::cost, idealTime), ms.
  double pipelineCost = 0, idealTime = 0;
};

/// The all-reduces of \p schedule's step (both placements), from \p sim, its
/// simulation (simulate(problem, schedule), any SimOptions). Errors:
/// validateDataParallel's, or "data-parallel: the simulation of '<name>' is
/// incomplete" for a timeline that is not complete or not one per rank.
llvm::Expected<DataParallelTiming>
simulateDataParallel(const Problem &problem, const Schedule &schedule,
                     const SimResult &sim, const DataParallelModel &model);

} // namespace zb::sched

#endif // ZB_SCHEDULE_DATAPARALLEL_H
