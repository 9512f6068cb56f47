//===- Plan.h - zb-run: plan.json (docs/plan-json.md) -----------*- C++ -*-===//
//
// The in-memory form of plan.json version 1, the contract between zb-compile
// and zb-run. parsePlan() checks everything zb-run relies on (types, ranges,
// cross references) and names the offending field on error.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TOOLS_ZBRUN_PLAN_H
#define ZB_TOOLS_ZBRUN_PLAN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zb {
namespace run {

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  int32_t rank = 0;
  int32_t stage = 0;
  int64_t offsetBytes = 0;
  int64_t numElements() const;
};

/// Element type of a graph input as the rank program reads it.
enum class DType { Float32, Int64, Int32 };

/// "float32", "int64", "int32".
const char *dtypeName(DType t);
/// Bytes per element: 4, 8, 4.
int64_t dtypeBytes(DType t);

struct InputInfo {
  std::string name;
  std::vector<int64_t> sampleShape;
  DType dtype = DType::Float32; ///< plan.json "dtype" (default float32)
  int32_t rank = 0;
  int32_t stage = 0;
  int64_t sampleElements() const;
};

enum class ArgKind { Param, Grad, Input, Loss };

struct ArgInfo {
  ArgKind kind = ArgKind::Param;
  int64_t index = -1; ///< into Plan::params or Plan::inputs; -1 for loss
};

struct RankInfo {
  int32_t rank = 0;
  std::string library; ///< relative to the plan directory (or absolute)
  std::string entry;
  std::vector<ArgInfo> args;
};

struct OptimizerInfo {
  std::string name = "sgd"; ///< "sgd" or "adamw"
  double lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
};

struct PredictedInfo {
  std::string schedule;
  double bubbleRate = 0;
  double makespanMs = -1; ///< -1 when absent
  /// Simulated per-rank bubble (the quantity zb-run measures per rank);
  /// empty when absent.
  std::vector<double> rankBubbleRate;
  /// With a profile: expected bubble under the measured pass-time jitter
  /// (zb::sched::estimateJitter); -1 / empty when absent.
  double jitterBubbleRate = -1;
  std::vector<double> jitterRankBubbleRate;
};

struct Plan {
  std::string path; ///< the plan.json file, for messages
  std::string dir;  ///< the directory holding it
  std::string model;
  int32_t numRanks = 0, numStages = 0;
  int64_t numMicrobatches = 0, microbatchSize = 0;
  std::string schedule;
  std::string data; ///< default data directory ("" when absent)
  OptimizerInfo optimizer;
  std::vector<ParamInfo> params;
  std::vector<InputInfo> inputs;
  std::vector<PredictedInfo> predicted; ///< sorted by schedule name
  std::vector<RankInfo> ranks;          ///< ranks[r].rank == r

  /// Shape of an argument as the rank program sees it (docs/plan-json.md).
  std::vector<int64_t> argShape(const ArgInfo &arg) const;
  /// The rank whose args contain the loss.
  int32_t lossRank() const;
};

/// Parses plan.json text; `path` is used in messages ("<path>: <field>: ...").
llvm::Expected<Plan> parsePlan(llvm::StringRef text, llvm::StringRef path);
/// Reads and parses DIR/plan.json.
llvm::Expected<Plan> loadPlan(llvm::StringRef dir);

} // namespace run
} // namespace zb

#endif // ZB_TOOLS_ZBRUN_PLAN_H
