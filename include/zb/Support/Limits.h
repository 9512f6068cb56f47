//===- Limits.h - the sizes zb-compile and zb-run accept --------*- C++ -*-===//
//
// One table of limits for the compiler, the scheduler and the runner (issue
// 40): zb-compile applies it to the plan it is about to build, naming the
// model's inputs and parameters, so that a model it compiles is one zb-run
// accepts; plan.json's reader (lib/Formats/PlanReader.cpp) and the
// scheduler (zb/Schedule/Schedule.h) apply the same numbers to what they
// read. MLIR-free, no dependencies: every layer may include it.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_LIMITS_H
#define ZB_SUPPORT_LIMITS_H

#include <cstdint>

namespace zb {
namespace limits {

/// Pipeline ranks (processes) of one plan.
constexpr int64_t kMaxRanks = 4096;
/// Data-parallel copies of one pipeline (zb-compile and zb-run
/// --data-parallel D: each parameter's gradient is all-reduced across the D
/// pipelines; zb/Runner/Layout.h, zb/Schedule/DataParallel.h).
constexpr int64_t kMaxDataParallel = 4096;
/// Pipeline stages of one plan (ranks x chunks per rank).
constexpr int64_t kMaxStages = 1024;
/// Chunks (virtual stages) per rank.
constexpr int64_t kMaxChunks = 1024;
/// Microbatches per step a plan may hold (zb-compile's --microbatches has a
/// lower cap of its own, CompileOptions::kMaxMicrobatches, for compile
/// time).
constexpr int64_t kMaxMicrobatches = int64_t(1) << 20;
/// Passes a schedule keeps (ranks x chunks x microbatches).
constexpr int64_t kMaxStageMicrobatches = int64_t(1) << 24;
/// Samples per microbatch (the first dimension of the model's inputs).
constexpr int64_t kMaxMicrobatchSize = int64_t(1) << 24;
/// One dimension of a tensor (MPI and cuBLAS take int counts).
constexpr int64_t kMaxDimension = INT32_MAX;
/// Elements of one tensor (a parameter, or an input of a microbatch):
/// 2^40, so that sizes in bytes never overflow int64.
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// Bytes of one message between ranks (MPI's count is an int).
constexpr int64_t kMaxMessageBytes = INT32_MAX;

} // namespace limits
} // namespace zb

#endif // ZB_SUPPORT_LIMITS_H
