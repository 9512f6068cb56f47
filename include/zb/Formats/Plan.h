//===- Plan.h - plan.json, the zb-compile -> zb-run contract ----*- C++ -*-===//
//
// The in-memory form of plan.json version 1 (docs/plan-json.md) with its one
// reader and one writer. zb-compile writes it (writePlan), zb-run reads it
// (loadPlan). The reader checks everything zb-run relies on (types, ranges,
// cross references) and names the file and the offending field on error:
//   "<path>: <field path>: <problem>", e.g.
//   "out/plan.json: ranks[1].args[0].index: 7 out of range [0, 2]".
// Units: bytes (offset_bytes, m_b, m_w), ms (t_f/t_b/t_w/t_comm,
// makespan_ms), microbatches and samples (num_microbatches,
// microbatch_size).
//
// MLIR-free: LLVM Support only (part of ZBFormats, lib/Formats).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_PLAN_H
#define ZB_FORMATS_PLAN_H

#include "zb/Formats/Options.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zb::formats {

/// Where a copy of a parameter or an input lives.
struct Placement {
  int32_t stage = 0;
  int32_t rank = 0;
  bool operator==(const Placement &o) const {
    return stage == o.stage && rank == o.rank;
  }
};

/// plan.json "params[i]": one parameter, float32 in params.bin at
/// offsetBytes (a multiple of 4).
struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  int32_t rank = 0;  ///< of the first copy
  int32_t stage = 0; ///< of the first copy
  int64_t offsetBytes = 0;
  /// "tied_copies": one entry per stage holding a copy (tied parameters
  /// only; empty otherwise).
  std::vector<Placement> tiedCopies;
  int64_t numElements() const;
};

/// Element type of a graph input as the rank program reads it.
enum class DType { Float32, Int64, Int32 };

/// "float32", "int64", "int32".
const char *dtypeName(DType t);
/// Bytes per element: 4, 8, 4.
int64_t dtypeBytes(DType t);
/// The DType named `name` (dtypeName), or std::nullopt.
std::optional<DType> dtypeFromName(llvm::StringRef name);

/// plan.json "inputs[i]": one graph input (batch data).
struct InputInfo {
  std::string name;
  std::vector<int64_t> sampleShape;
  DType dtype = DType::Float32; ///< "dtype" (float32 when absent)
  int32_t rank = 0;
  int32_t stage = 0;
  /// "index_range": an integer input's values must lie in [0, indexRange)
  /// (the rows of the embedding table it indexes, the classes of the
  /// cross-entropy or one-hot it feeds); 0 = not known, unchecked.
  int64_t indexRange = 0;
  /// "index_ignore": the one value outside the range that is accepted too
  /// (the ignore_index of the cross-entropy the input feeds: torch's -100).
  std::optional<int64_t> indexIgnore;
  int64_t sampleElements() const;
};

enum class ArgKind { Param, Grad, Input, Loss };

/// "param", "grad", "input", "loss".
const char *argKindName(ArgKind k);
/// The ArgKind named `name` (argKindName), or std::nullopt.
std::optional<ArgKind> argKindFromName(llvm::StringRef name);

struct ArgInfo {
  ArgKind kind = ArgKind::Param;
  int64_t index = -1; ///< into Plan::params or Plan::inputs; -1 for loss
};

/// plan.json "ranks[r].sends[i]": a message the rank's step function sends
/// (zbrt_send), to rank `peer` with tag `tag` (zbrt_tag) and `bytes` bytes.
struct SentMessage {
  int32_t peer = 0;
  int32_t tag = 0;
  int64_t bytes = 0;
  bool operator==(const SentMessage &o) const {
    return peer == o.peer && tag == o.tag && bytes == o.bytes;
  }
};

/// plan.json "ranks[r]": the rank program and its arguments, in order.
struct RankInfo {
  int32_t rank = 0;
  std::string library; ///< a file name of the plan directory
  std::string entry;
  std::vector<ArgInfo> args;
  /// "sends": every message the step function sends in a step, in program
  /// order (zb-lower-pipeline's order; so the order of each channel from
  /// this rank, which the CUDA backend's NCCL transport needs: NCCL has no
  /// tags). Absent in plans from before it was written: std::nullopt.
  std::optional<std::vector<SentMessage>> sends;
};

/// plan.json "optimizer". beta1/beta2/eps/weight_decay are written for
/// "adamw" only.
/// A learning rate the rank programs can use: > 0 and a finite float32
/// (they compute in float32; 1e39 would be inf).
inline bool isValidLearningRate(double lr) {
  return lr > 0 && lr <= 3.4028234663852886e38; // FLT_MAX
}

struct OptimizerInfo {
  Optimizer kind = Optimizer::Sgd; ///< "name": "sgd" or "adamw"
  double lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
};

/// plan.json "stages[s]": the costs the plan was scheduled with.
struct StageCostInfo {
  int32_t stage = 0;
  int32_t rank = 0;
  double tF = 0, tB = 0, tW = 0, tComm = 0; ///< ms per microbatch
  int64_t mB = 0, mW = 0;                   ///< bytes per microbatch
};

/// plan.json "predicted.<schedule>.jitter": the expectation under the
/// measured pass-to-pass variation (zb::sched::estimateJitter).
struct JitterInfo {
  std::optional<int64_t> samples; ///< Monte Carlo samples
  double bubbleRate = 0;
  std::optional<double> makespanMs;
  std::vector<double> rankBubbleRate; ///< one per rank
};

/// plan.json "predicted.<schedule>": simulator results (lib/Schedule).
/// plan.json "predicted.<schedule>.data_parallel" (zb-compile
/// --data-parallel D > 1): the step with the gradients' all-reduce across
/// the D pipelines (zb/Schedule/DataParallel.h: each stage's all-reduce of
/// its parameter bytes at latency + 2 (D-1)/D bytes / bandwidth, started
/// when the stage's last W ends; the Zero Bubble paper, Appendix A), and
/// the same all-reduces after the rank's last pass (the baseline).
struct DataParallelPrediction {
  int32_t dataParallel = 1; ///< D
  double bandwidthGBps = 0; ///< the model's bus bandwidth, GB/s
  double latencyMs = 0;     ///< the model's latency per all-reduce, ms
  /// Step time (the schedule's cost convention), ms; bubble rate with the
  /// exposed all-reduce counted as bubble; the largest exposed all-reduce
  /// time of a rank, ms.
  double stepMs = 0, bubbleRate = 0, exposedMs = 0;
  /// The baseline's step time and exposed time, ms.
  double afterBackwardStepMs = 0, afterBackwardExposedMs = 0;
};

struct PredictedInfo {
  std::string schedule;
  double bubbleRate = 0;
  std::optional<double> makespanMs;
  /// Simulated per-rank bubble (the quantity zb-run measures per rank);
  /// empty when absent.
  std::vector<double> rankBubbleRate;
  std::optional<JitterInfo> jitter; ///< with zb-compile --profile
  /// With zb-compile --data-parallel D > 1.
  std::optional<DataParallelPrediction> dataParallel;
};

struct Plan {
  /// The text of "target" ("" when absent) and of "optimizer_sync" (""
  /// for none), as plan.json and the rank fingerprint write them.
  llvm::StringRef targetText() const;
  llvm::StringRef optimizerSyncText() const;

  std::string path; ///< the plan.json file, for messages (not written)
  std::string dir;  ///< the directory holding it (not written)
  std::string model;
  int32_t numRanks = 0, numStages = 0;
  /// "data_parallel" (zb-compile --data-parallel D): the job runs D copies
  /// of the pipeline on D * num_ranks ranks, pipeline d on microbatches
  /// d*m .. d*m+m-1 of the step's D*m, the gradients all-reduced across the
  /// copies (zb/Runner/Layout.h). Absent: 1. Not part of planHash(): a
  /// checkpoint resumes at any D.
  int32_t dataParallel = 1;
  int64_t numChunks = 1; ///< chunks (virtual stages) per rank
  /// "directions": 2 for a bidirectional schedule (dualpipe): the
  /// num_stages global stages are the model's stages once per direction,
  /// microbatches 0..m/2-1 going down, the rest up, and two ranks compute
  /// a loss (one per direction; zb-run adds them). Absent: 1.
  int32_t directions = 1;
  int64_t numMicrobatches = 0, microbatchSize = 0;
  std::string schedule;
  /// "target" (zb/Formats/Options.h); std::nullopt when absent or "".
  std::optional<Target> target;
  /// GPU architectures of a "cuda" plan's fatbins ("sm_80", "sm_90"), in
  /// the order given to zb-compile --gpu-arch; empty otherwise.
  std::vector<std::string> gpuArchs;
  /// cuBLAS may use TF32 for fp32 GEMMs (zb-compile --allow-tf32).
  bool allowTf32 = false;
  /// "precision" (zb-compile --precision): Bf16 when the rank programs
  /// compute with torch.autocast's bfloat16 policy; absent: Fp32. The
  /// parameters, gradients and optimizer state are float32 either way.
  Precision precision = Precision::Fp32;
  /// Whether the host code of the rank programs reads or writes element
  /// data in device memory. zb-compile writes false for "cuda" plans (its
  /// pipeline refuses host loads and stores), so the CUDA backend need not
  /// make the host wait where MLIR's host code synchronises the compute
  /// stream; absent (older plans): true.
  bool hostReadsDeviceMemory = true;
  std::string data;   ///< default data directory ("" when absent)
  /// "params_checksum": XXH3-64 of params.bin as zb-compile wrote it, 16
  /// hex digits (zb/Support/Checksum.h); "" when absent (older plans).
  /// zb-run refuses a params.bin that differs. Not part of planHash().
  std::string paramsChecksum;
  /// "optimizer_sync": PostValidation ("post-validation") when the rank
  /// programs call zbrt_validate_optimizer at the point where the schedule
  /// expects the previous step's fully reduced optimizer state (zb-compile
  /// --optimizer-sync); None when absent (zb-run then validates between
  /// steps). Never AllReduce.
  sched::OptimizerSync optimizerSync = sched::OptimizerSync::None;
  OptimizerInfo optimizer;
  std::vector<ParamInfo> params;
  std::vector<InputInfo> inputs;
  std::vector<StageCostInfo> stages;    ///< empty when absent
  std::vector<PredictedInfo> predicted; ///< sorted by schedule name
  std::vector<RankInfo> ranks;          ///< ranks[r].rank == r

  /// Shape of an argument as the rank program sees it (docs/plan-json.md).
  std::vector<int64_t> argShape(const ArgInfo &arg) const;
  /// The rank whose args contain the loss.
  int32_t lossRank() const;
  /// This plan's own entry of `predicted` (schedule == this->schedule), or
  /// nullptr.
  const PredictedInfo *predictedForThisPlan() const;
};

/// What a rank program was compiled for, as compact JSON: the format
/// ("zb-rank-program", version 1), rank, ranks, stages, chunks,
/// microbatches and their size, schedule, target, optimizer_sync, and every
/// step argument in order with its kind, index, model name, shape and
/// element type. zb-compile embeds it in rank<R>.so as the NUL-terminated
/// string `zb_rank_fingerprint`; zb-run recomputes it from plan.json and
/// refuses a program whose fingerprint differs (checkRankFingerprint).
std::string rankFingerprint(const Plan &plan, int32_t rank);

/// Compares a program's fingerprint with plan.json's for `rank`; the error
/// names the library and the first field that differs, e.g.
///   rank1.so was compiled for args[2].shape [2, 2, 8], plan.json has
///   [4, 2, 8]
llvm::Error checkRankFingerprint(const Plan &plan, int32_t rank,
                                 llvm::StringRef programFingerprint);

/// Checks `plan` against the one table of limits (zb/Support/Limits.h)
/// that zb-run's reader applies: ranks, stages, chunks, microbatches, the
/// microbatch size, every parameter's and input's shape (each dimension and
/// the element count of a microbatch) and every message's bytes. The error
/// names the first value out of range by its model name and says what to
/// change, e.g.
///   input 'x': its first dimension, the microbatch size, is 68719476736;
///   zb-run accepts at most 16777216: export the model with a smaller
///   batch (its first dimension is one microbatch) and train with more
///   --microbatches
/// zb-compile calls it before it generates code.
llvm::Error checkPlanLimits(const Plan &plan);

/// Parses plan.json text; `path` names the file in messages and sets
/// Plan::path and Plan::dir.
llvm::Expected<Plan> parsePlan(llvm::StringRef text, llvm::StringRef path);
/// Reads and parses DIR/plan.json; "<path>: cannot read: ..." when missing.
llvm::Expected<Plan> loadPlan(llvm::StringRef dir);

/// The JSON document of `plan` (every field of the schema; Plan::path and
/// Plan::dir are not part of it). Keys print sorted (llvm::json::Object).
llvm::json::Value toJSON(const Plan &plan);
/// One entry of "predicted" (without its key, the schedule name); zb-run's
/// JSON report echoes the plan's entries with it.
llvm::json::Value toJSON(const PredictedInfo &predicted);
/// Writes toJSON(plan) to `path`, indented by 2, with a final newline.
/// Error: "cannot write <path>: <reason>".
llvm::Error writePlan(const Plan &plan, llvm::StringRef path);

} // namespace zb::formats

#endif // ZB_FORMATS_PLAN_H
